// What bounds quantize (f32 -> int8, half-even, per tensor) in L1 on an AVX-512 CPU: the block
// of 64 values the AVX-512 kernel runs (quantize-inl.h: QuantizeBlockBytes with two vectors
// divided and two by Markstein's exact step, then ByteBlockPacker), against the same block with
// every vector dividing, every vector taking Markstein's step, and every vector multiplying by
// 1/s (inexact: not a kernel quantkit could ship, only a bound). If the last is no faster than
// the first, the division is hidden and the ~27 vector instructions per block are the limit.
// Not part of the build (needs AVX-512):
//   g++ -O3 -march=native -std=c++17 tools/bench/quantize_bound.cpp -o /tmp/quantize_bound && /tmp/quantize_bound
// Data as bench_kernels: 4096 values uniform in [-1.1, 1.1], scale 1/127, zero point 2.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#define QB_INLINE __attribute__((always_inline)) inline

namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// NaN -> +0 (the zero point's offset), as the kernel does it (fixupimm; a compare into a mask
// and a zero-masked conversion, what it did before 2089f18, cost the multiplying block ~30 %).
QB_INLINE __m512 nan_to_zero(__m512 p) { return _mm512_fixupimm_ps(p, p, _mm512_set1_epi32(0x88), 0); }

// x / s, upper clamp, NaN -> 0, to int32.
QB_INLINE __m512i divide(__m512 x, __m512 s, __m512 hi) {
  return _mm512_cvt_roundps_epi32(_mm512_min_ps(nan_to_zero(_mm512_div_ps(x, s)), hi), kRound);
}
// x / s by Markstein's step (exact for the kernel's scales), fixupimm for NaN / inf.
QB_INLINE __m512i markstein(__m512 x, __m512 s, __m512 r, __m512 hi) {
  const __m512 q0 = _mm512_mul_ps(x, r);
  const __m512 e = _mm512_fmsub_ps(q0, s, x);
  const __m512 q = _mm512_fixupimm_ps(_mm512_fnmadd_ps(e, r, q0), q0, _mm512_set1_epi32(0x00540088), 0);
  return _mm512_cvt_roundps_epi32(_mm512_min_ps(q, hi), kRound);
}
// x * (1/s): no division at all (inexact).
QB_INLINE __m512i multiply(__m512 x, __m512 r, __m512 hi) {
  return _mm512_cvt_roundps_epi32(_mm512_min_ps(nan_to_zero(_mm512_mul_ps(x, r)), hi), kRound);
}

struct Packer {  // ByteBlockPacker<int8_t>
  __m512i z16 = _mm512_set1_epi16(2), qmin8 = _mm512_set1_epi8(-128),
          order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  QB_INLINE void store(__m512i v0, __m512i v1, __m512i v2, __m512i v3, std::int8_t* q) const {
    const __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(v0, v1), z16);
    const __m512i cd = _mm512_adds_epi16(_mm512_packs_epi32(v2, v3), z16);
    const __m512i r = _mm512_max_epi8(_mm512_packs_epi16(ab, cd), qmin8);
    _mm512_storeu_si512(q, _mm512_permutexvar_epi32(order, r));
  }
};

// Pattern per vector of a block: 'd' divide, 'm' Markstein, 'x' multiply.
template <char A, char B, char C, char D>
__attribute__((noinline)) void run(const float* x, std::int8_t* q, std::size_t n, float scale) {
  const __m512 s = _mm512_set1_ps(scale), r = _mm512_set1_ps(1.0f / scale), hi = _mm512_set1_ps(125.0f);
  const Packer p;
  const auto one = [&](char k, __m512 v) __attribute__((always_inline)) {
    return k == 'd' ? divide(v, s, hi) : k == 'm' ? markstein(v, s, r, hi) : multiply(v, r, hi);
  };
  for (std::size_t i = 0; i < n; i += 64)
    p.store(one(A, _mm512_loadu_ps(x + i)), one(B, _mm512_loadu_ps(x + i + 16)),
            one(C, _mm512_loadu_ps(x + i + 32)), one(D, _mm512_loadu_ps(x + i + 48)), q + i);
}

template <class F>
double gelem_per_s(F f, std::size_t n) {
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 20000; ++k) f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return static_cast<double>(n) * 20000.0 / best / 1e9;
}

}  // namespace

int main() {
  const std::size_t n = 4096;
  std::vector<float> x(n);
  std::vector<std::int8_t> q(n);
  std::mt19937 rng(20240611u);
  std::uniform_real_distribution<float> real(-1.1f, 1.1f);
  for (float& v : x) v = real(rng);
  const float scale = 1.0f / 127.0f;
#define QB_ROW(a, b, c, d, what)                                                                   \
  std::printf("  %-44s %6.2f\n", what, gelem_per_s([&] {                                               \
                run<a, b, c, d>(x.data(), q.data(), n, scale);                                      \
                asm volatile("" ::: "memory");                                                      \
              }, n));
  std::printf("Gelem/s at 4K, best of 7 x 20000 calls; rounds interleaved (round 0 warms the clock up):\n");
  for (int round = 0; round < 3; ++round) {
    std::printf("round %d\n", round);
    QB_ROW('d', 'm', 'd', 'm', "kernel's block (2 divide, 2 Markstein)")
    QB_ROW('d', 'm', 'm', 'm', "1 divide, 3 Markstein (Intel's default)")
    QB_ROW('d', 'd', 'd', 'm', "3 divide, 1 Markstein")
    QB_ROW('m', 'm', 'm', 'm', "all Markstein")
    QB_ROW('d', 'd', 'd', 'd', "all divide")
    QB_ROW('x', 'x', 'x', 'x', "all multiply by 1/s (inexact bound)")
  }
}
