// The plain loops quantkit's kernels are measured against: what a user writes without
// quantkit, left to the compiler's autovectorizer. One source (plain_loops.inc) is compiled
// twice with explicit flags (see bench/CMakeLists.txt):
//   plain_native.cpp    -O3 -march=native               (the best the compiler does here)
//   plain_baseline.cpp  -O3 -march=x86-64 -mtune=generic (what a portable binary ships)
// Each computes exactly what quantkit::ref computes (checked at start-up by bench_kernels).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qk_bench {

enum class Round { half_even, half_away, half_up, floor, toward_zero, count };
enum class Requant { float_half_even, fixed_point, fixed_point_single, pow2_half_away, single_shift,
                     double_shift, count };

// One (scale, zero point, range) set; the kernels' factor for x / s or x * (1 / s).
struct PlainQ {
  float scale;
  float inv_scale;
  std::int32_t zero_point;
  std::int32_t qmin;
  std::int32_t qmax;
};

// One requantization constant set (the fields a scheme does not use are ignored).
struct PlainRq {
  float multiplier;       // float schemes
  std::int32_t fixed;     // fixed-point multiplier, in [2^30, 2^31)
  int shift;              // fixed point: > 0 left; shift schemes: right shift (shift2 for double)
  int shift1;             // double shift: acc << shift1
  std::int32_t bias;
};

// Rows: `rows` runs of `row_len` contiguous elements, run r using params[r] — per-tensor
// (rows = 1), per-channel along axis 0 of [C, K] (rows = C), per-group along the last axis
// with block B (rows = n / B, row_len = B).
struct PlainTable {
  const char* name;
  void (*quantize)(Round, bool multiply, const float* x, std::int8_t* q, std::size_t rows,
                   std::size_t row_len, const PlainQ* params);
  void (*quantize_i16)(Round, bool multiply, const float* x, std::int16_t* q, std::size_t rows,
                       std::size_t row_len, const PlainQ* params);
  void (*dequantize)(const std::int8_t* q, float* x, std::size_t rows, std::size_t row_len,
                     const PlainQ* params);
  void (*fake_quantize)(Round, bool multiply, const float* x, float* y, std::size_t rows,
                        std::size_t row_len, const PlainQ* params);
  void (*requantize)(Requant, const std::int32_t* acc, std::int8_t* out, std::size_t rows,
                     std::size_t row_len, const PlainRq* params, std::int32_t out_zero_point,
                     std::int32_t clamp_min, std::int32_t clamp_max);
};

const PlainTable& plain_native();
const PlainTable& plain_baseline();

}  // namespace qk_bench
