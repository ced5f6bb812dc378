// quantkit::simd — the SIMD kernels behind the reference's interface.
//
// View API (same arguments as quantkit::ref, bit-identical results; an optional last argument
// picks the kernels, e.g. *kernels_for(HWY_AVX2), default active_kernels()):
//   quantize(x, params, q, rounding, application)       f32 -> int8/uint8/int16/uint16/int32
//   fake_quantize(x, params, y, rounding, application)  f32 -> f32
//   dequantize(q, params, x)                            int -> f32
//   quantize_packed(x, params, bits, out, out_size, rounding, application)  2/4-bit packed
//   dequantize_packed(packed, bits, is_signed, params, x)
//   requantize(acc, requant_params, out, layer)         int32 -> int8/uint8/int16/uint16/int32
// Raw-pointer API (contiguous buffers, per tensor or per row/column):
//   quantize(x, n, scale, zero_point, [options,] out)
//   quantize_per_channel(x, rows, cols, axis, scales, zero_points, [options,] out)
//   fake_quantize(x, n, scale, zero_point, options, y), dequantize(q, n, scale, zero_point, x)
//   fake_quantize_per_channel(x, rows, cols, axis, scales, zero_points, options, y)
//   dequantize_per_channel(q, rows, cols, axis, scales, zero_points, x)
//   requantize(acc, n, requant_params, out)
// Reductions for observers: minmax, absmax, minmax_per_param (per channel / per block),
// histogram, histogram_minmax, grid_histogram, grid_histogram_minmax.
// The kernels: by default the runtime-dispatched ones (when quantkit/simd/implementation.hpp
// is linked in) or this translation unit's static target; a last argument picks one target's,
// as a pointer or a reference: kernels_for(HWY_AVX2), *available_kernels()[i].
//
// Every built-in rounding policy (RoundHalfEven, RoundHalfAway, RoundHalfUp, RoundFloor,
// RoundTowardZero, RoundStochastic<G>) runs in SIMD on every target; stochastic rounding
// draws its uniforms in element order into a buffer (exactly RoundStochastic::next_uniform,
// none for NaN elements), then rounds with vector ops. User-defined rounding policies
// (RoundingMode::custom) run the scalar reference. So do the few parameter sets the kernels
// do not cover, all outside what quantkit's own schemes produce: a quantization range wider
// than the output type (the reference wraps) or beyond +-2^24 (int32 outputs), requantization
// constants outside the schemes' domains (shifts beyond 31), and non-float/non-integer types.
// Bad input throws quantkit::Error naming the function, the argument (scale[c], zero_point[c],
// constants[c].shift) and the value, before any output is written: scales not finite and > 0,
// zero points outside the quantization range (quantize) or the input type (raw dequantize),
// fixed-point shifts where the arithmetic is undefined (beyond [-62, 32], single rounding
// [-32, 30]). An output must not overlap its input, not even exactly (in place): the kernels
// read and write through restrict pointers, and a row's last vector may be computed again
// from the input over values already stored (for in-place use, a copy first, as
// ptq::FakeQuantMode does).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/params.hpp"
#include "quantkit/policy/format.hpp"
#include "quantkit/policy/granularity.hpp"
#include "quantkit/policy/requantization.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/policy/scale_application.hpp"
#include "quantkit/ref/pack.hpp"
#include "quantkit/ref/quantize.hpp"
#include "quantkit/ref/requantize.hpp"
#include "quantkit/simd/abi.hpp"
#include "quantkit/simd/dispatch.hpp"
#include "quantkit/simd/param_array.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace simd {
namespace detail {

template <class T>
constexpr bool is_kernel_int_v =
    std::is_same<T, std::int8_t>::value || std::is_same<T, std::uint8_t>::value ||
    std::is_same<T, std::int16_t>::value || std::is_same<T, std::uint16_t>::value ||
    std::is_same<T, std::int32_t>::value;

template <class R>
struct is_round_stochastic : std::false_type {};
template <class G>
struct is_round_stochastic<RoundStochastic<G>> : std::true_type {};

// The mode a kernel implements for rounding policy R: only quantkit's own policy types
// (a user type is `custom` whatever its `mode` says, and runs the reference).
template <class R>
constexpr RoundingMode kernel_rounding() {
  using T = std::remove_cv_t<R>;
  if constexpr (std::is_same<T, RoundHalfEven>::value) return RoundingMode::half_even;
  else if constexpr (std::is_same<T, RoundHalfAway>::value) return RoundingMode::half_away;
  else if constexpr (std::is_same<T, RoundHalfUp>::value) return RoundingMode::half_up;
  else if constexpr (std::is_same<T, RoundFloor>::value) return RoundingMode::floor;
  else if constexpr (std::is_same<T, RoundTowardZero>::value) return RoundingMode::toward_zero;
  else if constexpr (is_round_stochastic<T>::value) return RoundingMode::stochastic;
  else return RoundingMode::custom;
}

// The uniforms of RoundStochastic, in element order; NaN elements draw nothing.
template <class R>
void fill_uniforms(void* context, const float* x, std::size_t n, float* u) {
  const R& round = *static_cast<const R*>(context);
  for (std::size_t i = 0; i < n; ++i) u[i] = std::isnan(x[i]) ? 0.0f : round.next_uniform();
}

template <class R>
UniformSource uniform_source(const R& round) {
  UniformSource s;
  if constexpr (is_round_stochastic<std::remove_cv_t<R>>::value) {
    s.context = const_cast<void*>(static_cast<const void*>(&round));
    s.fill = &fill_uniforms<std::remove_cv_t<R>>;
  }
  return s;
}

// Whether the kernels cover quantization range r into Out: the range fits Out (the reference
// wraps otherwise) and |qmin|, |qmax| <= 2^24 (clamping in float is exact).
template <class Out>
bool range_ok(IntRange r) {
  constexpr std::int64_t kFloatExact = std::int64_t{1} << 24;
  if (r.qmin < -kFloatExact || r.qmax > kFloatExact) return false;
  if constexpr (std::is_same<Out, float>::value) {
    return true;
  } else {
    return r.qmin >= std::numeric_limits<Out>::min() && r.qmax <= std::numeric_limits<Out>::max();
  }
}

// Written into the argument struct's Plan (a Plan is 344 bytes: a copy per call showed in
// the profile of 4K-element calls).
inline void contiguous_plan(std::size_t n, Plan& plan) {
  plan.rank = 1;
  plan.shape[0] = static_cast<std::int64_t>(n);
  plan.in_stride[0] = 1;
  plan.out_stride[0] = 1;
  plan.param_div[0] = 1;
}
inline Plan contiguous_plan(std::size_t n) {
  Plan plan;
  contiguous_plan(n, plan);
  return plan;
}

// The plan of an element-wise operation over `shape` (input strides `sin`, output strides
// `sout`) whose parameters follow `layout`: dimensions of extent 1 dropped, neighbours merged
// wherever both views and the parameter index allow, so that contiguous tensors become one
// long row (per-tensor), rows per channel (per-channel, axis not last), or rows with
// per-element parameter vectors (per-channel on the last axis, per-group across it).
// Written into `plan` (the Plan inside the kernel's argument struct: no 344-byte copy per call);
// entries past plan.rank are left as they are.
inline void make_plan(const Dims& shape, const Dims& sin, const Dims& sout, const ParamLayout& layout,
                      Plan& plan) {
  if (layout.kind() == GranularityKind::per_tensor) {
    // Both views row-major and dense (strides of extent-1 dimensions do not matter): one row,
    // without the general merge (~120 instructions, a tenth of a small call's front end).
    std::int64_t dense = 1;
    bool contiguous = true;
    for (int d = shape.rank - 1; d >= 0; --d) {
      if (shape[d] != 1) contiguous &= sin[d] == dense && sout[d] == dense;
      dense *= shape[d];
    }
    if (contiguous) {
      plan.inner = InnerParams::constant;
      plan.inner_block = 1;
      plan.param_stride[0] = 0;
      contiguous_plan(static_cast<std::size_t>(dense), plan);
      return;
    }
  }
  struct Dim {
    std::int64_t n, si, so, ps, pd;
  };
  const int rank = shape.rank;
  std::int64_t pstride[max_rank] = {};
  std::int64_t pdiv[max_rank];
  for (int d = 0; d < max_rank; ++d) pdiv[d] = 1;
  if (layout.kind() == GranularityKind::per_channel) {
    pstride[layout.axis()] = 1;
  } else if (layout.kind() == GranularityKind::per_group) {
    const int a = layout.axis();
    const std::int64_t b = layout.block_size();
    Dims pshape = shape;
    pshape[a] = (shape[a] + b - 1) / b;
    const Dims ps = contiguous_strides(pshape);
    for (int d = 0; d < rank; ++d) pstride[d] = ps[d];
    pdiv[a] = b;
  }
  plan.inner = InnerParams::constant;
  plan.inner_block = 1;
  if (shape.product() == 0) {
    plan.rank = 1;
    plan.shape[0] = 0;
    plan.in_stride[0] = plan.out_stride[0] = 1;
    plan.param_stride[0] = 0;
    plan.param_div[0] = 1;
    return;
  }
  Dim dims[max_rank];
  int r = 0;
  for (int d = 0; d < rank; ++d)
    if (shape[d] != 1) dims[r++] = Dim{shape[d], sin[d], sout[d], pstride[d], pdiv[d]};
  if (r == 0) dims[r++] = Dim{1, 1, 1, 0, 1};
  // Merge from the innermost dimension outwards.
  Dim merged[max_rank];
  int m = 0;
  merged[0] = dims[r - 1];
  for (int d = r - 2; d >= 0; --d) {
    Dim& inner = merged[m];
    const Dim& outer = dims[d];
    if (outer.si == inner.si * inner.n && outer.so == inner.so * inner.n && outer.pd == 1 &&
        inner.pd == 1 && outer.ps == inner.ps * inner.n) {
      inner.n *= outer.n;
    } else {
      merged[++m] = outer;
    }
  }
  plan.rank = m + 1;
  for (int d = 0; d < plan.rank; ++d) {
    const Dim& src = merged[m - d];
    plan.shape[d] = src.n;
    plan.in_stride[d] = src.si;
    plan.out_stride[d] = src.so;
    plan.param_stride[d] = src.ps;
    plan.param_div[d] = src.pd;
  }
  const int last = plan.rank - 1;
  // Along a row the parameter index advances by 1 per element or per block (the parameter
  // layout is row-major with the row's dimension innermost), or not at all.
  if (plan.param_stride[last] == 0) {
    plan.inner = InnerParams::constant;
  } else if (plan.param_div[last] == 1) {
    plan.inner = InnerParams::per_element;
  } else {
    plan.inner = InnerParams::blocks;
    plan.inner_block = plan.param_div[last];
  }
  plan.param_stride[last] = 0;  // the row's own term is handled by `inner`
  plan.param_div[last] = 1;
}

// After a branch-free check failed: throws naming the first bad scale or zero point of a raw
// call, e.g. "simd::quantize_per_channel: scale[3] is nan; expected a finite value > 0".
// `what` is the entry point; `indexed`: per channel ("scale[3]") or per tensor ("scale");
// zero points must lie in [zlo, zhi], which `zwhat` explains.
inline void fail_raw_params(const char* what, bool indexed, const float* scales,
                            const std::int32_t* zero_points, std::size_t count, std::int64_t zlo,
                            std::int64_t zhi, const char* zwhat,
                            ScaleApplicationKind application = ScaleApplicationKind::divide) {
  const auto arg = [indexed](const char* name, std::size_t c) {
    return indexed ? std::string(name) + "[" + std::to_string(c) + "]" : std::string(name);
  };
  for (std::size_t c = 0; c < count; ++c) {
    if (!(scales[c] > 0.0f) || !std::isfinite(scales[c]))
      quantkit::detail::fail(what, ": ", arg("scale", c), " is ", scales[c], "; expected a finite value > 0");
    if (zero_points[c] < zlo || zero_points[c] > zhi)
      quantkit::detail::fail(what, ": ", arg("zero_point", c), " is ", zero_points[c], "; expected a value in [",
                             zlo, ", ", zhi, "]", zwhat);
  }
  if (application == ScaleApplicationKind::divide) return;
  for (std::size_t c = 0; c < count; ++c)
    if (!reciprocal_finite(scales[c]))
      quantkit::detail::fail(what, ": ", arg("scale", c), " is ", scales[c],
                             ", whose float reciprocal is inf; multiply_by_reciprocal needs a scale >= ",
                             kMinReciprocalScale, " (divide takes any finite scale > 0)");
}

template <class Q>
constexpr IntRange full_range() {
  return IntRange{static_cast<std::int32_t>(std::numeric_limits<Q>::min()),
                  static_cast<std::int32_t>(std::numeric_limits<Q>::max())};
}

// Runs a kernel: on `kernels` when given, else on the runtime-dispatched kernels when the
// implementation is linked in, else on this translation unit's static target — instantiating
// only the variant this call site needs (compile time of header-only users).
template <class Out, RoundingMode kMode>
void run_quantize(const Kernels* kernels, QuantizeArgs& a) {
  a.stream = stream_output(a.plan, sizeof(float) + sizeof(Out));
  if (kernels != nullptr) return kernels->quantize(a);
#if QUANTKIT_SIMD_DYNAMIC_REF == 2
  dynamic_kernels()->quantize(a);
#else
#if QUANTKIT_SIMD_DYNAMIC_REF
  if (dynamic_linked()) return dynamic_kernels()->quantize(a);
#endif
  HWY_STATIC_DISPATCH(QuantizeTyped)<Out, kMode>(a);
#endif
}
template <class Out>
void run_quantize_any_rounding(const Kernels* kernels, QuantizeArgs& a) {
  a.stream = stream_output(a.plan, sizeof(float) + sizeof(Out));
  if (kernels != nullptr) return kernels->quantize(a);
#if QUANTKIT_SIMD_DYNAMIC_REF == 2
  dynamic_kernels()->quantize(a);
#else
#if QUANTKIT_SIMD_DYNAMIC_REF
  if (dynamic_linked()) return dynamic_kernels()->quantize(a);
#endif
  HWY_STATIC_DISPATCH(QuantizeTo)<Out>(a);
#endif
}
template <class In>
void run_dequantize(const Kernels* kernels, DequantizeArgs& a) {
  a.stream = stream_output(a.plan, sizeof(In) + sizeof(float));
  if (kernels != nullptr) return kernels->dequantize(a);
#if QUANTKIT_SIMD_DYNAMIC_REF == 2
  dynamic_kernels()->dequantize(a);
#else
#if QUANTKIT_SIMD_DYNAMIC_REF
  if (dynamic_linked()) return dynamic_kernels()->dequantize(a);
#endif
  HWY_STATIC_DISPATCH(DequantizeFrom)<In>(a);
#endif
}
template <class Out, RequantScheme kScheme, RoundingMode kMode>
void run_requantize(const Kernels* kernels, const RequantizeArgs& a) {
  if (kernels != nullptr) return kernels->requantize(a);
#if QUANTKIT_SIMD_DYNAMIC_REF == 2
  dynamic_kernels()->requantize(a);
#else
#if QUANTKIT_SIMD_DYNAMIC_REF
  if (dynamic_linked()) return dynamic_kernels()->requantize(a);
#endif
  HWY_STATIC_DISPATCH(RequantizeTyped)<Out, kScheme, kMode>(a);
#endif
}
// The other kernels: a function of `kernels`, of the runtime-dispatched table, or the static
// target's function.
// Under QUANTKIT_SIMD_DYNAMIC the static function is not even named (QUANTKIT_SIMD_STATIC_FN
// is nullptr), so the translation unit compiles no kernels.
template <class T>
struct NonDeduced {
  using type = T;
};
template <class F>
F pick(const Kernels* kernels, F Kernels::*member, typename NonDeduced<F>::type static_fn) {
  if (kernels != nullptr) return kernels->*member;
#if QUANTKIT_SIMD_DYNAMIC_REF == 2
  (void)static_fn;
  return dynamic_kernels()->*member;
#else
#if QUANTKIT_SIMD_DYNAMIC_REF
  if (dynamic_linked()) return dynamic_kernels()->*member;
#endif
  return static_fn;
#endif
}
#if QUANTKIT_SIMD_DYNAMIC_REF == 2
#define QUANTKIT_SIMD_STATIC_FN(name) nullptr
#else
#define QUANTKIT_SIMD_STATIC_FN(name) &HWY_STATIC_DISPATCH(name)
#endif

// The target's quantize_params kernel over count parameters: zero / factor written unless
// nullptr; true when every scale is finite and > 0 and every zero point lies in r.
inline bool vector_params(const float* scales, const std::int32_t* zero_points, std::size_t count, IntRange r,
                          float* zero, float* factor, const Kernels* kernels) {
  QuantizeParamsArgs a;
  a.scale = scales;
  a.zero_point = zero_points;
  a.count = count;
  a.qmin = r.qmin;
  a.qmax = r.qmax;
  a.zero = zero;
  a.factor = factor;
  return pick(kernels, &Kernels::quantize_params, QUANTKIT_SIMD_STATIC_FN(QuantizeParams))(a) == 0;
}

// The kernels' per-parameter floats: zero[i] = float(zero_points[i]) and the factor array,
// which is `scales` itself when dividing (no copy) or 1/scale in `factor`, into *pf. In the
// same branch-free pass the values' check (QuantParams::validate's): returns false when a
// scale is not finite and > 0, its reciprocal (when one is taken) is not finite, or a zero
// point lies outside r. Per-channel and per-group
// parameters are converted on every call: more than one go through the target's
// quantize_params kernel (vectors of the target's width; this loop is compiled for the
// baseline), one (per tensor) through the loop here.
inline bool kernel_params(ScaleApplicationKind application, const float* scales,
                          const std::int32_t* zero_points, std::size_t count, IntRange r,
                          ParamArray<float>& factor, ParamArray<float>& zero, const float*& pf,
                          const Kernels* kernels) {
  const bool reciprocal = application != ScaleApplicationKind::divide;
  pf = reciprocal ? factor.data() : scales;
  if (count > 1)
    return vector_params(scales, zero_points, count, r, zero.data(), reciprocal ? factor.data() : nullptr,
                         kernels);
  float* z = zero.data();
  const quantkit::detail::ParamTest test(r);
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < count; ++i) {
    z[i] = static_cast<float>(zero_points[i]);
    bad |= test.bad(scales[i], zero_points[i]);
  }
  if (reciprocal) {
    float* f = factor.data();
    for (std::size_t i = 0; i < count; ++i) {
      f[i] = scale_factor(application, scales[i]);
      bad |= static_cast<std::uint32_t>(!(f[i] <= std::numeric_limits<float>::max()));  // reciprocal_finite
    }
  }
  return bad == 0;
}

