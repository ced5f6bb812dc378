// Per-target kernels: requantize int32 accumulators -> int8/uint8/int16/uint16/int32 with
// every scale scheme of quantkit/policy/requantization.hpp, per-tensor or per-channel
// constants, bias and a fused clamp (ReLU/ReLU6/clip). Bit-identical to
// quantkit::ref::requantize_value:
//   out = clamp(Scheme::apply(sat32(acc + bias), k) + zero_point, lo, hi)
// 64-bit intermediate products run on even/odd lanes (MulEven) and are joined back.

#if defined(QUANTKIT_SIMD_REQUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QUANTKIT_SIMD_REQUANTIZE_INL_H_
#undef QUANTKIT_SIMD_REQUANTIZE_INL_H_
#else
#define QUANTKIT_SIMD_REQUANTIZE_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>

#include <hwy/highway.h>

#include "quantkit/simd/abi.hpp"
#include "quantkit/simd/common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace quantkit {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr std::int32_t kI32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kI32Max = std::numeric_limits<std::int32_t>::max();

// ------------------------------ int32 <-> int64 lanes
#if HWY_TARGET == HWY_SCALAR
template <class DI>
using Wide = hn::Rebind<std::int64_t, DI>;
#else
template <class DI>
using Wide = hn::RepartitionToWide<DI>;
#endif

// int64 products of the even / odd int32 lanes.
template <class V>
HWY_INLINE auto MulEvenLanes(V a, V b) {
  return hn::MulEven(a, b);
}
template <class V>
HWY_INLINE auto MulOddLanes(V a, V b) {
#if HWY_TARGET == HWY_SCALAR
  return hn::MulEven(a, b);  // unused: one lane only
#else
  return hn::MulEven(hn::Shuffle2301(a), hn::Shuffle2301(b));
#endif
}
// The low 32 bits of each int64 lane, back in int32 lane order.
template <class DI, class VW>
HWY_INLINE hn::Vec<DI> JoinLanes(DI di, VW even, VW odd) {
#if HWY_TARGET == HWY_SCALAR
  (void)odd;
  const hn::RebindToUnsigned<DI> du;
  const hn::Rebind<std::uint64_t, DI> du64;
  return hn::BitCast(di, hn::TruncateTo(du, hn::BitCast(du64, even)));
#else
  return hn::OddEven(hn::BitCast(di, hn::ShiftLeft<32>(odd)), hn::BitCast(di, even));
#endif
}
template <class DW, class VW>
HWY_INLINE VW SaturateToInt32(DW dw, VW v) {
  return hn::Min(hn::Max(v, hn::Set(dw, std::int64_t{kI32Min})), hn::Set(dw, std::int64_t{kI32Max}));
}

// a + b saturated to int32 (ref::saturate_to_int32(int64(a) + b)).
template <class DI, class V>
HWY_INLINE V SaturatingAdd32(DI di, V a, V b) {
  const V s = hn::Add(a, b);  // wraps
  const auto overflow = hn::Lt(hn::And(hn::Xor(s, a), hn::Xor(s, b)), hn::Zero(di));
  const V saturated = hn::Xor(hn::BroadcastSignBit(a), hn::Set(di, kI32Max));
  return hn::IfThenElse(overflow, saturated, s);
}

// x + bias saturated to int32 for a bias constant over the run: x clamped first to
// [INT32_MIN - min(bias, 0), INT32_MAX - max(bias, 0)] cannot overflow, and the clamp bounds
// are exactly where the saturating sum reaches INT32_MIN / INT32_MAX.
struct BiasClamp {
  std::int32_t lo, hi;
  // INT32_MIN - min(bias, 0) and INT32_MAX - max(bias, 0): no overflow, and selects rather
  // than branches (per-channel rows make one per row)
  explicit BiasClamp(std::int32_t bias)
      : lo(kI32Min - (bias < 0 ? bias : 0)), hi(kI32Max - (bias > 0 ? bias : 0)) {}
};

// floor(t / 2^31) as int32 lanes for t = a * b + nudge (int64 per even / odd lane pair; the
// caller guarantees the quotient fits int32, so only bits 31..62 of t matter). Even lanes: a
// logical 64-bit shift puts those bits in the low half; odd lanes: t + t puts them in the
// high half, which OddEven keeps (XNNPACK's gemmlowp-sse4 trick; no 64-bit arithmetic shift,
// which AVX2 and below emulate, and no shift back up).
template <class DI, class V, class VW>
HWY_INLINE V MulHighRounded(DI di, V a, V b, VW nudge) {
  const Wide<DI> dw;
  const hn::RebindToUnsigned<decltype(dw)> du64;
  const auto un = hn::BitCast(du64, nudge);
  const auto te = hn::Add(hn::BitCast(du64, MulEvenLanes(a, b)), un);
#if HWY_TARGET == HWY_SCALAR
  return JoinLanes(di, hn::BitCast(dw, hn::ShiftRight<31>(te)), nudge);
#else
  const auto to = hn::Add(hn::BitCast(du64, MulOddLanes(a, b)), un);
  return hn::OddEven(hn::BitCast(di, hn::Add(to, to)), hn::BitCast(di, hn::ShiftRight<31>(te)));
#endif
}

// MulHighRounded for b with every lane equal (Set): its odd lanes need no shuffle.
template <class DI, class V, class VW>
HWY_INLINE V MulHighRoundedBroadcast(DI di, V a, V b, VW nudge) {
#if HWY_TARGET == HWY_SCALAR
  return MulHighRounded(di, a, b, nudge);
#else
  const hn::RebindToUnsigned<Wide<DI>> du64;
  const auto un = hn::BitCast(du64, nudge);
  const auto te = hn::Add(hn::BitCast(du64, hn::MulEven(a, b)), un);
  const auto to = hn::Add(hn::BitCast(du64, hn::MulEven(hn::Shuffle2301(a), b)), un);
  return hn::OddEven(hn::BitCast(di, hn::Add(to, to)), hn::BitCast(di, hn::ShiftRight<31>(te)));
#endif
}

// ------------------------------ Schemes (constants: see RequantizeArgs in abi.hpp)

template <class RoundOp>
struct RqFloat {
  using Round = RoundOp;
  static constexpr int kSlots = 0;
  static constexpr bool kFloat = true;
  template <class DI, class V, class VF>
  static HWY_INLINE V Apply(DI di, V x, const V* /*k*/, VF m) {
    const hn::RebindToFloat<DI> df;
    const VF r = Round::Do(df, hn::Mul(hn::ConvertTo(df, x), m), hn::Zero(df));
    const VF big = hn::Set(df, 2147483648.0f);
    // As FloatMultiplier::apply: r >= 2^31 and NaN of either sign (a non-finite multiplier, or
    // 0 * inf) give INT32_MAX, r < -2^31 INT32_MIN. Only in-range lanes are converted: x86
    // converts NaN by its sign bit, and the SCALAR target's conversion of NaN is undefined.
    const auto below = hn::Lt(r, hn::Neg(big));
    const auto high = hn::Not(hn::Lt(r, big));  // r >= 2^31 or NaN
    const auto in_range = hn::AndNot(below, hn::Lt(r, big));
    V out = hn::ConvertTo(di, hn::IfThenElseZero(in_range, r));
    out = hn::IfThenElse(hn::RebindMask(di, below), hn::Set(di, kI32Min), out);
    out = hn::IfThenElse(hn::RebindMask(di, high), hn::Set(di, kI32Max), out);
    return out;
  }
};

// Exact R::shift_right(x, s): q = x >> s, remainder r = x & (2^s - 1), half = 2^(s-1)
// (1 for s == 0, where r == 0 keeps q).
template <RoundingMode kMode>
struct RqPowerOfTwo {
  static constexpr int kSlots = 3;
  static constexpr bool kFloat = false;
  template <class DI, class V, class VF>
  static HWY_INLINE V Apply(DI di, V x, const V* k, VF /*m*/) {
    const V q = hn::operator>>(x, k[0]);
    const V r = hn::And(x, k[1]);
    const V half = k[2];
    const V zero = hn::Zero(di);
    if constexpr (kMode == RoundingMode::floor) {
      (void)r;
      (void)half;
      (void)zero;
      return q;
    } else {
      hn::Mask<DI> up;
      if constexpr (kMode == RoundingMode::half_even) {
        const V one = hn::Set(di, 1);
        up = hn::Or(hn::Gt(r, half), hn::And(hn::Eq(r, half), hn::Eq(hn::And(q, one), one)));
      } else if constexpr (kMode == RoundingMode::half_away) {
        up = hn::Or(hn::Gt(r, half), hn::And(hn::Eq(r, half), hn::Not(hn::Lt(x, zero))));
      } else if constexpr (kMode == RoundingMode::half_up) {
        up = hn::Not(hn::Lt(r, half));
      } else {  // toward_zero
        up = hn::And(hn::Lt(x, zero), hn::Not(hn::Eq(r, zero)));
      }
      return hn::Sub(q, hn::VecFromMask(di, up));
    }
  }
};

// gemmlowp: RDBP(SRDHM(x << left, q), right); x << left leaving int32 saturates by sign.
// SRDHM(a, b) = (a * b + 2^30) >> 31 (floor), except a == b == INT32_MIN -> INT32_MAX.
struct RqFixedPointDouble {
  static constexpr int kSlots = 7;
  static constexpr int kLoaded = 3;  // q, left, right (RequantizeArgs); the rest derived
  static constexpr bool kFloat = false;
  // k3 = 2^right - 1, k4 = k3 >> 1, k5 = INT32_MIN >> left, k6 = INT32_MAX >> left (2^31 - 1
  // for right == 31: the wrapping 1 << 31 minus one).
  template <class DI, class V>
  static HWY_INLINE void Derive(DI di, V* k) {
    const V one = hn::Set(di, 1);
    k[3] = hn::Sub(hn::operator<<(one, k[2]), one);
    k[4] = hn::ShiftRight<1>(k[3]);
    k[5] = hn::operator>>(hn::Set(di, kI32Min), k[1]);
    k[6] = hn::operator>>(hn::Set(di, kI32Max), k[1]);
  }
  template <class DI, class V, class VF>
  static HWY_INLINE V Apply(DI di, V x, const V* k, VF /*m*/) {
    const V qm = k[0];
    const auto too_big = hn::Gt(x, k[6]);
    const auto too_small = hn::Lt(x, k[5]);
    const V shifted = hn::operator<<(x, k[1]);
    const Wide<DI> dw;
    // |SRDHM| <= 2^31 - 1 but for the INT32_MIN * INT32_MIN case, replaced below.
    V high = MulHighRounded(di, shifted, qm, hn::Set(dw, std::int64_t{1} << 30));
    const V vmin = hn::Set(di, kI32Min);
    const V vmax = hn::Set(di, kI32Max);
    high = hn::IfThenElse(hn::And(hn::Eq(shifted, vmin), hn::Eq(qm, vmin)), vmax, high);
    // RoundingDivideByPOT(high, right): ties away from zero.
    const V remainder = hn::And(high, k[3]);
    const V threshold = hn::Sub(k[4], hn::BroadcastSignBit(high));  // + 1 when negative
    V out = hn::Sub(hn::operator>>(high, k[2]), hn::VecFromMask(di, hn::Gt(remainder, threshold)));
    out = hn::IfThenElse(too_big, vmax, out);
    return hn::IfThenElse(too_small, vmin, out);
  }
};

// TFLite single rounding: (x * q + 2^(t-1)) >> t with t = 31 - shift, computed as
// ((x * q) >> (t - 1) + 1) >> 1 (the same floor), saturated to int32. The general path: runs
// with t in [31, 62] take FixedPointStep (FixedPointFast::Single).
struct RqFixedPointSingle {
  static constexpr int kSlots = 2;
  static constexpr bool kFloat = false;
  struct Wide64 {
    template <class DW, class VW>
    HWY_INLINE VW operator()(DW dw, VW product, VW shift) const {
      const VW y = hn::operator>>(product, shift);
      return SaturateToInt32(dw, hn::ShiftRight<1>(hn::Add(y, hn::Set(dw, std::int64_t{1}))));
    }
  };
  template <class DI, class V, class VF>
  static HWY_INLINE V Apply(DI di, V x, const V* k, VF /*m*/) {
    const Wide<DI> dw;
    const V one = hn::Set(di, 1);
    const Wide64 f;
    const auto even = f(dw, MulEvenLanes(x, k[0]), MulEvenLanes(k[1], one));
#if HWY_TARGET == HWY_SCALAR
    return JoinLanes(di, even, even);
#else
    const auto odd = f(dw, MulOddLanes(x, k[0]), MulOddLanes(k[1], one));
    return JoinLanes(di, even, odd);
#endif
  }
};

struct RqSingleShift {
  static constexpr int kSlots = 1;
  static constexpr bool kFloat = false;
  template <class DI, class V, class VF>
  static HWY_INLINE V Apply(DI /*di*/, V x, const V* k, VF /*m*/) {
    return hn::operator>>(x, k[0]);
  }
};

// N2D2 double shift: (x + (x << s1) + 2^(s2-1)) >> s2 in int64, saturated to int32. The
// general path: multipliers below 1 take FixedPointStep as single rounding (DoubleShiftFast).
struct RqDoubleShift {
  static constexpr int kSlots = 3;
  static constexpr bool kFloat = false;
  template <class DI, class V, class VF>
  static HWY_INLINE V Apply(DI di, V x, const V* k, VF /*m*/) {
    const Wide<DI> dw;
    const V one = hn::Set(di, 1);
    const auto even = Combine(dw, MulEvenLanes(x, one), MulEvenLanes(k[0], one),
                              MulEvenLanes(k[1], one), MulEvenLanes(k[2], one));
#if HWY_TARGET == HWY_SCALAR
    return JoinLanes(di, even, even);
#else
    const auto odd = Combine(dw, MulOddLanes(x, one), MulOddLanes(k[0], one),
                             MulOddLanes(k[1], one), MulOddLanes(k[2], one));
    return JoinLanes(di, even, odd);
#endif
  }
  template <class DW, class VW>
  static HWY_INLINE VW Combine(DW dw, VW a, VW s1, VW s2, VW round) {
    const VW v = hn::Add(hn::Add(a, hn::operator<<(a, s1)), round);
    return SaturateToInt32(dw, hn::operator>>(v, s2));
  }
};

// ------------------------------ Driver

// The slots of RequantizeArgs::k a scheme reads (kLoaded when it derives the rest: Derive).
template <class Scheme, class = void>
struct SchemeSlots {
  static constexpr int kLoaded = Scheme::kSlots;
  template <class DI, class V>
  static HWY_INLINE void Derive(DI, V*) {}
};
template <class Scheme>
struct SchemeSlots<Scheme, std::void_t<decltype(Scheme::kLoaded)>> {
  static constexpr int kLoaded = Scheme::kLoaded;
  template <class DI, class V>
  static HWY_INLINE void Derive(DI di, V* k) {
    Scheme::Derive(di, k);
  }
};

