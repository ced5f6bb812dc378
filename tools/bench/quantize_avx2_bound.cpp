// What f32 -> int8 quantize (per tensor, half-even by VCVTPS2DQ) gains on AVX2 from testing each
// block of 32 values for NaN once instead of masking every vector, and from sending vectors of
// the block past the divider by Markstein's step (quantize-inl.h: QuantizeBlockAvx2,
// DivideMarksteinAvx2). The block: per vector divide, upper clamp, NaN compare and mask,
// VCVTPS2DQ; then ByteBlockPacker's packs, zero point, lower clamp and permute. Variants: "mask"
// (every vector masks, every vector divides: the kernel before), "test k" (one NaN test per
// block, k of the 4 vectors by Markstein's step). The program first checks that every variant
// gives the bytes of "mask" for random float bit patterns (NaN, infinities, huge values in any
// lane) and ties over random scales in [2^-27, 2^28]; the shared parts are in
// avx2_bound_common.hpp.
// Not part of the build (needs AVX2 + FMA):
//   g++ -O3 -march=native -std=c++17 tools/bench/quantize_avx2_bound.cpp -o /tmp/q_bound && /tmp/q_bound
#include "avx2_bound_common.hpp"

namespace {

using avx2_bound::any_nan;
using avx2_bound::divide_markstein;

template <bool kMarkstein, bool kMask>
QB_INLINE __m256i quantize_offset(__m256 x, __m256 s, __m256 r, __m256 hi) {
  const __m256 q = kMarkstein ? divide_markstein(x, s, r) : _mm256_div_ps(x, s);
  const __m256 t = _mm256_min_ps(q, hi);
  return _mm256_cvtps_epi32(kMask ? _mm256_and_ps(_mm256_cmp_ps(x, x, _CMP_EQ_OQ), t) : t);
}

// K < 0: "mask"; else "test K" (the second vector first, then the fourth, third, first).
template <int K>
__attribute__((noinline)) void run(const float* x, signed char* y, std::size_t n, float scale, float zero) {
  const __m256 s = _mm256_set1_ps(scale), r = _mm256_set1_ps(1.0f / scale), hi = _mm256_set1_ps(127 - zero);
  const __m256i z16 = _mm256_set1_epi16(static_cast<short>(zero)), qmin8 = _mm256_set1_epi8(-128);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (std::size_t i = 0; i + 32 <= n; i += 32) {
    const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
    const __m256 x2 = _mm256_loadu_ps(x + i + 16), x3 = _mm256_loadu_ps(x + i + 24);
    __m256i a, b, c, d;
    if (K >= 0 && __builtin_expect(!any_nan(x0, x1, x2, x3), 1)) {
      a = quantize_offset<(K >= 4), false>(x0, s, r, hi);
      b = quantize_offset<(K >= 1), false>(x1, s, r, hi);
      c = quantize_offset<(K >= 3), false>(x2, s, r, hi);
      d = quantize_offset<(K >= 2), false>(x3, s, r, hi);
    } else {
      a = quantize_offset<false, true>(x0, s, r, hi);
      b = quantize_offset<false, true>(x1, s, r, hi);
      c = quantize_offset<false, true>(x2, s, r, hi);
      d = quantize_offset<false, true>(x3, s, r, hi);
    }
    const __m256i ab = _mm256_adds_epi16(_mm256_packs_epi32(a, b), z16);
    const __m256i cd = _mm256_adds_epi16(_mm256_packs_epi32(c, d), z16);
    const __m256i o = _mm256_permutevar8x32_epi32(_mm256_max_epi8(_mm256_packs_epi16(ab, cd), qmin8), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), o);
  }
}

}  // namespace

int main() {
  return avx2_bound::check_and_time<signed char>(
      [](auto k, const float* x, signed char* y, std::size_t n, float scale, float zero) {
        run<decltype(k)::value>(x, y, n, scale, zero);
      });
}
