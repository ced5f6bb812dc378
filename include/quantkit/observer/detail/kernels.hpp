// Reduction and histogram loops the observers run over runs of a batch. Plain C++ written so
// the compiler vectorizes the hot parts (blocks of independent lanes, no early exits); each
// function is a swap point for a SIMD kernel from quantkit/simd/ with the same contract.
// Not part of the public API.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "quantkit/ref/no_contract.hpp"
#include "quantkit/simd/simd.hpp"

namespace quantkit {
namespace detail {
namespace kernels {

// Whether quantkit::simd's reductions run here on vectors (runtime dispatch, or a static target
// wider than scalar emulation); otherwise the plain loops below, which the compiler vectorizes
// for the baseline target, are faster. Both give the same results.
// Tests set plain_reductions_only() to run the plain loops where SIMD kernels are available.
inline bool& plain_reductions_only() {
  static bool only = false;
  return only;
}
inline bool simd_reductions() {
  if (plain_reductions_only()) return false;
  const std::int64_t t = simd::active_kernels().target;
  return t != HWY_SCALAR && t != HWY_EMU128;
}

// Blocks the contiguous loops work on: 16 independent lanes vectorize at any SIMD width.
inline constexpr int kLanes = 16;

// Keeps the compiler from fusing a multiply with a following add (PyTorch's eager ops round
// every step).
inline float rounded(float v) { return no_contract(v); }

// Min and max of n values (stride in elements). Returns false when a NaN or an infinity was
// among them (then mn/mx are not meaningful); otherwise widens [mn, mx] to include them.
template <class T>
bool minmax(const T* p, std::int64_t n, std::int64_t stride, float& mn, float& mx) {
  if constexpr (std::is_same_v<T, float>) {
    if (stride == 1 && n >= 64 && simd_reductions()) {
      const simd::MinMaxResult r = simd::minmax(p, static_cast<std::size_t>(n));
      if (r.finite != 0) {
        mn = std::min(mn, r.min);
        mx = std::max(mx, r.max);
      }
      return r.nonfinite == 0;
    }
  }
  if (stride == 1 && n >= kLanes) {
    float lo[kLanes], hi[kLanes], z[kLanes];
    for (int j = 0; j < kLanes; ++j) {
      lo[j] = std::numeric_limits<float>::infinity();
      hi[j] = -std::numeric_limits<float>::infinity();
      z[j] = 0.0f;
    }
    std::int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) {
        const float v = static_cast<float>(p[i + j]);
        lo[j] = v < lo[j] ? v : lo[j];
        hi[j] = v > hi[j] ? v : hi[j];
        z[j] += v * 0.0f;  // NaN for NaN and +-Inf, +-0 otherwise
      }
    }
    for (; i < n; ++i) {
      const float v = static_cast<float>(p[i]);
      lo[0] = v < lo[0] ? v : lo[0];
      hi[0] = v > hi[0] ? v : hi[0];
      z[0] += v * 0.0f;
    }
    float zs = 0.0f;
    for (int j = 0; j < kLanes; ++j) {
      zs += z[j];
      mn = std::min(mn, lo[j]);
      mx = std::max(mx, hi[j]);
    }
    return zs == 0.0f;
  }
  bool finite = true;
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(p[i * stride]);
    if (!std::isfinite(v)) finite = false;
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  return finite;
}

// Min and max of the finite values among n (NaN and +-Inf skipped).
template <class T>
void minmax_finite(const T* p, std::int64_t n, std::int64_t stride, float& mn, float& mx) {
  if constexpr (std::is_same_v<T, float>) {
    if (stride == 1 && n >= 64 && simd_reductions()) {
      const simd::MinMaxResult r = simd::minmax(p, static_cast<std::size_t>(n));
      if (r.finite != 0) {
        mn = std::min(mn, r.min);
        mx = std::max(mx, r.max);
      }
      return;
    }
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(p[i * stride]);
    if (!std::isfinite(v)) continue;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
  }
}

// floor(v * inv_width) for a power-of-two inv_width (the product is exact unless it
// underflows, where the sign of v still decides).
inline std::int64_t grid_index(float v, float inv_width) {
  const float t = v * inv_width;
  auto i = static_cast<std::int64_t>(t);
  if (t < static_cast<float>(i) || (v < 0.0f && t == 0.0f)) --i;
  return i;
}

// Power-of-two grid histogram: counts[grid_index(v) - base] += 1 for each value. Every value
// must lie in the histogram's range, bins [0, bins) (the observer widened it first);
// non-finite values are skipped when skip_nonfinite, and must not occur otherwise.
template <class T, class Count>
void grid_histogram(const T* p, std::int64_t n, std::int64_t stride, float inv_width,
                    std::int64_t base, std::int64_t bins, Count* counts, bool skip_nonfinite) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Count, std::uint64_t>) {
    // (the kernel skips non-finite values either way; without skip_nonfinite there are none)
    if (stride == 1 && n >= 64 && simd_reductions()) {
      simd::grid_histogram(p, static_cast<std::size_t>(n), inv_width, base, static_cast<std::size_t>(bins), counts);
      return;
    }
  }
  if (skip_nonfinite) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(p[i * stride]);
      if (std::isfinite(v)) ++counts[grid_index(v, inv_width) - base];
    }
    return;
  }
  if (stride == 1) {
    // Indices for a block first (vectorizable), then the increments.
    constexpr int kBlock = 256;
    std::int32_t idx[kBlock];
    const auto b32 = static_cast<std::int32_t>(base);
    for (std::int64_t i = 0; i < n; i += kBlock) {
      const int m = static_cast<int>(std::min<std::int64_t>(kBlock, n - i));
      for (int j = 0; j < m; ++j) {
        const float v = static_cast<float>(p[i + j]);
        const float t = v * inv_width;
        auto k = static_cast<std::int32_t>(t);
        k -= static_cast<std::int32_t>(t < static_cast<float>(k));
        k -= static_cast<std::int32_t>((v < 0.0f) & (t == 0.0f));
        idx[j] = k - b32;
      }
      for (int j = 0; j < m; ++j) ++counts[idx[j]];
    }
    return;
  }
  for (std::int64_t i = 0; i < n; ++i)
    ++counts[grid_index(static_cast<float>(p[i * stride]), inv_width) - base];
}

