// The execution modes behind `run`, `eval` and `compare` (the integer mode's schemes are in
// integer_modes.cpp).
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "quantkit/ptq/fake_quant.hpp"
#include "runner_impl.hpp"

namespace quantkit {
namespace cli {

Runner::Runner(const graph::Graph& model, const ptq::QuantizedModel* qm, Mode mode, ScaleKind scale,
               bool ort_no_vnni) {
  const bool quantized = is_quantized(model);
  auto need_calibration = [&](const char* m) {
    usage_fail("--mode ", m, ": model '", model.source,
               "' is a float model (no QuantizeLinear/DequantizeLinear); expected a quantized model "
               "(quantkit quantize writes one) or --calib CALIB.npy (with the quantize options) to calibrate it first");
  };
  switch (mode) {
    case Mode::float_:
      impl_ = std::make_unique<ExecutorImpl<FloatMode>>(model, FloatMode{});
      impl_->description = quantized ? "float (the model as written: its QuantizeLinear/DequantizeLinear included)"
                                     : "float";
      break;
    case Mode::fake:
      if (quantized) {
        impl_ = std::make_unique<ExecutorImpl<FloatMode>>(model, FloatMode{});
        impl_->description = "fake-quant (the QDQ model's QuantizeLinear/DequantizeLinear in float)";
      } else if (qm) {
        impl_ = std::make_unique<ExecutorImpl<ptq::FakeQuantMode>>(qm->graph, ptq::FakeQuantMode(*qm));
        impl_->description = "fake-quant (calibrated in memory with observer " + qm->observer + ")";
      } else {
        need_calibration("fake");
      }
      break;
    case Mode::integer: {
      if (!quantized && !qm) need_calibration("int");
      // 16-bit activations run in integers; 16-bit weights stay float, as the report says.
      impl_ = make_integer_runner(quantized ? model : qdq_graph(*qm), scale, ort_no_vnni);
      impl_->description = std::string("integer (") + to_string(scale) + " requantization" +
                           (ort_no_vnni ? ", ONNX Runtime's int16 pair sums without VNNI" : "") +
                           (quantized ? "" : ", calibrated in memory") + ")";
      break;
    }
  }
  impl_->mode = mode;
}

Runner::~Runner() = default;
Runner::Runner(Runner&&) noexcept = default;

TensorMap Runner::run(const TensorMap& inputs, bool keep_intermediates) const {
  RunOptions opt;
  opt.keep_intermediates = keep_intermediates;
  return impl_->run(inputs, opt);
}
const graph::Graph& Runner::graph() const { return impl_->graph(); }
Mode Runner::mode() const { return impl_->mode; }
const std::vector<NodeReport>& Runner::integer_report() const { return impl_->report; }
std::string Runner::describe() const { return impl_->description; }

Json integer_report_json(const std::vector<NodeReport>& report) {
  Json a = Json::array();
  for (const auto& r : report)
    a.push_back({{"node", r.node}, {"op", r.op}, {"integer", r.integer}, {"detail", r.detail}});
  return a;
}

std::vector<std::string> integer_report_lines(const std::vector<NodeReport>& report, ScaleKind scale,
                                              bool brief_scale_reasons) {
  std::size_t n = 0;
  for (const auto& r : report) n += r.integer;
  std::vector<std::string> lines;
  lines.push_back(fmt::format("integer mode ({}): {} of {} compute nodes run in integers", to_string(scale), n,
                              report.size()));
  for (const auto& r : report)
    if (!r.integer) {
      const bool scale_reason = r.detail.rfind("the scheme cannot express a multiplier", 0) == 0;
      lines.push_back(fmt::format("  float: {} ({}): {}", r.node, r.op,
                                  brief_scale_reasons && scale_reason ? "a multiplier the scheme cannot express"
                                                                      : r.detail));
    }
  return lines;
}

}  // namespace cli
}  // namespace quantkit
