// HistogramObserver: PyTorch's HistogramObserver (torch/ao/quantization/observer.py, 1.13),
// per tensor, per channel (any axis) or per block.
//
// State per slot: a float32 histogram of `bins` bins over [min, max]. A batch inside the range
// is added bin by bin; a batch that widens it follows PyTorch: the range grows to
// [min', max' + e] (e makes it a whole number of old bins / upsample_rate, _adjust_min_max),
// the batch is binned there (torch.histc) and the old histogram is re-binned into it by
// upsampling x upsample_rate and downsampling (_combine_histograms). ranges() runs PyTorch's
// L2-norm non-linear search (_non_linear_param_search: alpha/beta steps of 1e-5 over the
// cumulative histogram, stop at the first increase of the L2 quantization error against
// 2^bits destination bins — `levels() + 1` of the target's format range).
// All of it replicates PyTorch's float32/float64 arithmetic step by step, so scales agree with
// PyTorch to float rounding of its summation order (tested: 1e-6 relative).
//
// Two behaviours of PyTorch 1.13 are bugs; Options::torch_1_13 reproduces them for parity:
//  - it bins with torch.histc(x, min=int(min), max=int(max)): bounds truncated to integers,
//    values outside them dropped, and when both truncate to the same integer the batch's own
//    min/max are used instead of the observer's;
//  - a state whose min == max (a constant first batch) is thrown away by the next batch.
// By default (torch_1_13 = false) the histogram uses the real bounds, and a constant state is
// kept as a point mass: the next batch's range is widened to include it and its count lands in
// the bin of that value.
//
// Degenerate cases: a constant tensor gives the range [c, c]; all zeros [0, 0] (compute_qparams
// then gives scale = float32 eps with the PyTorch convention, 1 with the others).
//
// Merging a.merge(b): with the same [min, max] the histograms add exactly. Otherwise the merged
// range is grown from a's as if b's data came as one batch (the same _adjust_min_max), a's
// histogram is re-binned exactly as PyTorch would, and b's — whose data is no longer there —
// is spread over the new bins by overlap (uniform density inside each of b's bins); counts are
// conserved. Bound (default mode, tested): at every bin edge of the merged histogram, the
// cumulative count differs from observing a's then b's batches one by one (that histogram read
// with uniform density inside its bins) by at most the count within two merged bins of the edge
// (observed: <= 0.8 of it). PyTorch's own re-binning rounds through float32 and is not exactly
// count-conserving (~1e-4 relative). In torch_1_13 mode each stream drops the values outside
// its own integer bounds, so there is no such bound.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/observer/detail/batch.hpp"
#include "quantkit/observer/detail/kernels.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace torch_histogram {

// Python's floor division of floats as ATen computes it (c10 div_floor_floating).
inline float div_floor(float a, float b) {
  if (b == 0.0f) return a / b;
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) div -= 1.0f;
  if (div == 0.0f) return std::copysign(0.0f, a / b);
  float f = std::floor(div);
  if (div - f > 0.5f) f += 1.0f;
  return f;
}

// torch.sum of a contiguous float32 vector on the CPU: ATen's cascade sum (SumKernel.cpp) as
// its AVX2 kernel runs it — 8-lane vectors summed 4 rows at a time in levels of 16, then the
// lanes in order. The summation order decides the last bits, and the L2 search compares sums.
namespace detail_sum {
inline std::int64_t ceil_log2(std::int64_t x) {
  if (x <= 2) return 1;
  std::int64_t v = x - 1, r = 0;
  while (v >>= 1) ++r;  // index of the highest set bit of x - 1
  return r + 1;
}
// multi_row_sum<acc, 4 rows>: element (i, k) of a (size x 4) array given by at(i, k).
template <class Acc, class At>
void multi_row_sum(std::int64_t size, At&& at, Acc (&out)[4]) {
  constexpr int levels = 4;
  const std::int64_t level_power = std::max<std::int64_t>(4, ceil_log2(size) / levels);
  const std::int64_t level_step = std::int64_t{1} << level_power;
  const std::int64_t level_mask = level_step - 1;
  Acc acc[levels][4] = {};
  std::int64_t i = 0;
  for (; i + level_step <= size;) {
    for (std::int64_t j = 0; j < level_step; ++j, ++i)
      for (int k = 0; k < 4; ++k) acc[0][k] += at(i, k);
    for (int j = 1; j < levels; ++j) {
      for (int k = 0; k < 4; ++k) {
        acc[j][k] += acc[j - 1][k];
        acc[j - 1][k] = Acc{};
      }
      if ((i & (level_mask << (j * level_power))) != 0) break;
    }
  }
  for (; i < size; ++i)
    for (int k = 0; k < 4; ++k) acc[0][k] += at(i, k);
  for (int j = 1; j < levels; ++j)
    for (int k = 0; k < 4; ++k) acc[0][k] += acc[j][k];
  for (int k = 0; k < 4; ++k) out[k] = acc[0][k];
}
struct Vec8 {
  float v[8] = {};
  Vec8& operator+=(const Vec8& o) {
    for (int l = 0; l < 8; ++l) v[l] += o.v[l];
    return *this;
  }
};
}  // namespace detail_sum

