// The plain int8 GEMM loop (u8 x s8 -> int32, k innermost over a transposed B), compiled with
// -O3 -march=x86-64 (what a portable binary ships).
#include <cstddef>
#include <cstdint>

void plain_gemm_baseline(std::size_t M, std::size_t N, std::size_t K, const std::uint8_t* a, const std::int8_t* bt,
                       std::int32_t* c) {
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) {
      std::int32_t sum = 0;
      for (std::size_t k = 0; k < K; ++k) sum += static_cast<std::int32_t>(a[m * K + k]) * bt[n * K + k];
      c[m * N + n] = sum;
    }
}
