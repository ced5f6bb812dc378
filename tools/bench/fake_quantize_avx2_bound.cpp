// Whether fake-quantize (f32 -> f32, half-even, per tensor) on AVX2 gains by sending vectors
// past the divider, as the AVX-512 kernels do (quantize-inl.h: DivideMarkstein). The block of
// 32 values the AVX2 kernel runs (FakeQuantizeVec: divide, two clamps, round, FMA for +0, NaN
// compare and mask per vector) against the same block with 1, 2, 3 or 4 of its vectors
// dividing by Markstein's step instead. AVX2 has no fixupimm to repair the step where x * (1/s)
// is infinite, so the residual is clamped to +-FLT_MAX first (a max and a min: five operations
// on the FMA and add units for one division); the program checks that this step equals the
// division for every |x / s| >= 1/4 it times (smaller quotients round to 0 either way).
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

#define FB_INLINE __attribute__((always_inline)) inline

namespace {

constexpr float kMax = 3.4028235e38f;

// x / s by Markstein's step: q0 = x * r, e = q0 * s - x (exact), q = q0 - e * r; e clamped so
// that an infinite q0 (x infinite or the quotient past the float range) stays q0, not NaN.
FB_INLINE __m256 divide_markstein(__m256 x, __m256 s, __m256 r) {
  const __m256 q0 = _mm256_mul_ps(x, r);
  const __m256 e = _mm256_min_ps(_mm256_max_ps(_mm256_fmsub_ps(q0, s, x), _mm256_set1_ps(-kMax)), _mm256_set1_ps(kMax));
  return _mm256_fnmadd_ps(e, r, q0);
}

template <bool kMarkstein>
FB_INLINE __m256 fake_quantize(__m256 x, __m256 s, __m256 r, __m256 lo, __m256 hi) {
  const __m256 q = kMarkstein ? divide_markstein(x, s, r) : _mm256_div_ps(x, s);
  const __m256 t = _mm256_min_ps(_mm256_max_ps(q, lo), hi);
  const __m256 y = _mm256_fmadd_ps(_mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), s, _mm256_setzero_ps());
  return _mm256_and_ps(_mm256_cmp_ps(x, x, _CMP_EQ_OQ), y);
}

// K of the block's 4 vectors by Markstein's step (the second, then the fourth, third, first).
template <int K>
__attribute__((noinline)) void run(const float* x, float* y, std::size_t n, float scale, float lo_, float hi_) {
  const __m256 s = _mm256_set1_ps(scale), r = _mm256_set1_ps(1.0f / scale);
  const __m256 lo = _mm256_set1_ps(lo_), hi = _mm256_set1_ps(hi_);
  for (std::size_t i = 0; i + 32 <= n; i += 32) {
    const __m256 a = fake_quantize<(K >= 4)>(_mm256_loadu_ps(x + i), s, r, lo, hi);
    const __m256 b = fake_quantize<(K >= 1)>(_mm256_loadu_ps(x + i + 8), s, r, lo, hi);
    const __m256 c = fake_quantize<(K >= 3)>(_mm256_loadu_ps(x + i + 16), s, r, lo, hi);
    const __m256 d = fake_quantize<(K >= 2)>(_mm256_loadu_ps(x + i + 24), s, r, lo, hi);
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

// Markstein's step equals the division for random float bit patterns (infinities and values
// near the float range included) over random scales in [2^-27, 2^28], where |x / s| >= 1/4.
long markstein_mismatches() {
  std::mt19937 g(5);
  std::uniform_int_distribution<unsigned> u;
  long bad = 0;
  for (int k = 0; k < 20000; ++k) {
    float s;
    do {
      const unsigned bits = (u(g) & 0x007fffffu) | ((100u + u(g) % 56u) << 23);
      std::memcpy(&s, &bits, 4);
    } while (!(s >= 0x1p-27f && s <= 0x1p28f));
    for (int j = 0; j < 64; ++j) {
      float xs[8], q[8], m[8];
      for (float& v : xs) {
        const unsigned bits = u(g);
        std::memcpy(&v, &bits, 4);
      }
      if (j == 0) {
        xs[0] = INFINITY;
        xs[1] = -INFINITY;
        xs[2] = 3.4e38f;
        xs[3] = -3.4e38f;
      }
      const __m256 x = _mm256_loadu_ps(xs);
      _mm256_storeu_ps(q, _mm256_div_ps(x, _mm256_set1_ps(s)));
      _mm256_storeu_ps(m, divide_markstein(x, _mm256_set1_ps(s), _mm256_set1_ps(1.0f / s)));
      for (int l = 0; l < 8; ++l)
        if (xs[l] == xs[l] && std::fabs(q[l]) >= 0.25f && std::memcmp(&q[l], &m[l], 4) != 0) ++bad;
    }
  }
  return bad;
}

}  // namespace

int main() {
  std::printf("Markstein step vs division, mismatches: %ld\n", markstein_mismatches());
  const float scale = 1.0f / 127, zero = 2;
  for (const std::size_t n : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}}) {
    std::vector<float> x(n), y(n);
    std::mt19937 g(1);
    std::uniform_real_distribution<float> u(-1.1f, 1.1f);
    for (float& v : x) v = u(g);
    const float lo = -128 - zero, hi = 127 - zero;
    const auto time = [&](auto k) {
      constexpr int K = decltype(k)::value;
      return gelem_per_s([&] { run<K>(x.data(), y.data(), n, scale, lo, hi); asm volatile("" ::: "memory"); }, n);
    };
    std::printf("n=%zu  Gelem/s by vectors of 4 past the divider: 0 %.2f  1 %.2f  2 %.2f  3 %.2f  4 %.2f\n", n,
                time(std::integral_constant<int, 0>()), time(std::integral_constant<int, 1>()),
                time(std::integral_constant<int, 2>()), time(std::integral_constant<int, 3>()),
                time(std::integral_constant<int, 4>()));
  }
}
