// Per-target helpers shared by quantkit's kernels: row iteration over a Plan, staging of
// strided rows through buffers, and exact float rounding in every built-in mode.
//
// Highway per-target header: included once per target (HWY_TARGET_TOGGLE guard), defines
// quantkit::simd::HWY_NAMESPACE. Never include it directly: use quantkit/simd/simd.hpp.

#if defined(QUANTKIT_SIMD_COMMON_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QUANTKIT_SIMD_COMMON_INL_H_
#undef QUANTKIT_SIMD_COMMON_INL_H_
#else
#define QUANTKIT_SIMD_COMMON_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <hwy/highway.h>

#include "quantkit/simd/abi.hpp"

// After a lambda's parameter list: inline it like HWY_INLINE functions (GCC left generic
// lambdas holding kernel loops out of line, which measured 9-22 % slower).
#ifndef QUANTKIT_LAMBDA_INLINE
#if defined(__GNUC__) || defined(__clang__)
#define QUANTKIT_LAMBDA_INLINE __attribute__((always_inline))
#else
#define QUANTKIT_LAMBDA_INLINE
#endif
#endif

HWY_BEFORE_NAMESPACE();
namespace quantkit {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows of fewer output bytes than this take the short-row paths even in a streaming call: the
// per-row path's non-temporal part (whole aligned blocks of 4 vectors) would be little or
// nothing, behind a head loop per row.
constexpr std::size_t kStreamRowMinBytes = 1024;

// Elements staged through stack buffers when a row is strided (or needs uniforms).
constexpr std::size_t kChunk = 512;
// Upper bound of the lanes of any vector of T on this target (buffer sizes).
template <class T>
constexpr std::size_t kMaxLanes = HWY_MAX_BYTES / sizeof(T);

// Visits the rows of a plan in row-major order, calling row(in_offset, out_offset, param_base)
// with element offsets of the row's first element and the parameter index of its start.
template <class Row>
HWY_INLINE void ForEachRow(const Plan& p, const Row& row) {
  const int last = p.rank - 1;
  std::int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= p.shape[d];
  if (rows == 0 || p.shape[last] == 0) return;
  std::int64_t idx[max_rank] = {};
  std::int64_t in_off = 0, out_off = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t base = 0;
    for (int d = 0; d < last; ++d)
      base += (p.param_div[d] == 1 ? idx[d] : idx[d] / p.param_div[d]) * p.param_stride[d];
    row(in_off, out_off, base);
    for (int d = last - 1; d >= 0; --d) {
      in_off += p.in_stride[d];
      out_off += p.out_stride[d];
      if (++idx[d] < p.shape[d]) break;
      in_off -= p.in_stride[d] * p.shape[d];
      out_off -= p.out_stride[d] * p.shape[d];
      idx[d] = 0;
    }
  }
}

// One contiguous run of n elements whose parameters start at index `at` (per-element
// parameters: at + i for element i). `args` is the kernel's argument struct.
template <class In, class Out>
using RunFn = void (*)(const void* args, const In* x, Out* q, std::size_t n, std::int64_t at);

// `count` contiguous runs of n elements with constant parameters, run k at x + k * sx and
// q + k * sq with parameters at + k * dat (a kernel's own loop over short rows); as
// Runs::element_rows, element i of run k has the parameters at + k * dat + i instead.
template <class In, class Out>
using RowsFn = void (*)(const void* args, const In* x, std::ptrdiff_t sx, Out* q, std::ptrdiff_t sq,
                        std::size_t count, std::size_t n, std::int64_t at, std::int64_t dat);

// The run functions of one kernel instantiation: parameters constant over the run, or one per
// element. `staging`: always pass runs of at most kChunk elements (stochastic rounding).
template <class In, class Out>
struct Runs {
  RunFn<In, Out> constant;
  RunFn<In, Out> per_element;
  const void* args;
  bool staging;
  RowsFn<In, Out> rows = nullptr;  // optional: ConstantRuns in one call
  // optional: contiguous rows of per-element parameters (channels on the innermost axis) in
  // one call, so that a kernel can prepare the channels' constants once for many rows
  RowsFn<In, Out> element_rows = nullptr;
};

