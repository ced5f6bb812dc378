// The three execution modes behind `run`, `eval` and `compare`, the six requantization schemes
// of the integer mode, and what --scale reports for a quantized model.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "quantkit/executor.hpp"
#include "quantkit/executor/integer/mode.hpp"
#include "quantkit/ptq.hpp"

namespace quantkit {
namespace cli {

struct Runner::Impl {
  virtual ~Impl() = default;
  virtual TensorMap run(const TensorMap& inputs, const RunOptions& opt) const = 0;
  virtual const graph::Graph& graph() const = 0;
  Mode mode = Mode::float_;
  std::string description;
  std::vector<NodeReport> report;
};

namespace {

template <class M>
struct ExecutorImpl final : Runner::Impl {
  ExecutorImpl(graph::Graph g, M m) : executor(std::move(g), std::move(m)) {}
  TensorMap run(const TensorMap& inputs, const RunOptions& opt) const override { return executor.run(inputs, opt); }
  const graph::Graph& graph() const override { return executor.graph(); }
  Executor<M> executor;
};

// Calls f(Scheme{}) with the requantization policy `s` names.
template <class F>
decltype(auto) with_scheme(ScaleKind s, F&& f) {
  switch (s) {
    case ScaleKind::float_multiplier: return f(FloatMultiplier<RoundHalfEven>{});
    case ScaleKind::pow2: return f(PowerOfTwo<RoundHalfAway>{});
    case ScaleKind::fixed_point: return f(FixedPointDoubleRounding{});
    case ScaleKind::fixed_point_single: return f(FixedPointSingleRounding{});
    case ScaleKind::single_shift: return f(SingleShift{});
    case ScaleKind::double_shift: return f(DoubleShift{});
  }
  return f(FixedPointDoubleRounding{});
}

std::string without_prefix(const std::string& what) {
  return what.compare(0, 10, "quantkit: ") == 0 ? what.substr(10) : what;
}

}  // namespace

Runner::Runner(const graph::Graph& model, const ptq::QuantizedModel* qm, Mode mode, ScaleKind scale) {
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
      graph::Graph g = quantized ? model : qdq_graph(*qm);
      with_scheme(scale, [&](auto scheme) {
        using M = IntegerModeT<decltype(scheme)>;
        auto impl = std::make_unique<ExecutorImpl<M>>(std::move(g), M{});
        for (const auto& r : impl->executor.mode().report()) impl->report.push_back({r.node, r.op_type, r.integer, r.detail});
        impl_ = std::move(impl);
      });
      impl_->description = std::string("integer (") + to_string(scale) + " requantization" +
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

std::vector<std::string> integer_report_lines(const std::vector<NodeReport>& report, ScaleKind scale) {
  std::size_t n = 0;
  for (const auto& r : report) n += r.integer;
  std::vector<std::string> lines;
  lines.push_back(fmt::format("integer mode ({}): {} of {} compute nodes run in integers", to_string(scale), n,
                              report.size()));
  for (const auto& r : report)
    if (!r.integer) lines.push_back(fmt::format("  float: {} ({}): {}", r.node, r.op, r.detail));
  return lines;
}

// ---------------------------------------------------------------------------------------------
namespace {

template <class Scheme>
std::vector<LayerScale> check_scale_with(const ptq::QuantizedModel& qm) {
  std::vector<LayerScale> out;
  const graph::Graph& g = qm.graph;
  auto act = [&](const std::string& v) -> const ptq::TensorQuant* {
    const ptq::TensorQuant* t = qm.find(v);
    return t && t->role == ptq::TensorRole::activation && t->params.size() == 1 ? t : nullptr;
  };
  for (std::size_t idx : g.topological_order()) {
    const graph::Node& n = g.nodes[idx];
    const std::string key = ptq::node_key(n);
    if (!qm.is_quantized_node(key) || !n.has_output(0)) continue;
    const ptq::TensorQuant* out_q = act(n.outputs[0]);
    if (!out_q) continue;
    const float so = out_q->params.scale[0];
    std::vector<double> m;
    const std::string& op = n.op_type;
    if (op == "Conv" || op == "Gemm" || op == "MatMul") {
      const ptq::TensorQuant* in = n.has_input(0) ? act(n.inputs[0]) : nullptr;
      const ptq::TensorQuant* w = n.has_input(1) ? qm.find(n.inputs[1]) : nullptr;
      if (!in || !w || w->role != ptq::TensorRole::weight) continue;
      if (w->params.granularity.kind == GranularityKind::per_group) continue;  // not an integer-mode layer
      for (float sw : w->params.scale) m.push_back(integer::detail::multiplier<Scheme>(in->params.scale[0], sw, so));
    } else if (op == "Add") {
      const ptq::TensorQuant* a = n.has_input(0) ? act(n.inputs[0]) : nullptr;
      const ptq::TensorQuant* b = n.has_input(1) ? act(n.inputs[1]) : nullptr;
      if (!a || !b) continue;
      // The integer Add: both inputs rescaled to a common 2^-20 grid, then to the output.
      const double sa = a->params.scale[0], sb = b->params.scale[0];
      const double t = 2.0 * std::max(sa, sb);
      m = {sa / t, sb / t, t / (1048576.0 * so)};
    } else if (op == "Relu" || op == "Clip" || op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
               op == "Flatten" || op == "Reshape" || op == "Concat") {
      const std::size_t inputs = op == "Concat" ? n.inputs.size() : 1;
      for (std::size_t k = 0; k < inputs; ++k) {
        const ptq::TensorQuant* in = n.has_input(k) ? act(n.inputs[k]) : nullptr;
        if (in && in->params.scale[0] != so) m.push_back(static_cast<double>(in->params.scale[0]) / so);
      }
    } else {
      continue;
    }
    if (m.empty()) continue;
    LayerScale l;
    l.node = key;
    l.op = op;
    l.multipliers = m.size();
    l.min_multiplier = *std::min_element(m.begin(), m.end());
    l.max_multiplier = *std::max_element(m.begin(), m.end());
    for (double v : m) {
      try {
        const auto c = Scheme::make(v, key);
        l.max_relative_error = std::max(l.max_relative_error, std::fabs(Scheme::approximation(c) - v) / v);
      } catch (const Error& e) {
        l.error = without_prefix(e.what());
        break;
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace

std::vector<LayerScale> check_scale(const ptq::QuantizedModel& qm, ScaleKind scale) {
  return with_scheme(scale, [&](auto scheme) { return check_scale_with<decltype(scheme)>(qm); });
}

}  // namespace cli
}  // namespace quantkit
