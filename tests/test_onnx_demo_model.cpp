// The demo model (examples/data/demo, made by tools/demo/make_demo_model.py): a small CNN
// trained with PyTorch on scikit-learn's digits and exported to ONNX. quantkit's ONNX loader
// and float executor must reproduce PyTorch's logits on the whole test set (1e-4), its argmax
// on every sample and the accuracy the script recorded -- with the BatchNormalization run as a
// node and folded into its Conv by passes::fold_batchnorm.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <quantkit/executor.hpp>
#include <quantkit/io/npy.hpp>
#include <quantkit/onnx.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_onnx_demo_model {

namespace qk = quantkit;
using qk::graph::DType;
using qk::graph::Tensor;

namespace {

const std::string demo_dir = std::string(QUANTKIT_TEST_DIR) + "/../examples/data/demo/";

qk::graph::Graph load_demo() {
  qk::onnx::LoadOptions opt;
  opt.supported = [](const std::string& d, const std::string& op) { return qk::builtin_ops().supports(d, op); };
  return qk::onnx::load(demo_dir + "digits_cnn.onnx", opt);
}

Tensor npy_tensor_f32(const std::string& file) {
  const qk::npy::Array a = qk::npy::load(demo_dir + file);
  const std::vector<float> v = a.as<float>(file);
  return Tensor::from_vector<float>(a.shape, v, file);
}

std::vector<std::int64_t> argmax_rows(const Tensor& logits) {
  const std::int64_t n = logits.dim(0), c = logits.dim(1);
  const float* d = logits.data<float>();
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = std::max_element(d + i * c, d + (i + 1) * c) - (d + i * c);
  return out;
}

struct Agreement {
  double max_abs_diff = 0;
  std::int64_t argmax_same = 0;
  std::int64_t correct = 0;
};

Agreement compare(const Tensor& logits, const Tensor& torch_logits, const std::vector<std::int64_t>& labels) {
  REQUIRE(logits.dtype() == DType::float32);
  REQUIRE(logits.shape() == torch_logits.shape());
  Agreement a;
  const float* x = logits.data<float>();
  const float* t = torch_logits.data<float>();
  for (std::int64_t i = 0; i < logits.size(); ++i) {
    const double d = std::fabs(static_cast<double>(x[i]) - static_cast<double>(t[i]));
    a.max_abs_diff = std::isnan(d) ? INFINITY : std::max(a.max_abs_diff, d);
  }
  const auto p = argmax_rows(logits), q = argmax_rows(torch_logits);
  for (std::size_t i = 0; i < p.size(); ++i) {
    a.argmax_same += p[i] == q[i];
    a.correct += p[i] == labels[i];
  }
  return a;
}

}  // namespace

TEST_CASE("demo CNN: quantkit's loader and float executor reproduce PyTorch on the digits test set") {
  nlohmann::json meta;
  {
    std::ifstream in(demo_dir + "digits_cnn.json");
    REQUIRE_MESSAGE(in.good(), "cannot open ", demo_dir, "digits_cnn.json (run tools/demo/make_demo_model.py)");
    in >> meta;
  }
  const Tensor x = npy_tensor_f32("digits_test_x.npy");
  const Tensor torch_logits = npy_tensor_f32("digits_test_logits_torch.npy");
  const std::vector<std::int64_t> labels = qk::npy::load(demo_dir + "digits_test_y.npy").as<std::int64_t>("digits_test_y.npy");
  const auto n = static_cast<std::int64_t>(labels.size());
  REQUIRE(x.rank() == 4);
  REQUIRE(x.dim(0) == n);
  REQUIRE(n == meta.at("test_samples").get<std::int64_t>());
  REQUIRE(torch_logits.shape() == qk::Dims{n, 10});

  const qk::graph::Graph g = load_demo();
  REQUIRE(g.inputs.size() == 1);
  CHECK(g.inputs[0].name == "input");
  CHECK(g.inputs[0].dims.size() == 4);
  REQUIRE(g.outputs.size() == 1);
  CHECK(g.outputs[0].name == "logits");
  const auto count_op = [](const qk::graph::Graph& gr, const std::string& op) {
    return std::count_if(gr.nodes.begin(), gr.nodes.end(), [&](const qk::graph::Node& nd) { return nd.op_type == op; });
  };
  CHECK(count_op(g, "BatchNormalization") == 1);
  CHECK(g.nodes.size() == meta.at("nodes").size());

  const std::int64_t expected_correct = meta.at("test_correct").get<std::int64_t>();
  const double tolerance = 1e-4;

  SUBCASE("as loaded: BatchNormalization runs as a node") {
    const Tensor logits = qk::Executor<>(g).run({{"input", x}}).at("logits");
    const Agreement a = compare(logits, torch_logits, labels);
    MESSAGE("quantkit (BN node) vs PyTorch: max abs diff ", a.max_abs_diff, ", argmax same ", a.argmax_same, "/", n,
            ", correct ", a.correct, "/", n);
    CHECK(a.max_abs_diff <= tolerance);
    CHECK(a.argmax_same == n);
    CHECK(a.correct == expected_correct);
  }

  SUBCASE("BatchNormalization folded into the Conv") {
    qk::graph::Graph folded = g;
    const auto report = qk::passes::fold_batchnorm(folded);
    CHECK(report.folded.size() == 1);
    CHECK(report.kept.empty());
    CHECK(count_op(folded, "BatchNormalization") == 0);
    CHECK(folded.nodes.size() == g.nodes.size() - 1);
    const Tensor logits = qk::Executor<>(folded).run({{"input", x}}).at("logits");
    const Agreement a = compare(logits, torch_logits, labels);
    MESSAGE("quantkit (BN folded) vs PyTorch: max abs diff ", a.max_abs_diff, ", argmax same ", a.argmax_same, "/",
            n, ", correct ", a.correct, "/", n);
    CHECK(a.max_abs_diff <= tolerance);
    CHECK(a.argmax_same == n);
    CHECK(a.correct == expected_correct);
  }

  SUBCASE("dynamic batch: one image at a time gives the batch's rows") {
    const qk::Executor<> run(g);
    const std::int64_t per_image = x.size() / n;
    for (std::int64_t i : {std::int64_t{0}, std::int64_t{1}, n / 2, n - 1}) {
      Tensor one(DType::float32, qk::Dims{1, x.dim(1), x.dim(2), x.dim(3)}, "one");
      std::copy_n(x.data<float>() + i * per_image, per_image, one.data<float>());
      const Tensor logits = run.run({{"input", one}}).at("logits");
      REQUIRE(logits.shape() == qk::Dims{1, 10});
      for (int k = 0; k < 10; ++k)
        CHECK(std::fabs(logits.data<float>()[k] - torch_logits.data<float>()[i * 10 + k]) <= tolerance);
    }
  }
}

}  // namespace test_onnx_demo_model
