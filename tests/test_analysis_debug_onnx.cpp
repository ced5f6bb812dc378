// ptq::import_qdq: a QDQ file taken back to the calibrated model it stands for, on its float
// model — quantkit's own files (the demo CNN, BatchNormalization folded on import) give back the
// same quantized nodes and parameters and the same fake-quant outputs bit for bit; ONNX
// Runtime's quantizer's file (tools/quantkit/tests/data/ort_qdq.onnx) computes what the file
// computes; the debug tools run on imported models; and the error paths.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>

#include <quantkit/analysis/sensitivity.hpp>
#include <quantkit/io/npy.hpp>
#include <quantkit/observer/minmax.hpp>
#include <quantkit/onnx.hpp>
#include <quantkit/onnx/export_qdq.hpp>
#include <quantkit/ptq.hpp>
#include <quantkit/ptq/import_qdq.hpp>

#include "support/sanitized.hpp"

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_analysis_debug_onnx {

namespace qk = quantkit;
using qk::graph::Graph;
using qk::graph::Tensor;
using TensorMap = std::map<std::string, Tensor>;

namespace {
const std::string repo_dir = std::string(QUANTKIT_TEST_DIR) + "/..";
const std::string demo_dir = repo_dir + "/examples/data/demo/";
const std::string cli_data = repo_dir + "/tools/quantkit/tests/data/";

Tensor npy_f32(const std::string& path) {
  const qk::npy::Array a = qk::npy::load(path);
  return Tensor::from_vector<float>(a.shape, a.as<float>(path), path);
}
Graph from_bytes(const qk::ptq::QuantizedModel& qm) {
  std::string bytes;
  REQUIRE(qk::onnx::to_qdq_proto(qm).SerializeToString(&bytes));
  return qk::onnx::load_bytes(bytes.data(), bytes.size(), "demo.qdq.onnx");
}
Tensor fake_quant(const qk::ptq::QuantizedModel& qm, const TensorMap& in, const std::string& out) {
  return qk::Executor<qk::ptq::FakeQuantMode>(qm.graph, qk::ptq::FakeQuantMode(qm)).run(in).at(out);
}
}  // namespace

TEST_CASE("import_qdq: quantkit's QDQ file of the demo CNN gives back its calibration") {
  const Graph float_graph = qk::onnx::load(demo_dir + "digits_cnn.onnx");
  const Tensor calib = npy_f32(demo_dir + "digits_calib.npy");
  qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(float_graph, qk::ptq::PtqConfig{});
  cal.observe(qk::ptq::split_batches("input", calib, 64));
  const qk::ptq::QuantizedModel qm = cal.finish();

  const qk::ptq::QuantizedModel back = qk::ptq::import_qdq(float_graph, from_bytes(qm));
  CHECK(back.quantized_nodes == qm.quantized_nodes);
  REQUIRE(back.tensors.size() == qm.tensors.size());
  for (const auto& kv : qm.tensors) {
    CAPTURE(kv.first);
    const qk::ptq::TensorQuant* t = back.find(kv.first);
    REQUIRE(t != nullptr);
    CHECK(t->role == kv.second.role);
    CHECK(t->params.scale == kv.second.params.scale);
    CHECK(t->params.zero_point == kv.second.params.zero_point);
  }
  const TensorMap in = {{"input", npy_f32(demo_dir + "digits_test_x.npy")}};
  const Tensor a = fake_quant(qm, in, "logits"), b = fake_quant(back, in, "logits");
  REQUIRE(a.shape() == b.shape());
  std::int64_t differ = 0;
  for (std::int64_t i = 0; i < a.size(); ++i) differ += a.data<float>()[i] != b.data<float>()[i];
  CHECK(differ == 0);

  // The debug tools on the imported model: every single-node variant computes the same outputs,
  // so the sensitivity ranks the same nodes with the same values. (Under the sanitizers, -O0,
  // on the first 64 of the 256 calibration samples: the 40 runs of the model took two minutes.)
  const TensorMap few = QK_TEST_SANITIZED ? qk::ptq::split_batches("input", calib, 64).front()
                                          : TensorMap{{"input", calib}};
  const qk::analysis::DebugSession s1(qm, few), s2(back, few);
  for (const auto& n : qm.quantized_nodes) {
    const Tensor ya = s1.run(qk::analysis::restrict_to(qm, {n}, qk::analysis::QuantPart::node));
    const Tensor yb = s2.run(qk::analysis::restrict_to(back, {n}, qk::analysis::QuantPart::node));
    int nd = 0;
    for (std::int64_t i = 0; i < ya.size(); ++i) nd += ya.data<float>()[i] != yb.data<float>()[i];
    CHECK(nd == 0);
  }
  CHECK(s1.reference_output() == s2.reference_output());
  const auto r1 = s1.sensitivity({}), r2 = s2.sensitivity({});
  REQUIRE(r1.rows.size() == r2.rows.size());
  for (std::size_t i = 0; i < r1.rows.size(); ++i) {
    CHECK(r1.rows[i].node == r2.rows[i].node);
    CHECK(r1.rows[i].metrics.cosine == r2.rows[i].metrics.cosine);
  }
}

TEST_CASE("import_qdq: ONNX Runtime's QDQ file computes what the file computes") {
  const Graph float_graph = qk::onnx::load(cli_data + "ort_float.onnx");
  const Graph qdq = qk::onnx::load(cli_data + "ort_qdq.onnx");
  const qk::ptq::QuantizedModel qm = qk::ptq::import_qdq(float_graph, qdq);
  CHECK(qm.quantized_nodes.size() >= 2);
  const qk::ptq::TensorQuant* w = qm.find("W");
  REQUIRE(w != nullptr);
  CHECK(w->role == qk::ptq::TensorRole::weight);
  CHECK(!w->integers.empty());
  const TensorMap in = {{"x", npy_f32(cli_data + "ort_x.npy")}};
  const std::string out = float_graph.outputs.front().name;
  const Tensor file = qk::Executor<>(qdq).run(in).at(out);
  const Tensor mode = fake_quant(qm, in, out);
  REQUIRE(file.shape() == mode.shape());
  double diff = 0;
  for (std::int64_t i = 0; i < file.size(); ++i)
    diff = std::max(diff, static_cast<double>(std::fabs(file.data<float>()[i] - mode.data<float>()[i])));
  CHECK(diff < 1e-6);
}

TEST_CASE("import_qdq: errors name the model") {
  const Graph float_graph = qk::onnx::load(demo_dir + "digits_cnn.onnx");
  CHECK_THROWS_WITH_AS(qk::ptq::import_qdq(float_graph, float_graph),
                       doctest::Contains("no node of the float model reads a DequantizeLinear output"), qk::Error);
  const Graph other = qk::onnx::load(cli_data + "ort_float.onnx");
  CHECK_THROWS_AS(qk::ptq::import_qdq(other, qk::onnx::load(demo_dir + "digits_hostile.onnx")), qk::Error);
}

}  // namespace test_analysis_debug_onnx