inline float sum(const float* x, std::int64_t n) {
  using detail_sum::Vec8;
  float result = 0.0f;
  if (n >= 8) {  // vectorized_inner_sum
    const std::int64_t vec_size = n / 8;
    const std::int64_t size_ilp = vec_size / 4;
    Vec8 partial[4];
    detail_sum::multi_row_sum<Vec8>(
        size_ilp,
        [&](std::int64_t i, int k) {
          Vec8 r;
          for (int l = 0; l < 8; ++l) r.v[l] = x[(i * 4 + k) * 8 + l];
          return r;
        },
        partial);
    for (std::int64_t i = size_ilp * 4; i < vec_size; ++i) {
      Vec8 r;
      for (int l = 0; l < 8; ++l) r.v[l] = x[i * 8 + l];
      partial[0] += r;
    }
    for (int k = 1; k < 4; ++k) partial[0] += partial[k];
    float acc = 0.0f;
    for (std::int64_t k = vec_size * 8; k < n; ++k) acc += x[k];
    for (int l = 0; l < 8; ++l) acc += partial[0].v[l];
    result += acc;
  } else {  // scalar_inner_sum: row_sum with ilp 4
    const std::int64_t size_ilp = n / 4;
    float partial[4];
    detail_sum::multi_row_sum<float>(
        size_ilp, [&](std::int64_t i, int k) { return x[i * 4 + k]; }, partial);
    for (std::int64_t i = size_ilp * 4; i < n; ++i) partial[0] += x[i];
    for (int k = 1; k < 4; ++k) partial[0] += partial[k];
    result += partial[0];
  }
  return result;
}
inline float sum(const std::vector<float>& v) {
  return sum(v.data(), static_cast<std::int64_t>(v.size()));
}

// HistogramObserver._compute_quantization_error, float32 like PyTorch.
inline double quantization_error(const std::vector<float>& hist, float min_val, float max_val,
                                 std::int64_t start_bin, std::int64_t end_bin,
                                 std::int64_t dst_nbins) {
  const auto bins = static_cast<std::int64_t>(hist.size());
  const double bin_width_d =
      (static_cast<double>(max_val) - static_cast<double>(min_val)) / static_cast<double>(bins);
  const double dst_width_d = bin_width_d * static_cast<double>(end_bin - start_bin + 1) /
                             static_cast<double>(dst_nbins);
  if (dst_width_d == 0.0) return 0.0;
  const float bw = static_cast<float>(bin_width_d);
  const float dbw = static_cast<float>(dst_width_d);
  const float half = static_cast<float>(dst_width_d / 2);
  const float neg_half = static_cast<float>(-dst_width_d / 2);
  const float last = static_cast<float>(dst_nbins - 1);
  using detail::kernels::rounded;
  // (half^3 - neg_half^3) / 3, the norm of one whole destination bin per unit density
  const float whole = rounded(rounded(rounded(half * half) * half) -
                              rounded(rounded(neg_half * neg_half) * neg_half)) / 3.0f;
  std::vector<float> norm(static_cast<std::size_t>(bins));
  for (std::int64_t k = 0; k < bins; ++k) {
    const float begin = rounded(static_cast<float>(k - start_bin) * bw);
    const float end = begin + bw;
    const float dob = std::min(std::max(div_floor(begin, dbw), 0.0f), last);
    const float dob_center = (dob + 0.5f) * dbw;
    const float doe = std::min(std::max(div_floor(end, dbw), 0.0f), last);
    const float density = hist[static_cast<std::size_t>(k)] / bw;
    // norm of [begin - dob_center, +half]
    const float db = begin - dob_center;
    float n = density * (rounded(rounded(rounded(half * half) * half) -
                                 rounded(rounded(db * db) * db)) / 3.0f);
    // whole destination bins in between
    n = n + rounded((doe - dob - 1.0f) * rounded(density * whole));
    // norm of [-half, end - doe_center]
    const float doe_center = rounded(doe * dbw) + half;
    const float de = end - doe_center;
    n = n + rounded(density * (rounded(rounded(rounded(de * de) * de) -
                                       rounded(rounded(neg_half * neg_half) * neg_half)) / 3.0f));
    norm[static_cast<std::size_t>(k)] = n;
  }
  return static_cast<double>(sum(norm));
}

