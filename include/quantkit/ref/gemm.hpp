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

// Scalar reference of the pair-sum kernels (GemmKernels::pair_sums, quantkit/simd/gemm_abi.hpp):
// ONNX Runtime's uint8 x int8 arithmetic on x86-64 without VNNI. For every row m of A (M x K,
// uint8) and row n of Bt (N x K, int8):
//
//   p_j = A[m][2j] Bt[n][2j] + A[m][2j+1] Bt[n][2j+1]     (an odd K's last pair: one product)
//   saturated[m][n] = sum_j clamp(p_j, -32768, 32767),   exact[m][n] = sum_j p_j
//
// both int32 modulo 2^32. With exact given (non-null), saturated_pairs counts the p_j outside
// int16 and max_pair / min_pair extend to the extreme p_j (callers start them at 0).
inline void pair_sums_s16sat(std::size_t M, std::size_t N, std::size_t K, const std::uint8_t* a, std::size_t lda,
                             const std::int8_t* bt, std::size_t ldb, std::int32_t* saturated, std::int32_t* exact,
                             std::size_t ldc, std::int64_t& saturated_pairs, std::int32_t& max_pair,
                             std::int32_t& min_pair) {
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) {
      std::uint32_t sat = 0, ex = 0;  // wrap modulo 2^32, no undefined behaviour
      for (std::size_t k = 0; k < K; k += 2) {
        std::int64_t p = std::int64_t{a[m * lda + k]} * bt[n * ldb + k];
        if (k + 1 < K) p += std::int64_t{a[m * lda + k + 1]} * bt[n * ldb + k + 1];
        const std::int64_t s = p < -32768 ? -32768 : p > 32767 ? 32767 : p;
        sat += static_cast<std::uint32_t>(s);
        ex += static_cast<std::uint32_t>(p);
        if (exact) {
          saturated_pairs += s != p;
          if (p > max_pair) max_pair = static_cast<std::int32_t>(p);
          if (p < min_pair) min_pair = static_cast<std::int32_t>(p);
        }
      }
      saturated[m * ldc + n] = static_cast<std::int32_t>(sat);
      if (exact) exact[m * ldc + n] = static_cast<std::int32_t>(ex);
    }
}

}  // namespace ref
}  // namespace quantkit
