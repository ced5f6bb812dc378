// float GEMM kernel (Google Highway, one copy per target): C = A * B with every product and
// every sum rounded to float, k in increasing order (see GemmF32Args, quantkit/simd/abi.hpp),
// so that every target equals quantkit::ref::gemm_f32 bit for bit. Multiplies and adds are
// separate instructions (a barrier keeps the compiler from fusing them): on CPUs with separate
// add pipes (AMD Zen) that costs no throughput against FMA.
//
// Blocking (one thread): A in blocks of up to kSgemmABytes, packed as kSgemmMR-row slices
// (k-major: the micro-kernel broadcasts one value per row and step); B in blocks of columns
// within kSgemmBBytes (L2), packed as panels of two vectors (k-major). One micro-kernel call
// computes a kSgemmMR x 2-vector tile over the whole K: each element's sum never leaves a
// register, so the order of the sum is the reference's.
//
// Highway per-target header (HWY_TARGET_TOGGLE guard); use quantkit/simd/gemm_f32.hpp.

#if defined(QUANTKIT_SIMD_GEMM_F32_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QUANTKIT_SIMD_GEMM_F32_INL_H_
#undef QUANTKIT_SIMD_GEMM_F32_INL_H_
#else
#define QUANTKIT_SIMD_GEMM_F32_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <hwy/highway.h>

#include "quantkit/simd/abi.hpp"