// HistogramObserver._non_linear_param_search in PyTorch's float32 arithmetic (l2_search below).
inline Range l2_search_float32(const std::vector<float>& hist, float min_val, float max_val,
                               std::int64_t dst_nbins) {
  const auto bins = static_cast<std::int64_t>(hist.size());
  const float bin_width = (max_val - min_val) / static_cast<float>(bins);
  const double total = static_cast<double>(sum(hist));
  std::vector<float> csum(hist.size());
  double acc = 0.0;
  for (std::size_t i = 0; i < hist.size(); ++i) {
    acc += static_cast<double>(hist[i]);
    csum[i] = static_cast<float>(acc);
  }
  const double stepsize = 1e-5;
  double alpha = 0.0, beta = 1.0;
  std::int64_t start_bin = 0, end_bin = bins - 1;
  double norm_min = std::numeric_limits<double>::infinity();
  while (alpha < beta) {
    const double next_alpha = alpha + stepsize;
    const double next_beta = beta - stepsize;
    // cSum[l] < next_alpha * total compares in float32 (the Python float becomes a float32)
    const float lo_thr = static_cast<float>(next_alpha * total);
    const float hi_thr = static_cast<float>(next_beta * total);
    // first l in [start_bin, end_bin) with csum[l] >= lo_thr, else end_bin (csum is monotone)
    std::int64_t l = std::lower_bound(csum.begin() + start_bin, csum.begin() + end_bin, lo_thr) -
                     csum.begin();
    // last r in (start_bin, end_bin] with csum[r] <= hi_thr, else start_bin
    std::int64_t r = (std::upper_bound(csum.begin() + start_bin + 1, csum.begin() + end_bin + 1,
                                       hi_thr) - csum.begin()) - 1;
    if (r < start_bin + 1) r = start_bin;
    std::int64_t next_start = start_bin, next_end = end_bin;
    if ((l - start_bin) > (end_bin - r)) {
      next_start = l;
      alpha = next_alpha;
    } else {
      next_end = r;
      beta = next_beta;
    }
    if (next_start == start_bin && next_end == end_bin) continue;
    const double norm = quantization_error(hist, min_val, max_val, next_start, next_end, dst_nbins);
    if (norm > norm_min) break;
    norm_min = norm;
    start_bin = next_start;
    end_bin = next_end;
  }
  using detail::kernels::rounded;
  const float new_min = min_val + rounded(bin_width * static_cast<float>(start_bin));
  const float new_max = min_val + rounded(bin_width * static_cast<float>(end_bin + 1));
  return Range{new_min, new_max};
}

// HistogramObserver._non_linear_param_search: the [new_min, new_max] it returns. PyTorch cubes
// offsets of up to the histogram's width in float32: past a width of ~7e12 they overflow (the
// empty bins' norms become 0 * inf = NaN) and below ~1e-16 they underflow to 0; either way its
// search then narrows the range to one bin (PyTorch 1.13 does so). Every step is homogeneous in
// the width, so outside [2^-32, 2^32] the search runs on the range scaled by a power of two, which
// is exact, and its result is scaled back: what PyTorch's arithmetic gives when nothing
// overflows. Inside that band nothing is scaled (bit parity with PyTorch).
inline Range l2_search(const std::vector<float>& hist, float min_val, float max_val,
                       std::int64_t dst_nbins) {
  const double width = static_cast<double>(max_val) - static_cast<double>(min_val);
  if (width > 0.0 && (width > 0x1p32 || width < 0x1p-32)) {
    const int e = std::ilogb(width);
    const Range r = l2_search_float32(hist, std::ldexp(min_val, -e), std::ldexp(max_val, -e), dst_nbins);
    return Range{std::ldexp(r.min, e), std::ldexp(r.max, e)};
  }
  return l2_search_float32(hist, min_val, max_val, dst_nbins);
}

