// QOperator export: a calibrated ptq::QuantizedModel -> an ONNX model in the QOperator form
// ONNX Runtime's quantizer writes (QuantFormat.QOperator): quantized ops that read and write
// uint8/int8 tensors, with QuantizeLinear where float data enters and DequantizeLinear where
// float resumes.
//
//   quantkit::onnx::QOperatorReport r = quantkit::onnx::save_qoperator(qm, "model.qop.onnx");
//   for (const auto& f : r.float_nodes) std::printf("%s stays float: %s\n", f.node.c_str(), f.reason.c_str());
//
// What each quantized node becomes (inputs, outputs, weights with the model's parameters):
//   Conv                 QLinearConv (ONNX); weights int8/uint8 per tensor or per output channel
//                        (one zero point for all channels, as ONNX Runtime requires), int32 bias
//   Gemm                 com.microsoft QGemm (transA, transB, alpha; C = the int32 bias); a Gemm
//                        whose output is not quantized (graph output kept float) gets QGemm's
//                        float output
//   MatMul               QLinearMatMul (ONNX); B a weight (2-D, per tensor or per column) or a
//                        quantized activation
//   Add, Mul             com.microsoft QLinearAdd, QLinearMul
//   Relu, LeakyRelu      com.microsoft QLinearLeakyRelu (alpha 0 for Relu: Q_y(relu(DQ_x(x))),
//                        the value the fake-quant model computes; ONNX Runtime's own quantizer
//                        drops the Relu and reuses the producer's parameters instead)
//   Sigmoid              com.microsoft QLinearSigmoid
//   AveragePool          com.microsoft QLinearAveragePool; GlobalAveragePool ->
//                        QLinearGlobalAveragePool (channels_last 0)
//   Concat               com.microsoft QLinearConcat
//   MaxPool, Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Identity
//                        the same op on the uint8/int8 tensor; where the output's parameters
//                        differ from the input's, a QLinearLeakyRelu with alpha 1 (an exact
//                        table lookup Q_y(DQ_x(x))) requantizes
//   Clip                 Clip on the integers with quantized bounds when input and output share
//                        parameters (exact); else float
// A quantized node with no such form (Tanh, Softmax, Sub, Div, Pad, ReduceMean, GlobalMaxPool,
// an op whose weight is not an initializer, a float bias, ...) stays float between
// DequantizeLinear and QuantizeLinear, exactly as in the QDQ model; nodes that were not
// quantized stay as they are. report.float_nodes lists both, with the reason.
//
// Formats: the QOperator ops take 8-bit tensors. 16-bit activations, 4- or 16-bit weights and
// per-group weights are an error naming the node, tensor and format (save_qdq writes those).
// The file is written atomically (nothing is left at the path on error); errors name the
// node, op, tensor and file. Opset: the model's, raised to at least 13 (per-axis
// DequantizeLinear of weights read by float nodes), plus com.microsoft version 1. libonnx's
// checker runs when linked (it checks the ONNX-domain nodes; com.microsoft ones are ONNX
// Runtime's to check).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/executor/ops/contrib_quantized.hpp"
#include "quantkit/onnx/export_qdq.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/weights.hpp"

namespace quantkit {
namespace onnx {

struct QOperatorOptions {
  std::int64_t min_opset = 13;  // never below 13
  bool check = true;            // libonnx's checker, where linked and it knows the opset
  std::string producer = "quantkit";
};

// A node of the source graph that the QOperator model computes in float, and why.
struct QOperatorFloatNode {
  std::string node;     // node name (first output for unnamed nodes)
  std::string op_type;
  std::string reason;
};

struct QOperatorReport {
  std::int64_t opset = 0;
  bool checked = false;     // libonnx's checker ran and passed
  std::string check_note;   // why it did not run
  std::size_t qoperator_nodes = 0;   // source nodes written as integer (QOperator) ops
  std::size_t quantize_nodes = 0;    // QuantizeLinear (float -> integer boundaries)
  std::size_t dequantize_nodes = 0;  // DequantizeLinear (integer -> float boundaries, weights of float nodes)
  std::size_t requantize_nodes = 0;  // QLinearLeakyRelu(alpha 1) after pass-through ops
  std::map<std::string, std::size_t> ops;  // op type written -> count (all nodes of the model)
  std::vector<QOperatorFloatNode> float_nodes;
};

namespace detail {

class QOperatorWriter {
 public:
  QOperatorWriter(const ptq::QuantizedModel& qm, const QOperatorOptions& opt) : qm_(qm), opt_(opt), g_(qm.graph) {
    file_ = g_.source.empty() ? std::string("<graph>") : g_.source;
  }