// Whether every scale is finite and > 0 and every zero point lies in r (ParamTest) — the
// per-call check of parameters a kernel reads as they are (dequantize's): more than one on the
// target's vectors (quantize_params without outputs), one inline.
inline bool params_ok(const float* scales, const std::int32_t* zero_points, std::size_t count, IntRange r,
                      const Kernels* kernels) {
  if (count > 1) return vector_params(scales, zero_points, count, r, nullptr, nullptr, kernels);
  return quantkit::detail::params_valid(scales, zero_points, count, r);
}

// The zero points the dequantize kernels cover for inputs In: they subtract q - z in int32,
// which int32 inputs with a nonzero zero point can overflow (ONNX has no int32 zero point), and
// so can narrower inputs with a zero point far outside their type (the View API takes any zero
// point inside the parameters' range; the raw calls reject those).
template <class In>
constexpr IntRange dequantize_zero_points() {
  if constexpr (std::is_same<In, std::int32_t>::value) return IntRange{0, 0};
  else return full_range<In>();
}

// What the View dequantize does with its parameters (counts checked): run the kernels (one
// pass over p.range narrowed to the covered zero points passes), run the reference (a zero
// point the kernels do not cover; it checks the values itself), or fail (a scale not finite
// and > 0, a zero point outside the range).
enum class DequantizeParams { kernels, reference, invalid };
template <class In>
DequantizeParams dequantize_params(const QuantParams& p, const Kernels* kernels) {
  const float* s = p.scale.data();
  const std::int32_t* z = p.zero_point.data();
  const std::size_t count = p.size();
  constexpr IntRange kCovered = dequantize_zero_points<In>();
  const IntRange both{std::max(p.range.qmin, kCovered.qmin), std::min(p.range.qmax, kCovered.qmax)};
  if (both.qmin <= both.qmax && params_ok(s, z, count, both, kernels)) return DequantizeParams::kernels;
  // Which of the two failed: one scalar pass, on failing calls only.
  const quantkit::detail::ParamTest test(p.range), covered(kCovered);
  std::uint32_t bad = 0, uncovered = 0;
  for (std::size_t i = 0; i < count; ++i) {
    bad |= test.bad(s[i], z[i]);
    uncovered |= covered.bad(1.0f, z[i]);
  }
  if (uncovered != 0) return DequantizeParams::reference;
  return bad == 0 ? DequantizeParams::kernels : DequantizeParams::invalid;
}

}  // namespace detail

