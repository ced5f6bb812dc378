// The data model the histogram-based methods work on, and what quantizing it costs.
//
// Density: a GridHistogram read as pieces [lo, hi] holding `count` values spread uniformly
// (its non-empty bins, the first and last clipped to the exact min and max; lo == hi is a point
// mass). On it, quantization_moments() integrates — exactly, cell by cell — the squared error
// and the moments cosine similarity and SQNR need, for the quantization grid a target gives a
// range: codes k in [qmin, qmax] standing for (k - z) * s, with cell boundaries set by the
// rounding mode (nearest: midpoints; floor; toward zero; stochastic: expected error
// (x - v_k)(v_k+1 - x) between neighbours). Custom rounding is treated as nearest; whether the
// scale is applied by division or by its reciprocal only moves ties, which carry no mass.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "quantkit/observer/grid_histogram.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/observer/range_method.hpp"
#include "quantkit/params.hpp"

namespace quantkit {
namespace methods {

struct Piece {
  double lo = 0.0, hi = 0.0, count = 0.0;
};

struct Density {
  std::vector<Piece> pieces;  // sorted by lo; disjoint for a signed histogram
  double total = 0.0;
  float min = 0.0f, max = 0.0f;
  bool empty() const { return total <= 0.0; }
  bool constant() const { return min == max; }
  float amax() const { return std::max(std::fabs(min), std::fabs(max)); }
};

inline Density density_of(const GridHistogram& h) {
  Density d;
  d.min = h.min();
  d.max = h.max();
  const auto& c = h.counts();
  for (std::size_t j = 0; j < c.size(); ++j) {
    if (c[j] == 0) continue;
    const auto jj = static_cast<std::int64_t>(j);
    Piece p;
    p.lo = std::max(h.edge(jj), static_cast<double>(d.min));
    p.hi = std::min(h.edge(jj + 1), static_cast<double>(d.max));
    if (p.hi < p.lo) p.hi = p.lo;
    p.count = static_cast<double>(c[j]);
    d.total += p.count;
    d.pieces.push_back(p);
  }
  return d;
}

// The clipping range [lo, hi] (lo <= 0 <= hi, or any bounds) limited to the data's hull widened
// to include 0 — [min(min, 0), max(max, 0)] — always a valid range (lo <= hi).
inline Range clip_to_data(const Density& d, double lo, double hi) {
  const double a = std::min(static_cast<double>(d.min), 0.0), b = std::max(static_cast<double>(d.max), 0.0);
  const auto l = static_cast<float>(std::clamp(lo, a, b));
  const auto h = static_cast<float>(std::clamp(hi, a, b));
  return l <= h ? Range{l, h} : Range{h, l};
}

// The density of |x| (pieces sorted by lo; those of -x and x may overlap).
inline Density folded(const Density& d) {
  Density f;
  f.total = d.total;
  f.min = d.min >= 0.0f ? d.min : (d.max <= 0.0f ? -d.max : 0.0f);
  f.max = d.amax();
  f.pieces.reserve(d.pieces.size());
  for (const Piece& p : d.pieces) {
    if (p.lo >= 0.0)
      f.pieces.push_back(p);
    else if (p.hi <= 0.0)
      f.pieces.push_back(Piece{-p.hi, -p.lo, p.count});
    else {  // straddles 0 (only a clipped point range does): split by length
      const double len = p.hi - p.lo;
      f.pieces.push_back(Piece{0.0, -p.lo, p.count * (-p.lo) / len});
      f.pieces.push_back(Piece{0.0, p.hi, p.count * p.hi / len});
    }
  }
  std::sort(f.pieces.begin(), f.pieces.end(),
            [](const Piece& a, const Piece& b) { return a.lo < b.lo || (a.lo == b.lo && a.hi < b.hi); });
  return f;
}

// The smallest t with F(t) >= fraction * total, F the cumulative count (piecewise linear,
// point masses as jumps); clamped to [d.min, d.max].
inline double quantile(const Density& d, double fraction) {
  if (d.empty()) return 0.0;
  const double target = std::clamp(fraction, 0.0, 1.0) * d.total;
  if (target <= 0.0) return d.min;
  // Events: density slope changes and point masses, swept in order.
  struct Event {
    double x;
    double slope;  // change of density
    double mass;   // point mass at x
  };
  std::vector<Event> ev;
  ev.reserve(d.pieces.size() * 2);
  for (const Piece& p : d.pieces) {
    if (p.hi > p.lo) {
      const double rho = p.count / (p.hi - p.lo);
      ev.push_back({p.lo, rho, 0.0});
      ev.push_back({p.hi, -rho, 0.0});
    } else {
      ev.push_back({p.lo, 0.0, p.count});
    }
  }
  std::sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) { return a.x < b.x; });
  double cum = 0.0, slope = 0.0, x = ev.front().x;
  for (const Event& e : ev) {
    if (e.x > x) {
      const double next = cum + slope * (e.x - x);
      if (slope > 0.0 && next >= target)
        return std::clamp(x + (target - cum) / slope, static_cast<double>(d.min), static_cast<double>(d.max));
      cum = next;
      x = e.x;
    }
    slope += e.slope;
    cum += e.mass;
    if (cum >= target) return std::clamp(x, static_cast<double>(d.min), static_cast<double>(d.max));
  }
  return d.max;
}

