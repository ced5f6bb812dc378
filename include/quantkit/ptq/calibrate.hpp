// GraphCalibrator<Observer>: runs the float executor over a calibration set and feeds every
// activation the plan quantizes (graph inputs, inputs and outputs of quantized nodes) into a
// quantkit::Calibration<Observer>; weights are calibrated from the initializers with
// WeightObserver (min-max by default) at the plan's granularity. finish() gives the
// QuantizedModel with QuantParams for every quantized tensor.
//
//   qk::ptq::GraphCalibrator<qk::KlObserver> cal(graph, cfg);
//   cal.observe(qk::ptq::split_batches("input", calib, 64), [](std::size_t done, std::size_t total) {
//     std::fprintf(stderr, "\rcalibrating %zu/%zu", done, total);
//   });
//   qk::ptq::QuantizedModel qm = cal.finish();
//
// With the accuracy remedies of PtqConfig: cross_layer_equalization is applied to the graph
// in the constructor (after BatchNormalization folding, before planning); adaround and
// bias_correction need the calibration data again, so finish(batches) applies them (AdaRound
// first, then bias correction) and finish() without data refuses them:
//   cfg.cross_layer_equalization = cfg.bias_correction = true;
//   cfg.adaround.iterations = 1000;
//   const auto batches = qk::ptq::split_batches("input", calib, 64);
//   qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(graph, cfg);
//   cal.observe(batches);
//   qk::ptq::QuantizedModel qm = cal.finish(batches, on_progress);  // summaries in qm.notes
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "quantkit/calibration/calibration.hpp"
#include "quantkit/error.hpp"
#include "quantkit/executor/executor.hpp"
#include "quantkit/executor/passes/fold_batchnorm.hpp"
#include "quantkit/observer/minmax.hpp"
#include "quantkit/ptq/adaround.hpp"
#include "quantkit/ptq/bias_correction.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/equalize.hpp"
#include "quantkit/ptq/layer_data.hpp"
#include "quantkit/ptq/plan.hpp"
#include "quantkit/ptq/weights.hpp"

namespace quantkit {
namespace ptq {

using TensorMap = std::map<std::string, graph::Tensor>;
using Progress = std::function<void(std::size_t done, std::size_t total)>;

// Splits `x` along its first axis into batches of at most `batch_size` rows, each fed as `input`.
inline std::vector<TensorMap> split_batches(const std::string& input, const graph::Tensor& x,
                                            std::int64_t batch_size) {
  if (batch_size < 1) quantkit::detail::fail(quantkit::detail::describe_tensor(input), ": batch size ", batch_size, "; expected >= 1");
  if (x.rank() < 1 || x.dim(0) < 1)
    quantkit::detail::fail(quantkit::detail::describe_tensor(input), ": calibration data of shape ", x.shape().to_string(),
                 "; expected at least one sample along the first axis");
  const std::int64_t n = x.dim(0);
  const std::size_t row_bytes = x.nbytes() / static_cast<std::size_t>(n);
  std::vector<TensorMap> out;
  for (std::int64_t start = 0; start < n; start += batch_size) {
    const std::int64_t rows = std::min(batch_size, n - start);
    Dims shape = x.shape();
    shape[0] = rows;
    graph::Tensor b(x.dtype(), shape, input);
    std::memcpy(b.raw(), static_cast<const unsigned char*>(x.raw()) + static_cast<std::size_t>(start) * row_bytes,
                static_cast<std::size_t>(rows) * row_bytes);
    out.push_back(TensorMap{{input, std::move(b)}});
  }
  return out;
}

namespace detail {
template <class O, class = void>
struct observer_name {
  static std::string get() { return "custom"; }
};
template <class O>
struct observer_name<O, std::void_t<decltype(O::kind_name)>> {
  static std::string get() { return O::kind_name; }
};
}  // namespace detail

template <class Observer, class WeightObserver = MinMaxObserver>
class GraphCalibrator {
 public:
  using Options = typename Observer::Options;

  // Folds BatchNormalization (when the config asks), plans the quantization and prepares the
  // float executor. Errors name the node or option.
  explicit GraphCalibrator(graph::Graph g, PtqConfig cfg = {}, Options options = {})
      : config_(std::move(cfg)), graph_(prepare(std::move(g), config_, equalization_)),
        plan_(make_plan(graph_, config_)), executor_(graph_), calibration_(ObserverConfig{}, std::move(options)) {}

