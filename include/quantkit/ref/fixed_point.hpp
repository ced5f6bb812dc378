// gemmlowp / TFLite fixed-point primitives, written from their published definitions
// (gemmlowp fixedpoint/fixedpoint.h, TFLite kernels/internal/common.h and
// quantization_util.cc). Exact integer arithmetic; no undefined behaviour.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace quantkit {
namespace ref {

// (a * b * 2) / 2^32 rounded to nearest; ties go toward +infinity (the nudge is 2^30 for
// ab >= 0 and 1 - 2^30 below, then truncation): SRDHM(3, 2^30) = 2, SRDHM(-3, 2^30) = -1.
// INT32_MIN * INT32_MIN saturates.
constexpr std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) {
  if (a == b && a == std::numeric_limits<std::int32_t>::min())
    return std::numeric_limits<std::int32_t>::max();
  const std::int64_t ab = std::int64_t{a} * std::int64_t{b};
  const std::int64_t nudge = ab >= 0 ? (std::int64_t{1} << 30) : (1 - (std::int64_t{1} << 30));
  return static_cast<std::int32_t>((ab + nudge) / (std::int64_t{1} << 31));  // truncating
}

// x / 2^exponent rounded to nearest, ties away from zero; exponent in [0, 31].
constexpr std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) {
  const std::int64_t mask = (std::int64_t{1} << exponent) - 1;
  const std::int64_t remainder = std::int64_t{x} & mask;
  const std::int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return static_cast<std::int32_t>((std::int64_t{x} >> exponent) + (remainder > threshold ? 1 : 0));
}

// A real multiplier m as q * 2^(shift - 31), q in [2^30, 2^31) (TFLite QuantizeMultiplier).
struct QuantizedMultiplier {
  std::int32_t multiplier = 0;
  int shift = 0;  // > 0: left shift
  friend constexpr bool operator==(const QuantizedMultiplier& a, const QuantizedMultiplier& b) {
    return a.multiplier == b.multiplier && a.shift == b.shift;
  }
};

// TFLite QuantizeMultiplier: frexp, round half away, 2^31 folded into the shift, shifts below
// -31 flushed to zero. `single_rounding` also clamps shift to 30 as TFLite's single-rounding
// build does. Requires m >= 0 and finite (the callers check and name the layer).
inline QuantizedMultiplier quantize_multiplier(double m, bool single_rounding = false) {
  if (m == 0.0) return {0, 0};
  int shift = 0;
  const double q = std::frexp(m, &shift);
  auto q_fixed = static_cast<std::int64_t>(std::round(q * static_cast<double>(std::int64_t{1} << 31)));
  if (q_fixed == (std::int64_t{1} << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) {
    shift = 0;
    q_fixed = 0;
  }
  if (single_rounding && shift > 30) {
    shift = 30;
    q_fixed = (std::int64_t{1} << 31) - 1;
  }
  return {static_cast<std::int32_t>(q_fixed), shift};
}

constexpr std::int32_t saturate_to_int32(std::int64_t v) {
  return v > std::numeric_limits<std::int32_t>::max()   ? std::numeric_limits<std::int32_t>::max()
         : v < std::numeric_limits<std::int32_t>::min() ? std::numeric_limits<std::int32_t>::min()
                                                         : static_cast<std::int32_t>(v);
}

// gemmlowp / TFLite MultiplyByQuantizedMultiplier (double rounding). For multipliers > 1,
// where x << shift leaves int32 (undefined in gemmlowp's int32 arithmetic), the result
// saturates to INT32_MIN / INT32_MAX by the sign of x: |x * m| >= 2^30 there, which every
// output format clamps anyway.
constexpr std::int32_t multiply_by_quantized_multiplier_double_rounding(std::int32_t x,
                                                                        QuantizedMultiplier qm) {
  const int left = qm.shift > 0 ? qm.shift : 0;
  const int right = qm.shift > 0 ? 0 : -qm.shift;
  const std::int64_t shifted = std::int64_t{x} * (std::int64_t{1} << left);
  if (shifted != static_cast<std::int32_t>(shifted))
    return x < 0 ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int32_t>::max();
  return rounding_divide_by_pot(
      saturating_rounding_doubling_high_mul(static_cast<std::int32_t>(shifted), qm.multiplier), right);
}

// TFLite MultiplyByQuantizedMultiplier under TFLITE_SINGLE_ROUNDING:
// (x * q + 2^(30 - shift)) >> (31 - shift), shift in [-31, 30]; the result saturates to int32.
constexpr std::int32_t multiply_by_quantized_multiplier_single_rounding(std::int32_t x,
                                                                        QuantizedMultiplier qm) {
  const int total_shift = 31 - qm.shift;
  const std::int64_t round = std::int64_t{1} << (total_shift - 1);
  return saturate_to_int32((std::int64_t{x} * qm.multiplier + round) >> total_shift);
}

}  // namespace ref
}  // namespace quantkit