// Counts in `nbins` equal bins over [0, top], each piece spread by overlap.
inline std::vector<double> resample(const Density& d, double top, int nbins) {
  std::vector<double> out(static_cast<std::size_t>(nbins), 0.0);
  if (!(top > 0.0)) {
    out[0] = d.total;
    return out;
  }
  const double w = top / nbins;
  auto bin_of = [&](double x) {
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(x / w)), 0, nbins - 1);
  };
  for (const Piece& p : d.pieces) {
    if (!(p.hi > p.lo)) {
      out[static_cast<std::size_t>(bin_of(p.lo))] += p.count;
      continue;
    }
    const std::int64_t k0 = bin_of(p.lo), k1 = bin_of(p.hi);
    if (k0 == k1) {
      out[static_cast<std::size_t>(k0)] += p.count;
      continue;
    }
    const double rho = p.count / (p.hi - p.lo);
    double assigned = 0.0;
    for (std::int64_t k = k0; k < k1; ++k) {
      const double a = std::max(p.lo, w * static_cast<double>(k));
      const double b = std::min(p.hi, w * static_cast<double>(k + 1));
      const double c = b > a ? rho * (b - a) : 0.0;
      out[static_cast<std::size_t>(k)] += c;
      assigned += c;
    }
    out[static_cast<std::size_t>(k1)] += std::max(0.0, p.count - assigned);
  }
  return out;
}

// The quantization grid of a range under a target.
struct QuantGrid {
  double scale = 1.0;
  std::int32_t zero_point = 0;
  IntRange range{};  // effective (restricted where the symmetry asks)
  RoundingMode rounding = RoundingMode::half_even;
  // false where the convention's arithmetic gives no finite positive scale (a range wider than
  // the largest float): searches rank such a candidate last instead of failing on it.
  bool usable = true;

  double value(std::int64_t k) const { return static_cast<double>(k - zero_point) * scale; }
  // Upper boundary of code k's cell (deterministic modes).
  double boundary(std::int64_t k) const {
    switch (rounding) {
      case RoundingMode::floor: return value(k + 1);
      case RoundingMode::toward_zero: return k >= zero_point ? value(k + 1) : value(k);
      default: return (static_cast<double>(k - zero_point) + 0.5) * scale;
    }
  }
};

inline QuantGrid quant_grid(const Range& r, const QuantTarget& t) {
  if (!(std::isfinite(r.min) && std::isfinite(r.max) && r.min <= r.max))
    compute_qparams(r.min, r.max, t.range, t.symmetry, t.convention);  // fails with its message
  const ScaleZeroPoint sz = detail::qparams_unchecked(r.min, r.max, t.range, t.symmetry, t.convention);
  QuantGrid g;
  g.usable = detail::usable_scale(sz.scale);
  g.scale = sz.scale;
  g.zero_point = sz.zero_point;
  g.range = effective_range(t.range, t.symmetry);
  g.rounding = t.rounding;
  return g;
}

struct Moments {
  double err = 0.0;  // integral of (x - q(x))^2
  double xx = 0.0;   // integral of x^2
  double xq = 0.0;   // integral of x q(x)
  double qq = 0.0;   // integral of q(x)^2
  double total = 0.0;

  double mse() const { return total > 0.0 ? err / total : 0.0; }
  double sqnr_db() const {
    if (err <= 0.0) return std::numeric_limits<double>::infinity();
    if (xx <= 0.0) return -std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(xx / err);
  }
  double cosine() const {
    if (xx <= 0.0 && qq <= 0.0) return 1.0;
    if (xx <= 0.0 || qq <= 0.0) return 0.0;
    return xq / std::sqrt(xx * qq);
  }
  // Larger is better for every metric.
  double score(SimilarityMetric m) const {
    switch (m) {
      case SimilarityMetric::cosine: return cosine();
      case SimilarityMetric::mse: return -mse();
      case SimilarityMetric::sqnr: return sqnr_db();
    }
    return 0.0;
  }
};

