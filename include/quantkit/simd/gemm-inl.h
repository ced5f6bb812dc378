// int8 GEMM kernels (Google Highway, one copy per target): C(int32) = A(int8/uint8, M x K) *
// B(int8/uint8, K x N, packed by PackB into panels of 4-deep k groups; see gemm_abi.hpp).
//
//   AVX3_DL  AVX-512 VNNI vpdpbusd (u8 x s8, four products summed into each int32 lane, no
//            saturation): 8 rows x 32 columns per micro-tile. One operand must be unsigned and
//            the other signed, so the front end flips B (x ^ 0x80) when A and B have the same
//            signedness and corrects with +-128 * rowsum(A).
//   others   widening multiply-add: bytes promoted to int16, ReorderWidenMulAccumulate
//            (pmaddwd: pairs of int16 products summed into int32, exact), each column's two
//            partial sums added at the end; 2 rows x one vector of columns.
//   SCALAR   plain loops over the same packed layout.
// Every product and partial sum is exact; only the final int32 accumulation wraps (as the
// reference's modulo-2^32 sum), so all targets equal quantkit::ref::gemm_s32 bit for bit.
//
// Highway per-target header (HWY_TARGET_TOGGLE guard); use quantkit/simd/gemm.hpp.

#if defined(QUANTKIT_SIMD_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QUANTKIT_SIMD_GEMM_INL_H_
#undef QUANTKIT_SIMD_GEMM_INL_H_
#else
#define QUANTKIT_SIMD_GEMM_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <hwy/highway.h>

#include "quantkit/ref/gemm.hpp"
#include "quantkit/simd/gemm_abi.hpp"

// Highway 1.0.3's AVX3_DL target string names avxvnni (VEX) but not avx512vnni; the VNNI
// micro-kernel adds it (the CPU check of AVX3_DL already requires AVX512_VNNI).
#ifndef QUANTKIT_SIMD_VNNI_ATTR
#define QUANTKIT_SIMD_VNNI_ATTR __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
#endif

