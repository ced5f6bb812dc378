// DistributionObserver<Tag>: per slot (tensor, channel or block) a GridHistogram plus the
// exact min, max and count — the streaming, exactly mergeable statistics behind the percentile,
// KL, MSE and auto observers and behind calibration profiles. Which range ranges() returns is
// the Options' RangeMethod (see range_method.hpp); any other method can be asked for with
// ranges(target, method), and explain() tells what was chosen and why.
//
// Memory: `bins` 64-bit counts per slot (32 KiB for the default 4096), whatever was observed.
// Merge: exact — a.merge(b) equals the observer that saw a's and b's batches (any order).
// Degenerate input: a constant slot gives [c, c] with every method (all zeros: [0, 0], which
// compute_qparams turns into a finite scale: float32 eps with the PyTorch convention, 1 with
// the others); NaN/Inf reject with the index or, with IgnoreNonFinite, are skipped; a slot
// that saw no finite value makes ranges() fail naming it.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/observer/detail/batch.hpp"
#include "quantkit/observer/grid_histogram.hpp"
#include "quantkit/observer/methods/select.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/observer/range_method.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {

template <class Tag>
struct DistributionOptions {
  int bins = 4096;
  RangeMethod method = Tag::default_method();
};

template <class Tag>
class DistributionObserver {
 public:
  using category = quantkit::category::observer;
  using Options = DistributionOptions<Tag>;
  using State = std::vector<GridHistogram>;  // one per slot; empty before the first batch
  static constexpr const char* kind_name = Tag::name;

  explicit DistributionObserver(ObserverConfig config = {}, Options options = {})
      : config_(std::move(config)), options_(std::move(options)) {
    if (const int b = options_.bins; b < 2 || b > (1 << 24))
      detail::fail(detail::describe_tensor(config_.name), ": ", kind_name, " observer with ",
                   options_.bins, " bins; expected 2 .. 2^24 bins");
    options_.method.validate(detail::describe_tensor(config_.name));
  }

  const ObserverConfig& config() const { return config_; }
  const Options& options() const { return options_; }
  bool empty() const { return slots_.empty(); }
  void reset() { slots_.clear(); }

  // One batch (a View of any element type; const or not).
  template <class E, int R>
  void observe(const View<E, R>& batch) {
    using T = std::remove_const_t<E>;
    const View<const T, R> v(batch);
    detail::expect_nonempty_batch(v, config_);
    const ParamLayout layout(v.shape(), config_.granularity, detail::batch_name(v, config_));
    if constexpr (std::is_same_v<T, float>) {
      if (observe_in_one_pass(v, layout)) return;
    }
    const detail::BatchStats s = detail::batch_stats(v, layout, config_, slots_.size());
    if (slots_.empty()) slots_.assign(s.ranges.size(), GridHistogram(options_.bins));
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (!s.ranges[i].empty()) slots_[i].prepare(s.ranges[i].min, s.ranges[i].max);
    detail::for_each_run(v, layout, [&](std::int64_t slot, const T* p, std::int64_t n, std::int64_t stride) {
      slots_[static_cast<std::size_t>(slot)].add(p, n, stride, s.nonfinite);
    });
  }

  void merge(const DistributionObserver& other) {
    detail::expect_same_granularity(config_, other.config_);
    if (other.options_.bins != options_.bins)
      detail::fail(detail::describe_tensor(config_.name), ": cannot merge a ", kind_name,
                   " observer of ", other.options_.bins, " bins into one of ", options_.bins,
                   "; expected the same bin count");
    if (other.empty()) return;
    if (empty()) {
      slots_ = other.slots_;
      return;
    }
    detail::expect_same_slots(config_, slots_.size(), other.slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) slots_[i].merge(other.slots_[i]);
  }

  // The ranges of the configured method.
  std::vector<Range> ranges(const QuantTarget& target = {}) const { return ranges(target, options_.method); }
  // The ranges any method gives on the same statistics.
  std::vector<Range> ranges(const QuantTarget& target, const RangeMethod& method) const {
    std::vector<Range> r;
    for (const auto& c : explain(target, method)) r.push_back(c.range);
    return r;
  }
  // Per slot: the range, the method that produced it and (automatic) every candidate's score.
  std::vector<RangeChoice> explain(const QuantTarget& target = {}) const { return explain(target, options_.method); }
  std::vector<RangeChoice> explain(const QuantTarget& target, const RangeMethod& method) const {
    method.validate(detail::describe_tensor(config_.name));
    if (slots_.empty()) detail::fail_nothing_observed(config_.name);
    std::vector<RangeChoice> out;
    out.reserve(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].empty()) detail::fail_slot_empty(config_.name, i);
      out.push_back(methods::choose_range(slots_[i], method, target));
    }
    return out;
  }

  const State& state() const { return slots_; }
  void restore(State s) {
    for (const auto& h : s)
      if (h.bins() != options_.bins)
        detail::fail(detail::describe_tensor(config_.name), ": ", kind_name, " state with ", h.bins(),
                     " bins; this observer has ", options_.bins);
    slots_ = std::move(s);
  }

 private:
  // One observed per-tensor slot and a contiguous float batch: the batch is binned on the
  // slot's current grid in the same SIMD pass that finds its min/max
  // (simd::grid_histogram_minmax). When that range lies inside the slot's, prepare() would
  // keep the grid (it is the grid of [min(), max()]) and add() would bin the batch the same way,
  // so the counts are added as they are; otherwise they are dropped and the batch goes through
  // prepare() and add() with that range, as observe() always does. Either way the result is
  // that of batch_stats, prepare and add. Returns false when it does not apply.
  template <int R>
  bool observe_in_one_pass(const View<const float, R>& v, const ParamLayout& layout) {
    if (!(slots_.size() == 1 && !slots_[0].empty() && v.is_contiguous() &&
          layout.kind() == GranularityKind::per_tensor && v.size() >= 64 &&
          detail::kernels::simd_reductions()))
      return false;
    detail::expect_batch_layout(v, layout, config_, slots_.size());
    GridHistogram& h = slots_[0];
    const auto n = static_cast<std::size_t>(v.size());
    const float inv_width = static_cast<float>(std::ldexp(1.0, -h.exponent()));
    std::vector<std::uint64_t> counts(static_cast<std::size_t>(h.bins()), 0u);
    simd::MinMaxResult mm;
    simd::grid_histogram_minmax(v.data(), n, inv_width, h.base(), counts.size(), counts.data(), &mm);
    if (mm.nonfinite != 0 && config_.nonfinite == NonFiniteKind::reject)
      detail::fail_nonfinite(v, detail::batch_name(v, config_));
    if (mm.finite == 0) return true;  // (batch_stats: an empty range; add() adds nothing)
    if (mm.min >= h.min() && mm.max <= h.max()) {
      h.add_binned(counts.data(), mm.finite);
    } else {
      h.prepare(mm.min, mm.max);
      h.add(v.data(), v.size(), 1, mm.nonfinite != 0);
    }
    return true;
  }

  ObserverConfig config_;
  Options options_;
  State slots_;
};

namespace observer_tags {
struct statistics {
  static constexpr const char* name = "statistics";
  static RangeMethod default_method() { return RangeMethod::minmax(); }
};
}  // namespace observer_tags

// Raw statistics (min/max + histogram) for calibration profiles; ranges() gives min-max unless
// another method is configured or asked for.
using StatisticsObserver = DistributionObserver<observer_tags::statistics>;

}  // namespace quantkit
