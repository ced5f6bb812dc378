// Acting on the sensitivity analysis (quantkit/analysis/sensitivity.hpp):
//
// auto_mixed_precision(config, calibrate, samples, target): calibrates with `config`; while the
// output cosine (float vs fake-quant on `samples`) is under `target`, raises the next most
// sensitive node (node sensitivity of the first calibration, worst first) to 16-bit activations
// (PtqConfig::int16_nodes, recalibrated), and when every sensitive node is int16 and the target is
// still missed, moves them to float (keep_float) in the same order. Every step is reported.
//
// mix_activation_calibration(base, candidates, samples): Horizon's calibration_type "mix":
// `base` is the model calibrated with KL; the nodes whose quantization alone brings the output
// cosine under `threshold` are sensitive; for each (worst first) the activations it writes (and
// the graph inputs it reads) take the parameters of each candidate calibration in turn (e.g.
// max and percentile 99.995) and the one giving the best output cosine of the whole model is
// kept. Pass-through values sharing a replaced activation's parameters follow it.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/analysis/partial.hpp"
#include "quantkit/analysis/sensitivity.hpp"
#include "quantkit/error.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/weights.hpp"

namespace quantkit {
namespace analysis {

struct MixedStep {
  std::string node;
  std::string action;    // "int16" or "float"
  double cosine = 0.0;   // output cosine after this step
};

struct AutoMixedResult {
  double target = 0.0;
  double initial_cosine = 0.0;
  double final_cosine = 0.0;
  bool reached = false;
  std::vector<MixedStep> steps;
  ptq::PtqConfig config;      // the configuration of `model`
  ptq::QuantizedModel model;  // the last calibration (the best reached when the target is missed)
};

using Calibrate = std::function<ptq::QuantizedModel(const ptq::PtqConfig&)>;

inline AutoMixedResult auto_mixed_precision(const ptq::PtqConfig& config, const Calibrate& calibrate,
                                            const std::map<std::string, graph::Tensor>& samples, double target,
                                            const DebugOptions& options = {}) {
  if (!(target > -1.0) || !(target <= 1.0))
    quantkit::detail::fail("auto mixed precision: target cosine ", target, "; expected a value in (-1, 1], e.g. 0.999");
  AutoMixedResult r;
  r.target = target;
  r.config = config;
  r.model = calibrate(config);
  const DebugSession session(r.model, samples, options);
  r.initial_cosine = r.final_cosine = session.measure_full().cosine;
  r.reached = r.final_cosine >= target;
  if (r.reached) return r;

  SensitivityOptions so;
  so.metrics = {Metric::cosine};
  std::vector<std::string> ranking;
  for (const auto& row : session.sensitivity(so).rows) ranking.push_back(row.node);

  double best = r.final_cosine;
  ptq::PtqConfig best_config = r.config;
  ptq::QuantizedModel best_model = r.model;
  auto step = [&](const std::string& node, const char* action, ptq::PtqConfig cfg) {
    ptq::QuantizedModel qm = calibrate(cfg);
    const double c = session.measure(qm).cosine;
    r.steps.push_back({node, action, c});
    r.config = std::move(cfg);
    if (c > best) {
      best = c;
      best_config = r.config;
      best_model = qm;
    }
    r.model = std::move(qm);
    r.final_cosine = c;
    return c >= target;
  };
  auto contains = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  // 16-bit activations first (cheaper than float on integer hardware), unless they already are.
  if (config.activation_bits == 8)
    for (const auto& node : ranking) {
      if (contains(r.config.int16_nodes, node)) continue;
      ptq::PtqConfig cfg = r.config;
      cfg.int16_nodes.push_back(node);
      if (step(node, "int16", cfg)) {
        r.reached = true;
        return r;
      }
    }
  for (const auto& node : ranking) {
    ptq::PtqConfig cfg = r.config;
    cfg.int16_nodes.erase(std::remove(cfg.int16_nodes.begin(), cfg.int16_nodes.end(), node), cfg.int16_nodes.end());
    cfg.keep_float.push_back(node);
    if (step(node, "float", cfg)) {
      r.reached = true;
      return r;
    }
  }
  // Missed: return the best configuration seen.
  r.config = best_config;
  r.model = best_model;
  r.final_cosine = best;
  return r;
}

struct MixChoice {
  std::string node;
  double alone_cosine = 0.0;          // output cosine with only this node quantized (base calibration)
  std::string chosen;                 // the candidate kept ("kl" = the base)
  std::map<std::string, double> cosine;  // output cosine of the whole model per candidate
};

struct MixResult {
  double threshold = 0.999;
  double base_cosine = 0.0, final_cosine = 0.0;
  std::vector<MixChoice> choices;  // one per sensitive node, worst first
  ptq::QuantizedModel model;
};

// `candidates`: name -> a calibration of the same graph and config with another observer.
inline MixResult mix_activation_calibration(const ptq::QuantizedModel& base,
                                            const std::vector<std::pair<std::string, const ptq::QuantizedModel*>>& candidates,
                                            const std::map<std::string, graph::Tensor>& samples,
                                            double threshold = 0.999, const std::string& base_name = "kl",
                                            const DebugOptions& options = {}) {
  if (!(threshold > -1.0) || !(threshold <= 1.0))
    quantkit::detail::fail("mix calibration: threshold ", threshold, "; expected a cosine in (-1, 1]");
  for (const auto& c : candidates)
    if (!c.second || c.second->quantized_nodes != base.quantized_nodes)
      quantkit::detail::fail("mix calibration: candidate '", c.first,
                             "' quantizes other nodes than the base calibration; expected the same graph and config");
  MixResult r;
  r.threshold = threshold;
  r.model = base;
  const DebugSession session(base, samples, options);
  SensitivityOptions so;
  so.metrics = {Metric::cosine};
  const SensitivityResult sens = session.sensitivity(so);
  r.base_cosine = r.final_cosine = sens.full.cosine;
  std::map<std::string, NodeQuantization> by_node;
  for (auto& q : quantized_nodes(base)) by_node.emplace(q.node, q);

  for (const auto& row : sens.rows) {
    if (!(row.metrics.cosine < threshold)) continue;
    const NodeQuantization& q = by_node.at(row.node);
    std::vector<std::string> values = q.outputs;
    for (const auto& a : q.activations)
      if (base.graph.is_input(a)) values.push_back(a);
    MixChoice choice;
    choice.node = row.node;
    choice.alone_cosine = row.metrics.cosine;
    choice.chosen = base_name;
    choice.cosine[base_name] = r.final_cosine;
    double best = r.final_cosine;
    ptq::QuantizedModel best_model = r.model;
    for (const auto& cand : candidates) {
      ptq::QuantizedModel m = r.model;
      bool changed = false;
      for (const auto& v : values) {
        const ptq::TensorQuant* from = cand.second->find(v);
        if (!from || !m.find(v)) continue;
        for (auto& kv : m.tensors)
          if (kv.first == v || kv.second.shared_from == v) {
            kv.second.params = from->params;
            changed = true;
          }
      }
      if (!changed) continue;
      // int32 biases scale with their input's scale: recompute those that read a replaced value.
      bool fits = true;
      for (auto& kv : m.tensors) {
        ptq::TensorQuant& t = kv.second;
        if (t.role != ptq::TensorRole::bias) continue;
        const ptq::TensorQuant* in = m.find(t.input);
        const ptq::TensorQuant* w = m.find(t.weight);
        if (!in || !w) continue;
        t = ptq::bias_quant(*in, *w, t.node, t.input, t.weight);
        try {
          (void)ptq::quantize_initializer(m.graph.initializers.at(kv.first), t, kv.first);
        } catch (const Error&) {
          fits = false;  // the bias would not fit int32 with this input scale
        }
      }
      if (!fits) continue;
      const double c = session.measure(m).cosine;
      choice.cosine[cand.first] = c;
      if (c > best) {
        best = c;
        best_model = std::move(m);
        choice.chosen = cand.first;
      }
    }
    r.model = std::move(best_model);
    r.final_cosine = best;
    r.choices.push_back(std::move(choice));
  }
  return r;
}

}  // namespace analysis
}  // namespace quantkit
