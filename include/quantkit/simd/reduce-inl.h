// Per-target kernels for observers and packed formats: min/max and abs-max of the finite
// values, per-channel/per-block min/max (updated in place, Range::include order), histogram
// accumulation, and 2-/4-bit packing/unpacking (low bits first, ONNX order).

#if defined(QUANTKIT_SIMD_REDUCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QUANTKIT_SIMD_REDUCE_INL_H_
#undef QUANTKIT_SIMD_REDUCE_INL_H_
#else
#define QUANTKIT_SIMD_REDUCE_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "quantkit/simd/abi.hpp"
#include "quantkit/simd/common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace quantkit {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The first element equal to 0 (+0 or -0), for the sign of a zero min/max: std::min/std::max
// keep the first of equal values, and -0 == +0.
HWY_INLINE float FirstZero(const float* x, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto m = hn::Eq(hn::LoadU(d, x + i), hn::Zero(d));
    if (!hn::AllFalse(d, m)) {
      const std::intptr_t k = hn::FindFirstTrue(d, m);
      return x[i + static_cast<std::size_t>(k)];
    }
  }
  for (; i < n; ++i)
    if (x[i] == 0.0f) return x[i];
  return 0.0f;
}

// Min/max of the finite values of x[0..n), non-finite ones counted: one vector at a time with
// the finite filter. Returns the vector part's running accumulators through min/max (+-inf when
// nothing finite) and adds the count of non-finite values to *bad.
template <class D>
HWY_INLINE void MinMaxFiltered(D d, const float* x, std::size_t n, hn::Vec<D>& vmin,
                               hn::Vec<D>& vmax, std::size_t* bad) {
  const std::size_t N = hn::Lanes(d);
  const auto pinf = hn::Set(d, std::numeric_limits<float>::infinity());
  const auto ninf = hn::Neg(pinf);
  for (std::size_t i = 0; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    const auto f = hn::Lt(hn::Abs(v), pinf);  // false for NaN and +-inf
    vmin = hn::Min(vmin, hn::IfThenElse(f, v, pinf));
    vmax = hn::Max(vmax, hn::IfThenElse(f, v, ninf));
    if (!hn::AllTrue(d, f)) *bad += N - hn::CountTrue(d, f);
  }
}

// Blocks of kMinMaxBlock vectors run on raw values (4 min and 4 max accumulators, no filter)
// and a running sum per accumulator that becomes NaN or +-inf when the block holds a NaN or an
// infinity (or when finite values overflow it); only such blocks are scanned again with the
// finite filter. The min/max of a set of finite values does not depend on the order, and the
// sign of a zero result is decided afterwards by FirstZero, so this equals the sequential loop.
constexpr std::size_t kMinMaxBlock = 64;  // vectors per block (multiple of 4)

// Software prefetch of the cache lines kPrefetchAhead bytes past p (through an integer: the address
// may lie past the end of the array; prefetching it does not fault). Every 64-byte line of
// `bytes` bytes. Streaming from DRAM, min/max reaches memchr's bandwidth only with it.
constexpr std::size_t kPrefetchAhead = 4096;
HWY_INLINE void PrefetchAhead(const float* p, std::size_t bytes) {
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p) + kPrefetchAhead;
  for (std::size_t k = 0; k < bytes; k += 64) hwy::Prefetch(reinterpret_cast<const float*>(a + k));
}

