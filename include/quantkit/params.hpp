// QuantParams — scales and zero points — and computing them from observed ranges.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/policy/convention.hpp"
#include "quantkit/policy/format.hpp"
#include "quantkit/policy/granularity.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/policy/scale_application.hpp"
#include "quantkit/policy/symmetry.hpp"

namespace quantkit {

// An observed real range. `empty()` until something was observed.
struct Range {
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  bool empty() const { return !(min <= max); }
  void include(float v) {
    min = std::min(min, v);
    max = std::max(max, v);
  }
  void include(const Range& r) {
    if (r.empty()) return;
    include(r.min);
    include(r.max);
  }
  friend bool operator==(const Range& a, const Range& b) { return a.min == b.min && a.max == b.max; }
};

namespace detail {
// The branch-free test of one scale and zero point, for loops that vectorize: 1 when the scale
// is not finite and > 0 or the zero point lies outside [lo, lo + span] (unsigned: z - lo wraps
// past span exactly then), else 0.
struct ParamTest {
  std::uint32_t lo, span;
  explicit ParamTest(IntRange r)
      : lo(static_cast<std::uint32_t>(r.qmin)), span(static_cast<std::uint32_t>(r.qmax) - static_cast<std::uint32_t>(r.qmin)) {}
  std::uint32_t bad(float scale, std::int32_t zero_point) const {
    return static_cast<std::uint32_t>(!(scale > 0.0f)) |
           static_cast<std::uint32_t>(!(scale <= std::numeric_limits<float>::max())) |
           static_cast<std::uint32_t>(static_cast<std::uint32_t>(zero_point) - lo > span);
  }
};

// Whether every scale is finite and > 0 and every zero point lies in r: one branch-free pass.
inline bool params_valid(const float* scales, const std::int32_t* zero_points, std::size_t count, IntRange r) {
  const ParamTest test(r);
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < count; ++i) bad |= test.bad(scales[i], zero_points[i]);
  return bad == 0;
}
}  // namespace detail

// Scales and zero points of one tensor: one pair per tensor, per channel, or per block
// (blocks in row-major order of the tensor's shape with the quantized axis divided into
// ceil(extent / block_size) blocks — ONNX's blocked layout).
struct QuantParams {
  std::vector<float> scale{1.0f};
  std::vector<std::int32_t> zero_point{0};
  Granularity granularity = Granularity::per_tensor();
  IntRange range{};  // the integer range values are clamped to (restricted where asked)

  std::size_t size() const { return scale.size(); }

  // Checks what every quantize/dequantize relies on: as many zero points as scales, finite
  // positive scales, zero points inside the range.
  void validate(const std::string& tensor_name = {}) const {
    validate_counts(tensor_name);
    if (values_valid()) return;
    const auto what = [&] { return detail::describe_tensor(tensor_name); };
    for (std::size_t i = 0; i < scale.size(); ++i) {
      if (!(scale[i] > 0.0f) || !std::isfinite(scale[i]))
        detail::fail(what(), ": scale[", i, "] is ", scale[i], "; expected a finite value > 0");
      if (zero_point[i] < range.qmin || zero_point[i] > range.qmax)
        detail::fail(what(), ": zero_point[", i, "] is ", zero_point[i], "; expected a value in [",
                     range.qmin, ", ", range.qmax, "]");
    }
  }

  // validate() plus, for MultiplyByReciprocal, that every scale's float reciprocal is finite
  // (kMinReciprocalScale).
  void validate(const std::string& tensor_name, ScaleApplicationKind application) const {
    validate(tensor_name);
    if (application == ScaleApplicationKind::divide) return;
    for (std::size_t i = 0; i < scale.size(); ++i)
      if (!reciprocal_finite(scale[i]))
        detail::fail(detail::describe_tensor(tensor_name), ": scale[", i, "] is ", scale[i],
                     ", whose float reciprocal is inf; MultiplyByReciprocal needs a scale >= ",
                     kMinReciprocalScale, " (DivideByScale takes any finite scale > 0)");
  }