// ==================================================================== View API

// q = clamp(R(x / s) + z) — quantkit::ref::quantize, in SIMD.
template <class In, int RI, class Q, int RO, class Rounding = RoundHalfEven>
void quantize(const View<In, RI>& x, const QuantParams& p, const View<Q, RO>& q,
              const Rounding& round = {},
              ScaleApplicationKind application = ScaleApplicationKind::divide,
              const Kernels* kernels = nullptr) {
  static_assert(std::is_same<std::remove_const_t<In>, float>::value,
                "simd::quantize: input must be float");
  using Out = std::remove_const_t<Q>;
  constexpr RoundingMode mode = detail::kernel_rounding<Rounding>();
  if constexpr (mode == RoundingMode::custom || !detail::is_kernel_int_v<Out>) {
    ref::quantize(x, p, q, round, application);
  } else {
    const ParamLayout layout = ref::impl::checked_layout(x, q, p, "quantize", ref::impl::ParamValues::caller_checks);
    if (!detail::range_ok<Out>(p.range)) {
      ref::quantize(x, p, q, round, application);
      return;
    }
    const std::size_t count = p.size();
    detail::ParamArray<float> factor(count), zero(count);
    const float* pf = nullptr;
    if (!detail::kernel_params(application, p.scale.data(), p.zero_point.data(), count, p.range, factor, zero, pf,
                                kernels))
      p.validate(x.name(), application);  // throws, naming the first bad value
    QuantizeArgs a;
    detail::make_plan(x.shape(), x.strides(), q.strides(), layout, a.plan);
    a.x = x.data();
    a.out = const_cast<Out*>(q.data());
    a.out_type = elem_type_of<Out>::value;
    a.rounding = mode;
    a.application = application;
    a.factor = pf;
    a.zero = zero.data();
    a.qmin = static_cast<float>(p.range.qmin);
    a.qmax = static_cast<float>(p.range.qmax);
    a.uniforms = detail::uniform_source(round);
    detail::run_quantize<Out, mode>(kernels, a);
  }
}

// y = dequantize(quantize(x)) — quantkit::ref::fake_quantize, in SIMD.
template <class In, int RI, int RO, class Rounding = RoundHalfEven>
void fake_quantize(const View<In, RI>& x, const QuantParams& p, const View<float, RO>& y,
                   const Rounding& round = {},
                   ScaleApplicationKind application = ScaleApplicationKind::divide,
                   const Kernels* kernels = nullptr) {
  static_assert(std::is_same<std::remove_const_t<In>, float>::value,
                "simd::fake_quantize: input must be float");
  constexpr RoundingMode mode = detail::kernel_rounding<Rounding>();
  if constexpr (mode == RoundingMode::custom) {
    ref::fake_quantize(x, p, y, round, application);
  } else {
    const ParamLayout layout =
        ref::impl::checked_layout(x, y, p, "fake_quantize", ref::impl::ParamValues::caller_checks);
    if (!detail::range_ok<float>(p.range)) {
      ref::fake_quantize(x, p, y, round, application);
      return;
    }
    const std::size_t count = p.size();
    detail::ParamArray<float> factor(count), zero(count);
    const float* pf = nullptr;
    if (!detail::kernel_params(application, p.scale.data(), p.zero_point.data(), count, p.range, factor, zero, pf,
                                kernels))
      p.validate(x.name(), application);  // throws, naming the first bad value
    QuantizeArgs a;
    detail::make_plan(x.shape(), x.strides(), y.strides(), layout, a.plan);
    a.x = x.data();
    a.out = y.data();
    a.out_type = ElemType::f32;
    a.rounding = mode;
    a.application = application;
    a.factor = pf;
    a.zero = zero.data();
    a.scale = p.scale.data();
    a.qmin = static_cast<float>(p.range.qmin);
    a.qmax = static_cast<float>(p.range.qmax);
    a.uniforms = detail::uniform_source(round);
    detail::run_quantize<float, mode>(kernels, a);
  }
}

// x = float(q - z) * s — quantkit::ref::dequantize, in SIMD.
template <class Q, int RI, int RO>
void dequantize(const View<Q, RI>& q, const QuantParams& p, const View<float, RO>& x,
                const Kernels* kernels = nullptr) {
  using In = std::remove_const_t<Q>;
  if constexpr (!detail::is_kernel_int_v<In>) {
    ref::dequantize(q, p, x);
  } else {
    const ParamLayout layout =
        ref::impl::checked_layout(q, x, p, "dequantize", ref::impl::ParamValues::caller_checks);
    switch (detail::dequantize_params<In>(p, kernels)) {
      case detail::DequantizeParams::kernels: break;
      case detail::DequantizeParams::reference: return ref::dequantize(q, p, x);
      case detail::DequantizeParams::invalid: p.validate(q.name()); break;  // throws
    }
    DequantizeArgs a;
    detail::make_plan(q.shape(), q.strides(), x.strides(), layout, a.plan);
    a.q = q.data();
    a.in_type = elem_type_of<In>::value;
    a.out = x.data();
    a.scale = p.scale.data();
    a.zero = p.zero_point.data();
    detail::run_dequantize<In>(kernels, a);
  }
}