  const graph::Graph& graph() const { return graph_; }
  // What cross-layer equalization did (empty unless PtqConfig::cross_layer_equalization).
  const EqualizationReport& equalization() const { return equalization_; }
  const Plan& plan() const { return plan_; }
  const PtqConfig& config() const { return config_; }
  const Calibration<Observer>& calibration() const { return calibration_; }
  std::size_t batches() const { return batches_; }

  // One batch of the graph's inputs (by name).
  void observe(const TensorMap& inputs) {
    std::set<std::string> seen;  // a value read by several nodes is observed once per batch
    RunOptions opt;
    opt.on_node = [&](const graph::Node& node, const std::vector<const graph::Tensor*>& in,
                      const std::vector<graph::Tensor>& out) {
      for (std::size_t k = 0; k < in.size(); ++k)
        if (in[k]) take(node.inputs[k], *in[k], seen);
      for (std::size_t k = 0; k < out.size(); ++k)
        if (node.has_output(k)) take(node.outputs[k], out[k], seen);
    };
    (void)executor_.run(inputs, opt);
    ++batches_;
  }

  // Every batch, calling progress(done, total) after each.
  void observe(const std::vector<TensorMap>& batches, const Progress& progress = {}) {
    for (std::size_t i = 0; i < batches.size(); ++i) {
      observe(batches[i]);
      if (progress) progress(i + 1, batches.size());
    }
  }

  // Sharded calibration: the graph outputs' min-max observers (OutputCalibration::minmax).
  const Calibration<MinMaxObserver>& output_calibration() const { return outputs_; }
  // Adds another shard's state (a calibrator of the same graph, config and observer options):
  // its activation observers, its graph outputs' min-max observers and its batch count, as if
  // its batches had come after this one's (quantkit/calibration/mpi.hpp reduces the shards of
  // MPI ranks with it). A shard that saw no batch adds nothing.
  void merge(const Calibration<Observer>& activations, const Calibration<MinMaxObserver>& outputs,
             std::size_t batches) {
    calibration_.merge(activations);
    outputs_.merge(outputs);
    batches_ += batches;
  }
  void merge(const GraphCalibrator& other) {
    merge(other.calibration_, other.outputs_, other.batches_);
  }

  // QuantParams for every quantized tensor. Activations never computed as float32 during
  // calibration are left unquantized (listed in notes). AdaRound and bias correction need
  // the data: with them enabled, call finish(batches).
  QuantizedModel finish() const {
    if (config_.adaround.enabled() || config_.bias_correction)
      quantkit::detail::fail("PtqConfig::", config_.adaround.enabled() ? "adaround" : "bias_correction",
                             " is enabled; expected finish(batches) with the calibration batches, which it needs again");
    return calibrated();
  }

  // finish() and then the remedies the config enables, on these batches (normally the ones
  // observed): AdaRound, then bias correction. Their summaries are appended to qm.notes.
  QuantizedModel finish(const std::vector<TensorMap>& batches, const RemedyCallback& progress = {}) const {
    QuantizedModel qm = calibrated();
    if (config_.adaround.enabled()) {
      const AdaRoundReport r = adaround(qm, batches, config_.adaround, progress);
      append_lines(qm.notes, format(r));
    }
    if (config_.bias_correction) {
      const BiasCorrectionReport r = correct_bias(qm, batches, progress);
      append_lines(qm.notes, format(r));
    }
    return qm;
  }

 private:
  static void append_lines(std::vector<std::string>& notes, const std::string& text) {
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (end > start) notes.push_back(text.substr(start, end - start));
      start = end + 1;
    }
  }