template <class Out, class DI, class V>
HWY_INLINE void StoreNarrow(DI di, V v, Out* HWY_RESTRICT p) {
  if constexpr (std::is_same<Out, std::int32_t>::value) {
    hn::StoreU(v, di, p);
  } else {
    const hn::Rebind<Out, DI> dq;
    hn::StoreU(hn::DemoteTo(dq, v), dq, p);
  }
}

// RequantizeBlocks4 for RqFixedPointDouble when the run's constants allow (FixedPointFast):
// no left shift (so no shift saturation), right >= 1, q != INT32_MIN (so no SRDHM saturation).
// With x' = sat32(x + bias) = xc + bias (BiasClamp), h = SRDHM(x', q), |h| <= |q|:
//   h = floor((xc * q + bias * q + 2^30) / 2^31)   (|x' * q| <= 2^62: no int64 overflow);
//   RDBP(h, right) = (h + 2^(right-1) - [h < 0]) >> right (ties away from zero: a remainder
//     of exactly half rounds up for h >= 0 and down below);
//   RDBP(h, right) + zp = (g - [g < c]) >> right with c = 2^(right-1) + zp * 2^right and
//     g = h + c = floor((xc * q + (bias * q + 2^30 + c * 2^31)) / 2^31): c folded into the
//     64-bit nudge (wrapping add; the sum itself is < 2^63 in magnitude), and g < c iff h < 0.
// FixedPointFast checks that g - 1 .. g stay inside int32 for every |h| <= |q|. The result is
// the final value before the clamp; when the clamp is the output type's whole range the
// saturating demotion does it (kClamp false).
// It also keeps the run's q and BiasClamp bounds: everything FixedPointStep needs.
//
// On AVX-512 (kUnsignedMulHigh) the product is taken unsigned and doubled, so that g is the
// high half of each 64-bit lane and one two-table permute (vpermt2d) joins the even and odd
// lanes' high halves in order: with x'' = xc + 2^31 (the sign bit flipped) and q >= 0,
//   x'' * 2q + nudge2 = 2 * (xc * q + nudge) (mod 2^64), nudge2 = 2 nudge - q * 2^32,
// and 2 (xc * q + nudge) = 2^32 g + (0 or 2^31) fits int64 (g fits int32), so its high half
// is g. That drops the even products' shift and the odd ones' doubling (11 vector ops per 16
// values instead of 13 with the shift by a vector of counts); a negative q takes the scheme's
// general path (its Apply).
constexpr bool kUnsignedMulHigh = HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL;
// The step's nudge and multiplier from FixedPointFast's nudge and q.
inline std::uint64_t StepNudge(std::uint64_t nudge, std::int32_t qm) {
  return kUnsignedMulHigh ? 2 * nudge - (static_cast<std::uint64_t>(static_cast<std::uint32_t>(qm)) << 32) : nudge;
}
inline std::int32_t StepMultiplier(std::int32_t qm) {
  return kUnsignedMulHigh ? static_cast<std::int32_t>(2 * static_cast<std::uint32_t>(qm)) : qm;
}

struct FixedPointFast {
  std::uint64_t nudge;  // the step's (StepNudge)
  std::int32_t c;
  std::int32_t right;
  std::int32_t q;  // the step's multiplier (StepMultiplier)
  std::int32_t xlo, xhi;
  bool ok;
  // Few branches (FixedPointRowTable makes one per row of non-contiguous constants): the shift
  // counts are masked to stay defined whatever the constants, and `ok` is the one decision.
  FixedPointFast(std::int32_t qm, std::int32_t left, std::int32_t right_shift, std::int32_t bias,
                 std::int32_t zero_point)
      : nudge(0), c(0), right(right_shift), q(StepMultiplier(qm)), xlo(BiasClamp(bias).lo), xhi(BiasClamp(bias).hi),
        ok(false) {
    const std::int64_t mag = qm < 0 ? -std::int64_t{qm} : std::int64_t{qm};
    // 2^(right-1) + zp * 2^right = (2 zp + 1) * 2^(right-1)
    const std::int64_t c64 = (2 * std::int64_t{zero_point} + 1) * (std::int64_t{1} << ((right - 1) & 31));
    ok = (left == 0) & (static_cast<std::uint32_t>(right) - 1u <= 30u) & (qm != kI32Min) &
         (c64 - mag - 1 >= kI32Min) & (c64 + mag <= kI32Max) & (!kUnsignedMulHigh | (qm >= 0));
    c = static_cast<std::int32_t>(c64);
    nudge = StepNudge(static_cast<std::uint64_t>(std::int64_t{bias} * qm) + (std::uint64_t{1} << 30) +
                          (static_cast<std::uint64_t>(c64) << 31),
                      qm);
  }
  // TFLite single rounding (RqFixedPointSingle: k0 = q, k1 = T - 1 for out = (x * q + 2^(T-1))
  // >> T) when T = 31 + s, 0 <= s <= 31: with x' = xc + bias as above,
  //   floor((x' q + 2^(T-1)) / 2^T) + zp = g >> s,  g = floor((xc q + nudge) / 2^31),
  //   nudge = bias q + 2^(T-1) + zp 2^T  (zp 2^T is zp 2^s times 2^31: exact in g),
  // no int32 saturation (|x' q| < 2^62, T >= 31) and no rounding correction. g stays inside int32
  // when zp 2^s - |q| >= INT32_MIN and zp 2^s + 2^(s-1) + |q| <= INT32_MAX (|x' q| / 2^31 <= |q|).
  struct Single {};
  FixedPointFast(Single, std::int32_t qm, std::int32_t t_minus_1, std::int32_t bias, std::int32_t zero_point)
      : nudge(0), c(0), right(t_minus_1 - 30), q(StepMultiplier(qm)), xlo(BiasClamp(bias).lo), xhi(BiasClamp(bias).hi),
        ok(false) {
    const std::int64_t mag = qm < 0 ? -std::int64_t{qm} : std::int64_t{qm};
    const int sh = right & 31, t = (t_minus_1 + 1) & 63;
    const std::int64_t zs = std::int64_t{zero_point} * (std::int64_t{1} << sh);  // |.| <= 2^62
    const std::int64_t half = sh == 0 ? 1 : std::int64_t{1} << (sh - 1);
    ok = (static_cast<std::uint32_t>(right) <= 31u) & (qm != kI32Min) & (zs - mag >= kI32Min) &
         (zs + half + mag <= kI32Max) & (!kUnsignedMulHigh | (qm >= 0));
    nudge = StepNudge(static_cast<std::uint64_t>(std::int64_t{bias} * qm) + (std::uint64_t{1} << ((t - 1) & 63)) +
                          (static_cast<std::uint64_t>(std::int64_t{zero_point}) << t),
                      qm);
  }
};
// N2D2's double shift, (x (2^s1 + 1) + 2^(s2-1)) >> s2 saturated, is single rounding with
// q = (2^s1 + 1) 2^(31 - s2) and T = 31 for s2 <= 31 (numerator and divisor times 2^(31-s2)),
// q = 2^s1 + 1 and T = s2 above: the fast path where that q fits int32 (a multiplier below 1,
// so the saturation never bites) and FixedPointFast::Single's bounds hold.
inline FixedPointFast DoubleShiftFast(std::int32_t s1, std::int32_t s2, std::int32_t bias, std::int32_t zero_point) {
  const std::int64_t q0 = (std::int64_t{1} << (s1 & 31)) + 1;
  const bool low = s2 <= 31;
  const std::int64_t q = low ? q0 << ((31 - s2) & 31) : q0;
  FixedPointFast f(FixedPointFast::Single(), static_cast<std::int32_t>(static_cast<std::uint32_t>(q)), low ? 30 : s2 - 1,
                   bias, zero_point);
  f.ok = f.ok & (q <= kI32Max) & (static_cast<std::uint32_t>(s1) <= 31u) & (s2 >= 1);
  return f;
}

// Schemes FixedPointStep takes as single rounding (kSingle).
template <class Scheme>
constexpr bool kFixedPointSingle = std::is_same<Scheme, RqFixedPointSingle>::value || std::is_same<Scheme, RqDoubleShift>::value;
// The fast-path constants of Scheme (RqFixedPointDouble, RqFixedPointSingle, RqDoubleShift)
// from its kernel constants k0, k1, k2 (abi.hpp).
template <class Scheme>
HWY_INLINE FixedPointFast FixedPointFastOf(std::int32_t k0, std::int32_t k1, std::int32_t k2, std::int32_t bias,
                                           std::int32_t zero_point) {
  if constexpr (std::is_same<Scheme, RqDoubleShift>::value) {
    return DoubleShiftFast(k0, k1, bias, zero_point);
  } else if constexpr (std::is_same<Scheme, RqFixedPointSingle>::value) {
    (void)k2;
    return FixedPointFast(FixedPointFast::Single(), k0, k1, bias, zero_point);
  } else {
    return FixedPointFast(k0, k1, k2, bias, zero_point);
  }
}
template <class Scheme>
HWY_INLINE FixedPointFast FixedPointFastOf(const RequantizeArgs& a, std::int64_t at) {
  return FixedPointFastOf<Scheme>(a.k[0][at], a.k[1][at], Scheme::kSlots > 2 ? a.k[2][at] : 0, a.bias[at], a.zero_point);
}

// The bound(s) of BiasClamp a run applies, from the sign of its bias: only the bound on the
// bias's side can bite.
enum BiasSide : int {
  kBiasNone = 0,   // bias == 0: no clamp, no add
  kBiasUpper = 1,  // bias > 0: x <= INT32_MAX - bias
  kBiasLower = 2,  // bias < 0: x >= INT32_MIN - bias
  kBiasBoth = 3,   // either sign (both bounds; one of them a no-op)
};

// One vector of the fast path (see FixedPointFast): the run's constants in registers.
// kSingle: single rounding (no rounding correction; `c` unused).
template <class DI, bool kClamp, int kSide = kBiasBoth, bool kSingle = false>
struct FixedPointStep {
  using V = hn::Vec<DI>;
  using VW = hn::Vec<Wide<DI>>;
  // a shift by a vector of counts is one instruction (vpsravd); by a count in a register two
  static constexpr bool kShiftByVector = HWY_TARGET == HWY_AVX2 || kUnsignedMulHigh;
  V xlo, xhi, vq, c, lo, hi, vright;
  VW nudge;
  int right;
  HWY_INLINE FixedPointStep(DI di, const FixedPointFast& f, std::int32_t out_lo, std::int32_t out_hi)
      : lo(hn::Set(di, out_lo)), hi(hn::Set(di, out_hi)) {
    SetRun(di, f);
  }
  // A run's constants (per-channel rows: each row's), the call's output bounds kept.
  HWY_INLINE void SetRun(DI di, const FixedPointFast& f) {
    xlo = hn::Set(di, f.xlo);
    xhi = hn::Set(di, f.xhi);
    vq = hn::Set(di, f.q);
    c = hn::Set(di, f.c);
    nudge = hn::BitCast(Wide<DI>(), hn::Set(hn::RebindToUnsigned<Wide<DI>>(), f.nudge));
    right = f.right;
    if constexpr (kShiftByVector) vright = hn::Set(di, f.right);
  }
  // Row i's constants from a table (per-channel rows).
  template <class Table>
  HWY_INLINE void SetRow(DI di, const Table& t, std::size_t i) {
    if constexpr (kSide == kBiasLower || kSide == kBiasBoth) xlo = hn::Set(di, t.xlo[i]);
    if constexpr (kSide == kBiasUpper || kSide == kBiasBoth) xhi = hn::Set(di, t.xhi[i]);
    vq = hn::Set(di, t.q[i]);
    c = hn::Set(di, t.c[i]);
    nudge = hn::BitCast(Wide<DI>(), hn::Set(hn::RebindToUnsigned<Wide<DI>>(), t.nudge[i]));
    right = t.right[i];
    if constexpr (kShiftByVector) vright = hn::Set(di, t.right[i]);
  }
  HWY_INLINE V operator()(DI di, const std::int32_t* HWY_RESTRICT p) const { return Apply(di, hn::LoadU(di, p)); }
  HWY_INLINE V Apply(DI di, V v) const {
    // the bias itself is in the nudge: only the clamp of x + bias's saturation here
    const V xc = kSide == kBiasNone    ? v
                 : kSide == kBiasUpper ? hn::Min(v, xhi)
                 : kSide == kBiasLower ? hn::Max(v, xlo)
                                       : hn::Min(hn::Max(v, xlo), xhi);
    const V g = High(di, xc);
    const V h = kSingle ? g : hn::IfThenElse(hn::Lt(g, c), hn::Sub(g, hn::Set(di, 1)), g);
    V r;
    if constexpr (kShiftByVector) {
      r = hn::operator>>(h, vright);
    } else {
      r = hn::ShiftRightSame(h, right);
    }
    if constexpr (kClamp) {
      return hn::Min(hn::Max(r, lo), hi);
    } else {
      return r;
    }
  }
  // g = floor((xc * q + nudge) / 2^31) (see FixedPointFast)
  HWY_INLINE V High(DI di, V xc) const {
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
    const hn::RebindToUnsigned<DI> du;
    const hn::RebindToUnsigned<Wide<DI>> du64;
    const auto xu = hn::BitCast(du, hn::Xor(xc, hn::Set(di, kI32Min)));  // xc + 2^31
    const auto qu = hn::BitCast(du, vq);                                  // 2q
    const auto un = hn::BitCast(du64, nudge);
    const auto te = hn::Add(hn::MulEven(xu, qu), un);
    const auto to = hn::Add(hn::MulEven(hn::BitCast(du, hn::ShiftRight<32>(hn::BitCast(du64, xu))), qu), un);
    // lane 2i: te's high half i (dword 2i + 1); lane 2i + 1: to's (dword 16 + 2i + 1)
    const __m512i join = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
    return V{_mm512_permutex2var_epi32(te.raw, join, to.raw)};
#else
    return MulHighRoundedBroadcast(di, xc, vq, nudge);
#endif
  }
};

