// Per-target kernels for the executors' window ops (bytes for the integer mode, floats for the float one):
//   - MaxPairs: out unit i = bytewise max(in unit 2i, in unit 2i + 1), units of 1, 2, 4 or 8
//     bytes, int8 or uint8 values. Two passes of it make a 2x2 stride-2 MaxPool over whole
//     tensors (pairs of columns, then pairs of rows when a row is one unit), with no per-row loop.
//   - DepthwiseRows: sum[i] = sum_t w[t] * in[offset[t] + i] for i < n (uint8 in, int32 w and
//     sums, modulo 2^32): the taps of one depthwise plane over its padded width.
//   - DepthwiseRowsF32: the same in float for the float executor, each sum
//     ((+0 + w[0] x[0]) + w[1] x[1]) + ... with every product and sum rounded (no FMA): the sums
//     gemm_f32 makes over an im2col column matrix, so the two conv paths agree bit for bit.
// Vector targets: ConcatEven/ConcatOdd + Max; widened bytes times broadcast weights. SCALAR:
// the plain loops.

#if defined(QUANTKIT_SIMD_WINDOW_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QUANTKIT_SIMD_WINDOW_INL_H_
#undef QUANTKIT_SIMD_WINDOW_INL_H_
#else
#define QUANTKIT_SIMD_WINDOW_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <hwy/highway.h>

#include "quantkit/ref/no_contract.hpp"
#include "quantkit/simd/abi.hpp"
#include "quantkit/simd/common-inl.h"
#include "quantkit/simd/gemm_f32-inl.h"  // SgemmRounded

HWY_BEFORE_NAMESPACE();
namespace quantkit {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The bytewise max of two units (the scalar definition, also every tail).
template <class T>
HWY_INLINE void MaxUnit(const std::uint8_t* a, const std::uint8_t* b, std::size_t unit, std::uint8_t* out) {
  for (std::size_t j = 0; j < unit; ++j) {
    T x, y;
    std::memcpy(&x, a + j, 1);
    std::memcpy(&y, b + j, 1);
    const T m = x < y ? y : x;
    std::memcpy(out + j, &m, 1);
  }
}

template <class T>
HWY_INLINE void MaxPairsScalar(const std::uint8_t* in, std::size_t begin, std::size_t n_out, std::size_t unit,
                               std::uint8_t* out) {
  for (std::size_t i = begin; i < n_out; ++i) MaxUnit<T>(in + 2 * i * unit, in + (2 * i + 1) * unit, unit, out + i * unit);
}

#if HWY_TARGET != HWY_SCALAR
// Units as lanes of TU: even and odd lanes of two vectors, compared as bytes of type T.
template <class TU, class T>
HWY_INLINE std::size_t MaxPairsLanes(const std::uint8_t* in, std::size_t n_out, std::uint8_t* out) {
  const hn::ScalableTag<TU> d;
  const hn::Repartition<T, decltype(d)> db;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + N <= n_out; i += N) {
    const auto lo = hn::LoadU(d, reinterpret_cast<const TU*>(in + 2 * i * sizeof(TU)));
    const auto hi = hn::LoadU(d, reinterpret_cast<const TU*>(in + (2 * i + N) * sizeof(TU)));
    const auto m = hn::Max(hn::BitCast(db, hn::ConcatEven(d, hi, lo)), hn::BitCast(db, hn::ConcatOdd(d, hi, lo)));
    hn::StoreU(hn::BitCast(d, m), d, reinterpret_cast<TU*>(out + i * sizeof(TU)));
  }
  return i;
}

// Units of any other size: the two units' bytes a vector at a time.
template <class T>
HWY_INLINE std::size_t MaxPairsWide(const std::uint8_t* in, std::size_t n_out, std::size_t unit, std::uint8_t* out) {
  const hn::ScalableTag<T> d;
  const std::size_t N = hn::Lanes(d);
  if (unit < N) return 0;
  for (std::size_t i = 0; i < n_out; ++i) {
    const T* a = reinterpret_cast<const T*>(in + 2 * i * unit);
    const T* b = a + unit;
    T* o = reinterpret_cast<T*>(out + i * unit);
    std::size_t j = 0;
    for (; j + N <= unit; j += N) hn::StoreU(hn::Max(hn::LoadU(d, a + j), hn::LoadU(d, b + j)), d, o + j);
    j = unit - N;  // the last vector again, overlapping (max is idempotent)
    hn::StoreU(hn::Max(hn::LoadU(d, a + j), hn::LoadU(d, b + j)), d, o + j);
  }
  return n_out;
}

template <class T>
HWY_INLINE std::size_t MaxPairsVector(const std::uint8_t* in, std::size_t n_out, std::size_t unit, std::uint8_t* out) {
  switch (unit) {
    case 1: return MaxPairsLanes<std::uint8_t, T>(in, n_out, out);
    case 2: return MaxPairsLanes<std::uint16_t, T>(in, n_out, out);
    case 4: return MaxPairsLanes<std::uint32_t, T>(in, n_out, out);
    case 8: return MaxPairsLanes<std::uint64_t, T>(in, n_out, out);
    default: return MaxPairsWide<T>(in, n_out, unit, out);
  }
}
#endif

