// IntegerMode: integer-only execution of a QDQ graph.
//
//   quantkit::Executor<quantkit::IntegerMode> run(qdq_graph);               // fixed point
//   quantkit::Executor<quantkit::IntegerModeT<quantkit::FloatMultiplier<>>> f(qdq_graph);
//   auto y = run.run({{"x", x}});
//   for (const auto& n : run.mode().report()) ...   // which nodes run in integers, which not
//
// prepare(graph) finds, for each compute node, the pattern
//   DequantizeLinear(inputs) -> op -> [Relu | Clip] -> QuantizeLinear
// (weights: DequantizeLinear of an int8/uint8 initializer, per tensor or per output channel;
// bias: a float initializer or DequantizeLinear of an int32 one) and replaces it by one integer
// op of quantkit/executor/integer/ops.hpp that reads the quantized inputs and writes the
// quantized output: Conv, Gemm (transA = 0, alpha = beta = 1), MatMul (constant 2-D weight),
// Add, Relu, Clip, MaxPool, AveragePool, GlobalAveragePool, Flatten, Reshape, Concat. Bias is
// quantized to int32 with scale s_x * s_w[c] (round half to even); a Relu/Clip between the op
// and its QuantizeLinear becomes the requantization clamp. Requantization uses Scheme (a
// quantkit requantization policy: FloatMultiplier<R>, PowerOfTwo<R>, FixedPointDoubleRounding,
// FixedPointSingleRounding, SingleShift, DoubleShift). Dequantize nodes nobody reads any more
// are removed.
//
// Everything else stays as it was — float between its DequantizeLinear and QuantizeLinear,
// exactly as the fake-quant (float) executor runs it — and report() says why (no QDQ around
// it, per-channel activations, a multiplier the scheme cannot express, an op the mode does not
// cover, ...).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/builtin_ops.hpp"
#include "quantkit/executor/integer/ops.hpp"
#include "quantkit/executor/integer/ort_pair_ops.hpp"
#include "quantkit/executor/registry.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/policy/requantization.hpp"

namespace quantkit {

// What prepare() did with one compute node.
struct IntegerNodeInfo {
  std::string node;     // the node's name (or its first output's name when unnamed)
  std::string op_type;  // the original op
  bool integer = false; // replaced by an integer op
  std::string detail;   // the integer op (and fused activation), or why it stayed float
};

// How IntegerModeT rewrites a graph.
struct IntegerModeOptions {
  // A standalone requantization (Relu/Clip, a change of scale) is folded into the integer op
  // that produces its input, as a 256-entry table on its output (the same integers, one pass
  // less). Off: every integer op stays a node of its own, as integer::trace and the C++
  // export want them.
  bool fold_requantize = true;
  // IntConv / IntMatMul with uint8 activations and int8 weights (zero points 0) sum each pair of
  // products in int16 with saturation, as ONNX Runtime's default session does on x86-64 CPUs
  // without AVX-VNNI (quantkit/executor/integer/ort_pair_ops.hpp): with FloatMultiplier
  // requantization the mode then gives ONNX Runtime's outputs there. Scalar, for measuring.
  bool ort_pair_saturation = false;
};

template <class Scheme = FixedPointDoubleRounding>
class IntegerModeT {
 public:
  static constexpr const char* name = "integer";
  using scheme = Scheme;

  IntegerModeT() = default;
  explicit IntegerModeT(const IntegerModeOptions& options) : options_(options) {}
  const IntegerModeOptions& options() const { return options_; }

  const OpRegistry& registry() const {
    static const OpRegistry r = [] {
      OpRegistry reg = make_builtin_registry();
      integer::register_integer_ops<Scheme>(reg);
      return reg;
    }();
    static const OpRegistry ort_pairs = [] {
      OpRegistry reg = r;
      integer::register_ort_pair_ops<Scheme>(reg);
      return reg;
    }();
    return options_.ort_pair_saturation ? ort_pairs : r;
  }

  void prepare(graph::Graph& g) {
    report_.clear();
    Rewriter(g, report_, options_).run();
  }

  const std::vector<IntegerNodeInfo>& report() const { return report_; }
  // Names of the compute nodes left in float.
  std::vector<std::string> float_nodes() const {
    std::vector<std::string> v;
    for (const auto& r : report_)
      if (!r.integer) v.push_back(r.node);
    return v;
  }
  std::size_t integer_count() const {
    return static_cast<std::size_t>(std::count_if(report_.begin(), report_.end(), [](const IntegerNodeInfo& r) { return r.integer; }));
  }

