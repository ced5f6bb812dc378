// IntegerMode (quantkit/executor/integer/mode.hpp): a QDQ graph run in integers vs the same
// graph run in float by the existing executor (fake quant), for every requantization scheme;
// QLinearConv/QLinearMatMul reproduced bit for bit with FloatMultiplier<RoundHalfEven>; the
// report of which nodes stay float. The QDQ graphs are built here from float graphs with
// random weights (weights int8 per output channel, activations uint8 or int8 from min/max
// calibration).
#include <quantkit/simd/simd.hpp>  // implementation: tests/support/simd_dispatch.cpp

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <quantkit/executor.hpp>
#include <quantkit/executor/integer/mode.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_integer_mode {

namespace qk = quantkit;
using qk::graph::Attribute;
using qk::graph::DType;
using qk::graph::Graph;
using qk::graph::Node;
using qk::graph::Tensor;

namespace {

Attribute I(std::int64_t v) { return Attribute::make_int(v); }
Attribute Is(std::vector<std::int64_t> v) { return Attribute::make_ints(std::move(v)); }

Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
          std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.op_type = op;
  n.name = out.at(0) + "_node";
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attributes = std::move(attrs);
  return n;
}

Tensor random_tensor(const qk::Dims& shape, std::mt19937& rng, float sd) {
  std::normal_distribution<float> d(0.0f, sd);
  Tensor t(DType::float32, shape);
  for (std::int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// A graph input's or output's entry (no shape).
qk::graph::ValueInfo info(const std::string& n, DType t) {
  qk::graph::ValueInfo v;
  v.name = n;
  v.dtype = t;
  return v;
}

// A small CNN in float: Conv+Relu, MaxPool, depthwise Conv+Clip(0,6), 1x1 Conv, Add,
// AveragePool, Concat, GlobalAveragePool, Flatten, Gemm (transB) and Reshape + MatMul.
Graph float_cnn(std::mt19937& rng) {
  Graph g;
  g.name = "cnn";
  g.opset = 13;
  qk::graph::ValueInfo x = info("x", DType::float32);
  x.has_shape = true;
  x.dims = {2, 3, 12, 12};
  g.inputs.push_back(x);
  auto init = [&](const std::string& n, Tensor t) {
    t.set_name(n);
    g.initializers[n] = std::move(t);
  };
  init("w1", random_tensor({8, 3, 3, 3}, rng, 0.3f));
  init("b1", random_tensor({8}, rng, 0.1f));
  init("w2", random_tensor({8, 1, 3, 3}, rng, 0.4f));
  init("b2", random_tensor({8}, rng, 0.1f));
  init("w3", random_tensor({8, 8, 1, 1}, rng, 0.3f));
  init("wg", random_tensor({10, 16}, rng, 0.3f));
  init("bg", random_tensor({10}, rng, 0.1f));
  init("wm", random_tensor({576, 6}, rng, 0.05f));
  init("clip_lo", Tensor::scalar(0.0f));
  init("clip_hi", Tensor::scalar(6.0f));
  init("shape", Tensor::from_vector<std::int64_t>({2}, {2, 576}));
  g.nodes.push_back(node("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", Is({1, 1, 1, 1})}}));
  g.nodes.push_back(node("Relu", {"c1"}, {"r1"}));
  g.nodes.push_back(node("MaxPool", {"r1"}, {"p1"}, {{"kernel_shape", Is({2, 2})}, {"strides", Is({2, 2})}}));
  g.nodes.push_back(node("Conv", {"p1", "w2", "b2"}, {"c2"}, {{"pads", Is({1, 1, 1, 1})}, {"group", I(8)}}));
  g.nodes.push_back(node("Clip", {"c2", "clip_lo", "clip_hi"}, {"r2"}));
  g.nodes.push_back(node("Conv", {"r2", "w3"}, {"c3"}));
  g.nodes.push_back(node("Add", {"c3", "p1"}, {"a1"}));
  g.nodes.push_back(node("AveragePool", {"a1"}, {"ap"},
                         {{"kernel_shape", Is({3, 3})}, {"pads", Is({1, 1, 1, 1})}, {"count_include_pad", I(0)}}));
  g.nodes.push_back(node("Concat", {"a1", "ap"}, {"cat"}, {{"axis", I(1)}}));
  g.nodes.push_back(node("GlobalAveragePool", {"cat"}, {"gap"}));
  g.nodes.push_back(node("Flatten", {"gap"}, {"flat"}));
  g.nodes.push_back(node("Gemm", {"flat", "wg", "bg"}, {"logits"}, {{"transB", I(1)}}));
  g.nodes.push_back(node("Reshape", {"cat", "shape"}, {"rs"}));
  g.nodes.push_back(node("MatMul", {"rs", "wm"}, {"mm"}));
  for (const char* o : {"logits", "mm"}) g.outputs.push_back(info(o, DType::float32));
  return g;
}

struct QParams {
  float scale;
  std::int32_t zp;
};

QParams activation_params(float lo, float hi, DType t) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  const bool wide = t == DType::uint16 || t == DType::int16;
  const float levels = wide ? 65535.0f : 255.0f;
  const float s = hi > lo ? (hi - lo) / levels : 1.0f;
  const float qmin = t == DType::uint8 || t == DType::uint16 ? 0.0f : wide ? -32768.0f : -128.0f;
  const float z = std::nearbyint(qmin - lo / s);
  return {s, static_cast<std::int32_t>(std::min(std::max(z, qmin), qmin + levels))};
}

