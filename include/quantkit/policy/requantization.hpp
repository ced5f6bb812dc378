// Requantization scale schemes: how an int32 accumulator is rescaled by a real multiplier
// m = s_in * s_w / s_out on the way to the output format. One policy per scheme, each
// bit-different from the others (which is why they are separate policies):
//
//   FloatMultiplier<R>       R(float(acc) * float(m))                   (ORT MLAS, TFLite float)
//   PowerOfTwo<R>            R(acc / 2^s), m ~ 2^-s, exact integer rounding R
//   FixedPointDoubleRounding gemmlowp: RDBP(SRDHM(acc << l, q), r)       (TFLite default build)
//   FixedPointSingleRounding TFLite TFLITE_SINGLE_ROUNDING: (acc*q + 2^(30-s)) >> (31-s)
//   SingleShift              N2D2 SINGLE_SHIFT: acc >> s (floor); m must be <= 1
//   DoubleShift              N2D2 DOUBLE_SHIFT: (acc + (acc << s1) + 2^(s2-1)) >> s2,
//                            m ~ 2^-s2 + 2^-(s2-s1); m must be <= 1.5
//
// make(m, layer) builds the constants once (throwing quantkit::Error naming the layer when m
// cannot be expressed); apply(acc, constants) is the per-element step; approximation(c)
// returns the real multiplier the constants actually apply.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/ref/fixed_point.hpp"

