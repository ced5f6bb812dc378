// Percentile clipping on a histogram density (see RangeMethod): abs — the p-quantile t of |x|,
// range [-t, t] within [min, max] (Horizon's max-percentile); two-sided — the (1-p)/2 and
// 1-(1-p)/2 quantiles of x (ONNX Runtime's Percentile). Quantiles interpolate linearly inside a
// bin, so they are exact for data uniform within bins and within one bin width otherwise.
#pragma once

#include <algorithm>

#include "quantkit/observer/methods/density.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/observer/range_method.hpp"

namespace quantkit {
namespace methods {

inline PercentileSide resolve_side(PercentileSide side, const QuantTarget& t) {
  if (side != PercentileSide::by_target) return side;
  return t.symmetry == SymmetryKind::affine ? PercentileSide::two_sided : PercentileSide::abs;
}

inline Range percentile_range(const Density& d, double p, PercentileSide side, const QuantTarget& t) {
  if (d.constant()) return Range{d.min, d.max};
  if (resolve_side(side, t) == PercentileSide::abs) {
    const double th = quantile(folded(d), p);
    return clip_to_data(d, -th, th);
  }
  const double cut = (1.0 - p) / 2.0;
  auto lo = static_cast<float>(quantile(d, cut));
  auto hi = static_cast<float>(quantile(d, 1.0 - cut));
  lo = std::clamp(lo, d.min, d.max);
  hi = std::clamp(hi, lo, d.max);
  return Range{lo, hi};
}

}  // namespace methods
}  // namespace quantkit
