// RangeMethod: how a clipping range is chosen from a tensor's statistics (a GridHistogram and
// its exact min/max) — the runtime description shared by the histogram-based observers, the
// auto observer and calibration profiles.
//
//   minmax       [min, max]
//   percentile   the value below which a fraction p of the data lies (p = 0.9999 is the
//                99.99th percentile). side abs: percentile of |x|, range [-t, t] (Horizon's
//                max-percentile); two_sided: the (1-p)/2 and 1-(1-p)/2 quantiles of x (ONNX
//                Runtime's Percentile); by_target: abs for symmetric targets, else two-sided.
//   kl           TensorRT's entropy calibration on the |x| histogram resampled to kl_bins
//                (2048) bins over [0, max|x|]: for every candidate threshold bin i >= kl_start_bin
//                (128), P = bins [0, i) with the counts beyond i folded into bin i-1, Q = those
//                bins merged into `levels` groups (128 for 8-bit symmetric) and spread back over
//                the non-empty bins; the i minimising KL(P || Q) gives t = i * bin width; the
//                last minimum wins ties. kl_zero_bin_fix copies bin 1 into bin 0 first, as
//                NVIDIA's pytorch-quantization does against the spike of zeros after a ReLU.
//   mse          the range minimising the expected squared quantization error of the data
//                under the target's format, rounding, symmetry and convention (data modelled
//                as uniform inside each histogram bin, clipped to [min, max]).
//   l2           PyTorch HistogramObserver's L2 non-linear search run on this histogram.
//   automatic    tries each candidate (default_candidates(): max, max-percentile 0.99995, kl;
//                or the list given, e.g. default_candidates() plus mse()) and keeps the
//                one whose fake-quantized data is most similar to the data: cosine (default),
//                MSE or SQNR, computed on the same histogram model (Horizon's calibration
//                type "default").
// minmax and two-sided percentiles return ranges within [min, max]; the clipping methods (abs
// percentile, kl, mse) return their clip range limited to [min(min, 0), max(max, 0)] — the same
// parameters once compute_qparams widens every range to include 0. A constant tensor
// (min == max) gives [c, c] for every method.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/params.hpp"

namespace quantkit {

enum class MethodKind { minmax, percentile, kl, mse, l2, automatic };
enum class PercentileSide { by_target, abs, two_sided };
enum class SimilarityMetric { cosine, mse, sqnr };

inline const char* to_string(MethodKind k) {
  switch (k) {
    case MethodKind::minmax: return "minmax";
    case MethodKind::percentile: return "percentile";
    case MethodKind::kl: return "kl";
    case MethodKind::mse: return "mse";
    case MethodKind::l2: return "l2";
    case MethodKind::automatic: return "auto";
  }
  return "?";
}
inline const char* to_string(PercentileSide s) {
  switch (s) {
    case PercentileSide::by_target: return "by_target";
    case PercentileSide::abs: return "abs";
    case PercentileSide::two_sided: return "two_sided";
  }
  return "?";
}
inline const char* to_string(SimilarityMetric m) {
  switch (m) {
    case SimilarityMetric::cosine: return "cosine";
    case SimilarityMetric::mse: return "mse";
    case SimilarityMetric::sqnr: return "sqnr";
  }
  return "?";
}

struct RangeMethod {
  MethodKind kind = MethodKind::minmax;
  // percentile
  double percentile = 0.9999;  // fraction in (0, 1]
  PercentileSide side = PercentileSide::by_target;
  // kl
  int kl_bins = 2048;
  int kl_start_bin = 128;
  int kl_levels = 0;  // 0: from the target — 2^(bits-1) when symmetric or the data has negatives, else 2^bits
  bool kl_zero_bin_fix = false;
  // automatic
  SimilarityMetric metric = SimilarityMetric::cosine;
  std::vector<RangeMethod> candidates;  // empty: default_candidates()

  static RangeMethod minmax() { return {}; }
  static RangeMethod max() { return {}; }
  static RangeMethod percentile_of(double p, PercentileSide side = PercentileSide::by_target) {
    RangeMethod m;
    m.kind = MethodKind::percentile;
    m.percentile = p;
    m.side = side;
    return m;
  }
  // Horizon's max-percentile: the p-th percentile of |x| as the range's bound.
  static RangeMethod max_percentile(double p) { return percentile_of(p, PercentileSide::abs); }
  static RangeMethod kl() {
    RangeMethod m;
    m.kind = MethodKind::kl;
    return m;
  }
  static RangeMethod mse() {
    RangeMethod m;
    m.kind = MethodKind::mse;
    return m;
  }
  static RangeMethod l2() {
    RangeMethod m;
    m.kind = MethodKind::l2;
    return m;
  }
  static RangeMethod automatic(SimilarityMetric metric = SimilarityMetric::cosine,
                               std::vector<RangeMethod> candidates = {}) {
    RangeMethod m;
    m.kind = MethodKind::automatic;
    m.metric = metric;
    m.candidates = std::move(candidates);
    return m;
  }
  // Horizon's "default" set: max, max-percentile 0.99995, KL. To try more, pass
  // default_candidates() plus yours to automatic().
  static std::vector<RangeMethod> default_candidates() {
    return {max(), max_percentile(0.99995), kl()};
  }
  // The candidates an automatic method tries: its own list, or the default set.
  std::vector<RangeMethod> automatic_candidates() const {
    return candidates.empty() ? default_candidates() : candidates;
  }

  // Checks the parameters; `what` names the tensor/option for the message.
  void validate(const std::string& what = {}) const {
    const std::string w = what.empty() ? "calibration method" : what;
    if (kind == MethodKind::percentile && !(percentile > 0.0 && percentile <= 1.0))
      detail::fail(w, ": percentile ", percentile, "; expected a fraction in (0, 1] (0.9999 for 99.99%)");
    if (kind == MethodKind::kl) {
      if (kl_bins < 2 || kl_start_bin < 1 || kl_start_bin > kl_bins)
        detail::fail(w, ": KL with ", kl_bins, " bins starting at bin ", kl_start_bin,
                     "; expected 2 or more bins and 1 <= start bin <= bins");
      if (kl_levels < 0) detail::fail(w, ": KL levels ", kl_levels, "; expected 0 (auto) or more");
    }
    if (kind == MethodKind::automatic)
      for (const auto& c : automatic_candidates()) {
        if (c.kind == MethodKind::automatic)
          detail::fail(w, ": an automatic method cannot be a candidate of another");
        c.validate(what);
      }
  }

  // "minmax", "percentile(0.99995, abs)", "kl", "mse", "l2", "auto(cosine: ...)"
  std::string to_string() const {
    switch (kind) {
      case MethodKind::percentile: {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.10g", percentile);
        return std::string("percentile(") + buf + ", " + quantkit::to_string(side) + ")";
      }
      case MethodKind::automatic: {
        std::string s = std::string("auto(") + quantkit::to_string(metric) + ":";
        for (const auto& c : automatic_candidates()) s += " " + c.to_string();
        return s + ")";
      }
      default: return quantkit::to_string(kind);
    }
  }
};

// What a method chose for one slot, with the similarity of the fake-quantized data (histogram
// model) for each candidate the automatic method tried.
struct CandidateScore {
  std::string method;
  Range range;
  double cosine = 0.0;
  double mse = 0.0;
  double sqnr_db = 0.0;
};
struct RangeChoice {
  Range range;
  std::string method;                    // the method that produced `range`
  std::vector<CandidateScore> candidates;  // automatic only: every candidate, in order tried
};

}  // namespace quantkit
