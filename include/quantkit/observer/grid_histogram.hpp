// GridHistogram: the streaming statistics of one tensor/channel that percentile, KL, MSE and
// auto calibration work from — a histogram that merges exactly.
//
// Bins lie on a power-of-two grid: bin j covers [(base + j) * w, (base + j + 1) * w) with
// w = 2^exponent. The grid is a function of the observed range [min, max] alone: w is the
// smallest power of two (not below max(|min|, |max|) * 2^-30, nor 2^-127) for which [min, max]
// spans at most `bins` bins, and base = floor(min / w). When the range grows, w doubles as often
// as needed and old bins fold pairwise into new ones — exactly, since every old bin lies inside
// one new bin. So the histogram after any sequence of batches, in any order, merged in any
// grouping, is exactly the histogram of all the data binned on the grid of its overall range.
// The data spans between bins/2 and bins bins; 0 is always a bin edge, so |x| histograms fold
// exactly. Memory: `bins` 64-bit counts, whatever the amount of data.
//
// Also kept exactly: min, max and the number of values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/observer/detail/kernels.hpp"

namespace quantkit {

class GridHistogram {
 public:
  static constexpr int kMinExponent = -127;  // 2^-exponent must be a normal float

  explicit GridHistogram(int bins = 4096) : bins_(bins) {
    if (bins < 2 || bins > (1 << 24))
      detail::fail("grid histogram with ", bins, " bins; expected 2 .. 2^24 bins");
  }

  int bins() const { return bins_; }
  bool empty() const { return total_ == 0; }
  std::uint64_t total() const { return total_; }
  float min() const { return min_; }
  float max() const { return max_; }
  int exponent() const { return exponent_; }
  std::int64_t base() const { return base_; }
  double width() const { return std::ldexp(1.0, exponent_); }
  // Lower edge of bin j (exact in double).
  double edge(std::int64_t j) const { return std::ldexp(static_cast<double>(base_ + j), exponent_); }
  // bins() counts once something was observed, none before.
  const std::vector<std::uint64_t>& counts() const { return counts_; }

  // The grid (exponent, base) for the range [lo, hi] with `bins` bins.
  static std::pair<int, std::int64_t> grid_for(float lo, float hi, int bins) {
    // floor(log2(x)) for x > 0, exactly (frexp: x = m * 2^k with m in [0.5, 1))
    auto floor_log2 = [](double x) {
      int k = 0;
      std::frexp(x, &k);
      return k - 1;
    };
    const double amax = std::max(std::fabs(static_cast<double>(lo)), std::fabs(static_cast<double>(hi)));
    int e = kMinExponent;
    if (amax > 0.0) {
      // smallest e with 2^e >= amax * 2^-30: ceil(log2(amax)) - 30
      const int f = floor_log2(amax);
      e = std::max(e, (std::ldexp(1.0, f) == amax ? f : f + 1) - 30);
    }
    const double span = static_cast<double>(hi) - static_cast<double>(lo);
    // below floor(log2(span / bins)) the range cannot fit; start just under it
    if (span > 0.0) e = std::max(e, floor_log2(span / bins) - 1);
    for (;; ++e) {
      const double w = std::ldexp(1.0, e);
      const auto a = static_cast<std::int64_t>(std::floor(static_cast<double>(lo) / w));
      const auto b = static_cast<std::int64_t>(std::floor(static_cast<double>(hi) / w));
      if (b - a < bins) return {e, a};
    }
  }

  // Makes room for values in [lo, hi] (finite, lo <= hi) and records them in min/max; the
  // values themselves are added with add() next.
  void prepare(float lo, float hi) {
    if (!(lo <= hi) || !std::isfinite(lo) || !std::isfinite(hi))
      detail::fail("grid histogram: range [", lo, ", ", hi, "]; expected finite min <= max");
    if (counts_.empty()) {
      min_ = lo;
      max_ = hi;
      const auto g = grid_for(lo, hi, bins_);
      exponent_ = g.first;
      base_ = g.second;
      counts_.assign(static_cast<std::size_t>(bins_), 0);
      return;
    }
    regrid(std::min(min_, lo), std::max(max_, hi));
  }

  // Adds n values (stride in elements) that lie in a range prepare() was given. Non-finite
  // values are skipped when skip_nonfinite (and must not occur otherwise).
  template <class T>
  void add(const T* p, std::int64_t n, std::int64_t stride, bool skip_nonfinite) {
    const float inv_width = static_cast<float>(std::ldexp(1.0, -exponent_));
    if (!skip_nonfinite) {
      detail::kernels::grid_histogram(p, n, stride, inv_width, base_, bins_, counts_.data(), false);
      total_ += static_cast<std::uint64_t>(n);
      return;
    }
    std::uint64_t finite = 0;
    for (std::int64_t i = 0; i < n; ++i)
      if (std::isfinite(static_cast<float>(p[i * stride]))) ++finite;
    detail::kernels::grid_histogram(p, n, stride, inv_width, base_, bins_, counts_.data(), true);
    total_ += finite;
  }

