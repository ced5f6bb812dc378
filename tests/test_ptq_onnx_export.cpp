// QDQ export and planning on small hand-built graphs: weight axes of Gemm (transB 0/1) and
// MatMul, per-group block layout, int4 packing and stored integers, weight rounding, bias
// int32 scale and overflow, raising the opset (attributes moved to inputs, libonnx's checker),
// the errors that name node, op and option, and the layer-wise comparison of the float graph
// with the QDQ model read back (quantkit/analysis/compare.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <quantkit/analysis/compare.hpp>
#include <quantkit/executor.hpp>
#include <quantkit/observer/minmax.hpp>
#include <quantkit/onnx.hpp>
#include <quantkit/onnx/export_qdq.hpp>
#include <quantkit/ptq.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_ptq_onnx_export {

namespace qk = quantkit;
using qk::graph::DType;
using qk::graph::Tensor;

namespace {

Tensor random_tensor(const qk::Dims& shape, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(shape.product()));
  for (auto& x : v) x = d(rng);
  return Tensor::from_vector<float>(shape, v);
}

qk::graph::Node node(const std::string& op, const std::string& name, std::vector<std::string> in,
                     std::vector<std::string> out) {
  qk::graph::Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.source = "small.onnx";
  return n;
}

// x [4, 6] -> Gemm(W [6, 5], transB 0, bias [5]) -> Relu -> Unsqueeze(axes attr) -> Squeeze ->
//          MatMul(V [5, 8]) -> y [4, 8]
qk::graph::Graph small_graph(std::int64_t opset = 11) {
  qk::graph::Graph g;
  g.name = "small";
  g.source = "small.onnx";
  g.opset = opset;
  g.opsets[""] = opset;
  qk::graph::ValueInfo x;
  x.name = "x";
  x.dtype = DType::float32;
  x.has_shape = true;
  x.dims = {-1, 6};
  x.dim_params = {"batch", ""};
  g.inputs.push_back(x);
  qk::graph::ValueInfo y;
  y.name = "y";
  y.dtype = DType::float32;
  y.has_shape = true;  // libonnx's checker wants a shape (of any rank) on graph inputs and outputs
  y.dims = {-1, 8};
  y.dim_params = {"batch", ""};
  g.outputs.push_back(y);
  g.initializers["W"] = random_tensor(qk::Dims{6, 5}, 1);
  g.initializers["b"] = random_tensor(qk::Dims{5}, 2, -0.5f, 0.5f);
  g.initializers["V"] = random_tensor(qk::Dims{5, 8}, 3);
  g.nodes.push_back(node("Gemm", "gemm", {"x", "W", "b"}, {"h"}));
  g.nodes.push_back(node("Relu", "relu", {"h"}, {"r"}));
  auto un = node("Unsqueeze", "unsq", {"r"}, {"u"});
  auto sq = node("Squeeze", "sq", {"u"}, {"s"});
  if (opset < 13) {  // axes as attributes before opset 13, as inputs since
    un.attributes["axes"] = qk::graph::Attribute::make_ints({1});
    sq.attributes["axes"] = qk::graph::Attribute::make_ints({1});
  } else {
    g.initializers["axes"] = Tensor::from_vector<std::int64_t>(qk::Dims{1}, {1});
    un.inputs.push_back("axes");
    sq.inputs.push_back("axes");
  }
  g.nodes.push_back(un);
  g.nodes.push_back(sq);
  g.nodes.push_back(node("MatMul", "matmul", {"s", "V"}, {"y"}));
  return g;
}

qk::ptq::QuantizedModel calibrate(const qk::graph::Graph& g, const qk::ptq::PtqConfig& cfg) {
  qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(g, cfg);
  for (std::uint32_t s = 0; s < 3; ++s) cal.observe({{"x", random_tensor(qk::Dims{4, 6}, 100 + s, -2.0f, 2.0f)}});
  return cal.finish();
}

const ::onnx::NodeProto* find_node(const ::onnx::ModelProto& m, const std::string& op, const std::string& output) {
  for (const auto& n : m.graph().node())
    if (n.op_type() == op && n.output_size() > 0 && n.output(0) == output) return &n;
  return nullptr;
}
const ::onnx::TensorProto* find_init(const ::onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return &t;
  return nullptr;
}
std::int64_t attr_i(const ::onnx::NodeProto& n, const std::string& key, std::int64_t fallback = -999) {
  for (const auto& a : n.attribute())
    if (a.name() == key) return a.i();
  return fallback;
}

}  // namespace