 private:
  using Node = graph::Node;
  using Tensor = graph::Tensor;
  using DType = graph::DType;

  // Thrown inside the rewriter when a node cannot be made integer (caught per node).
  struct Reject {
    std::string why;
  };

  class Rewriter {
   public:
    Rewriter(graph::Graph& g, std::vector<IntegerNodeInfo>& report, const IntegerModeOptions& options)
        : g_(g), report_(report), options_(options) {}

    void run() {
      g_.opsets[integer::kDomain] = g_.opset;  // the wrapped built-in ops see the model's opset
      const auto order = g_.topological_order();
      producers_ = g_.producers();
      consumers_ = g_.consumers();
      std::vector<bool> removed(g_.nodes.size(), false);
      std::unordered_map<std::size_t, Node> replacement;
      std::set<std::size_t> absorbed;  // fused activations and quantize nodes
      for (std::size_t idx : order) {
        const Node& n = g_.nodes[idx];
        if (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear" || absorbed.count(idx)) continue;
        if (!n.domain.empty() && n.domain != "ai.onnx") continue;
        if (!is_candidate(n.op_type)) {
          if (!is_structural(n.op_type))
            report_.push_back({label(n), n.op_type, false, "op not covered by the integer mode"});
          continue;
        }
        try {
          std::vector<std::size_t> eaten;
          Node r = convert(n, eaten);
          for (std::size_t e : eaten) {
            absorbed.insert(e);
            removed[e] = true;
          }
          removed[idx] = true;
          std::string detail = r.op_type;
          for (std::size_t e : eaten)
            if (g_.nodes[e].op_type != "QuantizeLinear") detail += " + fused " + g_.nodes[e].op_type;
          report_.push_back({label(n), n.op_type, true, detail});
          replacement.emplace(idx, std::move(r));
        } catch (const Reject& why) {
          report_.push_back({label(n), n.op_type, false, why.why});
        }
      }
      std::vector<Node> nodes;
      for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
        auto it = replacement.find(i);
        if (it != replacement.end()) nodes.push_back(std::move(it->second));
        else if (!removed[i]) nodes.push_back(std::move(g_.nodes[i]));
      }
      g_.nodes = std::move(nodes);
      remove_dead_dequantize();
      if (options_.fold_requantize) fold_requantize_tables();
    }

   private:
    static bool is_candidate(const std::string& op) {
      static const std::set<std::string> ops = {"Conv", "Gemm", "MatMul", "Add", "Relu", "Clip", "MaxPool",
                                                "AveragePool", "GlobalAveragePool", "Flatten", "Reshape", "Concat"};
      return ops.count(op) != 0;
    }
    static bool is_structural(const std::string& op) {
      return op == "Constant" || op == "Identity" || op == "Dropout" || op == "Shape";
    }
    static std::string label(const Node& n) { return n.name.empty() ? (n.outputs.empty() ? n.op_type : n.outputs[0]) : n.name; }

    const Node* producer(const std::string& v) const {
      auto it = producers_.find(v);
      return it == producers_.end() ? nullptr : &g_.nodes[it->second];
    }
    std::vector<std::size_t> consumers(const std::string& v) const {
      auto it = consumers_.find(v);
      return it == consumers_.end() ? std::vector<std::size_t>{} : it->second;
    }
    const Tensor& initializer(const std::string& v, const char* what) const {
      auto it = g_.initializers.find(v);
      if (it == g_.initializers.end()) throw Reject{std::string(what) + " '" + v + "' is not a constant initializer"};
      return it->second;
    }

    // A DequantizeLinear feeding input `v`.
    struct Dq {
      std::string q;      // the integer value
      std::string scale;  // initializer
      std::string zp;     // initializer (created when the node had none)
      DType type = DType::uint8;
      std::int64_t axis = 1;
      const Node* node = nullptr;
    };

