// PTQ accuracy remedies on the demo CNN and on a model hostile to per-tensor weights
// (examples/data/demo/digits_hostile.onnx: channel weight ranges ~100x apart, made by
// tools/demo/make_hostile_model.py): test accuracy of per-tensor W8A8 and W4A8 (min-max
// calibration, fake-quant) plain, with cross-layer equalization, CLE + bias correction,
// AdaRound and CLE + AdaRound. Then, on the hostile model with CLE: the N2D2-style
// single-shift scaling report and the standalone C++ export.
//
//   ptq_remedies_onnx [ADAROUND_ITERATIONS]      (default 500; the README's table)
#include <quantkit/analysis/requant_report.hpp>
#include <quantkit/executor.hpp>
#include <quantkit/export/cpp.hpp>
#include <quantkit/io/npy.hpp>
#include <quantkit/observer/minmax.hpp>
#include <quantkit/onnx.hpp>
#include <quantkit/onnx/export_qdq.hpp>
#include <quantkit/ptq.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace qk = quantkit;

static qk::graph::Tensor load_npy(const std::string& path) {
  const qk::npy::Array a = qk::npy::load(path);
  return qk::graph::Tensor::from_vector<float>(a.shape, a.as<float>(path), path);
}

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 500;
  const std::string dir = QUANTKIT_EXAMPLES_DIR "/data/demo/";
  const auto batches = qk::ptq::split_batches("input", load_npy(dir + "digits_calib.npy"), 64);
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

  struct Column {
    const char* name;
    bool cle, bias_correction, adaround;
  };
  const std::vector<Column> columns = {{"plain", false, false, false},
                                       {"CLE", true, false, false},
                                       {"CLE + bias corr.", true, true, false},
                                       {"AdaRound", false, false, true},
                                       {"CLE + AdaRound", true, false, true}};
  std::printf("per-tensor weights, uint8 activations, min-max; AdaRound %d iterations per layer\n\n", iterations);
  std::printf("| model | float |");
  for (const auto& c : columns) std::printf(" %s |", c.name);
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < columns.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const char* file : {"digits_cnn.onnx", "digits_hostile.onnx"}) {
    const qk::graph::Graph model = qk::onnx::load(dir + file);
    const double float_accuracy = accuracy(qk::Executor<>(model).run({{"input", x}}).at("logits"));
    for (int bits : {8, 4}) {
      std::printf("| %s W%dA8 | %.2f |", file, bits, float_accuracy);
      for (const auto& c : columns) {
        qk::ptq::PtqConfig cfg;
        cfg.weight_bits = bits;
        cfg.weight_granularity = qk::ptq::WeightGranularity::per_tensor();
        cfg.cross_layer_equalization = c.cle;
        cfg.bias_correction = c.bias_correction;
        cfg.adaround.iterations = c.adaround ? iterations : 0;
        qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(model, cfg);
        cal.observe(batches);
        const qk::ptq::QuantizedModel qm = cal.finish(batches);
        const qk::Executor<qk::ptq::FakeQuantMode> run(qm.graph, qk::ptq::FakeQuantMode(qm));
        std::printf(" %.2f |", accuracy(run.run({{"input", x}}).at("logits")));
        std::fflush(stdout);
      }
      std::printf("\n");
    }
  }

  // The hostile model, per-tensor W8A8 with CLE: what CLE did, how N2D2's single shift would
  // requantize it, and the standalone C++ header of its integer model.
  qk::ptq::PtqConfig cfg;
  cfg.weight_granularity = qk::ptq::WeightGranularity::per_tensor();
  cfg.cross_layer_equalization = true;
  qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(qk::onnx::load(dir + "digits_hostile.onnx"), cfg);
  cal.observe(batches);
  const qk::ptq::QuantizedModel qm = cal.finish(batches);
  std::printf("\n%s", qk::ptq::format(cal.equalization()).c_str());
  const qk::graph::Graph qdq = qk::onnx::qdq_graph(qm);
  const auto rows = qk::analysis::requant_report(qdq, qk::RequantScheme::single_shift);
  std::printf("\nsingle-shift requantization:\n%s", qk::analysis::format_requant_report(rows).c_str());
  qk::cpp_export::Options opt;
  opt.name_space = "digits";
  opt.runtime = qk::cpp_export::Runtime::standalone;
  const std::string out = (std::filesystem::temp_directory_path() / "digits_hostile_w8a8.hpp").string();
  const qk::cpp_export::Report r = qk::cpp_export::write(qdq, out, opt);
  std::printf("\nwrote %s: %zu integer layers, %zu bytes of parameters, %zu bytes of workspace\n", out.c_str(),
              r.layers.size(), r.parameter_bytes, r.workspace_bytes);
}