// `count` contiguous runs of n elements with constant parameters, run k at x + k * sx and
// q + k * sq with parameters at + k * dat: per-channel rows and per-group blocks straight to
// the run function, with no plan walking per run.
template <class In, class Out>
HWY_INLINE void ConstantRuns(const Runs<In, Out>& runs, const In* x, std::ptrdiff_t sx, Out* q,
                             std::ptrdiff_t sq, std::size_t count, std::size_t n, std::int64_t at,
                             std::int64_t dat) {
  if (runs.rows != nullptr) {
    runs.rows(runs.args, x, sx, q, sq, count, n, at, dat);
    return;
  }
  for (std::size_t k = 0; k < count; ++k) {
    runs.constant(runs.args, x, q, n, at);
    x += sx;
    q += sq;
    at += dat;
  }
}

// Runs one row of n elements with element strides sx, sq: contiguous rows go straight to the
// run function; strided rows (and staging kernels) go through kChunk-element buffers.
template <class In, class Out>
HWY_INLINE void RunRow(const Runs<In, Out>& runs, bool per_element, const In* x, std::ptrdiff_t sx,
                       Out* q, std::ptrdiff_t sq, std::size_t n, std::int64_t at) {
  const RunFn<In, Out> fn = per_element ? runs.per_element : runs.constant;
  if (sx == 1 && sq == 1 && !runs.staging) {
    fn(runs.args, x, q, n, at);
    return;
  }
  HWY_ALIGN In xb[kChunk];
  HWY_ALIGN Out qb[kChunk];
  for (std::size_t j = 0; j < n; j += kChunk) {
    const std::size_t m = n - j < kChunk ? n - j : kChunk;
    const In* xc = x + static_cast<std::ptrdiff_t>(j) * sx;
    if (sx != 1) {
      for (std::size_t k = 0; k < m; ++k) xb[k] = xc[static_cast<std::ptrdiff_t>(k) * sx];
      xc = xb;
    }
    Out* qd = q + static_cast<std::ptrdiff_t>(j) * sq;
    Out* qc = sq == 1 ? qd : qb;
    fn(runs.args, xc, qc, m, per_element ? at + static_cast<std::int64_t>(j) : at);
    if (sq != 1)
      for (std::size_t k = 0; k < m; ++k) qd[static_cast<std::ptrdiff_t>(k) * sq] = qb[k];
  }
}

// The row callback of ForEachRow for an element-wise kernel.
template <class In, class Out>
struct PlanRows {
  const Plan* plan;
  const In* x;
  Out* q;
  const Runs<In, Out>* runs;

  HWY_INLINE void operator()(std::int64_t in_off, std::int64_t out_off, std::int64_t base) const {
    const int last = plan->rank - 1;
    const std::int64_t len = plan->shape[last];
    const std::ptrdiff_t sx = static_cast<std::ptrdiff_t>(plan->in_stride[last]);
    const std::ptrdiff_t sq = static_cast<std::ptrdiff_t>(plan->out_stride[last]);
    const In* xr = x + in_off;
    Out* qr = q + out_off;
    switch (plan->inner) {
      case InnerParams::constant:
        RunRow(*runs, false, xr, sx, qr, sq, static_cast<std::size_t>(len), base);
        break;
      case InnerParams::per_element:
        RunRow(*runs, true, xr, sx, qr, sq, static_cast<std::size_t>(len), base);
        break;
      case InnerParams::blocks: {
        const std::int64_t b = plan->inner_block;
        std::int64_t j = 0;
        if (sx == 1 && sq == 1 && !runs->staging) {
          const std::int64_t full = len / b;
          ConstantRuns(*runs, xr, static_cast<std::ptrdiff_t>(b), qr, static_cast<std::ptrdiff_t>(b),
                       static_cast<std::size_t>(full), static_cast<std::size_t>(b), base, 1);
          j = full * b;
        }
        for (; j < len; j += b) {
          const std::int64_t m = len - j < b ? len - j : b;
          RunRow(*runs, false, xr + j * sx, sx, qr + j * sq, sq, static_cast<std::size_t>(m),
                 base + j / b);
        }
        break;
      }
    }
  }
};