    Dq dequantize_of(const std::string& v, const char* what) {
      const Node* d = producer(v);
      if (!d || d->op_type != "DequantizeLinear")
        throw Reject{std::string(what) + " '" + v + "' is not produced by DequantizeLinear"};
      Dq q;
      q.node = d;
      q.q = d->inputs.at(0);
      q.scale = d->inputs.at(1);
      q.axis = d->attr_int("axis", 1);
      (void)initializer(q.scale, "scale");
      if (d->has_input(2)) {
        q.zp = d->inputs[2];
        q.type = initializer(q.zp, "zero point").dtype();
      } else {
        q.type = value_type(q.q);
        q.zp = make_zero_point(d->name.empty() ? q.q : d->name, q.type);
      }
      if (!integer::detail::is_activation_type(q.type) && q.type != DType::int32)
        throw Reject{std::string(what) + " is dequantized from " + graph::to_string(q.type) +
                     "; expected int8, uint8, int16 or uint16"};
      return q;
    }

    DType value_type(const std::string& v) const {
      if (auto it = g_.initializers.find(v); it != g_.initializers.end()) return it->second.dtype();
      if (const Node* p = producer(v); p && p->op_type == "QuantizeLinear") {
        if (p->has_input(2)) return initializer(p->inputs[2], "zero point").dtype();
        return DType::uint8;
      }
      if (const graph::ValueInfo* info = g_.find_value(v); info && info->dtype != DType::undefined) return info->dtype;
      throw Reject{"cannot tell the integer type of '" + v + "'"};
    }

    std::string make_zero_point(const std::string& base, DType t) {
      const std::string name = g_.unique_name(base + "_zero_point");
      g_.initializers[name] = Tensor(t, Dims{}, name);  // zero-filled
      new_initializers_.push_back(name);
      return name;
    }
    std::string add_initializer(const std::string& base, Tensor t) {
      const std::string name = g_.unique_name(base);
      t.set_name(name);
      g_.initializers[name] = std::move(t);
      new_initializers_.push_back(name);
      return name;
    }

    float scalar_scale(const Dq& q, const char* what) const {
      const Tensor& s = initializer(q.scale, "scale");
      if (s.size() != 1) throw Reject{std::string(what) + " has " + std::to_string(s.size()) + " scales; expected per-tensor activations"};
      return s.template data<float>()[0];
    }
    std::int32_t zero_point_value(const Dq& q) const {
      const Tensor& z = initializer(q.zp, "zero point");
      if (z.size() != 1) throw Reject{"zero point '" + q.zp + "' is not a scalar"};
      return static_cast<std::int32_t>(z.as_int64(0));
    }

    // The output chain: op -> [activation] -> QuantizeLinear. Returns the QuantizeLinear.
    struct Out {
      const Node* q = nullptr;
      std::size_t q_index = 0;
      const Node* act = nullptr;
      std::size_t act_index = 0;
      float scale = 1.0f;
      std::int32_t zp = 0;
      DType type = DType::uint8;
      std::string scale_name, zp_name;
    };

    std::size_t only_consumer(const std::string& v) const {
      const auto c = consumers(v);
      if (g_.is_output(v)) throw Reject{"its output '" + v + "' is a graph output (read in float)"};
      if (c.size() != 1) throw Reject{"its output '" + v + "' has " + std::to_string(c.size()) + " readers; expected one QuantizeLinear"};
      return c[0];
    }

    Out output_of(const Node& n, bool allow_activation) {
      Out o;
      std::string v = n.outputs.at(0);
      std::size_t c = only_consumer(v);
      const Node* next = &g_.nodes[c];
      if (allow_activation && (next->op_type == "Relu" || next->op_type == "Clip") && next->inputs.at(0) == v) {
        o.act = next;
        o.act_index = c;
        v = next->outputs.at(0);
        c = only_consumer(v);
        next = &g_.nodes[c];
      }
      if (next->op_type != "QuantizeLinear" || next->inputs.at(0) != v)
        throw Reject{"its output is read by " + next->op_type + ", not QuantizeLinear"};
      o.q = next;
      o.q_index = c;
      o.scale_name = next->inputs.at(1);
      const Tensor& s = initializer(o.scale_name, "output scale");
      if (s.size() != 1) throw Reject{"the output QuantizeLinear is not per tensor"};
      o.scale = s.template data<float>()[0];
      if (next->has_input(2)) {
        o.zp_name = next->inputs[2];
        const Tensor& z = initializer(o.zp_name, "output zero point");
        if (z.size() != 1) throw Reject{"the output zero point is not a scalar"};
        o.type = z.dtype();
        o.zp = static_cast<std::int32_t>(z.as_int64(0));
      } else {
        o.type = DType::uint8;
        o.zp_name = make_zero_point(next->name.empty() ? next->outputs.at(0) : next->name, o.type);
      }
      if (!integer::detail::is_activation_type(o.type))
        throw Reject{std::string("the output is quantized to ") + graph::to_string(o.type) +
                     "; expected int8, uint8, int16 or uint16"};
      if (!(o.scale > 0.0f) || !std::isfinite(o.scale)) throw Reject{"the output scale is not a finite value > 0"};
      return o;
    }