template <int kUnused = 0>
inline MinMaxResult MinMax(const float* x, std::size_t n) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const std::size_t N = hn::Lanes(d);
  const V pinf = hn::Set(d, std::numeric_limits<float>::infinity());
  const V ninf = hn::Neg(pinf);
  V gmin = pinf, gmax = ninf;  // over the vector part, finite values only
  MinMaxResult r;
  const std::size_t block = kMinMaxBlock * N;
  std::size_t i = 0;
  for (; i + block <= n; i += block) {
    const float* p = x + i;
    V mn0 = hn::LoadU(d, p), mn1 = hn::LoadU(d, p + N), mn2 = hn::LoadU(d, p + 2 * N),
      mn3 = hn::LoadU(d, p + 3 * N);
    V mx0 = mn0, mx1 = mn1, mx2 = mn2, mx3 = mn3;
    V s0 = mn0, s1 = mn1, s2 = mn2, s3 = mn3;
    PrefetchAhead(p, 4 * N * sizeof(float));
    for (std::size_t j = 4 * N; j < block; j += 4 * N) {
      PrefetchAhead(p + j, 4 * N * sizeof(float));
      const V v0 = hn::LoadU(d, p + j);
      const V v1 = hn::LoadU(d, p + j + N);
      const V v2 = hn::LoadU(d, p + j + 2 * N);
      const V v3 = hn::LoadU(d, p + j + 3 * N);
      mn0 = hn::Min(mn0, v0);
      mx0 = hn::Max(mx0, v0);
      s0 = hn::Add(s0, v0);
      mn1 = hn::Min(mn1, v1);
      mx1 = hn::Max(mx1, v1);
      s1 = hn::Add(s1, v1);
      mn2 = hn::Min(mn2, v2);
      mx2 = hn::Max(mx2, v2);
      s2 = hn::Add(s2, v2);
      mn3 = hn::Min(mn3, v3);
      mx3 = hn::Max(mx3, v3);
      s3 = hn::Add(s3, v3);
    }
    // s0..s3 are all finite only if every value was (a NaN stays NaN, an infinity stays
    // infinite or becomes NaN); finite sums that overflow just take the slow path.
    const auto clean = hn::And(hn::And(hn::Lt(hn::Abs(s0), pinf), hn::Lt(hn::Abs(s1), pinf)),
                               hn::And(hn::Lt(hn::Abs(s2), pinf), hn::Lt(hn::Abs(s3), pinf)));
    if (HWY_LIKELY(hn::AllTrue(d, clean))) {
      gmin = hn::Min(gmin, hn::Min(hn::Min(mn0, mn1), hn::Min(mn2, mn3)));
      gmax = hn::Max(gmax, hn::Max(hn::Max(mx0, mx1), hn::Max(mx2, mx3)));
    } else {
      MinMaxFiltered(d, p, block, gmin, gmax, &r.nonfinite);
    }
  }
  {
    const std::size_t vec_end = i + ((n - i) / N) * N;
    MinMaxFiltered(d, x + i, vec_end - i, gmin, gmax, &r.nonfinite);
    i = vec_end;
  }
  // Only reduce when a vector saw a finite value: Highway 1.0.3's EMU128 MinOfLanes/MaxOfLanes
  // start from HighestValue/LowestValue (+-FLT_MAX), which would replace the +-inf identities.
  if (i > r.nonfinite) {
    r.min = hn::GetLane(hn::MinOfLanes(d, gmin));
    r.max = hn::GetLane(hn::MaxOfLanes(d, gmax));
  }
  for (; i < n; ++i) {
    const float v = x[i];
    if (!std::isfinite(v)) {
      ++r.nonfinite;
      continue;
    }
    if (v < r.min) r.min = v;
    if (v > r.max) r.max = v;
  }
  r.finite = n - r.nonfinite;
  if (r.min == 0.0f) r.min = FirstZero(x, n);
  if (r.max == 0.0f) r.max = FirstZero(x, n);
  return r;
}

template <int kUnused = 0>
inline AbsMaxResult AbsMax(const float* x, std::size_t n) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const std::size_t N = hn::Lanes(d);
  const V pinf = hn::Set(d, std::numeric_limits<float>::infinity());
  V m0 = hn::Zero(d), m1 = hn::Zero(d);
  AbsMaxResult r;
  std::size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const V a0 = hn::Abs(hn::LoadU(d, x + i));
    const V a1 = hn::Abs(hn::LoadU(d, x + i + N));
    m0 = hn::Max(m0, hn::IfThenElseZero(hn::Lt(a0, pinf), a0));
    m1 = hn::Max(m1, hn::IfThenElseZero(hn::Lt(a1, pinf), a1));
  }
  for (; i + N <= n; i += N) {
    const V a0 = hn::Abs(hn::LoadU(d, x + i));
    m0 = hn::Max(m0, hn::IfThenElseZero(hn::Lt(a0, pinf), a0));
  }
  r.absmax = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
  // Counting is separate: a compare per vector is cheaper than an int accumulator here.
  std::size_t bad = 0;
  const std::size_t vec_end = i;
  for (std::size_t j = 0; j < vec_end; j += N) {
    const auto fin = hn::Lt(hn::Abs(hn::LoadU(d, x + j)), pinf);
    if (!hn::AllTrue(d, fin)) bad += N - hn::CountTrue(d, fin);
  }
  for (; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (!(a < std::numeric_limits<float>::infinity())) {
      ++bad;
      continue;
    }
    if (a > r.absmax) r.absmax = a;
  }
  r.nonfinite = bad;
  r.finite = n - bad;
  return r;
}

// ------------------------------ Per-channel / per-block min/max

struct MinMaxRows {
  const MinMaxParamsArgs* a;
  std::size_t* nonfinite;

  // std::min/std::max into the parameter's running range (Range::include).
  HWY_INLINE void Merge(std::int64_t p, const MinMaxResult& r) const {
    if (r.min < a->min[p]) a->min[p] = r.min;
    if (r.max > a->max[p]) a->max[p] = r.max;
    *nonfinite += r.nonfinite;
  }

