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
// simd::active_kernels(). One thread; B is packed on every call (weights are not cached),
// except with at most one tile of rows (8 on AVX-512, 6 elsewhere: a batch-1 layer), where B
// as is is streamed in place and a transposed B transposed in registers (x86 vector targets:
// up to 8 rows on AVX-512, 3 on AVX2/SSE4; otherwise packed a few KiB at a time).
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

inline void gemm_f32(std::size_t M, std::size_t N, std::size_t K, const float* a, std::size_t lda, bool trans_a,
                     const float* b, std::size_t ldb, bool trans_b, float* c, std::size_t ldc,
                     const Kernels* kernels = nullptr) {
  if (M == 0 || N == 0) return;
  if (!c) quantkit::detail::fail("simd::gemm_f32: C is null for a ", M, " x ", N, " product");
  if (ldc < N) quantkit::detail::fail("simd::gemm_f32: ldc ", ldc, " is less than N = ", N);
  if (K > 0) {
    if (!a || !b) quantkit::detail::fail("simd::gemm_f32: ", !a ? "A" : "B", " is null with K = ", K);
    const std::size_t a_min = trans_a ? M : K;  // row length of A as stored
    const std::size_t b_min = trans_b ? K : N;
    if (lda < a_min)
      quantkit::detail::fail("simd::gemm_f32: lda ", lda, " is less than the ", a_min, " values of a row of A",
                             trans_a ? " (transposed)" : "");
    if (ldb < b_min)
      quantkit::detail::fail("simd::gemm_f32: ldb ", ldb, " is less than the ", b_min, " values of a row of B",
                             trans_b ? " (transposed)" : "");
  }
  GemmF32Args g;
  g.m = M;
  g.n = N;
  g.k = K;
  g.a = a;
  g.a_row = trans_a ? 1 : static_cast<std::ptrdiff_t>(lda);
  g.a_col = trans_a ? static_cast<std::ptrdiff_t>(lda) : 1;
  g.b = b;
  g.b_row = trans_b ? 1 : static_cast<std::ptrdiff_t>(ldb);
  g.b_col = trans_b ? static_cast<std::ptrdiff_t>(ldb) : 1;
  g.c = c;
  g.ldc = ldc;
  gemm_f32(g, kernels);
}

}  // namespace simd
}  // namespace quantkit
