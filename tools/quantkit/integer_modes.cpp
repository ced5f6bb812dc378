// The integer mode with the float, power-of-two and fixed-point requantization schemes
// (IntegerModeT<Scheme>; the shift schemes are in integer_shift_modes.cpp, so the heaviest
// templates of the tool compile in two translation units in parallel), and what --scale reports
// for a calibrated model.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "integer_runner.hpp"
#include "quantkit/ptq/config.hpp"

namespace quantkit {
namespace cli {

namespace {

// Calls f(Scheme{}) with the requantization policy `s` names (check_scale only needs the
// policies' constants, not the integer ops).
template <class F>
decltype(auto) with_scheme(ScaleKind s, F&& f) {
  switch (s) {
    case ScaleKind::float_multiplier: return f(FloatMultiplier<RoundHalfEven>{});
    case ScaleKind::pow2: return f(PowerOfTwo<RoundHalfAway>{});
    case ScaleKind::fixed_point: return f(FixedPointDoubleRounding{});
    case ScaleKind::single_shift: return f(SingleShift{});
    case ScaleKind::double_shift: return f(DoubleShift{});
  }
  return f(FixedPointDoubleRounding{});
}

std::string without_prefix(const std::string& what) {
  return what.compare(0, 10, "quantkit: ") == 0 ? what.substr(10) : what;
}

}  // namespace

std::unique_ptr<Runner::Impl> make_integer_runner(graph::Graph g, ScaleKind scale, bool ort_no_vnni) {
  IntegerModeOptions options;
  options.ort_pair_saturation = ort_no_vnni;
  switch (scale) {
    case ScaleKind::float_multiplier: return integer_runner<FloatMultiplier<RoundHalfEven>>(std::move(g), options);
    case ScaleKind::pow2: return integer_runner<PowerOfTwo<RoundHalfAway>>(std::move(g), options);
    case ScaleKind::fixed_point: break;
    case ScaleKind::single_shift: return integer_runner_single_shift(std::move(g), options);
    case ScaleKind::double_shift: return integer_runner_double_shift(std::move(g), options);
  }
  return integer_runner<FixedPointDoubleRounding>(std::move(g), options);
}

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
        // "layer 'X': requantization multiplier ..." -> the part after the layer (the row names it).
        l.error = without_prefix(e.what());
        const std::string layer = "layer '" + key + "': ";
        if (l.error.compare(0, layer.size(), layer) == 0) l.error = l.error.substr(layer.size());
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