// _adjust_min_max: the grown range and how the old histogram maps into it. PyTorch upsamples the
// old histogram into bins * downsample_rate floats; past kMaxDownsampleRate (the old range under
// ~2^-33 of the grown one: PyTorch would need 2^40 * bins floats, and int64 positions overflow)
// `ok` is false and the caller spreads the old counts by overlap instead.
struct Adjusted {
  float min = 0.0f, max = 0.0f;
  std::int64_t downsample_rate = 1;
  std::int64_t start_idx = 0;
  bool ok = true;
};
inline constexpr double kMaxDownsampleRate = 0x1p40;
inline Adjusted adjust_min_max(float min_val, float max_val, float combined_min, float combined_max,
                               std::int64_t bins, std::int64_t upsample_rate) {
  using detail::kernels::rounded;
  const float hist_bin_width = (max_val - min_val) / static_cast<float>(bins * upsample_rate);
  const float grid = rounded(static_cast<float>(bins) * hist_bin_width);
  const float span = combined_max - combined_min;
  const float ratio = std::ceil(span / grid);
  Adjusted a;
  if (!(static_cast<double>(ratio) <= kMaxDownsampleRate)) {  // also inf / NaN (grid 0)
    a.ok = false;
    a.min = combined_min;
    a.max = combined_max;
    return a;
  }
  a.downsample_rate = static_cast<std::int64_t>(ratio);
  const float e = rounded(static_cast<float>(a.downsample_rate) * grid) - span;
  a.min = combined_min;
  a.max = combined_max + e;
  a.start_idx = static_cast<std::int64_t>(
      std::nearbyint((min_val - combined_min) / hist_bin_width));  // torch.round: half to even
  return a;
}

// _combine_histograms(new_hist, old_hist, ...): old_hist (over the old range) re-binned into
// the grown range and added to new_hist. PyTorch materializes the upsampled histogram
// (bins * downsample_rate floats) and takes a float64 cumulative sum; the same prefix sums are
// computed here bin by bin without it.
inline void combine(std::vector<float>& new_hist, const std::vector<float>& old_hist,
                    std::int64_t upsample_rate, const Adjusted& a) {
  const auto bins = static_cast<std::int64_t>(old_hist.size());
  const std::int64_t total_len = bins * a.downsample_rate;
  // positions [first(b), last(b)) of old bin b in the upsampled array, clipped to it
  auto first = [&](std::int64_t b) {
    return std::clamp<std::int64_t>(a.start_idx + b * upsample_rate, 0, total_len);
  };
  auto last = [&](std::int64_t b) {
    return std::clamp<std::int64_t>(a.start_idx + (b + 1) * upsample_rate, 0, total_len);
  };
  double full = 0.0;  // bins entirely below the current position
  std::int64_t b = 0;
  double previous = 0.0;
  for (std::int64_t k = 0; k < bins; ++k) {
    const std::int64_t p = (k + 1) * a.downsample_rate;  // integral[k] sums positions < p
    while (b < bins && last(b) <= p) {
      full += static_cast<double>(old_hist[static_cast<std::size_t>(b)]) *
              static_cast<double>(last(b) - first(b));
      ++b;
    }
    double integral = full;
    if (b < bins && p > first(b))
      integral += static_cast<double>(old_hist[static_cast<std::size_t>(b)]) *
                  static_cast<double>(p - first(b));
    // shifted_integral_histogram is a float32 tensor: the previous integral is rounded
    const double shifted = static_cast<double>(static_cast<float>(previous));
    const double interpolated = (integral - shifted) / static_cast<double>(upsample_rate);
    new_hist[static_cast<std::size_t>(k)] += static_cast<float>(interpolated);
    previous = integral;
  }
}

}  // namespace torch_histogram

struct HistogramOptions {
  int bins = 2048;
  int upsample_rate = 128;
  bool torch_1_13 = false;  // reproduce PyTorch 1.13's integer histc bounds and reset
};

class HistogramObserver {
 public:
  using category = quantkit::category::observer;
  static constexpr const char* kind_name = "histogram";

