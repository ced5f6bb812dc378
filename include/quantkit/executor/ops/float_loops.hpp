// Elementwise float loops that compilers vectorize at -O2 too: y[i] = f(x[i]), f(a[i], b[i]) or,
// in place, f(y[i]) and f(y[i], c[i]) — the same per-element function (so the same values) as
// the plain loop.
//
// Why: Debian builds at -O2, where GCC 12's "very cheap" vectorizer takes only loops whose trip
// count is a known multiple of the vector width and that need no run-time alias check, so
// `for (i < n) y[i] = f(x[i])` stays scalar. Blocks of 8 over restrict pointers have both
// properties (and -O3 vectorizes them as well as the plain loop); the remainder runs plainly.
// The restrict contract: an output never overlaps an input (use the in-place forms for that).
#pragma once

#include <cstdint>

namespace quantkit {
namespace ops {
namespace detail {

constexpr std::int64_t float_block = 8;  // two SSE / one AVX vector

// y[i] = f(x[i]); x and y do not overlap.
template <class F>
inline void map_floats(const float* __restrict x, float* __restrict y, std::int64_t n, F&& f) {
  std::int64_t i = 0;
  for (; i + float_block <= n; i += float_block)
    for (std::int64_t j = 0; j < float_block; ++j) y[i + j] = f(x[i + j]);
  for (; i < n; ++i) y[i] = f(x[i]);
}

// y[i] = f(a[i], b[i]); y overlaps neither a nor b (a and b may be the same).
template <class F>
inline void zip_floats(const float* a, const float* b, float* __restrict y, std::int64_t n, F&& f) {
  std::int64_t i = 0;
  for (; i + float_block <= n; i += float_block)
    for (std::int64_t j = 0; j < float_block; ++j) y[i + j] = f(a[i + j], b[i + j]);
  for (; i < n; ++i) y[i] = f(a[i], b[i]);
}

// y[i] = f(y[i]).
template <class F>
inline void update_floats(float* y, std::int64_t n, F&& f) {
  std::int64_t i = 0;
  for (; i + float_block <= n; i += float_block)
    for (std::int64_t j = 0; j < float_block; ++j) y[i + j] = f(y[i + j]);
  for (; i < n; ++i) y[i] = f(y[i]);
}

// y[i] = f(y[i], c[i]); y and c do not overlap.
template <class F>
inline void update_floats(float* __restrict y, const float* __restrict c, std::int64_t n, F&& f) {
  std::int64_t i = 0;
  for (; i + float_block <= n; i += float_block)
    for (std::int64_t j = 0; j < float_block; ++j) y[i + j] = f(y[i + j], c[i + j]);
  for (; i < n; ++i) y[i] = f(y[i], c[i]);
}

}  // namespace detail
}  // namespace ops
}  // namespace quantkit