  // A run of n elements sharing parameter p.
  HWY_INLINE void Constant(const float* x, std::ptrdiff_t sx, std::size_t n, std::int64_t p) const {
    if (sx == 1) {
      Merge(p, MinMax(x, n));
      return;
    }
    HWY_ALIGN float buf[kChunk];
    for (std::size_t j = 0; j < n; j += kChunk) {
      const std::size_t m = n - j < kChunk ? n - j : kChunk;
      for (std::size_t k = 0; k < m; ++k)
        buf[k] = x[static_cast<std::ptrdiff_t>(j + k) * sx];
      Merge(p, MinMax(buf, m));
    }
  }

  // A row whose element j uses parameter p + j: lane-wise running min/max, exactly the
  // sequential std::min/std::max per parameter.
  HWY_INLINE void PerElement(const float* x, std::ptrdiff_t sx, std::size_t n, std::int64_t p) const {
    const hn::ScalableTag<float> d;
    using V = hn::Vec<decltype(d)>;
    const std::size_t N = hn::Lanes(d);
    const V pinf = hn::Set(d, std::numeric_limits<float>::infinity());
    float* mn = a->min + p;
    float* mx = a->max + p;
    HWY_ALIGN float buf[kChunk];
    for (std::size_t j = 0; j < n; j += kChunk) {
      const std::size_t m = n - j < kChunk ? n - j : kChunk;
      const float* xc = x + static_cast<std::ptrdiff_t>(j) * sx;
      if (sx != 1) {
        for (std::size_t k = 0; k < m; ++k) buf[k] = xc[static_cast<std::ptrdiff_t>(k) * sx];
        xc = buf;
      }
      std::size_t i = 0;
      for (; i + N <= m; i += N) {
        const V v = hn::LoadU(d, xc + i);
        const auto fin = hn::Lt(hn::Abs(v), pinf);
        const V cmin = hn::LoadU(d, mn + j + i);
        const V cmax = hn::LoadU(d, mx + j + i);
        hn::StoreU(hn::IfThenElse(hn::And(fin, hn::Lt(v, cmin)), v, cmin), d, mn + j + i);
        hn::StoreU(hn::IfThenElse(hn::And(fin, hn::Gt(v, cmax)), v, cmax), d, mx + j + i);
        if (!hn::AllTrue(d, fin)) *nonfinite += N - hn::CountTrue(d, fin);
      }
      for (; i < m; ++i) {
        const float v = xc[i];
        if (!std::isfinite(v)) {
          ++*nonfinite;
          continue;
        }
        if (v < mn[j + i]) mn[j + i] = v;
        if (v > mx[j + i]) mx[j + i] = v;
      }
    }
  }

  HWY_INLINE void operator()(std::int64_t in_off, std::int64_t /*out_off*/, std::int64_t base) const {
    const Plan& plan = a->plan;
    const int last = plan.rank - 1;
    const std::int64_t len = plan.shape[last];
    const std::ptrdiff_t sx = static_cast<std::ptrdiff_t>(plan.in_stride[last]);
    const float* xr = a->x + in_off;
    switch (plan.inner) {
      case InnerParams::constant: Constant(xr, sx, static_cast<std::size_t>(len), base); break;
      case InnerParams::per_element: PerElement(xr, sx, static_cast<std::size_t>(len), base); break;
      case InnerParams::blocks: {
        const std::int64_t b = plan.inner_block;
        for (std::int64_t j = 0; j < len; j += b)
          Constant(xr + j * sx, sx, static_cast<std::size_t>(len - j < b ? len - j : b), base + j / b);
        break;
      }
    }
  }
};

template <int kUnused = 0>
inline std::size_t MinMaxParams(const MinMaxParamsArgs& a) {
  std::size_t nonfinite = 0;
  const MinMaxRows rows{&a, &nonfinite};
  ForEachRow(a.plan, rows);
  return nonfinite;
}

// ------------------------------ Histogram