namespace detail_density {
inline double cube(double v) { return v * v * v; }
// Adds the moments of density rho over [lo, hi] quantized to the constant v.
inline void segment(Moments& m, double rho, double lo, double hi, double v) {
  m.err += rho * (cube(hi - v) - cube(lo - v)) / 3.0;
  m.xq += rho * v * (hi * hi - lo * lo) / 2.0;
  m.qq += rho * v * v * (hi - lo);
}
// Stochastic rounding between neighbours a < b over [lo, hi] (inside [a, b]): expected squared
// error (x - a)(b - x), E[q] = x, E[q^2] = x^2 + (x - a)(b - x).
inline void stochastic_segment(Moments& m, double rho, double lo, double hi, double a, double b) {
  const double s = b - a;
  auto prim = [&](double x) {  // integral of (x - a)(b - x) = s u^2 / 2 - u^3 / 3, u = x - a
    const double u = x - a;
    return s * u * u / 2.0 - u * u * u / 3.0;
  };
  const double e = rho * (prim(hi) - prim(lo));
  const double x2 = rho * (cube(hi) - cube(lo)) / 3.0;
  m.err += e;
  m.xq += x2;
  m.qq += x2 + e;
}
}  // namespace detail_density

// Moments of the density quantized on grid g.
inline Moments quantization_moments(const Density& d, const QuantGrid& g) {
  using namespace detail_density;
  Moments m;
  m.total = d.total;
  if (!g.usable) {  // the worst score in every metric
    m.err = std::numeric_limits<double>::infinity();  // mse +inf, SQNR -inf
    m.xx = m.qq = 1.0;
    m.xq = -1.0;  // cosine -1
    return m;
  }
  const std::int64_t qmin = g.range.qmin, qmax = g.range.qmax;
  const double vmin = g.value(qmin), vmax = g.value(qmax);
  // code of x for the deterministic modes
  auto code_of = [&](double x) {
    std::int64_t k = static_cast<std::int64_t>(std::floor(x / g.scale)) + g.zero_point;
    k = std::clamp(k, qmin, qmax);
    while (k > qmin && x < g.boundary(k - 1)) --k;
    while (k < qmax && x >= g.boundary(k)) ++k;
    return k;
  };
  const bool stochastic = g.rounding == RoundingMode::stochastic;
  for (const Piece& p : d.pieces) {
    if (!(p.hi > p.lo)) {  // point mass
      const double x = p.lo;
      m.xx += p.count * x * x;
      if (stochastic && x > vmin && x < vmax) {
        const std::int64_t k = std::clamp<std::int64_t>(
            static_cast<std::int64_t>(std::floor(x / g.scale)) + g.zero_point, qmin, qmax - 1);
        const double a = g.value(k), b = g.value(k + 1);
        const double e = (x - a) * (b - x);
        m.err += p.count * e;
        m.xq += p.count * x * x;
        m.qq += p.count * (x * x + e);
        continue;
      }
      const double v = stochastic ? (x <= vmin ? vmin : vmax) : g.value(code_of(x));
      m.err += p.count * (x - v) * (x - v);
      m.xq += p.count * x * v;
      m.qq += p.count * v * v;
      continue;
    }
    const double rho = p.count / (p.hi - p.lo);
    m.xx += rho * (cube(p.hi) - cube(p.lo)) / 3.0;
    if (stochastic) {
      double lo = p.lo;
      if (lo < vmin) {
        const double hi = std::min(p.hi, vmin);
        segment(m, rho, lo, hi, vmin);
        lo = hi;
      }
      if (lo < p.hi && lo < vmax) {
        std::int64_t k = std::clamp<std::int64_t>(
            static_cast<std::int64_t>(std::floor(lo / g.scale)) + g.zero_point, qmin, qmax - 1);
        while (k > qmin && lo < g.value(k)) --k;
        while (k < qmax - 1 && lo >= g.value(k + 1)) ++k;
        while (lo < p.hi && lo < vmax) {
          const double a = g.value(k), b = g.value(k + 1);
          const double hi = std::min(p.hi, b);
          stochastic_segment(m, rho, lo, hi, a, b);
          lo = hi;
          if (++k >= qmax) break;
        }
      }
      if (lo < p.hi) segment(m, rho, std::max(lo, vmax), p.hi, vmax);
      continue;
    }
    std::int64_t k = code_of(p.lo);
    double lo = p.lo;
    while (lo < p.hi) {
      const double hi = k < qmax ? std::min(p.hi, g.boundary(k)) : p.hi;
      if (hi > lo) segment(m, rho, lo, hi, g.value(k));
      lo = std::max(lo, hi);
      if (k == qmax) break;
      ++k;
    }
  }
  return m;
}

}  // namespace methods
}  // namespace quantkit