  using Options = HistogramOptions;

  // Per slot: [min, max] (min > max until observed) and `bins` float32 counts.
  struct Slot {
    float min = std::numeric_limits<float>::infinity();
    float max = -std::numeric_limits<float>::infinity();
    std::vector<float> histogram;
    bool observed() const { return !histogram.empty(); }
  };
  using State = std::vector<Slot>;

  explicit HistogramObserver(ObserverConfig config = {}, Options options = {})
      : config_(std::move(config)), options_(options) {
    if (options_.bins < 2 || options_.upsample_rate < 1)
      detail::fail(detail::describe_tensor(config_.name), ": histogram with ", options_.bins,
                   " bins and upsample rate ", options_.upsample_rate,
                   "; expected at least 2 bins and a rate >= 1");
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
    const std::size_t n = s.ranges.size();
    const auto bins = static_cast<std::size_t>(options_.bins);

    // Where each slot bins this batch.
    std::vector<Plan> plans(n);
    for (std::size_t i = 0; i < n; ++i)
      plans[i] = plan(i < slots_.size() ? slots_[i] : Slot{}, s.ranges[i], i, n);

    // torch.histc of the batch, per slot (point masses counted separately).
    std::vector<std::uint64_t> counts(n * bins, 0u);
    std::vector<std::uint64_t> points(n, 0u);
    detail::for_each_run(v, layout, [&](std::int64_t slot, const T* p, std::int64_t m, std::int64_t stride) {
      const auto si = static_cast<std::size_t>(slot);
      const Plan& pl = plans[si];
      if (pl.action == Action::skip) return;
      if (pl.histc_lo == pl.histc_hi) {  // all finite values of the slot equal one point
        for (std::int64_t j = 0; j < m; ++j)
          if (std::isfinite(static_cast<float>(p[j * stride]))) ++points[si];
        return;
      }
      detail::kernels::histc(p, m, stride, pl.histc_lo, pl.histc_hi, options_.bins,
                             counts.data() + si * bins);
    });

    if (slots_.empty()) slots_.assign(n, Slot{});
    for (std::size_t i = 0; i < n; ++i)
      apply(slots_[i], plans[i], counts.data() + i * bins, points[i]);
  }

 private:
  // One settled per-tensor slot and a contiguous float batch: the batch is binned with the
  // bounds it gets if it stays inside the slot's range, in the same SIMD pass that finds its
  // min/max (simd::histogram_minmax). If the plan from the real min/max bins with other bounds
  // (the range grows, or torch_1_13's integer bounds move), those counts are dropped and the
  // batch is binned again as observe() always does; either way the result is the same as the
  // two passes (batch_stats, then histc). Returns false when it does not apply.
  template <int R>
  bool observe_in_one_pass(const View<const float, R>& v, const ParamLayout& layout) {
    if (!(slots_.size() == 1 && slots_[0].observed() && v.is_contiguous() &&
          layout.kind() == GranularityKind::per_tensor && v.size() >= 64 &&
          detail::kernels::simd_reductions()))
      return false;
    Slot& slot = slots_[0];
    if (slot.min == slot.max) return false;
    const Plan guess = plan(slot, Range{slot.min, slot.max}, 0, 1);
    if (guess.action != Action::add_same || !(guess.histc_lo < guess.histc_hi) ||
        !std::isfinite(guess.histc_lo) || !std::isfinite(guess.histc_hi) ||
        detail::kernels::histc_wide(guess.histc_lo, guess.histc_hi, options_.bins))
      return false;
    detail::expect_batch_layout(v, layout, config_, slots_.size());
    const auto bins = static_cast<std::size_t>(options_.bins);
    std::vector<std::uint64_t> counts(bins, 0u);
    simd::MinMaxResult mm;
    simd::histogram_minmax(v.data(), static_cast<std::size_t>(v.size()), guess.histc_lo, guess.histc_hi,
                           bins, counts.data(), &mm);
    if (mm.nonfinite != 0 && config_.nonfinite == NonFiniteKind::reject)
      detail::fail_nonfinite(v, detail::batch_name(v, config_));
    const Range batch = mm.finite != 0 ? Range{mm.min, mm.max} : Range{};
    const Plan p = plan(slot, batch, 0, 1);
    if (p.action == Action::skip) return true;
    if (!(p.histc_lo == guess.histc_lo && p.histc_hi == guess.histc_hi)) {
      std::fill(counts.begin(), counts.end(), std::uint64_t{0});
      if (p.histc_lo == p.histc_hi) {  // (not reached from a settled slot; as observe() does)
        std::uint64_t points = 0;
        for (std::int64_t j = 0; j < v.size(); ++j)
          if (std::isfinite(v.data()[j])) ++points;
        apply(slot, p, counts.data(), points);
        return true;
      }
      detail::kernels::histc(v.data(), v.size(), std::int64_t{1}, p.histc_lo, p.histc_hi, options_.bins,
                             counts.data());
    }
    apply(slot, p, counts.data(), 0u);
    return true;
  }