// Walks a plan, calling the run functions per row (or block). One instantiation per
// (In, Out) pair: the rounding/scheme variants only differ in their run functions.
template <class In, class Out>
void RunPlan(const Plan& plan, const In* x, Out* q, const Runs<In, Out>& runs) {
  // One contiguous row with one parameter set (per-tensor calls): straight to the run function
  // (the walk below cost ~120 instructions, a tenth of a 4K-value quantize on Zen 5).
  if (plan.rank == 1 && plan.inner == InnerParams::constant && plan.in_stride[0] == 1 &&
      plan.out_stride[0] == 1 && !runs.staging) {
    if (plan.shape[0] > 0) runs.constant(runs.args, x, q, static_cast<std::size_t>(plan.shape[0]), 0);
    return;
  }
  // Rows with one parameter each (per-channel with the channel axis outside the row, or one
  // parameter set): one call per matrix of the two innermost dimensions.
  const int last = plan.rank - 1;
  if (!runs.staging && plan.rank >= 2 &&
      plan.inner == InnerParams::constant && plan.in_stride[last] == 1 &&
      plan.out_stride[last] == 1 && plan.param_div[last - 1] == 1 && plan.shape[last] > 0) {
    const std::ptrdiff_t sx = static_cast<std::ptrdiff_t>(plan.in_stride[last - 1]);
    const std::ptrdiff_t sq = static_cast<std::ptrdiff_t>(plan.out_stride[last - 1]);
    const auto count = static_cast<std::size_t>(plan.shape[last - 1]);
    const auto n = static_cast<std::size_t>(plan.shape[last]);
    const std::int64_t dat = plan.param_stride[last - 1];
    if (plan.rank == 2) {  // one matrix (the common per-channel case): no walk of `outer`
      ConstantRuns(runs, x, sx, q, sq, count, n, 0, dat);
      return;
    }
    Plan outer = plan;  // the rows of `outer` are the matrices' columns of rows
    outer.rank = plan.rank - 1;
    ForEachRow(outer, [&](std::int64_t in_off, std::int64_t out_off, std::int64_t base) {
      ConstantRuns(runs, x + in_off, sx, q + out_off, sq, count, n, base, dat);
    });
    return;
  }
  // Rows of per-element parameters (channels on the innermost axis: a GEMM's [batch,
  // channels] output, NHWC maps): one call per matrix of the two innermost dimensions, or for
  // the one row, when the kernel takes them together.
  if (runs.element_rows != nullptr && !runs.staging && plan.inner == InnerParams::per_element &&
      plan.in_stride[last] == 1 && plan.out_stride[last] == 1 && plan.shape[last] > 0) {
    const auto n = static_cast<std::size_t>(plan.shape[last]);
    if (plan.rank == 1) {
      runs.element_rows(runs.args, x, 0, q, 0, 1, n, 0, 0);
      return;
    }
    if (plan.param_div[last - 1] == 1) {
      const std::ptrdiff_t sx = static_cast<std::ptrdiff_t>(plan.in_stride[last - 1]);
      const std::ptrdiff_t sq = static_cast<std::ptrdiff_t>(plan.out_stride[last - 1]);
      const auto count = static_cast<std::size_t>(plan.shape[last - 1]);
      const std::int64_t dat = plan.param_stride[last - 1];
      if (plan.rank == 2) {
        runs.element_rows(runs.args, x, sx, q, sq, count, n, 0, dat);
        return;
      }
      Plan outer = plan;
      outer.rank = plan.rank - 1;
      ForEachRow(outer, [&](std::int64_t in_off, std::int64_t out_off, std::int64_t base) {
        runs.element_rows(runs.args, x + in_off, sx, q + out_off, sq, count, n, base, dat);
      });
      return;
    }
  }
  const PlanRows<In, Out> rows{&plan, x, q, &runs};
  ForEachRow(plan, rows);
}

