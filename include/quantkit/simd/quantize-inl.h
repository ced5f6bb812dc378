// Per-target kernels: quantize f32 -> int8/uint8/int16/uint16/int32, fake-quantize
// f32 -> f32, dequantize int -> f32. Bit-identical to quantkit::ref (quantkit/ref/quantize.hpp):
//   q = clamp(R(x / s) + z, qmin, qmax)   (x * (1/s) with MultiplyByReciprocal); NaN -> z
//   fake = float(q - z) * s;   dequantize: float(q - z) * s
// The hot loop per vector: Div (or Mul), round, Add z, Max/Min clamp, NaN blend, convert,
// saturating DemoteTo, store; parameters are broadcast once per run, or loaded as vectors
// when they vary along the row (per-channel on the last axis, per-group across it).

#if defined(QUANTKIT_SIMD_QUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QUANTKIT_SIMD_QUANTIZE_INL_H_
#undef QUANTKIT_SIMD_QUANTIZE_INL_H_
#else
#define QUANTKIT_SIMD_QUANTIZE_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "quantkit/params.hpp"
#include "quantkit/simd/abi.hpp"
#include "quantkit/simd/common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace quantkit {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One vector: the quantized value as an integral float in [lo, hi]; NaN -> z.
template <class Round, bool kDivide, class D, class V = hn::Vec<D>>
HWY_INLINE V QuantizeVec(D d, V x, V f, V z, V lo, V hi, V u) {
  const V t = kDivide ? hn::Div(x, f) : hn::Mul(x, f);
  const V v = hn::Min(hn::Max(hn::Add(Round::Do(d, t, u), z), lo), hi);
  return hn::IfThenElse(hn::IsNaN(x), z, v);
}

// Stores one vector of quantized values (integral floats in the output's range).
template <class Out, class D, class V = hn::Vec<D>>
HWY_INLINE void StoreQuantized(D d, V v, V z, V s, Out* HWY_RESTRICT p) {
  if constexpr (std::is_same<Out, float>::value) {
    hn::StoreU(hn::Mul(hn::Sub(v, z), s), d, p);  // fake-quantize: exact q - z, then * s
  } else {
    (void)z;
    (void)s;
    const hn::RebindToSigned<D> di;
    const auto vi = ConvertInRange(di, v);
    if constexpr (std::is_same<Out, std::int32_t>::value) {
      hn::StoreU(vi, di, p);
    } else {
      const hn::Rebind<Out, D> dq;
      hn::StoreU(hn::DemoteTo(dq, vi), dq, p);
    }
  }
}

// ------------------------------ Fast path: deterministic rounding, constant parameters
// Clamps first, in float, to [lo - z, hi - z]: equal to clamping R(t) + z to [lo, hi], as R is
// monotone and keeps integers. The rounded value then converts straight to int32 (one
// instruction for half-even on AVX-512), NaN lanes are zeroed (q = z: by fixupimm before the
// clamp on AVX-512, by their mask elsewhere), and z is added to the integers. Fake-quantize multiplies R(t) + 0 (+0, never -0, as q - z is) by s.