// 2-/4-bit values quantized and packed low bits first in row-major order of x's shape
// (ref::quantize then ref::pack). `out` holds packed_size(x.size(), bits) bytes.
template <class In, int RI, class Rounding = RoundHalfEven>
void quantize_packed(const View<In, RI>& x, const QuantParams& p, int bits, std::uint8_t* out,
                     std::size_t out_size, const Rounding& round = {},
                     ScaleApplicationKind application = ScaleApplicationKind::divide,
                     const Kernels* kernels = nullptr) {
  static_assert(std::is_same<std::remove_const_t<In>, float>::value,
                "simd::quantize_packed: input must be float");
  const auto n = static_cast<std::size_t>(x.size());
  if (bits != 2 && bits != 4)
    quantkit::detail::fail(quantkit::detail::describe_tensor(x.name()), ": cannot pack ", bits,
                           "-bit values; expected 2 or 4 bits");
  if (out_size < packed_size(n, bits))
    quantkit::detail::fail(quantkit::detail::describe_tensor(x.name()), ": packed output has ",
                           out_size, " bytes; expected ", packed_size(n, bits), " for ", n, " values");
  const auto run = [&](auto tag) {
    using Value = decltype(tag);
    constexpr std::size_t kChunk = 4096;  // divisible by 2 and 4: chunks start on byte boundaries
    if (p.granularity.kind == GranularityKind::per_tensor && x.is_contiguous() && n > kChunk) {
      p.validate(x.name());
      Value values[kChunk];
      for (std::size_t i = 0; i < n; i += kChunk) {
        const std::size_t m = n - i < kChunk ? n - i : kChunk;
        const Dims shape{static_cast<std::int64_t>(m)};
        quantize(View<const float>(x.data() + i, shape), p, View<Value>(values, shape), round,
                 application, kernels);
        detail::pick(kernels, &Kernels::pack, QUANTKIT_SIMD_STATIC_FN(Pack))(reinterpret_cast<const std::uint8_t*>(values), m,
                                               bits, out + i / (8 / bits));
      }
      return;
    }
    std::vector<Value> values(n);
    quantize(x, p, View<Value>(values.data(), x.shape(), x.name()), round, application, kernels);
    detail::pick(kernels, &Kernels::pack, QUANTKIT_SIMD_STATIC_FN(Pack))(reinterpret_cast<const std::uint8_t*>(values.data()), n,
                                           bits, out);
  };
  if (p.range.qmin < 0)
    run(std::int8_t{});
  else
    run(std::uint8_t{});
}

// Unpacks n = x.size() values (sign-extended when is_signed) and dequantizes them into x.
template <int RO>
void dequantize_packed(const std::uint8_t* packed, std::size_t packed_bytes, int bits,
                       bool is_signed, const QuantParams& p, const View<float, RO>& x,
                       const Kernels* kernels = nullptr) {
  const auto n = static_cast<std::size_t>(x.size());
  if (bits != 2 && bits != 4)
    quantkit::detail::fail(quantkit::detail::describe_tensor(x.name()), ": cannot unpack ", bits,
                           "-bit values; expected 2 or 4 bits");
  if (packed_bytes != packed_size(n, bits))
    quantkit::detail::fail(quantkit::detail::describe_tensor(x.name()), ": packed input has ",
                           packed_bytes, " bytes; expected ", packed_size(n, bits), " for ", n,
                           " values");
  if (is_signed) {
    std::vector<std::int8_t> values(n);
    detail::pick(kernels, &Kernels::unpack, QUANTKIT_SIMD_STATIC_FN(Unpack))(packed, n, bits, true,
                                             reinterpret_cast<std::uint8_t*>(values.data()));
    dequantize(View<const std::int8_t>(values.data(), x.shape(), x.name()), p, x, kernels);
  } else {
    std::vector<std::uint8_t> values(n);
    detail::pick(kernels, &Kernels::unpack, QUANTKIT_SIMD_STATIC_FN(Unpack))(packed, n, bits, false, values.data());
    dequantize(View<const std::uint8_t>(values.data(), x.shape(), x.name()), p, x, kernels);
  }
}

namespace detail {

// Per-channel kernel constants of a requantization scheme (see RequantizeArgs); false when a
// constant lies outside what the kernels cover (the reference handles it).
template <class Scheme>
bool requant_constants(const typename Scheme::Constants& c, std::int32_t* k, float* kf) {
  constexpr RequantScheme s = Scheme::scheme;
  if constexpr (s == RequantScheme::float_multiplier) {
    *kf = c.multiplier;
    return std::isfinite(c.multiplier);
  } else if constexpr (s == RequantScheme::power_of_two) {
    if (c.shift < 0 || c.shift > 31) return false;
    k[0] = c.shift;
    k[1] = static_cast<std::int32_t>((std::int64_t{1} << c.shift) - 1);
    k[2] = c.shift == 0 ? 1 : static_cast<std::int32_t>(std::int64_t{1} << (c.shift - 1));
    return true;
  } else if constexpr (s == RequantScheme::fixed_point) {
    // The kernels derive the masks and saturation bounds from left and right; right in
    // unsigned arithmetic (-INT_MIN is undefined; its 2^31 is not covered).
    const std::uint32_t left = c.shift > 0 ? static_cast<std::uint32_t>(c.shift) : 0u;
    const std::uint32_t right = c.shift < 0 ? 0u - static_cast<std::uint32_t>(c.shift) : 0u;
    k[0] = c.multiplier;
    k[1] = static_cast<std::int32_t>(left);
    k[2] = static_cast<std::int32_t>(right);
    return (left | right) <= 31u;
  } else if constexpr (s == RequantScheme::fixed_point_single) {
    if (c.shift < -31 || c.shift > 30) return false;
    k[0] = c.multiplier;
    k[1] = 30 - c.shift;
    return true;
  } else if constexpr (s == RequantScheme::single_shift) {
    if (c.shift < 0 || c.shift > 63) return false;
    k[0] = c.shift > 31 ? 31 : c.shift;  // int32 >> 31.. is the sign either way
    return true;
  } else {  // double_shift
    if (c.shift1 < 0 || c.shift1 > 31 || c.shift2 < 1 || c.shift2 > 31) return false;
    k[0] = c.shift1;
    k[1] = c.shift2;
    k[2] = static_cast<std::int32_t>(std::int64_t{1} << (c.shift2 - 1));
    return true;
  }
}

// The k[] slots requant_constants writes for a scheme (the kernels read no others).
constexpr int requant_slots(RequantScheme s) {
  switch (s) {
    case RequantScheme::float_multiplier: return 0;
    case RequantScheme::power_of_two: return 3;
    case RequantScheme::fixed_point: return 3;
    case RequantScheme::fixed_point_single: return 2;
    case RequantScheme::single_shift: return 1;
    case RequantScheme::double_shift: return 3;
  }
  return 7;
}

template <class Scheme, class = void>
struct requant_rounding {
  static constexpr RoundingMode value = RoundingMode::half_even;
};
template <class Scheme>
struct requant_rounding<Scheme, std::void_t<typename Scheme::rounding>> {
  static constexpr RoundingMode value = kernel_rounding<typename Scheme::rounding>();
};

// The constants' shifts where the schemes' arithmetic is defined (the reference runs the
// shifts the kernels do not cover, e.g. fixed-point beyond +-31): checked before any shift is
// negated (-INT_MIN is undefined); see quantkit::detail::check_requant_constants.
template <class Scheme>
void check_requant_shifts(const RequantParams<Scheme>& p, const std::string& layer) {
  quantkit::detail::check_requant_constants<Scheme>(p.constants, [&] {
    return "simd::requantize: " + (layer.empty() ? std::string() : "layer '" + layer + "': ");
  });
}

template <class Scheme>
constexpr bool requant_supported() {
  constexpr RequantScheme s = Scheme::scheme;
  if constexpr (s == RequantScheme::float_multiplier || s == RequantScheme::power_of_two) {
    constexpr RoundingMode m = requant_rounding<Scheme>::value;
    return m != RoundingMode::custom && m != RoundingMode::stochastic;
  } else {
    return true;
  }
}

// A layer's constants in the kernels' form for `count` channels: kp[s][c] for the slots the
// scheme reads (requant_slots), kfp[c] for the float scheme. False when one is outside what
// the kernels cover (the reference runs the call then); an undefined shift throws, naming it.
// More than one channel: the target's requant_constants kernel (vectors of the target's width
// at any optimization level; the scalar loops it replaced stayed scalar at -O2: a 64 x 64
// fixed-point call on Zen 5 took 455 ns at -O2 with them, 409 with the kernel, 382 at -O3).
template <class Scheme>
bool kernel_requant_constants(const RequantParams<Scheme>& p, std::size_t count, std::int32_t* const* kp,
                              float* kfp, const std::string& layer, const Kernels* kernels) {
  using C = typename Scheme::Constants;
  constexpr RequantScheme kScheme = Scheme::scheme;
  if (count == 1 && p.constants.size() == 1) {  // per tensor: inline
    std::int32_t kc[7] = {};
    float kfc = 0.0f;
    const bool covered = requant_constants<Scheme>(p.constants[0], kc, &kfc);
    for (int s = 0; s < requant_slots(kScheme); ++s) kp[s][0] = kc[s];
    if constexpr (kScheme == RequantScheme::float_multiplier) kfp[0] = kfc;
    return covered;
  }
  // the kernel reads the constants as 32-bit words (RequantConstantsArgs)
  static_assert(std::is_standard_layout<C>::value && sizeof(int) == sizeof(std::int32_t), "32-bit constants");
  RequantConstantsArgs a;
  a.scheme = kScheme;
  a.constants = p.constants.data();
  a.broadcast = p.constants.size() == 1;
  a.count = count;
  if constexpr (kScheme == RequantScheme::float_multiplier) {
    static_assert(sizeof(C) == sizeof(float), "one word");
    a.kf = kfp;
  } else if constexpr (kScheme == RequantScheme::double_shift) {
    static_assert(sizeof(C) == 2 * sizeof(std::int32_t) && offsetof(C, shift2) == sizeof(std::int32_t), "shift1, shift2");
    a.shift_min[0] = 0;
    a.shift_max[0] = Scheme::kMaxShift1;
    a.shift_min[1] = Scheme::kMinShift2;
    a.shift_max[1] = Scheme::kMaxShift2;
  } else if constexpr (kScheme == RequantScheme::fixed_point || kScheme == RequantScheme::fixed_point_single) {
    static_assert(sizeof(C) == 2 * sizeof(std::int32_t) && offsetof(C, shift) == sizeof(std::int32_t), "multiplier, shift");
    a.shift_min[1] = Scheme::kMinShift;
    a.shift_max[1] = Scheme::kMaxShift;
  } else {
    static_assert(sizeof(C) == sizeof(std::int32_t), "one shift");
    a.shift_min[0] = Scheme::kMinShift;
    a.shift_max[0] = Scheme::kMaxShift;
  }
  for (int s = 0; s < 3; ++s) a.k[s] = s < requant_slots(kScheme) ? kp[s] : nullptr;
  const std::uint32_t r = pick(kernels, &Kernels::requant_constants, QUANTKIT_SIMD_STATIC_FN(RequantConstants))(a);
  if ((r & kRequantUndefined) != 0) check_requant_shifts<Scheme>(p, layer);  // throws, naming it
  return r == 0;
}

// The kernel over acc -> out, with the constants and biases in the kernels' form; `plan`, when
// given, was made for these views' shape and strides.
template <class Scheme, class O, class AccView, class OutView>
void run_requantize_kernel(const AccView& acc, const OutView& out, const ParamLayout& layout,
                           const std::int32_t* const* k, const float* kf, const std::int32_t* bias,
                           const RequantParams<Scheme>& p, const Plan* plan, const Kernels* kernels) {
  RequantizeArgs a;
  if (plan != nullptr) {
    a.plan = *plan;
  } else {
    make_plan(acc.shape(), acc.strides(), out.strides(), layout, a.plan);
  }
  a.acc = acc.data();
  a.out = out.data();
  a.out_type = elem_type_of<O>::value;
  a.scheme = Scheme::scheme;
  a.rounding = requant_rounding<Scheme>::value;
  for (int s = 0; s < 7; ++s) a.k[s] = k[s];
  a.kf = kf;
  a.bias = bias;
  a.zero_point = p.output_zero_point;
  a.lo = p.clamp_min;
  a.hi = p.clamp_max;
  a.stream = stream_output(a.plan, sizeof(std::int32_t) + sizeof(O));
  a.rows_in_order = static_cast<std::size_t>(a.plan.size()) * (sizeof(std::int32_t) + sizeof(O)) > rows_in_order_bytes();
  run_requantize<O, Scheme::scheme, requant_rounding<Scheme>::value>(kernels, a);
}

}  // namespace detail