// ------------------------------ Conversion

// Integral floats already clamped to the output's range -> int32. Highway's ConvertTo also fixes
// up out-of-range lanes (cvttps returns 0x80000000 there); these lanes cannot be out of range,
// so x86 targets take the bare instruction (three instructions less per vector).
template <class DI, class V>
HWY_INLINE hn::Vec<DI> ConvertInRange(DI di, V v) {
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  (void)di;
  return hn::Vec<DI>{_mm512_cvttps_epi32(v.raw)};
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  (void)di;
  return hn::Vec<DI>{_mm256_cvttps_epi32(v.raw)};
#elif HWY_ARCH_X86 && (HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3)
  (void)di;
  return hn::Vec<DI>{_mm_cvttps_epi32(v.raw)};
#else
  return hn::ConvertTo(di, v);
#endif
}

// ------------------------------ Stores

template <bool kStream, class D, class T>
HWY_INLINE void StoreVec(hn::Vec<D> v, D d, T* HWY_RESTRICT p) {
  if constexpr (kStream)
    hn::Stream(v, d, p);
  else
    hn::StoreU(v, d, p);
}

// Entries m .. end - 1 of v as the first m repeated (entry j = entry j mod m), by doubling copies:
// the channels-innermost paths' parameter tables (entry by entry, a stream of rows of 10
// channels' requantize tables (AVX-512, 128 entries) cost as much as requantizing 500 values).
template <class T>
HWY_INLINE void RepeatFirst(T* v, std::size_t m, std::size_t end) {
  for (std::size_t len = m; len < end; len *= 2) std::memcpy(v + len, v, HWY_MIN(len, end - len) * sizeof(T));
}

// The first count values of buf (aligned) to p (count * sizeof(T) <= 4 vectors' bytes): the
// last partial block of a row, computed into a buffer. Bytes and 16-bit values on AVX-512:
// masked byte stores (one per vector), nothing written past p + count; elsewhere, and for
// 32-bit values, memcpy: on an Emerald Rapids Xeon fake-quantize rows of 784 (a 16-value tail
// each) ran at 62 % of the memcpy version's speed with masked (or even whole-vector) stores,
// while int8 rows of 49 ran 30 % faster with them; why is not known.
template <class T>
HWY_INLINE void CopyFirst(const T* HWY_RESTRICT buf, T* HWY_RESTRICT p, std::size_t count) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (sizeof(T) <= 2) {
    const hn::ScalableTag<std::uint8_t> du8;
    const std::size_t N = hn::Lanes(du8);
    const std::size_t bytes = count * sizeof(T);
    auto* HWY_RESTRICT to = reinterpret_cast<std::uint8_t*>(p);
    const auto* HWY_RESTRICT from = reinterpret_cast<const std::uint8_t*>(buf);
    for (std::size_t o = 0; o < bytes; o += N)
      hn::BlendedStore(hn::Load(du8, from + o), hn::FirstN(du8, HWY_MIN(bytes - o, N)), du8, to + o);
    return;
  }
#endif
  std::memcpy(p, buf, count * sizeof(T));
}