Tensor zp_tensor(DType t, std::int32_t z, const std::string& name) {
  switch (t) {
    case DType::uint8: return Tensor::scalar<std::uint8_t>(static_cast<std::uint8_t>(z), name);
    case DType::uint16: return Tensor::scalar<std::uint16_t>(static_cast<std::uint16_t>(z), name);
    case DType::int16: return Tensor::scalar<std::int16_t>(static_cast<std::int16_t>(z), name);
    default: return Tensor::scalar<std::int8_t>(static_cast<std::int8_t>(z), name);
  }
}

// QDQ graph from a float graph and a calibration input: every float activation v (node
// output) becomes Q(v_f) -> v_q -> DQ -> v; the input x gets Q -> DQ; Conv/Gemm/MatMul weights
// become DQ of int8 per-output-channel symmetric ([-127, 127]) initializers.
Graph make_qdq(const Graph& f, const qk::graph::Tensor& calib, DType act) {
  qk::Executor<> run(f);
  qk::RunOptions opt;
  opt.keep_intermediates = true;
  const auto values = run.run({{"x", calib}}, opt);
  Graph g = f;
  g.nodes.clear();
  auto add_qdq = [&](const std::string& src, const std::string& q, const std::string& dst) {
    const Tensor& t = src == "x" ? calib : values.at(dst);
    float lo = 0.0f, hi = 0.0f;
    for (std::int64_t i = 0; i < t.size(); ++i) {
      lo = std::min(lo, t.data<float>()[i]);
      hi = std::max(hi, t.data<float>()[i]);
    }
    const QParams p = activation_params(lo, hi, act);
    g.initializers[q + "_s"] = Tensor::scalar(p.scale, q + "_s");
    g.initializers[q + "_z"] = zp_tensor(act, p.zp, q + "_z");
    g.nodes.push_back(node("QuantizeLinear", {src, q + "_s", q + "_z"}, {q}));
    g.nodes.push_back(node("DequantizeLinear", {q, q + "_s", q + "_z"}, {dst}));
  };
  add_qdq("x", "x_q", "x_dq");
  std::map<std::string, int> weight_axis;
  for (const auto& n : f.nodes) {
    if (n.op_type == "Conv") weight_axis[n.inputs[1]] = 0;
    if (n.op_type == "Gemm") weight_axis[n.inputs[1]] = n.attr_int("transB", 0) ? 0 : 1;
    if (n.op_type == "MatMul" && f.is_initializer(n.inputs[1])) weight_axis[n.inputs[1]] = 1;
  }
  for (const auto& [w, axis] : weight_axis) {
    const Tensor wf = g.initializers.at(w);
    g.initializers.erase(w);
    const std::int64_t C = wf.dim(axis);
    const std::int64_t inner = qk::ops::product(wf.shape(), axis + 1, wf.rank());
    std::vector<float> s(static_cast<std::size_t>(C), 0.0f);
    for (std::int64_t i = 0; i < wf.size(); ++i) {
      const auto c = static_cast<std::size_t>((i / inner) % C);
      s[c] = std::max(s[c], std::fabs(wf.data<float>()[i]));
    }
    for (auto& v : s) v = v > 0.0f ? v / 127.0f : 1.0f;
    Tensor q(DType::int8, wf.shape(), w + "_q");
    for (std::int64_t i = 0; i < wf.size(); ++i) {
      const auto c = static_cast<std::size_t>((i / inner) % C);
      q.data<std::int8_t>()[i] = static_cast<std::int8_t>(std::nearbyint(wf.data<float>()[i] / s[c]));
    }
    g.initializers[w + "_q"] = q;
    g.initializers[w + "_s"] = Tensor::from_vector<float>({C}, s, w + "_s");
    Tensor z(DType::int8, qk::Dims{C}, w + "_z");
    g.initializers[w + "_z"] = z;
    g.nodes.push_back(node("DequantizeLinear", {w + "_q", w + "_s", w + "_z"}, {w}, {{"axis", I(axis)}}));
  }
  for (const auto& n0 : f.nodes) {
    Node n = n0;
    for (auto& in : n.inputs)
      if (in == "x") in = "x_dq";
    const std::string out = n.outputs[0];
    if (values.count(out) && values.at(out).dtype() == DType::float32) {
      n.outputs[0] = out + "_f";
      g.nodes.push_back(n);
      add_qdq(out + "_f", out + "_q", out);
    } else {
      g.nodes.push_back(n);
    }
  }
  return g;
}

// Largest |a - b| / step over the outputs.
double max_steps(const Tensor& a, const Tensor& b, float step) {
  REQUIRE(a.shape() == b.shape());
  double m = 0.0;
  for (std::int64_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(static_cast<double>(a.data<float>()[i]) - b.data<float>()[i]) / step);
  return m;
}

