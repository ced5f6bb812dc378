// quantkit::simd float GEMM: C = op(A) * op(B), one defined result on every Highway target.
//
//   C[i][j] = ((0 + A[i][0] * B[0][j]) + A[i][1] * B[1][j]) + ... + A[i][K-1] * B[K-1][j]
//
// with every product and sum rounded to float (no fused multiply-add), k in increasing order:
// bit-identical to quantkit::ref::gemm_f32 on AVX3_DL, AVX3, AVX2, SSE4, SSSE3 and SCALAR, so a
// float model gives the same outputs (and calibration the same ranges) on every machine.
//
//   // A: M x K row-major (or K x M when trans_a), B: K x N (or N x K when trans_b), C: M x N
//   simd::gemm_f32(M, N, K, a, lda, /*trans_a=*/false, b, ldb, /*trans_b=*/true, c, ldc);
//
// The kernels are those of `kernels` when given (e.g. simd::kernels_for(HWY_AVX2)), else
// simd::active_kernels(). One thread; B is packed on every call (unless packed once: below),
// except with at most one tile of rows (8 on AVX-512, 6 elsewhere: a batch-1 layer), where B
// as is is streamed in place and a transposed B transposed in registers (x86 vector targets:
// up to 8 rows on AVX-512, 3 on AVX2/SSE4; otherwise packed a few KiB at a time).
//
// A B used again and again (a layer's constant weights) can be packed once, in the kernels'
// own layout, and multiplied without a copy: one sequential stream at any number of rows.
//
//   std::vector<float> pb(simd::gemm_f32_packed_size(K, N));
//   simd::gemm_f32_pack_b(K, N, b, ldb, /*trans_b=*/true, pb.data());
//   simd::gemm_f32_prepacked(M, N, K, a, lda, /*trans_a=*/false, pb.data(), simd::gemm_f32_panel_width(), c, ldc);
//
// The same sums as with B given as is (bit for bit). The layout is panels of
// gemm_f32_panel_width() columns (8 floats on SSE4 and SCALAR, 16 on AVX2, 32 on AVX-512); a B
// packed for one width multiplied with kernels of another is an error naming both.
#pragma once

#include <cstddef>

#include "quantkit/error.hpp"
#include "quantkit/ref/gemm_f32.hpp"
#include "quantkit/simd/dispatch.hpp"

