// Whole-model calibration for `quantize` (and run/eval/compare on a float model with --calib):
// GraphCalibrator with the observer --observer names, fed the calibration .npy in batches;
// --observer mix and quantize --auto-mixed (quantkit/analysis/mixed_precision.hpp) on top.
#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "observers.hpp"
#include "quantkit/analysis/mixed_precision.hpp"
#include "quantkit/ptq.hpp"

namespace quantkit {
namespace cli {

namespace {

struct CalibrationData {
  TensorMap data;
  std::vector<ptq::TensorMap> batches;
  std::int64_t samples = 0;
};

CalibrationData load_calibration(const graph::Graph& model, const QuantOptions& o) {
  const std::int64_t batch = parse_int("--batch", o.batch, 1, std::int64_t{1} << 40);
  if (o.calib.empty()) usage_fail("--calib: no calibration data given; expected --calib CALIB.npy");
  CalibrationData c;
  c.data = read_inputs("--calib", o.calib, model);
  std::int64_t samples = -1;
  std::string first;
  for (const auto& kv : c.data) {
    const graph::Tensor& t = kv.second;
    if (t.rank() < 1 || t.dim(0) < 1)
      quantkit::detail::fail("--calib: data for input '", kv.first, "' has shape ", t.shape().to_string(),
                             "; expected at least one sample along the first axis");
    if (samples >= 0 && t.dim(0) != samples)
      quantkit::detail::fail("--calib: input '", kv.first, "' has ", t.dim(0), " samples, input '", first, "' has ",
                             samples, "; expected the same number of samples for every input");
    samples = t.dim(0);
    first = kv.first;
  }
  c.samples = samples;
  for (std::int64_t start = 0; start < samples; start += batch) {
    const std::int64_t rows = std::min(batch, samples - start);
    ptq::TensorMap b;
    for (const auto& kv : c.data) b.emplace(kv.first, slice_rows(kv.second, start, rows));
    c.batches.push_back(std::move(b));
  }
  return c;
}

// The first mix_samples rows of the calibration data (what --observer mix and --auto-mixed measure on).
TensorMap measure_samples(const CalibrationData& c) {
  TensorMap out;
  for (const auto& kv : c.data) out.emplace(kv.first, slice_rows(kv.second, 0, std::min(mix_samples, c.samples)));
  return out;
}

ptq::QuantizedModel calibrate_with(const graph::Graph& model, const ptq::PtqConfig& cfg, const ObserverSpec& spec,
                                   const CalibrationData& data, const QuantOptions& o) {
  auto progress = std::make_unique<Progress>("calibrating", o.progress || stderr_is_terminal());
  return with_observer(spec, [&](auto tag, auto options) {
    using Observer = typename decltype(tag)::type;
    ptq::GraphCalibrator<Observer> cal(model, cfg, options);
    cal.observe(data.batches, [&](std::size_t done, std::size_t total) { progress->update(done, total); });
    progress.reset();
    // AdaRound and bias correction need the batches again; their bar follows calibration's.
    const bool remedies = cfg.adaround.enabled() || cfg.bias_correction;
    std::unique_ptr<Progress> remedy_bar;
    std::string stage;
    ptq::QuantizedModel qm =
        remedies ? cal.finish(data.batches,
                              [&](const ptq::RemedyProgress& p) {
                                if (!remedy_bar || stage != p.stage) {
                                  remedy_bar.reset();  // ends the previous stage's line
                                  stage = p.stage;
                                  remedy_bar = std::make_unique<Progress>(stage, o.progress || stderr_is_terminal());
                                }
                                remedy_bar->update(p.step, p.steps);
                              })
                 : cal.finish();
    qm.observer = spec.text;
    return qm;
  });
}

// --observer mix: KL everywhere, then max or percentile 99.995 for the sensitive nodes.
ptq::QuantizedModel calibrate_mix(const graph::Graph& model, const ptq::PtqConfig& cfg, const CalibrationData& data,
                                  const QuantOptions& o) {
  const ptq::QuantizedModel kl = calibrate_with(model, cfg, parse_observer("--observer", "kl"), data, o);
  const ptq::QuantizedModel mx = calibrate_with(model, cfg, parse_observer("--observer", "minmax"), data, o);
  const ptq::QuantizedModel pc = calibrate_with(model, cfg, parse_observer("--observer", "percentile:99.995"), data, o);
  const analysis::MixResult r =
      analysis::mix_activation_calibration(kl, {{"max", &mx}, {"percentile:99.995", &pc}}, measure_samples(data), 0.999);
  ptq::QuantizedModel qm = r.model;
  qm.observer = "mix";
  qm.notes.push_back(fmt::format("observer mix: kl everywhere: output cosine {:.6f} on {} calibration samples; {} "
                                 "node(s) sensitive (alone under 0.999){}",
                                 r.base_cosine, std::min(mix_samples, data.samples), r.choices.size(),
                                 r.choices.empty() ? "" : fmt::format("; after the choices: {:.6f}", r.final_cosine)));
  for (const auto& c : r.choices) {
    std::string tried;
    for (const auto& kv : c.cosine) tried += fmt::format("{}{} {:.6f}", tried.empty() ? "" : ", ", kv.first, kv.second);
    qm.notes.push_back(fmt::format("observer mix: node '{}' (alone {:.6f}): {} -> {}", c.node, c.alone_cosine, tried,
                                   c.chosen));
  }
  return qm;
}

}  // namespace

ptq::QuantizedModel calibrate_model(const graph::Graph& model, const QuantOptions& o, std::int64_t* samples_out) {
  const ptq::PtqConfig cfg = make_config(o, model);
  const ObserverSpec spec = parse_observer("--observer", o.observer);
  const CalibrationData data = load_calibration(model, o);
  if (samples_out) *samples_out = data.samples;
  if (spec.kind == ObserverKind::mix) return calibrate_mix(model, cfg, data, o);
  return calibrate_with(model, cfg, spec, data, o);
}

ptq::QuantizedModel calibrate_auto_mixed(const graph::Graph& model, const QuantOptions& o, double target,
                                         AutoMixedReport& report, std::int64_t* samples_out) {
  const ptq::PtqConfig cfg = make_config(o, model);
  const ObserverSpec spec = parse_observer("--observer", o.observer);
  const CalibrationData data = load_calibration(model, o);
  if (samples_out) *samples_out = data.samples;
  const analysis::Calibrate calibrate = [&](const ptq::PtqConfig& c) {
    return spec.kind == ObserverKind::mix ? calibrate_mix(model, c, data, o) : calibrate_with(model, c, spec, data, o);
  };
  analysis::AutoMixedResult r = analysis::auto_mixed_precision(cfg, calibrate, measure_samples(data), target);
  report.target = r.target;
  report.initial_cosine = r.initial_cosine;
  report.final_cosine = r.final_cosine;
  report.reached = r.reached;
  report.samples = std::min(mix_samples, data.samples);
  for (const auto& s : r.steps) report.steps.push_back({s.node, s.action, s.cosine});
  report.int16_nodes = r.config.int16_nodes;
  report.keep_float = r.config.keep_float;
  ptq::QuantizedModel qm = std::move(r.model);
  qm.notes.push_back(fmt::format("auto mixed precision: output cosine {:.6f} -> {:.6f} (target {}, {} on {} "
                                 "calibration samples) in {} step(s)",
                                 report.initial_cosine, report.final_cosine, target,
                                 report.reached ? "reached" : "NOT reached", report.samples, report.steps.size()));
  return qm;
}

namespace {
template <class O, class = void>
struct has_explain : std::false_type {};
template <class O>
struct has_explain<O, std::void_t<decltype(std::declval<const O&>().explain(QuantTarget{}))>> : std::true_type {};
}  // namespace

TensorCalibration observe_tensor(const graph::Tensor& t, const ObserverSpec& spec, Granularity granularity,
                                 const QuantTarget& target, std::int64_t batch) {
  TensorCalibration out;
  with_observer(spec, [&](auto tag, auto options) {
    using Observer = typename decltype(tag)::type;
    Observer obs(ObserverConfig{granularity, NonFiniteKind::reject, t.name()}, options);
    const std::int64_t rows = t.rank() > 0 ? t.dim(0) : 1;
    for (std::int64_t start = 0; start < rows; start += batch) {
      const graph::Tensor b = t.rank() > 0 ? slice_rows(t, start, std::min(batch, rows - start)) : t;
      obs.observe(b.view<float>());
    }
    if constexpr (has_explain<Observer>::value) {
      for (const auto& c : obs.explain(target)) {
        out.ranges.push_back(c.range);
        out.methods.push_back(c.method);
      }
    } else {
      out.ranges = obs.ranges(target);
    }
  });
  return out;
}

}  // namespace cli
}  // namespace quantkit