// Whole 4-vector blocks of step(di, p), stored by store(stream, r0, r1, r2, r3, p) with
// non-temporal stores when a.stream (std::true_type; !kMayStream: the caller knows a.stream is
// false, and a row loop reads neither it nor the prefetch distance). Returns the elements done.
template <class Out, bool kMayStream = true, class Step, class Store, class DI>
HWY_INLINE std::size_t StepBlocks4(DI di, const RequantizeArgs& a, const Step& step, const Store& store,
                                   const std::int32_t* HWY_RESTRICT x, Out* HWY_RESTRICT q, std::size_t n) {
  using V = hn::Vec<DI>;
  const std::size_t N = hn::Lanes(di);
  const std::size_t ahead = kMayStream ? a.stream_prefetch : 0;
  const auto block = [&](std::size_t i, auto stream) QUANTKIT_LAMBDA_INLINE {
    PrefetchStreamInput<decltype(stream)::value>(x + i, 4 * N * sizeof(std::int32_t), ahead);
    const V r0 = step(di, x + i);
    const V r1 = step(di, x + i + N);
    const V r2 = step(di, x + i + 2 * N);
    const V r3 = step(di, x + i + 3 * N);
    store(stream, r0, r1, r2, r3, q + i);
  };
  std::size_t i = 0;
  if (kMayStream && a.stream && n >= 8 * N) {
    // Non-temporal stores need aligned addresses: one ordinary block first, then aligned
    // blocks from the first aligned address in it (rewriting the overlap with the same values;
    // q and x do not alias). RequantizeWith fences once at the end.
    const std::size_t head = ElementsToAlignment(q, 4 * N * sizeof(Out));  // < 4 N: q is Out-aligned
    if (head != 0) {
      block(0, std::false_type());
      i = head;
    }
    for (; i + 4 * N <= n; i += 4 * N) block(i, std::true_type());
    return i;
  }
  for (; i + 4 * N <= n; i += 4 * N) block(i, std::false_type());
  return i;
}

// AVX2 and AVX-512 load a row's last partial block with MaskedLoad, which reads no memory
// past the mask there (Highway 1.0.3's reads whole vectors on the other targets).
constexpr bool kMaskedRowTail = HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL;

// The last rem values of a row (0 < rem < 4 N) as one block of step's, on kMaskedRowTail's
// targets: lanes past the row loaded as 0, the vectors stored by store into a buffer and rem
// values copied out (CopyFirst). Only the vectors rem reaches are computed; rem is the same for
// every row of a call, so the branches predict. Per-channel rows of 7 x 7 or 14 x 14 values
// took the generic per-vector loop and a scalar-buffered tail per row before: 6-36 % of per
// tensor's speed.
template <class Out, class DI>
struct StepTail {
  using M = hn::Mask<DI>;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // the bytes' stores (CopyFirst's), 64 bytes each: outputs of at most 2 bytes
  static constexpr bool kByteMasks = sizeof(Out) <= 2;
#else
  static constexpr bool kByteMasks = false;
#endif
  using DU8 = hn::ScalableTag<std::uint8_t>;
  M load[4];
  hn::Mask<DU8> bytes[2];
  std::size_t rem;
  HWY_INLINE StepTail(DI di, std::size_t rem_) : rem(rem_) {
    const std::size_t N = hn::Lanes(di);
    for (std::size_t k = 0; k < 4; ++k) load[k] = hn::FirstN(di, rem > k * N ? rem - k * N : 0);
    const DU8 du8;
    const std::size_t nb = rem * sizeof(Out), N8 = hn::Lanes(du8);
    for (std::size_t k = 0; k < 2; ++k) bytes[k] = hn::FirstN(du8, nb > k * N8 ? nb - k * N8 : 0);
  }
  template <class Step, class Store>
  HWY_INLINE void operator()(DI di, const Step& step, const Store& store, const std::int32_t* HWY_RESTRICT x,
                             Out* HWY_RESTRICT q) const {
    static_assert(kMaskedRowTail && sizeof(Out) > 0,
                  "StepTail: MaskedLoad may read past the mask on this target; use RequantizeRun");
    const std::size_t N = hn::Lanes(di);
    // whole vectors by plain loads: a mask per vector and row cost a mask move each (the masks
    // do not all stay in mask registers across the row loop)
    const auto part = [&](std::size_t k) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
      return rem >= (k + 1) * N ? step(di, x + k * N) : step.Apply(di, hn::MaskedLoad(load[k], di, x + k * N));
    };
    const auto r0 = part(0);
    const auto r1 = rem > N ? part(1) : r0;
    const auto r2 = rem > 2 * N ? part(2) : r0;
    const auto r3 = rem > 3 * N ? part(3) : r0;
    HWY_ALIGN Out buf[4 * kMaxLanes<std::int32_t>];
    store(std::false_type(), r0, r1, r2, r3, buf);
    if constexpr (kByteMasks) {
      const DU8 du8;
      auto* HWY_RESTRICT to = reinterpret_cast<std::uint8_t*>(q);
      const auto* HWY_RESTRICT from = reinterpret_cast<const std::uint8_t*>(buf);
      hn::BlendedStore(hn::Load(du8, from), bytes[0], du8, to);
      if (sizeof(Out) == 2 && rem * 2 > hn::Lanes(du8))
        hn::BlendedStore(hn::Load(du8, from + hn::Lanes(du8)), bytes[1], du8, to + hn::Lanes(du8));
    } else {
      CopyFirst(buf, q, rem);
    }
  }
};

// kSide: a BiasSide (per-channel rows pass their bias's).
template <class Out, bool kClamp, int kSide, bool kSingle>
HWY_INLINE std::size_t FixedPointBlocks4(const RequantizeArgs& a, const FixedPointFast& f,
                                         const std::int32_t* HWY_RESTRICT x, Out* HWY_RESTRICT q,
                                         std::size_t n) {
  const hn::ScalableTag<std::int32_t> di;
  const FixedPointStep<decltype(di), kClamp, kSide, kSingle> step(di, f, a.lo, a.hi);
  const auto store = [&](auto stream, auto r0, auto r1, auto r2, auto r3, Out* p) QUANTKIT_LAMBDA_INLINE {
    StoreQuantized4<Out, decltype(stream)::value>(di, r0, r1, r2, r3, NoZeroPoint(), p);
  };
  return StepBlocks4<Out>(di, a, step, store, x, q, n);
}

// RqFloat<Round> with constant parameters, when the multiplier m is finite (float(x') * m is
// never NaN) and lo' = lo - zp, hi' = hi - zp are exact floats (|.| <= 2^24; not so for most
// int32 outputs): q - zp = max(R(min(float(x') * m, hi')), lo') for x' = sat32(x + bias).
// Equal to RqFloat's R, int32 saturation and clamp: R is monotone and keeps integers, so
// clamping t to hi' before rounding changes nothing; below -2^31 the conversion gives INT32_MIN
// (x86's cvttps) or saturates (Highway's ConvertTo elsewhere), which the max clamps. No
// compare and blend for the int32 saturation, and on AVX-512 one instruction rounds half-even
// and converts (the generic path ran at half the plain loop's speed).
// kSide: the bias's BiasSide (kBiasNone: no clamp and no add; kBiasBoth: either sign).
// kClamps (FloatClamps): which of the output clamps FloatStep does itself.
inline bool FloatBoundsExact(std::int32_t lo_off, std::int32_t hi_off) {
  constexpr std::int32_t kExact = std::int32_t{1} << 24;
  return lo_off >= -kExact && hi_off <= kExact;  // lo_off <= hi_off
}
inline bool FloatStepApplies(float m, std::int32_t lo_off, std::int32_t hi_off) {
  return std::isfinite(m) && FloatBoundsExact(lo_off, hi_off);
}

// The output clamps FloatStep does; the store's saturating packs do the others.
enum FloatClamps : int {
  kClampBoth = 0,  // min with hi', max with lo' (StoreQuantized4)
  kClampHigh = 1,  // min with hi' only: ByteBlockPacker's packs and byte max do the lower clamp
  // none: ByteBlockPacker with hi the output type's maximum and every |m| < 1, so that
  // |float(x') * m| < 2^31 (at most 2^31 - 128: the conversion cannot overflow) and the packs'
  // saturation is the upper clamp (4 Min less per 64 values)
  kClampNone = 2,
};

// Every multiplier of a call has |m| < 1 (kClampNone's condition; NaN: no): count multipliers
// from kf with stride dkf (0: one for all).
inline bool SmallMultipliers(const float* HWY_RESTRICT kf, std::size_t count, std::int64_t dkf) {
  if (dkf == 0 || count == 1) return std::fabs(kf[0]) < 1.0f;
  std::size_t j = 0;
  bool small = true;
  if (dkf == 1) {
    const hn::ScalableTag<float> df;
    const std::size_t N = hn::Lanes(df);
    const auto one = hn::Set(df, 1.0f);
    auto ok = hn::Lt(hn::Zero(df), one);  // all true
    for (; j + N <= count; j += N) ok = hn::And(ok, hn::Lt(hn::Abs(hn::LoadU(df, kf + j)), one));
    small = hn::AllTrue(df, ok);
  }
  for (; j < count; ++j) small &= std::fabs(kf[static_cast<std::int64_t>(j) * dkf]) < 1.0f;
  return small;
}