  ::onnx::ModelProto run(QOperatorReport& rep) {
    check_model();
    const std::int64_t opset = std::max({g_.opset, opt_.min_opset, std::int64_t{13}});
    if (opset > g_.opset) raise_opset(g_, g_.opset, opset);
    check_ops_exist(g_, opset);
    g_.opset = opset;
    g_.opsets[""] = opset;
    g_.opsets[ops::kMicrosoftDomain] = 1;
    rep.opset = opset;

    // Quantized graph inputs enter through QuantizeLinear.
    for (const auto& gi : g_.inputs)
      if (const ptq::TensorQuant* t = activation(gi.name)) quantize(gi.name, gi.name, *t);

    const auto order = g_.topological_order();
    const std::vector<graph::Node> source = g_.nodes;
    for (std::size_t idx : order) emit(source[idx], rep);
    for (const auto& o : g_.outputs)
      if (activation(o.name) && !g_.is_input(o.name)) (void)float_form(o.name, false);

    // The float initializers no node reads any more (replaced by their integers).
    std::set<std::string> read;
    for (const auto& n : out_) read.insert(n.inputs.begin(), n.inputs.end());
    for (auto it = g_.initializers.begin(); it != g_.initializers.end();)
      it = (!read.count(it->first) && !g_.is_output(it->first)) ? g_.initializers.erase(it) : std::next(it);

    g_.nodes = std::move(out_);
    g_.value_info.clear();
    g_.validate();
    for (const auto& n : g_.nodes) ++rep.ops[n.op_type];
    ::onnx::ModelProto m = to_proto(g_, opt_.producer);
    check_proto(m, opset, rep);
    return m;
  }

 private:
  using TQ = ptq::TensorQuant;

  // ---------------------------------------------------------------- checks
  const graph::Node* node_of(const std::string& key) const {
    for (const auto& n : qm_.graph.nodes)
      if (ptq::node_key(n) == key) return &n;
    return nullptr;
  }

  void check_model() const {
    for (const auto& k : qm_.quantized_nodes)
      if (!node_of(k)) g_.fail("QOperator export: quantized node '", k, "' is not in the graph");
    const auto producers = g_.producers();
    for (const auto& kv : qm_.tensors) {
      const TQ& t = kv.second;
      const graph::Node* owner = node_of(t.node);
      const std::string who = owner ? owner->describe() : "graph (file '" + file_ + "')";
      t.params.validate(kv.first);
      if (t.role != ptq::TensorRole::activation) {
        if (!g_.is_initializer(kv.first))
          fail(who, ": ", ptq::to_string(t.role), " '", kv.first, "' is missing: no initializer of that name in the "
               "graph; expected the quantized ", ptq::to_string(t.role), " to be an initializer");
      } else if (!g_.is_input(kv.first) && !producers.count(kv.first)) {
        fail(who, ": activation '", kv.first, "' is neither a graph input nor produced by any node");
      }
      const char* expected = nullptr;
      switch (t.role) {
        case ptq::TensorRole::activation:
          if (t.format.bits != 8) expected = "8-bit activations (uint8 or int8)";
          break;
        case ptq::TensorRole::weight:
          if (t.format.bits != 8) expected = "8-bit weights (int8 or uint8)";
          else if (t.params.granularity.kind == GranularityKind::per_group)
            expected = "weights per tensor or per output channel";
          break;
        case ptq::TensorRole::bias:
          if (t.format.bits != 32 || !t.format.is_signed) expected = "int32 biases";
          break;
      }
      if (expected)
        fail(who, ": ", ptq::to_string(t.role), " '", kv.first, "' is ", t.format.name(),
             t.params.granularity.kind == GranularityKind::per_group ? " " + t.params.granularity.to_string() : "",
             "; the QOperator form (QLinearConv, QGemm, ...) takes ", expected,
             " (write this model with save_qdq, or calibrate with 8-bit formats per tensor or per channel)");
    }
  }