  // The checks of validate() that do not read every parameter: counts and the range. The SIMD
  // front ends check the values in the pass that converts them for the kernels.
  void validate_counts(const std::string& tensor_name = {}) const {
    // the name is formatted only on failure: this runs on every kernel call
    const auto what = [&] { return detail::describe_tensor(tensor_name); };
    if (scale.empty())
      detail::fail(what(), ": quantization parameters have no scale; expected at least one");
    if (scale.size() != zero_point.size())
      detail::fail(what(), ": found ", scale.size(), " scales and ", zero_point.size(),
                   " zero points; expected the same count");
    if (range.qmin >= range.qmax)
      detail::fail(what(), ": integer range [", range.qmin, ", ", range.qmax,
                   "] is empty; expected qmin < qmax");
    if (granularity.kind == GranularityKind::per_tensor && scale.size() != 1)
      detail::fail(what(), ": per-tensor parameters hold ", scale.size(), " scales; expected 1");
  }

  // Whether every scale is finite and > 0 and every zero point inside the range (counts
  // checked first): one branch-free pass (it vectorizes: per-channel parameters are checked on
  // every call).
  bool values_valid() const { return detail::params_valid(scale.data(), zero_point.data(), scale.size(), range); }
};

// What to do with NaN/Inf in the data an observer sees or a range is computed from.
enum class NonFiniteKind { reject, ignore };
struct RejectNonFinite {
  using category = quantkit::category::nonfinite;
  static constexpr NonFiniteKind kind = NonFiniteKind::reject;
};
struct IgnoreNonFinite {
  using category = quantkit::category::nonfinite;
  static constexpr NonFiniteKind kind = NonFiniteKind::ignore;
};

// The range values are clamped to: the format's, with the most negative value dropped for
// SymmetricRestricted on signed formats.
constexpr IntRange effective_range(IntRange format_range, SymmetryKind symmetry) {
  if (symmetry == SymmetryKind::symmetric_restricted && format_range.qmin < 0 &&
      format_range.qmin == -format_range.qmax - 1)
    return IntRange{-format_range.qmax, format_range.qmax};
  return format_range;
}

// ONNX Runtime / PyTorch reduce_range: one bit less (int8 [-64, 64] in ONNX Runtime,
// [-64, 63] in PyTorch; uint8 [0, 127] in both).
constexpr IntRange reduced_range(IntRange r, ConventionKind convention) {
  if (r.qmin < 0) {
    const std::int32_t half = (r.qmax + 1) / 2;
    return convention == ConventionKind::onnxruntime ? IntRange{-half, half}
                                                     : IntRange{-half, half - 1};
  }
  return IntRange{0, r.qmax / 2};
}

struct ScaleZeroPoint {
  float scale = 1.0f;
  std::int32_t zero_point = 0;
  friend bool operator==(const ScaleZeroPoint& a, const ScaleZeroPoint& b) {
    return a.scale == b.scale && a.zero_point == b.zero_point;
  }
};