HWY_BEFORE_NAMESPACE();
namespace quantkit {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX3_DL
constexpr std::size_t kGemmMR = 8;
constexpr std::size_t kGemmPanel = 32;
constexpr bool kGemmDot = true;
#elif HWY_TARGET == HWY_SCALAR
constexpr std::size_t kGemmMR = 1;
constexpr std::size_t kGemmPanel = 4;
constexpr bool kGemmDot = false;
#else
// Widening path (int16 products): rows per tile by register file, 2 accumulators per row.
// 1024 x 1024 x 256 u8 x s8 on Zen 5, static builds: AVX3 (32 registers) 2 rows 2.11 ms, 4 rows
// 1.79, 8 rows 1.68; AVX2 2 rows 3.98 ms, 4 rows 3.29, 6 rows 3.10 (4: a batch of 4 in one
// tile); SSSE3 2 rows 9.97 ms, 4 rows 7.26.
#if HWY_TARGET == HWY_AVX3
constexpr std::size_t kGemmMR = 8;
#else
constexpr std::size_t kGemmMR = 4;
#endif
constexpr std::size_t kGemmPanel = HWY_LANES(std::int32_t);
constexpr bool kGemmDot = false;
#endif

// A packed into rows of k4 (K rounded up to 4) elements, rows rounded up to kGemmMR: bytes for
// the dot-product path, int16 for the widening path. The padding (k >= K, rows >= M) is never
// written: packed B is zero for k >= K and the extra rows' results are dropped. The buffer is
// the calling thread's, grown when needed and kept: no allocation per call once warm.
#if HWY_TARGET == HWY_AVX3_DL
using GemmAElem = std::uint8_t;
#else
using GemmAElem = std::int16_t;
#endif

template <int kUnused = 0>
const GemmAElem* GemmPackA(const GemmArgs& a, std::size_t k4, std::size_t rows) {
  thread_local std::vector<GemmAElem> buffer;
  if (buffer.size() < rows * k4) buffer.resize(rows * k4);
  GemmAElem* out = buffer.data();
  for (std::size_t m = 0; m < a.m; ++m) {
    GemmAElem* dst = out + m * k4;
    if (std::is_same<GemmAElem, std::uint8_t>::value) {
      std::memcpy(dst, static_cast<const std::uint8_t*>(a.a) + m * a.lda, a.k);  // int8 keeps its bytes
    } else if (a.a_signed) {
      const auto* src = static_cast<const std::int8_t*>(a.a) + m * a.lda;
      for (std::size_t k = 0; k < a.k; ++k) dst[k] = static_cast<GemmAElem>(src[k]);
    } else {
      const auto* src = static_cast<const std::uint8_t*>(a.a) + m * a.lda;
      for (std::size_t k = 0; k < a.k; ++k) dst[k] = static_cast<GemmAElem>(src[k]);
    }
  }
  return out;
}

#if HWY_TARGET == HWY_AVX3_DL

// kGemmMR rows x 32 columns; `a` holds kGemmMR rows of k4 bytes, `bp` one packed panel. The
// 16 accumulators are named variables, not an array: GCC 12 keeps an array of __m512i that
// vpdpbusd updates in memory and copies it around every step (half the throughput).
#define QUANTKIT_GEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
// R <= kGemmMR rows: the first R (a product of fewer rows, a batch-1 layer, computes only those).
template <bool kAUnsigned, std::size_t R = kGemmMR>
QUANTKIT_SIMD_VNNI_ATTR inline void GemmMicro(const std::uint8_t* a, std::size_t lda, std::size_t k4,
                                              const std::uint8_t* bp, bool /*b_signed*/,
                                              std::int32_t* c, std::size_t ldc, bool accumulate) {
  static_assert(kGemmMR == 8 && R >= 1 && R <= kGemmMR, "QUANTKIT_GEMM_ROWS lists 8 rows");
#define QUANTKIT_GEMM_DECLARE(r) [[maybe_unused]] __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = _mm512_setzero_si512();
  QUANTKIT_GEMM_ROWS(QUANTKIT_GEMM_DECLARE)
#undef QUANTKIT_GEMM_DECLARE
  if (accumulate) {
#define QUANTKIT_GEMM_LOAD(r)                            \
  if constexpr ((r) < R) {                               \
    c##r##0 = _mm512_loadu_si512(c + (r) * ldc);         \
    c##r##1 = _mm512_loadu_si512(c + (r) * ldc + 16);    \
  }
    QUANTKIT_GEMM_ROWS(QUANTKIT_GEMM_LOAD)
#undef QUANTKIT_GEMM_LOAD
  }
  for (std::size_t g = 0; g < k4; g += 4, bp += 128) {
    __m512i b0 = _mm512_loadu_si512(bp);
    __m512i b1 = _mm512_loadu_si512(bp + 64);
    // In registers: with up to 4 rows GCC 12 folds the loads into every vpdpbusd (R loads of
    // each per step; 4 rows were slower than 8).
    asm("" : "+v"(b0), "+v"(b1));
#define QUANTKIT_GEMM_STEP(r)                                   \
  if constexpr ((r) < R) {                                      \
    std::int32_t word;                                          \
    std::memcpy(&word, a + (r) * lda + g, 4);                   \
    const __m512i av = _mm512_set1_epi32(word);                 \
    if constexpr (kAUnsigned) {                                 \
      c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, b0);           \
      c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, b1);           \
    } else {                                                    \
      c##r##0 = _mm512_dpbusd_epi32(c##r##0, b0, av);           \
      c##r##1 = _mm512_dpbusd_epi32(c##r##1, b1, av);           \
    }                                                           \
  }
    QUANTKIT_GEMM_ROWS(QUANTKIT_GEMM_STEP)
#undef QUANTKIT_GEMM_STEP
  }