 public:

  // a.merge(b): as if b's data had come after a's (see the header comment for the bound).
  void merge(const HistogramObserver& other) {
    detail::expect_same_granularity(config_, other.config_);
    if (other.options_.bins != options_.bins || other.options_.upsample_rate != options_.upsample_rate ||
        other.options_.torch_1_13 != options_.torch_1_13)
      detail::fail(detail::describe_tensor(config_.name), ": cannot merge a histogram of ",
                   other.options_.bins, " bins (upsample ", other.options_.upsample_rate,
                   other.options_.torch_1_13 ? ", torch 1.13 mode" : "", ") into one of ",
                   options_.bins, " bins (upsample ", options_.upsample_rate,
                   options_.torch_1_13 ? ", torch 1.13 mode" : "",
                   "); expected the same bins and mode");
    if (other.empty()) return;
    if (empty()) {
      slots_ = other.slots_;
      return;
    }
    detail::expect_same_slots(config_, slots_.size(), other.slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i)  // all checked first: no half-merged state
      if (slots_[i].observed() && other.slots_[i].observed())
        expect_finite_width(std::min(slots_[i].min, other.slots_[i].min),
                            std::max(slots_[i].max, other.slots_[i].max), i, slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) merge_slot(slots_[i], other.slots_[i]);
  }

  std::vector<Range> ranges(const QuantTarget& target = {}) const {
    if (slots_.empty()) detail::fail_nothing_observed(config_.name);
    const std::int64_t dst_nbins = target.range.levels() + 1;
    std::vector<Range> r(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      if (!s.observed()) detail::fail_slot_empty(config_.name, i);
      r[i] = torch_histogram::l2_search(s.histogram, s.min, s.max, dst_nbins);
    }
    return r;
  }

  const State& state() const { return slots_; }
  void restore(State s) {
    for (const auto& sl : s)
      if (sl.observed() && (sl.histogram.size() != static_cast<std::size_t>(options_.bins) ||
                            !(sl.min <= sl.max) || !std::isfinite(sl.max - sl.min)))
        detail::fail(detail::describe_tensor(config_.name), ": histogram state with ",
                     sl.histogram.size(), " bins over [", sl.min, ", ", sl.max,
                     "]; expected ", options_.bins,
                     " bins over a range with min <= max and a finite float32 width");
    slots_ = std::move(s);
  }

 private:
  // point_grow: the old state is one point (default mode); spread: its range is too narrow
  // for PyTorch's re-binning (Adjusted::ok false), its counts are spread by overlap.
  enum class Action { skip, init, add_same, combine, point_grow, spread };
  struct Plan {
    Action action = Action::skip;
    float histc_lo = 0.0f, histc_hi = 0.0f;  // the bounds histc bins this batch with
    float new_min = 0.0f, new_max = 0.0f;    // the slot's range afterwards
    torch_histogram::Adjusted adjusted;
  };

  // torch.histc's choice of outer edges for min/max arguments lo/hi (doubles) and a batch
  // with range `batch`: the data's own range when lo == hi, then +-1 when still equal.
  static void histc_edges(double lo, double hi, const Range& batch, float& out_lo, float& out_hi) {
    if (lo == hi) {
      lo = batch.min;
      hi = batch.max;
    }
    if (lo == hi) {
      lo -= 1.0;
      hi += 1.0;
    }
    out_lo = static_cast<float>(lo);
    out_hi = static_cast<float>(hi);
  }
  void bounds(float lo, float hi, const Range& batch, Plan& p) const {
    if (options_.torch_1_13)  // int(min_val), int(max_val): truncation toward zero
      histc_edges(std::trunc(static_cast<double>(lo)), std::trunc(static_cast<double>(hi)), batch,
                  p.histc_lo, p.histc_hi);
    else {
      p.histc_lo = lo;
      p.histc_hi = hi;
    }
  }