template <class Scheme>
double compare_modes(const Graph& qdq, const Tensor& x, bool print, const char* scheme_name, bool all_integer = true,
                     const char* wide_float = nullptr) {
  qk::Executor<> fake(qdq);
  qk::Executor<qk::IntegerModeT<Scheme>> intr(qdq);
  // Everything this mode covers is integer (the shift schemes cannot express multipliers > 1
  // or 1.5: those nodes stay float, and say so; with 16-bit activations, `wide_float` names the
  // one node whose reduction is too long for int32).
  for (const auto& r : intr.mode().report()) {
    const std::string what = r.node + " (" + r.op_type + "): " + r.detail;
    CAPTURE(what);
    const bool too_long = wide_float && r.node == wide_float &&
                          r.detail.find("could overflow the int32 accumulator") != std::string::npos;
    CHECK((r.integer || too_long || (!all_integer && r.detail.find("cannot express") != std::string::npos)));
  }
  if (all_integer) {
    CHECK(intr.mode().float_nodes().size() == (wide_float ? 1u : 0u));
    CHECK(intr.mode().integer_count() == (wide_float ? 13u : 14u));
    for (const auto& n : intr.graph().nodes) {
      CHECK(n.op_type != "Conv");
      CHECK(n.op_type != "Gemm");
      if (!wide_float) CHECK(n.op_type != "MatMul");
    }
  }
  qk::RunOptions opt;
  opt.keep_intermediates = true;
  const auto a = fake.run({{"x", x}}, opt);
  const auto b = intr.run({{"x", x}}, opt);
  double worst = 0.0;
  std::string per_layer;
  // Every quantized activation (the *_q values both graphs hold), in steps of its scale.
  for (const auto& kv : b) {
    if (kv.first.size() < 2 || kv.first.compare(kv.first.size() - 2, 2, "_q") != 0 || !a.count(kv.first)) continue;
    const Tensor& ta = a.at(kv.first);
    const Tensor& tb = kv.second;
    REQUIRE(ta.dtype() == tb.dtype());
    long d = 0;
    for (std::int64_t i = 0; i < ta.size(); ++i)
      d = std::max(d, std::labs(static_cast<long>(ta.as_int64(i)) - static_cast<long>(tb.as_int64(i))));
    per_layer += " " + kv.first + ":" + std::to_string(d);
  }
  // The outputs (dequantized from logits_q, mm_q), in steps: the integer difference.
  for (const char* o : {"logits", "mm"}) {
    const float step = qdq.initializers.at(std::string(o) + "_q_s").data<float>()[0];
    worst = std::max(worst, std::nearbyint(max_steps(a.at(o), b.at(o), step)));
  }
  if (print)
    std::printf("[integer] %-26s %2zu integer, %zu float; outputs max diff %.3g steps; per layer (steps):%s\n",
                scheme_name, intr.mode().integer_count(), intr.mode().float_nodes().size(), worst, per_layer.c_str());
  return worst;
}

}  // namespace

TEST_CASE("integer mode: a QDQ CNN runs in integers within one step of fake quant (uint8 and int8 activations)") {
  std::mt19937 rng(42);
  const Graph f = float_cnn(rng);
  const Tensor calib = random_tensor({2, 3, 12, 12}, rng, 1.0f);
  const Tensor x = random_tensor({2, 3, 12, 12}, rng, 1.0f);
  for (DType act : {DType::uint8, DType::int8}) {
    const Graph qdq = make_qdq(f, calib, act);
    const char* at = act == DType::uint8 ? "u8" : "s8";
    CAPTURE(at);
    std::printf("[integer] activations %s\n", at);
    CHECK(compare_modes<qk::FloatMultiplier<qk::RoundHalfEven>>(qdq, x, true, "FloatMultiplier<HalfEven>") <= 1.0);
    CHECK(compare_modes<qk::FixedPointDoubleRounding>(qdq, x, true, "FixedPointDoubleRounding") <= 1.0);
    CHECK(compare_modes<qk::FixedPointSingleRounding>(qdq, x, true, "FixedPointSingleRounding") <= 1.0);
    // The shift schemes approximate each multiplier by powers of two: reported, not bounded.
    compare_modes<qk::PowerOfTwo<qk::RoundHalfAway>>(qdq, x, true, "PowerOfTwo<HalfAway>", false);
    compare_modes<qk::SingleShift>(qdq, x, true, "SingleShift", false);
    compare_modes<qk::DoubleShift>(qdq, x, true, "DoubleShift", false);
  }
}

namespace {
// IntMatMul's requantization prepared once (prepare_int_matmul) against made per call (the
// registry without that prepare): the same bytes for every value; and a run feeding the output
// scale of an IntMatMul reads the fed value, not what was prepared from the initializer.
template <class Scheme>
void check_prepared_matmul(const Graph& qdq, const Tensor& x) {
  qk::Executor<qk::IntegerModeT<Scheme>> intr(qdq);
  qk::OpRegistry lean_registry = intr.mode().registry();
  lean_registry.set_prepare("IntMatMul", nullptr, qk::integer::kDomain);
  const qk::Executor<> lean(intr.graph(), lean_registry);
  std::size_t matmuls = 0;
  std::string fed_scale;
  for (const Node& n : intr.graph().nodes) {
    if (n.op_type != "IntMatMul") continue;
    ++matmuls;
    CHECK(n.inputs.size() == 10u);  // the packed weights: the prepared path
    if (fed_scale.empty()) fed_scale = n.inputs.at(6);
  }
  REQUIRE(matmuls == 2u);  // the Gemm (with a bias) and the MatMul
  qk::RunOptions opt;
  opt.keep_intermediates = true;
  const auto a = intr.run({{"x", x}}, opt);
  const auto b = lean.run({{"x", x}}, opt);
  REQUIRE(a.size() == b.size());
  for (const auto& kv : a) {
    CAPTURE(kv.first);
    CHECK(kv.second == b.at(kv.first));
  }
  const Tensor& scale = intr.graph().initializers.at(fed_scale);
  const Tensor other = Tensor::scalar(scale.data<float>()[0] * 1.37f);
  CAPTURE(fed_scale);
  const auto fa = intr.run({{"x", x}, {fed_scale, other}}, opt);
  const auto fb = lean.run({{"x", x}, {fed_scale, other}}, opt);
  bool changed = false;
  for (const auto& kv : fa) {
    CAPTURE(kv.first);
    CHECK(kv.second == fb.at(kv.first));
    changed = changed || !(kv.second == a.at(kv.first));
  }
  CHECK(changed);  // the fed scale reached the output
}
}  // namespace