// One vector at a time straight into the uint64 counts (small inputs, many bins, the tail).
inline HistogramResult HistogramDirect(const HistogramArgs& a) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  using VI = hn::Vec<decltype(di)>;
  const std::size_t N = hn::Lanes(d);
  const V lo = hn::Set(d, a.lo);
  const V hi = hn::Set(d, a.hi);
  const V bins = hn::Set(d, static_cast<float>(a.bins));
  const V width = hn::Set(d, a.hi - a.lo);
  const VI last = hn::Set(di, static_cast<std::int32_t>(a.bins) - 1);
  const VI none = hn::Set(di, -1);
  HistogramResult r;
  HWY_ALIGN std::int32_t idx[kMaxLanes<std::int32_t>];
  std::size_t i = 0;
  for (; i + N <= a.n; i += N) {
    V v = hn::LoadU(d, a.x + i);
    if (a.absolute) v = hn::Abs(v);
    const auto below = hn::Lt(v, lo);
    const auto above = hn::Gt(v, hi);
    const auto nan = hn::IsNaN(v);
    const auto inside = hn::Not(hn::Or(hn::Or(below, above), nan));
    const V pos = hn::Div(hn::Mul(hn::Sub(v, lo), bins), width);
    VI bin = hn::Min(hn::ConvertTo(di, hn::IfThenElseZero(inside, pos)), last);
    bin = hn::IfThenElse(hn::RebindMask(di, inside), bin, none);
    hn::Store(bin, di, idx);
    for (std::size_t l = 0; l < N; ++l)
      if (idx[l] >= 0) ++a.counts[idx[l]];
    if (!hn::AllTrue(d, inside)) {
      r.below += hn::CountTrue(d, below);
      r.above += hn::CountTrue(d, above);
      r.nan += hn::CountTrue(d, nan);
    }
  }
  const float width_s = a.hi - a.lo;
  const float bins_s = static_cast<float>(a.bins);
  for (; i < a.n; ++i) {
    const float v = a.absolute ? std::fabs(a.x[i]) : a.x[i];
    if (std::isnan(v)) {
      ++r.nan;
    } else if (v < a.lo) {
      ++r.below;
    } else if (v > a.hi) {
      ++r.above;
    } else {
      // the quotient is +inf where (v - lo) * bins overflows (width * bins > FLT_MAX): the last bin
      const float q = ((v - a.lo) * bins_s) / width_s;
      const std::size_t b = q >= bins_s ? a.bins - 1 : static_cast<std::size_t>(q);
      ++a.counts[b];
    }
  }
  return r;
}

// Large inputs: bin indices of a block of kHistBlock values computed on vectors (no per-lane
// branch: values that are not binned go to a trash slot), then the increments from the uint32
// index buffer (one load feeds one increment's address: no shifts or zero-extensions to take
// 16-bit indices apart) into two interleaved uint16 sub-histograms (alternate values of the
// block go to alternate copies, so runs of one bin do not chain through one counter), flushed
// into the uint64 counts every kHistChunk values (at most kHistChunk / 2 per copy and counter).
constexpr std::size_t kHistBlock = 512;
constexpr std::size_t kHistChunk = std::size_t{1} << 16;  // multiple of kHistBlock

// The block loop shared by the histograms: indices(p, out) writes the slot indices (< slots
// <= 65536) of the N values at p as uint32; flush(h0, h1) adds the two sub-histograms to the
// counts.
// Returns the number of values done (whole blocks; the caller does the rest).
template <class Indices, class Flush>
HWY_INLINE std::size_t CountBlocks(const float* x, std::size_t n, std::size_t slots, Indices& indices,
                                   Flush& flush) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  std::vector<std::uint16_t> sub(2 * slots, 0);
  std::uint16_t* const h0 = sub.data();
  std::uint16_t* const h1 = sub.data() + slots;
  // Two index buffers: the increments of block i (from `cur`) are interleaved with the
  // index computation of block i + 1 (into `nxt`), so the vector and the load/store work overlap.
  HWY_ALIGN std::uint32_t idx_a[kHistBlock];
  HWY_ALIGN std::uint32_t idx_b[kHistBlock];
  std::uint32_t* cur = idx_a;
  std::uint32_t* nxt = idx_b;
  const std::size_t end = n - n % kHistBlock;
  // Groups of G values: whole vectors and whole pairs.
  const std::size_t G = N < 2 ? 2 : N;
  for (std::size_t c = 0; c < end; c += kHistChunk) {
    const std::size_t chunk_end = end - c < kHistChunk ? end : c + kHistChunk;
    for (std::size_t j = 0; j < kHistBlock; j += N) indices(x + c + j, cur + j);
    for (std::size_t i = c; i < chunk_end; i += kHistBlock) {
      const float* next = i + kHistBlock < chunk_end ? x + i + kHistBlock : nullptr;
      for (std::size_t j = 0; j < kHistBlock; j += G) {
        if (next != nullptr) {
          PrefetchAhead(next + j, G * sizeof(float));
          for (std::size_t q = j; q < j + G; q += N) indices(next + q, nxt + q);
        }
        for (std::size_t q = j; q < j + G; q += 2) {
          ++h0[cur[q]];
          ++h1[cur[q + 1]];
        }
      }
      std::uint32_t* t = cur;
      cur = nxt;
      nxt = t;
    }
    flush(h0, h1);
    std::fill(sub.begin(), sub.end(), std::uint16_t{0});
  }
  return end;
}

