// Whole-model PTQ: calibrate the demo CNN, run it in fake-quant mode, write a QDQ ONNX model.
#include <quantkit/executor.hpp>
#include <quantkit/io/npy.hpp>
#include <quantkit/observer/kl.hpp>
#include <quantkit/onnx.hpp>
#include <quantkit/onnx/export_qdq.hpp>
#include <quantkit/ptq.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
namespace qk = quantkit;

static qk::graph::Tensor load_npy(const std::string& path) {
  const qk::npy::Array a = qk::npy::load(path);
  return qk::graph::Tensor::from_vector<float>(a.shape, a.as<float>(path), path);
}

int main() {
  const std::string dir = QUANTKIT_EXAMPLES_DIR "/data/demo/";
  const qk::graph::Graph model = qk::onnx::load(dir + "digits_cnn.onnx");

  qk::ptq::PtqConfig cfg;  // default W8A8: int8 per-channel symmetric weights, uint8 activations
  cfg.weight_bits = 4;     // W4A8
  qk::KlObserver::Options kl;
  kl.method.kl_zero_bin_fix = true;  // TensorRT entropy calibration, zero spike after ReLU removed
  qk::ptq::GraphCalibrator<qk::KlObserver> cal(model, cfg, kl);
  cal.observe(qk::ptq::split_batches("input", load_npy(dir + "digits_calib.npy"), 64),
              [](std::size_t done, std::size_t total) { std::printf("\rcalibrating %zu/%zu", done, total); });
  const qk::ptq::QuantizedModel qm = cal.finish();  // QuantParams of every quantized tensor

  // Fake-quant mode computes what the QDQ model computes, in float.
  const qk::graph::Tensor x = load_npy(dir + "digits_test_x.npy");
  const auto labels = qk::npy::load(dir + "digits_test_y.npy").as<std::int64_t>();
  auto accuracy = [&](const qk::graph::Tensor& logits) {
    std::size_t ok = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      const float* row = logits.data<float>() + i * 10;
      ok += std::max_element(row, row + 10) - row == labels[i];
    }
    return 100.0 * static_cast<double>(ok) / static_cast<double>(labels.size());
  };
  const qk::Executor<> float_run(model);
  const qk::Executor<qk::ptq::FakeQuantMode> fake_run(qm.graph, qk::ptq::FakeQuantMode(qm));
  std::printf("\nfloat %.2f %%, W4A8 fake-quant %.2f %% (%zu quantized tensors)\n",
              accuracy(float_run.run({{"input", x}}).at("logits")),
              accuracy(fake_run.run({{"input", x}}).at("logits")), qm.tensors.size());

  const std::string out = (std::filesystem::temp_directory_path() / "digits_cnn.w4a8.onnx").string();
  const qk::onnx::QdqReport r = qk::onnx::save_qdq(qm, out);  // atomic; opset 21 for int4
  std::printf("wrote %s: opset %lld, %zu QDQ pairs, %zu quantized initializers\n", out.c_str(),
              static_cast<long long>(r.opset), r.activation_pairs, r.quantized_initializers);
}