  // A range whose width overflows float32 has no bins (nor a scale): refused, naming the slot.
  void expect_finite_width(float lo, float hi, std::size_t slot, std::size_t slots) const {
    if (std::isfinite(hi - lo)) return;
    const std::string where = slots > 1 ? " channel/block " + std::to_string(slot) : std::string();
    detail::fail(detail::describe_tensor(config_.name), where, ": histogram range would be [", lo,
                 ", ", hi, "], wider than the largest float32 (", std::numeric_limits<float>::max(),
                 "); expected values whose max - min fits a float (clip the data: no float32 "
                 "scale covers such a range either)");
  }

  Plan plan(const Slot& s, const Range& batch, std::size_t slot, std::size_t slots) const {
    Plan p = plan_unchecked(s, batch);
    if (p.action != Action::skip) expect_finite_width(p.new_min, p.new_max, slot, slots);
    return p;
  }
  Plan plan_unchecked(const Slot& s, const Range& batch) const {
    Plan p;
    if (batch.empty()) return p;  // nothing finite for this slot in this batch
    const bool point_state = s.observed() && s.min == s.max;
    if (!s.observed() || (point_state && options_.torch_1_13)) {
      p.action = Action::init;
      p.new_min = batch.min;
      p.new_max = batch.max;
      bounds(batch.min, batch.max, batch, p);
      return p;
    }
    const float cmin = std::min(batch.min, s.min);
    const float cmax = std::max(batch.max, s.max);
    if (point_state) {  // default mode: grow a point mass without PyTorch's rescaling
      p.action = Action::point_grow;
      p.new_min = cmin;
      p.new_max = cmax;
      p.histc_lo = cmin;
      p.histc_hi = cmax;
      return p;
    }
    if (!std::isfinite(cmax - cmin)) {  // refused by plan(); adjust_min_max would overflow
      p.action = Action::init;
      p.new_min = cmin;
      p.new_max = cmax;
      return p;
    }
    p.adjusted = torch_histogram::adjust_min_max(s.min, s.max, cmin, cmax, options_.bins,
                                                 options_.upsample_rate);
    if (!p.adjusted.ok) {
      p.action = Action::spread;
      p.new_min = p.histc_lo = cmin;
      p.new_max = p.histc_hi = cmax;
      return p;
    }
    p.new_min = p.adjusted.min;
    p.new_max = p.adjusted.max;
    p.action = (p.adjusted.min == s.min && p.adjusted.max == s.max) ? Action::add_same
                                                                     : Action::combine;
    bounds(p.adjusted.min, p.adjusted.max, batch, p);
    return p;
  }

  // float32 counts as histc accumulates them (compat mode: PyTorch's float increments stop at
  // 2^24 per bin).
  float to_count(std::uint64_t c) const {
    if (options_.torch_1_13 && c > (std::uint64_t{1} << 24)) c = std::uint64_t{1} << 24;
    return static_cast<float>(c);
  }

  void apply(Slot& s, const Plan& p, const std::uint64_t* counts, std::uint64_t points) const {
    if (p.action == Action::skip) return;
    const auto bins = static_cast<std::size_t>(options_.bins);
    std::vector<float> h(bins);
    for (std::size_t k = 0; k < bins; ++k) h[k] = to_count(counts[k]);
    // Default mode: a batch whose values are all one point (histc_lo == histc_hi) is a point
    // mass, kept in bin 0. (In torch_1_13 mode histc's own +-1 edges apply instead.)
    if (points != 0) h[0] += to_count(points);
    switch (p.action) {
      case Action::init: break;
      case Action::add_same:
        for (std::size_t k = 0; k < bins; ++k) h[k] += s.histogram[k];
        break;
      case Action::combine:
        torch_histogram::combine(h, s.histogram, options_.upsample_rate, p.adjusted);
        break;
      case Action::point_grow: {
        double old_total = 0.0;
        for (float c : s.histogram) old_total += static_cast<double>(c);
        h[static_cast<std::size_t>(torch_bin_of(s.min, p.new_min, p.new_max))] +=
            static_cast<float>(old_total);
        break;
      }
      case Action::spread: {
        std::vector<double> acc(bins, 0.0);
        rebin_into(s, p.new_min, p.new_max, acc);
        for (std::size_t k = 0; k < bins; ++k) h[k] += static_cast<float>(acc[k]);
        break;
      }
      case Action::skip: break;
    }
    s.histogram = std::move(h);
    s.min = p.new_min;
    s.max = p.new_max;
  }

