// MinMaxObserver: the running minimum and maximum, per tensor, per channel or per block.
// Merging two observers gives exactly the observer that saw both streams.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {

class MinMaxObserver {
 public:
  using category = quantkit::category::observer;

  explicit MinMaxObserver(ObserverConfig config = {}) : config_(std::move(config)) {}

  const ObserverConfig& config() const { return config_; }
  bool empty() const { return ranges_.empty(); }
  void reset() { ranges_.clear(); }

  template <class T, int R>
  void observe(const View<const T, R>& v) {
    const std::string& name = v.name().empty() ? config_.name : v.name();
    if (v.size() == 0)
      detail::fail(detail::describe_tensor(name), ": empty batch (shape ", v.shape().to_string(),
                   "); expected at least one element");
    const ParamLayout layout(v.shape(), config_.granularity, name);
    if (ranges_.empty()) {
      ranges_.assign(static_cast<std::size_t>(layout.count()), Range{});
    } else if (static_cast<std::int64_t>(ranges_.size()) != layout.count()) {
      detail::fail(detail::describe_tensor(name), ": batch of shape ", v.shape().to_string(),
                   " has ", layout.count(), " channels/blocks for ", config_.granularity.to_string(),
                   "; earlier batches had ", ranges_.size());
    }
    const bool reject = config_.nonfinite == NonFiniteKind::reject;
    for_each_index(v, [&](std::int64_t off, const Dims& idx) {
      const float x = static_cast<float>(v.data()[off]);
      if (!std::isfinite(x)) {
        if (reject)
          detail::fail(detail::describe_tensor(name), ": found ", x, " at index ", idx.to_string(),
                       "; expected finite values (IgnoreNonFinite skips them)");
        return;
      }
      ranges_[static_cast<std::size_t>(layout.index(idx))].include(x);
    });
  }

  void merge(const MinMaxObserver& other) {
    if (other.config_.granularity != config_.granularity)
      detail::fail(detail::describe_tensor(config_.name), ": cannot merge a ",
                   other.config_.granularity.to_string(), " observer into a ",
                   config_.granularity.to_string(), " one; expected the same granularity");
    if (other.empty()) return;
    if (empty()) {
      ranges_ = other.ranges_;
      return;
    }
    if (other.ranges_.size() != ranges_.size())
      detail::fail(detail::describe_tensor(config_.name), ": cannot merge an observer of ",
                   other.ranges_.size(), " channels into one of ", ranges_.size());
    for (std::size_t i = 0; i < ranges_.size(); ++i) ranges_[i].include(other.ranges_[i]);
  }

  // The observed ranges; channels that saw no finite value are an error naming them.
  std::vector<Range> ranges(const QuantTarget& = {}) const {
    if (ranges_.empty())
      detail::fail(detail::describe_tensor(config_.name),
                   ": no data observed; expected observe() before computing parameters");
    for (std::size_t i = 0; i < ranges_.size(); ++i)
      if (ranges_[i].empty())
        detail::fail(detail::describe_tensor(config_.name), ": channel/block ", i,
                     " saw no finite value; expected at least one");
    return ranges_;
  }

  // Raw state, for serialization and tests.
  const std::vector<Range>& state() const { return ranges_; }

 private:
  ObserverConfig config_;
  std::vector<Range> ranges_;
};

}  // namespace quantkit