TEST_CASE("integer mode: IntMatMul's prepared requantization equals the one made per call (uint8 and int8 activations)") {
  std::mt19937 rng(43);
  const Graph f = float_cnn(rng);
  const Tensor calib = random_tensor({2, 3, 12, 12}, rng, 1.0f);
  const Tensor x = random_tensor({2, 3, 12, 12}, rng, 1.0f);
  for (DType act : {DType::uint8, DType::int8}) {
    CAPTURE(qk::graph::to_string(act));
    const Graph qdq = make_qdq(f, calib, act);
    check_prepared_matmul<qk::FloatMultiplier<qk::RoundHalfEven>>(qdq, x);
    check_prepared_matmul<qk::FixedPointDoubleRounding>(qdq, x);
    check_prepared_matmul<qk::FixedPointSingleRounding>(qdq, x);
  }
}

TEST_CASE("integer mode: 16-bit activations (uint16, int16) run in integers within one step of fake quant") {
  // A16W8: every node integer but the MatMul (see below), int8 weights, outputs within one
  // 16-bit step of the float fake-quant graph (as for 8 bits).
  std::mt19937 rng(42);
  const Graph f = float_cnn(rng);
  const Tensor calib = random_tensor({2, 3, 12, 12}, rng, 1.0f);
  const Tensor x = random_tensor({2, 3, 12, 12}, rng, 1.0f);
  for (DType act : {DType::uint16, DType::int16}) {
    const Graph qdq = make_qdq(f, calib, act);
    const char* at = act == DType::uint16 ? "u16" : "s16";
    CAPTURE(at);
    std::printf("[integer] activations %s\n", at);
    // The MatMul reduces 576 products: too long for 16-bit inputs in int32, it stays float.
    CHECK(compare_modes<qk::FloatMultiplier<qk::RoundHalfEven>>(qdq, x, true, "FloatMultiplier<HalfEven>", true,
                                                                "mm_node") <= 1.0);
    CHECK(compare_modes<qk::FixedPointDoubleRounding>(qdq, x, true, "FixedPointDoubleRounding", true, "mm_node") <= 1.0);
    CHECK(compare_modes<qk::FixedPointSingleRounding>(qdq, x, true, "FixedPointSingleRounding", true, "mm_node") <= 1.0);
  }
}

namespace {
Tensor random_ints(DType t, const qk::Dims& shape, std::mt19937& rng, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  Tensor r(t, shape);
  for (std::int64_t i = 0; i < r.size(); ++i) {
    if (t == DType::uint8) r.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(d(rng));
    else if (t == DType::int8) r.data<std::int8_t>()[i] = static_cast<std::int8_t>(d(rng));
    else r.data<std::int32_t>()[i] = d(rng);
  }
  return r;
}
void add_init(Graph& g, const std::string& n, Tensor t) {
  t.set_name(n);
  g.initializers[n] = std::move(t);
}
}  // namespace