#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
// R(t) as int32 for a clamped t (or -inf / below -2^31: INT32_MIN). Half-even: one conversion
// with the rounding in the instruction. Half-away: the truncating conversion of
// t + copysign(pred(1/2), t) — RoundHalfAwayOp's trunc(|t| + pred(1/2)) with t's sign, as the
// sum rounds the same for either sign; three instructions for its five (int8 quantize at 4K
// 12.9 -> 16.5 Gelem/s dividing, 17.0 -> 22.3 multiplying, on Zen 5).
template <class Round, class D, class V = hn::Vec<D>>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> RoundToInt32Avx3(D d, V t) {
  using VI = hn::Vec<hn::RebindToSigned<D>>;
  if constexpr (std::is_same<Round, RoundHalfEvenOp>::value) {
    (void)d;
    return VI{_mm512_cvt_roundps_epi32(t.raw, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
  } else if constexpr (std::is_same<Round, RoundHalfAwayOp>::value) {
    return VI{_mm512_cvttps_epi32(hn::Add(t, hn::CopySign(hn::Set(d, 0x1.fffffep-2f), t)).raw)};
  } else {
    return VI{_mm512_cvttps_epi32(Round::Do(d, t, t).raw)};
  }
}
#endif

// R(clamp(x / f or x * f, lo', hi')) as int32, 0 for NaN x. !kLow: no lower clamp (below
// -2^31 the AVX-512 and AVX2 conversions give INT32_MIN, which QuantizeBlocks4's saturating
// byte packs take as "below qmin"; only used there).
template <class Round, bool kDivide, bool kLow = true, class D, class V = hn::Vec<D>>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> QuantizeOffsetVec(D d, V x, V f, V lo, V hi) {
  const V prod = kDivide ? hn::Div(x, f) : hn::Mul(x, f);
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  // NaN x (only then is the quotient or product NaN: f is finite and positive) -> +0 by
  // fixupimm (table: QNaN, SNaN -> +0) before the clamp, not a compare into a mask and a
  // zero-masked conversion (multiplying int8 quantize in cache 22 -> 31 Gelem/s on Zen 5).
  const V p0 = V{_mm512_fixupimm_ps(prod.raw, prod.raw, _mm512_set1_epi32(0x88), 0)};
  return RoundToInt32Avx3<Round>(d, kLow ? hn::Min(hn::Max(p0, lo), hi) : hn::Min(p0, hi));
#else
  const hn::RebindToSigned<D> di;
  const V t = kLow ? hn::Min(hn::Max(prod, lo), hi) : hn::Min(prod, hi);
  const auto ordered = hn::Eq(x, x);
  // NaN lanes are zeroed before converting (converting NaN is undefined on the scalar and
  // emulated targets).
  return ConvertInRange(di, hn::IfThenElseZero(ordered, Round::Do(d, t, t)));
#endif
}

// Fake-quantize: R(clamp(t, lo', hi')) * s, +0 for NaN x. The product is an FMA with +0: a
// -0 product (R(t) = -0 for t in (-1/2, 0)) becomes +0 as float(q - z) * s gives; any other
// product is kept.
template <class Round, bool kDivide, class D, class V = hn::Vec<D>>
HWY_INLINE V FakeQuantizeVec(D d, V x, V f, V lo, V hi, V s) {
  const V prod = kDivide ? hn::Div(x, f) : hn::Mul(x, f);
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  // NaN x (only then is the quotient or product NaN: f is finite and positive) -> +0 by
  // fixupimm, on the FMA units, instead of a compare there and a blend.
  const V t = hn::Min(hn::Max(V{_mm512_fixupimm_ps(prod.raw, prod.raw, _mm512_set1_epi32(0x88), 0)}, lo), hi);
  return hn::MulAdd(Round::Do(d, t, t), s, hn::Zero(d));
#else
  const V t = hn::Min(hn::Max(prod, lo), hi);
  return hn::IfThenElseZero(hn::Eq(x, x), hn::MulAdd(Round::Do(d, t, t), s, hn::Zero(d)));
#endif
}

// ------------------------------ Dividing without the divider (AVX-512, AVX2)
// The divider is busy about as long per vector as the rest of quantize's work, so in the blocks
// below two or three vectors of four (divider_bypass_vectors: what the CPU's divider favours)
// divide with Markstein's correction on the FMA units instead (AVX2: half-even integer outputs
// and fake-quantize):
//   r = RN(1 / s),  q0 = RN(x * r),  e = q0 * s - x (one FMA, exact),  q = RN(q0 - e * r),
// the correctly rounded x / s whenever |x / s| >= 1/4 and 2^-100 <= s <= 2^100 (then the residual
// is exact; checked on every significand of x against 60007 divisor significands, and by
// test_simd_kernels' "dividing kernels round x / s exactly" on every target). Smaller quotients
// round to 0 either way in every mode that sends (-1/2, 1/2) to 0: not floor or stochastic.
template <class Round>
constexpr bool kMarksteinRounding =
    std::is_same<Round, RoundHalfEvenOp>::value || std::is_same<Round, RoundHalfAwayOp>::value ||
    std::is_same<Round, RoundHalfUpOp>::value || std::is_same<Round, RoundTowardZeroOp>::value;

HWY_INLINE bool MarksteinScale(float s) { return s >= 0x1p-100f && s <= 0x1p100f; }

#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)

// x / s as Div gives it in the cases above, +0 for NaN x (the zero point's offset). Where q0 is
// +-inf (x infinite, or the quotient past the float range) q is NaN: fixupimm, classifying q0,
// puts q0 back there and +0 for NaN (table: QNaN, SNaN -> +0; -inf -> -inf; +inf -> +inf; any
// other class keeps q).
HWY_INLINE __m512 DivideMarkstein(__m512 x, __m512 s, __m512 r) {
  const __m512 q0 = _mm512_mul_ps(x, r);
  const __m512 e = _mm512_fmsub_ps(q0, s, x);
  const __m512 q = _mm512_fnmadd_ps(e, r, q0);
  return _mm512_fixupimm_ps(q, q0, _mm512_set1_epi32(0x00540088), 0);
}

// QuantizeOffsetVec<Round, true, kLow> with DivideMarkstein: no NaN mask needed.
template <class Round, bool kLow = false, class D, class V = hn::Vec<D>>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> QuantizeOffsetVecMarkstein(D d, V x, V s, V r, V lo, V hi) {
  const V q = V{DivideMarkstein(x.raw, s.raw, r.raw)};
  return RoundToInt32Avx3<Round>(d, kLow ? hn::Min(hn::Max(q, lo), hi) : hn::Min(q, hi));
}

// FakeQuantizeVec<Round, true> with DivideMarkstein (NaN x: +0 * s = +0 as there).
template <class Round, class D, class V = hn::Vec<D>>
HWY_INLINE V FakeQuantizeVecMarkstein(D d, V x, V f, V r, V lo, V hi, V s) {
  const V t = hn::Min(hn::Max(V{DivideMarkstein(x.raw, f.raw, r.raw)}, lo), hi);
  return hn::MulAdd(Round::Do(d, t, t), s, hn::Zero(d));
}
#endif

#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
// Markstein's step without fixupimm (AVX2), for the NaN-free blocks below: q0 = x * r held at
// -2^30 or above, so that -inf and quotients below -2^30 give q = -inf or a value below -2^30
// (far below any clamp) instead of NaN; +inf q0 (x = +inf, or the quotient past the float range)
// gives NaN q, which MINPS(q, hi) turns into hi (it returns its second operand when either is
// NaN). Otherwise q is x / s as DivideMarkstein above gives it (q0 >= -2^30: unchanged).
HWY_INLINE __m256 DivideMarksteinAvx2(__m256 x, __m256 s, __m256 r) {
  const __m256 q0 = _mm256_max_ps(_mm256_mul_ps(x, r), _mm256_set1_ps(-0x1p30f));
  return _mm256_fnmadd_ps(_mm256_fmsub_ps(q0, s, x), r, q0);
}

// Whether any of a block's four vectors holds a NaN: two unordered compares for 32 values.
template <class V>
HWY_INLINE bool AnyNaN4(V x0, V x1, V x2, V x3) {
  const __m256 un = _mm256_or_ps(_mm256_cmp_ps(x0.raw, x1.raw, _CMP_UNORD_Q), _mm256_cmp_ps(x2.raw, x3.raw, _CMP_UNORD_Q));
  return _mm256_testz_ps(un, un) == 0;
}

// One NaN-free fake-quantized vector (AVX2): x / f (kMarkstein: DivideMarksteinAvx2) or x * f,
// clamped above, then below (a NaN quotient of +inf becomes hi), rounded, times s plus +0.
template <class Round, bool kDivide, bool kMarkstein, class D, class V = hn::Vec<D>>
HWY_INLINE V FakeQuantizeOrderedAvx2(D d, V x, V f, V r, V lo, V hi, V s) {
  V q;
  if constexpr (kMarkstein)
    q = V{DivideMarksteinAvx2(x.raw, f.raw, r.raw)};
  else
    q = kDivide ? hn::Div(x, f) : hn::Mul(x, f);
  (void)r;
  const V t = V{_mm256_max_ps(_mm256_min_ps(q.raw, hi.raw), lo.raw)};
  return hn::MulAdd(Round::Do(d, t, t), s, hn::Zero(d));
}
#endif

// A vector of a block past the divider: with DivideMarkstein when kMarkstein (AVX-512), else as the others
// (the int8 block's QuantizeOffsetVec<Round, kDivide, false>, the int16 block's <..., true>,
// FakeQuantizeVec).
template <class Round, bool kDivide, bool kMarkstein, bool kLow = false, class D, class V = hn::Vec<D>>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> QuantizeOffsetVecOdd(D d, V x, V f, V r, V lo, V hi) {
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  if constexpr (kMarkstein) return QuantizeOffsetVecMarkstein<Round, kLow>(d, x, f, r, lo, hi);
#endif
  (void)r;
  return QuantizeOffsetVec<Round, kDivide, kLow>(d, x, f, lo, hi);
}
template <class Round, bool kDivide, bool kMarkstein, class D, class V = hn::Vec<D>>
HWY_INLINE V FakeQuantizeVecOdd(D d, V x, V f, V r, V lo, V hi, V s) {
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  if constexpr (kMarkstein) return FakeQuantizeVecMarkstein<Round>(d, x, f, r, lo, hi, s);
#endif
  (void)r;
  return FakeQuantizeVec<Round, kDivide>(d, x, f, lo, hi, s);
}

// One block of 4 vectors (64 values) with constant parameters; kBypass (0, 2 or 3) of them by
// Markstein's step (2: vectors 1 and 3; 3: also vector 2; see divider_bypass_vectors).
// Fake-quantize (every target):
template <class Round, bool kDivide, int kBypass, bool kStream, class D, class V = hn::Vec<D>>
HWY_INLINE void FakeQuantizeBlock(D d, const float* x, V f, V r, V lo, V hi, V s, float* q) {
  const std::size_t N = hn::Lanes(d);
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  // AVX2: blocks without NaN skip the per-vector mask (one test for the four vectors) and send
  // kBypass vectors past the divider (QuantizeBlockAvx2 below; 6.6 -> 8.0-8.3 Gelem/s with 1-2
  // of 4, tools/bench/fake_quantize_avx2_bound.cpp).
  {
    const V x0 = hn::LoadU(d, x), x1 = hn::LoadU(d, x + N), x2 = hn::LoadU(d, x + 2 * N), x3 = hn::LoadU(d, x + 3 * N);
    if (HWY_LIKELY(!AnyNaN4(x0, x1, x2, x3))) {
      constexpr bool kM = kDivide && kBypass >= 2;
      StoreVec<kStream>(FakeQuantizeOrderedAvx2<Round, kDivide, false>(d, x0, f, r, lo, hi, s), d, q);
      StoreVec<kStream>(FakeQuantizeOrderedAvx2<Round, kDivide, kM>(d, x1, f, r, lo, hi, s), d, q + N);
      StoreVec<kStream>(FakeQuantizeOrderedAvx2<Round, kDivide, kM && kBypass >= 3>(d, x2, f, r, lo, hi, s), d, q + 2 * N);
      StoreVec<kStream>(FakeQuantizeOrderedAvx2<Round, kDivide, kM>(d, x3, f, r, lo, hi, s), d, q + 3 * N);
      return;
    }
  }
#endif
  const V y0 = FakeQuantizeVec<Round, kDivide>(d, hn::LoadU(d, x), f, lo, hi, s);
  const V y1 = FakeQuantizeVecOdd<Round, kDivide, (kBypass >= 2)>(d, hn::LoadU(d, x + N), f, r, lo, hi, s);
  const V y2 = FakeQuantizeVecOdd<Round, kDivide, (kBypass >= 3)>(d, hn::LoadU(d, x + 2 * N), f, r, lo, hi, s);
  const V y3 = FakeQuantizeVecOdd<Round, kDivide, (kBypass >= 2)>(d, hn::LoadU(d, x + 3 * N), f, r, lo, hi, s);
  StoreVec<kStream>(y0, d, q);
  StoreVec<kStream>(y1, d, q + N);
  StoreVec<kStream>(y2, d, q + 2 * N);
  StoreVec<kStream>(y3, d, q + 3 * N);
}
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
// Bytes (AVX-512): only the upper clamp in float; ByteBlockPacker does the rest.
template <class Round, bool kDivide, int kBypass, bool kStream, class Out, class D, class V = hn::Vec<D>>
HWY_INLINE void QuantizeBlockBytes(D d, const float* x, V f, V r, V hi, const ByteBlockPacker<Out>& pack, Out* q) {
  const std::size_t N = hn::Lanes(d);
  const auto v0 = QuantizeOffsetVec<Round, kDivide, false>(d, hn::LoadU(d, x), f, hi, hi);
  const auto v1 = QuantizeOffsetVecOdd<Round, kDivide, (kBypass >= 2)>(d, hn::LoadU(d, x + N), f, r, hi, hi);
  const auto v2 = QuantizeOffsetVecOdd<Round, kDivide, (kBypass >= 3)>(d, hn::LoadU(d, x + 2 * N), f, r, hi, hi);
  const auto v3 = QuantizeOffsetVecOdd<Round, kDivide, (kBypass >= 2)>(d, hn::LoadU(d, x + 3 * N), f, r, hi, hi);
  pack.template Store<kStream>(v0.raw, v1.raw, v2.raw, v3.raw, q);
}
// 16-bit outputs (AVX-512): both clamps in float (int32 + z could wrap for an unclamped
// INT32_MIN), pairs of vectors packed into one store each (StoreQuantized4).
template <class Round, bool kDivide, int kBypass, bool kStream, class Out, class D, class V = hn::Vec<D>,
          class VI = hn::Vec<hn::RebindToSigned<D>>>
HWY_INLINE void QuantizeBlockWide(D d, const float* x, V f, V r, V lo, V hi, VI z, Out* q) {
  const std::size_t N = hn::Lanes(d);
  const auto v0 = QuantizeOffsetVec<Round, kDivide>(d, hn::LoadU(d, x), f, lo, hi);
  const auto v1 = QuantizeOffsetVecOdd<Round, kDivide, (kBypass >= 2), true>(d, hn::LoadU(d, x + N), f, r, lo, hi);
  const auto v2 = QuantizeOffsetVecOdd<Round, kDivide, (kBypass >= 3), true>(d, hn::LoadU(d, x + 2 * N), f, r, lo, hi);
  const auto v3 = QuantizeOffsetVecOdd<Round, kDivide, (kBypass >= 2), true>(d, hn::LoadU(d, x + 3 * N), f, r, lo, hi);
  StoreQuantized4<Out, kStream>(hn::RebindToSigned<D>(), v0, v1, v2, v3, z, q);
}
// Two vectors (a row of 2 N values): one PackPair16 store; the second by Markstein's step.
template <class Round, bool kDivide, bool kMarkstein, bool kStream, class Out, class D, class V = hn::Vec<D>,
          class VI = hn::Vec<hn::RebindToSigned<D>>>
HWY_INLINE void QuantizePairWide(D d, const float* x, V f, V r, V lo, V hi, VI z, Out* q) {
  const auto v0 = QuantizeOffsetVec<Round, kDivide>(d, hn::LoadU(d, x), f, lo, hi);
  const auto v1 = QuantizeOffsetVecOdd<Round, kDivide, kMarkstein, true>(d, hn::LoadU(d, x + hn::Lanes(d)), f, r, lo, hi);
  const hn::Repartition<Out, hn::RebindToSigned<D>> d16;
  StoreVec<kStream>(PackPair16(d16, v0, v1, z), d16, q);
}
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
// Bytes (AVX2): as on AVX-512, only the upper clamp in float and ByteBlockPacker for the rest.
// Half-even (kCsr): while MXCSR rounds to nearest even (the default; fesetround can change it:
// CsrRoundsToNearest) one VCVTPS2DQ rounds and converts, as AVX-512's embedded
// rounding does; otherwise ROUNDPS with the mode in the instruction, then a truncating
// conversion (QuantizeArgs::round_by_csr, set per call in QuantizeByRounding). Together about
// 15 % faster than both clamps in float, ROUNDPS and StoreQuantized4.
HWY_INLINE bool CsrRoundsToNearest() { return (_mm_getcsr() & 0x6000u) == 0; }

// kLow: the lower clamp too (16-bit outputs: int32 + z could wrap for INT32_MIN).
template <class Round, bool kDivide, bool kCsr, bool kLow, class D, class V = hn::Vec<D>>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> QuantizeOffsetVecAvx2(D d, V x, V f, V lo, V hi) {
  if constexpr (kCsr) {
    const V prod = kDivide ? hn::Div(x, f) : hn::Mul(x, f);
    // NaN x: the masked lane converts +0 (the zero point); below -2^31 and -inf: INT32_MIN,
    // which the saturating packs take as below qmin
    const V t = hn::IfThenElseZero(hn::Eq(x, x), kLow ? hn::Min(hn::Max(prod, lo), hi) : hn::Min(prod, hi));
    return hn::Vec<hn::RebindToSigned<D>>{_mm256_cvtps_epi32(t.raw)};
  } else {
    return QuantizeOffsetVec<Round, kDivide, kLow>(d, x, f, lo, hi);
  }
}

// One NaN-free vector, half-even by VCVTPS2DQ: x / f (kMarkstein: DivideMarksteinAvx2) or x * f,
// clamped above, then (kLow) below: in that order so that a NaN quotient of +inf becomes hi.
template <bool kDivide, bool kMarkstein, bool kLow, class V>
HWY_INLINE hn::Vec<hn::RebindToSigned<hn::DFromV<V>>> QuantizeOrderedCsrAvx2(V x, V f, V r, V lo, V hi) {
  __m256 q;
  if constexpr (kMarkstein)
    q = DivideMarksteinAvx2(x.raw, f.raw, r.raw);
  else
    q = kDivide ? _mm256_div_ps(x.raw, f.raw) : _mm256_mul_ps(x.raw, f.raw);
  __m256 t = _mm256_min_ps(q, hi.raw);
  if constexpr (kLow) t = _mm256_max_ps(t, lo.raw);
  (void)lo;
  return hn::Vec<hn::RebindToSigned<hn::DFromV<V>>>{_mm256_cvtps_epi32(t)};
}

// A block of 4 vectors, half-even while MXCSR rounds to nearest (kCsr): blocks without NaN (one
// test for the four vectors, not a compare and mask in each) take QuantizeOrderedCsrAvx2, with
// kBypass (0, 2 or 3, dividing only) of the vectors by Markstein's step as on AVX-512 (vectors
// 1 and 3; 3: also 2); a block with a NaN masks every vector and divides. Other modes: each
// vector masks its NaN lanes (QuantizeOffsetVecAvx2). 4K-64K int8 on the AVX2 EPYC
// (tools/bench/quantize_avx2_bound.cpp): 6.7 Gelem/s with every vector dividing and masking,
// 7.1 with the block test, 8.5-8.7 with it and 1-2 vectors by Markstein's step.
template <class Round, bool kDivide, bool kCsr, int kBypass, bool kLow, class D, class V = hn::Vec<D>,
          class VI = hn::Vec<hn::RebindToSigned<D>>>
HWY_INLINE void QuantizeBlockAvx2(D d, const float* x, V f, V r, V lo, V hi, VI& v0, VI& v1, VI& v2, VI& v3) {
  const std::size_t N = hn::Lanes(d);
  const V x0 = hn::LoadU(d, x), x1 = hn::LoadU(d, x + N), x2 = hn::LoadU(d, x + 2 * N), x3 = hn::LoadU(d, x + 3 * N);
  if constexpr (kCsr) {
    if (HWY_LIKELY(!AnyNaN4(x0, x1, x2, x3))) {
      constexpr bool kM = kDivide && kBypass >= 2;
      v0 = QuantizeOrderedCsrAvx2<kDivide, false, kLow>(x0, f, r, lo, hi);
      v1 = QuantizeOrderedCsrAvx2<kDivide, kM, kLow>(x1, f, r, lo, hi);
      v2 = QuantizeOrderedCsrAvx2<kDivide, kM && kBypass >= 3, kLow>(x2, f, r, lo, hi);
      v3 = QuantizeOrderedCsrAvx2<kDivide, kM, kLow>(x3, f, r, lo, hi);
      return;
    }
  }
  (void)r;
  v0 = QuantizeOffsetVecAvx2<Round, kDivide, kCsr, kLow>(d, x0, f, lo, hi);
  v1 = QuantizeOffsetVecAvx2<Round, kDivide, kCsr, kLow>(d, x1, f, lo, hi);
  v2 = QuantizeOffsetVecAvx2<Round, kDivide, kCsr, kLow>(d, x2, f, lo, hi);
  v3 = QuantizeOffsetVecAvx2<Round, kDivide, kCsr, kLow>(d, x3, f, lo, hi);
}

template <class Round, bool kDivide, bool kCsr, int kBypass, bool kStream, class Out, class D, class V = hn::Vec<D>>
HWY_INLINE void QuantizeBlockBytes(D d, const float* x, V f, V r, V hi, const ByteBlockPacker<Out>& pack, Out* q) {
  hn::Vec<hn::RebindToSigned<D>> v0, v1, v2, v3;
  QuantizeBlockAvx2<Round, kDivide, kCsr, kBypass, false>(d, x, f, r, hi, hi, v0, v1, v2, v3);
  pack.template Store<kStream>(v0.raw, v1.raw, v2.raw, v3.raw, q);
}

// 16-bit outputs: both clamps in float; half-even while MXCSR rounds to nearest by one
// VCVTPS2DQ (kCsr: int16 in cache 1.15-1.25x -> 1.34-1.47x the plain loop on the AVX2 EPYC).
template <class Round, bool kDivide, bool kCsr, int kBypass, bool kStream, class Out, class D, class V = hn::Vec<D>,
          class VI = hn::Vec<hn::RebindToSigned<D>>>
HWY_INLINE void QuantizeBlockWideAvx2(D d, const float* x, V f, V r, V lo, V hi, VI z, Out* q) {
  VI v0, v1, v2, v3;
  QuantizeBlockAvx2<Round, kDivide, kCsr, kBypass, true>(d, x, f, r, lo, hi, v0, v1, v2, v3);
  StoreQuantized4<Out, kStream>(hn::RebindToSigned<D>(), v0, v1, v2, v3, z, q);
}

// One block of a row with its own constants (QuantizeRowsAvx2): bytes take hi and z as two
// int16 (the packer's), 16-bit outputs lo, hi and z as int32.
template <class Round, bool kDivide, bool kCsr, int kBypass, bool kStream, class Out, class D, class V = hn::Vec<D>>
HWY_INLINE void QuantizeRowBlockAvx2(D d, const float* x, V f, V r, V lo, V hi, __m256i z,
                                     const ByteBlockPacker<Out>& pack, Out* q) {
  if constexpr (sizeof(Out) == 1) {
    (void)lo;
    ByteBlockPacker<Out> row_pack = pack;
    row_pack.z16 = z;
    QuantizeBlockBytes<Round, kDivide, kCsr, kBypass, kStream>(d, x, f, r, hi, row_pack, q);
  } else {
    (void)pack;
    QuantizeBlockWideAvx2<Round, kDivide, kCsr, kBypass, kStream>(d, x, f, r, lo, hi,
                                                                  hn::Vec<hn::RebindToSigned<D>>{z}, q);
  }
}
#endif

// The whole vectors of a run with constant parameters, in blocks of 4 while they last; returns
// the elements done. kBypass (AVX-512, dividing): that many vectors of each block divide with
// DivideMarkstein (0, 2 or 3).
template <class Out, class Round, bool kDivide, bool kStream, int kBypass>
HWY_INLINE std::size_t QuantizeBlocks4Impl(const QuantizeArgs& a, const float* HWY_RESTRICT x,
                                           Out* HWY_RESTRICT q, std::size_t n, float factor,
                                           float zero, float scale) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  const std::size_t N = hn::Lanes(d);
  const V f = hn::Set(d, factor);
  const V r = hn::Set(d, kBypass > 0 ? 1.0f / factor : 1.0f);  // the kBypass vectors
  (void)r;
  const V lo = hn::Set(d, a.qmin - zero);  // exact: small integers
  const V hi = hn::Set(d, a.qmax - zero);
  const std::size_t ahead = a.stream_prefetch;
  (void)ahead;
  std::size_t i = 0;
  if constexpr (std::is_same<Out, float>::value) {
    const V s = hn::Set(d, scale);
    for (; i + 4 * N <= n; i += 4 * N) {
      PrefetchStreamInput<kStream>(x + i, 4 * N * sizeof(float), ahead);
      FakeQuantizeBlock<Round, kDivide, kBypass, kStream>(d, x + i, f, r, lo, hi, s, q + i);
    }
    // then single vectors (short rows: per-group blocks of 16 or 32), ordinary stores
    for (; i + N <= n; i += N)
      hn::StoreU(FakeQuantizeVec<Round, kDivide>(d, hn::LoadU(d, x + i), f, lo, hi, s), d, q + i);
  } else {
    (void)scale;
    const auto z = hn::Set(di, static_cast<std::int32_t>(zero));
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
    if constexpr (sizeof(Out) == 1) {
      const ByteBlockPacker<Out> pack(_mm512_set1_epi16(static_cast<std::int16_t>(zero)), a.qmin);
      for (; i + 4 * N <= n; i += 4 * N)
        QuantizeBlockBytes<Round, kDivide, kBypass, kStream>(d, x + i, f, r, hi, pack, q + i);
    } else if constexpr (sizeof(Out) == 2) {  // kBypass vectors by Markstein's step as for bytes
      for (; i + 4 * N <= n; i += 4 * N)
        QuantizeBlockWide<Round, kDivide, kBypass, kStream>(d, x + i, f, r, lo, hi, z, q + i);
    }
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
    if constexpr (sizeof(Out) == 1) {
      const ByteBlockPacker<Out> pack(_mm256_set1_epi16(static_cast<std::int16_t>(zero)), a.qmin);
      if constexpr (std::is_same<Round, RoundHalfEvenOp>::value) {
        if (a.round_by_csr)
          for (; i + 4 * N <= n; i += 4 * N) {
            PrefetchStreamInput<kStream>(x + i, 4 * N * sizeof(float), ahead);
            QuantizeBlockBytes<Round, kDivide, true, kBypass, kStream>(d, x + i, f, r, hi, pack, q + i);
          }
      }
      for (; i + 4 * N <= n; i += 4 * N) {  // (none left after the loop above)
        PrefetchStreamInput<kStream>(x + i, 4 * N * sizeof(float), ahead);
        QuantizeBlockBytes<Round, kDivide, false, 0, kStream>(d, x + i, f, r, hi, pack, q + i);
      }
    } else if constexpr (sizeof(Out) == 2 && std::is_same<Round, RoundHalfEvenOp>::value) {
      if (a.round_by_csr)
        for (; i + 4 * N <= n; i += 4 * N) {
          PrefetchStreamInput<kStream>(x + i, 4 * N * sizeof(float), ahead);
          QuantizeBlockWideAvx2<Round, kDivide, true, kBypass, kStream>(d, x + i, f, r, lo, hi, z, q + i);
        }
    }
#endif
    for (; i + 4 * N <= n; i += 4 * N) {
      PrefetchStreamInput<kStream>(x + i, 4 * N * sizeof(float), ahead);
      const auto v0 = QuantizeOffsetVec<Round, kDivide>(d, hn::LoadU(d, x + i), f, lo, hi);
      const auto v1 = QuantizeOffsetVec<Round, kDivide>(d, hn::LoadU(d, x + i + N), f, lo, hi);
      const auto v2 = QuantizeOffsetVec<Round, kDivide>(d, hn::LoadU(d, x + i + 2 * N), f, lo, hi);
      const auto v3 = QuantizeOffsetVec<Round, kDivide>(d, hn::LoadU(d, x + i + 3 * N), f, lo, hi);
      StoreQuantized4<Out, kStream>(di, v0, v1, v2, v3, z, q + i);
    }
    const hn::Rebind<Out, decltype(di)> dq;
    for (; i + N <= n; i += N) {  // in [lo - z, hi - z]: + z fits Out
      const auto v = QuantizeOffsetVec<Round, kDivide>(d, hn::LoadU(d, x + i), f, lo, hi);
      hn::StoreU(hn::DemoteTo(dq, hn::Add(v, z)), dq, q + i);
    }
  }
  return i;
}

template <class Out, class Round, bool kDivide, bool kStream>
HWY_INLINE std::size_t QuantizeBlocks4(const QuantizeArgs& a, const float* HWY_RESTRICT x,
                                       Out* HWY_RESTRICT q, std::size_t n, float factor,
                                       float zero, float scale) {
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  if constexpr (kDivide && kMarksteinRounding<Round> && (sizeof(Out) <= 2 || std::is_same<Out, float>::value)) {
    // From two blocks on: one run of one block does not repay 1 / s and its broadcast. Rows of
    // one block (small per-channel tensors) take QuantizeShortRows instead.
    if (n >= 8 * hn::Lanes(hn::ScalableTag<float>()) && MarksteinScale(factor)) {
      if (a.divider_bypass == 3)
        return QuantizeBlocks4Impl<Out, Round, kDivide, kStream, 3>(a, x, q, n, factor, zero, scale);
      return QuantizeBlocks4Impl<Out, Round, kDivide, kStream, 2>(a, x, q, n, factor, zero, scale);
    }
  }
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  // Integer outputs' half-even blocks by MXCSR (QuantizeBlockAvx2) and fake-quantize
  // (FakeQuantizeBlock), from four blocks on: rows of two with 1 / s per row ran slower (int16
  // per channel, rows of 64: 5.6 -> 5.1 Gelem/s, before those rows took QuantizeRowsAvx2 with
  // 1 / s from a table).
  // Fake-quantize: every mode Markstein's step serves (kMarksteinRounding).
  constexpr bool kBytesOrWide = std::is_same<Round, RoundHalfEvenOp>::value && sizeof(Out) <= 2;
  constexpr bool kFake = kMarksteinRounding<Round> && std::is_same<Out, float>::value;
  if constexpr (kDivide && (kBytesOrWide || kFake)) {
    if ((kFake || a.round_by_csr) && n >= 16 * hn::Lanes(hn::ScalableTag<float>()) && MarksteinScale(factor)) {
      if (a.divider_bypass == 3)
        return QuantizeBlocks4Impl<Out, Round, kDivide, kStream, 3>(a, x, q, n, factor, zero, scale);
      return QuantizeBlocks4Impl<Out, Round, kDivide, kStream, 2>(a, x, q, n, factor, zero, scale);
    }
  }
#endif
  return QuantizeBlocks4Impl<Out, Round, kDivide, kStream, 0>(a, x, q, n, factor, zero, scale);
}

// The outputs with the block path (QuantizeBlocks4) and non-temporal stores past the
// threshold: bytes, 16-bit integers (A16 activations) and fake-quantized floats. int32 takes
// QuantizeLoop (one instantiation less per target and rounding: compile time).
template <class Out>
constexpr bool kBlocked = sizeof(Out) <= 2 || std::is_same<Out, float>::value;
// The outputs of QuantizeShortRows (AVX-512 rows of their own parameters): all of kBlocked's.
template <class Out>
constexpr bool kShortRowBlocks = kBlocked<Out>;

// n contiguous elements; parameters at index `at` (kVec: at + i for element i).
template <class Out, class Round, bool kDivide, bool kVec>
HWY_NOINLINE void QuantizeLoop(const QuantizeArgs& a, const float* x, Out* q, std::size_t n,
                             const float* pf, const float* pz, const float* ps,
                             const float* HWY_RESTRICT u) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const std::size_t N = hn::Lanes(d);
  constexpr bool kFake = std::is_same<Out, float>::value;
  const V lo = hn::Set(d, a.qmin);
  const V hi = hn::Set(d, a.qmax);
  V f = hn::Set(d, pf[0]);
  V z = hn::Set(d, pz[0]);
  V s = hn::Set(d, kFake ? ps[0] : 1.0f);
  V uu = hn::Zero(d);
  std::size_t i = 0;
  if constexpr (!kVec && !Round::kStochastic) {
    // Unrolled x2: independent chains for the out-of-order core.
    for (; i + 2 * N <= n; i += 2 * N) {
      const V x0 = hn::LoadU(d, x + i);
      const V x1 = hn::LoadU(d, x + i + N);
      const V q0 = QuantizeVec<Round, kDivide>(d, x0, f, z, lo, hi, uu);
      const V q1 = QuantizeVec<Round, kDivide>(d, x1, f, z, lo, hi, uu);
      StoreQuantized<Out>(d, q0, z, s, q + i);
      StoreQuantized<Out>(d, q1, z, s, q + i + N);
    }
  }
  for (; i + N <= n; i += N) {
    if constexpr (kVec) {
      f = hn::LoadU(d, pf + i);
      z = hn::LoadU(d, pz + i);
      if constexpr (kFake) s = hn::LoadU(d, ps + i);
    }
    if constexpr (Round::kStochastic) uu = hn::LoadU(d, u + i);
    const V v = QuantizeVec<Round, kDivide>(d, hn::LoadU(d, x + i), f, z, lo, hi, uu);
    StoreQuantized<Out>(d, v, z, s, q + i);
  }
  if (i == n) return;
  // Tail: one full vector through aligned buffers (never touches memory past the end).
  const std::size_t rem = n - i;
  HWY_ALIGN float xb[kMaxLanes<float>] = {};
  HWY_ALIGN float ub[kMaxLanes<float>] = {};
  HWY_ALIGN Out qb[kMaxLanes<float>] = {};
  std::memcpy(xb, x + i, rem * sizeof(float));
  if constexpr (Round::kStochastic) std::memcpy(ub, u + i, rem * sizeof(float));
  if constexpr (kVec) {
    HWY_ALIGN float fb[kMaxLanes<float>];
    HWY_ALIGN float zb[kMaxLanes<float>];
    HWY_ALIGN float sb[kMaxLanes<float>];
    for (std::size_t k = 0; k < N; ++k) {
      fb[k] = k < rem ? pf[i + k] : 1.0f;
      zb[k] = k < rem ? pz[i + k] : 0.0f;
      sb[k] = k < rem && kFake ? ps[i + k] : 1.0f;
    }
    f = hn::Load(d, fb);
    z = hn::Load(d, zb);
    s = hn::Load(d, sb);
  }
  const V v = QuantizeVec<Round, kDivide>(d, hn::Load(d, xb), f, z, lo, hi, hn::Load(d, ub));
  StoreQuantized<Out>(d, v, z, s, qb);
  std::memcpy(q + i, qb, rem * sizeof(Out));
}