TEST_CASE("weight axes: Gemm transB=0 per channel on axis 1, MatMul on the last axis; per-group on the input axis") {
  const auto qm = calibrate(small_graph(), {});
  CHECK(qm.at("W").params.granularity == qk::Granularity::per_channel(1));
  CHECK(qm.at("W").params.size() == 5);
  CHECK(qm.at("V").params.granularity == qk::Granularity::per_channel(1));
  CHECK(qm.at("V").params.size() == 8);
  // Scale of each output column: max |W[:, n]| / 127.5 (PyTorch symmetric).
  const Tensor& w = qm.graph.initializers.at("W");
  for (int n = 0; n < 5; ++n) {
    float m = 0;
    for (int k = 0; k < 6; ++k) m = std::max(m, std::fabs(w.data<float>()[k * 5 + n]));
    CHECK(qm.at("W").params.scale[static_cast<std::size_t>(n)] == doctest::Approx(m / 127.5f).epsilon(1e-6));
  }
  // The bias: int32, one scale per output column = s_x * s_W[n].
  const auto& b = qm.at("b");
  REQUIRE(b.role == qk::ptq::TensorRole::bias);
  for (std::size_t n = 0; n < 5; ++n) CHECK(b.params.scale[n] == qm.at("x").params.scale[0] * qm.at("W").params.scale[n]);

  qk::ptq::PtqConfig grouped;
  grouped.weight_bits = 4;
  grouped.weight_granularity = qk::ptq::WeightGranularity::per_group(4);
  const auto qg = calibrate(small_graph(), grouped);
  CHECK(qg.at("W").params.granularity == qk::Granularity::per_group(0, 4));  // [K=6, N=5]: blocks along K
  CHECK(qg.at("W").params.size() == 2 * 5);
  CHECK(qg.at("V").params.granularity == qk::Granularity::per_group(0, 4));
  CHECK(qg.at("V").params.size() == 2 * 8);
  CHECK(qg.find("b") == nullptr);

  qk::onnx::QdqReport rep;
  const ::onnx::ModelProto m = qk::onnx::to_qdq_proto(qg, {}, &rep);
  CHECK(rep.opset == 21);
  CHECK(!rep.checked);
  CHECK(rep.check_note.find("opset 21") != std::string::npos);
  const ::onnx::NodeProto* dq = find_node(m, "DequantizeLinear", "W_dequantized");
  REQUIRE(dq != nullptr);
  CHECK(attr_i(*dq, "axis") == 0);
  CHECK(attr_i(*dq, "block_size") == 4);
  const ::onnx::TensorProto* scale = find_init(m, "W_scale");
  REQUIRE(scale != nullptr);
  CHECK(std::vector<std::int64_t>(scale->dims().begin(), scale->dims().end()) == std::vector<std::int64_t>{2, 5});
  // int4, two values a byte, low nibble first: unpacks to the integers quantize_initializer gives.
  const ::onnx::TensorProto* q = find_init(m, "W_quantized");
  REQUIRE(q != nullptr);
  CHECK(q->data_type() == 22);
  REQUIRE(q->raw_data().size() == 15);
  std::vector<std::int32_t> unpacked(30);
  qk::ref::unpack(reinterpret_cast<const std::uint8_t*>(q->raw_data().data()), 30, 4, true, unpacked.data());
  CHECK(unpacked == qk::ptq::quantize_initializer(qg.graph.initializers.at("W"), qg.at("W"), "W"));
  for (auto v : unpacked) CHECK((v >= -8 && v <= 7));
}

TEST_CASE("weight rounding decides the stored integers; activations always round half to even") {
  qk::ptq::PtqConfig floor_cfg;
  floor_cfg.weight_rounding = qk::RoundingMode::floor;
  const auto qf = calibrate(small_graph(), floor_cfg);
  const auto qe = calibrate(small_graph(), {});
  const Tensor& w = qe.graph.initializers.at("V");
  const auto ints_floor = qk::ptq::quantize_initializer(w, qf.at("V"), "V");
  const auto ints_even = qk::ptq::quantize_initializer(w, qe.at("V"), "V");
  int differ = 0;
  for (std::size_t i = 0; i < ints_floor.size(); ++i) {
    const float s = qe.at("V").params.scale[i % 8];
    const float t = w.data<float>()[i] / s;
    CHECK(ints_floor[i] == static_cast<std::int32_t>(std::max(-128.0f, std::min(127.0f, std::floor(t)))));
    CHECK(ints_even[i] == static_cast<std::int32_t>(std::max(-128.0f, std::min(127.0f, std::nearbyint(t)))));
    differ += ints_floor[i] != ints_even[i];
  }
  CHECK(differ > 5);
  CHECK(qf.at("s").rounding == qk::RoundingMode::half_even);
}