// out = clamp(Scheme::apply(sat32(acc + bias[c]), k[c]) + zp, clamp_min, clamp_max) —
// quantkit::ref::requantize, in SIMD (same checks and error messages).
template <class Scheme, class Acc, class Out, int RI, int RO>
void requantize(const View<Acc, RI>& acc, const RequantParams<Scheme>& p, const View<Out, RO>& out,
                const std::string& layer = {}, const Kernels* kernels = nullptr) {
  static_assert(std::is_same<std::remove_const_t<Acc>, std::int32_t>::value,
                "simd::requantize: accumulators must be std::int32_t");
  using O = std::remove_const_t<Out>;
  // Per-channel constants are checked in their conversion pass below (the requant_constants
  // kernel; a separate pass was 4 % of a 64-channel call of 4K values on Zen 5); every other
  // call checks them here, before any path negates or shifts by one. Either way a bad shift is
  // named before any other error, as the reference names it.
  const bool check_in_pass = detail::requant_supported<Scheme>() && detail::is_kernel_int_v<O> &&
                             p.constants.size() > 1;
  if (!check_in_pass) detail::check_requant_shifts<Scheme>(p, layer);
  const auto reference = [&] {  // the reference's result or error (its checks come first)
    if (check_in_pass) detail::check_requant_shifts<Scheme>(p, layer);
    ref::requantize(acc, p, out, layer);
  };
  if constexpr (!detail::requant_supported<Scheme>() || !detail::is_kernel_int_v<O>) {
    reference();
  } else {
    if (acc.shape() != out.shape() || p.clamp_min > p.clamp_max) {
      reference();  // throws the reference's error
      return;
    }
    const bool per_channel = p.constants.size() > 1 || p.bias.size() > 1;
    const Granularity g =
        per_channel ? Granularity::per_channel(p.channel_axis) : Granularity::per_tensor();
    const ParamLayout layout = [&] {
      try {
        return ParamLayout(acc.shape(), g, layer);
      } catch (const Error&) {
        if (check_in_pass) detail::check_requant_shifts<Scheme>(p, layer);  // a bad shift first
        throw;
      }
    }();
    const std::int64_t channels = layout.count();
    if ((p.constants.size() != 1 && static_cast<std::int64_t>(p.constants.size()) != channels) ||
        (!p.bias.empty() && static_cast<std::int64_t>(p.bias.size()) != channels)) {
      reference();  // throws the reference's error
      return;
    }
    if (p.clamp_min < std::numeric_limits<O>::min() || p.clamp_max > std::numeric_limits<O>::max()) {
      reference();  // a clamp wider than the output type wraps there
      return;
    }
    const auto count = static_cast<std::size_t>(channels);
    detail::ParamArray<std::int32_t> k[7] = {
        detail::ParamArray<std::int32_t>(count), detail::ParamArray<std::int32_t>(count),
        detail::ParamArray<std::int32_t>(count), detail::ParamArray<std::int32_t>(count),
        detail::ParamArray<std::int32_t>(count), detail::ParamArray<std::int32_t>(count),
        detail::ParamArray<std::int32_t>(count)};
    detail::ParamArray<float> kf(count);
    detail::ParamArray<std::int32_t> bias(count);
    // Local pointers: this runs on every call.
    std::int32_t* kp[7];
    for (int s = 0; s < 7; ++s) kp[s] = k[s].data();
    if (!detail::kernel_requant_constants<Scheme>(p, count, kp, kf.data(), layer, kernels)) {
      ref::requantize(acc, p, out, layer);  // shifts checked
      return;
    }
    std::int32_t* const bp = bias.data();
    if (p.bias.empty()) {
      std::fill(bp, bp + count, 0);
    } else {
      std::copy(p.bias.begin(), p.bias.end(), bp);
    }
    detail::run_requantize_kernel<Scheme, O>(acc, out, layout, kp, kf.data(), bp, p, nullptr, kernels);
  }
}

// ==================================================================== Raw-pointer API

// Options of the raw-pointer quantize/fake_quantize: a built-in rounding mode (not stochastic
// or custom: use the View API with the policy object for those), the scale application, and
// the integer range (default: the output type's full range).
struct QuantizeOptions {
  RoundingMode rounding = RoundingMode::half_even;
  ScaleApplicationKind application = ScaleApplicationKind::divide;
  bool has_range = false;
  IntRange range{};

  QuantizeOptions& with_rounding(RoundingMode m) {
    rounding = m;
    return *this;
  }
  QuantizeOptions& with_application(ScaleApplicationKind a) {
    application = a;
    return *this;
  }
  QuantizeOptions& with_range(IntRange r) {
    has_range = true;
    range = r;
    return *this;
  }
};

