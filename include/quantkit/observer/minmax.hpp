// MinMaxObserver: the running minimum and maximum, per tensor, per channel or per block
// (PyTorch's MinMaxObserver / PerChannelMinMaxObserver).
// Merging two observers gives exactly the observer that saw both streams.
// A batch is checked as a whole before anything is recorded: an error (NaN/Inf with
// RejectNonFinite, an empty batch, a channel count that changed) leaves the observer as it was.
#pragma once

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

class MinMaxObserver {
 public:
  using category = quantkit::category::observer;
  struct Options {};
  static constexpr const char* kind_name = "minmax";

  explicit MinMaxObserver(ObserverConfig config = {}, Options = {}) : config_(std::move(config)) {}

  const ObserverConfig& config() const { return config_; }
  Options options() const { return {}; }
  bool empty() const { return ranges_.empty(); }
  void reset() { ranges_.clear(); }

  // One batch (a View of any element type; const or not).
  template <class E, int R>
  void observe(const View<E, R>& batch) {
    using T = std::remove_const_t<E>;
    const View<const T, R> v(batch);
    detail::expect_nonempty_batch(v, config_);
    const ParamLayout layout(v.shape(), config_.granularity, detail::batch_name(v, config_));
    detail::BatchStats s = detail::batch_stats(v, layout, config_, ranges_.size());
    if (ranges_.empty()) {
      ranges_ = std::move(s.ranges);
      return;
    }
    for (std::size_t i = 0; i < ranges_.size(); ++i) ranges_[i].include(s.ranges[i]);
  }

  void merge(const MinMaxObserver& other) {
    detail::expect_same_granularity(config_, other.config_);
    if (other.empty()) return;
    if (empty()) {
      ranges_ = other.ranges_;
      return;
    }
    detail::expect_same_slots(config_, ranges_.size(), other.ranges_.size());
    for (std::size_t i = 0; i < ranges_.size(); ++i) ranges_[i].include(other.ranges_[i]);
  }

  // The observed ranges; channels that saw no finite value are an error naming them.
  std::vector<Range> ranges(const QuantTarget& = {}) const {
    if (ranges_.empty()) detail::fail_nothing_observed(config_.name);
    for (std::size_t i = 0; i < ranges_.size(); ++i)
      if (ranges_[i].empty()) detail::fail_slot_empty(config_.name, i);
    return ranges_;
  }

  // Raw state, for serialization and tests: one range per slot (empty() where nothing finite
  // was seen), no entries before the first batch.
  using State = std::vector<Range>;
  const State& state() const { return ranges_; }
  void restore(State s) { ranges_ = std::move(s); }

 private:
  ObserverConfig config_;
  std::vector<Range> ranges_;
};

}  // namespace quantkit