// A run with constant parameters and ordinary stores: whole vectors, then the tail.
template <class Out, class Round, bool kDivide>
HWY_INLINE void QuantizeConstantRun(const QuantizeArgs& a, const float* x, Out* q, std::size_t n,
                                    const float* pf, const float* pz, const float* ps) {
  const std::size_t i = QuantizeBlocks4<Out, Round, kDivide, false>(a, x, q, n, pf[0], pz[0], ps ? ps[0] : 1.0f);
  if (i < n) QuantizeLoop<Out, Round, kDivide, false>(a, x + i, q + i, n - i, pf, pz, ps, nullptr);
}

template <class Out, class Round, bool kDivide, bool kVec>
HWY_INLINE void QuantizeRunBody(const void* args, const float* x, Out* q, std::size_t n,
                                std::int64_t at) {
  const QuantizeArgs& a = *static_cast<const QuantizeArgs*>(args);
  const float* pf = a.factor + at;
  const float* pz = a.zero + at;
  const float* ps = std::is_same<Out, float>::value ? a.scale + at : nullptr;
  if constexpr (Round::kStochastic) {
    HWY_ALIGN float u[kChunk];  // staged: n <= kChunk
    a.uniforms.fill(a.uniforms.context, x, n, u);
    QuantizeLoop<Out, Round, kDivide, kVec>(a, x, q, n, pf, pz, ps, u);
  } else if constexpr (!kVec && kBlocked<Out>) {
    if (a.stream) {
      // Non-temporal stores need aligned addresses: the head up to the first one goes the
      // ordinary way.
      const std::size_t block = 4 * hn::Lanes(hn::ScalableTag<float>()) * sizeof(Out);
      std::size_t head = ElementsToAlignment(q, block);
      if (head > n) head = n;  // (never aligned: no streaming)
      QuantizeLoop<Out, Round, kDivide, false>(a, x, q, head, pf, pz, ps, nullptr);
      const std::size_t i = head + QuantizeBlocks4<Out, Round, kDivide, true>(
                                       a, x + head, q + head, n - head, pf[0], pz[0], ps ? ps[0] : 1.0f);
      // (the fence is once per call, in QuantizeByRounding: one per row cost more than the row
      // for per-group blocks)
      if (i < n) QuantizeLoop<Out, Round, kDivide, false>(a, x + i, q + i, n - i, pf, pz, ps, nullptr);
    } else {
      QuantizeConstantRun<Out, Round, kDivide>(a, x, q, n, pf, pz, ps);
    }
  } else {
    QuantizeLoop<Out, Round, kDivide, kVec>(a, x, q, n, pf, pz, ps, nullptr);
  }
}

template <class Out, class Round, bool kDivide, bool kVec>
void QuantizeRun(const void* args, const float* x, Out* q, std::size_t n, std::int64_t at) {
  QuantizeRunBody<Out, Round, kDivide, kVec>(args, x, q, n, at);
}

#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX2)
// The rem (< vecs * N) values from x into buf's first vecs vectors, the lanes past them 0: the
// buffered tails of the row kernels. MaskedLoad of floats reads no memory past the mask on
// these targets (AVX2: vmaskmovps).
template <class D>
HWY_INLINE void LoadPadded(D d, const float* HWY_RESTRICT x, std::size_t rem, std::size_t vecs,
                           float* HWY_RESTRICT buf) {
  const std::size_t N = hn::Lanes(d);
  for (std::size_t v = 0; v < vecs; ++v)
    hn::Store(hn::MaskedLoad(hn::FirstN(d, rem > v * N ? rem - v * N : 0), d, x + v * N), d, buf + v * N);
}
#endif

#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
// Rows with their own parameters: per-channel rows of small tensors (often one block, or not
// whole vectors: a row's rest is one buffered block or pair) and per-group blocks. Blocks of 4
// vectors, then one pair, as
// in QuantizeBlocks4: when dividing in the Markstein modes, kBypass vectors of a block (2 or 3,
// divider_bypass_vectors) and the second of a pair take Markstein's step. Per row the constants
// are only broadcast from memory (a load each): 1 / s, qmin - z, qmax - z and z (as two int16
// for bytes, int32 for 16-bit outputs) are computed first, 64 rows at a time with vectors. A broadcast
// from a register is a shuffle per constant and row, on the unit the packs need; with those and
// a scalar 1 / s per row, one-block rows were slower with Markstein's step than without.
constexpr std::size_t kRowChunk = 64;
// Back-to-back rows of 3 to 8 N - 1 values, not whole pairs of vectors (2 N, 4 N, 6 N: those
// take pairs and blocks per row, nothing wasted), take QuantizeShortRows' flat path: one stream
// of blocks over a chunk's rows, each vector's parameters permuted from its rows'. On the Zen 5
// host int8 rows of 49 10.1 -> 12.7 Gelem/s (per tensor 22) against the blends of two
// broadcasts per parameter and a running row counter before, rows of 100 (a block per row
// before) 8.9 -> 13.3, rows of 3 0.37 -> 5.0. Past 8 N the two paths were within ~10 % either
// way (rows of 196: int8 10.6 flat against 9.4, fake-quantize 8.1 against 9.1) and the tables
// would grow. Masked broadcasts from a table of each vector's first row and lane mask (no
// permutes, no counter) were slower: rows of 49 10.0.
constexpr std::size_t kFlatRowsBelowVectors = 8;

