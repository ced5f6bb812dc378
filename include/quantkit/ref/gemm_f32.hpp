// Scalar reference of the float GEMM kernels (quantkit/simd/gemm_f32.hpp):
//
//   C[i][j] = ((0 + A[i][0] * B[0][j]) + A[i][1] * B[1][j]) + ... + A[i][K-1] * B[K-1][j]
//
// every product and every sum rounded to float (no fused multiply-add), k in increasing order:
// one defined value per element, which every SIMD target reproduces bit for bit (a BLAS's
// blocking and FMA choice make its results differ between machines). Element (i, k) of A is
// a[i * a_row + k * a_col] and (k, j) of B is b[k * b_row + j * b_col] (strides in elements:
// a transposed operand is a swap of its strides); C is row-major with leading dimension ldc.
#pragma once

#include <cstddef>

#include "quantkit/ref/no_contract.hpp"

namespace quantkit {
namespace ref {

inline void gemm_f32(std::size_t M, std::size_t N, std::size_t K, const float* a, std::ptrdiff_t a_row,
                     std::ptrdiff_t a_col, const float* b, std::ptrdiff_t b_row, std::ptrdiff_t b_col,
                     float* c, std::size_t ldc) {
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (std::size_t k = 0; k < K; ++k) {
        const float av = a[static_cast<std::ptrdiff_t>(i) * a_row + static_cast<std::ptrdiff_t>(k) * a_col];
        const float bv = b[static_cast<std::ptrdiff_t>(k) * b_row + static_cast<std::ptrdiff_t>(j) * b_col];
        sum = sum + quantkit::detail::no_contract(av * bv);
      }
      c[i * ldc + j] = sum;
    }
  }
}

}  // namespace ref
}  // namespace quantkit