namespace detail {
// write_plan(Plan&) fills the plan in place; `what` names the entry point in the errors,
// `indexed` whether its parameters are per channel (scale[c]) or per tensor (scale).
template <class Q, class WritePlan>
void raw_quantize(const char* what, bool indexed, const float* x, const WritePlan& write_plan,
                  const float* scales, const std::int32_t* zero_points, std::size_t count,
                  const QuantizeOptions& o, Q* out, const Kernels* kernels) {
  static_assert(is_kernel_int_v<Q> || std::is_same<Q, float>::value,
                "simd::quantize: output must be int8/uint8/int16/uint16/int32 (float: fake_quantize)");
  if (o.rounding == RoundingMode::custom || o.rounding == RoundingMode::stochastic)
    quantkit::detail::fail(what, ": raw-pointer calls take a built-in deterministic rounding "
                           "mode; pass RoundStochastic/custom policies to the View overload");
  IntRange r;
  if (o.has_range) {
    r = o.range;
  } else if constexpr (std::is_same<Q, float>::value || std::is_same<Q, std::int32_t>::value) {
    quantkit::detail::fail(what, ": float/int32 outputs need an explicit range (QuantizeOptions::with_range)");
  } else {
    r = full_range<Q>();
  }
  if (!range_ok<Q>(r))
    quantkit::detail::fail(what, ": integer range [", r.qmin, ", ", r.qmax,
                           "] does not fit the output type (or exceeds +-2^24)");
  if (r.qmin >= r.qmax)
    quantkit::detail::fail(what, ": integer range [", r.qmin, ", ", r.qmax, "] is empty; expected qmin < qmax");
  // The values are checked in kernel_params' branch-free conversion pass (per-channel calls
  // check every channel on every call); only when it fails is the first bad one named. Zero points in [qmin, qmax], which
  // lies in Q: the int8 kernels' saturating int16 add of z needs |z| <= 255.
  ParamArray<float> factor(count), zero(count);
  const float* pf = nullptr;
  if (!kernel_params(o.application, scales, zero_points, count, r, factor, zero, pf, kernels))
    fail_raw_params(what, indexed, scales, zero_points, count, r.qmin, r.qmax, " (the quantization range)",
                    o.application);
  QuantizeArgs a;
  write_plan(a.plan);
  a.x = x;
  a.out = out;
  a.out_type = elem_type_of<Q>::value;
  a.rounding = o.rounding;
  a.application = o.application;
  a.factor = pf;
  a.zero = zero.data();
  a.scale = scales;
  a.qmin = static_cast<float>(r.qmin);
  a.qmax = static_cast<float>(r.qmax);
  run_quantize_any_rounding<Q>(kernels, a);
}

inline void rows_plan(std::size_t rows, std::size_t cols, int axis, Plan& plan) {
  plan.rank = 2;
  plan.shape[0] = static_cast<std::int64_t>(rows);
  plan.shape[1] = static_cast<std::int64_t>(cols);
  plan.in_stride[0] = plan.out_stride[0] = static_cast<std::int64_t>(cols);
  plan.in_stride[1] = plan.out_stride[1] = 1;
  plan.param_div[0] = plan.param_div[1] = 1;
  if (axis == 0) {
    plan.param_stride[0] = 1;
    plan.inner = InnerParams::constant;
  } else {
    plan.inner = InnerParams::per_element;
  }
}
}  // namespace detail

// Per tensor, contiguous: out[i] = clamp(R(x[i] / scale) + zero_point).
template <class Q>
void quantize(const float* x, std::size_t n, float scale, std::int32_t zero_point,
              const QuantizeOptions& options, Q* out, const Kernels* kernels = nullptr) {
  detail::raw_quantize("simd::quantize", false, x, [n](Plan& plan) { detail::contiguous_plan(n, plan); },
                       &scale, &zero_point, 1, options, out, kernels);
}
template <class Q>
void quantize(const float* x, std::size_t n, float scale, std::int32_t zero_point, Q* out,
              const Kernels* kernels = nullptr) {
  quantize(x, n, scale, zero_point, QuantizeOptions{}, out, kernels);
}

// A row-major [rows, cols] matrix with one (scale, zero point) per row (axis 0) or per column
// (axis 1).
template <class Q>
void quantize_per_channel(const float* x, std::size_t rows, std::size_t cols, int axis,
                          const float* scales, const std::int32_t* zero_points,
                          const QuantizeOptions& options, Q* out,
                          const Kernels* kernels = nullptr) {
  if (axis != 0 && axis != 1)
    quantkit::detail::fail("simd::quantize_per_channel: axis ", axis, "; expected 0 (rows) or 1 (columns)");
  detail::raw_quantize("simd::quantize_per_channel", true, x,
                       [&](Plan& plan) { detail::rows_plan(rows, cols, axis, plan); }, scales, zero_points,
                       axis == 0 ? rows : cols, options, out, kernels);
}
template <class Q>
void quantize_per_channel(const float* x, std::size_t rows, std::size_t cols, int axis,
                          const float* scales, const std::int32_t* zero_points, Q* out,
                          const Kernels* kernels = nullptr) {
  quantize_per_channel(x, rows, cols, axis, scales, zero_points, QuantizeOptions{}, out, kernels);
}

// Per tensor: y[i] = float(q - zero_point) * scale with q as quantize() computes it; the
// range must be given (options.with_range).
template <class T>
void fake_quantize(const T* x, std::size_t n, float scale, std::int32_t zero_point,
                   const QuantizeOptions& options, float* y, const Kernels* kernels = nullptr) {
  static_assert(std::is_same<T, float>::value, "simd::fake_quantize: input must be float");
  detail::raw_quantize("simd::fake_quantize", false, x, [n](Plan& plan) { detail::contiguous_plan(n, plan); },
                       &scale, &zero_point, 1, options, y, kernels);
}

// fake_quantize per row (axis 0) or per column (axis 1) of a row-major [rows, cols] matrix, as
// quantize_per_channel; the range must be given (options.with_range).
template <class T>
void fake_quantize_per_channel(const T* x, std::size_t rows, std::size_t cols, int axis,
                               const float* scales, const std::int32_t* zero_points,
                               const QuantizeOptions& options, float* y,
                               const Kernels* kernels = nullptr) {
  static_assert(std::is_same<T, float>::value, "simd::fake_quantize_per_channel: input must be float");
  if (axis != 0 && axis != 1)
    quantkit::detail::fail("simd::fake_quantize_per_channel: axis ", axis, "; expected 0 (rows) or 1 (columns)");
  detail::raw_quantize("simd::fake_quantize_per_channel", true, x,
                       [&](Plan& plan) { detail::rows_plan(rows, cols, axis, plan); }, scales, zero_points,
                       axis == 0 ? rows : cols, options, y, kernels);
}

namespace detail {
// The raw dequantize calls' checks: every scale finite and > 0 (as the View dequantize and
// quantize check them) and every zero point a value of In (as ONNX's and quantize's zero
// points are) in one branch-free pass (params_ok), the first bad one named only on failure.
// Narrower zero points would also break the kernels, which subtract q - z in int32 (int32
// inputs with a nonzero zero point run the reference, exact in int64).
template <class In>
void check_dequantize_params(const char* what, bool indexed, const float* scales,
                             const std::int32_t* zero_points, std::size_t count, const Kernels* kernels) {
  const IntRange r = full_range<In>();
  if (!params_ok(scales, zero_points, count, r, kernels))
    fail_raw_params(what, indexed, scales, zero_points, count, r.qmin, r.qmax, " (the input type's range)");
}

// Whether the kernels cover the zero points after check_dequantize_params passed: only int32
// inputs are left to check (the others' zero points are inside their type).
template <class In>
bool raw_dequantize_covered(const std::int32_t* zero_points, std::size_t count) {
  if constexpr (std::is_same<In, std::int32_t>::value) {
    std::int32_t any = 0;
    for (std::size_t i = 0; i < count; ++i) any |= zero_points[i];
    return any == 0;
  } else {
    (void)zero_points;
    (void)count;
    return true;
  }
}
}  // namespace detail

// Per tensor: x[i] = float(q[i] - zero_point) * scale; scale finite and > 0, zero_point a
// value of Q.
template <class Q>
void dequantize(const Q* q, std::size_t n, float scale, std::int32_t zero_point, float* x,
                const Kernels* kernels = nullptr) {
  static_assert(detail::is_kernel_int_v<Q>,
                "simd::dequantize: input must be int8/uint8/int16/uint16/int32");
  detail::check_dequantize_params<Q>("simd::dequantize", false, &scale, &zero_point, 1, kernels);
  if (!detail::raw_dequantize_covered<Q>(&zero_point, 1)) {
    for (std::size_t i = 0; i < n; ++i) x[i] = ref::dequantize_value(q[i], scale, zero_point);
    return;
  }
  DequantizeArgs a;
  detail::contiguous_plan(n, a.plan);
  a.q = q;
  a.in_type = elem_type_of<Q>::value;
  a.out = x;
  a.scale = &scale;
  a.zero = &zero_point;
  detail::run_dequantize<Q>(kernels, a);
}