template <class Out, class Round, bool kDivide, int kBypass, bool kStream>
HWY_INLINE void QuantizeShortRows(const QuantizeArgs& a, const float* x, std::ptrdiff_t sx, Out* q,
                                  std::ptrdiff_t sq, std::size_t count, std::size_t n,
                                  std::int64_t at, std::int64_t dat) {
  constexpr bool kFake = std::is_same<Out, float>::value;
  // 16-bit outputs: both clamps in float, pairs of vectors packed by PackPair16 (as in
  // QuantizeBlocks4); bytes: the upper clamp only, ByteBlockPacker.
  constexpr bool kWide = sizeof(Out) == 2;
  constexpr bool kMarkstein = kDivide && kMarksteinRounding<Round>;
  constexpr int kBlockBypass = kMarkstein ? kBypass : 0;  // of a block's 4 vectors
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  const std::size_t N = hn::Lanes(d);
  // Locals: byte stores may alias *a.
  const float qmin = a.qmin, qmax = a.qmax;
  const float* const factor = a.factor;
  const float* const zero = a.zero;
  const float* const scale = a.scale;
  const ByteBlockPacker<Out> pack(_mm512_setzero_si512(), qmin);
  const hn::Rebind<std::int16_t, decltype(di)> d16;
  constexpr bool kBytes = sizeof(Out) == 1;
  // (kRowChunk + N: the flat path reads 2 N entries from its last group's first row on)
  HWY_ALIGN float rf[kRowChunk + kMaxLanes<float>], rr[kRowChunk + kMaxLanes<float>],
      rlo[kRowChunk + kMaxLanes<float>], rhi[kRowChunk + kMaxLanes<float>], rs[kRowChunk + kMaxLanes<float>];
  HWY_ALIGN std::int32_t rz[kRowChunk + kMaxLanes<float>];
  HWY_ALIGN std::int16_t rz16[kRowChunk + kMaxLanes<float>];  // (the flat path's bytes)
  // Back-to-back rows (in and out) of 3 to 8 N - 1 values, not whole pairs of vectors, take one
  // flat stream of blocks over the chunk's rows, each vector's parameters permuted (below).
  const bool flat = !kStream && sx == static_cast<std::ptrdiff_t>(n) && sq == static_cast<std::ptrdiff_t>(n) &&
                    n >= 3 && n % (2 * N) != 0 && n < kFlatRowsBelowVectors * N;
  // The flat path's tables, made once per call. N rows hold n vectors: the stream is groups of
  // N rows. row_of[p * N + l]: the row in its group of lane l of the group's vector p; for p in
  // [n, n + 3), the next group's vector p - n, its row + N (a block's last vectors; n >= 3).
  // floor((N p + l) / n) as (N p + l + 0.5) * (1 / n) truncated: exact, the quotient is at
  // least 0.5 / n from an integer and the product's error below 2^-19.
  constexpr std::size_t kMaxFlatVectors = kFlatRowsBelowVectors * kMaxLanes<float> + 2;  // n + 3
  HWY_ALIGN std::int32_t row_of[kMaxFlatVectors * kMaxLanes<float>];
  // Bytes: pair_of[p * 2 N + i]: the rows of vectors p and p + 1 as int16 in the pack's order
  // (_mm512_packs_epi32 of theirs), to permute a pair's zero points in one 16-bit permute.
  HWY_ALIGN std::int16_t pair_of[kBytes ? (kMaxFlatVectors - 1) * 2 * kMaxLanes<float> : 1];
  if (flat) {
    // (one loop, each vector packed with the one before; the quotients are below 2 N: plain
    // truncation, not Highway's overflow-checked conversion)
    const __m512 inv = _mm512_set1_ps(1.0f / static_cast<float>(n));
    __m512 e = _mm512_add_ps(hn::Iota(d, 0.0f).raw, _mm512_set1_ps(0.5f));
    __m512i before = _mm512_setzero_si512();
    for (std::size_t v = 0; v < n + 3; ++v) {
      __m512i rows;
      if (v < n) {
        rows = _mm512_cvttps_epi32(_mm512_mul_ps(e, inv));
        e = _mm512_add_ps(e, _mm512_set1_ps(static_cast<float>(N)));
      } else {
        rows = _mm512_add_epi32(_mm512_load_si512(row_of + (v - n) * N), _mm512_set1_epi32(static_cast<int>(N)));
      }
      _mm512_store_si512(row_of + v * N, rows);
      if (kBytes && v > 0) _mm512_store_si512(pair_of + (v - 1) * 2 * N, _mm512_packs_epi32(before, rows));
      before = rows;
    }
  }
  for (std::size_t c0 = 0; c0 < count; c0 += kRowChunk) {
    const std::size_t m = count - c0 < kRowChunk ? count - c0 : kRowChunk;
    const std::int64_t at0 = at + static_cast<std::int64_t>(c0) * dat;
    // The parameters of the chunk's rows: read in place when contiguous, else gathered first.
    const float* pf = factor + at0;
    const float* pz = zero + at0;
    const float* ps = kFake ? scale + at0 : nullptr;
    if (dat != 1) {
      for (std::size_t k = 0; k < m; ++k) {
        const std::int64_t p = at0 + static_cast<std::int64_t>(k) * dat;
        rf[k] = factor[p];
        rhi[k] = zero[p];
        if constexpr (kFake) rs[k] = scale[p];
      }
      pf = rf;
      pz = rhi;
      ps = rs;
    }
    auto markstein = hn::FirstN(d, N);
    const V vmin = hn::Set(d, qmin), vmax = hn::Set(d, qmax);
    for (std::size_t k = 0; k < (flat ? m + N : m); k += N) {
      // Lanes past m: factor 1, zero 0, scale 1 (computed; only the flat path's lanes past
      // the chunk's end use them).
      const auto in = hn::FirstN(d, m > k ? m - k : 0);
      const V f = hn::IfThenElse(in, hn::MaskedLoad(in, d, pf + k), hn::Set(d, 1.0f));
      const V z = hn::MaskedLoad(in, d, pz + k);
      if constexpr (kFake) hn::Store(hn::IfThenElse(in, hn::MaskedLoad(in, d, ps + k), f), d, rs + k);
      hn::Store(f, d, rf + k);
      if constexpr (kMarkstein) {
        markstein = hn::And(markstein, hn::And(hn::Ge(f, hn::Set(d, 0x1p-100f)), hn::Le(f, hn::Set(d, 0x1p100f))));
        hn::Store(hn::Div(hn::Set(d, 1.0f), f), d, rr + k);
      }
      hn::Store(hn::Sub(vmax, z), d, rhi + k);
      hn::Store(hn::Sub(vmin, z), d, rlo + k);
      const auto zi = hn::ConvertTo(di, z);  // small integers
      hn::Store(kWide ? zi : hn::Or(hn::And(zi, hn::Set(di, 0xffff)), hn::ShiftLeft<16>(zi)), di, rz + k);
      if (kBytes && flat) hn::Store(hn::DemoteTo(d16, zi), d16, rz16 + k);
    }
    if (kMarkstein && !hn::AllTrue(d, markstein)) {  // a scale outside [2^-100, 2^100]
      std::int64_t p = at0;
      for (std::size_t k = 0; k < m; ++k, x += sx, q += sq, p += dat)
        QuantizeConstantRun<Out, Round, kDivide>(a, x, q, n, factor + p, zero + p, kFake ? scale + p : nullptr);
      continue;
    }
    if (flat) {
      // One stream of blocks over the m rows, in groups of N rows (n vectors). A block's four
      // vectors are its group's p..p+3 (past n: the next group's), and each vector's parameters
      // are a two-table permute per parameter of the 2 N rows from its group's first, indexed
      // by row_of. Integer outputs permute only s (1 / s) and z: the float clamp is the
      // constant [qmin - qmax, qmax - qmin] (bytes: its upper end only), which holds
      // [qmin - z, qmax - z] for every z in range; z is added to the int32 values (16-bit) or,
      // saturating, to the int16 packs (bytes: one 16-bit permute of the 2 N rows' int16 zero
      // points per pair, indexed by pair_of), and the packs' saturation and a byte (16-bit) min
      // and max clamp to [qmin, qmax]; fake-quantize permutes lo = qmin - z and hi = qmax - z.
      const std::size_t total = m * n;
      std::size_t p = 0;  // the block's first vector in its group
      std::size_t g = 0;  // the group's first row in the chunk
      struct Lane {
        V f, r, lo, hi, s;  // lo, hi, s: fake-quantize
        hn::Vec<decltype(di)> z;  // 16-bit outputs
      };
      const V lo_c = hn::Set(d, qmin - qmax), hi_c = hn::Set(d, qmax - qmin);
      const auto lane = [&](std::size_t j) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
        const __m512i idx = hn::Load(di, row_of + (p + j) * N).raw;
        const auto pick = [&](const float* t) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
          return V{_mm512_permutex2var_ps(hn::Load(d, t + g).raw, idx, hn::Load(d, t + g + N).raw)};
        };
        Lane l;
        l.f = pick(rf);
        l.r = kMarkstein ? pick(rr) : l.f;
        if constexpr (kFake) {
          l.lo = pick(rlo);
          l.hi = pick(rhi);
          l.s = pick(rs);
        } else if constexpr (kWide) {
          l.z = hn::Vec<decltype(di)>{
              _mm512_permutex2var_epi32(hn::Load(di, rz + g).raw, idx, hn::Load(di, rz + g + N).raw)};
        }
        return l;
      };
      // Vector v of a block: kBlockBypass of them by Markstein's step, as in the blocks.
      const auto block = [&](const float* xp, Out* qp) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
        const Lane p0 = lane(0), p1 = lane(1), p2 = lane(2), p3 = lane(3);
        if constexpr (kFake) {
          hn::StoreU(FakeQuantizeVec<Round, kDivide>(d, hn::LoadU(d, xp), p0.f, p0.lo, p0.hi, p0.s), d, qp);
          hn::StoreU(FakeQuantizeVecOdd<Round, kDivide, (kBlockBypass >= 2)>(d, hn::LoadU(d, xp + N), p1.f, p1.r,
                                                                             p1.lo, p1.hi, p1.s),
                     d, qp + N);
          hn::StoreU(FakeQuantizeVecOdd<Round, kDivide, (kBlockBypass >= 3)>(d, hn::LoadU(d, xp + 2 * N), p2.f, p2.r,
                                                                             p2.lo, p2.hi, p2.s),
                     d, qp + 2 * N);
          hn::StoreU(FakeQuantizeVecOdd<Round, kDivide, (kBlockBypass >= 2)>(d, hn::LoadU(d, xp + 3 * N), p3.f, p3.r,
                                                                             p3.lo, p3.hi, p3.s),
                     d, qp + 3 * N);
        } else {
          if constexpr (kWide) {
            // int32 q in [2 qmin - qmax, 2 qmax - qmin], packed with saturation, then clamped
            const auto v0 = hn::Add(QuantizeOffsetVec<Round, kDivide>(d, hn::LoadU(d, xp), p0.f, lo_c, hi_c), p0.z);
            const auto v1 = hn::Add(QuantizeOffsetVecOdd<Round, kDivide, (kBlockBypass >= 2), true>(
                                        d, hn::LoadU(d, xp + N), p1.f, p1.r, lo_c, hi_c),
                                    p1.z);
            const auto v2 = hn::Add(QuantizeOffsetVecOdd<Round, kDivide, (kBlockBypass >= 3), true>(
                                        d, hn::LoadU(d, xp + 2 * N), p2.f, p2.r, lo_c, hi_c),
                                    p2.z);
            const auto v3 = hn::Add(QuantizeOffsetVecOdd<Round, kDivide, (kBlockBypass >= 2), true>(
                                        d, hn::LoadU(d, xp + 3 * N), p3.f, p3.r, lo_c, hi_c),
                                    p3.z);
            const hn::Repartition<Out, decltype(di)> d16;
            const auto q16lo = hn::Set(d16, static_cast<Out>(qmin)), q16hi = hn::Set(d16, static_cast<Out>(qmax));
            const auto z0 = hn::Zero(di);
            hn::StoreU(hn::Min(hn::Max(PackPair16(d16, v0, v1, z0), q16lo), q16hi), d16, qp);
            hn::StoreU(hn::Min(hn::Max(PackPair16(d16, v2, v3, z0), q16lo), q16hi), d16, qp + 2 * N);
          } else {
            // Bytes: the upper clamp only (below -2^31 the conversion gives INT32_MIN, which the
            // saturating packs take as below qmin), z added to the int16 packs (saturating:
            // the pairs' z packed the same way), then a byte max and min.
            const auto v0 = QuantizeOffsetVec<Round, kDivide, false>(d, hn::LoadU(d, xp), p0.f, hi_c, hi_c);
            const auto v1 = QuantizeOffsetVecOdd<Round, kDivide, (kBlockBypass >= 2)>(d, hn::LoadU(d, xp + N), p1.f,
                                                                                     p1.r, hi_c, hi_c);
            const auto v2 = QuantizeOffsetVecOdd<Round, kDivide, (kBlockBypass >= 3)>(d, hn::LoadU(d, xp + 2 * N),
                                                                                     p2.f, p2.r, hi_c, hi_c);
            const auto v3 = QuantizeOffsetVecOdd<Round, kDivide, (kBlockBypass >= 2)>(d, hn::LoadU(d, xp + 3 * N),
                                                                                     p3.f, p3.r, hi_c, hi_c);
            constexpr bool kSigned = std::is_signed<Out>::value;
            const __m512i zw = _mm512_loadu_si512(rz16 + g);  // the 32 rows' zero points
            const __m512i z01 = _mm512_permutexvar_epi16(_mm512_load_si512(pair_of + p * 2 * N), zw);
            const __m512i z23 = _mm512_permutexvar_epi16(_mm512_load_si512(pair_of + (p + 2) * 2 * N), zw);
            const __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(v0.raw, v1.raw), z01);
            const __m512i cd = _mm512_adds_epi16(_mm512_packs_epi32(v2.raw, v3.raw), z23);
            const __m512i lo8 = _mm512_set1_epi8(static_cast<char>(static_cast<Out>(qmin)));
            const __m512i hi8 = _mm512_set1_epi8(static_cast<char>(static_cast<Out>(qmax)));
            const __m512i r8 = kSigned ? _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(ab, cd), lo8), hi8)
                                       : _mm512_min_epu8(_mm512_max_epu8(_mm512_packus_epi16(ab, cd), lo8), hi8);
            _mm512_storeu_si512(reinterpret_cast<void*>(qp), _mm512_permutexvar_epi32(pack.order, r8));
          }
        }
        p += 4;  // the next block's first vector
        const bool next = p >= n;  // selects, not a branch
        p = next ? p - n : p;
        g = next ? g + N : g;
      };
      std::size_t i = 0;
      for (; i + 4 * N <= total; i += 4 * N) block(x + i, q + i);
      if (i < total) {  // the stream's rest: lanes past it load as 0 (rows past m: neutral entries)
        HWY_ALIGN float xb[4 * kMaxLanes<float>];
        HWY_ALIGN Out qb[4 * kMaxLanes<float>];
        const std::size_t rem = total - i;
        LoadPadded(d, x + i, rem, 4, xb);
        block(xb, qb);
        CopyFirst(qb, q + i, rem);
      }
      x += total;
      q += total;
      continue;
    }
    std::size_t k = 0;
    // Rows of two or four vectors (per-group blocks of 2N values, per-channel rows of small
    // tensors): two rows per step, their vectors independent, one loop test for both (as
    // DequantizeRowPairs). Rows of 4 vectors as the blocks; of 2, the second by Markstein's step.
    const auto row_pairs = [&](auto vecs) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
      constexpr std::size_t kVecs = decltype(vecs)::value;
      for (; k + 2 <= m; k += 2, x += 2 * sx, q += 2 * sq) {
        const V f0 = hn::Set(d, rf[k]);
        const V f1 = hn::Set(d, rf[k + 1]);
        const V r0 = kMarkstein ? hn::Set(d, rr[k]) : f0;
        const V r1 = kMarkstein ? hn::Set(d, rr[k + 1]) : f1;
        const V hi0 = hn::Set(d, rhi[k]);
        const V hi1 = hn::Set(d, rhi[k + 1]);
        const float* x1 = x + sx;
        Out* q1 = q + sq;
        if constexpr (kFake) {
          const V lo0 = hn::Set(d, rlo[k]);
          const V lo1 = hn::Set(d, rlo[k + 1]);
          const V s0 = hn::Set(d, rs[k]);
          const V s1 = hn::Set(d, rs[k + 1]);
          if constexpr (kVecs == 4) {
            FakeQuantizeBlock<Round, kDivide, kBlockBypass, kStream>(d, x, f0, r0, lo0, hi0, s0, q);
            FakeQuantizeBlock<Round, kDivide, kBlockBypass, kStream>(d, x1, f1, r1, lo1, hi1, s1, q1);
          } else {
            const V y0 = FakeQuantizeVec<Round, kDivide>(d, hn::LoadU(d, x), f0, lo0, hi0, s0);
            const V y1 = FakeQuantizeVecOdd<Round, kDivide, kMarkstein>(d, hn::LoadU(d, x + N), f0, r0, lo0, hi0, s0);
            const V y2 = FakeQuantizeVec<Round, kDivide>(d, hn::LoadU(d, x1), f1, lo1, hi1, s1);
            const V y3 = FakeQuantizeVecOdd<Round, kDivide, kMarkstein>(d, hn::LoadU(d, x1 + N), f1, r1, lo1, hi1, s1);
            StoreVec<kStream>(y0, d, q);
            StoreVec<kStream>(y1, d, q + N);
            StoreVec<kStream>(y2, d, q1);
            StoreVec<kStream>(y3, d, q1 + N);
          }
        } else if constexpr (kWide) {
          const V lo0 = hn::Set(d, rlo[k]);
          const V lo1 = hn::Set(d, rlo[k + 1]);
          const auto z0 = hn::Set(di, rz[k]);
          const auto z1 = hn::Set(di, rz[k + 1]);
          if constexpr (kVecs == 4) {
            QuantizeBlockWide<Round, kDivide, kBlockBypass, kStream>(d, x, f0, r0, lo0, hi0, z0, q);
            QuantizeBlockWide<Round, kDivide, kBlockBypass, kStream>(d, x1, f1, r1, lo1, hi1, z1, q1);
          } else {
            QuantizePairWide<Round, kDivide, kMarkstein, kStream>(d, x, f0, r0, lo0, hi0, z0, q);
            QuantizePairWide<Round, kDivide, kMarkstein, kStream>(d, x1, f1, r1, lo1, hi1, z1, q1);
          }
        } else {
          ByteBlockPacker<Out> pack0 = pack;
          ByteBlockPacker<Out> pack1 = pack;
          pack0.z16 = _mm512_set1_epi32(rz[k]);
          pack1.z16 = _mm512_set1_epi32(rz[k + 1]);
          if constexpr (kVecs == 4) {
            QuantizeBlockBytes<Round, kDivide, kBlockBypass, kStream>(d, x, f0, r0, hi0, pack0, q);
            QuantizeBlockBytes<Round, kDivide, kBlockBypass, kStream>(d, x1, f1, r1, hi1, pack1, q1);
          } else {
            const auto v0 = QuantizeOffsetVec<Round, kDivide, false>(d, hn::LoadU(d, x), f0, hi0, hi0);
            const auto v1 = QuantizeOffsetVecOdd<Round, kDivide, kMarkstein>(d, hn::LoadU(d, x + N), f0, r0, hi0, hi0);
            const auto v2 = QuantizeOffsetVec<Round, kDivide, false>(d, hn::LoadU(d, x1), f1, hi1, hi1);
            const auto v3 = QuantizeOffsetVecOdd<Round, kDivide, kMarkstein>(d, hn::LoadU(d, x1 + N), f1, r1, hi1, hi1);
            pack0.template StorePair<kStream>(v0.raw, v1.raw, q);
            pack1.template StorePair<kStream>(v2.raw, v3.raw, q1);
          }
        }
      }
    };
    if (n == 2 * N)
      row_pairs(std::integral_constant<std::size_t, 2>());
    else if (n == 4 * N)
      row_pairs(std::integral_constant<std::size_t, 4>());
    // Rows of 2 to 32 whole blocks: one flat loop over the blocks of every row left, the row's
    // constants broadcast per block from the tables and the step to the next row branch-free.
    // A loop per row mispredicts its exit once per row (~10 cycles, a block's time): int8 rows
    // of 256 values 17.3 -> 20.2 Gelem/s on Zen 5, per tensor 21.9. Longer rows keep the loop
    // per row (no broadcasts per block: rows of 4096 20.9 against 20.3 flat), and so do AVX2's
    // rows (QuantizeRowsAvx2: the flat loop was 3-5 % slower there).
    if (n % (4 * N) == 0 && n > 4 * N && n <= 32 * 4 * N) {
      std::size_t j = 0;  // the block's offset in its row
      const std::size_t blocks = (m - k) * (n / (4 * N));
      for (std::size_t b = 0; b < blocks; ++b) {
        const V f = hn::Set(d, rf[k]);
        const V r = kMarkstein ? hn::Set(d, rr[k]) : f;
        const V hi = hn::Set(d, rhi[k]);
        if constexpr (kFake) {
          FakeQuantizeBlock<Round, kDivide, kBlockBypass, kStream>(d, x + j, f, r, hn::Set(d, rlo[k]), hi,
                                                                   hn::Set(d, rs[k]), q + j);
        } else if constexpr (kWide) {
          QuantizeBlockWide<Round, kDivide, kBlockBypass, kStream>(d, x + j, f, r, hn::Set(d, rlo[k]), hi,
                                                                   hn::Set(di, rz[k]), q + j);
        } else {
          ByteBlockPacker<Out> row_pack = pack;
          row_pack.z16 = _mm512_set1_epi32(rz[k]);
          QuantizeBlockBytes<Round, kDivide, kBlockBypass, kStream>(d, x + j, f, r, hi, row_pack, q + j);
        }
        j += 4 * N;
        const std::size_t next = j == n;  // selects, not a branch
        j = next ? 0 : j;
        k += next;
        x += static_cast<std::ptrdiff_t>(next) * sx;
        q += static_cast<std::ptrdiff_t>(next) * sq;
      }
    }
    // What a row's whole blocks leave (0 < rem < 4 N, not one pair): lanes past the row loaded
    // as 0 into a buffer, one block (or pair, rem < 2 N) into another, rem values copied out
    // (CopyFirst: masked stores). Rows of 7 x 7 or 14 x 14 values took QuantizeLoop's vector
    // and scalar tail per row before (int8 per channel, 64 rows of 49: 13 % of per tensor).
    const auto buffered_tail = [&](const float* xp, Out* qp, std::size_t rem, const auto& block,
                                   const auto& pair) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
      HWY_ALIGN float xb[4 * kMaxLanes<float>];
      HWY_ALIGN Out qb[4 * kMaxLanes<float>];
      const std::size_t vecs = rem > 2 * N ? 4 : 2;
      LoadPadded(d, xp, rem, vecs, xb);
      if (vecs == 4)
        block(xb, qb, std::false_type());
      else
        pair(xb, qb, std::false_type());
      CopyFirst(qb, qp, rem);
    };
    for (; k < m; ++k, x += sx, q += sq) {
      const V f = hn::Set(d, rf[k]);
      const V r = kMarkstein ? hn::Set(d, rr[k]) : f;
      const V hi = hn::Set(d, rhi[k]);
      // block(xp, qp, stream) / pair(xp, qp, stream): 4 / 2 vectors of the row's
      const auto rest = [&](const auto& block, const auto& pair) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
        std::size_t i = 0;
        for (; i + 4 * N <= n; i += 4 * N) block(x + i, q + i, std::integral_constant<bool, kStream>());
        if (i + 2 * N == n) {
          pair(x + i, q + i, std::integral_constant<bool, kStream>());
        } else if (i < n) {
          buffered_tail(x + i, q + i, n - i, block, pair);
        }
      };
      if constexpr (kFake) {
        const V lo = hn::Set(d, rlo[k]);
        const V s = hn::Set(d, rs[k]);
        rest(
            [&](const float* xp, float* qp, auto stream) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
              FakeQuantizeBlock<Round, kDivide, kBlockBypass, decltype(stream)::value>(d, xp, f, r, lo, hi, s, qp);
            },
            [&](const float* xp, float* qp, auto stream) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
              const V y0 = FakeQuantizeVec<Round, kDivide>(d, hn::LoadU(d, xp), f, lo, hi, s);
              const V y1 = FakeQuantizeVecOdd<Round, kDivide, kMarkstein>(d, hn::LoadU(d, xp + N), f, r, lo, hi, s);
              StoreVec<decltype(stream)::value>(y0, d, qp);
              StoreVec<decltype(stream)::value>(y1, d, qp + N);
            });
      } else if constexpr (kWide) {
        const V lo = hn::Set(d, rlo[k]);
        const auto z = hn::Set(di, rz[k]);
        rest(
            [&](const float* xp, Out* qp, auto stream) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
              QuantizeBlockWide<Round, kDivide, kBlockBypass, decltype(stream)::value>(d, xp, f, r, lo, hi, z, qp);
            },
            [&](const float* xp, Out* qp, auto stream) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
              QuantizePairWide<Round, kDivide, kMarkstein, decltype(stream)::value>(d, xp, f, r, lo, hi, z, qp);
            });
      } else {
        ByteBlockPacker<Out> row_pack = pack;
        row_pack.z16 = _mm512_set1_epi32(rz[k]);
        rest(
            [&](const float* xp, Out* qp, auto stream) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
              QuantizeBlockBytes<Round, kDivide, kBlockBypass, decltype(stream)::value>(d, xp, f, r, hi, row_pack, qp);
            },
            [&](const float* xp, Out* qp, auto stream) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
              const auto v0 = QuantizeOffsetVec<Round, kDivide, false>(d, hn::LoadU(d, xp), f, hi, hi);
              const auto v1 = QuantizeOffsetVecOdd<Round, kDivide, kMarkstein>(d, hn::LoadU(d, xp + N), f, r, hi, hi);
              row_pack.template StorePair<decltype(stream)::value>(v0.raw, v1.raw, qp);
            });
      }
    }
  }
}
#endif