// Streaming calls (past stream_threshold_bytes) read their input from memory as well: behind a
// block's arithmetic the core keeps too few loads in flight to cover DRAM latency, and the
// hardware prefetcher does not run far enough ahead. On the AVX2 EPYC (Zen 2) the f32 -> int8
// quantize kernel of 16M elements ran at 67 % of memcpy for the same bytes (a loop with the same
// loads and stores but no arithmetic at 91 %), and at 109 % prefetching 512 bytes ahead
// (stream_prefetch_bytes; bench_kernels --qk_stream_prefetch=0|512); requantize 56-65 % ->
// 99-109 %. NTA: the lines are not kept in L2/L3 (the call evicts them anyway). Not on AVX-512:
// on Zen 5 its kernels move 16M elements at 93-123 % of memcpy without it, and with it (the
// AVX-512 targets let through, one binary, --qk_stream_prefetch=0|512, medians of 3) requantize
// fell from 9.0 to 6.8 Gelem/s (fixed point) and 10.4 to 8.8 (float), int16 quantize 9.3 to
// 8.0, fake-quantize 6.8 to 6.0, int8 quantize 10.0 either way; 2048 bytes ahead was no better
// than none, 8192 only for fixed-point requantize (9.1 -> 10.2).
//
// Prefetches the cache lines `ahead` bytes past the `bytes` at p (a block's input) when kStream
// and ahead != 0. Addresses past the buffer's end are harmless: prefetches do not fault.
template <bool kStream>
HWY_INLINE void PrefetchStreamInput(const void* p, std::size_t bytes, std::size_t ahead) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_AVX3 && HWY_TARGET != HWY_AVX3_DL && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  if constexpr (kStream) {
    if (ahead == 0) return;
    const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(p) + ahead;
    for (std::size_t b = 0; b < bytes; b += 64) _mm_prefetch(reinterpret_cast<const char*>(at + b), _MM_HINT_NTA);
  }
#else
  (void)p;
  (void)bytes;
  (void)ahead;
#endif
}

// Elements before p reaches a multiple of `block` bytes, where non-temporal block stores can
// start; SIZE_MAX when it never does (p not aligned to its element size).
template <class T>
HWY_INLINE std::size_t ElementsToAlignment(const T* p, std::size_t block) {
  const std::size_t misaligned = reinterpret_cast<std::uintptr_t>(p) % block;
  if (misaligned == 0) return 0;
  if ((block - misaligned) % sizeof(T) != 0) return ~std::size_t{0};
  return (block - misaligned) / sizeof(T);
}

// A zero point of 0 known where the stores are instantiated (fixed-point requantize folds its
// zero point into the rounding constant): StoreQuantized4 and PackPair16 add nothing.
struct NoZeroPoint {};
template <class V>
HWY_INLINE V AddZeroPoint(V v, V z) {
  return hn::Add(v, z);
}
template <class V>
HWY_INLINE V AddZeroPoint(V v, NoZeroPoint) {
  return v;
}

#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX2)
// Two vectors of q - z plus z (in Out's range: exact), as 16-bit integers in one vector: the
// packs work per 128-bit block, a 64-bit lane permute restores the order. (DemoteTo is a
// vpmovsdw per vector on AVX-512: two uops on the shuffle port on Intel.)
template <class D16, class VI, class Z>
HWY_INLINE hn::Vec<D16> PackPair16(D16 /*d16*/, VI v0, VI v1, Z z) {
  using Out = hn::TFromD<D16>;
  static_assert(sizeof(Out) == 2, "PackPair16: 16-bit outputs only");
  constexpr bool kSigned = std::is_signed<Out>::value;
  const auto a = AddZeroPoint(v0, z).raw, b = AddZeroPoint(v1, z).raw;
#if HWY_TARGET == HWY_AVX2
  return hn::Vec<D16>{_mm256_permute4x64_epi64(kSigned ? _mm256_packs_epi32(a, b) : _mm256_packus_epi32(a, b), 0xd8)};
#else
  return hn::Vec<D16>{_mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7),
                                               kSigned ? _mm512_packs_epi32(a, b) : _mm512_packus_epi32(a, b))};
#endif
}
#endif

// Four vectors of q - z (int32, in [lo - z, hi - z]) plus z, stored as Out. Bytes on x86: two
// saturating packs to int16, add z there, one pack to bytes, one permute for the lane order, one
// store (instead of four demotions and four partial stores). z: a vector, or NoZeroPoint.
template <class Out, bool kStream, class DI, class VI = hn::Vec<DI>, class Z = VI>
HWY_INLINE void StoreQuantized4(DI di, VI v0, VI v1, VI v2, VI v3, Z z, Out* HWY_RESTRICT p) {
  constexpr bool kBytes = sizeof(Out) == 1;
  constexpr bool kSigned = std::is_signed<Out>::value;
  constexpr bool kAddZ = !std::is_same<Z, NoZeroPoint>::value;
  (void)kBytes;
  (void)kSigned;
  (void)kAddZ;
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX2)
  if constexpr (sizeof(Out) == 2) {  // pairs of vectors, one store each
    const hn::Repartition<Out, DI> d16;
    StoreVec<kStream>(PackPair16(d16, v0, v1, z), d16, p);
    StoreVec<kStream>(PackPair16(d16, v2, v3, z), d16, p + hn::Lanes(d16));
    return;
  }