  // ---------------------------------------------------------------- values
  const TQ* activation(const std::string& v) const {
    const TQ* t = v.empty() ? nullptr : qm_.find(v);
    return t && t->role == ptq::TensorRole::activation ? t : nullptr;
  }
  bool is_quantized_node(const graph::Node& n) const { return qm_.is_quantized_node(ptq::node_key(n)); }

  std::string fresh(const std::string& base) {
    std::string n = g_.unique_name(base);
    for (std::size_t k = 1; reserved_.count(n); ++k) n = g_.unique_name(base + "_" + std::to_string(k));
    reserved_.insert(n);
    return n;
  }
  std::string base_of(const graph::Node& n) const { return n.name.empty() ? n.outputs.front() : n.name; }

  static int onnx_type(const ptq::TensorFormat& f) { return f.is_signed ? onnx_int8 : onnx_uint8; }
  static graph::DType dtype(const ptq::TensorFormat& f) { return f.is_signed ? graph::DType::int8 : graph::DType::uint8; }

  // scale / zero point initializers of a quantized tensor, made once: {scale, zero point}.
  std::pair<std::string, std::string> params(const std::string& v, const TQ& t, bool vector_params = false) {
    auto it = params_.find(v);
    if (it != params_.end()) return it->second;
    const std::int64_t n = static_cast<std::int64_t>(t.params.size());
    const bool scalar = n == 1 && !vector_params;
    const Dims dims = scalar ? Dims{} : Dims{n};
    const std::string s = fresh(v + "_scale"), z = fresh(v + "_zero_point");
    graph::Tensor st(graph::DType::float32, dims, s);
    for (std::int64_t i = 0; i < n; ++i) st.data<float>()[i] = t.params.scale[static_cast<std::size_t>(i)];
    const graph::DType zt = t.role == ptq::TensorRole::bias ? graph::DType::int32 : dtype(t.format);
    graph::Tensor zp(zt, dims, z);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t v32 = t.params.zero_point[static_cast<std::size_t>(i)];
      if (zt == graph::DType::int8) zp.data<std::int8_t>()[i] = static_cast<std::int8_t>(v32);
      else if (zt == graph::DType::uint8) zp.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v32);
      else zp.data<std::int32_t>()[i] = v32;
    }
    g_.initializers.emplace(s, std::move(st));
    g_.initializers.emplace(z, std::move(zp));
    return params_.emplace(v, std::make_pair(s, z)).first->second;
  }

  // The stored integers of a weight or bias, made once.
  std::string stored(const std::string& w, const TQ& t) {
    auto it = stored_.find(w);
    if (it != stored_.end()) return it->second;
    const graph::Tensor& f = g_.initializers.at(w);
    const std::vector<std::int32_t> ints = ptq::quantize_initializer(f, t, w);
    const std::string name = fresh(w + "_quantized");
    const graph::DType dt = t.role == ptq::TensorRole::bias ? graph::DType::int32 : dtype(t.format);
    graph::Tensor q(dt, f.shape(), name);
    for (std::size_t i = 0; i < ints.size(); ++i) {
      if (dt == graph::DType::int8) q.data<std::int8_t>()[i] = static_cast<std::int8_t>(ints[i]);
      else if (dt == graph::DType::uint8) q.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(ints[i]);
      else q.data<std::int32_t>()[i] = ints[i];
    }
    g_.initializers.emplace(name, std::move(q));
    return stored_.emplace(w, name).first->second;
  }

  graph::Node& add(const std::string& op, const std::string& name, std::vector<std::string> in,
                   std::vector<std::string> out, const std::string& domain = {}) {
    graph::Node n = make_node(op, name, std::move(in), std::move(out), g_.source);
    n.domain = domain;
    out_.push_back(std::move(n));
    return out_.back();
  }