// Histogram's slots: [0, bins) the bins, `bins` the values whose quotient is exactly `bins`
// (v == hi, or rounding up to it: the last bin, as the clamp does), bins + 1 the trash
// (outside [lo, hi], NaN). The index of an inside value is computed with the same float
// operations as HistogramDirect: int(((v - lo) * bins) / (hi - lo)) (<= bins since v <= hi, but
// +inf where the product overflows, so the quotient is clamped to bins first: the last bin as
// HistogramDirect's clamp), so every value lands in the same bin.
//
// kMinMax: also the running min/max of the finite values (raw values while a vector is all
// inside [lo, hi], hence finite; the finite filter only in vectors that are not) into
// vmin/vmax and the count of non-finite values into *nonfinite.
// The running min/max of v's finite lanes; its non-finite lanes (NaN, +-Inf) counted.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void FiniteMinMaxStep(D d, V v, V& vmin, V& vmax, std::size_t& nonfinite) {
  const V pinf = hn::Set(d, std::numeric_limits<float>::infinity());
  const auto fin = hn::Lt(hn::Abs(v), pinf);  // false for NaN and +-Inf
  if (HWY_LIKELY(hn::AllTrue(d, fin))) {
    vmin = hn::Min(vmin, v);
    vmax = hn::Max(vmax, v);
  } else {
    nonfinite += hn::Lanes(d) - hn::CountTrue(d, fin);
    vmin = hn::Min(vmin, hn::IfThenElse(fin, v, pinf));
    vmax = hn::Max(vmax, hn::IfThenElse(fin, v, hn::Neg(pinf)));
  }
}

template <bool kAbsolute, bool kMinMax, class V>
HWY_INLINE std::size_t HistogramBlocks(const HistogramArgs& a, HistogramResult& r, V& vmin, V& vmax,
                                       std::size_t* nonfinite) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToUnsigned<decltype(d)> du;
  const V lo = hn::Set(d, a.lo);
  const V hi = hn::Set(d, a.hi);
  const V bins = hn::Set(d, static_cast<float>(a.bins));
  const V width = hn::Set(d, a.hi - a.lo);
  const auto trash = hn::Set(di, static_cast<std::int32_t>(a.bins + 1));
  auto flush = [&](const std::uint16_t* h0, const std::uint16_t* h1) {
    for (std::size_t b = 0; b < a.bins; ++b) a.counts[b] += std::uint64_t{h0[b]} + h1[b];
    a.counts[a.bins - 1] += std::uint64_t{h0[a.bins]} + h1[a.bins];
  };
  // Indices of the N values at p into out.
  auto indices = [&](const float* p, std::uint32_t* out) HWY_ATTR {
    V v = hn::LoadU(d, p);
    if (kAbsolute) v = hn::Abs(v);
    const auto inside = hn::And(hn::Ge(v, lo), hn::Le(v, hi));  // false for NaN
    // pos is in [0, bins] where inside (clamped: +inf where (v - lo) * bins overflows, i.e.
    // width * bins > FLT_MAX, would convert to an index past the slots); other lanes'
    // conversions are discarded
    const V pos = hn::Min(hn::Div(hn::Mul(hn::Sub(v, lo), bins), width), bins);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // one masked truncating conversion (ConvertTo adds an overflow fix-up)
    const hn::Vec<decltype(di)> bin{_mm512_mask_cvttps_epi32(trash.raw, inside.raw, pos.raw)};
#else
    // NaN/out-of-range lanes are zeroed before converting (converting NaN is undefined on the
    // scalar and emulated targets), then sent to the trash slot.
    const auto bin = hn::IfThenElse(hn::RebindMask(di, inside),
                                    hn::ConvertTo(di, hn::IfThenElseZero(inside, pos)), trash);
#endif
    hn::Store(hn::BitCast(du, bin), du, out);
    if (HWY_LIKELY(hn::AllTrue(d, inside))) {
      if (kMinMax) {  // all inside [lo, hi]: finite
        vmin = hn::Min(vmin, v);
        vmax = hn::Max(vmax, v);
      }
    } else {
      r.below += hn::CountTrue(d, hn::Lt(v, lo));
      r.above += hn::CountTrue(d, hn::Gt(v, hi));
      r.nan += hn::CountTrue(d, hn::IsNaN(v));
      if (kMinMax) FiniteMinMaxStep(d, v, vmin, vmax, *nonfinite);
    }
  };
  return CountBlocks(a.x, a.n, a.bins + 2, indices, flush);
}

