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

// One kRows x 2N tile over all of K: ap holds K steps of kSgemmMR values (the first kRows
// used), bp K steps of 2N. Named accumulators, not an array (GCC 12 keeps arrays of vectors in
// memory).
#define QUANTKIT_SGEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
template <std::size_t kRows, class D>
HWY_INLINE void SgemmTile(D d, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp, std::size_t K,
                          float* HWY_RESTRICT c, std::size_t ldc) {
  static_assert(kSgemmMR <= 8, "QUANTKIT_SGEMM_ROWS lists 8 rows");
  using V = hn::Vec<D>;
  const std::size_t N = hn::Lanes(d);
#define QUANTKIT_SGEMM_DECLARE(r) [[maybe_unused]] V c##r##0 = hn::Zero(d), c##r##1 = hn::Zero(d);
  QUANTKIT_SGEMM_ROWS(QUANTKIT_SGEMM_DECLARE)
#undef QUANTKIT_SGEMM_DECLARE
  for (std::size_t k = 0; k < K; ++k, ap += kSgemmMR, bp += 2 * N) {
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
template <std::size_t kRows, class D>
HWY_INLINE void SgemmTileGnu(D, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp, std::size_t K,
                             float* HWY_RESTRICT c, std::size_t ldc) {
  using V = SgemmGnuVec;
  const auto load = [](const float* p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
#define QUANTKIT_SGEMM_DECLARE(r) [[maybe_unused]] V c##r##0 = V{}, c##r##1 = V{};
  QUANTKIT_SGEMM_ROWS(QUANTKIT_SGEMM_DECLARE)
#undef QUANTKIT_SGEMM_DECLARE
  for (std::size_t k = 0; k < K; ++k, ap += kSgemmMR, bp += 8) {
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
#undef QUANTKIT_SGEMM_ROWS

template <std::size_t kRows, class D>
HWY_INLINE void SgemmTileAny(D d, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp, std::size_t K,
                             float* HWY_RESTRICT c, std::size_t ldc) {
  static_assert(kRows >= 1 && kRows <= kSgemmMR, "a tile has 1 .. kSgemmMR rows");
#if QUANTKIT_SGEMM_GNU_VECTORS
  SgemmTileGnu<kRows>(d, ap, bp, K, c, ldc);
#else
  SgemmTile<kRows>(d, ap, bp, K, c, ldc);
#endif
}

// The last rows of A (fewer than kSgemmMR): a tile of just those rows (a 1-row product, e.g. a
// depthwise convolution's, costs one row's work, not kSgemmMR rows').
template <class D>
HWY_NOINLINE void SgemmTileRows(D d, std::size_t rows, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp,
                                std::size_t K, float* HWY_RESTRICT c, std::size_t ldc) {
  constexpr std::size_t M = kSgemmMR;
  switch (rows) {
    case 1: return SgemmTileAny<1>(d, ap, bp, K, c, ldc);
    case 2: return SgemmTileAny<(2 < M ? 2 : M)>(d, ap, bp, K, c, ldc);
    case 3: return SgemmTileAny<(3 < M ? 3 : M)>(d, ap, bp, K, c, ldc);
    case 4: return SgemmTileAny<(4 < M ? 4 : M)>(d, ap, bp, K, c, ldc);
    case 5: return SgemmTileAny<(5 < M ? 5 : M)>(d, ap, bp, K, c, ldc);
    case 6: return SgemmTileAny<(6 < M ? 6 : M)>(d, ap, bp, K, c, ldc);
    case 7: return SgemmTileAny<(7 < M ? 7 : M)>(d, ap, bp, K, c, ldc);
    default: return SgemmTileAny<M>(d, ap, bp, K, c, ldc);
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

// Columns j0 .. j0 + cols - 1 of B (cols <= nr) as bp[k * nr + col]; zeros right of them.
// Packing is most of a product with few rows of A (a batch-1 layer), so columns of B (b_row == 1:
// trans_b, as ONNX Gemm's weights usually are) go in 4 x 4 blocks transposed in registers, in
// chunks of kSgemmPackKChunk values of k so that the panel rows being written stay in L1 while
// the columns are walked (1 x 1024 x 1024 on Zen 5, AVX-512: 723 -> 183 us; one value at a time,
// column after column, every store went to another line of a 128 KiB panel).
constexpr std::size_t kSgemmPackKChunk = 64;

template <int kUnused = 0>
void SgemmPackB(const GemmF32Args& g, std::size_t j0, std::size_t cols, std::size_t nr, float* HWY_RESTRICT bp) {
  const std::size_t K = g.k;
#if HWY_TARGET != HWY_SCALAR
  if (g.b_row == 1 && g.b_col != 1) {
    const hn::FixedTag<float, 4> d4;
    const hn::Repartition<std::uint64_t, decltype(d4)> d64;
    const std::size_t cols4 = cols & ~std::size_t{3}, K4 = K & ~std::size_t{3};
    const std::ptrdiff_t sc = g.b_col;
    for (std::size_t k0 = 0; k0 < K4; k0 += kSgemmPackKChunk) {
      const std::size_t k1 = std::min(K4, k0 + kSgemmPackKChunk);
      for (std::size_t col = 0; col < cols4; col += 4) {
        const float* s0 = g.b + static_cast<std::ptrdiff_t>(j0 + col) * sc;
        float* out = bp + col;
        for (std::size_t k = k0; k < k1; k += 4) {
          const auto r0 = hn::LoadU(d4, s0 + k), r1 = hn::LoadU(d4, s0 + sc + k);
          const auto r2 = hn::LoadU(d4, s0 + 2 * sc + k), r3 = hn::LoadU(d4, s0 + 3 * sc + k);
          // t0 = r0[0] r1[0] r0[1] r1[1], t1 = r0[2] r1[2] r0[3] r1[3]; t2, t3 the same of r2, r3
          const auto t0 = hn::BitCast(d64, hn::InterleaveLower(d4, r0, r1));
          const auto t1 = hn::BitCast(d64, hn::InterleaveUpper(d4, r0, r1));
          const auto t2 = hn::BitCast(d64, hn::InterleaveLower(d4, r2, r3));
          const auto t3 = hn::BitCast(d64, hn::InterleaveUpper(d4, r2, r3));
          hn::StoreU(hn::BitCast(d4, hn::InterleaveLower(d64, t0, t2)), d4, out + k * nr);
          hn::StoreU(hn::BitCast(d4, hn::InterleaveUpper(d64, t0, t2)), d4, out + (k + 1) * nr);
          hn::StoreU(hn::BitCast(d4, hn::InterleaveLower(d64, t1, t3)), d4, out + (k + 2) * nr);
          hn::StoreU(hn::BitCast(d4, hn::InterleaveUpper(d64, t1, t3)), d4, out + (k + 3) * nr);
        }
      }
    }
    // the last k (K4 ..) of those columns, the last columns (cols4 ..), zeros past cols
    for (std::size_t col = 0; col < nr; ++col) {
      if (col >= cols) {
        for (std::size_t k = 0; k < K; ++k) bp[k * nr + col] = 0.0f;
        continue;
      }
      const float* src = g.b + static_cast<std::ptrdiff_t>(j0 + col) * sc;
      for (std::size_t k = col < cols4 ? K4 : 0; k < K; ++k) bp[k * nr + col] = src[k];
    }
    return;
  }
#endif
  if (g.b_col == 1) {
    for (std::size_t k = 0; k < K; ++k) {
      const float* src = g.b + static_cast<std::ptrdiff_t>(k) * g.b_row + static_cast<std::ptrdiff_t>(j0);
      std::memcpy(bp + k * nr, src, cols * sizeof(float));
      std::fill(bp + k * nr + cols, bp + (k + 1) * nr, 0.0f);
    }
  } else {
    for (std::size_t col = 0; col < nr; ++col) {
      if (col >= cols) {
        for (std::size_t k = 0; k < K; ++k) bp[k * nr + col] = 0.0f;
        continue;
      }
      const float* src = g.b + static_cast<std::ptrdiff_t>(j0 + col) * g.b_col;
      for (std::size_t k = 0; k < K; ++k) bp[k * nr + col] = src[static_cast<std::ptrdiff_t>(k) * g.b_row];
    }
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
  const std::size_t b_panels_max = (std::min(nc, N) + nr - 1) / nr;
  if (bbuf.size() < b_panels_max * nr * K) bbuf.resize(b_panels_max * nr * K);
  HWY_ALIGN float tile[kSgemmMR * 2 * (HWY_LANES(float) > 4 ? HWY_LANES(float) : 4)];
  for (std::size_t ic = 0; ic < M; ic += mc) {
    const std::size_t mcur = std::min(mc, M - ic);
    const std::size_t blocks = (mcur + MR - 1) / MR;
    for (std::size_t blk = 0; blk < blocks; ++blk)
      SgemmPackA(g, ic + blk * MR, std::min(MR, mcur - blk * MR), abuf.data() + blk * MR * K);
    for (std::size_t jc = 0; jc < N; jc += nc) {
      const std::size_t ncur = std::min(nc, N - jc);
      const std::size_t panels = (ncur + nr - 1) / nr;
      for (std::size_t p = 0; p < panels; ++p)
        SgemmPackB(g, jc + p * nr, std::min(nr, ncur - p * nr), nr, bbuf.data() + p * nr * K);
      for (std::size_t blk = 0; blk < blocks; ++blk) {
        const std::size_t i = ic + blk * MR;
        const std::size_t mr = std::min(MR, M - i);
        const float* ap = abuf.data() + blk * MR * K;
        for (std::size_t p = 0; p < panels; ++p) {
          const std::size_t j = jc + p * nr;
          const std::size_t cols = std::min(nr, N - j);
          const float* bp = bbuf.data() + p * nr * K;
          float* c = g.c + i * g.ldc + j;
          if (mr == MR && cols == nr) {
            SgemmTileAny<kSgemmMR>(d, ap, bp, K, c, g.ldc);
          } else if (cols == nr) {
            SgemmTileRows(d, mr, ap, bp, K, c, g.ldc);
          } else {  // past the last column: through the local tile, only C's part written
            SgemmTileRows(d, mr, ap, bp, K, tile, nr);
            for (std::size_t r = 0; r < mr; ++r) std::memcpy(c + r * g.ldc, tile + r * nr, cols * sizeof(float));
          }
        }
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_GEMM_F32_INL_H_ toggle
