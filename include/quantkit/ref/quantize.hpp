// Scalar reference: quantize, dequantize, fake-quantize. The ground truth every SIMD kernel
// is tested against, bit for bit. Deliberately plain; not tuned.
//
// quantize:   q = clamp(R(x / s) + z, qmin, qmax)   (or R(x * (1/s)) with MultiplyByReciprocal)
//             computed in float32: R gives an integral float, z is added and the sum clamped
//             (exactly, in double), then converted — identical to ONNX's saturate(round(x/s) + z) and PyTorch's
//             clamp(z + nearbyint(x * inv_s)) for every input.
//             NaN -> z (the code of 0.0); +Inf -> qmax; -Inf -> qmin.
// dequantize: x = float(q - z) * s                   (ONNX DequantizeLinear, PyTorch)
// fake:       dequantize(quantize(x))                (PyTorch fake_quantize_*, a QDQ pair)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "quantkit/param_layout.hpp"
#include "quantkit/params.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/policy/scale_application.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace ref {

template <class Rounding>
inline std::int32_t quantize_value(float x, float factor, ScaleApplicationKind application,
                                   std::int32_t zero_point, IntRange r, const Rounding& round) {
  if (std::isnan(x)) return zero_point;
  const float t = apply_scale(application, x, factor);
  // Clamped in double: float(INT32_MAX) is 2^31, which would not convert back to int32.
  // For formats of up to 16 bits this equals clamping in float (what the kernels do).
  const double v = static_cast<double>(round(t)) + zero_point;
  return static_cast<std::int32_t>(
      std::min(std::max(v, static_cast<double>(r.qmin)), static_cast<double>(r.qmax)));
}

// q - z exactly (in int64: int32 values with a large zero point overflow int32), then rounded
// to float once.
inline float dequantize_value(std::int32_t q, float scale, std::int32_t zero_point) {
  return static_cast<float>(static_cast<std::int64_t>(q) - zero_point) * scale;
}

namespace impl {
template <class A, int RA, class B, int RB>
void expect_same_shape(const View<A, RA>& a, const View<B, RB>& b, const char* what) {
  if (a.shape() != b.shape())
    quantkit::detail::fail(quantkit::detail::describe_tensor(b.name().empty() ? a.name() : b.name()),
                           ": ", what, " output has shape ", b.shape().to_string(),
                           "; expected the input's shape ", a.shape().to_string());
}
// Visits input and output together with each element's parameter index.
template <class In, int RI, class Out, int RO, class F>
void for_each_pair(const View<In, RI>& in, const View<Out, RO>& out, const ParamLayout& layout,
                   F&& f) {
  const Dims& so = out.strides();
  for_each_index(in, [&](std::int64_t in_off, const Dims& idx) {
    std::int64_t out_off = 0;
    for (int d = 0; d < idx.rank; ++d) out_off += idx[d] * so[d];
    f(in.data()[in_off], out.data()[out_off], layout.index(idx));
  });
}
// Whether checked_layout checks every scale and zero point too, or the caller does (the SIMD
// front ends, in the pass that converts them for the kernels).
enum class ParamValues { check, caller_checks };

// Shape, parameter and granularity checks every operation starts with.
// `application`: quantize's (MultiplyByReciprocal needs finite reciprocals).
template <class In, int RI, class Out, int RO>
ParamLayout checked_layout(const View<In, RI>& in, const View<Out, RO>& out, const QuantParams& p,
                           const char* what, ParamValues values = ParamValues::check,
                           ScaleApplicationKind application = ScaleApplicationKind::divide) {
  expect_same_shape(in, out, what);
  if (values == ParamValues::check)
    p.validate(in.name(), application);
  else
    p.validate_counts(in.name());
  ParamLayout layout(in.shape(), p.granularity, in.name());
  layout.expect_count(static_cast<std::int64_t>(p.size()), in.name());
  return layout;
}
inline std::vector<float> scale_factors(const QuantParams& p, ScaleApplicationKind application) {
  std::vector<float> factor(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) factor[i] = scale_factor(application, p.scale[i]);
  return factor;
}
}  // namespace impl

template <class In, class Q, int RI, int RO, class Rounding = RoundHalfEven>
void quantize(const View<In, RI>& x, const QuantParams& p, const View<Q, RO>& q,
              const Rounding& round = {},
              ScaleApplicationKind application = ScaleApplicationKind::divide) {
  static_assert(std::is_same_v<std::remove_const_t<In>, float>, "ref::quantize: input must be float");
  const ParamLayout layout = impl::checked_layout(x, q, p, "quantize", impl::ParamValues::check, application);
  const std::vector<float> factor = impl::scale_factors(p, application);
  impl::for_each_pair(x, q, layout, [&](float v, Q& out, std::int64_t c) {
    const auto i = static_cast<std::size_t>(c);
    out = static_cast<Q>(quantize_value(v, factor[i], application, p.zero_point[i], p.range, round));
  });
}

template <class Q, int RI, int RO>
void dequantize(const View<Q, RI>& q, const QuantParams& p, const View<float, RO>& x) {
  const ParamLayout layout = impl::checked_layout(q, x, p, "dequantize");
  impl::for_each_pair(q, x, layout, [&](Q v, float& out, std::int64_t c) {
    const auto i = static_cast<std::size_t>(c);
    out = dequantize_value(static_cast<std::int32_t>(v), p.scale[i], p.zero_point[i]);
  });
}

template <class In, int RI, int RO, class Rounding = RoundHalfEven>
void fake_quantize(const View<In, RI>& x, const QuantParams& p, const View<float, RO>& y,
                   const Rounding& round = {},
                   ScaleApplicationKind application = ScaleApplicationKind::divide) {
  static_assert(std::is_same_v<std::remove_const_t<In>, float>, "ref::fake_quantize: input must be float");
  const ParamLayout layout = impl::checked_layout(x, y, p, "fake_quantize", impl::ParamValues::check, application);
  const std::vector<float> factor = impl::scale_factors(p, application);
  impl::for_each_pair(x, y, layout, [&](float v, float& out, std::int64_t c) {
    const auto i = static_cast<std::size_t>(c);
    const std::int32_t qv =
        quantize_value(v, factor[i], application, p.zero_point[i], p.range, round);
    out = dequantize_value(qv, p.scale[i], p.zero_point[i]);
  });
}

}  // namespace ref
}  // namespace quantkit