namespace quantkit {

enum class RequantScheme { float_multiplier, power_of_two, fixed_point, fixed_point_single, single_shift, double_shift };

inline const char* to_string(RequantScheme s) {
  switch (s) {
    case RequantScheme::float_multiplier: return "float";
    case RequantScheme::power_of_two: return "pow2";
    case RequantScheme::fixed_point: return "fixed-point";
    case RequantScheme::fixed_point_single: return "fixed-point-single";
    case RequantScheme::single_shift: return "single-shift";
    case RequantScheme::double_shift: return "double-shift";
  }
  return "?";
}

namespace detail {
inline void check_multiplier(double m, const std::string& layer, double max_allowed,
                             const char* scheme, const char* instead) {
  if (!std::isfinite(m) || m <= 0.0)
    fail("layer '", layer, "': requantization multiplier ", m, "; expected a finite value > 0");
  if (m > max_allowed)
    fail("layer '", layer, "': requantization multiplier ", m, " exceeds ", max_allowed, ", which ",
         scheme, " cannot express; use ", instead);
}
template <class R, class = void>
struct has_shift_right : std::false_type {};
template <class R>
struct has_shift_right<R, std::void_t<decltype(R::shift_right(std::int64_t{}, 0))>> : std::true_type {};

// A shift whose value 2^-shift is nearest to m in the log domain, limited to [0, 31].
inline int nearest_shift(double m) {
  const int s = static_cast<int>(std::lround(-std::log2(m)));
  return s < 0 ? 0 : (s > 31 ? 31 : s);
}
}  // namespace detail

// Constants shared by the schemes that differ only in rounding.
struct FloatScale {
  float multiplier = 1.0f;
};
struct ShiftScale {
  int shift = 0;  // right shift
};

template <class Rounding = RoundHalfEven>
struct FloatMultiplier {
  static_assert(std::is_default_constructible_v<Rounding>,
                "FloatMultiplier<Rounding> needs a stateless rounding policy (RoundHalfEven, "
                "RoundHalfAway, ...); stochastic rounding is for quantize, not requantize");
  static constexpr RequantScheme scheme = RequantScheme::float_multiplier;
  using rounding = Rounding;
  using Constants = FloatScale;
  static Constants make(double m, const std::string& layer = {}) {
    detail::check_multiplier(m, layer, static_cast<double>(std::numeric_limits<float>::max()),
                             "a float multiplier", "a smaller scale");
    return {static_cast<float>(m)};
  }
  static double approximation(const Constants& c) { return c.multiplier; }
  // Result before the zero point; saturated to int32 (the output clamp follows).
  static std::int32_t apply(std::int32_t acc, const Constants& c) {
    const float v = Rounding{}(static_cast<float>(acc) * c.multiplier);
    if (!(v < 2147483648.0f)) return std::numeric_limits<std::int32_t>::max();
    if (!(v >= -2147483648.0f)) return std::numeric_limits<std::int32_t>::min();
    return static_cast<std::int32_t>(v);
  }
};

template <class Rounding = RoundHalfAway>
struct PowerOfTwo {
  static_assert(detail::has_shift_right<Rounding>::value,
                "PowerOfTwo<Rounding> needs a rounding policy with an exact integer shift_right "
                "(the built-in ones: RoundHalfEven, RoundHalfAway, RoundHalfUp, RoundFloor, "
                "RoundTowardZero); add `static std::int64_t shift_right(std::int64_t, int)` to yours");
  static constexpr RequantScheme scheme = RequantScheme::power_of_two;
  using rounding = Rounding;
  using Constants = ShiftScale;
  static constexpr int kMinShift = 0, kMaxShift = 62;  // shift_right's domain in int64
  static Constants make(double m, const std::string& layer = {}) {
    detail::check_multiplier(m, layer, 1.0, "a power-of-two right shift", "FixedPointDoubleRounding");
    return {detail::nearest_shift(m)};
  }
  static double approximation(const Constants& c) { return std::ldexp(1.0, -c.shift); }
  static std::int32_t apply(std::int32_t acc, const Constants& c) {
    return static_cast<std::int32_t>(Rounding::shift_right(acc, c.shift));
  }
};

struct FixedPointDoubleRounding {
  static constexpr RequantScheme scheme = RequantScheme::fixed_point;
  using Constants = ref::QuantizedMultiplier;
  static constexpr int kMinShift = -62, kMaxShift = 32;  // x * 2^32 and x / 2^62 in int64
  static Constants make(double m, const std::string& layer = {}) {
    detail::check_multiplier(m, layer, std::ldexp(1.0, 30), "a fixed-point multiplier",
                             "a smaller multiplier");
    return ref::quantize_multiplier(m, false);
  }
  static double approximation(const Constants& c) {
    return std::ldexp(static_cast<double>(c.multiplier), c.shift - 31);
  }
  static std::int32_t apply(std::int32_t acc, const Constants& c) {
    return ref::multiply_by_quantized_multiplier_double_rounding(acc, c);
  }
};

struct FixedPointSingleRounding {
  static constexpr RequantScheme scheme = RequantScheme::fixed_point_single;
  using Constants = ref::QuantizedMultiplier;
  static constexpr int kMinShift = -32, kMaxShift = 30;  // 31 - shift in [1, 63]
  static Constants make(double m, const std::string& layer = {}) {
    detail::check_multiplier(m, layer, std::ldexp(1.0, 30), "a single-rounding fixed-point multiplier",
                             "a smaller multiplier");
    return ref::quantize_multiplier(m, true);
  }
  static double approximation(const Constants& c) {
    return std::ldexp(static_cast<double>(c.multiplier), c.shift - 31);
  }
  static std::int32_t apply(std::int32_t acc, const Constants& c) {
    return ref::multiply_by_quantized_multiplier_single_rounding(acc, c);
  }
};

struct SingleShift {
  static constexpr RequantScheme scheme = RequantScheme::single_shift;
  using Constants = ShiftScale;
  static constexpr int kMinShift = 0, kMaxShift = 63;  // int64 >> shift
  static Constants make(double m, const std::string& layer = {}) {
    detail::check_multiplier(m, layer, 1.0, "a single right shift (N2D2 SINGLE_SHIFT)",
                             "FixedPointDoubleRounding (N2D2 falls back to fixed-point here)");
    return {detail::nearest_shift(m)};
  }
  static double approximation(const Constants& c) { return std::ldexp(1.0, -c.shift); }
  static std::int32_t apply(std::int32_t acc, const Constants& c) {
    return static_cast<std::int32_t>(std::int64_t{acc} >> c.shift);
  }
};

struct DoubleShift {
  static constexpr RequantScheme scheme = RequantScheme::double_shift;
  struct Constants {
    int shift1 = 0;  // acc << shift1
    int shift2 = 1;  // total right shift
  };
  // acc * 2^shift1 + acc + 2^(shift2 - 1) stays inside int64.
  static constexpr int kMaxShift1 = 31, kMinShift2 = 1, kMaxShift2 = 62;
  // The pair 2^-a + 2^-b (0 <= a < b <= 31) nearest to m in relative error.
  static Constants make(double m, const std::string& layer = {}) {
    detail::check_multiplier(m, layer, 1.5, "two right shifts (N2D2 DOUBLE_SHIFT)",
                             "FixedPointDoubleRounding (N2D2 falls back to fixed-point here)");
    Constants best{};
    double best_err = std::numeric_limits<double>::infinity();
    for (int a = 0; a < 31; ++a)
      for (int b = a + 1; b <= 31; ++b) {
        const double v = std::ldexp(1.0, -a) + std::ldexp(1.0, -b);
        const double err = std::fabs(v - m) / m;
        if (err < best_err) {
          best_err = err;
          best = {b - a, b};
        }
      }
    return best;
  }
  static double approximation(const Constants& c) {
    return std::ldexp(1.0, -c.shift2) + std::ldexp(1.0, c.shift1 - c.shift2);
  }
  static std::int32_t apply(std::int32_t acc, const Constants& c) {
    const std::int64_t a = acc;
    const std::int64_t v = (a + a * (std::int64_t{1} << c.shift1) + (std::int64_t{1} << (c.shift2 - 1))) >> c.shift2;
    return ref::saturate_to_int32(v);
  }
};

namespace detail {
// Whether apply() is defined for constants c (shifts inside int64 arithmetic). make() only
// builds such constants; hand-built or deserialized ones are checked by check_requant_constants.
template <class Scheme>
constexpr bool requant_constants_defined(const typename Scheme::Constants& c) {
  if constexpr (Scheme::scheme == RequantScheme::float_multiplier) {
    (void)c;
    return true;  // non-finite multipliers saturate (apply's documented behaviour)
  } else if constexpr (Scheme::scheme == RequantScheme::double_shift) {
    return (c.shift1 >= 0) & (c.shift1 <= Scheme::kMaxShift1) & (c.shift2 >= Scheme::kMinShift2) &
           (c.shift2 <= Scheme::kMaxShift2);
  } else {
    return (c.shift >= Scheme::kMinShift) & (c.shift <= Scheme::kMaxShift);
  }
}

// Throws quantkit::Error naming the first constants outside requant_constants_defined, after
// prefix() (the caller and layer, built only on failure): "constants[2].shift is 70; expected
// a shift in [0, 62] (pow2)". One branch-free pass when all are good (this runs per call).
template <class Scheme, class Constants, class Prefix>
void check_requant_constants(const std::vector<Constants>& constants, const Prefix& prefix) {
  static_assert(std::is_same_v<Constants, typename Scheme::Constants>, "constants of another scheme");
  if constexpr (Scheme::scheme != RequantScheme::float_multiplier) {
    bool good = true;
    for (const Constants& c : constants) good &= requant_constants_defined<Scheme>(c);
    if (good) return;
    for (std::size_t i = 0; i < constants.size(); ++i) {
      const Constants& c = constants[i];
      if (requant_constants_defined<Scheme>(c)) continue;
      if constexpr (Scheme::scheme == RequantScheme::double_shift)
        fail(prefix(), "constants[", i, "] is {shift1 ", c.shift1, ", shift2 ", c.shift2, "}; expected shift1 in [0, ",
             Scheme::kMaxShift1, "] and shift2 in [", Scheme::kMinShift2, ", ", Scheme::kMaxShift2, "] (",
             to_string(Scheme::scheme), ")");
      else
        fail(prefix(), "constants[", i, "].shift is ", c.shift, "; expected a shift in [", Scheme::kMinShift, ", ",
             Scheme::kMaxShift, "] (", to_string(Scheme::scheme), ")");
    }
  } else {
    (void)constants;
    (void)prefix;
  }
}
}  // namespace detail

}  // namespace quantkit