template <class DI, class Round, int kSide, int kClamps>
struct FloatStep {
  using V = hn::Vec<DI>;
  using VF = hn::Vec<hn::RebindToFloat<DI>>;
  V xb, bias, lo;  // xb: the bound of BiasClamp on the bias's side (kBiasBoth: the upper one)
  V xlo;           // kBiasBoth: BiasClamp's lower bound
  VF m, hi;
  HWY_INLINE FloatStep(DI di, float mult, std::int32_t b, std::int32_t lo_off, std::int32_t hi_off)
      : xb(hn::Zero(di)),
        bias(hn::Zero(di)),
        lo(hn::Set(di, lo_off)),
        xlo(hn::Zero(di)),
        m(hn::Zero(hn::RebindToFloat<DI>())),
        hi(hn::Set(hn::RebindToFloat<DI>(), static_cast<float>(hi_off))) {
    SetRun(di, mult, b);
  }
  // A run's multiplier and bias (per-channel rows: each row's), the call's bounds kept. The
  // bound from the bias vector (INT32_MAX - b for b > 0, INT32_MIN - b for b < 0: BiasClamp's
  // on its side), not through a scalar select and a second broadcast.
  HWY_INLINE void SetRun(DI di, float mult, std::int32_t b) {
    m = hn::Set(hn::RebindToFloat<DI>(), mult);
    bias = hn::Set(di, b);
    if constexpr (kSide == kBiasBoth) {
      xb = hn::Sub(hn::Set(di, kI32Max), hn::Max(bias, hn::Zero(di)));
      xlo = hn::Sub(hn::Set(di, kI32Min), hn::Min(bias, hn::Zero(di)));
    } else {
      xb = hn::Sub(hn::Set(di, kSide == kBiasLower ? kI32Min : kI32Max), bias);
    }
  }
  HWY_INLINE V operator()(DI di, const std::int32_t* HWY_RESTRICT p) const { return Apply(di, hn::LoadU(di, p)); }
  HWY_INLINE V Apply(DI di, V v) const {
    const hn::RebindToFloat<DI> df;
    if constexpr (kSide == kBiasBoth) v = hn::Add(hn::Min(hn::Max(v, xlo), xb), bias);
    if constexpr (kSide == kBiasUpper) v = hn::Add(hn::Min(v, xb), bias);
    if constexpr (kSide == kBiasLower) v = hn::Add(hn::Max(v, xb), bias);
    VF t = hn::Mul(hn::ConvertTo(df, v), m);
    if constexpr (kClamps != kClampNone) t = hn::Min(t, hi);
    V r;
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
    if constexpr (std::is_same<Round, RoundHalfEvenOp>::value)
      r = V{_mm512_cvt_roundps_epi32(t.raw, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
    else
      r = ConvertInRange(di, Round::Do(df, t, t));
#else
    r = ConvertInRange(di, Round::Do(df, t, t));
#endif
    return kClamps == kClampBoth ? hn::Max(r, lo) : r;
  }
};

// Whole 4-vector blocks of one run of RqFloat<Round> through FloatStep; kSide: the bias's
// BiasSide. Returns the elements done.
template <class Out, class Round, int kSide, int kClamps, class Store>
HWY_INLINE std::size_t FloatBlocks4(const RequantizeArgs& a, float m, std::int32_t bias, std::int32_t lo_off,
                                    std::int32_t hi_off, const Store& store, const std::int32_t* HWY_RESTRICT x,
                                    Out* HWY_RESTRICT q, std::size_t n) {
  const hn::ScalableTag<std::int32_t> di;
  return StepBlocks4<Out>(di, a, FloatStep<decltype(di), Round, kSide, kClamps>(di, m, bias, lo_off, hi_off), store, x,
                          q, n);
}

// FloatBlocks4 with the bias's side picked.
template <class Out, class Round, int kClamps, class Store>
HWY_INLINE std::size_t FloatSideBlocks4(const RequantizeArgs& a, float m, std::int32_t bias, std::int32_t lo_off,
                                        std::int32_t hi_off, const Store& store, const std::int32_t* HWY_RESTRICT x,
                                        Out* HWY_RESTRICT q, std::size_t n) {
  if (bias == 0) return FloatBlocks4<Out, Round, kBiasNone, kClamps>(a, m, bias, lo_off, hi_off, store, x, q, n);
  if (bias > 0) return FloatBlocks4<Out, Round, kBiasUpper, kClamps>(a, m, bias, lo_off, hi_off, store, x, q, n);
  return FloatBlocks4<Out, Round, kBiasLower, kClamps>(a, m, bias, lo_off, hi_off, store, x, q, n);
}

// body(clamps, store) with the call's store for FloatStep's results and the FloatClamps left to
// FloatStep (a std::integral_constant): for bytes on AVX-512 with |zp| <= 255 ByteBlockPacker,
// which does the lower clamp (kClampHigh), and the upper one too when hi is the type's maximum
// and small() (every multiplier of the call |m| < 1: kClampNone; asked only there); else
// StoreQuantized4 adding zp (kClampBoth).
template <class Out, class Small, class Body>
HWY_INLINE auto WithFloatStore(const RequantizeArgs& a, const Small& small, const Body& body) {
  const hn::ScalableTag<std::int32_t> di;
  using V = hn::Vec<decltype(di)>;
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  if constexpr (sizeof(Out) == 1) {
    if (a.zero_point >= -255 && a.zero_point <= 255) {
      const ByteBlockPacker<Out> pack(_mm512_set1_epi16(static_cast<std::int16_t>(a.zero_point)),
                                      static_cast<float>(a.lo));
      const auto store = [&pack](auto stream, V r0, V r1, V r2, V r3, Out* p) QUANTKIT_LAMBDA_INLINE {
        pack.template Store<decltype(stream)::value>(r0.raw, r1.raw, r2.raw, r3.raw, p);
      };
      if (a.hi == std::numeric_limits<Out>::max() && small())
        return body(std::integral_constant<int, kClampNone>(), store);
      return body(std::integral_constant<int, kClampHigh>(), store);
    }
  }
#endif
  (void)small;  // only the byte blocks above leave the upper clamp to the packs
  const V zp = hn::Set(di, a.zero_point);
  return body(std::integral_constant<int, kClampBoth>(), [di, zp](auto stream, V r0, V r1, V r2, V r3, Out* p) QUANTKIT_LAMBDA_INLINE {
    StoreQuantized4<Out, decltype(stream)::value>(di, r0, r1, r2, r3, zp, p);
  });
}

// Constant parameters, whole blocks of 4 vectors; returns the elements done. Clamps to
// [lo - zp, hi - zp] before adding zp (the caller checked both fit int32): the same as
// clamping the saturated sum, without the saturation.
template <class Out, class Scheme>
HWY_INLINE std::size_t RequantizeBlocks4(const RequantizeArgs& a, const std::int32_t* HWY_RESTRICT x,
                                         Out* HWY_RESTRICT q, std::size_t n, std::int64_t at) {
  if constexpr (std::is_same<Scheme, RqFixedPointDouble>::value || kFixedPointSingle<Scheme>) {
    // (single rounding and N2D2's double shift: kFixedPointSingle)
    constexpr bool kS = kFixedPointSingle<Scheme>;
    const FixedPointFast f = FixedPointFastOf<Scheme>(a, at);
    if (f.ok) {
      // the saturating demotion (StoreQuantized4) clamps to the output type's range; the bias
      // clamp on its side only (none without a bias: per-tensor layers mostly)
      const bool full = a.lo == std::numeric_limits<Out>::min() && a.hi == std::numeric_limits<Out>::max();
      const std::int32_t b = a.bias[at];
      if (b == 0)
        return full ? FixedPointBlocks4<Out, false, kBiasNone, kS>(a, f, x, q, n)
                    : FixedPointBlocks4<Out, true, kBiasNone, kS>(a, f, x, q, n);
      if (b > 0)
        return full ? FixedPointBlocks4<Out, false, kBiasUpper, kS>(a, f, x, q, n)
                    : FixedPointBlocks4<Out, true, kBiasUpper, kS>(a, f, x, q, n);
      return full ? FixedPointBlocks4<Out, false, kBiasLower, kS>(a, f, x, q, n)
                  : FixedPointBlocks4<Out, true, kBiasLower, kS>(a, f, x, q, n);
    }
  }
  if constexpr (Scheme::kFloat) {
    // the caller checked lo - zp and hi - zp fit int32
    const std::int32_t lo_off = a.lo - a.zero_point;
    const std::int32_t hi_off = a.hi - a.zero_point;
    if (FloatStepApplies(a.kf[at], lo_off, hi_off))
      return WithFloatStore<Out>(a, [&] { return std::fabs(a.kf[at]) < 1.0f; },
                                 [&](auto clamps, const auto& store) QUANTKIT_LAMBDA_INLINE {
                                   return FloatSideBlocks4<Out, typename Scheme::Round, decltype(clamps)::value>(
                                       a, a.kf[at], a.bias[at], lo_off, hi_off, store, x, q, n);
                                 });
  }
  const hn::ScalableTag<std::int32_t> di;
  const hn::RebindToFloat<decltype(di)> df;
  using V = hn::Vec<decltype(di)>;
  using VF = hn::Vec<decltype(df)>;
  const std::size_t N = hn::Lanes(di);
  constexpr int kSlots = Scheme::kSlots;
  using Slots = SchemeSlots<Scheme>;
  V k[kSlots > 0 ? kSlots : 1];
  for (int s = 0; s < Slots::kLoaded; ++s) k[s] = hn::Set(di, a.k[s][at]);
  Slots::Derive(di, k);
  const VF m = Scheme::kFloat ? hn::Set(df, a.kf[at]) : hn::Zero(df);
  const BiasClamp bc(a.bias[at]);
  const V bias = hn::Set(di, a.bias[at]);
  const V xlo = hn::Set(di, bc.lo);
  const V xhi = hn::Set(di, bc.hi);
  const V zp = hn::Set(di, a.zero_point);
  const V lo = hn::Set(di, a.lo - a.zero_point);
  const V hi = hn::Set(di, a.hi - a.zero_point);
  const auto one = [&](const std::int32_t* p) QUANTKIT_LAMBDA_INLINE {
    const V v = hn::Add(hn::Min(hn::Max(hn::LoadU(di, p), xlo), xhi), bias);
    return hn::Min(hn::Max(Scheme::Apply(di, v, k, m), lo), hi);
  };
  std::size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    const V r0 = one(x + i);
    const V r1 = one(x + i + N);
    const V r2 = one(x + i + 2 * N);
    const V r3 = one(x + i + 3 * N);
    StoreQuantized4<Out, false>(di, r0, r1, r2, r3, zp, q + i);
  }
  return i;
}

template <class Out, class Scheme, bool kVec>
HWY_INLINE void RequantizeRunBody(const void* args, const std::int32_t* x, Out* q, std::size_t n,
                                  std::int64_t at) {
  const RequantizeArgs& a = *static_cast<const RequantizeArgs*>(args);
  const hn::ScalableTag<std::int32_t> di;
  const hn::RebindToFloat<decltype(di)> df;
  using V = hn::Vec<decltype(di)>;
  using VF = hn::Vec<decltype(df)>;
  const std::size_t N = hn::Lanes(di);
  constexpr int kSlots = Scheme::kSlots;
  using Slots = SchemeSlots<Scheme>;
  V k[kSlots > 0 ? kSlots : 1];
  for (int s = 0; s < Slots::kLoaded; ++s) k[s] = hn::Set(di, a.k[s][at]);
  Slots::Derive(di, k);
  VF m = Scheme::kFloat ? hn::Set(df, a.kf[at]) : hn::Zero(df);
  V bias = hn::Set(di, a.bias[at]);
  const V zp = hn::Set(di, a.zero_point);
  const V lo = hn::Set(di, a.lo);
  const V hi = hn::Set(di, a.hi);
  std::size_t i = 0;
  if constexpr (!kVec) {
    const std::int64_t lo_off = std::int64_t{a.lo} - a.zero_point;
    const std::int64_t hi_off = std::int64_t{a.hi} - a.zero_point;
    if (lo_off >= kI32Min && hi_off <= kI32Max) {
      i = RequantizeBlocks4<Out, Scheme>(a, x, q, n, at);
    }
  }
  for (; i + N <= n; i += N) {
    if constexpr (kVec) {
      for (int s = 0; s < Slots::kLoaded; ++s) k[s] = hn::LoadU(di, a.k[s] + at + i);
      Slots::Derive(di, k);
      if constexpr (Scheme::kFloat) m = hn::LoadU(df, a.kf + at + i);
      bias = hn::LoadU(di, a.bias + at + i);
    }
    const V v = SaturatingAdd32(di, hn::LoadU(di, x + i), bias);
    const V r = SaturatingAdd32(di, Scheme::Apply(di, v, k, m), zp);
    StoreNarrow<Out>(di, hn::Min(hn::Max(r, lo), hi), q + i);
  }
  if (i == n) return;
  // Tail through buffers; padding lanes repeat the first tail element's constants.
  const std::size_t rem = n - i;
  HWY_ALIGN std::int32_t xb[kMaxLanes<std::int32_t>] = {};
  HWY_ALIGN Out qb[kMaxLanes<std::int32_t>];
  std::memcpy(xb, x + i, rem * sizeof(std::int32_t));
  if constexpr (kVec) {
    const std::int64_t t = at + static_cast<std::int64_t>(i);
    HWY_ALIGN std::int32_t kb[kMaxLanes<std::int32_t>];
    for (int s = 0; s < Slots::kLoaded; ++s) {
      for (std::size_t l = 0; l < N; ++l) kb[l] = a.k[s][t + static_cast<std::int64_t>(l < rem ? l : 0)];
      k[s] = hn::Load(di, kb);
    }
    Slots::Derive(di, k);
    if constexpr (Scheme::kFloat) {
      HWY_ALIGN float fb[kMaxLanes<float>];
      for (std::size_t l = 0; l < N; ++l) fb[l] = a.kf[t + static_cast<std::int64_t>(l < rem ? l : 0)];
      m = hn::Load(df, fb);
    }
    for (std::size_t l = 0; l < N; ++l) kb[l] = a.bias[t + static_cast<std::int64_t>(l < rem ? l : 0)];
    bias = hn::Load(di, kb);
  }
  const V v = SaturatingAdd32(di, hn::Load(di, xb), bias);
  const V r = SaturatingAdd32(di, Scheme::Apply(di, v, k, m), zp);
  StoreNarrow<Out>(di, hn::Min(hn::Max(r, lo), hi), qb);
  std::memcpy(q + i, qb, rem * sizeof(Out));
}

// Out of line: RequantizeRows calls it for what its blocks leave, and inlined there it made
// every row spill the scheme's constants for a tail most rows do not have.
template <class Out, class Scheme, bool kVec>
HWY_NOINLINE void RequantizeRun(const void* args, const std::int32_t* x, Out* q, std::size_t n,
                                std::int64_t at) {
  RequantizeRunBody<Out, Scheme, kVec>(args, x, q, n, at);
}

// Bit i of the result: lane i of mask (at most 64 lanes).
template <class D>
HWY_INLINE std::uint64_t MaskBits64(D d, hn::Mask<D> mask) {
  std::uint8_t bytes[8] = {};
  hn::StoreMaskBits(d, mask, bytes);
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < (hn::Lanes(d) + 7) / 8; ++i) bits |= std::uint64_t{bytes[i]} << (8 * i);
  return bits;
}

// rows(k0, mask, side) for rows k = 0 .. count-1 (bias of row k at bias[at + k * dat]): per 64
// rows from k0, first out_of_line(k0, m) (m rows from k0), which runs the rows its fast path
// cannot take and returns their bit mask, then one call per BiasSide of the biases (a
// std::integral_constant) with the bit mask of that side's other rows (bit i: row k0 + i;
// possibly 0), the biases compared on vectors when contiguous. No branch on a sign: a per-row
// branch on it mispredicts once interleaved layers bring sign sequences the predictor cannot
// learn (bench_kernels --qk_requant_layers=4096 on Zen 5, per channel at 4K: 25-38 % slower
// than with biases >= 0; a branch per run of one sign as much), and clamping both sides
// instead costs every vector an op (10-18 % slower where the branch predicts). But the three
// passes take mixed-sign rows out of order, which the hardware prefetcher does not follow:
// in_order (RequantizeArgs::rows_in_order, calls past the core's cache) makes it one call of
// kBiasBoth (both sides clamped) for 64 rows of more than one side.
template <class OutOfLine, class Rows>
HWY_INLINE void ForRowsBySide(const std::int32_t* HWY_RESTRICT bias, std::size_t count, std::int64_t at,
                              std::int64_t dat, bool in_order, const OutOfLine& out_of_line, const Rows& rows) {
  const hn::ScalableTag<std::int32_t> di;
  const std::size_t N = hn::Lanes(di);
  const auto zero = hn::Zero(di);
  for (std::size_t k0 = 0; k0 < count; k0 += 64) {
    const std::size_t m = HWY_MIN(std::size_t{64}, count - k0);
    const std::uint64_t all = m == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << m) - 1;
    const std::int32_t* HWY_RESTRICT b = bias + at + static_cast<std::int64_t>(k0) * dat;
    std::uint64_t below = 0, zeros = 0;
    if (dat == 0) {  // one bias for all rows
      below = *b < 0 ? all : 0;
      zeros = *b == 0 ? all : 0;
    } else if (dat == 1 && m == 64 && N <= 64 && 64 % N == 0) {
      for (std::size_t j = 0; j < 64; j += N) {
        const auto v = hn::LoadU(di, b + j);
        below |= MaskBits64(di, hn::Lt(v, zero)) << j;
        zeros |= MaskBits64(di, hn::Eq(v, zero)) << j;
      }
    } else {
      for (std::size_t j = 0; j < m; ++j, b += dat) {
        below |= std::uint64_t{*b < 0} << j;
        zeros |= std::uint64_t{*b == 0} << j;
      }
    }
    const std::uint64_t done = out_of_line(k0, m);  // bits of the rows it ran
    const std::uint64_t live = all & ~done, none = zeros & live, lower = below & live, upper = live & ~(zeros | below);
    if (in_order && none != live && lower != live && upper != live) {  // (one side: no op more)
      rows(k0, live, std::integral_constant<int, kBiasBoth>());
      continue;
    }
    rows(k0, none, std::integral_constant<int, kBiasNone>());
    rows(k0, upper, std::integral_constant<int, kBiasUpper>());
    rows(k0, lower, std::integral_constant<int, kBiasLower>());
  }
}

// Rows of exactly one block (n = 4 N; per-channel rows of small images) of mask (bit i: row i,
// at x + i * sx, q + i * sq) two at a time: each row's constants set by set_row(step, i) into
// one of two copies of `step`, the two rows' vectors independent (as QuantizeShortRows' row
// pairs): on Zen 5, 64 rows of 64 accumulators, 4-8 % faster than one row per step.
template <class Out, class DI, class Step, class Store, class SetRow>
HWY_INLINE void OneBlockRowPairs(DI di, const Step& step, const Store& store, const std::int32_t* x, std::ptrdiff_t sx,
                                 Out* q, std::ptrdiff_t sq, std::uint64_t mask, const SetRow& set_row) {
  const std::size_t N = hn::Lanes(di);
  Step s0 = step, s1 = step;
  while (mask != 0) {
    const auto i0 = static_cast<std::ptrdiff_t>(hwy::Num0BitsBelowLS1Bit_Nonzero64(mask));
    mask &= mask - 1;
    set_row(s0, i0);
    const std::int32_t* x0 = x + i0 * sx;
    const auto a0 = s0(di, x0), a1 = s0(di, x0 + N), a2 = s0(di, x0 + 2 * N), a3 = s0(di, x0 + 3 * N);
    if (mask == 0) {
      store(std::false_type(), a0, a1, a2, a3, q + i0 * sq);
      return;
    }
    const auto i1 = static_cast<std::ptrdiff_t>(hwy::Num0BitsBelowLS1Bit_Nonzero64(mask));
    mask &= mask - 1;
    set_row(s1, i1);
    const std::int32_t* x1 = x + i1 * sx;
    const auto b0 = s1(di, x1), b1 = s1(di, x1 + N), b2 = s1(di, x1 + 2 * N), b3 = s1(di, x1 + 3 * N);
    store(std::false_type(), a0, a1, a2, a3, q + i0 * sq);
    store(std::false_type(), b0, b1, b2, b3, q + i1 * sq);
  }
}

