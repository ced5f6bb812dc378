// What quantize_avx2_bound.cpp and fake_quantize_avx2_bound.cpp share: Markstein's step and the
// block NaN test as quantize-inl.h has them (DivideMarksteinAvx2, AnyNaN4), the check of every
// variant against "mask" and the timing. Each program gives `run(k, x, y, n, scale, zero)` for
// variant k (std::integral_constant<int, K>): K < 0 "mask" (every vector masks and divides),
// else "test K" (one NaN test per block of four vectors, K of them by Markstein's step).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#define QB_INLINE __attribute__((always_inline)) inline

namespace avx2_bound {

template <int K>
using Variant = std::integral_constant<int, K>;

// q0 held at -2^30 or above: -inf stays -inf after the step instead of NaN; +inf q0 gives NaN,
// which MINPS(q, hi) turns into hi.
QB_INLINE __m256 divide_markstein(__m256 x, __m256 s, __m256 r) {
  const __m256 q0 = _mm256_max_ps(_mm256_mul_ps(x, r), _mm256_set1_ps(-0x1p30f));
  return _mm256_fnmadd_ps(_mm256_fmsub_ps(q0, s, x), r, q0);
}

QB_INLINE bool any_nan(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 un = _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_UNORD_Q), _mm256_cmp_ps(c, d, _CMP_UNORD_Q));
  return _mm256_testz_ps(un, un) == 0;
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

// Calls of the "test K" variants whose output bits differ from "mask": random float bit patterns
// (some NaN / Inf in any lane, both infinities in every call), ties and integers, random scales
// in [2^-27, 2^28] and zero points in [-10, 10].
template <class Out, class Run>
long mismatching_calls(Run run) {
  std::mt19937 g(5);
  std::uniform_int_distribution<unsigned> u;
  long bad = 0;
  constexpr std::size_t n = 64 * 32;
  std::vector<float> x(n);
  std::vector<Out> want(n), got(n);
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
        const unsigned bits = u(g) % 16 == 0 ? u(g) | 0x7f800000u : u(g);
        std::memcpy(&x[j], &bits, 4);
      }
    }
    x[u(g) % n] = INFINITY;
    x[u(g) % n] = -INFINITY;
    const float zero = static_cast<float>(static_cast<int>(u(g) % 21) - 10);
    run(Variant<-1>(), x.data(), want.data(), n, s, zero);
    const auto count = [&](auto kk) {
      run(kk, x.data(), got.data(), n, s, zero);
      bad += static_cast<long>(std::memcmp(got.data(), want.data(), n * sizeof(Out)) != 0);
    };
    count(Variant<0>());
    count(Variant<1>());
    count(Variant<2>());
    count(Variant<3>());
    count(Variant<4>());
  }
  return bad;
}

// The check, then every variant timed on bench_kernels' data: values uniform in [-1.1, 1.1],
// scale 1/127, zero point 2.
template <class Out, class Run>
int check_and_time(Run run) {
  const long bad = mismatching_calls<Out>(run);
  std::printf("variants against \"mask\", calls with different bits: %ld\n", bad);
  const float scale = 1.0f / 127, zero = 2;
  for (const std::size_t n : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}}) {
    std::vector<float> x(n);
    std::vector<Out> y(n);
    std::mt19937 g(1);
    std::uniform_real_distribution<float> u(-1.1f, 1.1f);
    for (float& v : x) v = u(g);
    const auto time = [&](auto k) {
      return gelem_per_s([&] { run(k, x.data(), y.data(), n, scale, zero); asm volatile("" ::: "memory"); }, n);
    };
    std::printf("n=%zu  Gelem/s: mask %.2f  test 0 %.2f  test 1 %.2f  test 2 %.2f  test 3 %.2f  test 4 %.2f\n", n,
                time(Variant<-1>()), time(Variant<0>()), time(Variant<1>()), time(Variant<2>()),
                time(Variant<3>()), time(Variant<4>()));
  }
  return bad == 0 ? 0 : 1;
}

}  // namespace avx2_bound