#endif
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  if constexpr (kBytes) {
    (void)di;
    __m512i ab = _mm512_packs_epi32(v0.raw, v1.raw), cd = _mm512_packs_epi32(v2.raw, v3.raw);
    if constexpr (kAddZ) {
      const __m512i z16 = _mm512_packs_epi32(z.raw, z.raw);
      ab = _mm512_add_epi16(ab, z16);
      cd = _mm512_add_epi16(cd, z16);
    }
    const __m512i r = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
        kSigned ? _mm512_packs_epi16(ab, cd) : _mm512_packus_epi16(ab, cd));
    if constexpr (kStream)
      _mm512_stream_si512(reinterpret_cast<__m512i*>(p), r);
    else
      _mm512_storeu_si512(reinterpret_cast<void*>(p), r);
    return;
  }
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  if constexpr (kBytes) {
    (void)di;
    __m256i ab = _mm256_packs_epi32(v0.raw, v1.raw), cd = _mm256_packs_epi32(v2.raw, v3.raw);
    if constexpr (kAddZ) {
      const __m256i z16 = _mm256_packs_epi32(z.raw, z.raw);
      ab = _mm256_add_epi16(ab, z16);
      cd = _mm256_add_epi16(cd, z16);
    }
    const __m256i r = _mm256_permutevar8x32_epi32(
        kSigned ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd),
        _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    if constexpr (kStream)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p), r);
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), r);
    return;
  }
#elif HWY_ARCH_X86 && (HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3)
  if constexpr (kBytes && hn::MaxLanes(di) == 4) {
    __m128i ab = _mm_packs_epi32(v0.raw, v1.raw), cd = _mm_packs_epi32(v2.raw, v3.raw);
    if constexpr (kAddZ) {
      const __m128i z16 = _mm_packs_epi32(z.raw, z.raw);
      ab = _mm_add_epi16(ab, z16);
      cd = _mm_add_epi16(cd, z16);
    }
    const __m128i r = kSigned ? _mm_packs_epi16(ab, cd) : _mm_packus_epi16(ab, cd);
    if constexpr (kStream)
      _mm_stream_si128(reinterpret_cast<__m128i*>(p), r);
    else
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), r);
    return;
  }
#endif
  const std::size_t N = hn::Lanes(di);
  if constexpr (std::is_same<Out, std::int32_t>::value) {
    StoreVec<kStream>(AddZeroPoint(v0, z), di, p);
    StoreVec<kStream>(AddZeroPoint(v1, z), di, p + N);
    StoreVec<kStream>(AddZeroPoint(v2, z), di, p + 2 * N);
    StoreVec<kStream>(AddZeroPoint(v3, z), di, p + 3 * N);
  } else {
    const hn::Rebind<Out, DI> dq;
    hn::StoreU(hn::DemoteTo(dq, AddZeroPoint(v0, z)), dq, p);
    hn::StoreU(hn::DemoteTo(dq, AddZeroPoint(v1, z)), dq, p + N);
    hn::StoreU(hn::DemoteTo(dq, AddZeroPoint(v2, z)), dq, p + 2 * N);
    hn::StoreU(hn::DemoteTo(dq, AddZeroPoint(v3, z)), dq, p + 3 * N);
  }
}