#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
// Whether every store QuantizeShortRows makes for these rows is aligned to its width, as
// non-temporal stores need: vectors, 16-bit pairs and byte blocks of 64 bytes at row offsets
// that are multiples of 64, byte pairs of 32 bytes (rows of two vectors) at multiples of 32.
template <class Out>
HWY_INLINE bool ShortRowsStreamable(const Out* q, std::ptrdiff_t sq, std::size_t n) {
  const std::size_t N = hn::Lanes(hn::ScalableTag<float>());
  const std::size_t align = (sizeof(Out) == 1 && n < 4 * N) ? 32 : 64;
  const std::size_t row_bytes = static_cast<std::size_t>(sq < 0 ? -sq : sq) * sizeof(Out);
  return reinterpret_cast<std::uintptr_t>(q) % align == 0 && row_bytes % align == 0;
}
#endif

// How far past a short row's first input element the row prefetches (PrefetchStreamInput) in a
// streaming call: `ahead` bytes when the rows are back to back (sx == n), else the row that many
// row lengths on (at least the next). Wraps for sx < 0; the address formed still does.
inline std::size_t RowPrefetchDistance(std::size_t ahead, std::ptrdiff_t sx, std::size_t n) {
  if (ahead == 0 || sx == static_cast<std::ptrdiff_t>(n)) return ahead;
  const std::size_t row_bytes = n * sizeof(float);
  return static_cast<std::size_t>(sx) * sizeof(float) * ((ahead + row_bytes - 1) / row_bytes);
}

#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
// Byte and 16-bit rows of at least one block of 4 vectors with their own parameters on AVX2
// (per-group blocks of 32, per-channel rows of small tensors), as QuantizeShortRows on AVX-512:
// the row constants (s, 1 / s, qmax - z, bytes: z as two int16; 16-bit: qmin - z, z) are
// computed for 64 rows at a time with vectors, so that each row only broadcasts them from memory
// (load-port broadcasts) instead of converting z, subtracting and broadcasting from registers on
// the shuffle unit the packs need; rows of one block go two per step. `ahead`: the input
// prefetch distance (bytes past each row; 0 = none).
template <class Out, class Round, bool kDivide, bool kCsr, bool kStream>
HWY_INLINE void QuantizeRowsAvx2(const QuantizeArgs& a, const float* x, std::ptrdiff_t sx, Out* q,
                                 std::ptrdiff_t sq, std::size_t count, std::size_t n,
                                 std::int64_t at, std::int64_t dat, std::size_t ahead) {
  static_assert(sizeof(Out) <= 2, "QuantizeRowsAvx2: byte and 16-bit outputs");
  constexpr bool kBytes = sizeof(Out) == 1;
  constexpr std::size_t kChunkRows = 64;
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  const std::size_t N = hn::Lanes(d);
  // Locals: byte stores may alias *a.
  const float* const factor = a.factor;
  const float* const zero = a.zero;
  const ByteBlockPacker<Out> pack(_mm256_setzero_si256(), a.qmin);
  const V vmax = hn::Set(d, a.qmax);
  const V vmin = hn::Set(d, a.qmin);  // (16-bit outputs)
  (void)vmin;
  const std::size_t row_bytes = n * sizeof(float);
  // (lanes past m: unused)
  HWY_ALIGN float rf[kChunkRows] = {}, rhi[kChunkRows] = {}, rlo[kChunkRows] = {}, rr[kChunkRows] = {};
  HWY_ALIGN std::int32_t rz[kChunkRows];
  for (std::size_t c0 = 0; c0 < count; c0 += kChunkRows) {
    const std::size_t m = count - c0 < kChunkRows ? count - c0 : kChunkRows;
    const std::int64_t at0 = at + static_cast<std::int64_t>(c0) * dat;
    if (dat == 1) {
      std::memcpy(rf, factor + at0, m * sizeof(float));
      std::memcpy(rhi, zero + at0, m * sizeof(float));
    } else {
      for (std::size_t k = 0; k < m; ++k) {
        const std::int64_t p = at0 + static_cast<std::int64_t>(k) * dat;
        rf[k] = factor[p];
        rhi[k] = zero[p];
      }
    }
    // Markstein's step (QuantizeBlockAvx2) for the chunk when every row's scale allows it.
    constexpr bool kMarkstein = kCsr && kDivide;
    bool markstein = kMarkstein;
    for (std::size_t k = 0; k < m; k += N) {
      const V z = hn::Load(d, rhi + k);
      hn::Store(hn::Sub(vmax, z), d, rhi + k);
      const auto zi = hn::ConvertTo(di, z);  // small integers
      if constexpr (kBytes) {
        hn::Store(hn::Or(hn::And(zi, hn::Set(di, 0xffff)), hn::ShiftLeft<16>(zi)), di, rz + k);
      } else {
        hn::Store(zi, di, rz + k);
        hn::Store(hn::Sub(vmin, z), d, rlo + k);
      }
      if constexpr (kMarkstein) {
        const V f = hn::Load(d, rf + k);
        hn::Store(hn::Div(hn::Set(d, 1.0f), f), d, rr + k);
        const auto inside = hn::And(hn::Ge(f, hn::Set(d, 0x1p-100f)), hn::Le(f, hn::Set(d, 0x1p100f)));
        markstein &= hn::AllTrue(d, hn::Or(inside, hn::Not(hn::FirstN(d, m - k))));
      }
    }
    const auto rows = [&](auto bypass) HWY_ATTR {
      constexpr int kBypass = decltype(bypass)::value;
      std::size_t k = 0;
      if (n == 4 * N) {  // two rows per step: their blocks independent, one loop test
        for (; k + 2 <= m; k += 2, x += 2 * sx, q += 2 * sq) {
          PrefetchStreamInput<true>(x, row_bytes, ahead);
          PrefetchStreamInput<true>(x + sx, row_bytes, ahead);
          QuantizeRowBlockAvx2<Round, kDivide, kCsr, kBypass, kStream>(
              d, x, hn::Set(d, rf[k]), hn::Set(d, rr[k]), hn::Set(d, rlo[k]), hn::Set(d, rhi[k]),
              _mm256_set1_epi32(rz[k]), pack, q);
          QuantizeRowBlockAvx2<Round, kDivide, kCsr, kBypass, kStream>(
              d, x + sx, hn::Set(d, rf[k + 1]), hn::Set(d, rr[k + 1]), hn::Set(d, rlo[k + 1]),
              hn::Set(d, rhi[k + 1]), _mm256_set1_epi32(rz[k + 1]), pack, q + sq);
        }
      }
      for (; k < m; ++k, x += sx, q += sq) {
        PrefetchStreamInput<true>(x, row_bytes, ahead);
        const V f = hn::Set(d, rf[k]);
        const V r = hn::Set(d, rr[k]);
        const V lo = hn::Set(d, rlo[k]);
        const V hi = hn::Set(d, rhi[k]);
        const __m256i z = _mm256_set1_epi32(rz[k]);
        std::size_t i = 0;
        for (; i + 4 * N <= n; i += 4 * N)
          QuantizeRowBlockAvx2<Round, kDivide, kCsr, kBypass, kStream>(d, x + i, f, r, lo, hi, z, pack, q + i);
        if (i < n) {
          // the rest as one block through buffers, as QuantizeShortRows' buffered tail (AVX2's
          // MaskedLoad of floats reads no memory past the mask)
          const std::size_t rem = n - i;
          HWY_ALIGN float xb[4 * kMaxLanes<float>];
          HWY_ALIGN Out qb[4 * kMaxLanes<float>];
          LoadPadded(d, x + i, rem, 4, xb);
          QuantizeRowBlockAvx2<Round, kDivide, kCsr, kBypass, false>(d, xb, f, r, lo, hi, z, pack, qb);
          CopyFirst(qb, q + i, rem);
        }
      }
    };
    if (kMarkstein && markstein && a.divider_bypass == 3)
      rows(std::integral_constant<int, kMarkstein ? 3 : 0>());
    else if (kMarkstein && markstein)
      rows(std::integral_constant<int, kMarkstein ? 2 : 0>());
    else
      rows(std::integral_constant<int, 0>());
  }
}

// Back-to-back rows (in and out) of 2 to kFlatRowsBelowAvx2 - 1 values with their own
// parameters on AVX2 (per-channel rows of small tensors: 3 x 3 or 7 x 7 kernels; per-group
// blocks not of whole vectors), but whole blocks (4 N, 8 N: QuantizeRowsAvx2's rows): one
// stream of blocks of 4 vectors over a chunk's rows, each vector's parameters permuted
// (vpermps) from a window of 8 rows that starts at its first lane's row (a vector of 8 values
// meets at most 8 rows; from rows of 4 values on, a block's four vectors share its first row's
// window), indexed by per-call tables of one cycle of the stream (n blocks, 32 rows). Integer
// outputs clamp in float to the constant [qmin - qmax, qmax - qmin] (which holds
// [qmin - z, qmax - z] for every z in range), add the permuted z as int32, and the packs'
// saturation and an integer min / max clamp to [qmin, qmax]; fake-quantize permutes
// qmin - z, qmax - z and s too. Before, rows below 4 N took the constant-parameter loop per
// row and rows of 4 N to 10 N a buffered block for their rest.
// Past 10 N the rows' own blocks and buffered rest were as fast or faster (int8, 1024 rows,
// static AVX2 on the AMD EPYC host: rows of 65 2.2-3.4 -> 4.1 Gelem/s flat, of 72 2.4 -> 2.9, of
// 79 and 80 even, of 100 4.5 against 4.1, of 111 4.8-5.0 against 4.1).
constexpr std::size_t kFlatRowsBelowAvx2 = 80;

