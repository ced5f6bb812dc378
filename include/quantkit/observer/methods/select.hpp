// choose_range: one slot's range for any RangeMethod, from its GridHistogram.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/observer/grid_histogram.hpp"
#include "quantkit/observer/histogram.hpp"
#include "quantkit/observer/methods/density.hpp"
#include "quantkit/observer/methods/entropy.hpp"
#include "quantkit/observer/methods/mse.hpp"
#include "quantkit/observer/methods/percentile.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/observer/range_method.hpp"

namespace quantkit {
namespace methods {

// PyTorch's L2 search on the bins the data occupies.
inline Range l2_range(const GridHistogram& h, const QuantTarget& t) {
  if (h.min() == h.max()) return Range{h.min(), h.max()};
  const auto& c = h.counts();
  std::size_t first = 0, last = c.size() - 1;
  while (first < last && c[first] == 0) ++first;
  while (last > first && c[last] == 0) --last;
  std::vector<float> hist(c.begin() + static_cast<std::ptrdiff_t>(first),
                          c.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  const auto lo = static_cast<float>(h.edge(static_cast<std::int64_t>(first)));
  const auto hi = static_cast<float>(h.edge(static_cast<std::int64_t>(last) + 1));
  const Range r = torch_histogram::l2_search(hist, lo, hi, t.range.levels() + 1);
  const float a = std::clamp(r.min, h.min(), h.max());
  return Range{a, std::clamp(r.max, a, h.max())};
}

inline Range method_range(const GridHistogram& h, const Density& d, const RangeMethod& m,
                          const QuantTarget& t) {
  switch (m.kind) {
    case MethodKind::minmax: return Range{d.min, d.max};
    case MethodKind::percentile: return percentile_range(d, m.percentile, m.side, t);
    case MethodKind::kl: return kl_range(d, m, t);
    case MethodKind::mse: return mse_range(d, t);
    case MethodKind::l2: return l2_range(h, t);
    case MethodKind::automatic: break;
  }
  detail::fail("calibration method ", m.to_string(), " cannot be used here");
}

inline CandidateScore score_of(const Density& d, const Range& r, const QuantTarget& t,
                               std::string method) {
  const Moments mo = quantization_moments(d, quant_grid(r, t));
  CandidateScore s;
  s.method = std::move(method);
  s.range = r;
  s.cosine = mo.cosine();
  s.mse = mo.mse();
  s.sqnr_db = mo.sqnr_db();
  return s;
}

// The range (and, for automatic, every candidate's score) for one non-empty histogram.
inline RangeChoice choose_range(const GridHistogram& h, const RangeMethod& m, const QuantTarget& t) {
  const Density d = density_of(h);
  RangeChoice choice;
  if (m.kind != MethodKind::automatic) {
    choice.range = method_range(h, d, m, t);
    choice.method = m.to_string();
    return choice;
  }
  double best = -std::numeric_limits<double>::infinity();
  bool first = true;
  for (const RangeMethod& c : m.automatic_candidates()) {
    const Range r = method_range(h, d, c, t);
    CandidateScore s = score_of(d, r, t, c.to_string());
    const double v = m.metric == SimilarityMetric::cosine ? s.cosine
                     : m.metric == SimilarityMetric::mse  ? -s.mse
                                                          : s.sqnr_db;
    if (first || v > best) {
      best = v;
      choice.range = r;
      choice.method = s.method;
      first = false;
    }
    choice.candidates.push_back(std::move(s));
  }
  return choice;
}

}  // namespace methods
}  // namespace quantkit