#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
// Four vectors of offsets R(t) <= hi - z (int32, 64 values) to bytes. Only the upper clamp was
// done in float (4 Max less per 64 values). Below, saturation clamps: int32 -> int16
// saturating, + z saturating, -> bytes saturating, then one byte Max with qmin. Every step is
// monotone and exact inside its range, so the result is clamp(v + z, qmin, qmax) as with the
// float clamps (|z| <= 255 keeps a saturated -32768 + z negative). z16: z in every int16 lane.
template <class Out>
struct ByteBlockPacker {
  __m512i z16, qmin8, order;
  HWY_INLINE ByteBlockPacker(__m512i z16_, float qmin)
      : z16(z16_),
        qmin8(_mm512_set1_epi8(std::is_integral<Out>::value ? static_cast<char>(static_cast<Out>(qmin)) : 0)),  // float: unused
        order(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)) {}
  template <bool kStream>
  HWY_INLINE void Store(__m512i v0, __m512i v1, __m512i v2, __m512i v3, Out* HWY_RESTRICT q) const {
    const __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(v0, v1), z16);
    const __m512i cd = _mm512_adds_epi16(_mm512_packs_epi32(v2, v3), z16);
    const __m512i r = std::is_signed<Out>::value ? _mm512_max_epi8(_mm512_packs_epi16(ab, cd), qmin8)
                                                 : _mm512_max_epu8(_mm512_packus_epi16(ab, cd), qmin8);
    const __m512i out = _mm512_permutexvar_epi32(order, r);
    if constexpr (kStream)
      _mm512_stream_si512(reinterpret_cast<__m512i*>(q), out);
    else
      _mm512_storeu_si512(reinterpret_cast<void*>(q), out);
  }
  // Two vectors (32 values): the same with the pair twice; its first 32 bytes are the result.
  template <bool kStream = false>
  HWY_INLINE void StorePair(__m512i v0, __m512i v1, Out* HWY_RESTRICT q) const {
    const __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(v0, v1), z16);
    const __m512i r = std::is_signed<Out>::value ? _mm512_max_epi8(_mm512_packs_epi16(ab, ab), qmin8)
                                                 : _mm512_max_epu8(_mm512_packus_epi16(ab, ab), qmin8);
    const __m256i out = _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, r));
    if constexpr (kStream)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(q), out);
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), out);
  }
};
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
// The same for AVX2: four vectors of 8 offsets to 32 bytes (the packs work within 128-bit
// halves; a dword permute restores the order).
template <class Out>
struct ByteBlockPacker {
  __m256i z16, qmin8, order;
  HWY_INLINE ByteBlockPacker(__m256i z16_, float qmin)
      : z16(z16_),
        qmin8(_mm256_set1_epi8(static_cast<char>(static_cast<Out>(qmin)))),
        order(_mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)) {}
  template <bool kStream>
  HWY_INLINE void Store(__m256i v0, __m256i v1, __m256i v2, __m256i v3, Out* HWY_RESTRICT q) const {
    const __m256i ab = _mm256_adds_epi16(_mm256_packs_epi32(v0, v1), z16);
    const __m256i cd = _mm256_adds_epi16(_mm256_packs_epi32(v2, v3), z16);
    const __m256i r = std::is_signed<Out>::value ? _mm256_max_epi8(_mm256_packs_epi16(ab, cd), qmin8)
                                                 : _mm256_max_epu8(_mm256_packus_epi16(ab, cd), qmin8);
    const __m256i out = _mm256_permutevar8x32_epi32(r, order);
    if constexpr (kStream)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(q), out);
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), out);
  }
};
#endif

// ------------------------------ Rounding of floats to integral floats
// Each op equals the scalar policy (quantkit/policy/rounding.hpp) for every float, including
// ties, huge values and infinities. Round-half-even is the hardware instruction where there is
// one (SSE4 and up); elsewhere it is the 2^23 trick (t + 2^23 - 2^23 in the current,
// round-to-nearest-even mode), exact for |t| < 2^23 and cheaper than Highway's emulation.

struct RoundHalfEvenOp {
  static constexpr bool kStochastic = false;
  template <class D, class V>
  static HWY_INLINE V Do(D d, V t, V /*u*/) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SSSE3 && HWY_TARGET != HWY_SCALAR && \
    HWY_TARGET != HWY_EMU128
    (void)d;
    return hn::Round(t);
#else
    const V big = hn::Set(d, 8388608.0f);  // 2^23: no fraction bits left
    const V large = hn::CopySignToAbs(big, t);
    const V rounded = hn::Sub(hn::Add(t, large), large);
    return hn::IfThenElse(hn::Lt(hn::Abs(t), big), rounded, t);
#endif
  }
};