// The rows of mask (bit i: row i, at x + i * sx, q + i * sq, parameters at + i * dat), whose
// biases lie on kSide, one after another; a non-finite multiplier's row and what a row's
// blocks leave go out of line. Out of line itself, so that each side's loop keeps the call's
// constants in registers (three sides inlined into one loop nest spilled them: 3-5 % slower
// at 64-value rows).
template <class Out, class Round, int kSide, int kClamps, class Store>
HWY_NOINLINE void FloatMaskRows(const RequantizeArgs& a, const Store& store, const std::int32_t* x, std::ptrdiff_t sx,
                                Out* q, std::ptrdiff_t sq, std::uint64_t mask, std::size_t n, std::int64_t at,
                                std::int64_t dat) {
  const hn::ScalableTag<std::int32_t> di;
  // the caller checked FloatBoundsExact and took the rows of non-finite multipliers
  FloatStep<decltype(di), Round, kSide, kClamps> step(di, 1.0f, 0, a.lo - a.zero_point, a.hi - a.zero_point);
  const float* HWY_RESTRICT kf = a.kf;
  const std::int32_t* HWY_RESTRICT kb = a.bias;
  if (n == 4 * hn::Lanes(di)) {
    return OneBlockRowPairs<Out>(di, step, store, x, sx, q, sq, mask, [&](auto& row_step, std::ptrdiff_t i) {
      const std::int64_t p = at + i * dat;
      row_step.SetRun(di, kf[p], kb[p]);
    });
  }
  const std::size_t tail_at = n & ~(4 * hn::Lanes(di) - 1);
  const StepTail<Out, decltype(di)> tail(di, n - tail_at);
  for (; mask != 0; mask &= mask - 1) {
    const auto i = static_cast<std::ptrdiff_t>(hwy::Num0BitsBelowLS1Bit_Nonzero64(mask));
    const std::int64_t p = at + i * dat;
    const std::int32_t* xr = x + i * sx;
    Out* qr = q + i * sq;
    step.SetRun(di, kf[p], kb[p]);
    const std::size_t done = StepBlocks4<Out, false>(di, a, step, store, xr, qr, n);
    if constexpr (kMaskedRowTail) {
      if (done < n) tail(di, step, store, xr + done, qr + done);
    } else {
      if (done < n) RequantizeRun<Out, RqFloat<Round>, false>(&a, xr + done, qr + done, n - done, p);
    }
  }
}

// Bit j of the result (j < m <= 64): the j-th multiplier from kf (stride dkf) is not finite.
inline std::uint64_t NonFiniteBits(const float* HWY_RESTRICT kf, std::size_t m, std::int64_t dkf) {
  const hn::ScalableTag<float> df;
  const std::size_t N = hn::Lanes(df);
  std::uint64_t bits = 0;
  if (dkf == 1 && m == 64 && N <= 64 && 64 % N == 0) {
    for (std::size_t j = 0; j < 64; j += N) bits |= MaskBits64(df, hn::Not(hn::IsFinite(hn::LoadU(df, kf + j)))) << j;
  } else {
    for (std::size_t j = 0; j < m; ++j) bits |= std::uint64_t{!std::isfinite(kf[static_cast<std::int64_t>(j) * dkf])} << j;
  }
  return bits;
}

// Float scheme, ordinary stores, rows of at least one block: the call's store set up once, the
// rows grouped by their bias's side (ForRowsBySide), each group through FloatMaskRows (each
// row's multiplier and bias in its loop: per-row setup through RequantizeBlocks4 cost as much as
// a 64-value row's arithmetic).
template <class Out, class Round>
HWY_NOINLINE void FloatRows(const RequantizeArgs& a, const std::int32_t* x, std::ptrdiff_t sx, Out* q,
                            std::ptrdiff_t sq, std::size_t count, std::size_t n, std::int64_t at,
                            std::int64_t dat) {
  // (one call per call, so out of line is fine: QUANTKIT_LAMBDA_INLINE here measured no faster)
  WithFloatStore<Out>(a, [&] { return SmallMultipliers(a.kf + at, count, dat); }, [&](auto clamps, const auto& store) {
    // rows of a non-finite multiplier through RqFloat (FloatStep needs float(x') * m not NaN)
    const auto non_finite = [&](std::size_t k0, std::size_t m) {
      const std::int64_t p0 = at + static_cast<std::int64_t>(k0) * dat;
      const std::uint64_t bits = NonFiniteBits(a.kf + p0, m, dat);
      for (std::uint64_t b = bits; b != 0; b &= b - 1) {
        const auto i = static_cast<std::ptrdiff_t>(k0 + hwy::Num0BitsBelowLS1Bit_Nonzero64(b));
        RequantizeRun<Out, RqFloat<Round>, false>(&a, x + i * sx, q + i * sq, n, at + i * dat);
      }
      return bits;
    };
    ForRowsBySide(a.bias, count, at, dat, a.rows_in_order, non_finite, [&](std::size_t k0, std::uint64_t mask, auto side) QUANTKIT_LAMBDA_INLINE {
      if (mask == 0) return;
      const auto k = static_cast<std::ptrdiff_t>(k0);
      FloatMaskRows<Out, Round, decltype(side)::value, decltype(clamps)::value>(
          a, store, x + k * sx, sx, q + k * sq, sq, mask, n, at + static_cast<std::int64_t>(k0) * dat, dat);
    });
  });
}

// The fast path's constants (FixedPointFast's) of up to 64 rows, made before the rows so
// that each row only broadcasts them from memory (load-port broadcasts) instead of computing
// them in scalar registers and broadcasting from there (a shuffle-unit op per constant and row,
// and the scalar chain in front of every row). xlo, xhi: BiasClamp's bounds (INT32_MIN - b for
// b < 0, else INT32_MIN; INT32_MAX - b for b > 0, else INT32_MAX). Entries of rows off the
// fast path are computed (shift counts masked) but never used.
struct FixedPointRowConstants {
  HWY_ALIGN std::uint64_t nudge[64];
  HWY_ALIGN std::int32_t q[64];
  HWY_ALIGN std::int32_t c[64];
  HWY_ALIGN std::int32_t xlo[64];
  HWY_ALIGN std::int32_t xhi[64];
  HWY_ALIGN std::int32_t right[64];
};

// Rows p0 + j * dp, j < m <= 64: their constants into t's entries from `to` (a multiple of 64;
// t: FixedPointRowConstants, or FixedPointLaneConstants), and the bits of the rows off the fast
// path (bit j: row j's constants are not the fast path's, !FixedPointFast::ok). Whole vectors
// of rows when contiguous (no MaskedLoad: Highway 1.0.3's needs aligned addresses below AVX2),
// the rest one by one. The vectors decide without 64-bit lanes: with u = |2 zp + 1|,
// s = right - 1, |c64| = u * 2^s, FixedPointFast's two int32 bounds on c64 -/+ |q| are
// |c64| + |q| <= INT32_MAX, i.e. u <= (INT32_MAX - |q|) >> s. Single rounding and the double
// shift (kFixedPointSingle): row by row (FixedPointFastOf).
template <class Scheme, class Table>
HWY_INLINE std::uint64_t FixedPointRowTable(const RequantizeArgs& a, std::int64_t p0, std::size_t m, std::int64_t dp,
                                            Table& t, std::size_t to = 0) {
  const std::int32_t* HWY_RESTRICT kq = a.k[0];
  const std::int32_t* HWY_RESTRICT kl = a.k[1];
  const std::int32_t* HWY_RESTRICT kr = a.k[2];
  const std::int32_t* HWY_RESTRICT kb = a.bias;
  const hn::ScalableTag<std::int32_t> di;
  const std::size_t N = hn::Lanes(di);
  std::uint64_t bits = 0;
  std::size_t j = 0;
  const std::int64_t u64 = 2 * std::int64_t{a.zero_point} + 1;
  if (!kFixedPointSingle<Scheme> && dp == 1 && (u64 < 0 ? -u64 : u64) <= kI32Max) {  // (else |c64| >= 2^31: every row slow)
    const hn::RebindToUnsigned<decltype(di)> du;
    const auto one = hn::Set(di, 1);
    const auto zero = hn::Zero(di);
    const auto u = hn::Set(du, static_cast<std::uint32_t>(u64));  // c = u << (right - 1) (wraps as c64's low half)
    const auto u_abs = hn::Abs(hn::BitCast(di, u));
    for (; j + N <= m; j += N) {
      const auto q = hn::LoadU(di, kq + p0 + j);
      const auto left = hn::LoadU(di, kl + p0 + j);
      const auto right = hn::LoadU(di, kr + p0 + j);
      const auto b = hn::LoadU(di, kb + p0 + j);
      const auto s = hn::BitCast(du, hn::And(hn::Sub(right, one), hn::Set(di, 31)));
      const auto c = hn::BitCast(di, hn::operator<<(u, s));
      const auto shape_ok = hn::And(hn::And(hn::Eq(left, zero), hn::Gt(right, zero)),
                                    hn::And(hn::Lt(right, hn::Set(di, 32)), hn::Ne(q, hn::Set(di, kI32Min))));
      const auto room = hn::Sub(hn::Set(du, static_cast<std::uint32_t>(kI32Max)), hn::BitCast(du, hn::Abs(q)));
      const auto fits = hn::Not(hn::Lt(hn::BitCast(di, hn::operator>>(room, s)), u_abs));  // <= 2^31 - 1: signed
      const auto q_ok = kUnsignedMulHigh ? hn::Not(hn::Lt(q, zero)) : hn::Eq(zero, zero);
      bits |= MaskBits64(di, hn::Not(hn::And(hn::And(shape_ok, fits), q_ok))) << j;
      hn::Store(kUnsignedMulHigh ? hn::Add(q, q) : q, di, t.q + to + j);  // StepMultiplier
      hn::Store(right, di, t.right + to + j);
      hn::Store(c, di, t.c + to + j);
      hn::Store(hn::Sub(hn::Set(di, kI32Min), hn::Min(b, zero)), di, t.xlo + to + j);  // BiasClamp
      hn::Store(hn::Sub(hn::Set(di, kI32Max), hn::Max(b, zero)), di, t.xhi + to + j);
#if HWY_TARGET != HWY_SCALAR
      // nudge = b * q + 2^30 + c * 2^31 in int64 lanes, the rows in order: each half promoted
      // (MulEven multiplies the low halves of the int64 lanes, sign-extended)
      const hn::Half<decltype(di)> dh;
      const hn::RepartitionToWide<decltype(di)> dw;
      const hn::RebindToUnsigned<decltype(dw)> du64;
      const auto nudge = [&](auto bh, auto qh, auto ch) HWY_ATTR {
        const auto q64 = hn::PromoteTo(dw, qh);
        const auto prod = hn::MulEven(hn::BitCast(di, hn::PromoteTo(dw, bh)), hn::BitCast(di, q64));
        const auto n = hn::BitCast(du64, hn::Add(hn::Add(prod, hn::Set(dw, std::int64_t{1} << 30)),
                                                 hn::ShiftLeft<31>(hn::PromoteTo(dw, ch))));
        // StepNudge (rows with q < 0 are off the fast path here)
        return kUnsignedMulHigh ? hn::Sub(hn::Add(n, n), hn::ShiftLeft<32>(hn::BitCast(du64, q64))) : n;
      };
      hn::Store(nudge(hn::LowerHalf(dh, b), hn::LowerHalf(dh, q), hn::LowerHalf(dh, c)), du64, t.nudge + to + j);
      hn::Store(nudge(hn::UpperHalf(dh, b), hn::UpperHalf(dh, q), hn::UpperHalf(dh, c)), du64, t.nudge + to + j + N / 2);
#else
      t.nudge[to + j] = StepNudge(static_cast<std::uint64_t>(std::int64_t{hn::GetLane(b)} * hn::GetLane(q)) +
                                 (std::uint64_t{1} << 30) + (static_cast<std::uint64_t>(std::int64_t{hn::GetLane(c)}) << 31),
                             hn::GetLane(q));
#endif
    }
  }
#if HWY_TARGET != HWY_SCALAR
  if constexpr (kFixedPointSingle<Scheme>) {
    if (dp == 1) {
      // FixedPointFast::Single (and DoubleShiftFast's mapping) on vectors: the int32 outputs in
      // int32 lanes, the checks and the nudge in int64 lanes, each half of the rows promoted.
      // Row by row it cost single rounding's rows of 49 values 10-15 % of their time.
      const hn::RebindToUnsigned<decltype(di)> du;
      const hn::Half<decltype(di)> dh;
      const hn::RepartitionToWide<decltype(di)> dw;
      const hn::RebindToUnsigned<decltype(dw)> du64;
      const auto zero = hn::Zero(di);
      const auto set_w = [&](std::int64_t v) HWY_ATTR { return hn::Set(dw, v); };
      // v << count (bits; count in [0, 63])
      const auto shl_w = [&](auto v, auto count) HWY_ATTR {
        return hn::BitCast(dw, hn::operator<<(hn::BitCast(du64, v), hn::BitCast(du64, count)));
      };
      const auto zero_w = set_w(0), one_w = set_w(1), v31_w = set_w(31), zp_w = set_w(a.zero_point);
      const auto min_w = set_w(kI32Min), max_w = set_w(kI32Max);
      const auto in = [&](auto v, auto lo, auto hi) HWY_ATTR { return hn::And(hn::Not(hn::Lt(v, lo)), hn::Not(hn::Gt(v, hi))); };
      // Bits of the half's rows off the fast path (bit i: row i of the half); their nudges into
      // t.nudge + at.
      const auto half = [&](auto k0h, auto k1h, auto bh, std::size_t at) HWY_ATTR {
        const auto k0 = hn::PromoteTo(dw, k0h), k1 = hn::PromoteTo(dw, k1h);
        auto q = k0, t1 = k1;  // single rounding's q and T - 1
        auto ok = hn::Eq(zero_w, zero_w);
        if constexpr (std::is_same<Scheme, RqDoubleShift>::value) {  // DoubleShiftFast
          const auto s1 = k0, s2 = k1;
          const auto q0 = hn::Add(shl_w(one_w, hn::And(s1, v31_w)), one_w);
          const auto low = hn::Not(hn::Gt(s2, v31_w));
          q = hn::IfThenElse(low, shl_w(q0, hn::And(hn::Sub(v31_w, s2), v31_w)), q0);
          t1 = hn::IfThenElse(low, set_w(30), hn::Sub(s2, one_w));
          ok = hn::And(hn::And(hn::Not(hn::Gt(q, max_w)), in(s1, zero_w, v31_w)), hn::Gt(s2, zero_w));
        }
        // FixedPointFast::Single
        const auto right = hn::Sub(t1, set_w(30));
        const auto sh = hn::And(right, v31_w);
        const auto tt = hn::And(hn::Add(t1, one_w), set_w(63));  // T
        const auto mag = hn::IfThenElse(hn::Lt(q, zero_w), hn::Sub(zero_w, q), q);
        const auto zs = shl_w(zp_w, sh);
        const auto rounding = hn::Max(hn::ShiftRight<1>(shl_w(one_w, sh)), one_w);  // (shl_w's >= 0)
        ok = hn::And(ok, hn::And(in(right, zero_w, v31_w), hn::Not(hn::Eq(q, min_w))));
        ok = hn::And(ok, hn::And(hn::Not(hn::Lt(hn::Sub(zs, mag), min_w)),
                                 hn::Not(hn::Gt(hn::Add(hn::Add(zs, rounding), mag), max_w))));
        if constexpr (kUnsignedMulHigh) ok = hn::And(ok, hn::Not(hn::Lt(q, zero_w)));
        // nudge = bias q + 2^(T-1) + zp 2^T, wrapping (bias and q as int32, as FixedPointFast's)
        const auto prod = hn::MulEven(hn::BitCast(di, hn::PromoteTo(dw, bh)), hn::BitCast(di, q));
        const auto n = hn::BitCast(du64, hn::Add(hn::Add(prod, shl_w(one_w, hn::And(hn::Sub(tt, one_w), set_w(63)))),
                                                 shl_w(zp_w, tt)));
        // StepNudge (rows with q < 0 are off the fast path on kUnsignedMulHigh's targets)
        const auto q_hi = hn::BitCast(du64, hn::ShiftLeft<32>(q));  // (uint32 q) << 32
        hn::Store(kUnsignedMulHigh ? hn::Sub(hn::Add(n, n), q_hi) : n, du64, t.nudge + to + at);
        return MaskBits64(dw, hn::Not(ok));
      };
      for (; j + N <= m; j += N) {
        const auto k0 = hn::LoadU(di, kq + p0 + j);
        const auto k1 = hn::LoadU(di, kl + p0 + j);
        const auto b = hn::LoadU(di, kb + p0 + j);
        auto q = k0, right = hn::Sub(k1, hn::Set(di, 30));
        if constexpr (std::is_same<Scheme, RqDoubleShift>::value) {
          // q's low half (the fast path's q fits int32), T - 31
          const auto one_u = hn::Set(du, 1u);
          const auto v31 = hn::Set(di, 31);
          const auto q0 = hn::BitCast(di, hn::Add(hn::operator<<(one_u, hn::BitCast(du, hn::And(k0, v31))), one_u));
          const auto low = hn::Not(hn::Gt(k1, v31));
          q = hn::IfThenElse(low, hn::BitCast(di, hn::operator<<(hn::BitCast(du, q0), hn::BitCast(du, hn::And(hn::Sub(v31, k1), v31)))), q0);
          right = hn::IfThenElse(low, zero, hn::Sub(k1, v31));
        }
        bits |= half(hn::LowerHalf(dh, k0), hn::LowerHalf(dh, k1), hn::LowerHalf(dh, b), j) << j;
        bits |= half(hn::UpperHalf(dh, k0), hn::UpperHalf(dh, k1), hn::UpperHalf(dh, b), j + N / 2) << (j + N / 2);
        hn::Store(kUnsignedMulHigh ? hn::Add(q, q) : q, di, t.q + to + j);  // StepMultiplier
        hn::Store(right, di, t.right + to + j);
        hn::Store(zero, di, t.c + to + j);
        hn::Store(hn::Sub(hn::Set(di, kI32Min), hn::Min(b, zero)), di, t.xlo + to + j);  // BiasClamp
        hn::Store(hn::Sub(hn::Set(di, kI32Max), hn::Max(b, zero)), di, t.xhi + to + j);
      }
    }
  }
#endif
  for (; j < m; ++j) {
    const std::int64_t p = p0 + static_cast<std::int64_t>(j) * dp;
    const FixedPointFast f = FixedPointFastOf<Scheme>(kq[p], kl[p], Scheme::kSlots > 2 ? kr[p] : 0, kb[p], a.zero_point);
    bits |= std::uint64_t{!f.ok} << j;
    t.nudge[to + j] = f.nudge;
    t.q[to + j] = f.q;
    t.c[to + j] = f.c;
    t.xlo[to + j] = f.xlo;
    t.xhi[to + j] = f.xhi;
    t.right[to + j] = f.right;
  }
  return bits;
}