// MinMax's result for x[0..n) from a fused pass over x[0..done): its running min/max vectors
// (finite values only) and non-finite count; the rest [done, n) by MinMax itself.
template <class D>
HWY_INLINE void FinishMinMax(D d, hn::Vec<D> vmin, hn::Vec<D> vmax, std::size_t nonfinite, std::size_t done,
                             const float* x, std::size_t n, MinMaxResult& m) {
  m = MinMaxResult{};
  // See MinMax: reduce only when a vector saw a finite value.
  if (done > nonfinite) {
    m.min = hn::GetLane(hn::MinOfLanes(d, vmin));
    m.max = hn::GetLane(hn::MaxOfLanes(d, vmax));
  }
  m.nonfinite = nonfinite;
  if (done < n) {
    const MinMaxResult t = MinMax(x + done, n - done);
    if (t.finite != 0) {
      if (t.min < m.min) m.min = t.min;
      if (t.max > m.max) m.max = t.max;
    }
    m.nonfinite += t.nonfinite;
  }
  m.finite = n - m.nonfinite;
  if (m.min == 0.0f) m.min = FirstZero(x, n);
  if (m.max == 0.0f) m.max = FirstZero(x, n);
}

template <int kUnused = 0>
inline HistogramResult Histogram(const HistogramArgs& a) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  V vmin = hn::Set(d, std::numeric_limits<float>::infinity());
  V vmax = hn::Neg(vmin);
  std::size_t nonfinite = 0;
  HistogramResult r;
  std::size_t done = 0;
  // The sub-histograms pay for zeroing and flushing 2 * (bins + 2) counters per chunk.
  if (a.bins + 2 <= 65536 && a.n >= 8 * a.bins && a.n >= kHistBlock) {
    if (a.minmax != nullptr)
      done = HistogramBlocks<false, true>(a, r, vmin, vmax, &nonfinite);
    else if (a.absolute)
      done = HistogramBlocks<true, false>(a, r, vmin, vmax, &nonfinite);
    else
      done = HistogramBlocks<false, false>(a, r, vmin, vmax, &nonfinite);
  }
  if (done < a.n) {
    HistogramArgs t = a;
    t.x = a.x + done;
    t.n = a.n - done;
    const HistogramResult rt = HistogramDirect(t);
    r.below += rt.below;
    r.above += rt.above;
    r.nan += rt.nan;
  }
  if (a.minmax != nullptr) FinishMinMax(d, vmin, vmax, nonfinite, done, a.x, a.n, *a.minmax);
  return r;
}

// ------------------------------ Grid histogram

// Bins (relative to base) of the values v, the scalar's floor step by step; `bins` (the
// trash slot) where not binned: NaN, +-Inf, |t| >= 2^31 (zeroed before converting, which is
// undefined on the scalar and emulated targets; outside any int32 grid) or outside [0, bins).
template <class D, class DI = hn::RebindToSigned<D>, class DU = hn::RebindToUnsigned<D>>
HWY_INLINE hn::Vec<DU> GridBins(D d, hn::Vec<D> v, hn::Vec<D> inv_width, hn::Vec<DI> base, hn::Vec<DU> bins) {
  const DI di;
  const DU du;
  const auto zero = hn::Zero(d);
  const auto t = hn::Mul(v, inv_width);
  const auto ok = hn::Lt(hn::Abs(t), hn::Set(d, 2147483648.0f));  // false for NaN and +-Inf
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // floor in one masked conversion (exact; ConvertTo adds an overflow fix-up); lanes not ok
  // get base + bins, which the modular step below sends to the trash slot
  const hn::Vec<DI> kb = hn::Add(base, hn::BitCast(di, bins));
  auto k = hn::Vec<DI>{_mm512_mask_cvt_roundps_epi32(kb.raw, ok.raw, t.raw, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)};
  k = hn::Add(k, hn::VecFromMask(di, hn::RebindMask(di, hn::And(hn::Lt(v, zero), hn::Eq(t, zero)))));
  return hn::Min(hn::BitCast(du, hn::Sub(k, base)), bins);
#else
  const auto tz = hn::IfThenElseZero(ok, t);
  auto k = hn::ConvertTo(di, tz);  // truncates; then -1 where that went up, and where v < 0
  k = hn::Add(k, hn::VecFromMask(di, hn::RebindMask(di, hn::Lt(tz, hn::ConvertTo(d, k)))));
  k = hn::Add(k, hn::VecFromMask(di, hn::RebindMask(di, hn::And(hn::Lt(v, zero), hn::Eq(t, zero)))));
  // modular: k - base lands in [0, bins) only for k in [base, base + bins)
  const auto b = hn::Min(hn::BitCast(du, hn::Sub(k, base)), bins);
  return hn::IfThenElse(hn::RebindMask(du, ok), b, bins);
#endif
}