TEST_CASE("raising the opset: Squeeze/Unsqueeze axes become inputs, libonnx's checker accepts the model") {
  const auto qm = calibrate(small_graph(11), {});
  qk::onnx::QdqReport rep;
  const ::onnx::ModelProto m = qk::onnx::to_qdq_proto(qm, {}, &rep);
  CHECK(rep.opset == 13);
  CHECK(m.opset_import(0).version() == 13);
#if QUANTKIT_ONNX_SHAPE_INFERENCE
  CHECK(rep.checked);
#endif
  const ::onnx::NodeProto* un = nullptr;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Unsqueeze") un = &n;
  REQUIRE(un != nullptr);
  CHECK(un->attribute_size() == 0);
  REQUIRE(un->input_size() == 2);
  const ::onnx::TensorProto* axes = find_init(m, un->input(1));
  REQUIRE(axes != nullptr);
  CHECK(axes->data_type() == 7);
  // The written model, read back by quantkit, computes what the fake-quant mode computes.
  std::string bytes;
  REQUIRE(m.SerializeToString(&bytes));
  const qk::graph::Graph back = qk::onnx::load_bytes(bytes.data(), bytes.size(), "qdq");
  const Tensor x = random_tensor(qk::Dims{7, 6}, 9, -2.5f, 2.5f);  // beyond the calibrated range too
  const Tensor y1 = qk::Executor<>(back).run({{"x", x}}).at("y");
  const Tensor y2 = qk::Executor<qk::ptq::FakeQuantMode>(qm.graph, qk::ptq::FakeQuantMode(qm)).run({{"x", x}}).at("y");
  REQUIRE(y1.shape() == y2.shape());
  for (std::int64_t i = 0; i < y1.size(); ++i) CHECK(y1.data<float>()[i] == y2.data<float>()[i]);
  // On calibration data (no saturation) it differs from float by rounding error only.
  const Tensor x2 = random_tensor(qk::Dims{4, 6}, 100, -2.0f, 2.0f);  // a calibration batch
  const Tensor yf = qk::Executor<>(qm.graph).run({{"x", x2}}).at("y");
  const Tensor yq = qk::Executor<qk::ptq::FakeQuantMode>(qm.graph, qk::ptq::FakeQuantMode(qm)).run({{"x", x2}}).at("y");
  double diff = 0, peak = 0;
  for (std::int64_t i = 0; i < yf.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(yf.data<float>()[i] - yq.data<float>()[i])));
    peak = std::max(peak, static_cast<double>(std::fabs(yf.data<float>()[i])));
  }
  MESSAGE("small graph W8A8: max |float - fake-quant| " << diff << " (peak |y| " << peak << ")");
  CHECK(diff > 1e-4);
  CHECK(diff < 0.03 * peak);
}

TEST_CASE("layer-wise comparison: the QDQ model read back and the fake-quant mode give the same rows") {
  const auto qm = calibrate(small_graph(13), {});
  std::string bytes;
  REQUIRE(qk::onnx::to_qdq_proto(qm).SerializeToString(&bytes));
  const qk::graph::Graph qdq = qk::onnx::load_bytes(bytes.data(), bytes.size(), "qdq.onnx");
  const std::map<std::string, Tensor> in = {{"x", random_tensor(qk::Dims{5, 6}, 7, -2.0f, 2.0f)}};
  namespace qa = qk::analysis;
  const qa::LayerComparison file = qa::compare_layers(qm.graph, qdq, in);
  const qa::LayerComparison mode = qa::compare_layers(
      qk::Executor<>(qm.graph), qk::Executor<qk::ptq::FakeQuantMode>(qm.graph, qk::ptq::FakeQuantMode(qm)), in);
  // The float graph's order: the quantized input, then every value its nodes compute.
  const std::vector<std::string> values = {"x", "h", "r", "u", "s", "y"};
  REQUIRE(file.rows.size() == values.size());
  REQUIRE(mode.rows.size() == values.size());
  CHECK(file.unmatched.empty());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const qa::LayerRow& a = file.rows[i];
    const qa::LayerRow& b = mode.rows[i];
    CAPTURE(a.value);
    CHECK(a.value == values[i]);
    CHECK(b.value == values[i]);
    CHECK(a.error.empty());
    // x: the QDQ file's QuantizeLinear -> DequantizeLinear -> x_dq, the mode's Identity x_dq;
    // the rest keep their names on the DequantizeLinear (file) or in place (mode).
    CHECK(a.actual_value == (i == 0 ? "x_dq" : values[i]));
    CHECK(a.match == (i == 0 ? qa::MatchKind::qdq_pair : qa::MatchKind::dequantized));
    CHECK(b.match == (i == 0 ? qa::MatchKind::by_suffix : qa::MatchKind::same_name));
    CHECK(a.op == (i == 0 ? "input" : qm.graph.nodes[i - 1].op_type));
    // Bit-identical values, so identical metrics; quantization error is there but small.
    for (qa::Metric m : qa::all_metrics()) CHECK(a.metrics.get(m) == b.metrics.get(m));
    CHECK(a.metrics.cosine < 1.0);
    CHECK(a.metrics.cosine > 0.99);
    CHECK(a.metrics.count == a.shape.product());
  }
  // A graph against itself: every row exact.
  for (const auto& r : qa::compare_layers(qm.graph, qm.graph, in).rows) {
    CHECK(r.metrics.cosine == 1.0);
    CHECK(r.metrics.chebyshev == 0.0);
  }
}

