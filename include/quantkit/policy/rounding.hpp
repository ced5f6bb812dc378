// Rounding policies: how a real value t = x / scale becomes an integer.
//
// Each policy rounds a float to an integral float exactly (no double rounding, no
// FE-environment dependence), and rounds an integer quotient x / 2^s exactly for
// requantization. A user policy needs only `using category = quantkit::category::rounding;`
// and `float operator()(float) const` (see examples/custom_rounding.cpp); such a policy runs
// on the scalar path, built-in ones also have SIMD kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "quantkit/policy/category.hpp"

namespace quantkit {

enum class RoundingMode { half_even, half_away, half_up, floor, toward_zero, stochastic, custom };

inline const char* to_string(RoundingMode m) {
  switch (m) {
    case RoundingMode::half_even: return "half-even";
    case RoundingMode::half_away: return "half-away";
    case RoundingMode::half_up: return "half-up";
    case RoundingMode::floor: return "floor";
    case RoundingMode::toward_zero: return "toward-zero";
    case RoundingMode::stochastic: return "stochastic";
    case RoundingMode::custom: return "custom";
  }
  return "?";
}

namespace detail {
// floor(x / 2^s) for s in [0, 62] (arithmetic shift: floor for negatives too).
constexpr std::int64_t shift_floor(std::int64_t x, int s) { return s == 0 ? x : (x >> s); }
// The remainder x - floor(x/2^s)*2^s, in [0, 2^s).
constexpr std::int64_t shift_remainder(std::int64_t x, int s) {
  return s == 0 ? 0 : (x & ((std::int64_t{1} << s) - 1));
}
}  // namespace detail

// Ties to even: ONNX QuantizeLinear, PyTorch (nearbyint), numpy.round.
struct RoundHalfEven {
  using category = quantkit::category::rounding;
  static constexpr RoundingMode mode = RoundingMode::half_even;
  float operator()(float t) const {
    const float f = std::floor(t);
    const float d = t - f;  // exact for every finite float
    if (d > 0.5f) return f + 1.0f;
    if (d < 0.5f) return f;
    return std::fmod(f, 2.0f) == 0.0f ? f : f + 1.0f;
  }
  static constexpr std::int64_t shift_right(std::int64_t x, int s) {
    if (s == 0) return x;
    const std::int64_t q = detail::shift_floor(x, s), r = detail::shift_remainder(x, s);
    const std::int64_t half = std::int64_t{1} << (s - 1);
    return r > half ? q + 1 : (r < half ? q : q + (q & 1));
  }
};

// Ties away from zero: C round(), TFLite's TfLiteRound, gemmlowp RoundingDivideByPOT.
struct RoundHalfAway {
  using category = quantkit::category::rounding;
  static constexpr RoundingMode mode = RoundingMode::half_away;
  float operator()(float t) const { return std::round(t); }
  static constexpr std::int64_t shift_right(std::int64_t x, int s) {
    if (s == 0) return x;
    const std::int64_t q = detail::shift_floor(x, s), r = detail::shift_remainder(x, s);
    const std::int64_t half = std::int64_t{1} << (s - 1);
    return r > half ? q + 1 : (r < half ? q : (x >= 0 ? q + 1 : q));
  }
};

// Ties toward +infinity: floor(t + 0.5) computed without the rounding error of t + 0.5.
struct RoundHalfUp {
  using category = quantkit::category::rounding;
  static constexpr RoundingMode mode = RoundingMode::half_up;
  float operator()(float t) const {
    const float f = std::floor(t);
    return (t - f >= 0.5f) ? f + 1.0f : f;
  }
  static constexpr std::int64_t shift_right(std::int64_t x, int s) {
    if (s == 0) return x;
    const std::int64_t q = detail::shift_floor(x, s), r = detail::shift_remainder(x, s);
    return r >= (std::int64_t{1} << (s - 1)) ? q + 1 : q;
  }
};

// Toward -infinity: an arithmetic right shift (N2D2's single shift).
struct RoundFloor {
  using category = quantkit::category::rounding;
  static constexpr RoundingMode mode = RoundingMode::floor;
  float operator()(float t) const { return std::floor(t); }
  static constexpr std::int64_t shift_right(std::int64_t x, int s) { return detail::shift_floor(x, s); }
};

// Toward zero: C's float-to-int conversion.
struct RoundTowardZero {
  using category = quantkit::category::rounding;
  static constexpr RoundingMode mode = RoundingMode::toward_zero;
  float operator()(float t) const { return std::trunc(t); }
  static constexpr std::int64_t shift_right(std::int64_t x, int s) {
    const std::int64_t q = detail::shift_floor(x, s);
    return (x < 0 && detail::shift_remainder(x, s) != 0) ? q + 1 : q;
  }
};

// Stochastic rounding with a user generator (any callable returning an unsigned integer of
// at least 32 random bits, e.g. std::mt19937): t rounds up with probability frac(t), using
// u = (g() & 0xffffffff) >> 8 scaled to [0, 1) — 24 bits, one draw per value, in order.
// Reproducible for a given generator state; the SIMD path draws the same sequence.
template <class Generator>
class RoundStochastic {
 public:
  using category = quantkit::category::rounding;
  static constexpr RoundingMode mode = RoundingMode::stochastic;
  explicit RoundStochastic(Generator& generator) : generator_(&generator) {}
  // The uniform number the next rounding will use (exposed so kernels draw identically).
  float next_uniform() const {
    const auto bits = static_cast<std::uint32_t>((*generator_)() & 0xffffffffu);
    return static_cast<float>(bits >> 8) * 0x1p-24f;
  }
  float operator()(float t) const { return round_with(t, next_uniform()); }
  static float round_with(float t, float u) {
    const float f = std::floor(t);
    return (u < t - f) ? f + 1.0f : f;
  }

 private:
  Generator* generator_;
};

template <class T, class = void>
struct is_rounding : std::false_type {};
template <class T>
struct is_rounding<T, std::enable_if_t<std::is_same_v<typename T::category, category::rounding>>>
    : std::true_type {};

template <class R, class = void>
struct rounding_mode_of {
  static constexpr RoundingMode value = RoundingMode::custom;
};
template <class R>
struct rounding_mode_of<R, std::void_t<decltype(R::mode)>> {
  static constexpr RoundingMode value = R::mode;
};

// Runtime choice -> policy type, for the CLI and the ONNX adapter (stochastic needs a
// generator and is not dispatched here).
template <class F>
decltype(auto) visit_rounding(RoundingMode mode, F&& f) {
  switch (mode) {
    case RoundingMode::half_away: return f(RoundHalfAway{});
    case RoundingMode::half_up: return f(RoundHalfUp{});
    case RoundingMode::floor: return f(RoundFloor{});
    case RoundingMode::toward_zero: return f(RoundTowardZero{});
    default: return f(RoundHalfEven{});
  }
}

}  // namespace quantkit