// Large inputs through CountBlocks (slots: the bins and the trash), the rest one vector at a
// time straight into the uint64 counts, the tail one value at a time. Returns #counted. With
// a.minmax also MinMax's result, fused into the CountBlocks pass.
template <int kUnused = 0>
inline std::size_t GridHistogram(const GridHistogramArgs& a) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToUnsigned<decltype(d)> du;
  const std::size_t N = hn::Lanes(d);
  const auto inv_width = hn::Set(d, a.inv_width);
  const auto base = hn::Set(di, a.base);
  const auto bins = hn::Set(du, static_cast<std::uint32_t>(a.bins));
  std::size_t skipped = 0;
  std::size_t i = 0;
  // As Histogram: the sub-histograms pay for zeroing and flushing 2 * (bins + 1) counters.
  // a.minmax: the running min/max of the finite values of the CountBlocks part (the rest by
  // MinMax at the end, as Histogram does)
  using V = hn::Vec<decltype(d)>;
  const V pinf = hn::Set(d, std::numeric_limits<float>::infinity());
  V vmin = pinf;
  V vmax = hn::Neg(pinf);
  std::size_t nonfinite = 0;
  if (a.bins + 1 <= 65536 && a.n >= 8 * a.bins && a.n >= kHistBlock) {
    auto flush = [&](const std::uint16_t* h0, const std::uint16_t* h1) {
      for (std::size_t b = 0; b < a.bins; ++b) a.counts[b] += std::uint64_t{h0[b]} + h1[b];
      skipped += std::size_t{h0[a.bins]} + h1[a.bins];
    };
    // with the min/max step in the same pass or without (one block loop for each)
    const auto count = [&](auto min_max) HWY_ATTR {
      auto indices = [&](const float* p, std::uint32_t* out) HWY_ATTR {
        const V v = hn::LoadU(d, p);
        hn::Store(GridBins(d, v, inv_width, base, bins), du, out);
        if constexpr (decltype(min_max)::value) FiniteMinMaxStep(d, v, vmin, vmax, nonfinite);
      };
      return CountBlocks(a.x, a.n, a.bins + 1, indices, flush);
    };
    i = a.minmax != nullptr ? count(std::true_type{}) : count(std::false_type{});
  }
  if (a.minmax != nullptr) FinishMinMax(d, vmin, vmax, nonfinite, i, a.x, a.n, *a.minmax);
  HWY_ALIGN std::uint32_t idx[kMaxLanes<std::uint32_t>];
  for (; i + N <= a.n; i += N) {
    hn::Store(GridBins(d, hn::LoadU(d, a.x + i), inv_width, base, bins), du, idx);
    for (std::size_t l = 0; l < N; ++l) {
      if (idx[l] < a.bins)
        ++a.counts[idx[l]];
      else
        ++skipped;
    }
  }
  for (; i < a.n; ++i) {
    const float v = a.x[i];
    const float t = v * a.inv_width;
    std::int64_t b = -1;
    if (std::fabs(t) < 2147483648.0f) {
      b = static_cast<std::int64_t>(t);
      if (t < static_cast<float>(b) || (v < 0.0f && t == 0.0f)) --b;
      b -= a.base;
    }
    if (b >= 0 && b < static_cast<std::int64_t>(a.bins))
      ++a.counts[b];
    else
      ++skipped;
  }
  return a.n - skipped;
}

// ------------------------------ Packing