  // QuantizeLinear(raw) -> the quantized form of activation v.
  void quantize(const std::string& v, const std::string& raw, const TQ& t) {
    const auto sz = params(v, t);
    const std::string q = fresh(v + "_quantized");
    add("QuantizeLinear", fresh(v + "_QuantizeLinear"), {raw, sz.first, sz.second}, {q});
    ++report_quantize_;
    qname_[v] = q;
  }

  // The integer form of activation v (produced before any reader, in topological order).
  std::string quantized_form(const std::string& v) const {
    auto it = qname_.find(v);
    if (it == qname_.end()) fail("QOperator export: activation '", v, "' has no integer form yet (internal order)");
    return it->second;
  }

  // What a float reader sees of v: the dequantized integers for a quantized activation (every
  // reader of a quantized node's output, and the quantized readers of a quantized graph input),
  // else the value itself.
  std::string float_form(const std::string& v, bool quantized_reader) {
    const TQ* t = activation(v);
    if (!t) return v;
    if (g_.is_input(v) && !quantized_reader) return v;
    auto it = fname_.find(v);
    if (it != fname_.end()) return it->second;
    const std::string name = g_.is_input(v) ? ptq::detail::dequantized_input_name(qm_.graph, v) : v;
    reserved_.insert(name);
    const auto sz = params(v, *t);
    add("DequantizeLinear", fresh(v + "_DequantizeLinear"), {quantized_form(v), sz.first, sz.second}, {name});
    ++report_dequantize_;
    return fname_.emplace(v, name).first->second;
  }

  // A weight or bias read by a quantized node that stays float: DequantizeLinear of its integers.
  std::string dequantized_initializer(const std::string& w, const TQ& t) {
    auto it = dq_init_.find(w);
    if (it != dq_init_.end()) return it->second;
    const std::string q = stored(w, t);
    const auto sz = params(w, t, t.params.granularity.kind != GranularityKind::per_tensor);
    const std::string out = fresh(w + "_dequantized");
    graph::Node& dq = add("DequantizeLinear", fresh(w + "_DequantizeLinear"), {q, sz.first, sz.second}, {out});
    if (t.params.granularity.kind == GranularityKind::per_channel)
      dq.attributes["axis"] = graph::Attribute::make_int(t.params.granularity.axis);
    ++report_dequantize_;
    return dq_init_.emplace(w, out).first->second;
  }

  // ---------------------------------------------------------------- nodes
  void emit(const graph::Node& n, QOperatorReport& rep) {
    const bool quantized = is_quantized_node(n);
    std::string reason;
    if (quantized) {
      const std::size_t before = out_.size();
      try {
        express(n);
        ++rep.qoperator_nodes;
        return;
      } catch (const Unsupported& u) {
        out_.resize(before);  // nothing of the attempt stays
        reason = u.why;
      }
    } else {
      const bool default_domain = n.domain.empty() || n.domain == "ai.onnx";
      const auto& keep = qm_.config.keep_float;
      if (std::find(keep.begin(), keep.end(), ptq::node_key(n)) != keep.end()) reason = "in keep_float";
      else if (!default_domain || !qm_.config.quantize_ops.count(n.op_type))
        reason = "op " + n.op_type + " is not in quantize_ops";
      else reason = "not quantized";
    }
    rep.float_nodes.push_back({ptq::node_key(n), n.op_type, reason});
    emit_float(n, quantized);
  }

  // The node as it is, in float: quantized activations read dequantized, quantized weights and
  // biases of a quantized node dequantized from their integers, quantized outputs written under
  // a new name and quantized.
  void emit_float(const graph::Node& src, bool quantized) {
    graph::Node n = src;
    for (auto& in : n.inputs) {
      if (in.empty()) continue;
      const TQ* t = qm_.find(in);
      if (t && t->role != ptq::TensorRole::activation) {
        if (quantized) in = dequantized_initializer(in, *t);
      } else {
        in = float_form(in, quantized);
      }
    }
    std::vector<std::pair<std::string, std::string>> to_quantize;  // value, raw name
    for (auto& o : n.outputs) {
      if (o.empty() || !activation(o)) continue;
      const std::string raw = fresh(o + "_float");
      to_quantize.emplace_back(o, raw);
      o = raw;
    }
    out_.push_back(std::move(n));
    for (const auto& vr : to_quantize) quantize(vr.first, vr.second, *activation(vr.first));
  }