    // Q(v) for the clamp bounds: round_half_even(v / s) + zp, saturated.
    static std::int64_t quantize_bound(float v, const Out& o) {
      const IntRange r = integer::detail::range_of(o.type);
      const float q = std::nearbyint(v / o.scale) + static_cast<float>(o.zp);
      if (!(q >= static_cast<float>(r.qmin))) return r.qmin;
      if (!(q <= static_cast<float>(r.qmax))) return r.qmax;
      return static_cast<std::int64_t>(q);
    }

    // The clamp of a fused Relu/Clip (or of a standalone one), in the output's integers.
    std::vector<std::int64_t> clamp_of(const Node& act, const Out& o) const {
      float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
      if (act.op_type == "Relu") {
        lo = 0.0f;
      } else {  // Clip
        if (act.has_attr("min") || act.has_attr("max")) {
          lo = act.attr_float("min", lo);
          hi = act.attr_float("max", hi);
        }
        if (act.has_input(1)) lo = initializer(act.inputs[1], "Clip min").template data<float>()[0];
        if (act.has_input(2)) hi = initializer(act.inputs[2], "Clip max").template data<float>()[0];
      }
      return {quantize_bound(lo, o), quantize_bound(hi, o)};
    }

    template <class F>
    void check_scheme(F&& multipliers, const std::string& layer) const {
      try {
        for (double m : multipliers()) (void)Scheme::make(m, layer);
      } catch (const Error& e) {
        throw Reject{std::string("the scheme cannot express a multiplier: ") + e.what()};
      }
    }

    Node make_node(const Node& n, const std::string& op, std::vector<std::string> inputs, const Out& o) const {
      Node r;
      r.op_type = op;
      r.domain = integer::kDomain;
      r.name = n.name.empty() ? o.q->outputs.at(0) : n.name;
      r.inputs = std::move(inputs);
      r.outputs = {o.q->outputs.at(0)};
      r.source = n.source;
      return r;
    }

    // Weight dequantize: int8/uint8 initializer with `channels` along `axis` (or per tensor).
    struct Weight {
      Dq dq;
      std::vector<float> scales;
    };
    Weight weight_of(const std::string& v, int rank, int channel_axis) {
      Weight w;
      w.dq = dequantize_of(v, "weight");
      const Tensor& t = initializer(w.dq.q, "weight");
      if (t.dtype() != DType::int8 && t.dtype() != DType::uint8)
        throw Reject{std::string("weight is ") + graph::to_string(t.dtype()) + "; expected int8 or uint8"};
      if (t.rank() != rank) throw Reject{"weight has rank " + std::to_string(t.rank())};
      const Tensor& s = initializer(w.dq.scale, "weight scale");
      w.scales.assign(s.template data<float>(), s.template data<float>() + s.size());
      if (s.size() != 1) {
        std::int64_t axis = w.dq.axis < 0 ? w.dq.axis + rank : w.dq.axis;
        if (axis != channel_axis || s.size() != t.dim(channel_axis))
          throw Reject{"weight is quantized along axis " + std::to_string(w.dq.axis) + "; expected per tensor or per output channel"};
      }
      return w;
    }

    // 16-bit activations times 8-bit weights: the op's int32 bound (check_accumulator), checked
    // here so that a node over it stays float (8-bit activations are checked by the op).
    void wide_reduction_fits(const Dq& x, std::int64_t K, const Weight& w, DType w_type, const std::string& bias) const {
      if (!integer::detail::is_16bit(x.type)) return;
      const Tensor& z = initializer(w.dq.zp, "weight zero point");
      std::vector<std::int32_t> wz, b;
      for (std::int64_t i = 0; i < z.size(); ++i) wz.push_back(static_cast<std::int32_t>(z.as_int64(i)));
      if (!bias.empty()) b = initializer(bias, "bias").template to_vector<std::int32_t>();
      const std::int64_t max_k = integer::detail::accumulator_bound(x.type, w_type, wz, b).max_k;
      if (K > max_k)
        throw Reject{"16-bit activations over a reduction of " + std::to_string(K) +
                     " products could overflow the int32 accumulator; expected at most " + std::to_string(max_k)};
    }