#define QUANTKIT_GEMM_STORE(r)                            \
  if constexpr ((r) < R) {                                \
    _mm512_storeu_si512(c + (r) * ldc, c##r##0);          \
    _mm512_storeu_si512(c + (r) * ldc + 16, c##r##1);     \
  }
  QUANTKIT_GEMM_ROWS(QUANTKIT_GEMM_STORE)
#undef QUANTKIT_GEMM_STORE
}
#undef QUANTKIT_GEMM_ROWS

#elif HWY_TARGET == HWY_SCALAR

template <bool kAUnsigned, std::size_t R = kGemmMR>
inline void GemmMicro(const std::int16_t* a, std::size_t lda, std::size_t k4, const std::uint8_t* bp,
                      bool b_signed, std::int32_t* c, std::size_t ldc, bool accumulate) {
  for (std::size_t r = 0; r < R; ++r) {
    std::uint32_t acc[kGemmPanel] = {};
    if (accumulate)
      for (std::size_t col = 0; col < kGemmPanel; ++col) acc[col] = static_cast<std::uint32_t>(c[r * ldc + col]);
    const std::uint8_t* p = bp;
    for (std::size_t g = 0; g < k4; g += 4, p += kGemmPanel * 4)
      for (std::size_t col = 0; col < kGemmPanel; ++col)
        for (std::size_t kk = 0; kk < 4; ++kk) {
          const std::uint8_t byte = p[col * 4 + kk];
          const std::int32_t bv = b_signed ? static_cast<std::int32_t>(static_cast<std::int8_t>(byte))
                                           : static_cast<std::int32_t>(byte);
          acc[col] += static_cast<std::uint32_t>(std::int32_t{a[r * lda + g + kk]} * bv);
        }
    for (std::size_t col = 0; col < kGemmPanel; ++col) c[r * ldc + col] = static_cast<std::int32_t>(acc[col]);
  }
}

#else

// Widening path: per row, `lo` holds columns [0, L/2) and `hi` columns [L/2, L) as pairs of
// partial sums (k0k1, k2k3) in adjacent int32 lanes; ConcatEven + ConcatOdd adds the pairs.
// Named variables per row, not arrays: GCC 12 keeps arrays of vectors in memory (see kGemmMR).
// lo1/hi1: the second sums ReorderWidenMulAccumulate may use (x86's pmaddwd leaves them zero).
// Past 2 rows, each row's sums pinned to registers after its step: else GCC 12 spills one to the
// stack (AVX2, 4 rows: 94.7 us for 4 x 1024 x 1024 against 49.3 pinned); 2 rows ran faster free.
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128
#define QUANTKIT_GEMM_PIN(x, y) asm("" : "+v"(x.raw), "+v"(y.raw))
#else
#define QUANTKIT_GEMM_PIN(x, y) (void)0
#endif
#define QUANTKIT_GEMM_WROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
template <bool kBSigned, std::size_t R>
HWY_INLINE void GemmMicroTyped(const std::int16_t* a, std::size_t lda, std::size_t k4,
                               const std::uint8_t* bp, std::int32_t* c, std::size_t ldc,
                               bool accumulate) {
  static_assert(R >= 1 && R <= 8, "QUANTKIT_GEMM_WROWS lists 8 rows");
  const hn::ScalableTag<std::int32_t> d32;
  const hn::Repartition<std::int16_t, decltype(d32)> d16;
  const hn::Repartition<std::int64_t, decltype(d32)> d64;
  using B8 = typename std::conditional<kBSigned, std::int8_t, std::uint8_t>::type;
  const hn::Rebind<B8, decltype(d16)> d8{};  // 2L bytes, promoted to 2L int16
  using V = hn::Vec<decltype(d32)>;
  constexpr std::size_t L = kGemmPanel;
#define QUANTKIT_GEMM_DECLARE(r) \
  [[maybe_unused]] V lo##r = hn::Zero(d32), hi##r = hn::Zero(d32), lo##r##1 = hn::Zero(d32), hi##r##1 = hn::Zero(d32);
  QUANTKIT_GEMM_WROWS(QUANTKIT_GEMM_DECLARE)
#undef QUANTKIT_GEMM_DECLARE
  for (std::size_t g = 0; g < k4; g += 4, bp += 4 * L) {
    const auto b_lo = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const B8*>(bp)));
    const auto b_hi = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const B8*>(bp + 2 * L)));