template <int kUnused = 0>
inline void MaxPairs(const std::uint8_t* in, std::size_t n_out, std::size_t unit, bool is_signed, std::uint8_t* out) {
  std::size_t done = 0;
#if HWY_TARGET != HWY_SCALAR
  done = is_signed ? MaxPairsVector<std::int8_t>(in, n_out, unit, out) : MaxPairsVector<std::uint8_t>(in, n_out, unit, out);
#endif
  if (is_signed)
    MaxPairsScalar<std::int8_t>(in, done, n_out, unit, out);
  else
    MaxPairsScalar<std::uint8_t>(in, done, n_out, unit, out);
}

template <int kUnused = 0>
inline void DepthwiseRows(const std::uint8_t* in, std::size_t n, const std::int32_t* w, const std::int64_t* offset,
                          std::size_t taps, std::int32_t* sum) {
  std::size_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<std::int32_t> d;
  const hn::Rebind<std::uint8_t, decltype(d)> d8;
  const std::size_t N = hn::Lanes(d);
  // Two vectors per pass: taps x 2 independent multiply-adds.
  for (; i + 2 * N <= n; i += 2 * N) {
    auto a0 = hn::Zero(d), a1 = hn::Zero(d);
    for (std::size_t t = 0; t < taps; ++t) {
      const auto wt = hn::Set(d, w[t]);
      const std::uint8_t* p = in + offset[t] + i;
      a0 = hn::Add(a0, hn::Mul(wt, hn::PromoteTo(d, hn::LoadU(d8, p))));
      a1 = hn::Add(a1, hn::Mul(wt, hn::PromoteTo(d, hn::LoadU(d8, p + N))));
    }
    hn::StoreU(a0, d, sum + i);
    hn::StoreU(a1, d, sum + i + N);
  }
  // The rest a vector at a time, the last one overlapping what is done (same values again).
  if (i < n && n >= N) {
    for (;; i += N) {
      if (i + N > n) i = n - N;
      auto a0 = hn::Zero(d);
      for (std::size_t t = 0; t < taps; ++t)
        a0 = hn::Add(a0, hn::Mul(hn::Set(d, w[t]), hn::PromoteTo(d, hn::LoadU(d8, in + offset[t] + i))));
      hn::StoreU(a0, d, sum + i);
      if (i + N == n) break;
    }
    i = n;
  }
#endif
  for (; i < n; ++i) {
    std::uint32_t s = 0;  // modulo 2^32, as the vector lanes
    for (std::size_t t = 0; t < taps; ++t)
      s += static_cast<std::uint32_t>(w[t]) * std::uint32_t{in[static_cast<std::size_t>(offset[t]) + i]};
    sum[i] = static_cast<std::int32_t>(s);
  }
}

// sum[i] = ((+0 + w[0] in[offset[0] + i]) + w[1] in[offset[1] + i]) + ... for i < n, every
// product rounded before its add (SgemmRounded: no contraction into FMA on any target).
template <int kUnused = 0>
inline void DepthwiseRowsF32(const float* in, std::size_t n, const float* w, const std::int64_t* offset,
                             std::size_t taps, float* sum) {
  std::size_t i = 0;
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128  // (EMU128's lanes are an array: no asm operand)
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  // Four vectors per pass: four independent add chains hide the add latency.
  for (; i + 4 * N <= n; i += 4 * N) {
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (std::size_t t = 0; t < taps; ++t) {
      const auto wt = hn::Set(d, w[t]);
      const float* p = in + offset[t] + i;
      a0 = hn::Add(a0, SgemmRounded(hn::Mul(wt, hn::LoadU(d, p))));
      a1 = hn::Add(a1, SgemmRounded(hn::Mul(wt, hn::LoadU(d, p + N))));
      a2 = hn::Add(a2, SgemmRounded(hn::Mul(wt, hn::LoadU(d, p + 2 * N))));
      a3 = hn::Add(a3, SgemmRounded(hn::Mul(wt, hn::LoadU(d, p + 3 * N))));
    }
    hn::StoreU(a0, d, sum + i);
    hn::StoreU(a1, d, sum + i + N);
    hn::StoreU(a2, d, sum + i + 2 * N);
    hn::StoreU(a3, d, sum + i + 3 * N);
  }
  // The rest a vector at a time, the last one overlapping what is done (the same sums again).
  if (i < n && n >= N) {
    for (;; i += N) {
      if (i + N > n) i = n - N;
      auto a0 = hn::Zero(d);
      for (std::size_t t = 0; t < taps; ++t)
        a0 = hn::Add(a0, SgemmRounded(hn::Mul(hn::Set(d, w[t]), hn::LoadU(d, in + offset[t] + i))));
      hn::StoreU(a0, d, sum + i);
      if (i + N == n) break;
    }
    i = n;
  }
#endif
  for (; i < n; ++i) {
    float s = 0.0f;
    for (std::size_t t = 0; t < taps; ++t)
      s = s + quantkit::detail::no_contract(w[t] * in[static_cast<std::size_t>(offset[t]) + i]);
    sum[i] = s;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_WINDOW_INL_H_ toggle