  std::int64_t torch_bin_of(float v, float lo, float hi) const {
    if (lo == hi) return 0;
    const std::int64_t b = detail::kernels::histc_bin(v, lo, hi, options_.bins);
    return b < 0 ? 0 : b;
  }

  // Spreads `src` (bins over [smin, smax]) over `dst` (bins over [dmin, dmax]) by overlap.
  void rebin_into(const Slot& src, float dmin, float dmax, std::vector<double>& dst) const {
    const auto bins = static_cast<std::int64_t>(options_.bins);
    if (src.min == src.max) {
      double total = 0.0;
      for (float c : src.histogram) total += static_cast<double>(c);
      dst[static_cast<std::size_t>(torch_bin_of(src.min, dmin, dmax))] += total;
      return;
    }
    const double sw = (static_cast<double>(src.max) - src.min) / static_cast<double>(bins);
    const double dw = (static_cast<double>(dmax) - dmin) / static_cast<double>(bins);
    std::vector<double> share;
    for (std::int64_t j = 0; j < bins; ++j) {
      const double c = src.histogram[static_cast<std::size_t>(j)];
      if (c == 0.0) continue;
      const double a = src.min + sw * static_cast<double>(j), b = a + sw;
      const auto k0 = std::clamp<std::int64_t>(
          static_cast<std::int64_t>(std::floor((a - dmin) / dw)), 0, bins - 1);
      const auto k1 = std::clamp<std::int64_t>(
          static_cast<std::int64_t>(std::floor((b - dmin) / dw)), k0, bins - 1);
      if (k0 == k1) {
        dst[static_cast<std::size_t>(k0)] += c;
        continue;
      }
      share.assign(static_cast<std::size_t>(k1 - k0 + 1), 0.0);
      double sum = 0.0;
      for (std::int64_t k = k0; k <= k1; ++k) {
        const double lo = std::max(a, dmin + dw * static_cast<double>(k));
        const double hi = std::min(b, dmin + dw * static_cast<double>(k + 1));
        sum += share[static_cast<std::size_t>(k - k0)] = std::max(0.0, hi - lo);
      }
      for (std::int64_t k = k0; k <= k1; ++k)
        dst[static_cast<std::size_t>(k)] +=
            sum > 0.0 ? c * share[static_cast<std::size_t>(k - k0)] / sum : (k == k0 ? c : 0.0);
    }
  }

  void merge_slot(Slot& a, const Slot& b) const {
    if (!b.observed()) return;
    if (!a.observed()) {
      a = b;
      return;
    }
    const auto bins = static_cast<std::size_t>(options_.bins);
    if (a.min == b.min && a.max == b.max) {
      for (std::size_t k = 0; k < bins; ++k) a.histogram[k] += b.histogram[k];
      return;
    }
    const float cmin = std::min(a.min, b.min), cmax = std::max(a.max, b.max);  // checked by merge()
    std::vector<float> h(bins, 0.0f);
    float new_min = cmin, new_max = cmax;
    const auto adj = torch_histogram::adjust_min_max(a.min, a.max, cmin, cmax, options_.bins,
                                                     options_.upsample_rate);
    if (a.min == a.max || !adj.ok) {
      std::vector<double> acc(bins, 0.0);
      rebin_into(a, cmin, cmax, acc);
      for (std::size_t k = 0; k < bins; ++k) h[k] = static_cast<float>(acc[k]);
    } else {
      new_min = adj.min;
      new_max = adj.max;
      if (adj.min == a.min && adj.max == a.max)
        h = a.histogram;
      else
        torch_histogram::combine(h, a.histogram, options_.upsample_rate, adj);
    }
    std::vector<double> acc(bins, 0.0);
    rebin_into(b, new_min, new_max, acc);
    for (std::size_t k = 0; k < bins; ++k) h[k] += static_cast<float>(acc[k]);
    a.histogram = std::move(h);
    a.min = new_min;
    a.max = new_max;
  }

  ObserverConfig config_;
  Options options_;
  State slots_;
};

}  // namespace quantkit