#define QUANTKIT_GEMM_STEP(r)                                                  \
  if constexpr ((r) < R) {                                                     \
    std::int64_t word;                                                         \
    std::memcpy(&word, a + (r) * lda + g, 8);                                  \
    const auto av = hn::BitCast(d16, hn::Set(d64, word));                      \
    lo##r = hn::ReorderWidenMulAccumulate(d32, av, b_lo, lo##r, lo##r##1);     \
    hi##r = hn::ReorderWidenMulAccumulate(d32, av, b_hi, hi##r, hi##r##1);     \
    if constexpr (R > 2) QUANTKIT_GEMM_PIN(lo##r, hi##r);                      \
  }
    QUANTKIT_GEMM_WROWS(QUANTKIT_GEMM_STEP)
#undef QUANTKIT_GEMM_STEP
  }
#define QUANTKIT_GEMM_STORE(r)                                                         \
  if constexpr ((r) < R) {                                                             \
    const V l = hn::Add(lo##r, lo##r##1);                                              \
    const V h = hn::Add(hi##r, hi##r##1);                                              \
    V sum = hn::Add(hn::ConcatEven(d32, h, l), hn::ConcatOdd(d32, h, l));              \
    if (accumulate) sum = hn::Add(sum, hn::LoadU(d32, c + (r) * ldc));                 \
    hn::StoreU(sum, d32, c + (r) * ldc);                                               \
  }
  QUANTKIT_GEMM_WROWS(QUANTKIT_GEMM_STORE)
#undef QUANTKIT_GEMM_STORE
}
#undef QUANTKIT_GEMM_WROWS
#undef QUANTKIT_GEMM_PIN

template <bool kAUnsigned, std::size_t R = kGemmMR>
HWY_INLINE void GemmMicro(const std::int16_t* a, std::size_t lda, std::size_t k4, const std::uint8_t* bp,
                          bool b_signed, std::int32_t* c, std::size_t ldc, bool accumulate) {
  if (b_signed)
    GemmMicroTyped<true, R>(a, lda, k4, bp, c, ldc, accumulate);
  else
    GemmMicroTyped<false, R>(a, lda, k4, bp, c, ldc, accumulate);
}

#endif

// The micro-tile for the last `rows` (< kGemmMR) rows of A: only those computed (they had all
// kGemmMR computed: 1 x 1024 x 1024 on Zen 5, AVX3_DL 18.5 -> 9.3 us, 4 rows 20.1 -> 12.5).
template <bool kAUnsigned>
HWY_NOINLINE void GemmMicroRows(std::size_t rows, const GemmAElem* a, std::size_t lda, std::size_t k4,
                                const std::uint8_t* bp, bool b_signed, std::int32_t* c, std::size_t ldc,
                                bool accumulate) {
  constexpr std::size_t M = kGemmMR;
  switch (rows) {
    case 1: return GemmMicro<kAUnsigned, 1>(a, lda, k4, bp, b_signed, c, ldc, accumulate);
    case 2: return GemmMicro<kAUnsigned, (2 < M ? 2 : M)>(a, lda, k4, bp, b_signed, c, ldc, accumulate);
    case 3: return GemmMicro<kAUnsigned, (3 < M ? 3 : M)>(a, lda, k4, bp, b_signed, c, ldc, accumulate);
    case 4: return GemmMicro<kAUnsigned, (4 < M ? 4 : M)>(a, lda, k4, bp, b_signed, c, ldc, accumulate);
    case 5: return GemmMicro<kAUnsigned, (5 < M ? 5 : M)>(a, lda, k4, bp, b_signed, c, ldc, accumulate);
    case 6: return GemmMicro<kAUnsigned, (6 < M ? 6 : M)>(a, lda, k4, bp, b_signed, c, ldc, accumulate);
    case 7: return GemmMicro<kAUnsigned, (7 < M ? 7 : M)>(a, lda, k4, bp, b_signed, c, ldc, accumulate);
    default: return GemmMicro<kAUnsigned, M>(a, lda, k4, bp, b_signed, c, ldc, accumulate);
  }
}

// Depth of a K block (multiple of 4): the packed B sliver of one panel (kGemmKC x panel
// bytes, 32 KiB on AVX3_DL) stays in L1 while every row block of A passes over it. Deep
// blocks: each further block reloads and stores all of C (256 was 25% slower at K = 1024).
constexpr std::size_t kGemmKC = 1024;

template <bool kAUnsigned>
void GemmLoop(const GemmArgs& a) {
  const std::size_t k4 = (a.k + 3) / 4 * 4;
  const std::size_t rows = (a.m + kGemmMR - 1) / kGemmMR * kGemmMR;
  const GemmAElem* ap = GemmPackA(a, k4, rows);
  const std::size_t panels = (a.n + kGemmPanel - 1) / kGemmPanel;
  HWY_ALIGN std::int32_t tile[kGemmMR * kGemmPanel];
  for (std::size_t k0 = 0; k0 < k4; k0 += kGemmKC) {
    const std::size_t kc = std::min(kGemmKC, k4 - k0);
    const bool accumulate = k0 != 0;
    for (std::size_t j = 0; j < panels; ++j) {
      const std::uint8_t* bp = a.packed_b + j * k4 * kGemmPanel + k0 * kGemmPanel;
      const std::size_t col0 = j * kGemmPanel;
      const std::size_t cols = std::min(kGemmPanel, a.n - col0);
      for (std::size_t i = 0; i < a.m; i += kGemmMR) {
        const std::size_t nrows = std::min(kGemmMR, a.m - i);
        const GemmAElem* arows = ap + i * k4 + k0;
        std::int32_t* c = a.c + i * a.ldc + col0;
        if (nrows == kGemmMR && cols == kGemmPanel) {
          GemmMicro<kAUnsigned>(arows, k4, kc, bp, a.packed_signed, c, a.ldc, accumulate);
        } else {
          if (accumulate)
            for (std::size_t r = 0; r < nrows; ++r)
              std::memcpy(tile + r * kGemmPanel, c + r * a.ldc, cols * sizeof(std::int32_t));
          GemmMicroRows<kAUnsigned>(nrows, arows, k4, kc, bp, a.packed_signed, tile, kGemmPanel, accumulate);
          for (std::size_t r = 0; r < nrows; ++r)
            std::memcpy(c + r * a.ldc, tile + r * kGemmPanel, cols * sizeof(std::int32_t));
        }
      }
    }
  }
}

template <int kUnused = 0>
void GemmS32(const GemmArgs& a) {
  if (a.m == 0 || a.n == 0) return;
  if (a.k == 0) {
    for (std::size_t m = 0; m < a.m; ++m) std::fill(a.c + m * a.ldc, a.c + m * a.ldc + a.n, 0);
    return;
  }
  if (a.a_signed)
    GemmLoop<false>(a);
  else
    GemmLoop<true>(a);
}

template <int kUnused = 0>
void GemmPackB(const GemmPackArgs& p) {
  const std::size_t k4 = (p.k + 3) / 4 * 4;
  const std::size_t panels = (p.n + kGemmPanel - 1) / kGemmPanel;
  const auto* b = static_cast<const std::uint8_t*>(p.b);  // bytes: signedness is the caller's
  const std::uint8_t x = p.flip ? 0x80 : 0;
  std::vector<std::uint8_t> zero(kGemmPanel * panels, 0);
  for (std::size_t g = 0; g < k4; g += 4) {
    const std::uint8_t* row[4];
    std::uint8_t fill[4];
    for (std::size_t kk = 0; kk < 4; ++kk) {
      const bool real = g + kk < p.k;
      row[kk] = real ? b + (g + kk) * p.ldb : zero.data();
      fill[kk] = real ? x : 0;  // K padding stays 0 (A is zero there)
    }
    for (std::size_t j = 0; j < panels; ++j) {
      const std::size_t col0 = j * kGemmPanel;
      const std::size_t cols = std::min(kGemmPanel, p.n - col0);
      std::uint8_t* dst = p.packed + j * k4 * kGemmPanel + g * kGemmPanel;
      for (std::size_t col = 0; col < cols; ++col)
        for (std::size_t kk = 0; kk < 4; ++kk)
          dst[col * 4 + kk] = static_cast<std::uint8_t>(row[kk][col0 + col] ^ fill[kk]);
      std::memset(dst + cols * 4, 0, (kGemmPanel - cols) * 4);
    }
  }
}

// ---- Pair sums: ONNX Runtime's uint8 x int8 arithmetic on x86-64 without VNNI ----
// (gemm_abi.hpp PairSumArgs; ref::pair_sums_s16sat). Rows in blocks of 4 share each load of a
// Bt row. Saturated sums only, on x86: VPMADDUBSW, the instruction ONNX Runtime's kernels use
// (uint8 x int8 pairs summed into int16 with saturation), then pmaddwd by 1 into int32. With
// statistics (and on other targets): bytes promoted to int16, each int32 lane one exact pair
// (pmaddwd on x86), clamped to int16 and accumulated beside the exact pair, the count of clamped
// pairs and the extreme pairs.
#if HWY_TARGET == HWY_SCALAR

template <int kUnused = 0>
void PairSums(const PairSumArgs& p, PairSumCounts& counts) {  // one lane: the reference's loop
  ref::pair_sums_s16sat(p.m, p.n, p.k, p.a, p.lda, p.bt, p.ldb, p.saturated, p.exact, p.ldc, counts.saturated_pairs,
                        counts.max_pair, counts.min_pair);
}

inline std::size_t PairStep() { return 2; }

#else

inline std::size_t PairStep() { return hn::Lanes(hn::ScalableTag<std::uint8_t>()); }

// int32 lane i = a[2i] b[2i] + a[2i+1] b[2i+1] (int16 lanes; products fit int16).
template <class D32, class V16>
HWY_INLINE hn::Vec<D32> PairProducts(D32 d32, V16 a, V16 b) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
  hn::Vec<D32> unused = hn::Zero(d32);
  return hn::ReorderWidenMulAccumulate(d32, a, b, hn::Zero(d32), unused);  // pmaddwd: adjacent lanes
#else
  const auto q = hn::BitCast(d32, hn::Mul(a, b));
  return hn::Add(hn::ShiftRight<16>(hn::ShiftLeft<16>(q)), hn::ShiftRight<16>(q));
#endif
}