TEST_CASE("export and plan errors name node, op and tensor") {
  SUBCASE("Softmax from opset 11 cannot be raised to 13") {
    auto g = small_graph(11);
    g.nodes.push_back(node("Softmax", "soft", {"y"}, {"p"}));
    g.outputs[0].name = "p";
    const auto qm = calibrate(g, {});
    CHECK_THROWS_WITH_AS(qk::onnx::to_qdq_proto(qm), doctest::Contains("node 'soft' (op Softmax, file 'small.onnx'): "
                                                                       "cannot raise the model's opset from 11 to 13"),
                         qk::Error);
  }
  SUBCASE("a quantized node that is gone") {
    auto qm = calibrate(small_graph(13), {});
    qm.graph.nodes.erase(qm.graph.nodes.begin() + 1);  // relu
    qm.graph.nodes[1].inputs[0] = "h";
    CHECK_THROWS_WITH_AS(qk::onnx::to_qdq_proto(qm), doctest::Contains("quantized node 'relu' is not in the graph"),
                         qk::Error);
    CHECK_THROWS_WITH_AS(qk::Executor<qk::ptq::FakeQuantMode>(qm.graph, qk::ptq::FakeQuantMode(qm)),
                         doctest::Contains("quantized node 'relu' is not in the graph"), qk::Error);
  }
  SUBCASE("a custom-domain op the model does not import") {
    auto qm = calibrate(small_graph(13), {});
    auto n = node("Foo", "foo", {"y"}, {"z"});
    n.domain = "com.example";
    qm.graph.nodes.push_back(n);
    CHECK_THROWS_WITH_AS(qk::onnx::to_qdq_proto(qm), doctest::Contains("node 'foo' (op com.example::Foo, file "
                                                                       "'small.onnx'): unsupported op 'Foo' for export"),
                         qk::Error);
  }
  SUBCASE("bad parameters") {
    auto qm = calibrate(small_graph(13), {});
    qm.tensors.at("r").params.zero_point[0] = 300;
    CHECK_THROWS_WITH_AS(qk::onnx::to_qdq_proto(qm), doctest::Contains("tensor 'r': zero_point[0] is 300"), qk::Error);
  }
  SUBCASE("a weight shared with different granularities") {
    auto g = small_graph(13);
    g.initializers["V"] = random_tensor(qk::Dims{5, 5}, 3);
    g.nodes.back().outputs = {"y0"};
    auto n = node("Gemm", "gemm2", {"y0", "V"}, {"y"});
    n.attributes["transB"] = qk::graph::Attribute::make_int(1);
    g.nodes.push_back(n);
    CHECK_THROWS_WITH_AS(qk::ptq::make_plan(g, {}), doctest::Contains("node 'gemm2' (op Gemm, file 'small.onnx'): weight "
                                                                     "'V' is shared with node 'matmul'"),
                         qk::Error);
  }
  SUBCASE("a bias that does not fit int32 stays float, with a note") {
    auto g = small_graph(13);
    g.initializers["b"].data<float>()[2] = 3e9f;
    const auto qm = calibrate(g, {});
    CHECK(qm.find("b") == nullptr);
    bool noted = false;
    for (const auto& s : qm.notes) noted = noted || (s.find("bias 'b'") != std::string::npos && s.find("int32") != std::string::npos);
    CHECK(noted);
  }
}

}  // namespace test_ptq_onnx_export