TEST_CASE("integer mode: FloatMultiplier<RoundHalfEven> reproduces QLinearConv and QLinearMatMul bit for bit") {
  std::mt19937 rng(5);
  using FloatScheme = qk::IntegerModeT<qk::FloatMultiplier<qk::RoundHalfEven>>;
  // Geometries for every packing path of the integer Conv: windows from channel planes (any
  // channel count), from position-major planes (channels a multiple of 4, any kernel, stride
  // and height dilation), 1x1 windows, depthwise (stride 1 and 2); output rows wider than a
  // GEMM panel and images whose columns straddle panels.
  struct ConvCase {
    std::int64_t C, M, group, kh, kw, H, W;
    std::vector<std::int64_t> pads, strides, dilations;
    bool w_uint8 = false;
  };
  const std::vector<ConvCase> cases = {
      {4, 6, 1, 3, 3, 7, 9, {1, 0, 1, 2}, {1, 2}, {1, 1}},
      {4, 6, 2, 3, 3, 7, 9, {1, 0, 1, 2}, {1, 2}, {1, 1}},
      {16, 8, 2, 3, 3, 9, 11, {1, 1, 1, 1}, {1, 1}, {2, 1}},
      {8, 12, 1, 5, 5, 6, 40, {2, 2, 2, 2}, {1, 1}, {1, 1}},
      {1, 16, 1, 3, 3, 8, 37, {1, 1, 1, 1}, {1, 1}, {1, 1}},
      {3, 5, 1, 1, 1, 5, 41, {0, 0, 0, 0}, {1, 1}, {1, 1}},
      {20, 7, 1, 1, 1, 3, 13, {0, 0, 0, 0}, {1, 1}, {1, 1}},
      {6, 6, 1, 1, 1, 6, 9, {0, 0, 0, 0}, {2, 2}, {1, 1}},
      {5, 5, 5, 3, 3, 8, 8, {1, 1, 1, 1}, {1, 1}, {1, 1}},
      {5, 5, 5, 3, 3, 9, 8, {1, 1, 1, 1}, {2, 2}, {1, 1}},
      {12, 4, 1, 2, 3, 5, 7, {0, 1, 0, 1}, {2, 3}, {1, 1}},
      {5, 5, 5, 3, 3, 8, 8, {1, 1, 1, 1}, {1, 1}, {1, 1}, true},
      {4, 6, 1, 3, 3, 7, 9, {1, 0, 1, 2}, {1, 1}, {1, 1}, true},
      {6, 6, 1, 3, 3, 7, 9, {1, 1, 1, 1}, {1, 1}, {1, 1}, true},
  };
  for (std::size_t trial = 0; trial < cases.size() * 2; ++trial) {
    const ConvCase& cc = cases[trial / 2];
    CAPTURE(trial);
    const DType xt = trial % 2 ? DType::int8 : DType::uint8;
    const std::int64_t M = cc.M, C = cc.C, group = cc.group;
    const float xs = 0.02f + 0.01f * static_cast<float>(trial % 6), ys = 0.05f + 0.013f * static_cast<float>(trial % 6);
    const Tensor x = random_ints(xt, {2, C, cc.H, cc.W}, rng, xt == DType::uint8 ? 0 : -128, xt == DType::uint8 ? 255 : 127);
    const DType wt = cc.w_uint8 ? DType::uint8 : DType::int8;
    const Tensor w = random_ints(wt, {M, C / group, cc.kh, cc.kw}, rng, cc.w_uint8 ? 0 : -127, cc.w_uint8 ? 255 : 127);
    std::vector<float> wsv;
    for (std::int64_t m = 0; m < M; ++m) wsv.push_back(0.003f * static_cast<float>(m % 6 + 1) * 9.0f / static_cast<float>(cc.kh * cc.kw));
    const Tensor bias = random_ints(DType::int32, {M}, rng, -5000, 5000);
    const std::int32_t xz = xt == DType::uint8 ? 128 : -3, yz = xt == DType::uint8 ? 120 : 5;
    auto zp = [&](std::int32_t v, const std::string& n) {
      return xt == DType::uint8 ? Tensor::scalar<std::uint8_t>(static_cast<std::uint8_t>(v), n)
                                : Tensor::scalar<std::int8_t>(static_cast<std::int8_t>(v), n);
    };
    std::map<std::string, Attribute> conv_attrs = {
        {"pads", Is(cc.pads)}, {"strides", Is(cc.strides)}, {"dilations", Is(cc.dilations)}, {"group", I(group)}};
    // The ONNX QOperator form.
    Graph q;
    q.inputs = {info("x", xt)};
    q.outputs = {info("y", xt)};
    add_init(q, "xs", Tensor::scalar(xs));
    add_init(q, "xz", zp(xz, "xz"));
    add_init(q, "w", w);
    add_init(q, "ws", Tensor::from_vector<float>({M}, wsv));
    add_init(q, "wz", Tensor(wt, qk::Dims{M}));
    add_init(q, "ys", Tensor::scalar(ys));
    add_init(q, "yz", zp(yz, "yz"));
    add_init(q, "b", bias);
    q.nodes.push_back(node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, conv_attrs));
    // The same as QDQ: DQ(x), DQ(w, axis 0), DQ(b, xs * ws), Conv, Q.
    Graph d = q;
    d.nodes.clear();
    std::vector<float> bsv;
    for (float s : wsv) bsv.push_back(xs * s);
    add_init(d, "bs", Tensor::from_vector<float>({M}, bsv));
    add_init(d, "bz", Tensor(DType::int32, qk::Dims{M}));
    d.nodes.push_back(node("DequantizeLinear", {"x", "xs", "xz"}, {"xf"}));
    d.nodes.push_back(node("DequantizeLinear", {"w", "ws", "wz"}, {"wf"}, {{"axis", I(0)}}));
    d.nodes.push_back(node("DequantizeLinear", {"b", "bs", "bz"}, {"bf"}, {{"axis", I(0)}}));
    d.nodes.push_back(node("Conv", {"xf", "wf", "bf"}, {"yf"}, conv_attrs));
    d.nodes.push_back(node("QuantizeLinear", {"yf", "ys", "yz"}, {"y"}));
    qk::Executor<> ref(q);
    qk::Executor<FloatScheme> intr(d);
    REQUIRE(intr.mode().integer_count() == 1);
    REQUIRE(intr.graph().nodes.size() == 1);
    CHECK(intr.graph().nodes[0].op_type == "IntConv");
    const Tensor want = ref.run({{"x", x}}).at("y");
    if (xt == DType::uint8) {
      // The same values as uint16 (zero point too) take the 16-bit path (im2col of uint16, the
      // wide GEMM): the same accumulators, so the same output bytes.
      Graph d16 = d;
      d16.inputs[0].dtype = DType::uint16;
      add_init(d16, "xz", Tensor::scalar<std::uint16_t>(static_cast<std::uint16_t>(xz)));
      Tensor x16(DType::uint16, x.shape());
      for (std::int64_t i = 0; i < x.size(); ++i) x16.data<std::uint16_t>()[i] = x.data<std::uint8_t>()[i];
      qk::Executor<FloatScheme> i16(d16);
      REQUIRE(i16.mode().integer_count() == 1);
      CHECK(i16.run({{"x", x16}}).at("y") == want);
    }
    // Every target's GEMM kernels (their panel widths differ).
    for (const qk::simd::Kernels* k : qk::simd::available_kernels()) {
      CAPTURE(k->name);
      hwy::SetSupportedTargetsForTest(k->target);
      const Tensor got = intr.run({{"x", x}}).at("y");
      CHECK(want == got);
    }
    hwy::SetSupportedTargetsForTest(0);
    // The prepared inputs (weight sums; weights by position for channel groups of 4 and windows
    // larger than 1 x 1), then the op without them (made per call): the same bytes.
    const std::int64_t Cg = C / group;
    Graph plain = intr.graph();
    CHECK(plain.nodes[0].inputs.size() == (Cg % 4 == 0 && cc.kh * cc.kw > 1 ? 11u : 10u));
    CHECK(plain.initializers.at(plain.nodes[0].inputs.at(9)).shape() == qk::Dims{M});
    plain.nodes[0].inputs.resize(9);
    const qk::Executor<> unprepared(plain, intr.mode().registry());
    CHECK(unprepared.run({{"x", x}}).at("y") == want);
    if (trial < 2) {  // wrong prepared inputs: errors naming the node, what was found and expected
      Graph bad = intr.graph();
      bad.initializers.at(bad.nodes[0].inputs.at(9)) = Tensor(DType::int32, qk::Dims{M + 1});
      const qk::Executor<> bad_sums(bad, intr.mode().registry());
      CHECK_THROWS_WITH_AS(bad_sums.run({{"x", x}}),
                           doctest::Contains(("prepared weight sums are int32 [" + std::to_string(M + 1) +
                                              "]; expected int32 [" + std::to_string(M) + "]").c_str()),
                           qk::Error);
      bad = intr.graph();
      REQUIRE(bad.nodes[0].inputs.size() == 11);
      bad.initializers.at(bad.nodes[0].inputs.at(10)) = Tensor(DType::uint8, qk::Dims{M, 36});
      const qk::Executor<> bad_order(bad, intr.mode().registry());
      CHECK_THROWS_WITH_AS(bad_order.run({{"x", x}}),
                           doctest::Contains(("prepared reordered weights are uint8 [" + std::to_string(M) +
                                              ", 36]; expected int8 [" + std::to_string(M) + ", " +
                                              std::to_string(Cg * cc.kh * cc.kw) + "]").c_str()),
                           qk::Error);
    }
  }
  // QLinearMatMul: a [3, 5, 40] uint8 x b [40, 24] int8 per column.
  for (int trial = 0; trial < 4; ++trial) {
    const std::int64_t K = 40, N = 24;
    const Tensor a = random_ints(DType::uint8, {3, 5, K}, rng, 0, 255);
    const Tensor b = random_ints(DType::int8, {K, N}, rng, -127, 127);
    std::vector<float> bsv;
    for (std::int64_t n = 0; n < N; ++n) bsv.push_back(0.001f * static_cast<float>(n + 3 + trial));
    Graph q;
    q.inputs = {info("a", DType::uint8)};
    q.outputs = {info("y", DType::uint8)};
    add_init(q, "as", Tensor::scalar(0.017f + 0.002f * static_cast<float>(trial)));
    add_init(q, "az", Tensor::scalar<std::uint8_t>(static_cast<std::uint8_t>(100 + trial)));
    add_init(q, "b", b);
    add_init(q, "bs", Tensor::from_vector<float>({N}, bsv));
    add_init(q, "bz", Tensor(DType::int8, qk::Dims{N}));
    add_init(q, "ys", Tensor::scalar(0.11f));
    add_init(q, "yz", Tensor::scalar<std::uint8_t>(128));
    q.nodes.push_back(node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}));
    Graph d = q;
    d.nodes.clear();
    d.nodes.push_back(node("DequantizeLinear", {"a", "as", "az"}, {"af"}));
    d.nodes.push_back(node("DequantizeLinear", {"b", "bs", "bz"}, {"bf"}, {{"axis", I(1)}}));
    d.nodes.push_back(node("MatMul", {"af", "bf"}, {"yf"}));
    d.nodes.push_back(node("QuantizeLinear", {"yf", "ys", "yz"}, {"y"}));
    qk::Executor<> ref(q);
    qk::Executor<FloatScheme> intr(d);
    REQUIRE(intr.mode().integer_count() == 1);
    CHECK(intr.graph().nodes[0].op_type == "IntMatMul");
    const Tensor want = ref.run({{"a", a}}).at("y");
    CHECK(want == intr.run({{"a", a}}).at("y"));
    // uint16 A holding the same values: the 16-bit path, the same bytes.
    Graph d16 = d;
    d16.inputs[0].dtype = DType::uint16;
    add_init(d16, "az", Tensor::scalar<std::uint16_t>(static_cast<std::uint16_t>(100 + trial)));
    Tensor a16(DType::uint16, a.shape());
    for (std::int64_t i = 0; i < a.size(); ++i) a16.data<std::uint16_t>()[i] = a.data<std::uint8_t>()[i];
    qk::Executor<FloatScheme> i16(d16);
    REQUIRE(i16.mode().integer_count() == 1);
    CHECK(i16.run({{"a", a16}}).at("y") == want);
  }
}

