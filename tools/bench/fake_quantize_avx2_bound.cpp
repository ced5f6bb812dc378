// What fake-quantize (f32 -> f32, half-even, per tensor) gains on AVX2 from testing each block
// of 32 values for NaN once instead of masking every vector, and from sending vectors of the
// block past the divider by Markstein's step (quantize-inl.h: FakeQuantizeBlock,
// DivideMarksteinAvx2). The block: per vector divide, two clamps, round, FMA for +0, NaN compare
// and mask. Variants: "mask" (every vector masks and divides: the kernel before), "test k" (one
// NaN test per block, k of the 4 vectors by Markstein's step). Markstein's step alone, with every
// vector still masking, was no faster (five or six operations for one division: 6.0-6.3 Gelem/s
// all dividing against 5.4-6.0 with 1-2 of 4 on the AVX2 host of 2026-11-27). The program first
// checks that every variant gives the bits of "mask" for random float bit patterns (NaN,
// infinities, huge values in any lane) and ties over random scales in [2^-27, 2^28].
// Not part of the build (needs AVX2 + FMA):
//   g++ -O3 -march=native -std=c++17 tools/bench/fake_quantize_avx2_bound.cpp -o /tmp/fq_bound && /tmp/fq_bound
// Data as bench_kernels: values uniform in [-1.1, 1.1], scale 1/127, zero point 2, int8 range.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#define QB_INLINE __attribute__((always_inline)) inline

namespace {

// q0 held at -2^30 or above: -inf stays -inf after the step instead of NaN; +inf q0 gives NaN,
// which MINPS(q, hi) turns into hi.
QB_INLINE __m256 divide_markstein(__m256 x, __m256 s, __m256 r) {
  const __m256 q0 = _mm256_max_ps(_mm256_mul_ps(x, r), _mm256_set1_ps(-0x1p30f));
  return _mm256_fnmadd_ps(_mm256_fmsub_ps(q0, s, x), r, q0);
}

template <bool kMarkstein, bool kMask>
QB_INLINE __m256 fake_quantize(__m256 x, __m256 s, __m256 r, __m256 lo, __m256 hi) {
  const __m256 q = kMarkstein ? divide_markstein(x, s, r) : _mm256_div_ps(x, s);
  const __m256 t = _mm256_max_ps(_mm256_min_ps(q, hi), lo);
  const __m256 y = _mm256_fmadd_ps(_mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), s, _mm256_setzero_ps());
  return kMask ? _mm256_and_ps(_mm256_cmp_ps(x, x, _CMP_EQ_OQ), y) : y;
}

QB_INLINE bool any_nan(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 un = _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_UNORD_Q), _mm256_cmp_ps(c, d, _CMP_UNORD_Q));
  return _mm256_testz_ps(un, un) == 0;
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

template <class F>
double gelem_per_s(F f, std::size_t n) {
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < 2000; ++it) f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 2000);
  }
  return static_cast<double>(n) / best / 1e9;
}

long mismatches() {
  std::mt19937 g(5);
  std::uniform_int_distribution<unsigned> u;
  long bad = 0;
  constexpr std::size_t n = 64 * 32;
  std::vector<float> x(n);
  std::vector<float> want(n), got(n);
  for (int k = 0; k < 20000; ++k) {
    float s;
    do {
      const unsigned bits = (u(g) & 0x007fffffu) | ((100u + u(g) % 56u) << 23);
      std::memcpy(&s, &bits, 4);
    } while (!(s >= 0x1p-27f && s <= 0x1p28f));
    for (std::size_t j = 0; j < n; ++j) {
      if (j % 3 == 0) {  // ties and integers
        x[j] = static_cast<float>(static_cast<int>(u(g) % 600) - 300) * 0.5f * s;
      } else {
        const unsigned bits = u(g) % 16 == 0 ? u(g) | 0x7f800000u : u(g);  // some NaN / Inf
        std::memcpy(&x[j], &bits, 4);
      }
    }
    x[u(g) % n] = INFINITY;
    x[u(g) % n] = -INFINITY;
    const float zero = static_cast<float>(static_cast<int>(u(g) % 21) - 10);
    run<-1>(x.data(), want.data(), n, s, zero);
    const auto count = [&](auto kk) {
      run<decltype(kk)::value>(x.data(), got.data(), n, s, zero);
      bad += static_cast<long>(std::memcmp(got.data(), want.data(), n * sizeof(float)) != 0);
    };
    count(std::integral_constant<int, 0>());
    count(std::integral_constant<int, 1>());
    count(std::integral_constant<int, 2>());
    count(std::integral_constant<int, 3>());
    count(std::integral_constant<int, 4>());
  }
  return bad;
}

}  // namespace

int main() {
  std::printf("variants against \"mask\", calls with different bits: %ld\n", mismatches());
  const float scale = 1.0f / 127, zero = 2;
  for (const std::size_t n : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}}) {
    std::vector<float> x(n);
    std::vector<float> y(n);
    std::mt19937 g(1);
    std::uniform_real_distribution<float> u(-1.1f, 1.1f);
    for (float& v : x) v = u(g);
    const auto time = [&](auto k) {
      return gelem_per_s([&] { run<decltype(k)::value>(x.data(), y.data(), n, scale, zero); asm volatile("" ::: "memory"); }, n);
    };
    std::printf("n=%zu  Gelem/s: mask %.2f  test 0 %.2f  test 1 %.2f  test 2 %.2f  test 3 %.2f  test 4 %.2f\n", n,
                time(std::integral_constant<int, -1>()), time(std::integral_constant<int, 0>()),
                time(std::integral_constant<int, 1>()), time(std::integral_constant<int, 2>()),
                time(std::integral_constant<int, 3>()), time(std::integral_constant<int, 4>()));
  }
}