    // Bias (float initializer, or DequantizeLinear of one) as int32 with scale s_x * s_w[c].
    std::string bias_of(const Node& n, std::size_t index, float sx, const std::vector<float>& sw, std::int64_t channels) {
      if (!n.has_input(index)) return {};
      const std::string& v = n.inputs[index];
      std::vector<float> b;
      if (g_.is_initializer(v)) {
        const Tensor& t = g_.initializers.at(v);
        if (t.dtype() != DType::float32) throw Reject{"bias '" + v + "' is not float"};
        b = t.to_vector<float>();
      } else {
        const Dq d = dequantize_of(v, "bias");
        const Tensor& t = initializer(d.q, "bias");
        const Tensor& s = initializer(d.scale, "bias scale");
        if (t.dtype() != DType::int32 || (s.size() != 1 && s.size() != t.size())) throw Reject{"bias is not int32 per tensor/channel"};
        for (std::int64_t i = 0; i < t.size(); ++i)
          b.push_back(static_cast<float>(t.template data<std::int32_t>()[i]) * s.template data<float>()[s.size() == 1 ? 0 : i]);
      }
      if (static_cast<std::int64_t>(b.size()) != channels) throw Reject{"bias has " + std::to_string(b.size()) + " values"};
      Tensor q(DType::int32, Dims{channels});
      for (std::int64_t c = 0; c < channels; ++c) {
        const double scale = static_cast<double>(sx) * static_cast<double>(sw[sw.size() == 1 ? 0 : static_cast<std::size_t>(c)]);
        const double r = std::nearbyint(static_cast<double>(b[static_cast<std::size_t>(c)]) / scale);
        q.template data<std::int32_t>()[c] = static_cast<std::int32_t>(std::min(std::max(r, -2147483648.0), 2147483647.0));
      }
      return add_initializer(v + "_int32", std::move(q));
    }

    // Every weight zero point is 0 (the integer ops' fast paths, which take prepared weights).
    bool zero_weight_zero_points(const Dq& wdq) const {
      const Tensor& z = initializer(wdq.zp, "weight zero point");
      for (std::int64_t i = 0; i < z.size(); ++i)
        if (z.as_int64(i) != 0) return false;
      return true;
    }

    // IntMatMul's prepared input [9] (see integer/ops.hpp): the weights [K, N] packed once for
    // the int8 GEMM with uint8 A, when every weight zero point is 0.
    void add_packed_weights(Node& r, const Dq& wdq, const Tensor& w) {
      if (!zero_weight_zero_points(wdq)) return;  // asymmetric weights: the op subtracts the zero points itself
      std::vector<std::uint8_t> packed;
      integer::detail::visit_int8(OpContextFor(r), w.dtype(), [&](auto tag) {
        using TW = decltype(tag);
        packed = simd::pack_b(w.template data<TW>(), static_cast<std::size_t>(w.dim(0)),
                              static_cast<std::size_t>(w.dim(1)), static_cast<std::size_t>(w.dim(1)), false)
                     .to_bytes();
      }, "weight");
      Tensor t(DType::uint8, Dims{static_cast<std::int64_t>(packed.size())});
      std::memcpy(t.raw(), packed.data(), packed.size());
      r.inputs.resize(9);
      r.inputs.push_back(add_initializer(r.name + "_packed_weights", std::move(t)));
    }

    // IntConv's prepared inputs (see int_conv_fast in integer/ops.hpp), when every weight zero
    // point is 0 (the fast path): [9] the weight rows' sums (int32 [M]), folded into the bias with
    // the input's zero point on every call; [10] for whole 4-deep channel groups and windows
    // larger than 1 x 1, the weights in (kernel row, kernel column, channel) order ([M, K]).
    void add_prepared_conv_weights(Node& r, const Dq& wdq, const Tensor& w) {
      if (!zero_weight_zero_points(wdq)) return;
      if (w.rank() < 3 || w.dim(0) == 0) return;  // (the op reports a bad shape)
      const std::int64_t M = w.dim(0), Cg = w.dim(1), K = w.size() / M, ks = K / std::max<std::int64_t>(Cg, 1);
      Tensor sums(DType::int32, Dims{M});
      integer::detail::visit_int8(OpContextFor(r), w.dtype(), [&](auto tag) {
        using TW = decltype(tag);
        for (std::int64_t m = 0; m < M; ++m)
          sums.template data<std::int32_t>()[m] = integer::detail::weight_row_sum(w.template data<TW>() + m * K, K);
      }, "weight");
      r.inputs.resize(9);
      r.inputs.push_back(add_initializer(r.name + "_weight_sums", std::move(sums)));
      if (Cg % 4 != 0 || ks <= 1) return;
      Tensor reordered(w.dtype(), Dims{M, K});
      integer::detail::reorder_conv_weights(static_cast<const std::uint8_t*>(w.raw()), M, Cg, ks,
                                            static_cast<std::uint8_t*>(reordered.raw()));
      r.inputs.push_back(add_initializer(r.name + "_weights_by_position", std::move(reordered)));
    }