TEST_CASE("integer mode: MaxPool on int8/uint8 equals the float MaxPool of the dequantized values, on every target") {
  // DQ -> MaxPool -> Q with one scale and zero point: exact in float, so the integer op must
  // give the same bytes. 2x2 stride 2 (whole-tensor pairs: rows of 1 to 40 bytes), other tiled
  // windows, and overlapping / padded ones (the general loop).
  struct PoolCase {
    std::int64_t H, W;
    std::vector<std::int64_t> kernel, strides, pads;
  };
  const std::vector<PoolCase> cases = {
      {8, 8, {2, 2}, {2, 2}, {0, 0, 0, 0}},   {6, 10, {2, 2}, {2, 2}, {0, 0, 0, 0}},
      {2, 2, {2, 2}, {2, 2}, {0, 0, 0, 0}},   {4, 32, {2, 2}, {2, 2}, {0, 0, 0, 0}},
      {4, 80, {2, 2}, {2, 2}, {0, 0, 0, 0}},  {4, 16, {2, 2}, {2, 2}, {0, 0, 0, 0}},
      {6, 9, {3, 3}, {3, 3}, {0, 0, 0, 0}},   {7, 7, {3, 3}, {2, 2}, {1, 1, 1, 1}},
  };
  std::mt19937 rng(17);
  for (const PoolCase& pc : cases)
    for (DType t : {DType::uint8, DType::int8}) {
      CAPTURE(pc.W);
      const Tensor x = random_ints(t, {2, 3, pc.H, pc.W}, rng, t == DType::uint8 ? 0 : -128, t == DType::uint8 ? 255 : 127);
      Graph g;
      g.opset = 13;
      g.inputs = {info("x", t)};
      g.outputs = {info("y", t)};
      add_init(g, "s", Tensor::scalar(0.04f));
      add_init(g, "z", t == DType::uint8 ? Tensor::scalar<std::uint8_t>(7) : Tensor::scalar<std::int8_t>(-9));
      g.nodes.push_back(node("DequantizeLinear", {"x", "s", "z"}, {"xf"}));
      g.nodes.push_back(node("MaxPool", {"xf"}, {"yf"},
                             {{"kernel_shape", Is(pc.kernel)}, {"strides", Is(pc.strides)}, {"pads", Is(pc.pads)}}));
      g.nodes.push_back(node("QuantizeLinear", {"yf", "s", "z"}, {"y"}));
      qk::Executor<> fake(g);
      qk::Executor<qk::IntegerMode> intr(g);
      REQUIRE(intr.mode().integer_count() == 1);
      const Tensor want = fake.run({{"x", x}}).at("y");
      for (const qk::simd::Kernels* k : qk::simd::available_kernels()) {
        CAPTURE(k->name);
        hwy::SetSupportedTargetsForTest(k->target);
        CHECK(intr.run({{"x", x}}).at("y") == want);
      }
      hwy::SetSupportedTargetsForTest(0);
    }
}

