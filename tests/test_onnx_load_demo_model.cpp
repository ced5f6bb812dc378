// The demo CNN (examples/data/demo/digits_cnn.onnx, exported by PyTorch: Conv+BatchNorm,
// depthwise and grouped convolutions, pools, Gemm) loaded and run on its test set: the logits
// match PyTorch's, the accuracy is the recorded 525/540, BatchNormalization folding changes
// nothing measurable, every layer's output is available, and shapes are inferred with the
// batch dimension kept symbolic.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include <quantkit/executor.hpp>
#include <quantkit/io/npy.hpp>
#include <quantkit/onnx.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_onnx_load_demo_model {

namespace qk = quantkit;
using qk::graph::DType;
using qk::graph::Tensor;

namespace {
const std::string demo = std::string(QUANTKIT_TEST_DIR) + "/../examples/data/demo/";

Tensor from_npy(const qk::npy::Array& a) {
  REQUIRE(a.dtype == qk::npy::DType::f32);
  Tensor t(DType::float32, a.shape);
  std::memcpy(t.raw(), a.bytes.data(), a.bytes.size());
  return t;
}

int correct(const Tensor& logits, const std::vector<std::int64_t>& labels) {
  int ok = 0;
  const std::int64_t n = logits.dim(0), k = logits.dim(1);
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = logits.data<float>() + i * k;
    ok += (std::max_element(row, row + k) - row) == labels[static_cast<std::size_t>(i)];
  }
  return ok;
}
}  // namespace

TEST_CASE("demo CNN: logits match PyTorch, accuracy, BN folding, intermediates, shapes") {
  if (!std::ifstream(demo + "digits_cnn.onnx")) {
    MESSAGE("demo model not found in " << demo << ": skipped");
    return;
  }
  const auto g = qk::onnx::load(demo + "digits_cnn.onnx");
  REQUIRE(g.inputs.size() == 1);
  REQUIRE(g.outputs.size() == 1);
  const Tensor x = from_npy(qk::npy::load(demo + "digits_test_x.npy"));
  const auto torch = qk::npy::load(demo + "digits_test_logits_torch.npy").as<float>();
  const auto labels = qk::npy::load(demo + "digits_test_y.npy").as<std::int64_t>();
  const std::string in = g.inputs[0].name, out = g.outputs[0].name;

  auto check_logits = [&](const Tensor& logits) {
    REQUIRE(logits.shape() == qk::Dims{x.dim(0), 10});
    double worst = 0.0;
    for (std::int64_t i = 0; i < logits.size(); ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(logits.data<float>()[i] - torch[static_cast<std::size_t>(i)])));
    CHECK(worst < 1e-4);
    CHECK(correct(logits, labels) == 525);
  };

  qk::RunOptions all;
  all.keep_intermediates = true;
  const auto values = qk::Executor<>(g).run({{in, x}}, all);
  check_logits(values.at(out));
  CHECK(values.size() == g.nodes.size());  // every node's output

  auto folded = g;
  const auto report = qk::passes::fold_batchnorm(folded);
  CHECK(report.folded.size() == 1);
  CHECK(folded.nodes.size() == g.nodes.size() - 1);
  check_logits(qk::Executor<>(folded).run({{in, x}}).at(out));

  // quantkit's own shape inference agrees with libonnx's and keeps the batch symbolic.
  auto own = g;
  own.value_info.clear();
  qk::passes::infer_shapes(own);
  for (const auto& kv : g.value_info) {
    REQUIRE(own.value_info.count(kv.first));
    CHECK(own.value_info.at(kv.first).dims == kv.second.dims);
  }
  CHECK(own.value_info.size() >= g.nodes.size() - 1);
  CHECK(own.outputs[0].dims == std::vector<std::int64_t>{-1, 10});
}

}  // namespace test_onnx_load_demo_model