template <bool kStats, std::size_t R, class D32, class V = hn::Vec<D32>>
HWY_INLINE void PairSumBlock(D32 d32, const PairSumArgs& p, std::size_t row, std::size_t col, V& vmax, V& vmin,
                             std::int64_t& clamped) {
  const hn::Repartition<std::int16_t, D32> d16;
  const hn::Rebind<std::uint8_t, decltype(d16)> du8;  // half a vector of bytes, promoted
  const hn::Rebind<std::int8_t, decltype(d16)> di8;
  const std::size_t step = hn::Lanes(d16);
  const V lo = hn::Set(d32, -32768), hi = hn::Set(d32, 32767);
  V sat[R], ex[R];
  for (std::size_t r = 0; r < R; ++r) sat[r] = ex[r] = hn::Zero(d32);
  V count = hn::Zero(d32);
  const std::int8_t* b = p.bt + col * p.ldb;
  const std::uint8_t* a = p.a + row * p.lda;
  for (std::size_t k = 0; k < p.k; k += step) {
    const auto bv = hn::PromoteTo(d16, hn::LoadU(di8, b + k));
    for (std::size_t r = 0; r < R; ++r) {
      const V q = PairProducts(d32, hn::PromoteTo(d16, hn::LoadU(du8, a + r * p.lda + k)), bv);
      const V s = hn::Min(hn::Max(q, lo), hi);
      sat[r] = hn::Add(sat[r], s);
      if (kStats) {
        ex[r] = hn::Add(ex[r], q);
        count = hn::Sub(count, hn::VecFromMask(d32, hn::Ne(s, q)));
        vmax = hn::Max(vmax, q);
        vmin = hn::Min(vmin, q);
      }
    }
  }
  for (std::size_t r = 0; r < R; ++r) {
    p.saturated[(row + r) * p.ldc + col] = hn::GetLane(hn::SumOfLanes(d32, sat[r]));
    if (kStats) p.exact[(row + r) * p.ldc + col] = hn::GetLane(hn::SumOfLanes(d32, ex[r]));
  }
  if (kStats) clamped += hn::GetLane(hn::SumOfLanes(d32, count));
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
constexpr bool kPairMaddubs = true;

// VPMADDUBSW: int16 lane i = saturate(a[2i] b[2i] + a[2i+1] b[2i+1]), a uint8, b int8.
template <class D16, class VU, class VI>
HWY_INLINE hn::Vec<D16> SaturatedPairs(D16, VU a, VI b) {
#if HWY_TARGET <= HWY_AVX3
  return hn::Vec<D16>{_mm512_maddubs_epi16(a.raw, b.raw)};
#elif HWY_TARGET == HWY_AVX2
  return hn::Vec<D16>{_mm256_maddubs_epi16(a.raw, b.raw)};
#else
  return hn::Vec<D16>{_mm_maddubs_epi16(a.raw, b.raw)};
#endif
}

template <std::size_t R>
HWY_INLINE void PairSumBlockBytes(const PairSumArgs& p, std::size_t row, std::size_t col) {
  const hn::ScalableTag<std::uint8_t> du8;
  const hn::Repartition<std::int8_t, decltype(du8)> di8;
  const hn::Repartition<std::int16_t, decltype(du8)> d16;
  const hn::Repartition<std::int32_t, decltype(du8)> d32;
  using V = hn::Vec<decltype(d32)>;
  const auto ones = hn::Set(d16, 1);
  V sat[R], unused = hn::Zero(d32);
  for (std::size_t r = 0; r < R; ++r) sat[r] = hn::Zero(d32);
  const std::int8_t* b = p.bt + col * p.ldb;
  const std::uint8_t* a = p.a + row * p.lda;
  for (std::size_t k = 0; k < p.k; k += hn::Lanes(du8)) {
    const auto bv = hn::LoadU(di8, b + k);
    for (std::size_t r = 0; r < R; ++r)  // pmaddwd by 1: the int16 pair sums added into int32
      sat[r] = hn::ReorderWidenMulAccumulate(d32, SaturatedPairs(d16, hn::LoadU(du8, a + r * p.lda + k), bv), ones,
                                             sat[r], unused);
  }
  for (std::size_t r = 0; r < R; ++r) p.saturated[(row + r) * p.ldc + col] = hn::GetLane(hn::SumOfLanes(d32, sat[r]));
}
#else
constexpr bool kPairMaddubs = false;
template <std::size_t R>
HWY_INLINE void PairSumBlockBytes(const PairSumArgs&, std::size_t, std::size_t) {}
#endif

template <bool kStats>
void PairSumsLoop(const PairSumArgs& p, PairSumCounts& counts) {
  const hn::ScalableTag<std::int32_t> d32;
  auto vmax = hn::Zero(d32), vmin = hn::Zero(d32);
  std::int64_t clamped = 0;
  std::size_t row = 0;
  constexpr bool kBytes = !kStats && kPairMaddubs;
  for (; row + 4 <= p.m; row += 4)
    for (std::size_t col = 0; col < p.n; ++col) {
      if (kBytes)
        PairSumBlockBytes<4>(p, row, col);
      else
        PairSumBlock<kStats, 4>(d32, p, row, col, vmax, vmin, clamped);
    }
  for (; row < p.m; ++row)
    for (std::size_t col = 0; col < p.n; ++col) {
      if (kBytes)
        PairSumBlockBytes<1>(p, row, col);
      else
        PairSumBlock<kStats, 1>(d32, p, row, col, vmax, vmin, clamped);
    }
  if (kStats) {
    counts.saturated_pairs += clamped;
    counts.max_pair = std::max(counts.max_pair, hn::GetLane(hn::MaxOfLanes(d32, vmax)));
    counts.min_pair = std::min(counts.min_pair, hn::GetLane(hn::MinOfLanes(d32, vmin)));
  }
}

template <int kUnused = 0>
void PairSums(const PairSumArgs& p, PairSumCounts& counts) {
  if (p.exact)
    PairSumsLoop<true>(p, counts);
  else
    PairSumsLoop<false>(p, counts);
}

#endif

template <int kUnused = 0>
const GemmKernels* GetGemmKernelsT() {
  static const GemmKernels kernels = [] {
    GemmKernels k;
    k.target = HWY_TARGET;
    k.name = hwy::TargetName(HWY_TARGET);
    k.panel = kGemmPanel;
    k.dot_product = kGemmDot;
    k.needs_mixed_signs = kGemmDot;
    k.pack_b = &GemmPackB<0>;
    k.gemm = &GemmS32<0>;
    k.pair_step = PairStep();
    k.pair_sums = &PairSums<0>;
    return k;
  }();
  return &kernels;
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_GEMM_INL_H_ toggle
