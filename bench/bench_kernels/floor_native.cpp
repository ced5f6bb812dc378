// The in-cache traffic floor of each operation (bench_kernels "floor/<op>/-/floor_native/<n>"):
// the operation's own loads and stores, in the widest vectors this CPU has, with only the
// shuffles that change the element width in between — no scaling, rounding or clamping. No
// kernel doing the arithmetic as well moves the same bytes faster, so floor / plain loop is the
// most any kernel can gain over the plain loop at that size (tools/bench/render.py reports it).
// Built with -march=native (the _native suffix, bench/CMakeLists.txt): AVX-512 or AVX2 written
// out (left to GCC's autovectorizer, AVX2's widening and narrowing loops ran slower than the
// kernels themselves, so they bounded nothing); other CPUs get the plain loops.
#include <cstddef>
#include <cstdint>

#if (defined(__AVX512F__) && defined(__AVX512BW__)) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "floor.hpp"

// GCC 12 warns about _mm512_undefined_epi32's self-initialisation inside the intrinsics.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace qk_bench {
namespace {

// f32 (or i32) -> i8: four vectors of 32-bit lanes packed into one 64-byte (AVX2: 32-byte)
// store, the way the quantize and requantize kernels store int8 (saturating packs; a lane
// permute restores the order). The values are the inputs' bits: only the traffic matters.
void floor_32_to_8(const void* in, std::int8_t* out, std::size_t n) {
  const auto* x = static_cast<const std::int32_t*>(in);
  std::size_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  for (; i + 64 <= n; i += 64) {
    const __m512i a = _mm512_loadu_si512(x + i);
    const __m512i b = _mm512_loadu_si512(x + i + 16);
    const __m512i c = _mm512_loadu_si512(x + i + 32);
    const __m512i d = _mm512_loadu_si512(x + i + 48);
    const __m512i ab = _mm512_packs_epi32(a, b);
    const __m512i cd = _mm512_packs_epi32(c, d);
    _mm512_storeu_si512(out + i, _mm512_permutexvar_epi32(order, _mm512_packs_epi16(ab, cd)));
  }
#elif defined(__AVX2__)
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (; i + 32 <= n; i += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 16));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 24));
    const __m256i r = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permutevar8x32_epi32(r, order));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<std::int8_t>(x[i]);
}

// f32 (as i32) -> i16: two vectors packed into one 64-byte (AVX2: 32-byte) store (saturating
// pack, a 64-bit lane permute restores the order), as the int16 quantize kernels store.
void floor_32_to_16(const float* in, std::int16_t* out, std::size_t n) {
  const auto* x = reinterpret_cast<const std::int32_t*>(in);
  std::size_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const __m512i order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
  for (; i + 64 <= n; i += 64) {
    for (std::size_t k = 0; k < 64; k += 32) {
      const __m512i a = _mm512_loadu_si512(x + i + k);
      const __m512i b = _mm512_loadu_si512(x + i + k + 16);
      _mm512_storeu_si512(out + i + k, _mm512_permutexvar_epi64(order, _mm512_packs_epi32(a, b)));
    }
  }
#elif defined(__AVX2__)
  for (; i + 16 <= n; i += 16) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<std::int16_t>(x[i]);
}

// i8 -> f32: each 16 (AVX2: 8) bytes widened to 32-bit lanes (the load-and-extend dequantize starts with).
void floor_8_to_32(const std::int8_t* q, float* out, std::size_t n) {
  auto* y = reinterpret_cast<std::int32_t*>(out);
  std::size_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  for (; i + 64 <= n; i += 64) {
    for (std::size_t k = 0; k < 64; k += 16)
      _mm512_storeu_si512(y + i + k,
                          _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i + k))));
  }
#elif defined(__AVX2__)
  for (; i + 32 <= n; i += 32) {
    for (std::size_t k = 0; k < 32; k += 8)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i + k),
                          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i + k))));
  }
#endif
  for (; i < n; ++i) y[i] = q[i];
}

// f32 -> f32: loads and stores (fake-quantize's traffic); written out so it is not a memcpy call.
void floor_32_to_32(const float* x, float* out, std::size_t n) {
  std::size_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  for (; i + 64 <= n; i += 64) {
    const __m512 a = _mm512_loadu_ps(x + i);
    const __m512 b = _mm512_loadu_ps(x + i + 16);
    const __m512 c = _mm512_loadu_ps(x + i + 32);
    const __m512 d = _mm512_loadu_ps(x + i + 48);
    _mm512_storeu_ps(out + i, a);
    _mm512_storeu_ps(out + i + 16, b);
    _mm512_storeu_ps(out + i + 32, c);
    _mm512_storeu_ps(out + i + 48, d);
  }
#elif defined(__AVX2__)
  for (; i + 32 <= n; i += 32) {
    const __m256 a = _mm256_loadu_ps(x + i);
    const __m256 b = _mm256_loadu_ps(x + i + 8);
    const __m256 c = _mm256_loadu_ps(x + i + 16);
    const __m256 d = _mm256_loadu_ps(x + i + 24);
    _mm256_storeu_ps(out + i, a);
    _mm256_storeu_ps(out + i + 8, b);
    _mm256_storeu_ps(out + i + 16, c);
    _mm256_storeu_ps(out + i + 24, d);
  }
#endif
  for (; i < n; ++i) out[i] = x[i];
}

}  // namespace

const FloorTable& floor_native() {
  static const FloorTable t = {"floor_native", floor_32_to_8, floor_32_to_16, floor_8_to_32, floor_32_to_32};
  return t;
}

}  // namespace qk_bench