// Row k's parameters at at + k (the plan's back-to-back per-channel rows and per-group blocks).
template <class Out, class Round, bool kDivide, bool kCsr>
HWY_INLINE void QuantizeFlatRowsAvx2(const QuantizeArgs& a, const float* x, Out* q, std::size_t count,
                                     std::size_t n, std::int64_t at) {
  constexpr bool kFake = std::is_same<Out, float>::value;
  constexpr bool kBytes = sizeof(Out) == 1;
  // Markstein's step where the blocks take it: half-even by MXCSR (integers), fake-quantize.
  constexpr bool kMarksteinMode = kDivide && kMarksteinRounding<Round> && (kFake || kCsr);
  constexpr std::size_t N = 8;
  constexpr std::size_t kChunkRows = 64;
  // (+ 2 N: windows start at most 32 + 31 rows into the chunk; the entries past m are neutral)
  constexpr std::size_t kTable = kChunkRows + 2 * N;
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  using VI = hn::Vec<decltype(di)>;
  const float qmin = a.qmin, qmax = a.qmax;  // locals: byte stores may alias *a
  const float* const factor = a.factor;
  const float* const zero = a.zero;
  const float* const scale = a.scale;
  // The stream repeats every n blocks (4 n vectors, 32 rows): block c of a cycle is values
  // [32 c, 32 c + 32) past the cycle's first row, and vector v = 4 c + j's lane l is in row
  // floor((N v + l) / n), as (N v + l + 0.5) * (1 / n) truncated: exact, as the quotients are at
  // least 0.5 / n from an integer and the products' errors far smaller. Rows of 4 values or
  // more: a block meets at most 8 rows, and its vectors permute from one window at its first
  // row (win[4 c]); rows of 2 and 3: each vector from a window at its own first row (win[v]).
  // rel[v N + l]: lane l's row past its window's. Made for the cycle's blocks the call runs.
  const bool block_window = n >= 4;
  HWY_ALIGN std::int32_t rel[4 * kFlatRowsBelowAvx2 * N];
  std::int32_t win[4 * kFlatRowsBelowAvx2];
  {
    const std::size_t rows = count < kChunkRows ? count : kChunkRows;
    const std::size_t blocks = (rows * n + 4 * N - 1) / (4 * N);
    const std::size_t vectors = 4 * (blocks < n ? blocks : n);
    const __m256 inv = _mm256_set1_ps(1.0f / static_cast<float>(n));
    __m256 e = _mm256_setr_ps(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f);
    int first = 0;  // the block's first row
    for (std::size_t v = 0; v < vectors; ++v) {
      const __m256i r = _mm256_cvttps_epi32(_mm256_mul_ps(e, inv));
      const int own = _mm_cvtsi128_si32(_mm256_castsi256_si128(r));
      if (v % 4 == 0) first = own;
      const int w = block_window ? first : own;
      win[v] = w;
      _mm256_store_si256(reinterpret_cast<__m256i*>(rel + v * N), _mm256_sub_epi32(r, _mm256_set1_epi32(w)));
      e = _mm256_add_ps(e, _mm256_set1_ps(static_cast<float>(N)));
    }
  }
  HWY_ALIGN float rf[kTable], rr[kTable], rlo[kTable], rhi[kTable], rs[kTable];
  HWY_ALIGN std::int32_t rz[kTable];
  const V lo_c = hn::Set(d, qmin - qmax), hi_c = hn::Set(d, qmax - qmin);
  for (std::size_t c0 = 0; c0 < count; c0 += kChunkRows) {
    const std::size_t m = count - c0 < kChunkRows ? count - c0 : kChunkRows;
    const std::int64_t at0 = at + static_cast<std::int64_t>(c0);
    // The chunk's parameters; rows past m: factor 1, zero 0, scale 1 (their lanes are discarded).
    bool markstein = kMarksteinMode;
    for (std::size_t k = 0; k < kTable; k += N) {
      const auto in = hn::FirstN(d, m > k ? m - k : 0);
      const V f = hn::IfThenElse(in, hn::MaskedLoad(in, d, factor + at0 + k), hn::Set(d, 1.0f));
      const V z = hn::MaskedLoad(in, d, zero + at0 + k);
      const V s = kFake ? hn::IfThenElse(in, hn::MaskedLoad(in, d, scale + at0 + k), hn::Set(d, 1.0f)) : f;
      hn::Store(f, d, rf + k);
      hn::Store(hn::ConvertTo(di, z), di, rz + k);  // small integers
      if constexpr (kFake) {
        hn::Store(s, d, rs + k);
        hn::Store(hn::Sub(hn::Set(d, qmin), z), d, rlo + k);
        hn::Store(hn::Sub(hn::Set(d, qmax), z), d, rhi + k);
      }
      if constexpr (kMarksteinMode) {
        hn::Store(hn::Div(hn::Set(d, 1.0f), f), d, rr + k);
        markstein &= hn::AllTrue(d, hn::And(hn::Ge(f, hn::Set(d, 0x1p-100f)), hn::Le(f, hn::Set(d, 0x1p100f))));
      }
    }
    const std::size_t total = m * n;
    const auto stream = [&](auto bypass, auto window) HWY_ATTR {
      constexpr int kBypass = decltype(bypass)::value;  // of a block's 4 vectors: 0, 2 or 3
      constexpr bool kM1 = kBypass >= 2, kM2 = kBypass >= 3;
      constexpr bool kBlockWindow = decltype(window)::value;
      std::size_t c = 0;  // the block in its cycle
      std::size_t o = 0;  // the cycle's first row in the chunk
      // Vector j of the block: its window's first row in the chunk and its lanes' rows past it
      const auto row = [&](std::size_t j) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
        return o + static_cast<std::size_t>(win[kBlockWindow ? 4 * c : 4 * c + j]);
      };
      const auto idx = [&](std::size_t j) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
        return _mm256_load_si256(reinterpret_cast<const __m256i*>(rel + (4 * c + j) * N));
      };
      const auto pick = [&](const float* t, std::size_t j) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
        return V{_mm256_permutevar8x32_ps(_mm256_loadu_ps(t + row(j)), idx(j))};
      };
      const auto pick_z = [&](std::size_t j) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
        return VI{_mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rz + row(j))), idx(j))};
      };
      const auto block = [&](const float* xp, Out* qp) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
        const V x0 = hn::LoadU(d, xp), x1 = hn::LoadU(d, xp + N), x2 = hn::LoadU(d, xp + 2 * N),
                x3 = hn::LoadU(d, xp + 3 * N);
        const V f0 = pick(rf, 0), f1 = pick(rf, 1), f2 = pick(rf, 2), f3 = pick(rf, 3);
        const V r1 = kM1 ? pick(rr, 1) : f1, r3 = kM1 ? pick(rr, 3) : f3, r2 = kM2 ? pick(rr, 2) : f2;
        if constexpr (kFake) {
          const V lo0 = pick(rlo, 0), lo1 = pick(rlo, 1), lo2 = pick(rlo, 2), lo3 = pick(rlo, 3);
          const V hi0 = pick(rhi, 0), hi1 = pick(rhi, 1), hi2 = pick(rhi, 2), hi3 = pick(rhi, 3);
          const V s0 = pick(rs, 0), s1 = pick(rs, 1), s2 = pick(rs, 2), s3 = pick(rs, 3);
          if (HWY_LIKELY(!AnyNaN4(x0, x1, x2, x3))) {
            hn::StoreU(FakeQuantizeOrderedAvx2<Round, kDivide, false>(d, x0, f0, f0, lo0, hi0, s0), d, qp);
            hn::StoreU(FakeQuantizeOrderedAvx2<Round, kDivide, kM1>(d, x1, f1, r1, lo1, hi1, s1), d, qp + N);
            hn::StoreU(FakeQuantizeOrderedAvx2<Round, kDivide, kM2>(d, x2, f2, r2, lo2, hi2, s2), d, qp + 2 * N);
            hn::StoreU(FakeQuantizeOrderedAvx2<Round, kDivide, kM1>(d, x3, f3, r3, lo3, hi3, s3), d, qp + 3 * N);
          } else {
            hn::StoreU(FakeQuantizeVec<Round, kDivide>(d, x0, f0, lo0, hi0, s0), d, qp);
            hn::StoreU(FakeQuantizeVec<Round, kDivide>(d, x1, f1, lo1, hi1, s1), d, qp + N);
            hn::StoreU(FakeQuantizeVec<Round, kDivide>(d, x2, f2, lo2, hi2, s2), d, qp + 2 * N);
            hn::StoreU(FakeQuantizeVec<Round, kDivide>(d, x3, f3, lo3, hi3, s3), d, qp + 3 * N);
          }
        } else {
          VI v0, v1, v2, v3;
          if (kCsr && HWY_LIKELY(!AnyNaN4(x0, x1, x2, x3))) {
            v0 = QuantizeOrderedCsrAvx2<kDivide, false, true>(x0, f0, f0, lo_c, hi_c);
            v1 = QuantizeOrderedCsrAvx2<kDivide, kM1, true>(x1, f1, r1, lo_c, hi_c);
            v2 = QuantizeOrderedCsrAvx2<kDivide, kM2, true>(x2, f2, r2, lo_c, hi_c);
            v3 = QuantizeOrderedCsrAvx2<kDivide, kM1, true>(x3, f3, r3, lo_c, hi_c);
          } else {  // NaN lanes: 0, then z
            v0 = QuantizeOffsetVecAvx2<Round, kDivide, kCsr, true>(d, x0, f0, lo_c, hi_c);
            v1 = QuantizeOffsetVecAvx2<Round, kDivide, kCsr, true>(d, x1, f1, lo_c, hi_c);
            v2 = QuantizeOffsetVecAvx2<Round, kDivide, kCsr, true>(d, x2, f2, lo_c, hi_c);
            v3 = QuantizeOffsetVecAvx2<Round, kDivide, kCsr, true>(d, x3, f3, lo_c, hi_c);
          }
          // |q - z| <= qmax - qmin and z in range: the sums fit int32 (and int16 for bytes)
          v0 = hn::Add(v0, pick_z(0));
          v1 = hn::Add(v1, pick_z(1));
          v2 = hn::Add(v2, pick_z(2));
          v3 = hn::Add(v3, pick_z(3));
          if constexpr (kBytes) {
            constexpr bool kSigned = std::is_signed<Out>::value;
            const __m256i ab = _mm256_packs_epi32(v0.raw, v1.raw), cd = _mm256_packs_epi32(v2.raw, v3.raw);
            const __m256i lo8 = _mm256_set1_epi8(static_cast<char>(static_cast<Out>(qmin)));
            const __m256i hi8 = _mm256_set1_epi8(static_cast<char>(static_cast<Out>(qmax)));
            const __m256i r8 = kSigned ? _mm256_min_epi8(_mm256_max_epi8(_mm256_packs_epi16(ab, cd), lo8), hi8)
                                       : _mm256_min_epu8(_mm256_max_epu8(_mm256_packus_epi16(ab, cd), lo8), hi8);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(qp),
                                _mm256_permutevar8x32_epi32(r8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
          } else {
            const hn::Repartition<Out, decltype(di)> d16;
            const auto q16lo = hn::Set(d16, static_cast<Out>(qmin)), q16hi = hn::Set(d16, static_cast<Out>(qmax));
            hn::StoreU(hn::Min(hn::Max(PackPair16(d16, v0, v1, NoZeroPoint()), q16lo), q16hi), d16, qp);
            hn::StoreU(hn::Min(hn::Max(PackPair16(d16, v2, v3, NoZeroPoint()), q16lo), q16hi), d16, qp + 2 * N);
          }
        }
        // The next block; past the cycle's last, the next cycle's first (selects, not branches)
        ++c;
        const bool next = c == n;
        c = next ? 0 : c;
        o = next ? o + 4 * N : o;
      };
      std::size_t i = 0;
      for (; i + 4 * N <= total; i += 4 * N) block(x + i, q + i);
      if (i < total) {  // the stream's rest: lanes past it load as 0 (rows past m: neutral entries)
        HWY_ALIGN float xb[4 * N];
        HWY_ALIGN Out qb[4 * N];
        const std::size_t rem = total - i;
        LoadPadded(d, x + i, rem, 4, xb);
        block(xb, qb);
        CopyFirst(qb, q + i, rem);
      }
    };
    const auto with_window = [&](auto bypass) HWY_ATTR {
      if (block_window)
        stream(bypass, std::true_type());
      else
        stream(bypass, std::false_type());
    };
    if (kMarksteinMode && markstein && a.divider_bypass == 3)
      with_window(std::integral_constant<int, kMarksteinMode ? 3 : 0>());
    else if (kMarksteinMode && markstein)
      with_window(std::integral_constant<int, kMarksteinMode ? 2 : 0>());
    else
      with_window(std::integral_constant<int, 0>());
    x += total;
    q += total;
  }
}
#endif

// Whether n values at a and n at b share no byte.
template <class A, class B>
HWY_INLINE bool Disjoint(const A* a, std::size_t n, const B* b) {
  const auto a0 = reinterpret_cast<std::uintptr_t>(a), b0 = reinterpret_cast<std::uintptr_t>(b);
  return a0 + n * sizeof(A) <= b0 || b0 + n * sizeof(B) <= a0;
}

// Whether fake-quantize's rows of n values take FakeQuantizeRowsOverlapped: rows of whole
// vectors and a partial one. On AVX2 only where the vectors waste at most a quarter of their
// lanes or the rows are too long for the flat stream (QuantizeFlatRowsAvx2), which was faster
// for the others (rows of 9 38 % of per tensor against 27 %, 17 42 % against 33 %; 12 even).
// On AVX-512 only rows past a block whose partial vector is at least a quarter full:
// QuantizeShortRows was faster for rows of 20 (46 % against 32 %), 49 (51 / 47 %) and 65 (54 /
// 52 %), slower for 72 (53 / 67 %), 90 (59 / 75 %), 100 (55 / 69 %), 196 (80 / 84 %).
HWY_INLINE bool FakeQuantizeOverlapRows(std::size_t n) {
  const std::size_t N = hn::Lanes(hn::ScalableTag<float>());
  if (n < N || n % N == 0) return false;
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  return n >= kFlatRowsBelowAvx2 || 4 * n >= 3 * (n + N - n % N);
#elif HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  return n > 4 * N && 4 * (n % N) >= N;
#else
  return true;
#endif
}

// Fake-quantize rows of their own parameters, ordinary stores: each row's blocks
// (QuantizeBlocks4), then single vectors, the last ending at the row's end over the one before
// (rewriting up to N - 1 values with the same results) instead of a partial vector through
// QuantizeLoop's buffers. Only rows whose input and output share no byte (an in-place call
// would reread rewritten values). Advances x, q and at past the rows done and returns their
// count. AVX2 (Zen 4), 1024 rows, per channel of per tensor: rows of 49 47 -> 64 %, 100 40 ->
// 83 %, 196 52 -> 86 %, 300 61 -> 87 %, 20 42 -> 50 %, 36 43 -> 65 % (tools/bench/short_rows_ab.cpp;
// without the blocks, single vectors only: 60, 72, 75 %).
template <class Round, bool kDivide>
HWY_INLINE std::size_t FakeQuantizeRowsOverlapped(const QuantizeArgs& a, const float*& x, std::ptrdiff_t sx, float*& q,
                                                  std::ptrdiff_t sq, std::size_t count, std::size_t n, std::int64_t& at,
                                                  std::int64_t dat) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const std::size_t N = hn::Lanes(d);
  const V lo = hn::Set(d, a.qmin);
  const V hi = hn::Set(d, a.qmax);
  const V no_uniform = hn::Zero(d);
  std::size_t k = 0;
  for (; k < count && Disjoint(x, n, q); ++k, x += sx, q += sq, at += dat) {
    const float fk = a.factor[at], zk = a.zero[at], sk = a.scale[at];
    std::size_t i = n >= 4 * N ? QuantizeBlocks4<float, Round, kDivide, false>(a, x, q, n, fk, zk, sk) : 0;
    const V f = hn::Set(d, fk);
    const V z = hn::Set(d, zk);
    const V s = hn::Set(d, sk);
    for (; i + N < n; i += N)
      StoreQuantized<float>(d, QuantizeVec<Round, kDivide>(d, hn::LoadU(d, x + i), f, z, lo, hi, no_uniform), z, s, q + i);
    StoreQuantized<float>(d, QuantizeVec<Round, kDivide>(d, hn::LoadU(d, x + n - N), f, z, lo, hi, no_uniform), z, s,
                          q + n - N);
  }
  return k;
}