// FloatMaskRows for FixedPointRows, over rows the fast path takes (the caller ran the others),
// with their constants from t (row i of mask: t's entry i); what a row's blocks leave goes out
// of line.
template <class Out, bool kClamp, int kSide, class Scheme>
HWY_NOINLINE void FixedPointMaskRows(const RequantizeArgs& a, const FixedPointRowConstants& t, const std::int32_t* x,
                                     std::ptrdiff_t sx, Out* q, std::ptrdiff_t sq, std::uint64_t mask, std::size_t n,
                                     std::int64_t at, std::int64_t dat) {
  const hn::ScalableTag<std::int32_t> di;
  const auto store = [&](auto stream, auto r0, auto r1, auto r2, auto r3, Out* to) QUANTKIT_LAMBDA_INLINE {
    StoreQuantized4<Out, decltype(stream)::value>(di, r0, r1, r2, r3, NoZeroPoint(), to);
  };
  // the call's output bounds set once (a dummy run's constants until the first row's)
  FixedPointStep<decltype(di), kClamp, kSide, kFixedPointSingle<Scheme>> step(di, FixedPointFast(1 << 30, 0, 1, 0, 0), a.lo,
                                                                           a.hi);
  if (n == 4 * hn::Lanes(di)) {
    return OneBlockRowPairs<Out>(di, step, store, x, sx, q, sq, mask, [&](auto& row_step, std::ptrdiff_t i) {
      row_step.SetRow(di, t, static_cast<std::size_t>(i));
    });
  }
  const std::size_t tail_at = n & ~(4 * hn::Lanes(di) - 1);
  const StepTail<Out, decltype(di)> tail(di, n - tail_at);
  for (; mask != 0; mask &= mask - 1) {
    const auto i = static_cast<std::ptrdiff_t>(hwy::Num0BitsBelowLS1Bit_Nonzero64(mask));
    const std::int32_t* xr = x + i * sx;
    Out* qr = q + i * sq;
    step.SetRow(di, t, static_cast<std::size_t>(i));
    const std::size_t done = StepBlocks4<Out, false>(di, a, step, store, xr, qr, n);
    if constexpr (kMaskedRowTail) {
      if (done < n) tail(di, step, store, xr + done, qr + done);
    } else {
      if (done < n) RequantizeRun<Out, Scheme, false>(&a, xr + done, qr + done, n - done, at + i * dat);
    }
  }
}

// Fixed point, ordinary stores: the rows grouped by their bias's side (ForRowsBySide), each
// group through FixedPointMaskRows.
template <class Out, bool kClamp, class Scheme>
HWY_NOINLINE void FixedPointRows(const RequantizeArgs& a, const std::int32_t* x, std::ptrdiff_t sx, Out* q,
                                 std::ptrdiff_t sq, std::size_t count, std::size_t n, std::int64_t at,
                                 std::int64_t dat) {
  FixedPointRowConstants t;  // of the 64 rows from k0
  // rows whose constants the fast path does not take through Scheme's general path; the
  // others' constants into t
  const auto slow = [&](std::size_t k0, std::size_t m) {
    const std::int64_t p0 = at + static_cast<std::int64_t>(k0) * dat;
    const std::uint64_t bits = FixedPointRowTable<Scheme>(a, p0, m, dat, t);
    for (std::uint64_t b = bits; b != 0; b &= b - 1) {
      const auto i = static_cast<std::ptrdiff_t>(k0 + hwy::Num0BitsBelowLS1Bit_Nonzero64(b));
      RequantizeRun<Out, Scheme, false>(&a, x + i * sx, q + i * sq, n, at + i * dat);
    }
    return bits;
  };
  ForRowsBySide(a.bias, count, at, dat, a.rows_in_order, slow, [&](std::size_t k0, std::uint64_t mask, auto side) QUANTKIT_LAMBDA_INLINE {
    if (mask == 0) return;
    const auto k = static_cast<std::ptrdiff_t>(k0);
    FixedPointMaskRows<Out, kClamp, decltype(side)::value, Scheme>(a, t, x + k * sx, sx, q + k * sq, sq, mask, n,
                                                                   at + static_cast<std::int64_t>(k0) * dat, dat);
  });
}

// ------------------------------ Channels on the innermost axis

// Per-channel requantization whose channels lie along the row (a GEMM's or MatMul's [batch,
// channels] accumulators, NHWC maps): every vector meets as many channels as lanes. The
// per-element run loaded each vector's constants and took the scheme's general Apply (both
// saturating adds, the rounding's selects): 13-22 % of per tensor's speed on AVX2 (Zen 4,
// [256, 16..1024], fixed point and float; 1 % for 3 channels). Here the fast paths' constants
// of a panel of up to kElementPanel channels are made once for up to kElementRowBlock rows (a
// panel of 64 channels, 64 rows at a time, made rows of 1024 channels 55 % of per tensor
// against 63 % with 256), and each vector loads its lanes' constants next to its input. Rows of
// a few channels back to back (NHWC maps of 16 or 24 channels) run as one stream whose
// constants repeat every lcm(n, 4 N) values; one row (batch 1) keeps the per-element run
// (ElementRows).
constexpr std::size_t kElementPanel = 256;
constexpr std::size_t kElementRowBlock = 64;

#if HWY_TARGET != HWY_SCALAR  // (one lane: the constant-parameter runs serve as well)

// The fixed-point fast path's constants (FixedPointRowTable's) of a panel's channels, with
// what the odd lanes' products need apart: each pair's odd multiplier in its even lane (where
// Shuffle2301 puts the odd inputs) and the nudges of the even and of the odd channels, in the
// order of the 64-bit lanes their products land in.
struct FixedPointLaneConstants {
  HWY_ALIGN std::int32_t q[kElementPanel];
  HWY_ALIGN std::int32_t q_odd[kElementPanel];
  HWY_ALIGN std::int32_t c[kElementPanel];
  HWY_ALIGN std::int32_t xlo[kElementPanel];
  HWY_ALIGN std::int32_t xhi[kElementPanel];
  HWY_ALIGN std::int32_t right[kElementPanel];
  HWY_ALIGN std::uint64_t nudge[kElementPanel];  // channel order (the pairs' come from it)
  HWY_ALIGN std::uint64_t nudge_even[kElementPanel / 2];
  HWY_ALIGN std::uint64_t nudge_odd[kElementPanel / 2];
};

// Entries m .. end - 1 of v: entry j - m (repeat: a stream of rows of m channels), else `none`.
template <class T, std::size_t kSize>
HWY_INLINE void FillLanes(T (&v)[kSize], std::size_t m, std::size_t end, bool repeat, T none) {
  if (repeat) {
    RepeatFirst(v, m, end);
    return;
  }
  for (std::size_t j = m; j < end; ++j) v[j] = none;
}

// The constants of the m channels from `at` into entries 0 .. m - 1 of k, and entries m .. end
// - 1 (end <= kElementPanel, even) as FillLanes' (neutral ones are computed, never stored);
// false if a channel is off the fast path (FixedPointFast::ok).
template <class Scheme>
HWY_INLINE bool FixedPointLaneTable(const RequantizeArgs& a, std::int64_t at, std::size_t m, std::size_t end,
                                    bool repeat, FixedPointLaneConstants& k) {
  for (std::size_t j0 = 0; j0 < m; j0 += 64)
    if (FixedPointRowTable<Scheme>(a, at + static_cast<std::int64_t>(j0), HWY_MIN(std::size_t{64}, m - j0), 1, k, j0) != 0)
      return false;
  FillLanes(k.q, m, end, repeat, 0);
  FillLanes(k.c, m, end, repeat, 0);
  FillLanes(k.xlo, m, end, repeat, kI32Min);
  FillLanes(k.xhi, m, end, repeat, kI32Max);
  FillLanes(k.right, m, end, repeat, 1);
  FillLanes(k.nudge, m, end, repeat, std::uint64_t{0});
  // (end: a multiple of the vectors' lanes)
  const hn::ScalableTag<std::int32_t> di;
  const hn::RebindToUnsigned<hn::RepartitionToWide<decltype(di)>> du64;
  const std::size_t N = hn::Lanes(di);
  for (std::size_t j = 0; j < end; j += N) {
    hn::Store(hn::DupOdd(hn::Load(di, k.q + j)), di, k.q_odd + j);
    const auto lo = hn::Load(du64, k.nudge + j), hi = hn::Load(du64, k.nudge + j + N / 2);
    hn::Store(hn::ConcatEven(du64, hi, lo), du64, k.nudge_even + j / 2);
    hn::Store(hn::ConcatOdd(du64, hi, lo), du64, k.nudge_odd + j / 2);
  }
  return true;
}

// FixedPointStep::Apply with the constants of lanes j .. j + N - 1 of the table (kBiasBoth:
// biases of either sign side by side).
template <class DI, bool kClamp, bool kSingle>
struct FixedPointLaneStep {
  using V = hn::Vec<DI>;
  const FixedPointLaneConstants& k;
  V lo, hi;
  HWY_INLINE FixedPointLaneStep(DI di, const FixedPointLaneConstants& constants, std::int32_t out_lo,
                                std::int32_t out_hi)
      : k(constants), lo(hn::Set(di, out_lo)), hi(hn::Set(di, out_hi)) {}
  HWY_INLINE V operator()(DI di, V v, std::size_t j) const {
    const V xc = hn::Min(hn::Max(v, hn::Load(di, k.xlo + j)), hn::Load(di, k.xhi + j));
    const V g = High(di, xc, j);
    const V h = kSingle ? g : hn::IfThenElse(hn::Lt(g, hn::Load(di, k.c + j)), hn::Sub(g, hn::Set(di, 1)), g);
    const V r = hn::operator>>(h, hn::Load(di, k.right + j));
    if constexpr (kClamp) {
      return hn::Min(hn::Max(r, lo), hi);
    } else {
      return r;
    }
  }
  // g = floor((xc * q + nudge) / 2^31) with each lane's q and nudge (FixedPointStep::High)
  HWY_INLINE V High(DI di, V xc, std::size_t j) const {
    const hn::RebindToUnsigned<Wide<DI>> du64;
    const auto ne = hn::Load(du64, k.nudge_even + j / 2);
    const auto no = hn::Load(du64, k.nudge_odd + j / 2);
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
    const hn::RebindToUnsigned<DI> du;
    const auto xu = hn::BitCast(du, hn::Xor(xc, hn::Set(di, kI32Min)));  // xc + 2^31
    const auto te = hn::Add(hn::MulEven(xu, hn::BitCast(du, hn::Load(di, k.q + j))), ne);
    const auto to = hn::Add(hn::MulEven(hn::BitCast(du, hn::ShiftRight<32>(hn::BitCast(du64, xu))),
                                        hn::BitCast(du, hn::Load(di, k.q_odd + j))),
                            no);
    const __m512i join = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
    return V{_mm512_permutex2var_epi32(te.raw, join, to.raw)};
#else
    const auto te = hn::Add(hn::BitCast(du64, hn::MulEven(xc, hn::Load(di, k.q + j))), ne);
    const auto to = hn::Add(hn::BitCast(du64, hn::MulEven(hn::Shuffle2301(xc), hn::Load(di, k.q_odd + j))), no);
    return hn::OddEven(hn::BitCast(di, hn::Add(to, to)), hn::BitCast(di, hn::ShiftRight<31>(te)));
#endif
  }
};