    // An OpContext only for naming the node in errors of the shared helpers.
    struct OpContextFor : OpContext {
      explicit OpContextFor(const Node& n) : OpContext(n, 0, {}) {}
    };

    Node convert(const Node& n, std::vector<std::size_t>& eaten) {
      const std::string& op = n.op_type;
      const bool fusable = op == "Conv" || op == "Gemm" || op == "MatMul" || op == "Add";
      const Out o = output_of(n, fusable);
      if (o.act) eaten.push_back(o.act_index);
      eaten.push_back(o.q_index);
      const std::string layer = label(n);
      Node r;
      auto clamp_attr = [&](Node& node, const Node* act) {
        if (act) {
          graph::Attribute a;
          a.kind = graph::AttrKind::ints;
          a.ints = clamp_of(*act, o);
          node.attributes["clamp"] = a;
        }
      };
      if (op == "Conv") {
        const Dq x = dequantize_of(n.inputs.at(0), "input");
        const float sx = scalar_scale(x, "input");
        const Tensor* wt = nullptr;
        const std::string& wv = n.inputs.at(1);
        const Node* wd = producer(wv);
        if (wd && wd->op_type == "DequantizeLinear") wt = &initializer(wd->inputs.at(0), "weight");
        if (!wt) throw Reject{"weight is not DequantizeLinear of an initializer"};
        const Weight w = weight_of(wv, wt->rank(), 0);
        const std::int64_t M = wt->dim(0);
        check_scheme([&] {
          std::vector<double> m;
          for (float s : w.scales) m.push_back(integer::detail::multiplier<Scheme>(sx, s, o.scale));
          return m;
        }, layer);
        std::vector<std::string> in = {x.q, x.scale, x.zp, w.dq.q, w.dq.scale, w.dq.zp, o.scale_name, o.zp_name};
        const std::string b = bias_of(n, 2, sx, w.scales, M);
        wide_reduction_fits(x, wt->size() / std::max<std::int64_t>(M, 1), w, wt->dtype(), b);
        if (!b.empty()) in.push_back(b);
        r = make_node(n, "IntConv", in, o);
        r.attributes = n.attributes;
        if (!integer::detail::is_16bit(x.type)) add_prepared_conv_weights(r, w.dq, *wt);
      } else if (op == "Gemm" || op == "MatMul") {
        if (op == "Gemm" && (n.attr_int("transA", 0) != 0 || n.attr_float("alpha", 1.0f) != 1.0f ||
                             n.attr_float("beta", 1.0f) != 1.0f))
          throw Reject{"Gemm with transA or alpha/beta != 1"};
        const Dq x = dequantize_of(n.inputs.at(0), "input");
        const float sx = scalar_scale(x, "input");
        const bool trans_b = op == "Gemm" && n.attr_int("transB", 0) != 0;
        const Node* wd = producer(n.inputs.at(1));
        if (!wd || wd->op_type != "DequantizeLinear") throw Reject{"weight is not DequantizeLinear of an initializer"};
        const Tensor& wt = initializer(wd->inputs.at(0), "weight");
        if (wt.rank() != 2) throw Reject{"weight is not 2-D"};
        const Weight w = weight_of(n.inputs.at(1), 2, trans_b ? 0 : 1);
        std::string wq = w.dq.q;
        const std::int64_t N = trans_b ? wt.dim(0) : wt.dim(1);
        if (trans_b) {  // [N, K] -> [K, N]
          const std::int64_t K = wt.dim(1);
          Tensor t(wt.dtype(), Dims{K, N});
          const auto* src = static_cast<const std::uint8_t*>(wt.raw());
          auto* dst = static_cast<std::uint8_t*>(t.raw());
          for (std::int64_t k = 0; k < K; ++k)
            for (std::int64_t j = 0; j < N; ++j) dst[k * N + j] = src[j * K + k];
          wq = add_initializer(w.dq.q + "_transposed", std::move(t));
        }
        check_scheme([&] {
          std::vector<double> m;
          for (float s : w.scales) m.push_back(integer::detail::multiplier<Scheme>(sx, s, o.scale));
          return m;
        }, layer);
        std::vector<std::string> in = {x.q, x.scale, x.zp, wq, w.dq.scale, w.dq.zp, o.scale_name, o.zp_name};
        const std::string b = op == "Gemm" ? bias_of(n, 2, sx, w.scales, N) : std::string();
        wide_reduction_fits(x, trans_b ? wt.dim(1) : wt.dim(0), w, wt.dtype(), b);
        if (!b.empty()) in.push_back(b);
        r = make_node(n, "IntMatMul", in, o);
        if (!integer::detail::is_16bit(x.type)) add_packed_weights(r, w.dq, initializer(wq, "weight"));
      } else if (op == "Add") {
        const Dq a = dequantize_of(n.inputs.at(0), "input a");
        const Dq b = dequantize_of(n.inputs.at(1), "input b");
        const float sa = scalar_scale(a, "input a"), sb = scalar_scale(b, "input b");
        check_scheme([&] {
          const double t = 2.0 * std::max<double>(sa, sb);
          const double shifted = static_cast<double>(std::int64_t{1} << integer::detail::add_left_shift(a.type, b.type));
          return std::vector<double>{sa / t, sb / t, t / (shifted * o.scale)};
        }, layer);
        r = make_node(n, "IntAdd", {a.q, a.scale, a.zp, b.q, b.scale, b.zp, o.scale_name, o.zp_name}, o);
      } else if (op == "Relu" || op == "Clip") {
        const Dq x = dequantize_of(n.inputs.at(0), "input");
        const float sx = scalar_scale(x, "input");
        if (sx != o.scale) check_scheme([&] { return std::vector<double>{static_cast<double>(sx) / o.scale}; }, layer);
        r = make_node(n, "IntRequantize", {x.q, x.scale, x.zp, o.scale_name, o.zp_name}, o);
        clamp_attr(r, &n);
      } else if (op == "AveragePool" || op == "GlobalAveragePool") {
        const Dq x = dequantize_of(n.inputs.at(0), "input");
        const float sx = scalar_scale(x, "input");
        check_scheme([&] { return std::vector<double>{static_cast<double>(sx) / o.scale}; }, layer);
        r = make_node(n, op == "AveragePool" ? "IntAveragePool" : "IntGlobalAveragePool",
                      {x.q, x.scale, x.zp, o.scale_name, o.zp_name}, o);
        r.attributes = n.attributes;
      } else if (op == "MaxPool" || op == "Flatten" || op == "Reshape") {
        if (op == "MaxPool" && n.outputs.size() > 1 && !n.outputs[1].empty()) throw Reject{"MaxPool with Indices"};
        const Dq x = dequantize_of(n.inputs.at(0), "input");
        const float sx = scalar_scale(x, "input");
        if (sx != o.scale) check_scheme([&] { return std::vector<double>{static_cast<double>(sx) / o.scale}; }, layer);
        std::vector<std::string> in = {x.q};
        if (op == "Reshape") in.push_back(n.inputs.at(1));
        for (const auto& s : {x.scale, x.zp, o.scale_name, o.zp_name}) in.push_back(s);
        r = make_node(n, "Int" + op, in, o);
        r.attributes = n.attributes;
      } else if (op == "Concat") {
        std::vector<std::string> in;
        for (std::size_t i = 0; i < n.inputs.size(); ++i) {
          const Dq x = dequantize_of(n.inputs[i], "input");
          const float sx = scalar_scale(x, "input");
          if (sx != o.scale) check_scheme([&] { return std::vector<double>{static_cast<double>(sx) / o.scale}; }, layer);
          in.insert(in.end(), {x.q, x.scale, x.zp});
        }
        in.push_back(o.scale_name);
        in.push_back(o.zp_name);
        r = make_node(n, "IntConcat", in, o);
        r.attributes = n.attributes;
      }
      if (o.act && op != "Relu" && op != "Clip") clamp_attr(r, o.act);
      return r;
    }