// Short rows with constant parameters (per-channel rows of small tensors): one call for all,
// the row body inlined, so that the core overlaps the rows' dependency chains.
template <class Out, class Round, bool kDivide>
void QuantizeRows(const void* args, const float* x, std::ptrdiff_t sx, Out* q, std::ptrdiff_t sq,
                  std::size_t count, std::size_t n, std::int64_t at, std::int64_t dat) {
  const QuantizeArgs& a = *static_cast<const QuantizeArgs*>(args);
  if constexpr (kBlocked<Out> && !Round::kStochastic) {
    const bool stream = a.stream && n * sizeof(Out) >= kStreamRowMinBytes;
    if constexpr (std::is_same<Out, float>::value) {
      if (!a.stream && FakeQuantizeOverlapRows(n)) {  // (streaming calls: below, prefetching)
        const std::size_t k = FakeQuantizeRowsOverlapped<Round, kDivide>(a, x, sx, q, sq, count, n, at, dat);
        if (k == count) return;  // else from the first row whose input and output overlap
        count -= k;
      }
    }
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
    // (rows shorter than two vectors too: QuantizeShortRows' buffered tail takes them)
    if (kShortRowBlocks<Out> && !stream && n > 0) {
      const auto short_rows = [&](auto stream) HWY_ATTR {
        constexpr bool kStream = decltype(stream)::value;
        if constexpr (kDivide && kMarksteinRounding<Round>) {
          if (a.divider_bypass == 3)
            return QuantizeShortRows<Out, Round, kDivide, 3, kStream>(a, x, sx, q, sq, count, n, at, dat);
        }
        QuantizeShortRows<Out, Round, kDivide, 2, kStream>(a, x, sx, q, sq, count, n, at, dat);
      };
      // Streaming calls of short rows (per-group blocks of a large tensor) stream here when
      // every store is aligned (the call's fence is in QuantizeByRounding).
      if (a.stream && ShortRowsStreamable(q, sq, n))
        short_rows(std::true_type());
      else
        short_rows(std::false_type());
      return;
    }
#endif
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
    // Back-to-back rows shorter than 10 N but not whole blocks (non-streaming calls), row k's
    // parameters at at + k (as the plan makes every contiguous run of such rows): one flat
    // stream; not fake-quantize's rows of whole vectors (the constant runs below were faster:
    // rows of 16 53 % of per tensor against 39 %, rows of 48 76 % against 43 %), and rows of a
    // block or more only from 64 rows on (the tables' cost: 16 rows of 72 2.2 Gelem/s per row
    // against 1.7 flat, 64 rows even, 1024 rows 2.4 against 2.9).
    constexpr std::size_t kN = hn::MaxLanes(hn::ScalableTag<float>());
    const bool whole_vectors = std::is_same<Out, float>::value && n % kN == 0;
    if (!a.stream && sx == static_cast<std::ptrdiff_t>(n) && sq == static_cast<std::ptrdiff_t>(n) && dat == 1 && n >= 2 &&
        n < kFlatRowsBelowAvx2 && n % (4 * kN) != 0 && !whole_vectors && (n < 4 * kN || count >= 64)) {
      constexpr bool kHalfEven = std::is_same<Round, RoundHalfEvenOp>::value && !std::is_same<Out, float>::value;
      if (kHalfEven && a.round_by_csr)
        QuantizeFlatRowsAvx2<Out, Round, kDivide, kHalfEven>(a, x, q, count, n, at);
      else
        QuantizeFlatRowsAvx2<Out, Round, kDivide, false>(a, x, q, count, n, at);
      return;
    }
    if constexpr (sizeof(Out) <= 2) {
      if (!stream && n >= 4 * hn::Lanes(hn::ScalableTag<float>())) {
        // Streaming calls prefetch each row's input, and store non-temporally when every
        // 32-byte store is aligned (the call's fence is in QuantizeByRounding).
        const std::size_t ahead = a.stream ? RowPrefetchDistance(a.stream_prefetch, sx, n) : 0;
        const bool nt = a.stream && reinterpret_cast<std::uintptr_t>(q) % 32 == 0 &&
                        (static_cast<std::size_t>(sq < 0 ? -sq : sq) * sizeof(Out)) % 32 == 0;
        const auto rows_avx2 = [&](auto csr, auto nt_stores) HWY_ATTR {
          QuantizeRowsAvx2<Out, Round, kDivide, decltype(csr)::value, decltype(nt_stores)::value>(
              a, x, sx, q, sq, count, n, at, dat, ahead);
        };
        const auto with_csr = [&](auto csr) HWY_ATTR {
          if (nt)
            rows_avx2(csr, std::true_type());
          else
            rows_avx2(csr, std::false_type());
        };
        if (std::is_same<Round, RoundHalfEvenOp>::value && a.round_by_csr)
          with_csr(std::integral_constant<bool, std::is_same<Round, RoundHalfEvenOp>::value>());
        else
          with_csr(std::false_type());
        return;
      }
    }
#endif
    if (!stream) {  // the lean loop: no stream or stochastic branches per row
      if (a.stream) {
        // Short rows of a streaming call (per-group blocks of a large tensor): the input comes
        // from memory as in the long rows, so each row prefetches ahead (RowPrefetchDistance;
        // none when stream_prefetch is 0); non-temporal stores when every vector store is aligned.
        const std::size_t row_bytes = n * sizeof(float);
        const std::size_t ahead = RowPrefetchDistance(a.stream_prefetch, sx, n);
        const std::size_t align = hn::Lanes(hn::ScalableTag<float>()) * sizeof(float);  // a vector
        const std::size_t out_row = static_cast<std::size_t>(sq < 0 ? -sq : sq) * sizeof(Out);
        if (reinterpret_cast<std::uintptr_t>(q) % align == 0 && out_row % align == 0) {
          for (std::size_t k = 0; k < count; ++k, x += sx, q += sq, at += dat) {
            PrefetchStreamInput<true>(x, row_bytes, ahead);
            const float* pf = a.factor + at;
            const float* pz = a.zero + at;
            const float* ps = std::is_same<Out, float>::value ? a.scale + at : nullptr;
            const std::size_t i = QuantizeBlocks4<Out, Round, kDivide, true>(a, x, q, n, pf[0], pz[0], ps ? ps[0] : 1.0f);
            if (i < n) QuantizeLoop<Out, Round, kDivide, false>(a, x + i, q + i, n - i, pf, pz, ps, nullptr);
          }
          return;
        }
        for (std::size_t k = 0; k < count; ++k, x += sx, q += sq, at += dat) {
          PrefetchStreamInput<true>(x, row_bytes, ahead);
          QuantizeConstantRun<Out, Round, kDivide>(a, x, q, n, a.factor + at, a.zero + at,
                                                   std::is_same<Out, float>::value ? a.scale + at : nullptr);
        }
        return;
      }
      for (std::size_t k = 0; k < count; ++k, x += sx, q += sq, at += dat)
        QuantizeConstantRun<Out, Round, kDivide>(a, x, q, n, a.factor + at, a.zero + at,
                                                 std::is_same<Out, float>::value ? a.scale + at : nullptr);
      return;
    }
  }
  for (std::size_t k = 0; k < count; ++k, x += sx, q += sq, at += dat)
    QuantizeRunBody<Out, Round, kDivide, false>(args, x, q, n, at);
}

// ------------------------------ Channels on the innermost axis
// Per-channel quantize, fake-quantize and dequantize with the channels along the row (MatMul
// weights [K, N] quantized on axis 1, [batch, channels] activations, NHWC maps): every vector
// meets as many channels as lanes. The per-element run took them row by row through the plan
// walk, one vector at a time, a row's partial vector through buffers filled by scalar loops:
// with 10 channels 3 % of per tensor's speed on AVX-512 (Zen 4), with 256 channels 55 %. Here
// each row runs in blocks of 4 vectors whose lanes' parameters load next to the input (integer
// outputs: one packed store per block), the last block ending at the row's end over the one
// before (else through buffers); back-to-back rows of up to kLaneTableMax - 4 N channels run as
// one stream over a table of their parameters.
// Same formulas as the per-element run (QuantizeVec, DequantizeVec).
#if HWY_TARGET != HWY_SCALAR  // (one lane: the per-element run serves as well)
constexpr std::size_t kLaneTableMax = 1024;

// The parameters of a row's lanes: up to three arrays, lane j's at [j] (a2: null when unused).
template <class T0, class T1, class T2>
struct LaneArrays {
  const T0* a0;
  const T1* a1;
  const T2* a2;
  HWY_INLINE LaneArrays At(std::size_t o) const { return {a0 + o, a1 + o, a2 == nullptr ? nullptr : a2 + o}; }
};

// 4 N values of 32 bits at b: the first rem from p, the others `pad` (vector stores and a copy:
// an entry-by-entry loop is not vectorized at -O2).
template <class T>
HWY_INLINE void PadLanes(T* HWY_RESTRICT b, const T* HWY_RESTRICT p, std::size_t rem, T pad) {
  const hn::ScalableTag<T> dt;
  const std::size_t N = hn::Lanes(dt);
  for (std::size_t v = 0; v < 4; ++v) hn::Store(hn::Set(dt, pad), dt, b + v * N);
  std::memcpy(b, p, rem * sizeof(T));
}

// The first rem (< 4 N) values of a run as one block(x, q, lanes) through buffers: the input
// zero-padded, the lanes' parameters padded with pad (finite, harmless values), rem outputs copied.
template <class In, class Out, class T0, class T1, class T2, class Block>
HWY_INLINE void LaneBlockPart(const In* HWY_RESTRICT x, Out* HWY_RESTRICT q, std::size_t rem,
                              const LaneArrays<T0, T1, T2>& p, const LaneArrays<T0, T1, T2>& pad, const Block& block) {
  constexpr std::size_t kBlock = 4 * kMaxLanes<float>;
  HWY_ALIGN In xb[kBlock] = {};
  HWY_ALIGN Out qb[kBlock];
  HWY_ALIGN T0 b0[kBlock];
  HWY_ALIGN T1 b1[kBlock];
  HWY_ALIGN T2 b2[kBlock];
  std::memcpy(xb, x, rem * sizeof(In));
  PadLanes(b0, p.a0, rem, pad.a0[0]);
  PadLanes(b1, p.a1, rem, pad.a1[0]);
  if (p.a2 != nullptr) PadLanes(b2, p.a2, rem, pad.a2[0]);
  block(xb, qb, LaneArrays<T0, T1, T2>{b0, b1, p.a2 == nullptr ? nullptr : b2});
  CopyFirst(qb, q, rem);
}

// count rows of n values (row k at x + k * sx, to q + k * sq), lane j of every row with the
// parameters p.a*[j], through block(x, q, lanes) (4 vectors). Back-to-back rows of up to
// kLaneTableMax - 4 N values: one stream over a table of the row's parameters followed by its
// first 4 N again, each block's lanes from offset o = (its position mod n) (rows of 100 channels
// one by one, a buffered rest each: 20 % of per tensor on AVX-512; a table of lcm(n, 4 N) values
// served fewer counts and cost more to fill).
template <class In, class Out, class T0, class T1, class T2, class Block>
HWY_INLINE void LaneRows(const In* x, std::ptrdiff_t sx, Out* q, std::ptrdiff_t sq, std::size_t count,
                         std::size_t n, const LaneArrays<T0, T1, T2>& p, const LaneArrays<T0, T1, T2>& pad,
                         const Block& block) {
  const std::size_t B = 4 * hn::Lanes(hn::ScalableTag<float>());
  const auto un = static_cast<std::ptrdiff_t>(n);
  if (count > 1 && sx == un && sq == un && n + B <= kLaneTableMax) {
    HWY_ALIGN T0 t0[kLaneTableMax];
    HWY_ALIGN T1 t1[kLaneTableMax];
    HWY_ALIGN T2 t2[kLaneTableMax];
    // the row's parameters, then repeated: entry k is the row's k mod n
    std::memcpy(t0, p.a0, n * sizeof(T0));
    std::memcpy(t1, p.a1, n * sizeof(T1));
    RepeatFirst(t0, n, n + B);
    RepeatFirst(t1, n, n + B);
    if (p.a2 != nullptr) {
      std::memcpy(t2, p.a2, n * sizeof(T2));
      RepeatFirst(t2, n, n + B);
    }
    const LaneArrays<T0, T1, T2> t{t0, t1, p.a2 == nullptr ? nullptr : t2};
    const std::size_t total = count * n, step = B % n;
    std::size_t j = 0, o = 0;
    for (; j + B <= total; j += B) {
      block(x + j, q + j, t.At(o));
      o += step;
      if (o >= n) o -= n;
    }
    if (j < total) {
      // the last block ending at the end, over the one before (the same values again) where
      // input and output share no byte; else through buffers
      if (total >= B && Disjoint(x, total, q))
        block(x + total - B, q + total - B, t.At((total - B) % n));
      else
        LaneBlockPart(x + j, q + j, total - j, t.At(o), pad, block);
    }
    return;
  }
  // Row by row; a row's rest as the stream's (rows of 1000 channels 53 -> 69 % of per tensor
  // with the last block over the one before)
  for (std::size_t k = 0; k < count; ++k, x += sx, q += sq) {
    std::size_t j = 0;
    for (; j + B <= n; j += B) block(x + j, q + j, p.At(j));
    if (j < n) {
      if (n >= B && Disjoint(x, n, q))
        block(x + n - B, q + n - B, p.At(n - B));
      else
        LaneBlockPart(x + j, q + j, n - j, p.At(j), pad, block);
    }
  }
}

// Runs::element_rows of quantize and fake-quantize (deterministic rounding; bytes, 16-bit
// integers, floats): rows sharing their parameters (dat == 0) through LaneRows; others, as
// before, row by row through the per-element run. A streaming call's rows store as usual.
template <class Out, class Round, bool kDivide>
void QuantizeElementRows(const void* args, const float* x, std::ptrdiff_t sx, Out* q, std::ptrdiff_t sq,
                         std::size_t count, std::size_t n, std::int64_t at, std::int64_t dat) {
  const QuantizeArgs& a = *static_cast<const QuantizeArgs*>(args);
  if (dat != 0) {
    for (std::size_t k = 0; k < count; ++k, x += sx, q += sq, at += dat)
      QuantizeRunBody<Out, Round, kDivide, true>(args, x, q, n, at);
    return;
  }
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  const std::size_t N = hn::Lanes(d);
  const V lo = hn::Set(d, a.qmin);
  const V hi = hn::Set(d, a.qmax);
  const V none = hn::Zero(d);  // (no uniforms: deterministic rounding)
  constexpr bool kFake = std::is_same<Out, float>::value;
  static constexpr float kOne = 1.0f, kZero = 0.0f;
  const LaneArrays<float, float, float> p{a.factor + at, a.zero + at, kFake ? a.scale + at : nullptr};
  const LaneArrays<float, float, float> pad{&kOne, &kZero, &kOne};
  const auto vec = [&](const float* HWY_RESTRICT xv, const LaneArrays<float, float, float>& l, std::size_t v)
                       HWY_ATTR QUANTKIT_LAMBDA_INLINE {
    return QuantizeVec<Round, kDivide>(d, hn::LoadU(d, xv + v * N), hn::LoadU(d, l.a0 + v * N),
                                       hn::LoadU(d, l.a1 + v * N), lo, hi, none);
  };
  if constexpr (kFake) {
    LaneRows(x, sx, q, sq, count, n, p, pad,
             [&](const float* HWY_RESTRICT xv, float* HWY_RESTRICT qv, const LaneArrays<float, float, float>& l)
                 HWY_ATTR QUANTKIT_LAMBDA_INLINE {
               for (std::size_t v = 0; v < 4; ++v)
                 StoreQuantized<float>(d, vec(xv, l, v), hn::LoadU(d, l.a1 + v * N), hn::LoadU(d, l.a2 + v * N),
                                       qv + v * N);
             });
  } else {
    LaneRows(x, sx, q, sq, count, n, p, pad,
             [&](const float* HWY_RESTRICT xv, Out* HWY_RESTRICT qv, const LaneArrays<float, float, float>& l)
                 HWY_ATTR QUANTKIT_LAMBDA_INLINE {
               StoreQuantized4<Out, false>(di, ConvertInRange(di, vec(xv, l, 0)), ConvertInRange(di, vec(xv, l, 1)),
                                           ConvertInRange(di, vec(xv, l, 2)), ConvertInRange(di, vec(xv, l, 3)),
                                           NoZeroPoint(), qv);
             });
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

// Runs::element_rows for a quantize instantiation, or null (the per-element run row by row).
template <class Out, class Round, bool kDivide>
constexpr RowsFn<float, Out> QuantizeElementRowsOf() {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (!Round::kStochastic && kBlocked<Out>) return &QuantizeElementRows<Out, Round, kDivide>;
#endif
  return nullptr;
}

template <class Out>
struct QuantizeByRounding {
  const QuantizeArgs* a;
  template <class Round, bool kDivide>
  HWY_INLINE void With() const {
    const QuantizeArgs* args = a;
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
    // MXCSR read once per call, not per row (small channels)
    a->round_by_csr = std::is_same<Round, RoundHalfEvenOp>::value && CsrRoundsToNearest();
#endif
    const Runs<float, Out> runs{&QuantizeRun<Out, Round, kDivide, false>,
                                &QuantizeRun<Out, Round, kDivide, true>,
                                args,
                                Round::kStochastic,
                                Round::kStochastic ? nullptr : &QuantizeRows<Out, Round, kDivide>,
                                QuantizeElementRowsOf<Out, Round, kDivide>()};
    RunPlan(args->plan, args->x, static_cast<Out*>(args->out), runs);
    if (args->stream) hwy::FlushStream();  // once per call, after every row's non-temporal stores
  }
  template <class Round>
  HWY_INLINE void operator()() const {
    if (a->application == ScaleApplicationKind::divide)
      With<Round, true>();
    else
      With<Round, false>();
  }
};

// One output type and rounding mode: what static dispatch instantiates for a call site.
template <class Out, RoundingMode kMode>
void QuantizeTyped(const QuantizeArgs& a) {
  const QuantizeByRounding<Out> f{&a};
  f.template operator()<typename RoundOpOf<kMode>::type>();
}

template <class Out>
HWY_INLINE void QuantizeTo(const QuantizeArgs& a) {
  const QuantizeByRounding<Out> f{&a};
  WithRounding(a.rounding, f);
}

template <int kUnused = 0>
inline void Quantize(const QuantizeArgs& a) {
  switch (a.out_type) {
    case ElemType::i8: QuantizeTo<std::int8_t>(a); return;
    case ElemType::u8: QuantizeTo<std::uint8_t>(a); return;
    case ElemType::i16: QuantizeTo<std::int16_t>(a); return;
    case ElemType::u16: QuantizeTo<std::uint16_t>(a); return;
    case ElemType::i32: QuantizeTo<std::int32_t>(a); return;
    case ElemType::f32: QuantizeTo<float>(a); return;
  }
}

// ------------------------------ Parameters

// QuantizeParamsArgs (abi.hpp): per-channel and per-group calls convert or check their
// parameters on every call, and the front end's scalar loop (SSE2 at best: it is compiled for
// the baseline) was 9 % of a per-group-32 quantize of 16K values and a third of the front end
// of a per-group-32 dequantize of 4K on Zen 5. The tail is that loop, so every target checks
// with quantkit::detail::ParamTest's formula. kZero: write zero (and factor when kFactor);
// without it the pass only checks (dequantize's parameters).
template <bool kZero, bool kFactor>
HWY_INLINE std::uint32_t QuantizeParamsLoop(const QuantizeParamsArgs& a) {
  static_assert(kZero || !kFactor, "factor is written with zero");
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToUnsigned<decltype(d)> du;
  const std::size_t N = hn::Lanes(d);
  const auto positive = hn::Zero(d);
  const auto fmax = hn::Set(d, std::numeric_limits<float>::max());
  const auto one = hn::Set(d, 1.0f);
  const auto all = hn::Set(du, ~std::uint32_t{0});
  const quantkit::detail::ParamTest test(IntRange{a.qmin, a.qmax});
  const auto lo = hn::Set(du, test.lo);
  const auto span = hn::Set(du, test.span);
  auto bad = hn::Zero(du);
  std::size_t i = 0;
  for (; i + N <= a.count; i += N) {
    const auto s = hn::LoadU(d, a.scale + i);
    const auto z = hn::LoadU(di, a.zero_point + i);
    if constexpr (kZero) hn::StoreU(hn::ConvertTo(d, z), d, a.zero + i);
    // !(s > 0) | !(s <= FLT_MAX): NaN fails both; the reciprocal must be finite too
    // (kMinReciprocalScale: x * inf would be NaN for x = 0)
    auto ok = hn::And(hn::VecFromMask(d, hn::Gt(s, positive)), hn::VecFromMask(d, hn::Le(s, fmax)));
    if constexpr (kFactor) {
      const auto f = hn::Div(one, s);
      hn::StoreU(f, d, a.factor + i);
      ok = hn::And(ok, hn::VecFromMask(d, hn::Le(f, fmax)));
    }
    bad = hn::Or(bad, hn::AndNot(hn::BitCast(du, ok), all));
    bad = hn::Or(bad, hn::VecFromMask(du, hn::Gt(hn::Sub(hn::BitCast(du, z), lo), span)));
  }
  std::uint32_t tail = 0;
  for (; i < a.count; ++i) {
    if constexpr (kZero) a.zero[i] = static_cast<float>(a.zero_point[i]);
    if constexpr (kFactor) {
      a.factor[i] = 1.0f / a.scale[i];
      tail |= static_cast<std::uint32_t>(!(a.factor[i] <= std::numeric_limits<float>::max()));
    }
    tail |= test.bad(a.scale[i], a.zero_point[i]);
  }
  return tail | static_cast<std::uint32_t>(!hn::AllFalse(du, hn::MaskFromVec(bad)));
}

template <int kUnused = 0>
inline std::uint32_t QuantizeParams(const QuantizeParamsArgs& a) {
  if (a.zero == nullptr) return QuantizeParamsLoop<false, false>(a);
  return a.factor != nullptr ? QuantizeParamsLoop<true, true>(a) : QuantizeParamsLoop<true, false>(a);
}

// ------------------------------ Dequantize

template <class In, class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> LoadAsInt32(D d, const In* HWY_RESTRICT p) {
  const hn::RebindToSigned<D> di;
  if constexpr (std::is_same<In, std::int32_t>::value) {
    (void)d;
    return hn::LoadU(di, p);
  } else {
    const hn::Rebind<In, D> dq;
    return hn::PromoteTo(di, hn::LoadU(dq, p));
  }
}

// Dequantize's vector: (q - z) * s for the N values at q.
template <class In, class D, class VI, class V>
HWY_INLINE V DequantizeVec(D d, const In* HWY_RESTRICT q, VI z, V s) {
  return hn::Mul(hn::ConvertTo(d, hn::Sub(LoadAsInt32(d, q), z)), s);
}

// The whole vectors of a run with constant parameters, in blocks of 4 while they last; returns
// the elements done.
template <class In, bool kStream>
HWY_INLINE std::size_t DequantizeBlocks4(const In* HWY_RESTRICT q, float* HWY_RESTRICT x,
                                         std::size_t n, float scale, std::int32_t zero) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  const std::size_t N = hn::Lanes(d);
  const V s = hn::Set(d, scale);
  const auto z = hn::Set(di, zero);
  std::size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    const V y0 = DequantizeVec(d, q + i, z, s);
    const V y1 = DequantizeVec(d, q + i + N, z, s);
    const V y2 = DequantizeVec(d, q + i + 2 * N, z, s);
    const V y3 = DequantizeVec(d, q + i + 3 * N, z, s);
    StoreVec<kStream>(y0, d, x + i);
    StoreVec<kStream>(y1, d, x + i + N);
    StoreVec<kStream>(y2, d, x + i + 2 * N);
    StoreVec<kStream>(y3, d, x + i + 3 * N);
  }
  for (; i + N <= n; i += N)  // then single vectors (short rows), ordinary stores
    hn::StoreU(DequantizeVec(d, q + i, z, s), d, x + i);
  return i;
}