TEST_CASE("integer mode: tiled AveragePool windows equal the general window loop bit for bit") {
  // An image one row and column larger than a whole number of windows has the same windows
  // (floor mode) but takes the general loop: both outputs must be the same bytes.
  std::mt19937 rng(19);
  for (std::int64_t k : {2, 3})
    for (DType t : {DType::uint8, DType::int8}) {
      CAPTURE(k);
      const std::int64_t H = 2 * k, W = 3 * k;
      const Tensor big = random_ints(t, {2, 5, H + 1, W + 1}, rng, t == DType::uint8 ? 0 : -128, t == DType::uint8 ? 255 : 127);
      Tensor small(t, qk::Dims{2, 5, H, W});
      for (std::int64_t p = 0; p < 10; ++p)
        for (std::int64_t h = 0; h < H; ++h)
          for (std::int64_t w = 0; w < W; ++w)
            std::memcpy(static_cast<std::uint8_t*>(small.raw()) + (p * H + h) * W + w,
                        static_cast<const std::uint8_t*>(big.raw()) + (p * (H + 1) + h) * (W + 1) + w, 1);
      Graph g;
      g.opset = 13;
      g.inputs = {info("x", t)};
      g.outputs = {info("y", t)};
      add_init(g, "s", Tensor::scalar(0.04f));
      add_init(g, "z", t == DType::uint8 ? Tensor::scalar<std::uint8_t>(7) : Tensor::scalar<std::int8_t>(-9));
      add_init(g, "ys", Tensor::scalar(0.013f));
      add_init(g, "yz", t == DType::uint8 ? Tensor::scalar<std::uint8_t>(120) : Tensor::scalar<std::int8_t>(3));
      g.nodes.push_back(node("DequantizeLinear", {"x", "s", "z"}, {"xf"}));
      g.nodes.push_back(node("AveragePool", {"xf"}, {"yf"}, {{"kernel_shape", Is({k, k})}, {"strides", Is({k, k})}}));
      g.nodes.push_back(node("QuantizeLinear", {"yf", "ys", "yz"}, {"y"}));
      qk::Executor<qk::IntegerMode> intr(g);
      REQUIRE(intr.mode().integer_count() == 1);
      const Tensor a = intr.run({{"x", small}}).at("y");
      const Tensor b = intr.run({{"x", big}}).at("y");
      REQUIRE(a.shape() == b.shape());
      CHECK(a == b);
      // and within one step of the float pool
      qk::Executor<> fake(g);
      const Tensor f = fake.run({{"x", small}}).at("y");
      for (std::int64_t i = 0; i < f.size(); ++i) CHECK(std::labs(static_cast<long>(f.as_int64(i) - a.as_int64(i))) <= 1);
    }
}

TEST_CASE("integer mode: nodes it cannot make integer stay float, and the report says why") {
  std::mt19937 rng(9);
  Graph g;
  g.opset = 13;
  g.inputs = {info("x", DType::uint8)};
  g.outputs = {info("y", DType::uint8), info("c2", DType::float32)};
  add_init(g, "xs", Tensor::scalar(0.05f));
  add_init(g, "xz", Tensor::scalar<std::uint8_t>(7));
  add_init(g, "w", random_ints(DType::int8, {4, 3, 1, 1}, rng, -100, 100));
  add_init(g, "ws", Tensor::scalar(0.01f));
  add_init(g, "wz", Tensor::scalar<std::int8_t>(0));
  add_init(g, "ys", Tensor::scalar(0.1f));
  add_init(g, "yz", Tensor::scalar<std::uint8_t>(3));
  g.nodes.push_back(node("DequantizeLinear", {"x", "xs", "xz"}, {"xf"}));
  g.nodes.push_back(node("DequantizeLinear", {"w", "ws", "wz"}, {"wf"}));
  g.nodes.push_back(node("Conv", {"xf", "wf"}, {"c1"}));
  g.nodes.push_back(node("QuantizeLinear", {"c1", "ys", "yz"}, {"c1q"}));
  g.nodes.push_back(node("DequantizeLinear", {"c1q", "ys", "yz"}, {"c1f"}));
  g.nodes.push_back(node("Sigmoid", {"c1f"}, {"s"}));  // not covered: stays float
  g.nodes.push_back(node("QuantizeLinear", {"s", "ys", "yz"}, {"y"}));
  g.nodes.push_back(node("Conv", {"xf", "wf"}, {"c2"}));  // a graph output read in float
  qk::Executor<> fake(g);
  qk::Executor<qk::IntegerMode> intr(g);
  const auto& rep = intr.mode().report();
  REQUIRE(rep.size() == 3);
  CHECK(rep[0].integer);
  CHECK(rep[0].op_type == "Conv");
  CHECK(!rep[1].integer);
  CHECK(rep[1].op_type == "Sigmoid");
  CHECK(rep[1].detail.find("not covered") != std::string::npos);
  CHECK(!rep[2].integer);
  CHECK(rep[2].detail.find("graph output") != std::string::npos);
  CHECK(intr.mode().float_nodes() == std::vector<std::string>{"s_node", "c2_node"});
  const Tensor x = random_ints(DType::uint8, {1, 3, 5, 5}, rng, 0, 255);
  const auto a = fake.run({{"x", x}});
  const auto b = intr.run({{"x", x}});
  CHECK(a.at("c2") == b.at("c2"));  // the float node computes exactly as before
  long worst = 0;
  for (std::int64_t i = 0; i < a.at("y").size(); ++i)
    worst = std::max(worst, std::labs(static_cast<long>(a.at("y").as_int64(i)) - b.at("y").as_int64(i)));
  CHECK(worst <= 1);
}

