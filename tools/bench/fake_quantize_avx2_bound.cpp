// What fake-quantize (f32 -> f32, half-even, per tensor) gains on AVX2 from testing each block
// of 32 values for NaN once instead of masking every vector, and from sending vectors of the
// block past the divider by Markstein's step (quantize-inl.h: FakeQuantizeBlock,
// DivideMarksteinAvx2). The block: per vector divide, two clamps, round, FMA for +0, NaN compare
// and mask. Variants: "mask" (every vector masks and divides: the kernel before), "test k" (one
// NaN test per block, k of the 4 vectors by Markstein's step). Markstein's step alone, with every
// vector still masking, was no faster (five or six operations for one division: 6.0-6.3 Gelem/s
// all dividing against 5.4-6.0 with 1-2 of 4 on the AVX2 host of 2026-11-27). The program first
// checks that every variant gives the bits of "mask" for random float bit patterns (NaN,
// infinities, huge values in any lane) and ties over random scales in [2^-27, 2^28]; the shared
// parts are in avx2_bound_common.hpp.
// Not part of the build (needs AVX2 + FMA):
//   g++ -O3 -march=native -std=c++17 tools/bench/fake_quantize_avx2_bound.cpp -o /tmp/fq_bound && /tmp/fq_bound
#include "avx2_bound_common.hpp"

namespace {

using avx2_bound::any_nan;
using avx2_bound::divide_markstein;

template <bool kMarkstein, bool kMask>
QB_INLINE __m256 fake_quantize(__m256 x, __m256 s, __m256 r, __m256 lo, __m256 hi) {
  const __m256 q = kMarkstein ? divide_markstein(x, s, r) : _mm256_div_ps(x, s);
  const __m256 t = _mm256_max_ps(_mm256_min_ps(q, hi), lo);
  const __m256 y = _mm256_fmadd_ps(_mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), s, _mm256_setzero_ps());
  return kMask ? _mm256_and_ps(_mm256_cmp_ps(x, x, _CMP_EQ_OQ), y) : y;
}

// K < 0: "mask"; else "test K" (the second vector first, then the fourth, third, first).
template <int K>
__attribute__((noinline)) void run(const float* x, float* y, std::size_t n, float scale, float zero) {
  const __m256 s = _mm256_set1_ps(scale), r = _mm256_set1_ps(1.0f / scale);
  const __m256 lo = _mm256_set1_ps(-128 - zero), hi = _mm256_set1_ps(127 - zero);
  for (std::size_t i = 0; i + 32 <= n; i += 32) {
    const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
    const __m256 x2 = _mm256_loadu_ps(x + i + 16), x3 = _mm256_loadu_ps(x + i + 24);
    __m256 a, b, c, d;
    if (K >= 0 && __builtin_expect(!any_nan(x0, x1, x2, x3), 1)) {
      a = fake_quantize<(K >= 4), false>(x0, s, r, lo, hi);
      b = fake_quantize<(K >= 1), false>(x1, s, r, lo, hi);
      c = fake_quantize<(K >= 3), false>(x2, s, r, lo, hi);
      d = fake_quantize<(K >= 2), false>(x3, s, r, lo, hi);
    } else {
      a = fake_quantize<false, true>(x0, s, r, lo, hi);
      b = fake_quantize<false, true>(x1, s, r, lo, hi);
      c = fake_quantize<false, true>(x2, s, r, lo, hi);
      d = fake_quantize<false, true>(x3, s, r, lo, hi);
    }
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + 8, b);
    _mm256_storeu_ps(y + i + 16, c);
    _mm256_storeu_ps(y + i + 24, d);
  }
}

}  // namespace

int main() {
  return avx2_bound::check_and_time<float>(
      [](auto k, const float* x, float* y, std::size_t n, float scale, float zero) {
        run<decltype(k)::value>(x, y, n, scale, zero);
      });
}