namespace detail {

inline std::int32_t symmetric_zero_point(IntRange r, ConventionKind convention) {
  if (r.qmin < 0) return 0;
  const std::int64_t sum = std::int64_t{r.qmin} + r.qmax;
  if (convention == ConventionKind::pytorch)  // PyTorch: 128 for quint8, else floor midpoint
    return (r.qmin == 0 && r.qmax == 255) ? 128 : static_cast<std::int32_t>(sum / 2);
  // round_half_even(sum / 2): ONNX Runtime's formula, used by the others too
  return static_cast<std::int32_t>(RoundHalfEven{}(static_cast<float>(sum) * 0.5f));
}

inline ScaleZeroPoint qparams_pytorch(float lo, float hi, IntRange r, SymmetryKind sym) {
  constexpr float eps = std::numeric_limits<float>::epsilon();
  const float min_neg = std::min(lo, 0.0f), max_pos = std::max(hi, 0.0f);
  if (sym != SymmetryKind::affine) {
    const float absmax = std::max(-min_neg, max_pos);
    const float divisor = static_cast<float>(static_cast<double>(r.levels()) / 2.0);
    const float scale = std::max(absmax / divisor, eps);
    return {scale, symmetric_zero_point(r, ConventionKind::pytorch)};
  }
  const float scale = std::max((max_pos - min_neg) / static_cast<float>(r.levels()), eps);
  const auto zp = static_cast<std::int64_t>(r.qmin) -
                  static_cast<std::int64_t>(RoundHalfEven{}(min_neg / scale));
  return {scale, static_cast<std::int32_t>(std::clamp<std::int64_t>(zp, r.qmin, r.qmax))};
}

inline ScaleZeroPoint qparams_onnxruntime(float lo, float hi, IntRange r, SymmetryKind sym) {
  float rmin = std::min(lo, 0.0f), rmax = std::max(hi, 0.0f);
  if (sym != SymmetryKind::affine) {
    const float absmax = std::max(std::fabs(rmin), std::fabs(rmax));
    rmin = -absmax;
    rmax = absmax;
  }
  const double scale = static_cast<double>(rmax - rmin) / static_cast<double>(r.levels());
  if (scale < static_cast<double>(std::numeric_limits<float>::min())) return {1.0f, 0};
  double zp;
  if (sym != SymmetryKind::affine)
    zp = std::nearbyint((static_cast<double>(r.qmin) + r.qmax) / 2.0);
  else
    zp = std::nearbyint(static_cast<double>(r.qmin) - static_cast<double>(rmin) / scale);
  return {static_cast<float>(scale), static_cast<std::int32_t>(zp)};
}

inline ScaleZeroPoint qparams_onnx(float lo, float hi, IntRange r, SymmetryKind sym) {
  float rmin = std::min(lo, 0.0f), rmax = std::max(hi, 0.0f);
  if (sym != SymmetryKind::affine) {
    const float absmax = std::max(-rmin, rmax);
    rmin = -absmax;
    rmax = absmax;
  }
  if (rmax == rmin) return {1.0f, 0};
  const float scale = (rmax - rmin) / static_cast<float>(r.levels());
  if (sym != SymmetryKind::affine) return {scale, symmetric_zero_point(r, ConventionKind::onnx)};
  const float zp = RoundHalfEven{}(static_cast<float>(r.qmin) - rmin / scale);
  return {scale, static_cast<std::int32_t>(
                     std::clamp(zp, static_cast<float>(r.qmin), static_cast<float>(r.qmax)))};
}

inline ScaleZeroPoint qparams_tflite(float lo, float hi, IntRange r, SymmetryKind sym) {
  double rmin = std::min(static_cast<double>(lo), 0.0), rmax = std::max(static_cast<double>(hi), 0.0);
  if (sym != SymmetryKind::affine) {
    const double absmax = std::max(-rmin, rmax);
    rmin = -absmax;
    rmax = absmax;
  }
  if (rmin == rmax) return {1.0f, 0};
  const double qmin = r.qmin, qmax = r.qmax;
  const double scale = (rmax - rmin) / (qmax - qmin);
  if (sym != SymmetryKind::affine)
    return {static_cast<float>(scale), symmetric_zero_point(r, ConventionKind::tflite)};
  const double from_min = qmin - rmin / scale, from_max = qmax - rmax / scale;
  const double err_min = std::fabs(qmin) + std::fabs(rmin / scale);
  const double err_max = std::fabs(qmax) + std::fabs(rmax / scale);
  const double zp = err_min < err_max ? from_min : from_max;
  const std::int32_t nudged = zp < qmin   ? r.qmin
                              : zp > qmax ? r.qmax
                                          : static_cast<std::int32_t>(std::round(zp));
  return {static_cast<float>(scale), nudged};
}

inline bool usable_scale(float s) { return std::isfinite(s) && s > 0.0f; }

// compute_qparams without its checks: for a finite lo <= hi and a valid integer range; the
// scale may be unusable (usable_scale false) where the convention's arithmetic overflows.
inline ScaleZeroPoint qparams_unchecked(float lo, float hi, IntRange r, SymmetryKind symmetry,
                                        ConventionKind convention) {
  const IntRange er = effective_range(r, symmetry);
  switch (convention) {
    case ConventionKind::pytorch: return qparams_pytorch(lo, hi, er, symmetry);
    case ConventionKind::onnxruntime: return qparams_onnxruntime(lo, hi, er, symmetry);
    case ConventionKind::onnx: return qparams_onnx(lo, hi, er, symmetry);
    case ConventionKind::tflite: return qparams_tflite(lo, hi, er, symmetry);
  }
  return {};
}

}  // namespace detail