template <int kUnused = 0>
inline void Pack(const std::uint8_t* values, std::size_t n, int bits, std::uint8_t* packed) {
  std::size_t done = 0;  // values packed by the vector loops
#if HWY_TARGET == HWY_SCALAR
  (void)0;  // one lane: no byte/word reinterpretation; the loop below does it all
#else
  if (bits == 4) {
    const hn::ScalableTag<std::uint16_t> d16;
    const hn::RebindToSigned<decltype(d16)> di16;
    const hn::Repartition<std::uint8_t, decltype(d16)> d8;
    const hn::Rebind<std::uint8_t, decltype(d16)> d8h;
    const std::size_t N = hn::Lanes(d16);
    const std::size_t pairs = n / 2;
    std::size_t i = 0;
    for (; i + N <= pairs; i += N) {
      const auto w = hn::BitCast(d16, hn::LoadU(d8, values + 2 * i));  // v0 | v1 << 8
      const auto p = hn::Or(hn::And(w, hn::Set(d16, 0x000F)),
                            hn::And(hn::ShiftRight<4>(w), hn::Set(d16, 0x00F0)));
      hn::StoreU(hn::DemoteTo(d8h, hn::BitCast(di16, p)), d8h, packed + i);
    }
    done = 2 * i;
  } else if (bits == 2) {
    const hn::ScalableTag<std::uint32_t> d32;
    const hn::RebindToSigned<decltype(d32)> di32;
    const hn::Repartition<std::uint8_t, decltype(d32)> d8;
    const hn::Rebind<std::uint8_t, decltype(d32)> d8q;
    const std::size_t N = hn::Lanes(d32);
    const std::size_t quads = n / 4;
    std::size_t i = 0;
    for (; i + N <= quads; i += N) {
      const auto w = hn::BitCast(d32, hn::LoadU(d8, values + 4 * i));
      auto p = hn::And(w, hn::Set(d32, 0x03u));
      p = hn::Or(p, hn::And(hn::ShiftRight<6>(w), hn::Set(d32, 0x0Cu)));
      p = hn::Or(p, hn::And(hn::ShiftRight<12>(w), hn::Set(d32, 0x30u)));
      p = hn::Or(p, hn::And(hn::ShiftRight<18>(w), hn::Set(d32, 0xC0u)));
      hn::StoreU(hn::DemoteTo(d8q, hn::BitCast(di32, p)), d8q, packed + i);
    }
    done = 4 * i;
  }
#endif
  // Tail (and any other width): bytes from the first partially covered one.
  const std::size_t per_byte = static_cast<std::size_t>(8 / bits);
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t b = done / per_byte; b < (n + per_byte - 1) / per_byte; ++b) packed[b] = 0;
  for (std::size_t k = done; k < n; ++k)
    packed[k / per_byte] = static_cast<std::uint8_t>(
        packed[k / per_byte] | ((values[k] & mask) << ((k % per_byte) * static_cast<unsigned>(bits))));
}

template <int kUnused = 0>
inline void Unpack(const std::uint8_t* packed, std::size_t n, int bits, bool is_signed,
                   std::uint8_t* values) {
  std::size_t done = 0;
#if HWY_TARGET == HWY_SCALAR
  (void)0;
#else
  if (bits == 4) {
    const hn::ScalableTag<std::uint16_t> d16;
    const hn::Repartition<std::uint8_t, decltype(d16)> d8;
    const hn::Rebind<std::uint8_t, decltype(d16)> d8h;
    const std::size_t N = hn::Lanes(d16);
    const std::size_t bytes = n / 2;
    std::size_t i = 0;
    for (; i + N <= bytes; i += N) {
      const auto b = hn::PromoteTo(d16, hn::LoadU(d8h, packed + i));
      const auto w = hn::Or(hn::And(b, hn::Set(d16, 0x0F)),
                            hn::ShiftLeft<4>(hn::And(b, hn::Set(d16, 0xF0))));  // lo | hi << 8
      auto v = hn::BitCast(d8, w);
      if (is_signed) v = hn::Sub(hn::Xor(v, hn::Set(d8, 8)), hn::Set(d8, 8));
      hn::StoreU(v, d8, values + 2 * i);
    }
    done = 2 * i;
  } else if (bits == 2) {
    const hn::ScalableTag<std::uint32_t> d32;
    const hn::Repartition<std::uint8_t, decltype(d32)> d8;
    const hn::Rebind<std::uint8_t, decltype(d32)> d8q;
    const std::size_t N = hn::Lanes(d32);
    const std::size_t bytes = n / 4;
    std::size_t i = 0;
    for (; i + N <= bytes; i += N) {
      const auto b = hn::PromoteTo(d32, hn::LoadU(d8q, packed + i));
      auto w = hn::And(b, hn::Set(d32, 0x03u));
      w = hn::Or(w, hn::ShiftLeft<6>(hn::And(b, hn::Set(d32, 0x0Cu))));
      w = hn::Or(w, hn::ShiftLeft<12>(hn::And(b, hn::Set(d32, 0x30u))));
      w = hn::Or(w, hn::ShiftLeft<18>(hn::And(b, hn::Set(d32, 0xC0u))));
      auto v = hn::BitCast(d8, w);
      if (is_signed) v = hn::Sub(hn::Xor(v, hn::Set(d8, 2)), hn::Set(d8, 2));
      hn::StoreU(v, d8, values + 4 * i);
    }
    done = 4 * i;
  }
#endif
  const std::size_t per_byte = static_cast<std::size_t>(8 / bits);
  const unsigned mask = (1u << bits) - 1u;
  const unsigned sign = 1u << (bits - 1);
  for (std::size_t k = done; k < n; ++k) {
    unsigned v = (packed[k / per_byte] >> ((k % per_byte) * static_cast<unsigned>(bits))) & mask;
    if (is_signed && (v & sign)) v |= ~mask;
    values[k] = static_cast<std::uint8_t>(v);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_REDUCE_INL_H_ toggle