  struct Unsupported {
    std::string why;
  };
  [[noreturn]] static void unsupported(std::string why) { throw Unsupported{std::move(why)}; }

  // The quantized activation at input k (a data input), or Unsupported.
  const TQ& quantized_input(const graph::Node& n, std::size_t k) const {
    if (!n.has_input(k)) unsupported("input " + std::to_string(k) + " is missing");
    const TQ* t = activation(n.inputs[k]);
    if (!t) unsupported("input '" + n.inputs[k] + "' is not a quantized activation");
    return *t;
  }
  const TQ& quantized_output(const graph::Node& n) const {
    for (std::size_t k = 1; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) unsupported("it has a second output ('" + n.outputs[k] + "')");
    const TQ* t = activation(n.outputs.at(0));
    if (!t) unsupported("its output '" + n.outputs.at(0) + "' is not quantized");
    return *t;
  }
  static void same_format(const TQ& a, const TQ& b, const std::string& what) {
    if (a.format != b.format)
      unsupported(what + " are " + a.format.name() + " and " + b.format.name() + "; the op takes one 8-bit type");
  }
  static bool same_params(const TQ& a, const TQ& b) {
    return a.format == b.format && a.params.scale == b.params.scale && a.params.zero_point == b.params.zero_point;
  }

  // Weight input k of n: its stored integers, scale and zero point (per tensor or along
  // `channel_axis`). Unsupported when it is not a quantized initializer.
  struct WeightRef {
    std::string q, scale, zero_point;
    const TQ* t = nullptr;
  };
  WeightRef weight(const graph::Node& n, std::size_t k, int rank, int channel_axis) {
    const std::string& w = n.inputs.at(k);
    const TQ* t = qm_.find(w);
    if (!t || t->role != ptq::TensorRole::weight) unsupported("weight '" + w + "' is not a quantized initializer");
    const graph::Tensor& f = g_.initializers.at(w);
    if (f.rank() != rank) unsupported("weight '" + w + "' has rank " + std::to_string(f.rank()));
    const Granularity& gr = t->params.granularity;
    const bool per_channel = gr.kind == GranularityKind::per_channel;
    if (per_channel && (gr.axis < 0 ? gr.axis + rank : gr.axis) != channel_axis)
      unsupported("weight '" + w + "' is quantized along axis " + std::to_string(gr.axis) + ", not the output axis");
    WeightRef r;
    r.t = t;
    r.q = stored(w, *t);
    const auto sz = params(w, *t, per_channel);
    r.scale = sz.first;
    r.zero_point = sz.second;
    return r;
  }
  std::string bias(const graph::Node& n, std::size_t k) {
    if (!n.has_input(k)) return {};
    const std::string& b = n.inputs[k];
    const TQ* t = qm_.find(b);
    if (!t || t->role != ptq::TensorRole::bias)
      unsupported("bias '" + b + "' is float (not quantized to int32: see the model's notes)");
    return stored(b, *t);
  }

  // The integer op's output: the quantized form of n's output.
  std::string output_name(const graph::Node& n) {
    const std::string& v = n.outputs.at(0);
    const std::string q = fresh(v + "_quantized");
    qname_[v] = q;
    return q;
  }