// A batch whose feature maps have an extent of 0 (an empty crop, an empty batch): the integer
// mode (IntConv's own packing, the integer pools, the requantization) does what the float
// executor does — the same empty output, or the same error naming the node where a window
// cannot fit (no padding) — never a division by zero or a read of nothing (IntAveragePool read
// the first window count of none: SIGSEGV).
TEST_CASE("integer mode: feature maps of zero extent: the float executor's empty outputs or its error") {
  std::mt19937 rng(47);
  Graph f;
  f.name = "empty_maps";
  f.opset = 13;
  f.inputs.push_back(info("x", DType::float32));
  f.initializers["w1"] = random_tensor({8, 3, 3, 3}, rng, 0.3f);
  f.initializers["b1"] = random_tensor({8}, rng, 0.1f);
  f.initializers["w2"] = random_tensor({8, 1, 3, 3}, rng, 0.4f);
  f.initializers["w3"] = random_tensor({4, 8, 1, 1}, rng, 0.3f);
  f.initializers["w4"] = random_tensor({4, 4, 3, 3}, rng, 0.3f);
  for (const char* w : {"w1", "b1", "w2", "w3", "w4"}) f.initializers[w].set_name(w);
  const auto same = Attribute::make_string("SAME_UPPER");
  f.nodes.push_back(node("Conv", {"x", "w1", "b1"}, {"c1"}, {{"auto_pad", same}}));
  f.nodes.push_back(node("Relu", {"c1"}, {"r1"}));
  f.nodes.push_back(node("MaxPool", {"r1"}, {"p1"}, {{"kernel_shape", Is({2, 2})}, {"auto_pad", same}}));
  f.nodes.push_back(node("Conv", {"p1", "w2"}, {"c2"}, {{"auto_pad", same}, {"group", I(8)}}));
  f.nodes.push_back(node("AveragePool", {"c2"}, {"ap"}, {{"kernel_shape", Is({3, 3})}, {"auto_pad", same}}));
  f.nodes.push_back(node("Conv", {"ap", "w3"}, {"c3"}));
  f.nodes.push_back(node("Conv", {"c3", "w4"}, {"y"}, {{"pads", Is({1, 1, 1, 1})}}));
  f.outputs.push_back(info("y", DType::float32));
  const Tensor calib = random_tensor({2, 3, 12, 12}, rng, 1.0f);
  for (DType act : {DType::uint8, DType::int8}) {
    CAPTURE(qk::graph::to_string(act));
    const Graph qdq = make_qdq(f, calib, act);
    qk::Executor<> fake(qdq);
    qk::Executor<qk::IntegerModeT<qk::FixedPointDoubleRounding>> intr(qdq);
    CHECK(intr.mode().integer_count() >= 6u);
    for (const auto& n : intr.graph().nodes) CHECK(n.op_type != "Conv");
    CHECK(intr.run({{"x", calib}}).at("y").shape() == qk::Dims{2, 4, 12, 12});
    int empty_runs = 0, errors = 0;
    for (const qk::Dims& shape : {qk::Dims{2, 3, 0, 12}, qk::Dims{2, 3, 12, 0}, qk::Dims{0, 3, 12, 12}}) {
      CAPTURE(shape.to_string());
      const Tensor empty(DType::float32, shape);
      std::string float_error, int_error;
      Tensor a, b;
      try {
        a = fake.run({{"x", empty}}).at("y");
      } catch (const qk::Error& e) {
        float_error = e.what();
      }
      try {
        b = intr.run({{"x", empty}}).at("y");
      } catch (const qk::Error& e) {
        int_error = e.what();
      }
      CAPTURE(float_error);
      CAPTURE(int_error);
      if (float_error.empty()) {
        ++empty_runs;
        REQUIRE(int_error.empty());
        CHECK(a.size() == 0);
        CHECK(b.shape() == a.shape());
        CHECK(b.dtype() == a.dtype());
      } else {
        // the SAME-padded nodes pass the extent of 0 on; the unpadded 1x1 Conv is where the
        // float executor stops ("window of extent 1 ... larger than the padded input extent 0")
        ++errors;
        CHECK(float_error.find("'c3_node'") != std::string::npos);
        CHECK(int_error.find("'c3_node'") != std::string::npos);
        CHECK(int_error.find("larger than the padded input extent 0") != std::string::npos);
      }
    }
    CHECK(empty_runs == 1);  // the empty batch
    CHECK(errors == 2);
  }
}

}  // namespace test_integer_mode
