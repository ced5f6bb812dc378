// Distributions for accuracy debugging: histograms (float vs quantized values, their error, a
// weight or activation with the clipping range its quantization parameters imply) and
// channel-wise box-plot statistics (to see when per-channel quantization is needed).
//
//   auto h  = qk::analysis::histogram(view, 128);                  // range = [min, max] of the data
//   auto cl = qk::analysis::clipping_range(qm.at("/conv1/Conv_output_0"));  // what quantization keeps
//   auto bs = qk::analysis::channel_stats(weight_view, 0);         // one box per output channel
//   auto n  = qk::analysis::saturated_count(view, tq.params);      // values quantization clips
//
// Box statistics: quartiles by linear interpolation between order statistics (numpy's default,
// "linear"); whiskers at the most extreme values within 1.5 IQR of the quartiles (Tukey);
// values beyond them are outliers (counted; the most extreme few kept for plotting).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/params.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace analysis {

struct Histogram {
  double lo = 0, hi = 0;              // bin i covers [lo + i w, lo + (i + 1) w), the last one closed
  std::vector<std::int64_t> counts;
  std::int64_t total = 0;
  double min = 0, max = 0, max_abs = 0;  // of the data
  double bin_width() const { return counts.empty() ? 0.0 : (hi - lo) / static_cast<double>(counts.size()); }
};

namespace detail {
template <class T, int R>
void check_finite(const View<T, R>& v, const char* what) {
  for_each_index(v, [&](std::int64_t o, const Dims&) {
    if (!std::isfinite(static_cast<double>(v.data()[o])))
      quantkit::detail::fail(what, ": ", quantkit::detail::describe_tensor(v.name()), " holds ",
                             static_cast<double>(v.data()[o]), "; expected finite values");
  });
}
}  // namespace detail

// `bins` equal bins over [lo, hi]; lo == hi == 0 (default): the data's [min, max] (widened by
// 0.5 on each side when all values are equal). Values outside [lo, hi] are not counted (total
// counts them all).
template <class T, int R>
Histogram histogram(const View<T, R>& v, int bins, double lo = 0, double hi = 0) {
  if (bins < 1 || bins > (1 << 20)) quantkit::detail::fail("histogram: ", bins, " bins; expected 1 to 1048576");
  detail::check_finite(v, "histogram");
  Histogram h;
  h.counts.assign(static_cast<std::size_t>(bins), 0);
  bool first = true;
  for_each_index(v, [&](std::int64_t o, const Dims&) {
    const double x = static_cast<double>(v.data()[o]);
    if (first) h.min = h.max = x;
    h.min = std::min(h.min, x);
    h.max = std::max(h.max, x);
    first = false;
    ++h.total;
  });
  h.max_abs = std::max(std::fabs(h.min), std::fabs(h.max));
  if (lo == 0 && hi == 0) {
    lo = h.min;
    hi = h.max;
  }
  if (!(hi >= lo)) quantkit::detail::fail("histogram: range [", lo, ", ", hi, "]; expected lo <= hi");
  if (hi == lo) {
    lo -= 0.5;
    hi += 0.5;
  }
  h.lo = lo;
  h.hi = hi;
  const double scale = static_cast<double>(bins) / (hi - lo);
  for_each_index(v, [&](std::int64_t o, const Dims&) {
    const double x = static_cast<double>(v.data()[o]);
    if (x < lo || x > hi) return;
    auto b = static_cast<std::int64_t>((x - lo) * scale);
    b = std::min<std::int64_t>(b, bins - 1);
    ++h.counts[static_cast<std::size_t>(b)];
  });
  return h;
}

// The float range a quantized tensor keeps: [(qmin - z) s, (qmax - z) s] — per channel, the
// widest and the narrowest of the channels (lo/hi of each).
struct ClippingRange {
  double lo = 0, hi = 0;                 // widest channel (per tensor: the only one)
  double narrow_lo = 0, narrow_hi = 0;   // narrowest channel
  std::int64_t channels = 1;
};

inline ClippingRange clipping_range(const ptq::TensorQuant& t) {
  const IntRange r = t.params.range;  // restricted ranges included
  ClippingRange c;
  c.channels = static_cast<std::int64_t>(t.params.scale.size());
  if (c.channels == 0) quantkit::detail::fail("clipping_range: quantization parameters without a scale");
  bool first = true;
  double widest = -1, narrowest = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < t.params.scale.size(); ++i) {
    const double s = t.params.scale[i];
    const double z = i < t.params.zero_point.size() ? static_cast<double>(t.params.zero_point[i]) : 0.0;
    const double lo = (r.qmin - z) * s, hi = (r.qmax - z) * s;
    const double width = hi - lo;
    if (first || width > widest) {
      widest = width;
      c.lo = lo;
      c.hi = hi;
    }
    if (first || width < narrowest) {
      narrowest = width;
      c.narrow_lo = lo;
      c.narrow_hi = hi;
    }
    first = false;
  }
  return c;
}