    // An IntRequantize (a standalone Relu/Clip, or a change of scale) whose input another
    // integer op makes for it alone is computed by that op: its 256-entry table becomes the
    // op's then_lut (composed with one already there) and the node goes. The same integers, one
    // pass over the data instead of a node, a tensor and a pass.
    void fold_requantize_tables() {
      for (bool changed = true; changed;) {
        changed = false;
        const auto producers = g_.producers();
        const auto consumers = g_.consumers();
        for (std::size_t i = 0; i < g_.nodes.size() && !changed; ++i) {
          const Node& r = g_.nodes[i];
          if (r.domain != integer::kDomain || r.op_type != "IntRequantize" || r.inputs.size() != 5) continue;
          const std::string q1 = r.inputs[0];
          auto p = producers.find(q1);
          auto c = consumers.find(q1);
          if (p == producers.end() || c == consumers.end() || c->second.size() != 1 || g_.is_output(q1)) continue;
          Node& prod = g_.nodes[p->second];
          if (prod.domain != integer::kDomain) continue;
          auto affine_of = [&](const std::string& s, const std::string& z) {
            integer::detail::Affine a;
            a.scale = initializer(s, "scale").template data<float>()[0];
            const Tensor& zt = initializer(z, "zero point");
            a.zero_point = static_cast<std::int32_t>(zt.as_int64(0));
            a.type = zt.dtype();
            return a;
          };
          integer::detail::Affine in, out;
          try {
            in = affine_of(r.inputs[1], r.inputs[2]);
            out = affine_of(r.inputs[3], r.inputs[4]);
          } catch (const Reject&) {
            continue;
          }
          // The table is indexed by a byte: 8-bit values only.
          if (integer::detail::is_16bit(in.type) || integer::detail::is_16bit(out.type)) continue;
          IntRange clamp = integer::detail::range_of(out.type);
          const auto c2 = r.attr_ints("clamp");
          if (c2.size() == 2) {
            clamp.qmin = static_cast<std::int32_t>(std::max<std::int64_t>(clamp.qmin, c2[0]));
            clamp.qmax = static_cast<std::int32_t>(std::min<std::int64_t>(clamp.qmax, c2[1]));
            if (clamp.qmin > clamp.qmax) clamp.qmin = clamp.qmax;
          }
          const auto table = integer::detail::requantize_table<Scheme>(in, out, clamp, label(r));
          std::vector<std::int64_t> lut(256);
          const graph::Attribute* before = prod.find_attr("then_lut", graph::AttrKind::ints);
          for (std::size_t b = 0; b < 256; ++b) {
            const std::size_t byte = before ? static_cast<std::uint8_t>(before->ints[b]) : b;
            lut[b] = table[byte];
          }
          prod.attributes["then_lut"] = graph::Attribute::make_ints(std::move(lut));
          prod.attributes["then_type"] = graph::Attribute::make_int(out.type == DType::int8 ? 3 : 2);
          prod.outputs[0] = r.outputs[0];
          for (auto& info : report_)
            if (info.node == r.name && info.integer) info.detail += " (folded into " + label(prod) + "'s output)";
          g_.nodes.erase(g_.nodes.begin() + static_cast<std::ptrdiff_t>(i));
          changed = true;
        }
      }
    }

    // DequantizeLinear nodes whose outputs nobody reads any more.
    void remove_dead_dequantize() {
      for (bool changed = true; changed;) {
        changed = false;
        std::set<std::string> read;
        for (const auto& n : g_.nodes)
          for (const auto& i : n.inputs) read.insert(i);
        std::vector<Node> keep;
        for (auto& n : g_.nodes) {
          const bool dead = n.op_type == "DequantizeLinear" && !read.count(n.outputs.at(0)) && !g_.is_output(n.outputs.at(0));
          if (dead) changed = true;
          else keep.push_back(std::move(n));
        }
        g_.nodes = std::move(keep);
      }
    }

    graph::Graph& g_;
    std::vector<IntegerNodeInfo>& report_;
    const IntegerModeOptions& options_;
    std::unordered_map<std::string, std::size_t> producers_;
    std::unordered_map<std::string, std::vector<std::size_t>> consumers_;
    std::vector<std::string> new_initializers_;
  };

  std::vector<IntegerNodeInfo> report_;
  IntegerModeOptions options_;
};

// Integer-only execution with gemmlowp/TFLite fixed-point requantization (the default).
using IntegerMode = IntegerModeT<FixedPointDoubleRounding>;

}  // namespace quantkit
