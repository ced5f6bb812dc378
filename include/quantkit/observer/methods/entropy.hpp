// TensorRT's entropy (KL divergence) calibration, as NVIDIA's pytorch-quantization publishes it
// (calib/histogram.py, _compute_amax_entropy), on a histogram of |x| with equal bins from 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/observer/methods/density.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/observer/range_method.hpp"

namespace quantkit {
namespace methods {

// For each candidate i in [start_bin, bins]:
//   P = hist[0, i) with sum(hist[i, bins)) added to P[i-1]           (outliers folded in)
//   Q = hist[0, i) merged into `levels` groups (bin k in group floor(k * levels / i)), each
//       group's count shared equally among its non-empty bins, empty bins 0
//   divergence[i] = KL(P/|P| || Q/|Q|) = sum over P > 0 of p log(p / q)  (inf where q = 0)
// Returns the i with the smallest divergence (the largest such i on ties). zero_bin_fix first
// sets hist[0] = hist[1]. `divergences` (optional) receives divergence[i] at index i - start_bin.
inline std::int64_t entropy_threshold_bin(std::vector<double> hist, std::int64_t levels,
                                          std::int64_t start_bin, bool zero_bin_fix,
                                          std::vector<double>* divergences = nullptr) {
  const auto bins = static_cast<std::int64_t>(hist.size());
  if (bins < 2 || start_bin < 1 || start_bin > bins || levels < 1)
    detail::fail("entropy calibration on ", bins, " bins from bin ", start_bin, " into ", levels,
                 " levels; expected 2+ bins, 1 <= start bin <= bins and 1+ levels");
  if (zero_bin_fix) hist[0] = hist[1];
  std::vector<double> suffix(static_cast<std::size_t>(bins) + 1, 0.0);
  for (std::int64_t k = bins - 1; k >= 0; --k)
    suffix[static_cast<std::size_t>(k)] = suffix[static_cast<std::size_t>(k + 1)] + hist[static_cast<std::size_t>(k)];
  std::vector<double> group_sum(static_cast<std::size_t>(levels));
  std::vector<std::int64_t> group_nonzero(static_cast<std::size_t>(levels));
  if (divergences) divergences->clear();
  double best = std::numeric_limits<double>::infinity();
  std::int64_t best_i = bins;
  for (std::int64_t i = start_bin; i <= bins; ++i) {
    std::fill(group_sum.begin(), group_sum.end(), 0.0);
    std::fill(group_nonzero.begin(), group_nonzero.end(), 0);
    for (std::int64_t k = 0; k < i; ++k) {
      const double h = hist[static_cast<std::size_t>(k)];
      if (h == 0.0) continue;
      const auto g = static_cast<std::size_t>(k * levels / i);
      group_sum[g] += h;
      ++group_nonzero[g];
    }
    const double outliers = suffix[static_cast<std::size_t>(i)];
    double sum_p = 0.0, sum_q = 0.0;
    for (std::int64_t k = 0; k < i; ++k) {
      const double h = hist[static_cast<std::size_t>(k)];
      sum_p += h + (k == i - 1 ? outliers : 0.0);
      if (h != 0.0) {
        const auto g = static_cast<std::size_t>(k * levels / i);
        sum_q += group_sum[g] / static_cast<double>(group_nonzero[g]);
      }
    }
    double kl = 0.0;
    for (std::int64_t k = 0; k < i; ++k) {
      const double h = hist[static_cast<std::size_t>(k)];
      const double p = (h + (k == i - 1 ? outliers : 0.0)) / sum_p;
      if (!(p > 0.0)) continue;
      double q = 0.0;
      if (h != 0.0) {
        const auto g = static_cast<std::size_t>(k * levels / i);
        q = group_sum[g] / static_cast<double>(group_nonzero[g]) / sum_q;
      }
      if (!(q > 0.0)) {
        kl = std::numeric_limits<double>::infinity();
        break;
      }
      kl += p * std::log(p / q);
    }
    if (divergences) divergences->push_back(kl);
    if (kl <= best) {
      best = kl;
      best_i = i;
    }
  }
  return best_i;
}

// Quantized levels for a target: 2^(bits-1) (128 for 8 bits) when symmetric or the data has
// negative values, else 2^bits.
inline std::int64_t kl_levels(int requested, const QuantTarget& t, const Density& d) {
  if (requested > 0) return requested;
  const std::int64_t codes = t.range.levels() + 1;
  return (t.symmetry != SymmetryKind::affine || d.min < 0.0f) ? std::max<std::int64_t>(1, codes / 2) : codes;
}

// The KL range of a density: threshold t on the resampled |x| histogram, [-t, t] within
// [min, max]. `hist_out` (optional) receives the resampled histogram the search ran on.
inline Range kl_range(const Density& d, const RangeMethod& m, const QuantTarget& t,
                      std::vector<double>* hist_out = nullptr) {
  if (d.constant()) return Range{d.min, d.max};
  const double top = d.amax();
  std::vector<double> h = resample(folded(d), top, m.kl_bins);
  if (hist_out) *hist_out = h;
  const std::int64_t i = entropy_threshold_bin(std::move(h), kl_levels(m.kl_levels, t, d),
                                               m.kl_start_bin, m.kl_zero_bin_fix);
  const double th = top * static_cast<double>(i) / m.kl_bins;
  return clip_to_data(d, -th, th);
}

}  // namespace methods
}  // namespace quantkit
