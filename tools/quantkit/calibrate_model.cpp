// Whole-model calibration for `quantize` (and run/eval/compare on a float model with --calib):
// GraphCalibrator with the observer --observer names, fed the calibration .npy in batches.
#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "observers.hpp"
#include "quantkit/ptq.hpp"

namespace quantkit {
namespace cli {

ptq::QuantizedModel calibrate_model(const graph::Graph& model, const QuantOptions& o, std::int64_t* samples_out) {
  const ptq::PtqConfig cfg = make_config(o, model);
  const ObserverSpec spec = parse_observer("--observer", o.observer);
  const std::int64_t batch = parse_int("--batch", o.batch, 1, std::int64_t{1} << 40);
  if (o.calib.empty()) usage_fail("--calib: no calibration data given; expected --calib CALIB.npy");
  const TensorMap data = read_inputs("--calib", o.calib, model);

  std::int64_t samples = -1;
  std::string first;
  for (const auto& kv : data) {
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
  if (samples_out) *samples_out = samples;
  std::vector<ptq::TensorMap> batches;
  for (std::int64_t start = 0; start < samples; start += batch) {
    const std::int64_t rows = std::min(batch, samples - start);
    ptq::TensorMap b;
    for (const auto& kv : data) b.emplace(kv.first, slice_rows(kv.second, start, rows));
    batches.push_back(std::move(b));
  }

  auto progress = std::make_unique<Progress>("calibrating", o.progress || stderr_is_terminal());
  return with_observer(spec, [&](auto tag, auto options) {
    using Observer = typename decltype(tag)::type;
    ptq::GraphCalibrator<Observer> cal(model, cfg, options);
    cal.observe(batches, [&](std::size_t done, std::size_t total) { progress->update(done, total); });
    progress.reset();
    // AdaRound and bias correction need the batches again; their bar follows calibration's.
    const bool remedies = cfg.adaround.enabled() || cfg.bias_correction;
    std::unique_ptr<Progress> remedy_bar;
    std::string stage;
    ptq::QuantizedModel qm =
        remedies ? cal.finish(batches,
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