// The float fast path's constants of a panel's channels (FloatStep's for kBiasBoth, per lane).
struct FloatLaneConstants {
  HWY_ALIGN float m[kElementPanel];
  HWY_ALIGN std::int32_t bias[kElementPanel];
  HWY_ALIGN std::int32_t xlo[kElementPanel];  // BiasClamp
  HWY_ALIGN std::int32_t xhi[kElementPanel];
};

// FixedPointLaneTable for the float multiplier: false if a multiplier is not finite.
HWY_INLINE bool FloatLaneTable(const RequantizeArgs& a, std::int64_t at, std::size_t m, std::size_t end, bool repeat,
                               FloatLaneConstants& k) {
  const hn::ScalableTag<std::int32_t> di;
  const hn::RebindToFloat<decltype(di)> df;
  const std::size_t N = hn::Lanes(di);
  const float* HWY_RESTRICT kf = a.kf + at;
  const std::int32_t* HWY_RESTRICT kb = a.bias + at;
  const auto zero = hn::Zero(di);
  auto finite = hn::Eq(zero, zero);
  std::size_t j = 0;
  for (; j + N <= m; j += N) {
    const auto f = hn::LoadU(df, kf + j);
    const auto b = hn::LoadU(di, kb + j);
    finite = hn::And(finite, hn::RebindMask(di, hn::IsFinite(f)));
    hn::Store(f, df, k.m + j);
    hn::Store(b, di, k.bias + j);
    hn::Store(hn::Sub(hn::Set(di, kI32Min), hn::Min(b, zero)), di, k.xlo + j);  // BiasClamp
    hn::Store(hn::Sub(hn::Set(di, kI32Max), hn::Max(b, zero)), di, k.xhi + j);
  }
  bool all = hn::AllTrue(di, finite);
  for (; j < m; ++j) {
    const BiasClamp bc(kb[j]);
    all &= std::isfinite(kf[j]);
    k.m[j] = kf[j];
    k.bias[j] = kb[j];
    k.xlo[j] = bc.lo;
    k.xhi[j] = bc.hi;
  }
  FillLanes(k.m, m, end, repeat, 0.0f);
  FillLanes(k.bias, m, end, repeat, 0);
  FillLanes(k.xlo, m, end, repeat, kI32Min);
  FillLanes(k.xhi, m, end, repeat, kI32Max);
  return all;
}

// n values at x (to q) through step(di, v, o) with table offsets o that start at 0 and wrap
// at `cycle` (a multiple of N, at least 4 N; the table holds cycle + 3 N entries when it is not
// a multiple of 4 N; SIZE_MAX: no wrap): whole blocks of 4 vectors, then the rest
// as one block of masked loads into a buffer on kMaskedRowTail's targets (elsewhere the rest is
// the caller's). Returns the values done.
template <class Out, class DI, class Step, class Store>
HWY_INLINE std::size_t ElementRun(DI di, const Step& step, const Store& store, const std::int32_t* HWY_RESTRICT x,
                                  Out* HWY_RESTRICT q, std::size_t n, std::size_t cycle) {
  const std::size_t N = hn::Lanes(di);
  std::size_t j = 0, o = 0;
  for (; j + 4 * N <= n; j += 4 * N) {
    const auto r0 = step(di, hn::LoadU(di, x + j), o);
    const auto r1 = step(di, hn::LoadU(di, x + j + N), o + N);
    const auto r2 = step(di, hn::LoadU(di, x + j + 2 * N), o + 2 * N);
    const auto r3 = step(di, hn::LoadU(di, x + j + 3 * N), o + 3 * N);
    store(r0, r1, r2, r3, q + j);
    o += 4 * N;
    if (o >= cycle) o -= cycle;
  }
  if constexpr (kMaskedRowTail) {
    if (j == n) return n;
    const std::size_t rem = n - j;
    const auto part = [&](std::size_t v) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
      const std::size_t at = j + v * N;
      return step(di, rem >= (v + 1) * N ? hn::LoadU(di, x + at) : hn::MaskedLoad(hn::FirstN(di, rem - v * N), di, x + at),
                  o + v * N);
    };
    const auto r0 = part(0);
    const auto r1 = rem > N ? part(1) : r0;
    const auto r2 = rem > 2 * N ? part(2) : r0;
    const auto r3 = rem > 3 * N ? part(3) : r0;
    HWY_ALIGN Out buf[4 * kMaxLanes<std::int32_t>];
    store(r0, r1, r2, r3, buf);
    CopyFirst(buf, q + j, rem);
    return n;
  }
  return j;
}

// Rows of n channels (row k at x + k * sx, its channel j's parameters at at + j) through
// table(at_j, m, end, repeat) (the constants of m channels from at_j; false: off the fast path)
// and run(x, q, n, cycle) (ElementRun with the step on that table). Back-to-back rows whose
// constants repeat within a table's lcm(n, 4 N) <= kElementPanel values, or lcm(n, N) + 3 N
// (at least 4 N: AVX-512 rows of 5, 9, 10, 11, 20 channels): one stream (rows of 16 channels on
// AVX2 ran at 37 % of per tensor as a block's masked rest each; AVX-512 rows of 10 at 17-25 %);
// else panels of up
// to kElementPanel channels over blocks of kElementRowBlock rows (all rows for one panel). What
// the fast path does not take goes through the per-element run.
template <class Out, class Scheme, class Table, class Run>
HWY_INLINE void ElementRows(const RequantizeArgs& a, const std::int32_t* x, std::ptrdiff_t sx, Out* q,
                            std::ptrdiff_t sq, std::size_t count, std::size_t n, std::int64_t at, const Table& table,
                            const Run& run) {
  const std::size_t N = hn::Lanes(hn::ScalableTag<std::int32_t>());
  const auto per_element = [&](const std::int32_t* xr, Out* qr, std::size_t m, std::int64_t atj) {
    RequantizeRun<Out, Scheme, true>(&a, xr, qr, m, atj);
  };
  const auto un = static_cast<std::ptrdiff_t>(n);
  std::size_t cycle = std::lcm(n, 4 * N), end = cycle;
  // (the longer table only for a stream of at least twice its values: AVX-512 rows of 10, 16
  // rows per call 0.62 -> 0.52 Gelem/s with it, 32 rows even, 64 rows 1.28 -> 1.63)
  if (cycle > kElementPanel && std::lcm(n, N) >= 4 * N && count * n >= 2 * (std::lcm(n, N) + 3 * N)) {
    cycle = std::lcm(n, N);
    end = cycle + 3 * N;
  }
  if (kMaskedRowTail && count > 1 && sx == un && sq == un && end <= kElementPanel) {
    if (!table(at, n, end, true)) {
      for (std::size_t r = 0; r < count; ++r) per_element(x + r * n, q + r * n, n, at);
      return;
    }
    run(x, q, count * n, cycle);
    return;
  }
  if (count == 1) {  // (a panel's constants for one row cost more than the per-element run)
    per_element(x, q, n, at);
    return;
  }
  const std::size_t block = n <= kElementPanel ? count : kElementRowBlock;
  for (std::size_t r0 = 0; r0 < count; r0 += block) {
    const std::size_t rows = HWY_MIN(block, count - r0);
    for (std::size_t j0 = 0; j0 < n; j0 += kElementPanel) {
      const std::size_t m = HWY_MIN(kElementPanel, n - j0);
      const std::int64_t atj = at + static_cast<std::int64_t>(j0);
      const bool fast = table(atj, m, hwy::RoundUpTo(m, kMaxLanes<std::int32_t>), false);
      for (std::size_t r = r0; r < r0 + rows; ++r) {
        const std::int32_t* xr = x + static_cast<std::ptrdiff_t>(r) * sx + static_cast<std::ptrdiff_t>(j0);
        Out* qr = q + static_cast<std::ptrdiff_t>(r) * sq + static_cast<std::ptrdiff_t>(j0);
        const std::size_t done = fast ? run(xr, qr, m, ~std::size_t{0}) : 0;
        if (done < m) per_element(xr + done, qr + done, m - done, atj + static_cast<std::int64_t>(done));
      }
    }
  }
}

// Fixed point (double rounding, single rounding, N2D2's double shift), ordinary stores.
template <class Out, bool kClamp, class Scheme>
HWY_NOINLINE void FixedPointElementRows(const RequantizeArgs& a, const std::int32_t* x, std::ptrdiff_t sx, Out* q,
                                        std::ptrdiff_t sq, std::size_t count, std::size_t n, std::int64_t at) {
  const hn::ScalableTag<std::int32_t> di;
  FixedPointLaneConstants k;
  const FixedPointLaneStep<decltype(di), kClamp, kFixedPointSingle<Scheme>> step(di, k, a.lo, a.hi);
  const auto store = [&](auto r0, auto r1, auto r2, auto r3, Out* to) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
    StoreQuantized4<Out, false>(di, r0, r1, r2, r3, NoZeroPoint(), to);
  };
  ElementRows<Out, Scheme>(
      a, x, sx, q, sq, count, n, at,
      [&](std::int64_t atj, std::size_t m, std::size_t end, bool repeat) {
        return FixedPointLaneTable<Scheme>(a, atj, m, end, repeat, k);
      },
      [&](const std::int32_t* xr, Out* qr, std::size_t m, std::size_t cycle) QUANTKIT_LAMBDA_INLINE {
        return ElementRun<Out>(di, step, store, xr, qr, m, cycle);
      });
}

// Float multiplier (FloatStep with each lane's multiplier, bias and bias clamp), ordinary stores.
template <class Out, class Scheme>
HWY_NOINLINE void FloatElementRows(const RequantizeArgs& a, const std::int32_t* x, std::ptrdiff_t sx, Out* q,
                                   std::ptrdiff_t sq, std::size_t count, std::size_t n, std::int64_t at) {
  using Round = typename Scheme::Round;
  const hn::ScalableTag<std::int32_t> di;
  const hn::RebindToFloat<decltype(di)> df;
  FloatLaneConstants k;
  WithFloatStore<Out>(a, [&] { return SmallMultipliers(a.kf + at, n, 1); }, [&](auto clamps, const auto& store4) {
    using Step = FloatStep<decltype(di), Round, kBiasBoth, decltype(clamps)::value>;
    const Step base(di, 1.0f, 0, a.lo - a.zero_point, a.hi - a.zero_point);
    const auto step = [&](decltype(di), hn::Vec<decltype(di)> v, std::size_t j) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
      Step s = base;
      s.m = hn::Load(df, k.m + j);
      s.bias = hn::Load(di, k.bias + j);
      s.xlo = hn::Load(di, k.xlo + j);
      s.xb = hn::Load(di, k.xhi + j);
      return s.Apply(di, v);
    };
    const auto store = [&](auto r0, auto r1, auto r2, auto r3, Out* to) HWY_ATTR QUANTKIT_LAMBDA_INLINE {
      store4(std::false_type(), r0, r1, r2, r3, to);
    };
    ElementRows<Out, Scheme>(
        a, x, sx, q, sq, count, n, at,
        [&](std::int64_t atj, std::size_t m, std::size_t end, bool repeat) {
          return FloatLaneTable(a, atj, m, end, repeat, k);
        },
        [&](const std::int32_t* xr, Out* qr, std::size_t m, std::size_t cycle) QUANTKIT_LAMBDA_INLINE {
          return ElementRun<Out>(di, step, store, xr, qr, m, cycle);
        });
  });
}

// Runs::element_rows: rows of per-element parameters (row k's element j at at + k * dat + j).
// Rows sharing their parameters (dat == 0: channels on the innermost axis) take the panels of
// the fixed-point and float fast paths where the call's output bounds allow them (as
// RequantizeRows); others the per-element run row by row.
template <class Out, class Scheme>
void RequantizeElementRows(const void* args, const std::int32_t* x, std::ptrdiff_t sx, Out* q, std::ptrdiff_t sq,
                           std::size_t count, std::size_t n, std::int64_t at, std::int64_t dat) {
  const RequantizeArgs& a = *static_cast<const RequantizeArgs*>(args);
  const bool blocks = std::int64_t{a.lo} - a.zero_point >= kI32Min && std::int64_t{a.hi} - a.zero_point <= kI32Max;
  if (dat == 0 && blocks) {
    if constexpr (std::is_same<Scheme, RqFixedPointDouble>::value || kFixedPointSingle<Scheme>) {
      if (a.lo == std::numeric_limits<Out>::min() && a.hi == std::numeric_limits<Out>::max())
        return FixedPointElementRows<Out, false, Scheme>(a, x, sx, q, sq, count, n, at);
      return FixedPointElementRows<Out, true, Scheme>(a, x, sx, q, sq, count, n, at);
    }
    if constexpr (Scheme::kFloat) {
      if (FloatBoundsExact(a.lo - a.zero_point, a.hi - a.zero_point))
        return FloatElementRows<Out, Scheme>(a, x, sx, q, sq, count, n, at);
    }
  }
  for (std::size_t k = 0; k < count; ++k, x += sx, q += sq, at += dat) RequantizeRun<Out, Scheme, true>(args, x, q, n, at);
}
#endif  // HWY_TARGET != HWY_SCALAR

// Short rows with constant parameters (per-channel rows of small images): one call for all,
// a lean loop of whole 4-vector blocks per row; the rest of a row goes out of line.
template <class Out, class Scheme>
void RequantizeRows(const void* args, const std::int32_t* x, std::ptrdiff_t sx, Out* q, std::ptrdiff_t sq,
                    std::size_t count, std::size_t n, std::int64_t at, std::int64_t dat) {
  const RequantizeArgs& a = *static_cast<const RequantizeArgs*>(args);
  const bool blocks = std::int64_t{a.lo} - a.zero_point >= kI32Min && std::int64_t{a.hi} - a.zero_point <= kI32Max;
  // rows shorter than a block too where StepTail takes what the blocks leave
  const std::size_t min_row = kMaskedRowTail ? 1 : 4 * hn::Lanes(hn::ScalableTag<std::int32_t>());
  // (the row paths store as usual: in a streaming call, rows of at least kStreamRowMinBytes
  // take the loop below for its non-temporal stores)
  const bool row_paths = blocks && n >= min_row && (!a.stream || n * sizeof(Out) < kStreamRowMinBytes);
  if constexpr (std::is_same<Scheme, RqFixedPointDouble>::value || kFixedPointSingle<Scheme>) {
    if (row_paths) {
      // the saturating demotion (StoreQuantized4) clamps to the output type's range
      if (a.lo == std::numeric_limits<Out>::min() && a.hi == std::numeric_limits<Out>::max())
        return FixedPointRows<Out, false, Scheme>(a, x, sx, q, sq, count, n, at, dat);
      return FixedPointRows<Out, true, Scheme>(a, x, sx, q, sq, count, n, at, dat);
    }
  }
  if constexpr (Scheme::kFloat) {
    if (row_paths && FloatBoundsExact(a.lo - a.zero_point, a.hi - a.zero_point)) {
      return FloatRows<Out, typename Scheme::Round>(a, x, sx, q, sq, count, n, at, dat);
    }
  }
  for (std::size_t k = 0; k < count; ++k, x += sx, q += sq, at += dat) {
    const std::size_t i = blocks ? RequantizeBlocks4<Out, Scheme>(a, x, q, n, at) : 0;
    if (i < n) RequantizeRun<Out, Scheme, false>(args, x + i, q + i, n - i, at);
  }
}