  QuantizedModel calibrated() const {
    if (batches_ == 0)
      graph_.fail("no calibration batch was observed; expected observe() with at least one batch");
    QuantizedModel qm;
    qm.graph = graph_;
    qm.config = config_;
    qm.observer = detail::observer_name<Observer>::get();
    qm.notes = plan_.notes;
    if (config_.cross_layer_equalization) append_lines(qm.notes, format(equalization_));
    for (std::size_t i : plan_.quantized_nodes) qm.quantized_nodes.push_back(node_key(graph_.nodes[i]));

    for (const auto& kv : plan_.activations) {
      const std::string& v = kv.first;
      if (graph_.is_output(v) && config_.graph_outputs == OutputCalibration::keep_float) {
        qm.notes.push_back("graph output '" + v + "' stays float (PtqConfig::graph_outputs = keep_float)");
        continue;
      }
      if (!calibration_.contains(v)) {
        qm.notes.push_back("value '" + v + "' (at node '" + kv.second.node +
                           "') stays float: it was not computed as float32 during calibration");
        continue;
      }
      TensorQuant t;
      t.role = TensorRole::activation;
      t.format = kv.second.format;
      t.symmetry = config_.activation_symmetry();
      t.rounding = RoundingMode::half_even;
      t.node = kv.second.node;
      const bool by_minmax = graph_.is_output(v) && config_.graph_outputs == OutputCalibration::minmax;
      t.params = by_minmax ? outputs_.params(v, target(t)) : calibration_.params(v, target(t));
      qm.tensors.emplace(v, std::move(t));
    }
    if (config_.share_passthrough_params) share_passthrough(qm);

    for (const auto& kv : plan_.weights) {
      const std::string& w = kv.first;
      const graph::Tensor& wt = graph_.initializers.at(w);
      TensorQuant t;
      t.role = TensorRole::weight;
      t.format = kv.second.format;
      t.symmetry = config_.weight_symmetry;
      t.rounding = config_.weight_rounding;
      t.node = kv.second.node;
      WeightObserver obs(ObserverConfig{kv.second.granularity, NonFiniteKind::reject, w});
      obs.observe(View<const float>(wt.data<float>(), wt.shape(), w));
      const QuantTarget tg = target(t);
      t.params = compute_qparams(obs.ranges(tg), kv.second.granularity, tg.range, tg.symmetry, tg.convention, w);
      qm.tensors.emplace(w, std::move(t));
    }

    for (const auto& kv : plan_.biases) {
      const std::string& b = kv.first;
      const BiasPlan& bp = kv.second;
      const TensorQuant* in = qm.find(bp.input);
      const TensorQuant& w = qm.tensors.at(bp.weight);
      if (!in) {
        qm.notes.push_back("bias '" + b + "' of node '" + bp.node + "' stays float32 (its input '" + bp.input +
                           "' is not quantized)");
        continue;
      }
      TensorQuant t = bias_quant(*in, w, bp.node, bp.input, bp.weight);
      try {
        (void)quantize_initializer(graph_.initializers.at(b), t, b);
      } catch (const Error& e) {
        qm.notes.push_back("bias '" + b + "' of node '" + bp.node + "' stays float32: " + e.what());
        continue;
      }
      qm.tensors.emplace(b, std::move(t));
    }
    return qm;
  }

  static graph::Graph prepare(graph::Graph g, const PtqConfig& cfg, EqualizationReport& equalization) {
    cfg.validate();
    if (cfg.fold_batchnorm) (void)passes::fold_batchnorm(g);
    if (cfg.cross_layer_equalization) equalization = equalize_cross_layer(g, cfg.equalization);
    return g;
  }

  QuantTarget target(const TensorQuant& t) const {
    QuantTarget tg;
    tg.range = t.format.range();
    if (t.role == TensorRole::weight && config_.reduce_range) tg.range = reduced_range(tg.range, config_.convention);
    tg.symmetry = t.symmetry;
    tg.convention = config_.convention;
    tg.rounding = t.rounding;
    return tg;
  }

  void take(const std::string& v, const graph::Tensor& t, std::set<std::string>& seen) {
    if (v.empty() || t.dtype() != graph::DType::float32 || !plan_.activations.count(v)) return;
    if (!seen.insert(v).second) return;
    const View<const float> view(t.data<float>(), t.shape(), v);
    calibration_.observe(v, view);
    if (graph_.is_output(v)) outputs_.observe(v, view);
  }

  // Pass-through ops: the output takes the input's parameters (graph order is topological
  // after the executor validated it, but follow producers explicitly).
  void share_passthrough(QuantizedModel& qm) const {
    for (std::size_t idx : graph_.topological_order()) {
      const graph::Node& n = graph_.nodes[idx];
      if (!is_passthrough_op(n.op_type) || !qm.is_quantized_node(node_key(n))) continue;
      if (!n.has_input(0) || !n.has_output(0)) continue;
      const TensorQuant* in = qm.find(n.inputs[0]);
      auto out = qm.tensors.find(n.outputs[0]);
      if (!in || out == qm.tensors.end() || in->format != out->second.format) continue;
      out->second.params = in->params;
      out->second.shared_from = in->shared_from.empty() ? n.inputs[0] : in->shared_from;
    }
  }

  PtqConfig config_;
  EqualizationReport equalization_;  // before graph_: prepare() fills it
  graph::Graph graph_;
  Plan plan_;
  Executor<FloatMode> executor_;
  Calibration<Observer> calibration_;
  Calibration<MinMaxObserver> outputs_;  // graph outputs, for OutputCalibration::minmax
  std::size_t batches_ = 0;
};

}  // namespace ptq
}  // namespace quantkit