namespace quantkit {
namespace simd {

// The strided form (GemmF32Args: any element strides for A and B). Checks nothing but the
// kernel table.
inline void gemm_f32(const GemmF32Args& args, const Kernels* kernels = nullptr) {
  const Kernels& k = kernels ? *kernels : active_kernels();
  if (!k.gemm_f32) quantkit::detail::fail("simd::gemm_f32: the kernels of target ", k.name, " have no float GEMM");
  k.gemm_f32(args);
}

namespace detail {
// The checks of A and C (`fn` names the entry point, `b_name` its B) and GemmF32Args with A and
// C (m == 0: nothing to compute).
inline GemmF32Args gemm_f32_args(const char* fn, std::size_t M, std::size_t N, std::size_t K, const float* a,
                                 std::size_t lda, bool trans_a, const void* b, const char* b_name, float* c,
                                 std::size_t ldc) {
  GemmF32Args g;
  if (M == 0 || N == 0) return g;
  if (!c) quantkit::detail::fail(fn, ": C is null for a ", M, " x ", N, " product");
  if (ldc < N) quantkit::detail::fail(fn, ": ldc ", ldc, " is less than N = ", N);
  if (K > 0) {
    if (!a || !b) quantkit::detail::fail(fn, ": ", !a ? "A" : b_name, " is null with K = ", K);
    const std::size_t a_min = trans_a ? M : K;  // row length of A as stored
    if (lda < a_min)
      quantkit::detail::fail(fn, ": lda ", lda, " is less than the ", a_min, " values of a row of A",
                             trans_a ? " (transposed)" : "");
  }
  g.m = M;
  g.n = N;
  g.k = K;
  g.a = a;
  g.a_row = trans_a ? 1 : static_cast<std::ptrdiff_t>(lda);
  g.a_col = trans_a ? static_cast<std::ptrdiff_t>(lda) : 1;
  g.c = c;
  g.ldc = ldc;
  return g;
}
}  // namespace detail

inline void gemm_f32(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda, bool trans_a,
                     const float* b, std::size_t ldb, bool trans_b, float* c, std::size_t ldc,
                     const Kernels* kernels = nullptr) {
  GemmF32Args g = detail::gemm_f32_args("simd::gemm_f32", M, N, K, a, lda, trans_a, b, "B", c, ldc);
  if (g.m == 0) return;
  const std::size_t b_min = trans_b ? K : N;
  if (K > 0 && ldb < b_min)
    quantkit::detail::fail("simd::gemm_f32: ldb ", ldb, " is less than the ", b_min, " values of a row of B",
                           trans_b ? " (transposed)" : "");
  g.b = b;
  g.b_row = trans_b ? 1 : static_cast<std::ptrdiff_t>(ldb);
  g.b_col = trans_b ? static_cast<std::ptrdiff_t>(ldb) : 1;
  gemm_f32(g, kernels);
}

// Columns of the kernels' packed B (panel width): the layout gemm_f32_pack_b writes.
inline std::size_t gemm_f32_panel_width(const Kernels* kernels = nullptr) {
  const Kernels& k = kernels ? *kernels : active_kernels();
  if (!k.gemm_f32_nr || !k.gemm_f32_pack_b)
    quantkit::detail::fail("simd::gemm_f32_panel_width: the kernels of target ", k.name, " cannot pack B");
  return k.gemm_f32_nr();
}

// Floats of a K x N B packed with panels of `panel_width` columns (0: the kernels').
inline std::size_t gemm_f32_packed_size(std::size_t K, std::size_t N, const Kernels* kernels = nullptr,
                                        std::size_t panel_width = 0) {
  const std::size_t nr = panel_width ? panel_width : gemm_f32_panel_width(kernels);
  return (N + nr - 1) / nr * nr * K;
}

// B (K x N, or N x K when trans_b) into `packed` (gemm_f32_packed_size(K, N, kernels) floats).
inline void gemm_f32_pack_b(std::size_t K, std::size_t N, const float* b, std::size_t ldb, bool trans_b,
                            float* packed, const Kernels* kernels = nullptr) {
  const Kernels& k = kernels ? *kernels : active_kernels();
  gemm_f32_panel_width(&k);  // the kernels can pack
  if (K == 0 || N == 0) return;
  if (!b || !packed) quantkit::detail::fail("simd::gemm_f32_pack_b: ", !b ? "B" : "the output", " is null for a ", K, " x ", N, " B");
  const std::size_t b_min = trans_b ? K : N;
  if (ldb < b_min)
    quantkit::detail::fail("simd::gemm_f32_pack_b: ldb ", ldb, " is less than the ", b_min, " values of a row of B",
                           trans_b ? " (transposed)" : "");
  GemmF32Args g;
  g.n = N;
  g.k = K;
  g.b = b;
  g.b_row = trans_b ? 1 : static_cast<std::ptrdiff_t>(ldb);
  g.b_col = trans_b ? static_cast<std::ptrdiff_t>(ldb) : 1;
  k.gemm_f32_pack_b(g, packed);
}

// C = op(A) * B with B packed by gemm_f32_pack_b in panels of `panel_width` columns: an error
// unless that is the kernels' width (B packed for another target).
inline void gemm_f32_prepacked(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda,
                               bool trans_a, const float* b_packed, std::size_t panel_width, float* c,
                               std::size_t ldc, const Kernels* kernels = nullptr) {
  const Kernels& k = kernels ? *kernels : active_kernels();
  const std::size_t nr = gemm_f32_panel_width(&k);
  if (panel_width != nr)
    quantkit::detail::fail("simd::gemm_f32_prepacked: B was packed in panels of ", panel_width,
                           " columns; the kernels of target ", k.name, " read panels of ", nr,
                           " (pack B with these kernels)");
  GemmF32Args g =
      detail::gemm_f32_args("simd::gemm_f32_prepacked", M, N, K, a, lda, trans_a, b_packed, "packed B", c, ldc);
  if (g.m == 0) return;
  g.b_packed = b_packed;
  gemm_f32(g, &k);
}

}  // namespace simd
}  // namespace quantkit