  // Adds counts[0..bins) of `values` values binned on the current grid (as add() bins them,
  // e.g. by simd::grid_histogram_minmax) whose range prepare() was given or lies inside
  // [min(), max()]. Nothing was observed yet: no grid to bin on, an error.
  void add_binned(const std::uint64_t* counts, std::uint64_t values) {
    if (counts_.empty()) detail::fail("grid histogram: add_binned before the first range");
    for (std::size_t j = 0; j < counts_.size(); ++j) counts_[j] += counts[j];
    total_ += values;
  }

  // The histogram of both streams, exactly. Both must have the same bin count.
  void merge(const GridHistogram& other) {
    if (other.bins_ != bins_)
      detail::fail("cannot merge a histogram of ", other.bins_, " bins into one of ", bins_,
                   "; expected the same bin count");
    if (other.empty()) return;
    if (empty()) {
      *this = other;
      return;
    }
    regrid(std::min(min_, other.min_), std::max(max_, other.max_));
    const int shift = exponent_ - other.exponent_;  // >= 0: the merged grid is as coarse
    for (std::size_t j = 0; j < other.counts_.size(); ++j) {
      if (other.counts_[j] == 0) continue;
      const std::int64_t g = floor_shift(other.base_ + static_cast<std::int64_t>(j), shift);
      counts_[static_cast<std::size_t>(g - base_)] += other.counts_[j];
    }
    total_ += other.total_;
  }

  // Restores a state written out earlier (serialization); validates it.
  void restore(int exponent, std::int64_t base, float min, float max, std::vector<std::uint64_t> counts) {
    std::uint64_t total = 0;
    for (auto c : counts) total += c;
    if (total == 0) {
      *this = GridHistogram(bins_);
      return;
    }
    const auto g = (min <= max && std::isfinite(min) && std::isfinite(max))
                       ? grid_for(min, max, bins_)
                       : std::pair<int, std::int64_t>{exponent + 1, base};
    if (counts.size() != static_cast<std::size_t>(bins_) || g.first != exponent || g.second != base)
      detail::fail("grid histogram state: ", counts.size(), " bins, exponent ", exponent, ", base ",
                   base, " for range [", min, ", ", max, "]; expected ", bins_,
                   " bins on the grid of that range (exponent ", g.first, ", base ", g.second, ")");
    exponent_ = exponent;
    base_ = base;
    min_ = min;
    max_ = max;
    counts_ = std::move(counts);
    total_ = total;
  }

  friend bool operator==(const GridHistogram& a, const GridHistogram& b) {
    return a.bins_ == b.bins_ && a.total_ == b.total_ && a.counts_ == b.counts_ &&
           (a.empty() || (a.exponent_ == b.exponent_ && a.base_ == b.base_ && a.min_ == b.min_ &&
                          a.max_ == b.max_));
  }

 private:
  // floor(x / 2^s) for |x| < 2^62; s can exceed 63 (a tiny first range, then a huge one).
  static std::int64_t floor_shift(std::int64_t x, int s) {
    if (s >= 62) return x >= 0 ? 0 : -1;
    return s == 0 ? x : (x >= 0 ? (x >> s) : -((-x + (std::int64_t{1} << s) - 1) >> s));
  }

  // Moves to the grid of [lo, hi] (which contains the current range).
  void regrid(float lo, float hi) {
    const auto g = grid_for(lo, hi, bins_);
    min_ = lo;
    max_ = hi;
    if (g.first == exponent_ && g.second == base_) return;
    const int shift = g.first - exponent_;
    std::vector<std::uint64_t> moved(static_cast<std::size_t>(bins_), 0);
    for (std::size_t j = 0; j < counts_.size(); ++j) {
      if (counts_[j] == 0) continue;
      const std::int64_t k = floor_shift(base_ + static_cast<std::int64_t>(j), shift) - g.second;
      moved[static_cast<std::size_t>(k)] += counts_[j];
    }
    counts_ = std::move(moved);
    exponent_ = g.first;
    base_ = g.second;
  }

  int bins_;
  int exponent_ = 0;
  std::int64_t base_ = 0;
  float min_ = std::numeric_limits<float>::infinity();
  float max_ = -std::numeric_limits<float>::infinity();
  std::uint64_t total_ = 0;
  std::vector<std::uint64_t> counts_;
};

}  // namespace quantkit