// Runs::element_rows only for the schemes with a fast path (the others' would be the loop
// RunPlan makes).
template <class Out, class Scheme>
constexpr RowsFn<std::int32_t, Out> ElementRowsOf() {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (std::is_same<Scheme, RqFixedPointDouble>::value || kFixedPointSingle<Scheme> || Scheme::kFloat)
    return &RequantizeElementRows<Out, Scheme>;
#endif
  return nullptr;
}

template <class Out, class Scheme>
HWY_INLINE void RequantizeWith(const RequantizeArgs& a) {
  const Runs<std::int32_t, Out> runs{&RequantizeRun<Out, Scheme, false>,
                                     &RequantizeRun<Out, Scheme, true>,
                                     &a,
                                     false,
                                     &RequantizeRows<Out, Scheme>,
                                     ElementRowsOf<Out, Scheme>()};
  RunPlan(a.plan, a.acc, static_cast<Out*>(a.out), runs);
  if (a.stream) hwy::FlushStream();
}

template <RequantScheme kScheme, RoundingMode kMode>
struct SchemeOf;
template <RoundingMode kMode>
struct SchemeOf<RequantScheme::float_multiplier, kMode> {
  using type = RqFloat<typename RoundOpOf<kMode>::type>;
};
template <RoundingMode kMode>
struct SchemeOf<RequantScheme::power_of_two, kMode> {
  using type = RqPowerOfTwo<kMode>;
};
template <RoundingMode kMode>
struct SchemeOf<RequantScheme::fixed_point, kMode> {
  using type = RqFixedPointDouble;
};
template <RoundingMode kMode>
struct SchemeOf<RequantScheme::fixed_point_single, kMode> {
  using type = RqFixedPointSingle;
};
template <RoundingMode kMode>
struct SchemeOf<RequantScheme::single_shift, kMode> {
  using type = RqSingleShift;
};
template <RoundingMode kMode>
struct SchemeOf<RequantScheme::double_shift, kMode> {
  using type = RqDoubleShift;
};

// One output type, scheme and rounding: what static dispatch instantiates for a call site.
template <class Out, RequantScheme kScheme, RoundingMode kMode>
void RequantizeTyped(const RequantizeArgs& a) {
  RequantizeWith<Out, typename SchemeOf<kScheme, kMode>::type>(a);
}

template <class Out, RequantScheme kScheme>
HWY_INLINE void RequantizeRounded(const RequantizeArgs& a) {
  switch (a.rounding) {
    case RoundingMode::half_away: return RequantizeTyped<Out, kScheme, RoundingMode::half_away>(a);
    case RoundingMode::half_up: return RequantizeTyped<Out, kScheme, RoundingMode::half_up>(a);
    case RoundingMode::floor: return RequantizeTyped<Out, kScheme, RoundingMode::floor>(a);
    case RoundingMode::toward_zero:
      return RequantizeTyped<Out, kScheme, RoundingMode::toward_zero>(a);
    default: return RequantizeTyped<Out, kScheme, RoundingMode::half_even>(a);
  }
}

template <class Out>
HWY_INLINE void RequantizeTo(const RequantizeArgs& a) {
  constexpr RoundingMode kAny = RoundingMode::half_even;  // schemes without a rounding policy
  switch (a.scheme) {
    case RequantScheme::float_multiplier:
      return RequantizeRounded<Out, RequantScheme::float_multiplier>(a);
    case RequantScheme::power_of_two: return RequantizeRounded<Out, RequantScheme::power_of_two>(a);
    case RequantScheme::fixed_point: return RequantizeTyped<Out, RequantScheme::fixed_point, kAny>(a);
    case RequantScheme::fixed_point_single:
      return RequantizeTyped<Out, RequantScheme::fixed_point_single, kAny>(a);
    case RequantScheme::single_shift: return RequantizeTyped<Out, RequantScheme::single_shift, kAny>(a);
    case RequantScheme::double_shift: return RequantizeTyped<Out, RequantScheme::double_shift, kAny>(a);
  }
}

template <int kUnused = 0>
inline void Requantize(const RequantizeArgs& a) {
  switch (a.out_type) {
    case ElemType::i8: return RequantizeTo<std::int8_t>(a);
    case ElemType::u8: return RequantizeTo<std::uint8_t>(a);
    case ElemType::i16: return RequantizeTo<std::int16_t>(a);
    case ElemType::u16: return RequantizeTo<std::uint16_t>(a);
    case ElemType::i32: return RequantizeTo<std::int32_t>(a);
    case ElemType::f32: return;  // not an integer output
  }
}

// ------------------------------ Per-channel constants

// RequantConstantsArgs (abi.hpp): one vector of constants at a time, the last partial vector
// through buffers padded with copies of its first constant (same verdicts, no second formula).
// Shift counts are masked to 0..31 before shifting: the results of an uncovered constant are
// not used, but the shifts stay defined on every target. The ranges covered are those of the
// scalar requant_constants (api.hpp: per-tensor calls), which test_simd_kernels holds this to.
template <RequantScheme kScheme>
HWY_INLINE std::uint32_t RequantConstantsLoop(const RequantConstantsArgs& a) {
  constexpr bool kPairs = kScheme == RequantScheme::fixed_point || kScheme == RequantScheme::fixed_point_single ||
                          kScheme == RequantScheme::double_shift;
  constexpr std::size_t kWords = kPairs ? 2 : 1;
  constexpr bool kFloat = kScheme == RequantScheme::float_multiplier;
  constexpr bool kK1 = kScheme != RequantScheme::float_multiplier && kScheme != RequantScheme::single_shift;
  constexpr bool kK2 = kScheme == RequantScheme::power_of_two || kScheme == RequantScheme::fixed_point ||
                       kScheme == RequantScheme::double_shift;
  const hn::ScalableTag<std::int32_t> di;
  const hn::RebindToUnsigned<decltype(di)> du;
  const hn::RebindToFloat<decltype(di)> df;
  using VI = hn::Vec<decltype(di)>;
  using VU = hn::Vec<decltype(du)>;
  const std::size_t N = hn::Lanes(di);
  const auto* words = static_cast<const std::int32_t*>(a.constants);
  VU uncovered = hn::Zero(du), undefined = hn::Zero(du);  // all-ones lanes (MaskFromVec reads the sign)
  // lanes of v outside [lo, hi] as all-ones
  const auto outside = [&](VI v, std::int32_t lo, std::int32_t hi) HWY_ATTR {
    return hn::BitCast(du, hn::VecFromMask(di, hn::Or(hn::Lt(v, hn::Set(di, lo)), hn::Gt(v, hn::Set(di, hi)))));
  };
  const VU mask31 = hn::Set(du, 31u);
  const VU one = hn::Set(du, 1u);
  // one vector of constants (words w0, w1) -> k0, k1, k2 (kf: k0's bits)
  const auto convert = [&](VI w0, VI w1, VI& k0, VI& k1, VI& k2) HWY_ATTR {
    (void)w1;
    if constexpr (kScheme == RequantScheme::float_multiplier) {
      const VI exponent = hn::Set(di, 0x7f800000);
      uncovered = hn::Or(uncovered, hn::BitCast(du, hn::VecFromMask(di, hn::Eq(hn::And(w0, exponent), exponent))));
      k0 = w0;
    } else if constexpr (kScheme == RequantScheme::power_of_two) {
      undefined = hn::Or(undefined, outside(w0, a.shift_min[0], a.shift_max[0]));
      uncovered = hn::Or(uncovered, outside(w0, 0, 31));
      const VU s = hn::And(hn::BitCast(du, w0), mask31);
      k0 = w0;
      k1 = hn::BitCast(di, hn::Sub((one << s), one));
      const VU half = (one << hn::And(hn::Sub(s, one), mask31));
      k2 = hn::BitCast(di, hn::IfThenElse(hn::Eq(s, hn::Zero(du)), one, half));
    } else if constexpr (kScheme == RequantScheme::fixed_point) {
      undefined = hn::Or(undefined, outside(w1, a.shift_min[1], a.shift_max[1]));
      const VI left = hn::Max(w1, hn::Zero(di));
      // right in unsigned arithmetic (-INT_MIN is undefined): INT_MIN's 2^31 is uncovered
      const VU right = hn::IfThenElseZero(hn::RebindMask(du, hn::Lt(w1, hn::Zero(di))),
                                          hn::Sub(hn::Zero(du), hn::BitCast(du, w1)));
      const VU beyond = hn::AndNot(mask31, hn::Or(hn::BitCast(du, left), right));  // a shift past 31
      uncovered = hn::Or(uncovered, hn::VecFromMask(du, hn::Ne(beyond, hn::Zero(du))));
      k0 = w0;
      k1 = left;
      k2 = hn::BitCast(di, right);
    } else if constexpr (kScheme == RequantScheme::fixed_point_single) {
      undefined = hn::Or(undefined, outside(w1, a.shift_min[1], a.shift_max[1]));
      uncovered = hn::Or(uncovered, outside(w1, -31, 30));
      k0 = w0;
      k1 = hn::BitCast(di, hn::Sub(hn::Set(du, 30u), hn::BitCast(du, w1)));
    } else if constexpr (kScheme == RequantScheme::single_shift) {
      undefined = hn::Or(undefined, outside(w0, a.shift_min[0], a.shift_max[0]));
      uncovered = hn::Or(uncovered, outside(w0, 0, 63));
      k0 = hn::Min(w0, hn::Set(di, 31));  // int32 >> 31.. is the sign either way
    } else {  // double_shift
      undefined = hn::Or(undefined, hn::Or(outside(w0, a.shift_min[0], a.shift_max[0]),
                                           outside(w1, a.shift_min[1], a.shift_max[1])));
      uncovered = hn::Or(uncovered, hn::Or(outside(w0, 0, 31), outside(w1, 1, 31)));
      k0 = w0;
      k1 = w1;
      k2 = hn::BitCast(di, (one << hn::And(hn::Sub(hn::BitCast(du, w1), one), mask31)));
    }
  };
  const auto load = [&](const std::int32_t* p, VI& w0, VI& w1) HWY_ATTR {
    if constexpr (kPairs) {
      hn::LoadInterleaved2(di, p, w0, w1);
    } else {
      w0 = hn::LoadU(di, p);
      w1 = w0;
    }
  };
  // k0..k2 (or kf) at index i of o[] / of; only the scheme's slots (the others may be null)
  const auto store = [&](VI k0, VI k1, VI k2, std::int32_t* const* o, float* of, std::size_t i) HWY_ATTR {
    (void)k1;
    (void)k2;
    if constexpr (kFloat) {
      hn::StoreU(hn::BitCast(df, k0), df, of + i);
    } else {
      hn::StoreU(k0, di, o[0] + i);
      if constexpr (kK1) hn::StoreU(k1, di, o[1] + i);
      if constexpr (kK2) hn::StoreU(k2, di, o[2] + i);
    }
  };
  VI k0 = hn::Zero(di), k1 = k0, k2 = k0;
  std::size_t i = 0;
  if (a.broadcast) {
    std::int32_t c[2] = {0, 0};  // (memcpy: the words may be a float's)
    std::memcpy(c, words, kWords * sizeof(std::int32_t));
    const VI w0 = hn::Set(di, c[0]);
    convert(w0, kPairs ? hn::Set(di, c[1]) : w0, k0, k1, k2);
    for (; i + N <= a.count; i += N) store(k0, k1, k2, a.k, a.kf, i);
  } else {
    for (; i + N <= a.count; i += N) {
      VI w0, w1;
      load(words + kWords * i, w0, w1);
      convert(w0, w1, k0, k1, k2);
      store(k0, k1, k2, a.k, a.kf, i);
    }
  }
  if (i < a.count) {
    constexpr std::size_t kMax = HWY_MAX_BYTES / sizeof(std::int32_t);
    HWY_ALIGN std::int32_t in[kWords * kMax];
    // (zeroed: GCC 12 -O3 cannot see that the store fills what is read, and warns on SCALAR)
    HWY_ALIGN std::int32_t t0[kMax] = {}, t1[kMax] = {}, t2[kMax] = {};
    HWY_ALIGN float tf[kMax] = {};
    std::int32_t* const t[3] = {t0, t1, t2};
    const std::size_t rem = a.count - i;
    const std::int32_t* first = a.broadcast ? words : words + kWords * i;
    for (std::size_t j = 0; j < N; ++j) {
      const std::int32_t* from = a.broadcast || j >= rem ? first : first + kWords * j;
      std::memcpy(in + kWords * j, from, kWords * sizeof(std::int32_t));
    }
    VI w0, w1;
    load(in, w0, w1);
    convert(w0, w1, k0, k1, k2);
    store(k0, k1, k2, t, tf, 0);
    for (std::size_t j = 0; j < rem; ++j) {
      if constexpr (kFloat) {
        a.kf[i + j] = tf[j];
      } else {
        a.k[0][i + j] = t0[j];
        if constexpr (kK1) a.k[1][i + j] = t1[j];
        if constexpr (kK2) a.k[2][i + j] = t2[j];
      }
    }
  }
  std::uint32_t r = 0;
  if (!hn::AllFalse(du, hn::MaskFromVec(uncovered))) r |= kRequantUncovered;
  if (!hn::AllFalse(du, hn::MaskFromVec(undefined))) r |= kRequantUndefined;
  return r;
}

template <int kUnused = 0>
inline std::uint32_t RequantConstants(const RequantConstantsArgs& a) {
  switch (a.scheme) {
    case RequantScheme::float_multiplier: return RequantConstantsLoop<RequantScheme::float_multiplier>(a);
    case RequantScheme::power_of_two: return RequantConstantsLoop<RequantScheme::power_of_two>(a);
    case RequantScheme::fixed_point: return RequantConstantsLoop<RequantScheme::fixed_point>(a);
    case RequantScheme::fixed_point_single: return RequantConstantsLoop<RequantScheme::fixed_point_single>(a);
    case RequantScheme::single_shift: return RequantConstantsLoop<RequantScheme::single_shift>(a);
    case RequantScheme::double_shift: return RequantConstantsLoop<RequantScheme::double_shift>(a);
  }
  return kRequantUncovered;
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_REQUANTIZE_INL_H_ toggle