// Per row (axis 0) or per column (axis 1) of a row-major [rows, cols] matrix:
// x[i][j] = float(q[i][j] - zero_points[c]) * scales[c], c = i (axis 0) or j (axis 1).
// Every scale must be finite and > 0 (as the View dequantize checks them), every zero point a
// value of Q.
template <class Q>
void dequantize_per_channel(const Q* q, std::size_t rows, std::size_t cols, int axis,
                            const float* scales, const std::int32_t* zero_points, float* x,
                            const Kernels* kernels = nullptr) {
  static_assert(detail::is_kernel_int_v<Q>,
                "simd::dequantize_per_channel: input must be int8/uint8/int16/uint16/int32");
  if (axis != 0 && axis != 1)
    quantkit::detail::fail("simd::dequantize_per_channel: axis ", axis, "; expected 0 (rows) or 1 (columns)");
  const std::size_t count = axis == 0 ? rows : cols;
  detail::check_dequantize_params<Q>("simd::dequantize_per_channel", true, scales, zero_points, count, kernels);
  if (!detail::raw_dequantize_covered<Q>(zero_points, count)) {
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) {
        const std::size_t c = axis == 0 ? i : j;
        x[i * cols + j] =
            ref::dequantize_value(static_cast<std::int32_t>(q[i * cols + j]), scales[c], zero_points[c]);
      }
    return;
  }
  DequantizeArgs a;
  detail::rows_plan(rows, cols, axis, a.plan);
  a.q = q;
  a.in_type = elem_type_of<Q>::value;
  a.out = x;
  a.scale = scales;
  a.zero = zero_points;
  detail::run_dequantize<Q>(kernels, a);
}

// n accumulators, per tensor or with p.constants/p.bias per channel along the last dimension
// of an [n / channels, channels] matrix.
template <class Scheme, class Out>
void requantize(const std::int32_t* acc, std::size_t n, const RequantParams<Scheme>& p, Out* out,
                const Kernels* kernels = nullptr) {
  const std::size_t channels = p.constants.size() > 1 ? p.constants.size() : (p.bias.size() > 1 ? p.bias.size() : 1);
  if (n % channels != 0)
    quantkit::detail::fail("simd::requantize: ", n, " accumulators for ", channels,
                           " channels; expected a multiple");
  const Dims shape{static_cast<std::int64_t>(n / channels), static_cast<std::int64_t>(channels)};
  const View<const std::int32_t> in(acc, shape);
  const View<Out> to(out, shape);
  // The channels run along axis 1 (-1) of `shape`; the axis is read only per channel. A copy of
  // the parameters (their vectors: heap allocations per call) only when it must change.
  if (channels == 1 || p.channel_axis == -1 || p.channel_axis == 1) return requantize(in, p, to, {}, kernels);
  RequantParams<Scheme> q = p;
  q.channel_axis = -1;
  requantize(in, q, to, {}, kernels);
}

// ==================================================================== Byte tables

// out[i] = table[in[i]] for i < n: a 256-entry byte table (in may equal out).
inline void lookup_bytes(const std::uint8_t* table, const std::uint8_t* in, std::uint8_t* out,
                         std::size_t n, const Kernels* kernels = nullptr) {
  detail::pick(kernels, &Kernels::lookup_bytes, QUANTKIT_SIMD_STATIC_FN(LookupBytes))(table, in, out, n);
}

// ==================================================================== Window ops on bytes

// out unit i = bytewise max(in unit 2i, in unit 2i + 1) for i < n_out, units of `unit` bytes
// holding int8 (is_signed) or uint8 values: one pass of a 2-wide, stride-2 max pool.
inline void max_pairs(const std::uint8_t* in, std::size_t n_out, std::size_t unit, bool is_signed, std::uint8_t* out,
                      const Kernels* kernels = nullptr) {
  detail::pick(kernels, &Kernels::max_pairs, QUANTKIT_SIMD_STATIC_FN(MaxPairs))(in, n_out, unit, is_signed, out);
}

// sum[i] = sum_t w[t] * in[offset[t] + i] for i < n, modulo 2^32: the taps of a depthwise
// convolution over one padded plane's rows.
inline void depthwise_rows(const std::uint8_t* in, std::size_t n, const std::int32_t* w, const std::int64_t* offset,
                           std::size_t taps, std::int32_t* sum, const Kernels* kernels = nullptr) {
  detail::pick(kernels, &Kernels::depthwise_rows, QUANTKIT_SIMD_STATIC_FN(DepthwiseRows))(in, n, w, offset, taps, sum);
}

// sum[i] = ((+0 + w[0] in[offset[0] + i]) + w[1] in[offset[1] + i]) + ... for i < n, every
// product and sum rounded to float in that order (no fused multiply-add) on every target: the
// taps of a float depthwise convolution over one padded plane's rows, the sums gemm_f32 makes
// over the same taps' column matrix.
inline void depthwise_rows_f32(const float* in, std::size_t n, const float* w, const std::int64_t* offset,
                               std::size_t taps, float* sum, const Kernels* kernels = nullptr) {
  detail::pick(kernels, &Kernels::depthwise_rows_f32, QUANTKIT_SIMD_STATIC_FN(DepthwiseRowsF32))(in, n, w, offset,
                                                                                             taps, sum);
}

// ==================================================================== Reductions

// Min and max of the finite values of x[0..n) (std::min/std::max order) and the count of
// non-finite values.
template <class T>
MinMaxResult minmax(const T* x, std::size_t n, const Kernels* kernels = nullptr) {
  static_assert(std::is_same<T, float>::value, "simd::minmax: input must be float");
  return detail::pick(kernels, &Kernels::minmax, QUANTKIT_SIMD_STATIC_FN(MinMax))(x, n);
}

// max |x| over the finite values of x[0..n) (0 if none) and the count of non-finite values.
template <class T>
AbsMaxResult absmax(const T* x, std::size_t n, const Kernels* kernels = nullptr) {
  static_assert(std::is_same<T, float>::value, "simd::absmax: input must be float");
  return detail::pick(kernels, &Kernels::absmax, QUANTKIT_SIMD_STATIC_FN(AbsMax))(x, n);
}

// Running min/max per parameter (channel or block of `granularity` over x's shape), updated
// in place exactly as Range::include does element by element; min/max hold layout.count()
// values (start them at +inf/-inf). Non-finite values are skipped; returns how many.
template <class T, int R>
std::size_t minmax_per_param(const View<T, R>& x, Granularity granularity, float* min, float* max,
                             const Kernels* kernels = nullptr) {
  static_assert(std::is_same<std::remove_const_t<T>, float>::value,
                "simd::minmax_per_param: input must be float");
  const ParamLayout layout(x.shape(), granularity, x.name());
  MinMaxParamsArgs a;
  detail::make_plan(x.shape(), x.strides(), x.strides(), layout, a.plan);
  a.x = x.data();
  a.min = min;
  a.max = max;
  return detail::pick(kernels, &Kernels::minmax_params, QUANTKIT_SIMD_STATIC_FN(MinMaxParams))(a);
}

// Adds the histogram of x[0..n) (|x| when absolute) over [lo, hi] in `bins` bins to counts
// (torch.histc's binning: bin = min(bins - 1, int(((v - lo) * bins) / (hi - lo)))); returns
// the counts of values below lo, above hi and NaN, which are not binned.
template <class T>
HistogramResult histogram(const T* x, std::size_t n, float lo, float hi, std::size_t bins,
                          std::uint64_t* counts, bool absolute = false,
                          const Kernels* kernels = nullptr) {
  static_assert(std::is_same<T, float>::value, "simd::histogram: input must be float");
  if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi))
    quantkit::detail::fail("simd::histogram: range [", lo, ", ", hi, "]; expected finite lo < hi");
  if (bins == 0 || bins > (std::size_t{1} << 24))
    quantkit::detail::fail("simd::histogram: ", bins, " bins; expected 1 to 2^24");
  HistogramArgs a;
  a.x = x;
  a.n = n;
  a.lo = lo;
  a.hi = hi;
  a.bins = bins;
  a.absolute = absolute;
  a.counts = counts;
  return detail::pick(kernels, &Kernels::histogram, QUANTKIT_SIMD_STATIC_FN(Histogram))(a);
}

// histogram() and minmax() of the same x in one pass: the counts as histogram() adds them, and
// into *mm what minmax(x, n) returns (min/max of the finite values, non-finite count).
template <class T>
HistogramResult histogram_minmax(const T* x, std::size_t n, float lo, float hi, std::size_t bins,
                                 std::uint64_t* counts, MinMaxResult* mm, const Kernels* kernels = nullptr) {
  static_assert(std::is_same<T, float>::value, "simd::histogram_minmax: input must be float");
  if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi))
    quantkit::detail::fail("simd::histogram_minmax: range [", lo, ", ", hi, "]; expected finite lo < hi");
  if (bins == 0 || bins > (std::size_t{1} << 24))
    quantkit::detail::fail("simd::histogram_minmax: ", bins, " bins; expected 1 to 2^24");
  if (mm == nullptr) quantkit::detail::fail("simd::histogram_minmax: null MinMaxResult");
  HistogramArgs a;
  a.x = x;
  a.n = n;
  a.lo = lo;
  a.hi = hi;
  a.bins = bins;
  a.counts = counts;
  a.minmax = mm;
  return detail::pick(kernels, &Kernels::histogram, QUANTKIT_SIMD_STATIC_FN(Histogram))(a);
}