// Where (hi - lo) * nbins exceeds the float range, torch.histc's (v - lo) * nbins overflows and
// every value past that point lands in the last bin. Such ranges (over ~1.7e35 wide for 2048
// bins) are binned in double instead: PyTorch has no answer there to match.
inline bool histc_wide(float lo, float hi, std::int64_t nbins) {
  return (static_cast<double>(hi) - static_cast<double>(lo)) * static_cast<double>(nbins) >
         static_cast<double>(std::numeric_limits<float>::max());
}
inline std::int64_t histc_bin_wide(double v, double lo, double hi, std::int64_t nbins) {
  if (!(v >= lo && v <= hi)) return -1;
  auto pos = static_cast<std::int64_t>((v - lo) / (hi - lo) * static_cast<double>(nbins));
  return std::min(pos, nbins - 1);
}

// torch.histc's bin for v (ATen's LINEAR_INTERPOLATION path, float arithmetic):
// pos = int64((v - lo) * nbins / (hi - lo)), the right edge belonging to the last bin;
// -1 for values outside [lo, hi] (and NaN), which histc skips.
inline std::int64_t histc_bin(float v, float lo, float hi, std::int64_t nbins) {
  if (histc_wide(lo, hi, nbins)) return histc_bin_wide(v, lo, hi, nbins);
  if (!(v >= lo && v <= hi)) return -1;
  const float t = (v - lo) * static_cast<float>(nbins) / (hi - lo);
  auto pos = static_cast<std::int64_t>(t);
  if (pos == nbins) pos -= 1;
  return pos;
}

// torch.histc(values, nbins, min=lo, max=hi) added to counts (values outside [lo, hi] and
// non-finite ones are skipped, as histc does).
template <class T, class Count>
void histc(const T* p, std::int64_t n, std::int64_t stride, float lo, float hi, int nbins,
           Count* counts) {
  if (histc_wide(lo, hi, nbins)) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t b = histc_bin_wide(static_cast<float>(p[i * stride]), lo, hi, nbins);
      if (b >= 0) ++counts[b];
    }
    return;
  }
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Count, std::uint64_t>) {
    if (stride == 1 && n >= 64 && simd_reductions()) {
      simd::histogram(p, static_cast<std::size_t>(n), lo, hi, static_cast<std::size_t>(nbins), counts);
      return;
    }
  }
  const float nb = static_cast<float>(nbins);
  const float span = hi - lo;
  if (stride == 1) {
    constexpr int kBlock = 256;
    std::int32_t idx[kBlock];
    for (std::int64_t i = 0; i < n; i += kBlock) {
      const int m = static_cast<int>(std::min<std::int64_t>(kBlock, n - i));
      for (int j = 0; j < m; ++j) {
        const float v = static_cast<float>(p[i + j]);
        const bool in = (v >= lo) & (v <= hi);
        const float t = ((in ? v : lo) - lo) * nb / span;
        auto k = static_cast<std::int32_t>(t);
        k -= static_cast<std::int32_t>(k == nbins);
        idx[j] = in ? k : -1;
      }
      for (int j = 0; j < m; ++j)
        if (idx[j] >= 0) ++counts[idx[j]];
    }
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t b = histc_bin(static_cast<float>(p[i * stride]), lo, hi, nbins);
    if (b >= 0) ++counts[b];
  }
}

}  // namespace kernels
}  // namespace detail
}  // namespace quantkit
