// Walking one batch by parameter slot (tensor, channel or block) and the first pass every
// observer makes over it: per-slot ranges, with NaN/Inf rejected (naming the index) or
// skipped. Not part of the public API.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/observer/detail/kernels.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/params.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace detail {

// Calls f(slot, pointer, count, stride) for runs of elements that share a parameter slot,
// covering every element once. Contiguous per-tensor batches are one run; contiguous
// per-channel batches are runs of the extent after the axis; anything else (strided views,
// per-group) goes element by element.
template <class T, int R, class F>
void for_each_run(const View<const T, R>& v, const ParamLayout& layout, F&& f) {
  if (v.size() == 0) return;
  if (v.is_contiguous()) {
    if (layout.kind() == GranularityKind::per_tensor) {
      f(std::int64_t{0}, v.data(), v.size(), std::int64_t{1});
      return;
    }
    if (layout.kind() == GranularityKind::per_channel) {
      const int axis = layout.axis();
      std::int64_t outer = 1, inner = 1;
      for (int d = 0; d < axis; ++d) outer *= v.extent(d);
      for (int d = axis + 1; d < v.rank(); ++d) inner *= v.extent(d);
      const std::int64_t channels = v.extent(axis);
      const T* p = v.data();
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t c = 0; c < channels; ++c, p += inner) f(c, p, inner, std::int64_t{1});
      return;
    }
  }
  for_each_index(v, [&](std::int64_t off, const Dims& idx) {
    f(layout.index(idx), v.data() + off, std::int64_t{1}, std::int64_t{1});
  });
}

// The tensor name errors use: the view's, else the observer's.
template <class T, int R>
const std::string& batch_name(const View<const T, R>& v, const ObserverConfig& config) {
  return v.name().empty() ? config.name : v.name();
}

// Throws naming the first non-finite element of v (row-major order) and its index.
template <class T, int R>
[[noreturn]] void fail_nonfinite(const View<const T, R>& v, const std::string& name) {
  bool found = false;
  float value = 0.0f;
  Dims where;
  for_each_index(v, [&](std::int64_t off, const Dims& idx) {
    if (found) return;
    const float x = static_cast<float>(v.data()[off]);
    if (!std::isfinite(x)) {
      found = true;
      value = x;
      where = idx;
    }
  });
  fail(describe_tensor(name), ": found ", value, " at index ", where.to_string(),
       "; expected finite values (IgnoreNonFinite skips them)");
}

// What the first pass over a batch found.
struct BatchStats {
  std::vector<Range> ranges;  // per slot; empty() where the slot saw no finite value
  bool nonfinite = false;     // some value was skipped (only with NonFiniteKind::ignore)
};

// The slot count checks batch_stats starts with: at least one slot, and `expected_slots`
// unless 0.
template <class T, int R>
void expect_batch_layout(const View<const T, R>& v, const ParamLayout& layout,
                         const ObserverConfig& config, std::size_t expected_slots) {
  const std::string& name = batch_name(v, config);
  if (layout.count() <= 0)
    fail(describe_tensor(name), ": batch of shape ", v.shape().to_string(), " has no ",
         config.granularity.to_string(), " channels/blocks; expected at least one");
  if (expected_slots != 0 && static_cast<std::int64_t>(expected_slots) != layout.count())
    fail(describe_tensor(name), ": batch of shape ", v.shape().to_string(), " has ",
         layout.count(), " channels/blocks for ", config.granularity.to_string(),
         "; earlier batches had ", expected_slots);
}

// Validates the batch (not empty, same slot count as `expected_slots` unless 0) and returns
// per-slot ranges. With NonFiniteKind::reject a NaN/Inf throws naming its index; nothing has
// been modified when it does.
template <class T, int R>
BatchStats batch_stats(const View<const T, R>& v, const ParamLayout& layout,
                       const ObserverConfig& config, std::size_t expected_slots) {
  expect_batch_layout(v, layout, config, expected_slots);
  const std::string& name = batch_name(v, config);
  BatchStats s;
  s.ranges.assign(static_cast<std::size_t>(layout.count()), Range{});
  if constexpr (std::is_same_v<T, float>) {
    // Per channel / per block / strided float batches: one SIMD pass over the whole view.
    if (!(v.is_contiguous() && layout.kind() == GranularityKind::per_tensor) &&
        kernels::simd_reductions()) {
      std::vector<float> mn(s.ranges.size(), std::numeric_limits<float>::infinity());
      std::vector<float> mx(s.ranges.size(), -std::numeric_limits<float>::infinity());
      const std::size_t skipped = simd::minmax_per_param(v, config.granularity, mn.data(), mx.data());
      if (skipped != 0) {
        if (config.nonfinite == NonFiniteKind::reject) fail_nonfinite(v, name);
        s.nonfinite = true;
      }
      for (std::size_t i = 0; i < s.ranges.size(); ++i) s.ranges[i] = Range{mn[i], mx[i]};
      return s;
    }
  }
  bool finite = true;
  for_each_run(v, layout, [&](std::int64_t slot, const T* p, std::int64_t n, std::int64_t stride) {
    Range& r = s.ranges[static_cast<std::size_t>(slot)];
    if (!kernels::minmax(p, n, stride, r.min, r.max)) finite = false;
  });
  if (!finite) {
    if (config.nonfinite == NonFiniteKind::reject) fail_nonfinite(v, name);
    // Recompute over the finite values only.
    s.nonfinite = true;
    for (auto& r : s.ranges) r = Range{};
    for_each_run(v, layout, [&](std::int64_t slot, const T* p, std::int64_t n, std::int64_t stride) {
      Range& r = s.ranges[static_cast<std::size_t>(slot)];
      kernels::minmax_finite(p, n, stride, r.min, r.max);
    });
  }
  return s;
}

// The checks every observe() starts with.
template <class T, int R>
void expect_nonempty_batch(const View<const T, R>& v, const ObserverConfig& config) {
  if (v.size() == 0)
    fail(describe_tensor(batch_name(v, config)), ": empty batch (shape ", v.shape().to_string(),
         "); expected at least one element");
}

// "cannot merge ..." errors shared by the observers.
inline void expect_same_granularity(const ObserverConfig& mine, const ObserverConfig& theirs) {
  if (mine.granularity != theirs.granularity)
    fail(describe_tensor(mine.name), ": cannot merge a ", theirs.granularity.to_string(),
         " observer into a ", mine.granularity.to_string(), " one; expected the same granularity");
}
inline void expect_same_slots(const ObserverConfig& mine, std::size_t have, std::size_t theirs) {
  if (have != theirs)
    fail(describe_tensor(mine.name), ": cannot merge an observer of ", theirs,
         " channels into one of ", have);
}
[[noreturn]] inline void fail_nothing_observed(const std::string& name) {
  fail(describe_tensor(name), ": no data observed; expected observe() before computing parameters");
}
[[noreturn]] inline void fail_slot_empty(const std::string& name, std::size_t slot) {
  fail(describe_tensor(name), ": channel/block ", slot, " saw no finite value; expected at least one");
}

}  // namespace detail
}  // namespace quantkit