// (scale, zero point) for one observed range [lo, hi] under a symmetry and a peer's
// convention. `r` is the format's integer range; restriction for SymmetricRestricted is
// applied here. Every convention first widens the range to include 0. Degenerate ranges:
//   all zeros / lo == hi == 0: pytorch gives (float32 eps, zp), the others (1, 0);
//   lo == hi != 0: the range [min(lo,0), max(hi,0)] is used, so a constant c gives |c|/levels;
//   NaN or Inf bounds, lo > hi: Error naming the tensor and channel.
inline ScaleZeroPoint compute_qparams(float lo, float hi, IntRange r, SymmetryKind symmetry,
                                      ConventionKind convention,
                                      const std::string& tensor_name = {},
                                      std::ptrdiff_t channel = -1) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) {
    const std::string where = channel >= 0 ? " channel " + std::to_string(channel) : "";
    detail::fail(detail::describe_tensor(tensor_name), where, ": found range [", lo, ", ", hi,
                 "]; expected finite min <= max (was anything observed? NaN/Inf in the data?)");
  }
  if (r.qmin >= r.qmax || r.qmin > 0 || r.qmax < 0)
    detail::fail(detail::describe_tensor(tensor_name), ": integer range [", r.qmin, ", ", r.qmax,
                 "]; expected qmin <= 0 <= qmax and qmin < qmax");
  const ScaleZeroPoint sz = detail::qparams_unchecked(lo, hi, r, symmetry, convention);
  // The peers' float32 arithmetic overflows for ranges wider than the largest float (and the
  // ONNX formula gives 0 for subnormal widths): no usable scale, so no silent inf / 0.
  if (!detail::usable_scale(sz.scale)) {
    const std::string where = channel >= 0 ? " channel " + std::to_string(channel) : "";
    detail::fail(detail::describe_tensor(tensor_name), where, ": range [", lo, ", ", hi, "] gives scale ",
                 sz.scale, " under the ", to_string(convention),
                 " convention (its float32 arithmetic overflows or underflows); expected a range "
                 "of finite, nonzero float32 width (clip the data; the tflite convention computes in "
                 "double)");
  }
  return sz;
}

// QuantParams for one range per tensor/channel/block.
inline QuantParams compute_qparams(const std::vector<Range>& ranges, Granularity granularity,
                                   IntRange r, SymmetryKind symmetry, ConventionKind convention,
                                   const std::string& tensor_name = {}) {
  if (ranges.empty())
    detail::fail(detail::describe_tensor(tensor_name),
                 ": no ranges to compute parameters from; expected at least one");
  QuantParams p;
  p.granularity = granularity;
  p.range = effective_range(r, symmetry);
  p.scale.resize(ranges.size());
  p.zero_point.resize(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto sz = compute_qparams(ranges[i].min, ranges[i].max, r, symmetry, convention,
                                    tensor_name,
                                    ranges.size() > 1 ? static_cast<std::ptrdiff_t>(i) : -1);
    p.scale[i] = sz.scale;
    p.zero_point[i] = sz.zero_point;
  }
  return p;
}

}  // namespace quantkit
