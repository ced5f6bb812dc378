// MSE clipping: the range whose quantization (under the target's format, symmetry, convention
// and rounding) gives the smallest expected squared error over the histogram density.
//
// Symmetric targets: one threshold t in (0, max|x|]: 256 evenly spaced candidates, then 64 steps
// between the best one's neighbours (resolution max|x| / 8192). Affine targets: the range
// [a * min(min, 0), b * max(max, 0)], a, b in (0, 1]: a common factor first (128 candidates),
// then alternating searches on a and on b over shrinking windows (4 rounds of 33 candidates,
// final resolution ~1e-4 of the range). A local search: the global optimum is not guaranteed
// when the error has several separated minima. Ties keep the wider range.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "quantkit/observer/methods/density.hpp"
#include "quantkit/observer/observer.hpp"

namespace quantkit {
namespace methods {

inline double range_error(const Density& d, const Range& r, const QuantTarget& t) {
  return quantization_moments(d, quant_grid(r, t)).err;
}

inline Range mse_range(const Density& d, const QuantTarget& t) {
  if (d.constant()) return Range{d.min, d.max};
  auto clip = [&](double lo, double hi) { return clip_to_data(d, lo, hi); };
  if (t.symmetry != SymmetryKind::affine) {
    const double top = d.amax();
    auto err_at = [&](double th) { return range_error(d, clip(-th, th), t); };
    constexpr int coarse = 256, fine = 64;
    double best_t = top, best = err_at(top);
    for (int k = coarse - 1; k >= 1; --k) {
      const double th = top * k / coarse;
      const double e = err_at(th);
      if (e < best) {
        best = e;
        best_t = th;
      }
    }
    const double step = top / coarse;
    const double lo = std::max(step / fine, best_t - step), hi = std::min(top, best_t + step);
    for (int k = fine * 2; k >= 0; --k) {
      const double th = lo + (hi - lo) * k / (fine * 2);
      if (!(th > 0.0)) continue;
      const double e = err_at(th);
      if (e < best) {
        best = e;
        best_t = th;
      }
    }
    return clip(-best_t, best_t);
  }
  const double neg = std::min(static_cast<double>(d.min), 0.0);
  const double pos = std::max(static_cast<double>(d.max), 0.0);
  auto err_at = [&](double a, double b) { return range_error(d, clip(neg * a, pos * b), t); };
  double best_a = 1.0, best_b = 1.0, best = err_at(1.0, 1.0);
  constexpr int coarse = 128;
  for (int k = coarse - 1; k >= 1; --k) {
    const double s = static_cast<double>(k) / coarse;
    const double e = err_at(neg < 0.0 ? s : 1.0, pos > 0.0 ? s : 1.0);
    if (e < best) {
      best = e;
      best_a = neg < 0.0 ? s : 1.0;
      best_b = pos > 0.0 ? s : 1.0;
    }
  }
  double delta = 2.0 / coarse;
  for (int round = 0; round < 4; ++round, delta /= 4.0) {
    for (int which = 0; which < 2; ++which) {
      if ((which == 0 && !(neg < 0.0)) || (which == 1 && !(pos > 0.0))) continue;
      const double center = which == 0 ? best_a : best_b;
      constexpr int steps = 32;
      for (int k = steps; k >= 0; --k) {
        const double x = center - delta + 2.0 * delta * k / steps;
        if (!(x > 0.0) || x > 1.0) continue;
        const double e = which == 0 ? err_at(x, best_b) : err_at(best_a, x);
        if (e < best) {
          best = e;
          (which == 0 ? best_a : best_b) = x;
        }
      }
    }
  }
  return clip(neg * best_a, pos * best_b);
}

}  // namespace methods
}  // namespace quantkit