namespace detail {
// The checks and the arguments of grid_histogram / grid_histogram_minmax (`what` names the entry
// point in the errors).
inline GridHistogramArgs grid_histogram_args(const char* what, const float* x, std::size_t n, float inv_width,
                                             std::int64_t base, std::size_t bins, std::uint64_t* counts) {
  int e = 0;
  if (!(inv_width > 0.0f) || !std::isfinite(inv_width) || std::frexp(inv_width, &e) != 0.5f)
    quantkit::detail::fail(what, ": inverse bin width ", inv_width, "; expected a power of two");
  if (bins == 0 || bins > (std::size_t{1} << 24))
    quantkit::detail::fail(what, ": ", bins, " bins; expected 1 to 2^24");
  constexpr std::int64_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  if (base <= kMin || base > kMax - static_cast<std::int64_t>(bins) + 1)
    quantkit::detail::fail(what, ": base ", base, " with ", bins, " bins; expected bins within int32");
  GridHistogramArgs a;
  a.x = x;
  a.n = n;
  a.inv_width = inv_width;
  a.base = static_cast<std::int32_t>(base);
  a.bins = bins;
  a.counts = counts;
  return a;
}
}  // namespace detail

// Adds the histogram of x[0..n) on a power-of-two grid to counts[0..bins) (GridHistogram's
// binning: bin = floor(v * inv_width) - base, exact since inv_width is a power of two, a
// product underflowing to zero keeping v's side of 0); NaN, +-Inf and values outside the bins
// are not counted. Returns the number of values counted.
template <class T>
std::size_t grid_histogram(const T* x, std::size_t n, float inv_width, std::int64_t base, std::size_t bins,
                           std::uint64_t* counts, const Kernels* kernels = nullptr) {
  static_assert(std::is_same<T, float>::value, "simd::grid_histogram: input must be float");
  const GridHistogramArgs a = detail::grid_histogram_args("simd::grid_histogram", x, n, inv_width, base, bins, counts);
  return detail::pick(kernels, &Kernels::grid_histogram, QUANTKIT_SIMD_STATIC_FN(GridHistogram))(a);
}

// grid_histogram() and minmax() of the same x in one pass: the counts as grid_histogram() adds
// them (and its return value), and into *mm what minmax(x, n) returns (min/max of the finite
// values, non-finite count).
template <class T>
std::size_t grid_histogram_minmax(const T* x, std::size_t n, float inv_width, std::int64_t base,
                                  std::size_t bins, std::uint64_t* counts, MinMaxResult* mm,
                                  const Kernels* kernels = nullptr) {
  static_assert(std::is_same<T, float>::value, "simd::grid_histogram_minmax: input must be float");
  GridHistogramArgs a =
      detail::grid_histogram_args("simd::grid_histogram_minmax", x, n, inv_width, base, bins, counts);
  if (mm == nullptr) quantkit::detail::fail("simd::grid_histogram_minmax: null MinMaxResult");
  a.minmax = mm;
  return detail::pick(kernels, &Kernels::grid_histogram, QUANTKIT_SIMD_STATIC_FN(GridHistogram))(a);
}

// ==================================================================== Kernels by reference
// The same functions with the kernels of one target given by reference, e.g.
// quantize(x, p, q, RoundHalfEven{}, ScaleApplicationKind::divide, *kernels_for(HWY_AVX2)).

template <class In, int RI, class Q, int RO, class Rounding>
void quantize(const View<In, RI>& x, const QuantParams& p, const View<Q, RO>& q,
              const Rounding& round, ScaleApplicationKind application, const Kernels& kernels) {
  quantize(x, p, q, round, application, &kernels);
}
template <class In, int RI, int RO, class Rounding>
void fake_quantize(const View<In, RI>& x, const QuantParams& p, const View<float, RO>& y,
                   const Rounding& round, ScaleApplicationKind application, const Kernels& kernels) {
  fake_quantize(x, p, y, round, application, &kernels);
}
template <class Q, int RI, int RO>
void dequantize(const View<Q, RI>& q, const QuantParams& p, const View<float, RO>& x,
                const Kernels& kernels) {
  dequantize(q, p, x, &kernels);
}
template <class In, int RI, class Rounding>
void quantize_packed(const View<In, RI>& x, const QuantParams& p, int bits, std::uint8_t* out,
                     std::size_t out_size, const Rounding& round, ScaleApplicationKind application,
                     const Kernels& kernels) {
  quantize_packed(x, p, bits, out, out_size, round, application, &kernels);
}
template <int RO>
void dequantize_packed(const std::uint8_t* packed, std::size_t packed_bytes, int bits,
                       bool is_signed, const QuantParams& p, const View<float, RO>& x,
                       const Kernels& kernels) {
  dequantize_packed(packed, packed_bytes, bits, is_signed, p, x, &kernels);
}
template <class Scheme, class Acc, class Out, int RI, int RO>
void requantize(const View<Acc, RI>& acc, const RequantParams<Scheme>& p, const View<Out, RO>& out,
                const std::string& layer, const Kernels& kernels) {
  requantize(acc, p, out, layer, &kernels);
}
template <class Q>
void quantize(const float* x, std::size_t n, float scale, std::int32_t zero_point,
              const QuantizeOptions& options, Q* out, const Kernels& kernels) {
  quantize(x, n, scale, zero_point, options, out, &kernels);
}
template <class Q>
void quantize(const float* x, std::size_t n, float scale, std::int32_t zero_point, Q* out,
              const Kernels& kernels) {
  quantize(x, n, scale, zero_point, out, &kernels);
}
template <class Q>
void quantize_per_channel(const float* x, std::size_t rows, std::size_t cols, int axis,
                          const float* scales, const std::int32_t* zero_points,
                          const QuantizeOptions& options, Q* out, const Kernels& kernels) {
  quantize_per_channel(x, rows, cols, axis, scales, zero_points, options, out, &kernels);
}
template <class Q>
void quantize_per_channel(const float* x, std::size_t rows, std::size_t cols, int axis,
                          const float* scales, const std::int32_t* zero_points, Q* out,
                          const Kernels& kernels) {
  quantize_per_channel(x, rows, cols, axis, scales, zero_points, out, &kernels);
}
template <class T>
void fake_quantize(const T* x, std::size_t n, float scale, std::int32_t zero_point,
                   const QuantizeOptions& options, float* y, const Kernels& kernels) {
  fake_quantize(x, n, scale, zero_point, options, y, &kernels);
}
template <class T>
void fake_quantize_per_channel(const T* x, std::size_t rows, std::size_t cols, int axis,
                               const float* scales, const std::int32_t* zero_points,
                               const QuantizeOptions& options, float* y, const Kernels& kernels) {
  fake_quantize_per_channel(x, rows, cols, axis, scales, zero_points, options, y, &kernels);
}
template <class Q>
void dequantize(const Q* q, std::size_t n, float scale, std::int32_t zero_point, float* x,
                const Kernels& kernels) {
  dequantize(q, n, scale, zero_point, x, &kernels);
}
template <class Q>
void dequantize_per_channel(const Q* q, std::size_t rows, std::size_t cols, int axis,
                            const float* scales, const std::int32_t* zero_points, float* x,
                            const Kernels& kernels) {
  dequantize_per_channel(q, rows, cols, axis, scales, zero_points, x, &kernels);
}
template <class Scheme, class Out>
void requantize(const std::int32_t* acc, std::size_t n, const RequantParams<Scheme>& p, Out* out,
                const Kernels& kernels) {
  requantize(acc, n, p, out, &kernels);
}
template <class T>
MinMaxResult minmax(const T* x, std::size_t n, const Kernels& kernels) {
  return minmax(x, n, &kernels);
}
template <class T>
AbsMaxResult absmax(const T* x, std::size_t n, const Kernels& kernels) {
  return absmax(x, n, &kernels);
}
template <class T, int R>
std::size_t minmax_per_param(const View<T, R>& x, Granularity granularity, float* min, float* max,
                             const Kernels& kernels) {
  return minmax_per_param(x, granularity, min, max, &kernels);
}
template <class T>
HistogramResult histogram(const T* x, std::size_t n, float lo, float hi, std::size_t bins,
                          std::uint64_t* counts, bool absolute, const Kernels& kernels) {
  return histogram(x, n, lo, hi, bins, counts, absolute, &kernels);
}
template <class T>
HistogramResult histogram_minmax(const T* x, std::size_t n, float lo, float hi, std::size_t bins,
                                 std::uint64_t* counts, MinMaxResult* mm, const Kernels& kernels) {
  return histogram_minmax(x, n, lo, hi, bins, counts, mm, &kernels);
}
template <class T>
std::size_t grid_histogram(const T* x, std::size_t n, float inv_width, std::int64_t base, std::size_t bins,
                           std::uint64_t* counts, const Kernels& kernels) {
  return grid_histogram(x, n, inv_width, base, bins, counts, &kernels);
}
template <class T>
std::size_t grid_histogram_minmax(const T* x, std::size_t n, float inv_width, std::int64_t base,
                                  std::size_t bins, std::uint64_t* counts, MinMaxResult* mm,
                                  const Kernels& kernels) {
  return grid_histogram_minmax(x, n, inv_width, base, bins, counts, mm, &kernels);
}

}  // namespace simd
}  // namespace quantkit

#undef QUANTKIT_SIMD_STATIC_FN
