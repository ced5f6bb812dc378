// Scalar reference of the int8 GEMM kernels (quantkit/simd/gemm.hpp):
//
//   C[m][n] = sum_k (A[m][k] - za[m]) * (B[k][n] - zb[n])      (int32, modulo 2^32)
//
// A and B are int8 or uint8 (any combination), row-major with leading dimensions lda, ldb,
// ldc (in elements). za has 1 (per tensor) or M (per row) entries, zb 1 or N (per column);
// nullptr means 0. The sum is computed exactly and reduced modulo 2^32 (two's complement
// wrap-around), which is what int32 SIMD accumulation gives; it never overflows for
// K < 2^31 / 255^2 = 33025 (every int8 layer in practice).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace quantkit {
namespace ref {

template <class TA, class TB>
void gemm_s32(std::size_t M, std::size_t N, std::size_t K, const TA* a, std::size_t lda, const TB* b,
              std::size_t ldb, std::int32_t* c, std::size_t ldc, const std::int32_t* za = nullptr,
              std::size_t za_count = 1, const std::int32_t* zb = nullptr, std::size_t zb_count = 1) {
  static_assert((std::is_same<TA, std::int8_t>::value || std::is_same<TA, std::uint8_t>::value) &&
                    (std::is_same<TB, std::int8_t>::value || std::is_same<TB, std::uint8_t>::value),
                "ref::gemm_s32: A and B must be int8 or uint8");
  for (std::size_t m = 0; m < M; ++m) {
    const std::int32_t am = za ? za[za_count == 1 ? 0 : m] : 0;
    for (std::size_t n = 0; n < N; ++n) {
      const std::int32_t bn = zb ? zb[zb_count == 1 ? 0 : n] : 0;
      std::uint32_t sum = 0;  // wraps modulo 2^32, no undefined behaviour
      for (std::size_t k = 0; k < K; ++k) {
        const std::int64_t p = (std::int64_t{a[m * lda + k]} - am) * (std::int64_t{b[k * ldb + n]} - bn);
        sum += static_cast<std::uint32_t>(p);
      }
      c[m * ldc + n] = static_cast<std::int32_t>(sum);
    }
  }
}

}  // namespace ref
}  // namespace quantkit