template <class In, bool kVec>
void DequantizeRun(const void* args, const In* q, float* x, std::size_t n, std::int64_t at);

template <class In, bool kVec>
HWY_INLINE void DequantizeRunBody(const void* args, const In* q, float* x, std::size_t n,
                                  std::int64_t at) {
  const DequantizeArgs& a = *static_cast<const DequantizeArgs*>(args);
  const float* ps = a.scale + at;
  const std::int32_t* pz = a.zero + at;
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  using VI = hn::Vec<decltype(di)>;
  const std::size_t N = hn::Lanes(d);
  V s = hn::Set(d, ps[0]);
  VI z = hn::Set(di, pz[0]);
  std::size_t i = 0;
  if constexpr (!kVec) {
    if (a.stream && reinterpret_cast<std::uintptr_t>(x) % sizeof(float) == 0) {
      // Non-temporal stores need aligned addresses: the head up to the first one goes the
      // ordinary way (below, one vector at a time, then through the tail buffer).
      const std::size_t misaligned = reinterpret_cast<std::uintptr_t>(x) % (N * sizeof(float));
      std::size_t head = misaligned == 0 ? 0 : (N * sizeof(float) - misaligned) / sizeof(float);
      if (head > n) head = n;
      if (head != 0) {
        DequantizeArgs ordinary = a;
        ordinary.stream = false;
        DequantizeRun<In, false>(&ordinary, q, x, head, at);
      }
      i = head + DequantizeBlocks4<In, true>(q + head, x + head, n - head, ps[0], pz[0]);  // fenced in DequantizeFrom
    } else {
      i = DequantizeBlocks4<In, false>(q, x, n, ps[0], pz[0]);
    }
  }
  for (; i + N <= n; i += N) {
    if constexpr (kVec) {
      s = hn::LoadU(d, ps + i);
      z = hn::LoadU(di, pz + i);
    }
    hn::StoreU(DequantizeVec(d, q + i, z, s), d, x + i);
  }
  if (i == n) return;
  const std::size_t rem = n - i;
  HWY_ALIGN In qb[kMaxLanes<float>] = {};
  HWY_ALIGN float xb[kMaxLanes<float>];
  std::memcpy(qb, q + i, rem * sizeof(In));
  if constexpr (kVec) {
    HWY_ALIGN float sb[kMaxLanes<float>];
    HWY_ALIGN std::int32_t zb[kMaxLanes<float>];
    for (std::size_t k = 0; k < N; ++k) {
      sb[k] = k < rem ? ps[i + k] : 1.0f;
      zb[k] = k < rem ? pz[i + k] : 0;
    }
    s = hn::Load(d, sb);
    z = hn::Load(di, zb);
  }
  hn::Store(DequantizeVec(d, qb, z, s), d, xb);
  std::memcpy(x + i, xb, rem * sizeof(float));
}

template <class In, bool kVec>
void DequantizeRun(const void* args, const In* q, float* x, std::size_t n, std::int64_t at) {
  DequantizeRunBody<In, kVec>(args, q, x, n, at);
}

// Rows of kVecs whole vectors two at a time, the two rows' vectors independent and one loop
// test for both (pairs measured up to 45 % faster than one row per step for rows of two
// vectors; four rows per step were slower than two). Advances q, x and at past the rows done
// (an even count) and returns that count.
template <std::size_t kVecs, bool kStream, class In>
HWY_INLINE std::size_t DequantizeRowPairs(const DequantizeArgs& a, const In*& q, std::ptrdiff_t sq, float*& x,
                                          std::ptrdiff_t sx, std::size_t count, std::int64_t& at,
                                          std::int64_t dat) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const std::size_t N = hn::Lanes(d);
  std::size_t k = 0;
  for (; k + 2 <= count; k += 2, q += 2 * sq, x += 2 * sx, at += 2 * dat) {
    const auto s0 = hn::Set(d, a.scale[at]);
    const auto s1 = hn::Set(d, a.scale[at + dat]);
    const auto z0 = hn::Set(di, a.zero[at]);
    const auto z1 = hn::Set(di, a.zero[at + dat]);
    const In* q1 = q + sq;
    float* x1 = x + sx;
    for (std::size_t v = 0; v < kVecs; ++v) {
      const auto y0 = DequantizeVec(d, q + v * N, z0, s0);
      const auto y1 = DequantizeVec(d, q1 + v * N, z1, s1);
      StoreVec<kStream>(y0, d, x + v * N);
      StoreVec<kStream>(y1, d, x1 + v * N);
    }
  }
  return k;
}

template <class In>
void DequantizeRows(const void* args, const In* q, std::ptrdiff_t sq, float* x, std::ptrdiff_t sx,
                    std::size_t count, std::size_t n, std::int64_t at, std::int64_t dat) {
  const DequantizeArgs& a = *static_cast<const DequantizeArgs*>(args);
  if (!a.stream || n * sizeof(float) < kStreamRowMinBytes) {  // the lean loop: no stream branch per row
    std::size_t k = 0;
    const hn::ScalableTag<float> d;
    const std::size_t N = hn::Lanes(d);
    // Rows of two or four vectors (per-group blocks of 2N values, per-channel rows of small
    // tensors): two rows per step; in a streaming call with non-temporal stores when every row
    // starts at a vector boundary (fenced in DequantizeFrom).
    const std::size_t row_bytes = static_cast<std::size_t>(sx < 0 ? -sx : sx) * sizeof(float);
    const bool stream_pairs = a.stream && reinterpret_cast<std::uintptr_t>(x) % (N * sizeof(float)) == 0 &&
                              row_bytes % (N * sizeof(float)) == 0;
    if (n == 2 * N)
      k = stream_pairs ? DequantizeRowPairs<2, true>(a, q, sq, x, sx, count, at, dat)
                       : DequantizeRowPairs<2, false>(a, q, sq, x, sx, count, at, dat);
    else if (n == 4 * N)
      k = stream_pairs ? DequantizeRowPairs<4, true>(a, q, sq, x, sx, count, at, dat)
                       : DequantizeRowPairs<4, false>(a, q, sq, x, sx, count, at, dat);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // the last partial vector (rem < N) with a masked load and store (AVX-512's touch no
    // memory past the mask): through DequantizeRun's buffers, rows of 7 x 7 values ran at
    // 14 % of per tensor's speed on an Emerald Rapids Xeon. The masks are the same for every
    // row: made once.
    const hn::RebindToSigned<decltype(d)> di;
    const hn::Rebind<In, decltype(d)> dq;
    const std::size_t rem = n % N;
    const auto load_mask = hn::FirstN(dq, rem);
    const auto store_mask = hn::FirstN(d, rem);
#endif
    // Rows of 1 to 8 vectors, the last one partial or whole (feature maps of 7 x 7, 10 x 10
    // values per channel): one vector at a time, the last ending at the row's end (over the one
    // before when partial, rewriting the same values; only where q and x share no byte, as
    // they should). Against the blocks below, with the last partial vector through
    // DequantizeRun's buffers (AVX2) or masked (AVX-512), per channel of per tensor on Zen 4,
    // 1024 rows of int8: AVX2 rows of 49 16 -> 73 %, 20 6 -> 49 %, 9 3 -> 28 %; AVX-512 rows
    // of 49 68 -> 72 %, 20 42 -> 50 % (tools/bench/short_rows_ab.cpp; two rows per step: 58 %).
    if (n >= N && n < 8 * N) {
      const hn::RebindToSigned<decltype(d)> dz;
      for (; k < count && Disjoint(q, n, x); ++k, q += sq, x += sx, at += dat) {
        const auto s = hn::Set(d, a.scale[at]);
        const auto z = hn::Set(dz, a.zero[at]);
        std::size_t i = 0;
        for (; i + N < n; i += N) hn::StoreU(DequantizeVec(d, q + i, z, s), d, x + i);
        hn::StoreU(DequantizeVec(d, q + n - N, z, s), d, x + n - N);
      }
    }
    for (; k < count; ++k, q += sq, x += sx, at += dat) {
      const std::size_t i = DequantizeBlocks4<In, false>(q, x, n, a.scale[at], a.zero[at]);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
      if (rem != 0) {
        hn::Vec<decltype(di)> v;
        if constexpr (std::is_same<In, std::int32_t>::value) {
          v = hn::MaskedLoad(load_mask, dq, q + i);
        } else {
          v = hn::PromoteTo(di, hn::MaskedLoad(load_mask, dq, q + i));
        }
        const auto y = hn::Mul(hn::ConvertTo(d, hn::Sub(v, hn::Set(di, a.zero[at]))), hn::Set(d, a.scale[at]));
        hn::BlendedStore(y, store_mask, d, x + i);
      }
#else
      // The last partial vector of a longer row the same way as above (AVX2 rows of 196 50 ->
      // 100 % of per tensor, of 100 28 -> 93 %); else (rows shorter than a vector, or q and x
      // overlapping) through DequantizeRun's buffers.
      if (i < n) {
        if (n >= N && Disjoint(q, n, x)) {
          const auto z = hn::Set(hn::RebindToSigned<decltype(d)>(), a.zero[at]);
          hn::StoreU(DequantizeVec(d, q + n - N, z, hn::Set(d, a.scale[at])), d, x + n - N);
        } else {
          DequantizeRun<In, false>(args, q + i, x + i, n - i, at);
        }
      }
#endif
    }
    return;
  }
  for (std::size_t k = 0; k < count; ++k, q += sq, x += sx, at += dat)
    DequantizeRunBody<In, false>(args, q, x, n, at);
}

#if HWY_TARGET != HWY_SCALAR
// Runs::element_rows of dequantize: as QuantizeElementRows (LaneRows with DequantizeVec).
template <class In>
void DequantizeElementRows(const void* args, const In* q, std::ptrdiff_t sq, float* x, std::ptrdiff_t sx,
                           std::size_t count, std::size_t n, std::int64_t at, std::int64_t dat) {
  const DequantizeArgs& a = *static_cast<const DequantizeArgs*>(args);
  if (dat != 0) {
    for (std::size_t k = 0; k < count; ++k, q += sq, x += sx, at += dat) DequantizeRunBody<In, true>(args, q, x, n, at);
    return;
  }
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const std::size_t N = hn::Lanes(d);
  static constexpr float kOne = 1.0f;
  static constexpr std::int32_t kZero = 0;
  using Lanes = LaneArrays<float, std::int32_t, float>;
  LaneRows(q, sq, x, sx, count, n, Lanes{a.scale + at, a.zero + at, nullptr}, Lanes{&kOne, &kZero, nullptr},
           [&](const In* HWY_RESTRICT qv, float* HWY_RESTRICT xv, const Lanes& l) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
             for (std::size_t v = 0; v < 4; ++v)
               hn::StoreU(DequantizeVec(d, qv + v * N, hn::LoadU(di, l.a1 + v * N), hn::LoadU(d, l.a0 + v * N)), d,
                          xv + v * N);
           });
}
#endif

template <class In>
void DequantizeFrom(const DequantizeArgs& a) {
#if HWY_TARGET != HWY_SCALAR
  constexpr RowsFn<In, float> kElementRows = &DequantizeElementRows<In>;
#else
  constexpr RowsFn<In, float> kElementRows = nullptr;
#endif
  const Runs<In, float> runs{&DequantizeRun<In, false>, &DequantizeRun<In, true>, &a, false,
                             &DequantizeRows<In>, kElementRows};
  RunPlan(a.plan, static_cast<const In*>(a.q), a.out, runs);
  if (a.stream) hwy::FlushStream();  // once per call, after every row's non-temporal stores
}

template <int kUnused = 0>
inline void Dequantize(const DequantizeArgs& a) {
  switch (a.in_type) {
    case ElemType::i8: DequantizeFrom<std::int8_t>(a); return;
    case ElemType::u8: DequantizeFrom<std::uint8_t>(a); return;
    case ElemType::i16: DequantizeFrom<std::int16_t>(a); return;
    case ElemType::u16: DequantizeFrom<std::uint16_t>(a); return;
    case ElemType::i32: DequantizeFrom<std::int32_t>(a); return;
    case ElemType::f32: return;  // not a quantized type
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_QUANTIZE_INL_H_ toggle