HWY_BEFORE_NAMESPACE();
namespace quantkit {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Highway's SCALAR and EMU128 targets compute a lane at a time; here GCC/Clang vector extensions
// take their place: 4 lanes (SSE2 on x86-64, which every such CPU has) with the same per-lane
// IEEE arithmetic, so the values do not change, only the speed (4x on SCALAR).
#undef QUANTKIT_SGEMM_GNU_VECTORS  // (this header is included once per target)
#if (HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128) && (defined(__GNUC__) || defined(__clang__))
#define QUANTKIT_SGEMM_GNU_VECTORS 1
typedef float SgemmGnuVec __attribute__((vector_size(16)));
#else
#define QUANTKIT_SGEMM_GNU_VECTORS 0
#endif

// Rows per tile: 2 * kSgemmMR accumulators, two B vectors and a broadcast in registers (32
// vector registers with AVX-512, 16 otherwise).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr std::size_t kSgemmMR = 8;
#elif HWY_TARGET == HWY_SCALAR && !QUANTKIT_SGEMM_GNU_VECTORS
constexpr std::size_t kSgemmMR = 4;
#else
constexpr std::size_t kSgemmMR = 6;
#endif
constexpr std::size_t kSgemmBBytes = std::size_t{512} << 10;  // a block of packed B (L2)
constexpr std::size_t kSgemmABytes = std::size_t{4} << 20;    // a block of packed A

// The product must reach the add rounded: a value the compiler has to materialize.
template <class R>
HWY_INLINE R SgemmRoundedRaw(R v) {
#if (defined(__GNUC__) || defined(__clang__)) && HWY_ARCH_X86 && (HWY_TARGET != HWY_EMU128 || QUANTKIT_SGEMM_GNU_VECTORS)
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  __asm__ volatile("" : "+v"(v));  // any of the 32 registers
#else
  __asm__ volatile("" : "+x"(v));
#endif
#elif (defined(__GNUC__) || defined(__clang__)) && HWY_ARCH_ARM_A64 && \
    (QUANTKIT_SGEMM_GNU_VECTORS || (HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR))
  __asm__ volatile("" : "+w"(v));
#elif defined(__GNUC__) || defined(__clang__)
  __asm__ volatile("" : "+m"(v));  // emulated vectors: through memory
#endif
  return v;
}
template <class V>
HWY_INLINE V SgemmRounded(V v) {
  v.raw = SgemmRoundedRaw(v.raw);
  return v;
}

// Lanes of the tile's vectors (two per row).
template <class D>
HWY_INLINE std::size_t SgemmLanes(D d) {
#if QUANTKIT_SGEMM_GNU_VECTORS
  (void)d;
  return 4;
#else
  return hn::Lanes(d);
#endif
}

// One kRows x 2N tile over K steps: ap holds K steps of kSgemmMR values (the first kRows
// used), bp K steps of 2N values, b_step apart (2N: a packed panel; a row of B read in place).
// kAccumulate: the sums start from C's values (the partial sums of the k before), else from +0.
// Named accumulators, not an array (GCC 12 keeps arrays of vectors in memory), listed by
// QUANTKIT_SGEMM_ROWS (also SgemmTransposedTile's rows, below).
#define QUANTKIT_SGEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
template <std::size_t kRows, bool kAccumulate, class D>
HWY_INLINE void SgemmTile(D d, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp, std::ptrdiff_t b_step,
                          std::size_t K, float* HWY_RESTRICT c, std::size_t ldc) {
  static_assert(kSgemmMR <= 8, "QUANTKIT_SGEMM_ROWS lists 8 rows");
  using V = hn::Vec<D>;
  const std::size_t N = hn::Lanes(d);
#define QUANTKIT_SGEMM_DECLARE(r)                                                             \
  [[maybe_unused]] V c##r##0 = kAccumulate && (r) < kRows ? hn::LoadU(d, c + (r) * ldc) : hn::Zero(d); \
  [[maybe_unused]] V c##r##1 = kAccumulate && (r) < kRows ? hn::LoadU(d, c + (r) * ldc + N) : hn::Zero(d);
  QUANTKIT_SGEMM_ROWS(QUANTKIT_SGEMM_DECLARE)
#undef QUANTKIT_SGEMM_DECLARE
  for (std::size_t k = 0; k < K; ++k, ap += kSgemmMR, bp += b_step) {
    const V b0 = hn::LoadU(d, bp);
    const V b1 = hn::LoadU(d, bp + N);
#define QUANTKIT_SGEMM_STEP(r)                                  \
  if constexpr ((r) < kRows) {                                  \
    const V av = hn::Set(d, ap[r]);                             \
    c##r##0 = hn::Add(c##r##0, SgemmRounded(hn::Mul(av, b0)));  \
    c##r##1 = hn::Add(c##r##1, SgemmRounded(hn::Mul(av, b1)));  \
  }
    QUANTKIT_SGEMM_ROWS(QUANTKIT_SGEMM_STEP)
#undef QUANTKIT_SGEMM_STEP
  }
#define QUANTKIT_SGEMM_STORE(r)                \
  if constexpr ((r) < kRows) {                 \
    hn::StoreU(c##r##0, d, c + (r) * ldc);     \
    hn::StoreU(c##r##1, d, c + (r) * ldc + N); \
  }
  QUANTKIT_SGEMM_ROWS(QUANTKIT_SGEMM_STORE)
#undef QUANTKIT_SGEMM_STORE
}
#if QUANTKIT_SGEMM_GNU_VECTORS
// The same tile in 4-lane vector extensions (see QUANTKIT_SGEMM_GNU_VECTORS).
template <std::size_t kRows, bool kAccumulate, class D>
HWY_INLINE void SgemmTileGnu(D, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp, std::ptrdiff_t b_step,
                             std::size_t K, float* HWY_RESTRICT c, std::size_t ldc) {
  using V = SgemmGnuVec;
  const auto load = [](const float* p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
#define QUANTKIT_SGEMM_DECLARE(r)                                                 \
  [[maybe_unused]] V c##r##0 = kAccumulate && (r) < kRows ? load(c + (r) * ldc) : V{}; \
  [[maybe_unused]] V c##r##1 = kAccumulate && (r) < kRows ? load(c + (r) * ldc + 4) : V{};
  QUANTKIT_SGEMM_ROWS(QUANTKIT_SGEMM_DECLARE)
#undef QUANTKIT_SGEMM_DECLARE
  for (std::size_t k = 0; k < K; ++k, ap += kSgemmMR, bp += b_step) {
    const V b0 = load(bp);
    const V b1 = load(bp + 4);
#define QUANTKIT_SGEMM_STEP(r)                          \
  if constexpr ((r) < kRows) {                          \
    const float a = ap[r];                              \
    const V av = V{a, a, a, a};                         \
    c##r##0 = c##r##0 + SgemmRoundedRaw(V(av * b0));    \
    c##r##1 = c##r##1 + SgemmRoundedRaw(V(av * b1));    \
  }
    QUANTKIT_SGEMM_ROWS(QUANTKIT_SGEMM_STEP)
#undef QUANTKIT_SGEMM_STEP
  }
#define QUANTKIT_SGEMM_STORE(r)                                \
  if constexpr ((r) < kRows) {                                 \
    std::memcpy(c + (r) * ldc, &c##r##0, sizeof(V));           \
    std::memcpy(c + (r) * ldc + 4, &c##r##1, sizeof(V));       \
  }
  QUANTKIT_SGEMM_ROWS(QUANTKIT_SGEMM_STORE)
#undef QUANTKIT_SGEMM_STORE
}
#endif

template <std::size_t kRows, bool kAccumulate = false, class D>
HWY_INLINE void SgemmTileAny(D d, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp, std::ptrdiff_t b_step,
                             std::size_t K, float* HWY_RESTRICT c, std::size_t ldc) {
  static_assert(kRows >= 1 && kRows <= kSgemmMR, "a tile has 1 .. kSgemmMR rows");
#if QUANTKIT_SGEMM_GNU_VECTORS
  SgemmTileGnu<kRows, kAccumulate>(d, ap, bp, b_step, K, c, ldc);
#else
  SgemmTile<kRows, kAccumulate>(d, ap, bp, b_step, K, c, ldc);
#endif
}

// The last rows of A (fewer than kSgemmMR): a tile of just those rows (a 1-row product, e.g. a
// depthwise convolution's, costs one row's work, not kSgemmMR rows').
template <bool kAccumulate = false, class D>
HWY_NOINLINE void SgemmTileRows(D d, std::size_t rows, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp,
                                std::ptrdiff_t b_step, std::size_t K, float* HWY_RESTRICT c, std::size_t ldc) {
  constexpr std::size_t M = kSgemmMR;
  constexpr bool kA = kAccumulate;
  switch (rows) {
    case 1: return SgemmTileAny<1, kA>(d, ap, bp, b_step, K, c, ldc);
    case 2: return SgemmTileAny<(2 < M ? 2 : M), kA>(d, ap, bp, b_step, K, c, ldc);
    case 3: return SgemmTileAny<(3 < M ? 3 : M), kA>(d, ap, bp, b_step, K, c, ldc);
    case 4: return SgemmTileAny<(4 < M ? 4 : M), kA>(d, ap, bp, b_step, K, c, ldc);
    case 5: return SgemmTileAny<(5 < M ? 5 : M), kA>(d, ap, bp, b_step, K, c, ldc);
    case 6: return SgemmTileAny<(6 < M ? 6 : M), kA>(d, ap, bp, b_step, K, c, ldc);
    case 7: return SgemmTileAny<(7 < M ? 7 : M), kA>(d, ap, bp, b_step, K, c, ldc);
    default: return SgemmTileAny<M, kA>(d, ap, bp, b_step, K, c, ldc);
  }
}

// Rows i0 .. i0 + rows - 1 of A (rows <= kSgemmMR) as ap[k * kSgemmMR + r]; the slots past
// `rows` are left as they are (a slice of fewer rows is multiplied by a tile of just those rows).
template <int kUnused = 0>
void SgemmPackA(const GemmF32Args& g, std::size_t i0, std::size_t rows, float* HWY_RESTRICT ap) {
  const std::size_t K = g.k;
  if (g.a_col == 1) {
    for (std::size_t r = 0; r < rows; ++r) {
      const float* src = g.a + static_cast<std::ptrdiff_t>(i0 + r) * g.a_row;
      for (std::size_t k = 0; k < K; ++k) ap[k * kSgemmMR + r] = src[k];
    }
  } else {
    for (std::size_t k = 0; k < K; ++k) {
      const float* src = g.a + static_cast<std::ptrdiff_t>(k) * g.a_col + static_cast<std::ptrdiff_t>(i0) * g.a_row;
      for (std::size_t r = 0; r < rows; ++r) ap[k * kSgemmMR + r] = src[static_cast<std::ptrdiff_t>(r) * g.a_row];
    }
  }
}

#if HWY_TARGET != HWY_SCALAR
// r0..r3 (rows of B, values k0 .. of k) -> t0..t3 with block b of t_m = the four rows' k0 + 4b + m.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void SgemmTranspose4(D d, V r0, V r1, V r2, V r3, V& t0, V& t1, V& t2, V& t3) {
  const hn::Repartition<std::uint64_t, D> d64;
  const auto a0 = hn::BitCast(d64, hn::InterleaveLower(d, r0, r1));  // r0[0] r1[0] r0[1] r1[1]
  const auto a1 = hn::BitCast(d64, hn::InterleaveUpper(d, r0, r1));  // r0[2] r1[2] r0[3] r1[3]
  const auto a2 = hn::BitCast(d64, hn::InterleaveLower(d, r2, r3));
  const auto a3 = hn::BitCast(d64, hn::InterleaveUpper(d, r2, r3));
  t0 = hn::BitCast(d, hn::InterleaveLower(d64, a0, a2));
  t1 = hn::BitCast(d, hn::InterleaveUpper(d64, a0, a2));
  t2 = hn::BitCast(d, hn::InterleaveLower(d64, a1, a3));
  t3 = hn::BitCast(d, hn::InterleaveUpper(d64, a1, a3));
}
#endif

// Columns j0 .. j0 + cols - 1 of B (cols <= nr), values kb .. ke - 1 of k, as
// bp[(k - kb) * nr + col]; zeros right of them.
// Packing is most of a product with few rows of A (a batch-1 layer), so columns of B (b_row == 1:
// trans_b, as ONNX Gemm's weights usually are) go in 4 x 4 blocks transposed in registers, in
// chunks of kSgemmPackKChunk values of k so that the panel rows being written stay in L1 while
// the columns are walked (1 x 1024 x 1024 on Zen 5, AVX-512: 723 -> 183 us; one value at a time,
// column after column, every store went to another line of a 128 KiB panel).
constexpr std::size_t kSgemmPackKChunk = 64;

template <int kUnused = 0>
void SgemmPackB(const GemmF32Args& g, std::size_t j0, std::size_t cols, std::size_t nr, float* HWY_RESTRICT bp,
                std::size_t kb, std::size_t ke) {
#if HWY_TARGET != HWY_SCALAR
  if (g.b_row == 1 && g.b_col != 1) {
    const hn::FixedTag<float, 4> d4;
    const std::size_t cols4 = cols & ~std::size_t{3}, K4 = kb + ((ke - kb) & ~std::size_t{3});
    const std::ptrdiff_t sc = g.b_col;
    for (std::size_t k0 = kb; k0 < K4; k0 += kSgemmPackKChunk) {
      const std::size_t k1 = std::min(K4, k0 + kSgemmPackKChunk);
      for (std::size_t col = 0; col < cols4; col += 4) {
        const float* s0 = g.b + static_cast<std::ptrdiff_t>(j0 + col) * sc;
        float* out = bp + col;
        for (std::size_t k = k0; k < k1; k += 4) {
          const auto r0 = hn::LoadU(d4, s0 + k), r1 = hn::LoadU(d4, s0 + sc + k);
          const auto r2 = hn::LoadU(d4, s0 + 2 * sc + k), r3 = hn::LoadU(d4, s0 + 3 * sc + k);
          auto t0 = r0, t1 = r0, t2 = r0, t3 = r0;
          SgemmTranspose4(d4, r0, r1, r2, r3, t0, t1, t2, t3);
          hn::StoreU(t0, d4, out + (k - kb) * nr);
          hn::StoreU(t1, d4, out + (k - kb + 1) * nr);
          hn::StoreU(t2, d4, out + (k - kb + 2) * nr);
          hn::StoreU(t3, d4, out + (k - kb + 3) * nr);
        }
      }
    }
    // the last k (K4 ..) of those columns, the last columns (cols4 ..), zeros past cols
    for (std::size_t col = 0; col < nr; ++col) {
      if (col >= cols) {
        for (std::size_t k = kb; k < ke; ++k) bp[(k - kb) * nr + col] = 0.0f;
        continue;
      }
      const float* src = g.b + static_cast<std::ptrdiff_t>(j0 + col) * sc;
      for (std::size_t k = col < cols4 ? K4 : kb; k < ke; ++k) bp[(k - kb) * nr + col] = src[k];
    }
    return;
  }
#endif
  if (g.b_col == 1) {
    for (std::size_t k = kb; k < ke; ++k) {
      const float* src = g.b + static_cast<std::ptrdiff_t>(k) * g.b_row + static_cast<std::ptrdiff_t>(j0);
      float* out = bp + (k - kb) * nr;
      std::memcpy(out, src, cols * sizeof(float));
      std::fill(out + cols, out + nr, 0.0f);
    }
  } else {
    for (std::size_t col = 0; col < nr; ++col) {
      if (col >= cols) {
        for (std::size_t k = kb; k < ke; ++k) bp[(k - kb) * nr + col] = 0.0f;
        continue;
      }
      const float* src = g.b + static_cast<std::ptrdiff_t>(j0 + col) * g.b_col;
      for (std::size_t k = kb; k < ke; ++k) bp[(k - kb) * nr + col] = src[static_cast<std::ptrdiff_t>(k) * g.b_row];
    }
  }
}

// Columns jc .. jc + ncur - 1 of B, all K values, as the panels of one block (panel p at
// bp + p * nr * K, as SgemmPackB packs it). B as is (b_col == 1) is copied kSgemmPackRows rows at
// a time, panel after panel. Rows of 1024 floats are 4 KiB apart, all in the same L1 sets: a
// panel over all K (as before) or 16 KiB of rows read their lines back from L2, and row after row
// over all panels writes 16 lines 32 KiB apart (SSE4, one set). Packing all of a 1024 x 1024 B
// as is, Zen 5 (static targets, best of 100): AVX-512 181 -> 117 us, AVX2 268-331 -> 139,
// SSE4 492-605 -> 186 (a transposed B: 127, 115, 95).
constexpr std::size_t kSgemmPackRows = 8;

template <int kUnused = 0>
void SgemmPackBBlock(const GemmF32Args& g, std::size_t jc, std::size_t ncur, std::size_t nr, float* HWY_RESTRICT bp) {
  const std::size_t K = g.k, panels = (ncur + nr - 1) / nr;
  if (g.b_col != 1) {
    for (std::size_t p = 0; p < panels; ++p)
      SgemmPackB(g, jc + p * nr, std::min(nr, ncur - p * nr), nr, bp + p * nr * K, 0, K);
    return;
  }
  const hn::ScalableTag<float> d;
  const std::size_t L = hn::Lanes(d), full = ncur / nr, cols = ncur - full * nr;
  for (std::size_t k0 = 0; k0 < K; k0 += kSgemmPackRows) {
    const std::size_t k1 = std::min(K, k0 + kSgemmPackRows);
    for (std::size_t p = 0; p <= full; ++p) {
      const std::size_t w = p < full ? nr : cols;
      if (w == 0) break;
      for (std::size_t k = k0; k < k1; ++k) {
        const float* src = g.b + static_cast<std::ptrdiff_t>(k) * g.b_row + static_cast<std::ptrdiff_t>(jc + p * nr);
        float* out = bp + p * nr * K + k * nr;
        if (w == nr) {
          for (std::size_t q = 0; q < nr; q += L) hn::StoreU(hn::LoadU(d, src + q), d, out + q);
        } else {
          std::memcpy(out, src, w * sizeof(float));
          std::fill(out + w, out + nr, 0.0f);
        }
      }
    }
  }
}

#if !QUANTKIT_SGEMM_GNU_VECTORS && HWY_TARGET != HWY_SCALAR
// kU values of k (k .. k + kU - 1) of the streamed product (SgemmStreamRows) for C's columns
// j0 .. j1 - 1 (whole vectors), every row: B's kU rows loaded once per vector, each row of C
// loaded (kFirst: +0 instead), given its kU products in order, and stored.
template <std::size_t kU, bool kFirst, class D>
HWY_INLINE void SgemmStreamStep(D d, const GemmF32Args& g, const float* HWY_RESTRICT ap, std::size_t k,
                                std::size_t j0, std::size_t j1) {
  using V = hn::Vec<D>;
  const std::size_t NL = hn::Lanes(d);
  const float* HWY_RESTRICT b = g.b + static_cast<std::ptrdiff_t>(k) * g.b_row;
  const std::ptrdiff_t sb = g.b_row;
  const float* HWY_RESTRICT a = ap + k * kSgemmMR;
  for (std::size_t j = j0; j < j1; j += NL) {
    const V b0 = hn::LoadU(d, b + j);
    [[maybe_unused]] const V b1 = kU > 1 ? hn::LoadU(d, b + sb + j) : b0;
    [[maybe_unused]] const V b2 = kU > 2 ? hn::LoadU(d, b + 2 * sb + j) : b0;
    [[maybe_unused]] const V b3 = kU > 3 ? hn::LoadU(d, b + 3 * sb + j) : b0;
    for (std::size_t r = 0; r < g.m; ++r) {
      float* HWY_RESTRICT cr = g.c + r * g.ldc + j;
      V c = kFirst ? hn::Zero(d) : hn::LoadU(d, cr);
      c = hn::Add(c, SgemmRounded(hn::Mul(hn::Set(d, a[r]), b0)));
      if constexpr (kU > 1) c = hn::Add(c, SgemmRounded(hn::Mul(hn::Set(d, a[kSgemmMR + r]), b1)));
      if constexpr (kU > 2) c = hn::Add(c, SgemmRounded(hn::Mul(hn::Set(d, a[2 * kSgemmMR + r]), b2)));
      if constexpr (kU > 3) c = hn::Add(c, SgemmRounded(hn::Mul(hn::Set(d, a[3 * kSgemmMR + r]), b3)));
      hn::StoreU(c, d, cr);
    }
  }
}

// B as is with at most kSgemmMR rows of A (a batch-1 layer): B streamed in its own order, four
// rows of B at a time, each row of C's block (kSgemmStreamBytes in all, in L1) loaded, given
// four products in k order and stored. Every value of B is used once here, so a packed copy
// was most of the work, and a tile reading B in place walks down its columns (one row of B per
// step, a new line each: 1 x 1024 x 1024 on Zen 5, 290-330 us against 240-270 packed).
// Columns 0 .. cols - 1 (whole vectors); the sums are the tile's: +0, then each product in order.
constexpr std::size_t kSgemmStreamBytes = std::size_t{16} << 10;

template <int kUnused = 0>
void SgemmStreamRows(const GemmF32Args& g, const float* HWY_RESTRICT ap, std::size_t cols) {
  const hn::ScalableTag<float> d;
  const std::size_t NL = hn::Lanes(d), K = g.k;
  const std::size_t block = std::max(NL, kSgemmStreamBytes / sizeof(float) / g.m / NL * NL);
  for (std::size_t j0 = 0; j0 < cols; j0 += block) {
    const std::size_t j1 = std::min(cols, j0 + block);
    std::size_t k = K >= 4 ? 4 : 1;
    if (K >= 4)
      SgemmStreamStep<4, true>(d, g, ap, 0, j0, j1);
    else
      SgemmStreamStep<1, true>(d, g, ap, 0, j0, j1);
    for (; k + 4 <= K; k += 4) SgemmStreamStep<4, false>(d, g, ap, k, j0, j1);
    for (; k < K; ++k) SgemmStreamStep<1, false>(d, g, ap, k, j0, j1);
  }
}
#endif

// A transposed B (b_row == 1) with at most kSgemmMR rows of A, x86 vector targets: NL rows of
// the stored B (NL columns of C) by NL values of k loaded as NL vectors and transposed in
// registers, so that vector q holds B[k0 + q][j .. j + NL - 1]; each is multiplied by row r's
// broadcast A[r][k0 + q] and added to C's NL columns of row r in k order: the tile's sums (+0,
// then each product in order) without storing B anywhere. 4 x 4 transposes within 128-bit
// blocks, then (AVX2, AVX-512) the blocks of four row groups exchanged: 64 shuffles per 256
// values with AVX-512, against the pack's 128 plus 16 stores and the tile's reloads.
#undef QUANTKIT_SGEMM_REGISTER_TRANSPOSE
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || \
    HWY_TARGET == HWY_SSSE3
#define QUANTKIT_SGEMM_REGISTER_TRANSPOSE 1
#define QUANTKIT_SGEMM_Q16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// Blocks (a.x, a.y, b.z, b.w) for kImm = x | y << 2 | z << 4 | w << 6 (vshuff32x4).
template <int kImm>
HWY_INLINE hn::Vec512<float> SgemmBlocks(hn::Vec512<float> a, hn::Vec512<float> b) {
  return hn::Vec512<float>{_mm512_shuffle_f32x4(a.raw, b.raw, kImm)};
}
#endif

// Rows j .. j + NL - 1 of the stored B (bt: row j, sc apart) times kRows rows of A (ap, packed),
// k in 0 .. KT - 1 (a multiple of NL), then k in KT .. K - 1 a value at a time; C's NL columns
// j .. of rows 0 .. kRows - 1 assigned.
template <std::size_t kRows, class D>
HWY_INLINE void SgemmTransposedTile(D d, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bt,
                                    std::ptrdiff_t sc, std::size_t KT, std::size_t K, float* HWY_RESTRICT c,
                                    std::size_t ldc) {
  using V = hn::Vec<D>;
  constexpr std::size_t NL = HWY_LANES(float);
  static_assert(NL == 4 || NL == 8 || NL == 16, "128-bit blocks: 4, 8 or 16 lanes");
  static_assert(kRows >= 1 && kRows <= 8, "QUANTKIT_SGEMM_ROWS lists 8 rows");
#define QUANTKIT_SGEMM_DECLARE(r) [[maybe_unused]] V c##r = hn::Zero(d);
  QUANTKIT_SGEMM_ROWS(QUANTKIT_SGEMM_DECLARE)
#undef QUANTKIT_SGEMM_DECLARE
#define QUANTKIT_SGEMM_DECLARE(q) [[maybe_unused]] V u##q = hn::Zero(d);
  QUANTKIT_SGEMM_Q16(QUANTKIT_SGEMM_DECLARE)
#undef QUANTKIT_SGEMM_DECLARE
  // u_q times A[r][k0 + q] (a[q * kSgemmMR + r]) added to C's row r, every row. The sum goes
  // through the barrier too: else GCC computes all 16 x kRows products first and spills them
  // (1 x 1024 x 1024, Zen 5: 125 against 101 us; 4 rows 240 against 155).
#define QUANTKIT_SGEMM_ROW(r, q)                                                          \
  if constexpr ((r) < kRows)                                                              \
    c##r = SgemmRounded(hn::Add(c##r, SgemmRounded(hn::Mul(hn::Set(d, a[(q) * kSgemmMR + (r)]), u##q))));
#define QUANTKIT_SGEMM_STEP(q)                                                                          \
  if constexpr ((q) < NL) {                                                                             \
    QUANTKIT_SGEMM_ROW(0, q) QUANTKIT_SGEMM_ROW(1, q) QUANTKIT_SGEMM_ROW(2, q) QUANTKIT_SGEMM_ROW(3, q) \
    QUANTKIT_SGEMM_ROW(4, q) QUANTKIT_SGEMM_ROW(5, q) QUANTKIT_SGEMM_ROW(6, q) QUANTKIT_SGEMM_ROW(7, q) \
  }
  for (std::size_t k0 = 0; k0 < KT; k0 += NL) {
    const float* HWY_RESTRICT s = bt + k0;
    if constexpr (NL == 4) {
      SgemmTranspose4(d, hn::LoadU(d, s), hn::LoadU(d, s + sc), hn::LoadU(d, s + 2 * sc), hn::LoadU(d, s + 3 * sc),
                      u0, u1, u2, u3);
    } else if constexpr (NL == 8) {
      V t0 = hn::Zero(d), t1 = t0, t2 = t0, t3 = t0, v0 = t0, v1 = t0, v2 = t0, v3 = t0;  // (GCC -Wmaybe-uninitialized)
      SgemmTranspose4(d, hn::LoadU(d, s), hn::LoadU(d, s + sc), hn::LoadU(d, s + 2 * sc), hn::LoadU(d, s + 3 * sc),
                      t0, t1, t2, t3);
      s += 4 * sc;
      SgemmTranspose4(d, hn::LoadU(d, s), hn::LoadU(d, s + sc), hn::LoadU(d, s + 2 * sc), hn::LoadU(d, s + 3 * sc),
                      v0, v1, v2, v3);
      // k0 + m: the lower blocks of rows 0-3 and rows 4-7; k0 + 4 + m: the upper blocks
      u0 = hn::ConcatLowerLower(d, v0, t0), u4 = hn::ConcatUpperUpper(d, v0, t0);
      u1 = hn::ConcatLowerLower(d, v1, t1), u5 = hn::ConcatUpperUpper(d, v1, t1);
      u2 = hn::ConcatLowerLower(d, v2, t2), u6 = hn::ConcatUpperUpper(d, v2, t2);
      u3 = hn::ConcatLowerLower(d, v3, t3), u7 = hn::ConcatUpperUpper(d, v3, t3);
    } else {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
      V g00 = hn::Zero(d), g01 = g00, g02 = g00, g03 = g00, g10 = g00, g11 = g00, g12 = g00, g13 = g00;
      V g20 = g00, g21 = g00, g22 = g00, g23 = g00, g30 = g00, g31 = g00, g32 = g00, g33 = g00;
#define QUANTKIT_SGEMM_GROUP(G)                                                                     \
  SgemmTranspose4(d, hn::LoadU(d, s + (4 * (G)) * sc), hn::LoadU(d, s + (4 * (G) + 1) * sc),           \
                  hn::LoadU(d, s + (4 * (G) + 2) * sc), hn::LoadU(d, s + (4 * (G) + 3) * sc), g##G##0, \
                  g##G##1, g##G##2, g##G##3);
      QUANTKIT_SGEMM_GROUP(0) QUANTKIT_SGEMM_GROUP(1) QUANTKIT_SGEMM_GROUP(2) QUANTKIT_SGEMM_GROUP(3)
#undef QUANTKIT_SGEMM_GROUP
      // block b of group g's t_m (k0 + 4b + m) to block g of u_{4b + m}
#define QUANTKIT_SGEMM_BLOCKS(m, b0, b1, b2, b3)                                        \
  {                                                                                   \
    const V x = SgemmBlocks<0x88>(g0##m, g1##m), y = SgemmBlocks<0xDD>(g0##m, g1##m); \
    const V x2 = SgemmBlocks<0x88>(g2##m, g3##m), y2 = SgemmBlocks<0xDD>(g2##m, g3##m); \
    b0 = SgemmBlocks<0x88>(x, x2);                                                    \
    b2 = SgemmBlocks<0xDD>(x, x2);                                                    \
    b1 = SgemmBlocks<0x88>(y, y2);                                                    \
    b3 = SgemmBlocks<0xDD>(y, y2);                                                    \
  }
      QUANTKIT_SGEMM_BLOCKS(0, u0, u4, u8, u12) QUANTKIT_SGEMM_BLOCKS(1, u1, u5, u9, u13)
      QUANTKIT_SGEMM_BLOCKS(2, u2, u6, u10, u14) QUANTKIT_SGEMM_BLOCKS(3, u3, u7, u11, u15)
#undef QUANTKIT_SGEMM_BLOCKS
#endif
    }
    const float* HWY_RESTRICT a = ap + k0 * kSgemmMR;
    QUANTKIT_SGEMM_Q16(QUANTKIT_SGEMM_STEP)
  }
  for (std::size_t k = KT; k < K; ++k) {  // the last values of k: B's column gathered
    HWY_ALIGN float col[NL];
    for (std::size_t l = 0; l < NL; ++l) col[l] = bt[static_cast<std::ptrdiff_t>(l) * sc + static_cast<std::ptrdiff_t>(k)];
    const float* HWY_RESTRICT a = ap + k * kSgemmMR;
    u0 = hn::Load(d, col);
    QUANTKIT_SGEMM_STEP(0)
  }
#undef QUANTKIT_SGEMM_STEP
#undef QUANTKIT_SGEMM_ROW
#define QUANTKIT_SGEMM_STORE(r) \
  if constexpr ((r) < kRows) hn::StoreU(c##r, d, c + (r) * ldc);
  QUANTKIT_SGEMM_ROWS(QUANTKIT_SGEMM_STORE)
#undef QUANTKIT_SGEMM_STORE
}
#undef QUANTKIT_SGEMM_Q16

template <class D>
HWY_NOINLINE void SgemmTransposedRows(D d, std::size_t rows, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bt,
                                      std::ptrdiff_t sc, std::size_t KT, std::size_t K, float* HWY_RESTRICT c,
                                      std::size_t ldc) {
  constexpr std::size_t M = kSgemmMR;
  switch (rows) {
    case 1: return SgemmTransposedTile<1>(d, ap, bt, sc, KT, K, c, ldc);
    case 2: return SgemmTransposedTile<(2 < M ? 2 : M)>(d, ap, bt, sc, KT, K, c, ldc);
    case 3: return SgemmTransposedTile<(3 < M ? 3 : M)>(d, ap, bt, sc, KT, K, c, ldc);
    case 4: return SgemmTransposedTile<(4 < M ? 4 : M)>(d, ap, bt, sc, KT, K, c, ldc);
    case 5: return SgemmTransposedTile<(5 < M ? 5 : M)>(d, ap, bt, sc, KT, K, c, ldc);
    case 6: return SgemmTransposedTile<(6 < M ? 6 : M)>(d, ap, bt, sc, KT, K, c, ldc);
    case 7: return SgemmTransposedTile<(7 < M ? 7 : M)>(d, ap, bt, sc, KT, K, c, ldc);
    default: return SgemmTransposedTile<M>(d, ap, bt, sc, KT, K, c, ldc);
  }
}
#else
#define QUANTKIT_SGEMM_REGISTER_TRANSPOSE 0
#endif
#undef QUANTKIT_SGEMM_ROWS  // (the tiles above and the transposed tile)

// Products of at most kSgemmMR rows (a batch-1 layer), B stored as is (b_col == 1) or
// transposed (b_row == 1): with one tile of rows every value of B is used once, so packing B
// (a copy to L2 and back) was most of the work. B as is: streamed (SgemmStreamRows; on SCALAR
// and EMU128 read in place by the tile), its last columns short of a vector (of a panel there)
// packed as before. Transposed: on x86 vector targets, NL columns of C at a time transposed in
// registers (SgemmTransposedRows); the last columns (and every column elsewhere) by panels packed
// kc values of k at a time into an L1 buffer (bp), the tile's sums kept in C between chunks:
// stored and reloaded floats, so every sum is the same. ap: the rows of A packed (SgemmPackA).
constexpr std::size_t kSgemmFewRowsChunkBytes = std::size_t{16} << 10;

template <int kUnused = 0>
void GemmF32FewRows(const GemmF32Args& g, const float* HWY_RESTRICT ap, float* HWY_RESTRICT bp, float* HWY_RESTRICT tile) {
  const std::size_t M = g.m, N = g.n, K = g.k;
  const hn::ScalableTag<float> d;
  const std::size_t nr = 2 * SgemmLanes(d);
  if (g.b_col == 1) {
#if !QUANTKIT_SGEMM_GNU_VECTORS && HWY_TARGET != HWY_SCALAR
    const std::size_t full = N / hn::Lanes(d) * hn::Lanes(d);
    SgemmStreamRows(g, ap, full);
#else
    const std::size_t full = N / nr * nr;
    for (std::size_t j = 0; j < full; j += nr) SgemmTileRows(d, M, ap, g.b + j, g.b_row, K, g.c + j, g.ldc);
#endif
    if (full < N) {
      const std::size_t cols = N - full;
      SgemmPackB(g, full, cols, nr, bp, 0, K);
      SgemmTileRows(d, M, ap, bp, static_cast<std::ptrdiff_t>(nr), K, tile, nr);
      for (std::size_t r = 0; r < M; ++r) std::memcpy(g.c + r * g.ldc + full, tile + r * nr, cols * sizeof(float));
    }
    return;
  }
  std::size_t j_start = 0;
#if QUANTKIT_SGEMM_REGISTER_TRANSPOSE
  // With 16 vector registers (below AVX-512) only up to 3 rows gain (1 x 1024 x 1024 on Zen 5:
  // AVX2 and SSE4 8-16 % faster for 1-3 rows, the same for 4, 4-6 % slower for 6).
  if (HWY_LANES(float) == 16 || M <= 3) {
    constexpr std::size_t NL = HWY_LANES(float);
    const std::size_t KT = K / NL * NL;
    for (; j_start + NL <= N; j_start += NL)
      SgemmTransposedRows(d, M, ap, g.b + static_cast<std::ptrdiff_t>(j_start) * g.b_col, g.b_col, KT, K,
                          g.c + j_start, g.ldc);
  }
#endif
  const std::size_t kc = std::max(std::size_t{4}, (kSgemmFewRowsChunkBytes / sizeof(float) / nr) & ~std::size_t{3});
  for (std::size_t j = j_start; j < N; j += nr) {
    const std::size_t cols = std::min(nr, N - j);
    float* c = cols == nr ? g.c + j : tile;  // a partial panel's sums in the local tile
    const std::size_t ldc = cols == nr ? g.ldc : nr;
    for (std::size_t k0 = 0; k0 < K; k0 += kc) {
      const std::size_t k1 = std::min(K, k0 + kc);
      SgemmPackB(g, j, cols, nr, bp, k0, k1);
      if (k0 == 0)
        SgemmTileRows<false>(d, M, ap, bp, static_cast<std::ptrdiff_t>(nr), k1, c, ldc);
      else
        SgemmTileRows<true>(d, M, ap + k0 * kSgemmMR, bp, static_cast<std::ptrdiff_t>(nr), k1 - k0, c, ldc);
    }
    if (cols < nr)
      for (std::size_t r = 0; r < M; ++r) std::memcpy(g.c + r * g.ldc + j, tile + r * nr, cols * sizeof(float));
  }
}

template <int kUnused = 0>
void GemmF32(const GemmF32Args& g) {
  const std::size_t M = g.m, N = g.n, K = g.k;
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (std::size_t i = 0; i < M; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + N, 0.0f);
    return;
  }
  const hn::ScalableTag<float> d;
  const std::size_t nr = 2 * SgemmLanes(d);
  const std::size_t MR = kSgemmMR;
  const std::size_t nc = std::max(nr, kSgemmBBytes / sizeof(float) / K / nr * nr);
  const std::size_t mc = std::max(MR, kSgemmABytes / sizeof(float) / K / MR * MR);
  // The calling thread's, grown when needed and kept: no allocation per call once warm.
  thread_local std::vector<float> abuf, bbuf;
  const std::size_t a_blocks_max = (std::min(mc, M) + MR - 1) / MR;
  if (abuf.size() < a_blocks_max * MR * K) abuf.resize(a_blocks_max * MR * K);
  HWY_ALIGN float tile[kSgemmMR * 2 * (HWY_LANES(float) > 4 ? HWY_LANES(float) : 4)];
  if (M <= MR && !g.b_packed && (g.b_col == 1 || g.b_row == 1)) {
    // one partial panel (B as is) or one chunk of a panel (transposed)
    const std::size_t b_need = g.b_col == 1 ? nr * K : kSgemmFewRowsChunkBytes / sizeof(float) + 4 * nr;
    if (bbuf.size() < b_need) bbuf.resize(b_need);
    SgemmPackA(g, 0, M, abuf.data());
    return GemmF32FewRows(g, abuf.data(), bbuf.data(), tile);
  }
  const std::size_t b_panels_max = (std::min(nc, N) + nr - 1) / nr;
  if (!g.b_packed && bbuf.size() < b_panels_max * nr * K) bbuf.resize(b_panels_max * nr * K);
  for (std::size_t ic = 0; ic < M; ic += mc) {
    const std::size_t mcur = std::min(mc, M - ic);
    const std::size_t blocks = (mcur + MR - 1) / MR;
    for (std::size_t blk = 0; blk < blocks; ++blk)
      SgemmPackA(g, ic + blk * MR, std::min(MR, mcur - blk * MR), abuf.data() + blk * MR * K);
    for (std::size_t jc = 0; jc < N; jc += nc) {
      const std::size_t ncur = std::min(nc, N - jc);
      const std::size_t panels = (ncur + nr - 1) / nr;
      const float* bblock = g.b_packed ? g.b_packed + jc * K : bbuf.data();  // panels of nr columns
      if (!g.b_packed) SgemmPackBBlock(g, jc, ncur, nr, bbuf.data());
      for (std::size_t blk = 0; blk < blocks; ++blk) {
        const std::size_t i = ic + blk * MR;
        const std::size_t mr = std::min(MR, M - i);
        const float* ap = abuf.data() + blk * MR * K;
        for (std::size_t p = 0; p < panels; ++p) {
          const std::size_t j = jc + p * nr;
          const std::size_t cols = std::min(nr, N - j);
          const float* bp = bblock + p * nr * K;
          float* c = g.c + i * g.ldc + j;
          if (mr == MR && cols == nr) {
            SgemmTileAny<kSgemmMR>(d, ap, bp, static_cast<std::ptrdiff_t>(nr), K, c, g.ldc);
          } else if (cols == nr) {
            SgemmTileRows(d, mr, ap, bp, static_cast<std::ptrdiff_t>(nr), K, c, g.ldc);
          } else {  // past the last column: through the local tile, only C's part written
            SgemmTileRows(d, mr, ap, bp, static_cast<std::ptrdiff_t>(nr), K, tile, nr);
            for (std::size_t r = 0; r < mr; ++r) std::memcpy(c + r * g.ldc, tile + r * nr, cols * sizeof(float));
          }
        }
      }
    }
  }
}

// Kernels::gemm_f32_pack_b: all of B (g.b, g.b_row, g.b_col, g.n, g.k) as the panels the
// products read (Kernels::gemm_f32_nr columns each, k-major, zeros right of the last column).
template <int kUnused = 0>
void GemmF32PackB(const GemmF32Args& g, float* HWY_RESTRICT out) {
  if (g.n == 0 || g.k == 0) return;
  const hn::ScalableTag<float> d;
  const std::size_t nr = 2 * SgemmLanes(d);
  const std::size_t nc = std::max(nr, kSgemmBBytes / sizeof(float) / g.k / nr * nr);
  for (std::size_t jc = 0; jc < g.n; jc += nc) SgemmPackBBlock(g, jc, std::min(nc, g.n - jc), nr, out + jc * g.k);
}

template <int kUnused = 0>
std::size_t GemmF32PanelWidth() {
  return 2 * SgemmLanes(hn::ScalableTag<float>());
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_GEMM_F32_INL_H_ toggle