// std::round as GCC vectorizes it: trunc(|t| + pred(0.5)) with t's sign. pred(0.5) (not 0.5)
// keeps |t| = 0.5 - 2^-25 below 1; past 2^22 the sum rounds to the nearest representable value,
// which is the half-away result. Bit-identical to std::round on every float, the sign of zero
// included (all 2^32 bit patterns: tools/golden/round_half_away_exhaustive.c); 4 operations
// instead of 7. +-inf stay, NaN stays NaN (the callers mask it).
struct RoundHalfAwayOp {
  static constexpr bool kStochastic = false;
  template <class D, class V>
  static HWY_INLINE V Do(D d, V t, V /*u*/) {
    return hn::CopySignToAbs(hn::Trunc(hn::Add(hn::Abs(t), hn::Set(d, 0x1.fffffep-2f))), t);
  }
};

struct RoundHalfUpOp {
  static constexpr bool kStochastic = false;
  template <class D, class V>
  static HWY_INLINE V Do(D d, V t, V /*u*/) {
    const V f = hn::Floor(t);
    return hn::IfThenElse(hn::Ge(hn::Sub(t, f), hn::Set(d, 0.5f)), hn::Add(f, hn::Set(d, 1.0f)), f);
  }
};

struct RoundFloorOp {
  static constexpr bool kStochastic = false;
  template <class D, class V>
  static HWY_INLINE V Do(D /*d*/, V t, V /*u*/) {
    return hn::Floor(t);
  }
};

struct RoundTowardZeroOp {
  static constexpr bool kStochastic = false;
  template <class D, class V>
  static HWY_INLINE V Do(D /*d*/, V t, V /*u*/) {
    return hn::Trunc(t);
  }
};

// u: the uniform in [0, 1) drawn for this element (RoundStochastic::round_with).
struct RoundStochasticOp {
  static constexpr bool kStochastic = true;
  template <class D, class V>
  static HWY_INLINE V Do(D d, V t, V u) {
    const V f = hn::Floor(t);
    return hn::IfThenElse(hn::Lt(u, hn::Sub(t, f)), hn::Add(f, hn::Set(d, 1.0f)), f);
  }
};

// The op of a built-in rounding mode.
template <RoundingMode kMode>
struct RoundOpOf {
  using type = RoundHalfEvenOp;
};
template <>
struct RoundOpOf<RoundingMode::half_away> {
  using type = RoundHalfAwayOp;
};
template <>
struct RoundOpOf<RoundingMode::half_up> {
  using type = RoundHalfUpOp;
};
template <>
struct RoundOpOf<RoundingMode::floor> {
  using type = RoundFloorOp;
};
template <>
struct RoundOpOf<RoundingMode::toward_zero> {
  using type = RoundTowardZeroOp;
};
template <>
struct RoundOpOf<RoundingMode::stochastic> {
  using type = RoundStochasticOp;
};

// Calls f.template operator()<Op>() with the op of a built-in rounding mode.
template <class F>
HWY_INLINE void WithRounding(RoundingMode mode, const F& f) {
  switch (mode) {
    case RoundingMode::half_away: f.template operator()<RoundHalfAwayOp>(); return;
    case RoundingMode::half_up: f.template operator()<RoundHalfUpOp>(); return;
    case RoundingMode::floor: f.template operator()<RoundFloorOp>(); return;
    case RoundingMode::toward_zero: f.template operator()<RoundTowardZeroOp>(); return;
    case RoundingMode::stochastic: f.template operator()<RoundStochasticOp>(); return;
    case RoundingMode::half_even:
    case RoundingMode::custom:  // never passed to kernels (the front end uses the reference)
      f.template operator()<RoundHalfEvenOp>();
      return;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_COMMON_INL_H_ toggle