  void express(const graph::Node& n) {
    const std::string& op = n.op_type;
    const std::string name = base_of(n);
    auto copy_attrs = [&](graph::Node& dst, std::initializer_list<const char*> keys) {
      for (const char* k : keys) {
        auto it = n.attributes.find(k);
        if (it != n.attributes.end()) dst.attributes[k] = it->second;
      }
    };
    auto qin = [&](std::size_t k) {
      const TQ& t = quantized_input(n, k);
      const auto sz = params(n.inputs[k], t);
      return std::vector<std::string>{quantized_form(n.inputs[k]), sz.first, sz.second};
    };
    auto qparams_of = [&](const std::string& v, const TQ& t) {
      const auto sz = params(v, t);
      return std::vector<std::string>{sz.first, sz.second};
    };
    auto cat = [](std::vector<std::string> a, const std::vector<std::string>& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };

    if (op == "Conv") {
      const TQ& x = quantized_input(n, 0);
      const TQ& y = quantized_output(n);
      if (!g_.is_initializer(n.inputs.at(1))) unsupported("its weight '" + n.inputs.at(1) + "' is not an initializer");
      const int rank = g_.initializers.at(n.inputs[1]).rank();
      const WeightRef w = weight(n, 1, rank, 0);
      const auto& zps = w.t->params.zero_point;
      if (std::adjacent_find(zps.begin(), zps.end(), std::not_equal_to<>()) != zps.end())
        fail(n.describe(), ": weight '", n.inputs[1], "' has different zero points per channel; QLinearConv takes one "
             "zero point for all channels (symmetric weights give 0; write this model with save_qdq)");
      if (x.format.is_signed && !w.t->format.is_signed)
        unsupported("int8 input with uint8 weights (QLinearConv takes uint8 x uint8/int8 or int8 x int8)");
      const std::string b = bias(n, 2);
      std::vector<std::string> in = cat(qin(0), {w.q, w.scale, w.zero_point});
      in = cat(in, qparams_of(n.outputs[0], y));
      if (!b.empty()) in.push_back(b);
      graph::Node& q = add("QLinearConv", name, in, {output_name(n)});
      copy_attrs(q, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
      return;
    }
    if (op == "Gemm" || op == "MatMul") {
      const TQ& a = quantized_input(n, 0);
      const bool gemm = op == "Gemm";
      const bool trans_b = gemm && n.attr_int("transB", 0) != 0;
      const TQ* y = activation(n.outputs.at(0));
      if (!gemm || y) (void)quantized_output(n);
      for (std::size_t k = 1; k < n.outputs.size(); ++k)
        if (!n.outputs[k].empty()) unsupported("it has a second output");
      std::vector<std::string> b;
      bool b_signed = false;
      const std::string& bv = n.inputs.at(1);
      if (g_.is_initializer(bv)) {
        const int rank = g_.initializers.at(bv).rank();
        if (rank != 2) unsupported("weight '" + bv + "' has rank " + std::to_string(rank) + "; expected a matrix");
        const WeightRef w = weight(n, 1, 2, trans_b ? 0 : 1);
        b = {w.q, w.scale, w.zero_point};
        b_signed = w.t->format.is_signed;
      } else {
        const TQ& bt = quantized_input(n, 1);
        b = qin(1);
        b_signed = bt.format.is_signed;
      }
      if (a.format.is_signed && !b_signed)
        unsupported("int8 A with uint8 B (ONNX Runtime takes uint8 x uint8/int8 or int8 x int8)");
      if (y) same_format(a, *y, "input and output");
      if (!gemm) {
        add("QLinearMatMul", name, cat(cat(qin(0), b), qparams_of(n.outputs[0], *y)), {output_name(n)});
        return;
      }
      if (n.attr_float("beta", 1.0f) != 1.0f && n.has_input(2)) unsupported("beta is not 1");
      const std::string c = bias(n, 2);
      std::vector<std::string> in = cat(qin(0), b);
      in.push_back(c);
      std::string out;
      if (y) {
        in = cat(in, qparams_of(n.outputs[0], *y));
        out = output_name(n);
      } else {
        if (c.empty()) in.pop_back();
        out = n.outputs[0];  // float output: the value itself
      }
      graph::Node& q = add("QGemm", name, in, {out}, ops::kMicrosoftDomain);
      copy_attrs(q, {"transA", "transB", "alpha"});
      return;
    }
    if (op == "Add" || op == "Mul") {
      const TQ& a = quantized_input(n, 0);
      const TQ& b = quantized_input(n, 1);
      const TQ& y = quantized_output(n);
      same_format(a, b, "the inputs");
      same_format(a, y, "input and output");
      add(op == "Add" ? "QLinearAdd" : "QLinearMul", name, cat(cat(qin(0), qin(1)), qparams_of(n.outputs[0], y)),
          {output_name(n)}, ops::kMicrosoftDomain);
      return;
    }
    if (op == "Relu" || op == "LeakyRelu" || op == "Sigmoid") {
      const TQ& x = quantized_input(n, 0);
      const TQ& y = quantized_output(n);
      same_format(x, y, "input and output");
      graph::Node& q = add(op == "Sigmoid" ? "QLinearSigmoid" : "QLinearLeakyRelu", name,
                           cat(qin(0), qparams_of(n.outputs[0], y)), {output_name(n)}, ops::kMicrosoftDomain);
      if (op != "Sigmoid")
        q.attributes["alpha"] = graph::Attribute::make_float(op == "Relu" ? 0.0f : n.attr_float("alpha", 0.01f));
      return;
    }
    if (op == "AveragePool" || op == "GlobalAveragePool") {
      const TQ& x = quantized_input(n, 0);
      const TQ& y = quantized_output(n);
      same_format(x, y, "input and output");
      for (auto d : n.attr_ints("dilations"))
        if (d != 1) unsupported("dilations are not 1 (QLinearAveragePool has none)");
      graph::Node& q = add(op == "AveragePool" ? "QLinearAveragePool" : "QLinearGlobalAveragePool", name,
                           cat(qin(0), qparams_of(n.outputs[0], y)), {output_name(n)}, ops::kMicrosoftDomain);
      copy_attrs(q, {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"});
      q.attributes["channels_last"] = graph::Attribute::make_int(0);
      return;
    }
    if (op == "Concat") {
      const TQ& y = quantized_output(n);
      std::vector<std::string> in = qparams_of(n.outputs[0], y);
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        same_format(quantized_input(n, k), y, "input and output");
        in = cat(in, qin(k));
      }
      graph::Node& q = add("QLinearConcat", name, in, {output_name(n)}, ops::kMicrosoftDomain);
      copy_attrs(q, {"axis"});
      return;
    }
    if (op == "Clip") {
      const TQ& x = quantized_input(n, 0);
      const TQ& y = quantized_output(n);
      if (!same_params(x, y)) unsupported("its input and output parameters differ (no integer Clip for that)");
      std::vector<std::string> in = {quantized_form(n.inputs[0])};
      float bound[2] = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
      for (int k = 0; k < 2; ++k) {
        const char* attr = k == 0 ? "min" : "max";
        if (n.has_attr(attr)) bound[k] = n.attr_float(attr, bound[k]);
        const std::size_t idx = static_cast<std::size_t>(k) + 1;
        if (n.has_input(idx)) {
          auto it = g_.initializers.find(n.inputs[idx]);
          if (it == g_.initializers.end() || it->second.size() != 1 || it->second.dtype() != graph::DType::float32)
            unsupported("its bound '" + n.inputs[idx] + "' is not a float constant");
          bound[k] = it->second.data<float>()[0];
        }
      }
      const IntRange r = y.format.range();
      for (int k = 0; k < 2; ++k) {
        const float q = std::nearbyint(bound[k] / y.params.scale[0]) + static_cast<float>(y.params.zero_point[0]);
        const std::int32_t v = !(q >= static_cast<float>(r.qmin)) ? r.qmin
                               : !(q <= static_cast<float>(r.qmax)) ? r.qmax : static_cast<std::int32_t>(q);
        const std::string bn = fresh(name + (k == 0 ? "_min_quantized" : "_max_quantized"));
        graph::Tensor bt(dtype(y.format), Dims{}, bn);
        if (y.format.is_signed) bt.data<std::int8_t>()[0] = static_cast<std::int8_t>(v);
        else bt.data<std::uint8_t>()[0] = static_cast<std::uint8_t>(v);
        g_.initializers.emplace(bn, std::move(bt));
        in.push_back(bn);
      }
      add("Clip", name, in, {output_name(n)});
      return;
    }
    if (op == "MaxPool" || op == "Flatten" || op == "Reshape" || op == "Transpose" || op == "Squeeze" ||
        op == "Unsqueeze" || op == "Identity") {
      const TQ& x = quantized_input(n, 0);
      const TQ& y = quantized_output(n);
      same_format(x, y, "input and output");
      graph::Node q = n;
      q.inputs[0] = quantized_form(n.inputs[0]);
      for (std::size_t k = 1; k < q.inputs.size(); ++k)
        if (!q.inputs[k].empty()) q.inputs[k] = float_form(q.inputs[k], true);
      q.outputs.resize(1);
      if (same_params(x, y)) {
        q.outputs[0] = output_name(n);
        out_.push_back(std::move(q));
        return;
      }
      // The op on the integers, then Q_y(DQ_x(.)) by table lookup (QLinearLeakyRelu, alpha 1).
      const std::string mid = fresh(n.outputs[0] + "_in_input_scale");
      q.outputs[0] = mid;
      out_.push_back(std::move(q));
      const auto xs = params(n.inputs[0], x);
      graph::Node& r = add("QLinearLeakyRelu", fresh(name + "_requantize"),
                           cat({mid, xs.first, xs.second}, qparams_of(n.outputs[0], y)), {output_name(n)},
                           ops::kMicrosoftDomain);
      r.attributes["alpha"] = graph::Attribute::make_float(1.0f);
      ++requantize_;
      return;
    }
    unsupported("ONNX Runtime has no quantized (QOperator) form of " + op);
  }

  void check_proto(const ::onnx::ModelProto& m, std::int64_t opset, QOperatorReport& rep) const {
    if (!opt_.check) {
      rep.check_note = "not asked";
      return;
    }
#if QUANTKIT_ONNX_SHAPE_INFERENCE
    const int known = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(::onnx::ONNX_DOMAIN).second;
    if (opset > known) {
      rep.check_note = "libonnx knows opsets up to " + std::to_string(known) + "; the model is opset " +
                       std::to_string(opset) + " (check it with ONNX Runtime)";
      return;
    }
    try {
      ::onnx::checker::check_model(m);
    } catch (const std::exception& e) {
      fail("file '", file_, "': the QOperator model fails ONNX's checker: ", e.what());
    }
    rep.checked = true;
#else
    (void)m;
    (void)opset;
    rep.check_note = "libonnx is not linked (QUANTKIT_ONNX_SHAPE_INFERENCE=0)";
#endif
  }

 public:
  std::size_t requantize_ = 0, report_quantize_ = 0, report_dequantize_ = 0;

 private:
  const ptq::QuantizedModel& qm_;
  const QOperatorOptions& opt_;
  graph::Graph g_;
  std::string file_;
  std::vector<graph::Node> out_;
  std::set<std::string> reserved_;
  std::map<std::string, std::string> qname_, fname_, stored_, dq_init_;
  std::map<std::string, std::pair<std::string, std::string>> params_;
};

}  // namespace detail

// The QOperator ModelProto of a calibrated model (nothing written). `report` is filled if given.
inline ::onnx::ModelProto to_qoperator_proto(const ptq::QuantizedModel& qm, const QOperatorOptions& opt = {},
                                             QOperatorReport* report = nullptr) {
  QOperatorReport rep;
  detail::QOperatorWriter w(qm, opt);
  ::onnx::ModelProto m = w.run(rep);
  rep.quantize_nodes = w.report_quantize_;
  rep.dequantize_nodes = w.report_dequantize_;
  rep.requantize_nodes = w.requantize_;
  if (report) *report = rep;
  return m;
}

// Writes the QOperator model to `path` atomically (nothing is left there on error).
inline QOperatorReport save_qoperator(const ptq::QuantizedModel& qm, const std::string& path,
                                      const QOperatorOptions& opt = {}) {
  QOperatorReport rep;
  ::onnx::ModelProto m;
  try {
    m = to_qoperator_proto(qm, opt, &rep);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find(path) != std::string::npos) throw;
    detail::fail("writing '", path, "': ", what.compare(0, 10, "quantkit: ") == 0 ? what.substr(10) : what);
  }
  save_proto(m, path);
  return rep;
}

}  // namespace onnx
}  // namespace quantkit
