// MovingAverageMinMaxObserver: exponential moving averages of each batch's minimum and maximum,
// per tensor, per channel (any axis) or per block — PyTorch's MovingAverageMinMaxObserver and
// MovingAveragePerChannelMinMaxObserver, bit for bit:
//   first batch:  min = min(X),  max = max(X)
//   then:         min = min + c * (min(X) - min),  max = max + c * (max(X) - max)
// in float32, c rounded to float32 (PyTorch's default c = 0.01).
//
// A channel that saw no finite value in a batch (IgnoreNonFinite) keeps its averages for that
// batch. Merging is ordered — a.merge(b) is "a's batches, then b's" — and uses
//   merged = b + (1 - c)^n_b * (a - first_b)
// (b's averages, its batch count n_b and its first batch's range first_b), which is exact in
// real arithmetic; in float32 it differs from observing the batches one by one by the
// rounding of the sequential updates (tested: within 8 float32 ulps of the largest |value|).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/observer/detail/batch.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {

struct MovingAverageOptions {
  double averaging_constant = 0.01;  // c in (0, 1]
};

class MovingAverageMinMaxObserver {
 public:
  using category = quantkit::category::observer;
  static constexpr const char* kind_name = "moving_average_minmax";

  using Options = MovingAverageOptions;

  // Per slot: the averages, the first batch's range and how many batches updated it.
  struct Slot {
    Range average;
    Range first;
    std::int64_t batches = 0;
  };
  using State = std::vector<Slot>;

  explicit MovingAverageMinMaxObserver(ObserverConfig config = {}, Options options = {})
      : config_(std::move(config)), options_(options) {
    if (!(options_.averaging_constant > 0.0 && options_.averaging_constant <= 1.0))
      detail::fail(detail::describe_tensor(config_.name), ": averaging constant ",
                   options_.averaging_constant, "; expected a value in (0, 1]");
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
    const detail::BatchStats s = detail::batch_stats(v, layout, config_, slots_.size());
    if (slots_.empty()) slots_.assign(s.ranges.size(), Slot{});
    const float c = static_cast<float>(options_.averaging_constant);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const Range& cur = s.ranges[i];
      if (cur.empty()) continue;
      Slot& sl = slots_[i];
      if (sl.batches == 0) {
        sl.average = cur;
        sl.first = cur;
      } else {
        sl.average.min = step(sl.average.min, cur.min, c);
        sl.average.max = step(sl.average.max, cur.max, c);
      }
      ++sl.batches;
    }
  }

  // a.merge(b): a's batches followed by b's.
  void merge(const MovingAverageMinMaxObserver& other) {
    detail::expect_same_granularity(config_, other.config_);
    if (other.options_.averaging_constant != options_.averaging_constant)
      detail::fail(detail::describe_tensor(config_.name),
                   ": cannot merge a moving average with constant ",
                   other.options_.averaging_constant, " into one with ",
                   options_.averaging_constant, "; expected the same constant");
    if (other.empty()) return;
    if (empty()) {
      slots_ = other.slots_;
      return;
    }
    detail::expect_same_slots(config_, slots_.size(), other.slots_.size());
    const double keep = 1.0 - static_cast<double>(static_cast<float>(options_.averaging_constant));
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      Slot& a = slots_[i];
      const Slot& b = other.slots_[i];
      if (b.batches == 0) continue;
      if (a.batches == 0) {
        a = b;
        continue;
      }
      const double decay = std::pow(keep, static_cast<double>(b.batches));
      a.average.min = static_cast<float>(static_cast<double>(b.average.min) +
                                         decay * (static_cast<double>(a.average.min) - b.first.min));
      a.average.max = static_cast<float>(static_cast<double>(b.average.max) +
                                         decay * (static_cast<double>(a.average.max) - b.first.max));
      a.batches += b.batches;
    }
  }

  std::vector<Range> ranges(const QuantTarget& = {}) const {
    if (slots_.empty()) detail::fail_nothing_observed(config_.name);
    std::vector<Range> r(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].batches == 0) detail::fail_slot_empty(config_.name, i);
      r[i] = slots_[i].average;
    }
    return r;
  }

  const State& state() const { return slots_; }
  void restore(State s) { slots_ = std::move(s); }

 private:
  // PyTorch: m + c * (x - m), each operation rounded to float32.
  static float step(float m, float x, float c) {
    const float d = x - m;
    const float cd = detail::kernels::rounded(c * d);
    return m + cd;
  }

  ObserverConfig config_;
  Options options_;
  State slots_;
};

}  // namespace quantkit