// Elements quantization saturates: outside [(qmin - z - 1/2) s, (qmax - z + 1/2) s] of their own
// (scale, zero point) — nearer values round into range, so min-max parameters clip nothing.
template <class T, int R>
std::int64_t saturated_count(const View<T, R>& v, const QuantParams& p) {
  const ParamLayout layout(v.shape(), p.granularity, v.name());
  layout.expect_count(static_cast<std::int64_t>(p.scale.size()), v.name());
  std::int64_t n = 0;
  for_each_index(v, [&](std::int64_t o, const Dims& idx) {
    const auto slot = static_cast<std::size_t>(layout.index(idx));
    const double s = p.scale[slot];
    const double z = slot < p.zero_point.size() ? static_cast<double>(p.zero_point[slot]) : 0.0;
    const double x = static_cast<double>(v.data()[o]);
    if (x < (p.range.qmin - z - 0.5) * s || x > (p.range.qmax - z + 0.5) * s) ++n;
  });
  return n;
}

struct ChannelStats {
  std::int64_t channel = 0;
  std::int64_t count = 0;
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0, mean = 0;
  double whisker_lo = 0, whisker_hi = 0;  // most extreme values within 1.5 IQR of the quartiles
  std::int64_t outliers = 0;              // values beyond the whiskers
  std::vector<double> extreme;            // the most extreme outliers (up to 8, largest |x - median| first)
};

namespace detail {
inline double quantile_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) return 0.0;
  const double pos = q * static_cast<double>(s.size() - 1);
  const auto i = static_cast<std::size_t>(pos);
  const double f = pos - static_cast<double>(i);
  return i + 1 < s.size() ? s[i] + f * (s[i + 1] - s[i]) : s[i];
}

inline ChannelStats box(std::vector<double>& xs, std::int64_t channel) {
  ChannelStats c;
  c.channel = channel;
  c.count = static_cast<std::int64_t>(xs.size());
  if (xs.empty()) return c;
  std::sort(xs.begin(), xs.end());
  double sum = 0;
  for (double x : xs) sum += x;
  c.mean = sum / static_cast<double>(xs.size());
  c.min = xs.front();
  c.max = xs.back();
  c.q1 = quantile_sorted(xs, 0.25);
  c.median = quantile_sorted(xs, 0.5);
  c.q3 = quantile_sorted(xs, 0.75);
  const double iqr = c.q3 - c.q1, lo_fence = c.q1 - 1.5 * iqr, hi_fence = c.q3 + 1.5 * iqr;
  c.whisker_lo = c.q1;
  c.whisker_hi = c.q3;
  std::vector<double> out;
  for (double x : xs) {
    if (x < lo_fence || x > hi_fence) {
      out.push_back(x);
      continue;
    }
    c.whisker_lo = std::min(c.whisker_lo, x);
    c.whisker_hi = std::max(c.whisker_hi, x);
  }
  c.outliers = static_cast<std::int64_t>(out.size());
  const double med = c.median;
  std::sort(out.begin(), out.end(), [med](double a, double b) { return std::fabs(a - med) > std::fabs(b - med); });
  if (out.size() > 8) out.resize(8);
  c.extreme = out;
  return c;
}
}  // namespace detail

// One box per index along `axis` (negative counts from the end), over every other axis.
template <class T, int R>
std::vector<ChannelStats> channel_stats(const View<T, R>& v, int axis) {
  if (v.rank() == 0) quantkit::detail::fail("channel_stats: ", quantkit::detail::describe_tensor(v.name()), " is a scalar; expected a tensor with a channel axis");
  if (axis < -v.rank() || axis >= v.rank())
    quantkit::detail::fail("channel_stats: channel axis ", axis, " for ", quantkit::detail::describe_tensor(v.name()),
                           " of shape ", v.shape().to_string(), "; expected an axis in [", -v.rank(), ", ", v.rank() - 1, "]");
  if (axis < 0) axis += v.rank();
  detail::check_finite(v, "channel_stats");
  std::vector<std::vector<double>> per(static_cast<std::size_t>(v.extent(axis)));
  for_each_index(v, [&](std::int64_t o, const Dims& idx) {
    per[static_cast<std::size_t>(idx[axis])].push_back(static_cast<double>(v.data()[o]));
  });
  std::vector<ChannelStats> out;
  out.reserve(per.size());
  for (std::size_t c = 0; c < per.size(); ++c) out.push_back(detail::box(per[c], static_cast<std::int64_t>(c)));
  return out;
}

}  // namespace analysis
}  // namespace quantkit
