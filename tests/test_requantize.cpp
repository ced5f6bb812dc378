// Requantization: gemmlowp/TFLite primitives, every scale scheme, per-channel + bias + clamp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <quantkit/quantkit.hpp>

namespace qk = quantkit;
constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();

TEST_CASE("SaturatingRoundingDoublingHighMul") {
  using qk::ref::saturating_rounding_doubling_high_mul;
  CHECK(saturating_rounding_doubling_high_mul(kMin, kMin) == kMax);  // the one overflow
  CHECK(saturating_rounding_doubling_high_mul(1 << 30, 1 << 30) == 1 << 29);
  CHECK(saturating_rounding_doubling_high_mul(kMin, kMax) == -2147483647);
  CHECK(saturating_rounding_doubling_high_mul(kMax, kMax) == 2147483646);
  CHECK(saturating_rounding_doubling_high_mul(0, kMin) == 0);
  // 101 * 0.5 = 50.5 -> 51; -101 * 0.5 = -50.5 -> -50 (the nudge makes ties go up)
  CHECK(saturating_rounding_doubling_high_mul(101, 1 << 30) == 51);
  CHECK(saturating_rounding_doubling_high_mul(-101, 1 << 30) == -50);
  CHECK(saturating_rounding_doubling_high_mul(-103, 1 << 30) == -51);
}

TEST_CASE("RoundingDivideByPOT: ties away from zero, exponents 0..31") {
  using qk::ref::rounding_divide_by_pot;
  CHECK(rounding_divide_by_pot(5, 1) == 3);
  CHECK(rounding_divide_by_pot(-5, 1) == -3);
  CHECK(rounding_divide_by_pot(7, 2) == 2);
  CHECK(rounding_divide_by_pot(-6, 2) == -2);
  CHECK(rounding_divide_by_pot(-5, 2) == -1);
  CHECK(rounding_divide_by_pot(12345, 0) == 12345);
  CHECK(rounding_divide_by_pot(kMin, 0) == kMin);
  CHECK(rounding_divide_by_pot(kMin, 31) == -1);
  CHECK(rounding_divide_by_pot(kMax, 31) == 1);
  CHECK(rounding_divide_by_pot(1 << 29, 31) == 0);
  CHECK(rounding_divide_by_pot(1 << 30, 31) == 1);  // 0.5 -> 1
  CHECK(rounding_divide_by_pot(-(1 << 30), 31) == -1);
}

TEST_CASE("QuantizeMultiplier (frexp, 2^31 folding, flush below 2^-31)") {
  using qk::ref::quantize_multiplier;
  CHECK(quantize_multiplier(0.5) == qk::ref::QuantizedMultiplier{1 << 30, 0});
  CHECK(quantize_multiplier(1.0) == qk::ref::QuantizedMultiplier{1 << 30, 1});
  CHECK(quantize_multiplier(0.75) == qk::ref::QuantizedMultiplier{1610612736, 0});
  CHECK(quantize_multiplier(0.0) == qk::ref::QuantizedMultiplier{0, 0});
  CHECK(quantize_multiplier(std::ldexp(1.0, -40)) == qk::ref::QuantizedMultiplier{0, 0});
  CHECK(quantize_multiplier(1.0 - 1e-12) == qk::ref::QuantizedMultiplier{1 << 30, 1});
  CHECK(quantize_multiplier(std::ldexp(1.0, 40), true) == qk::ref::QuantizedMultiplier{kMax, 30});
  const auto q = quantize_multiplier(0.0123456);
  CHECK(std::ldexp(static_cast<double>(q.multiplier), q.shift - 31) == doctest::Approx(0.0123456).epsilon(1e-9));
}

TEST_CASE("MultiplyByQuantizedMultiplier: double vs single rounding differ") {
  const auto half = qk::ref::QuantizedMultiplier{1 << 30, 0};
  using qk::ref::multiply_by_quantized_multiplier_double_rounding;
  using qk::ref::multiply_by_quantized_multiplier_single_rounding;
  CHECK(multiply_by_quantized_multiplier_double_rounding(100, half) == 50);
  CHECK(multiply_by_quantized_multiplier_double_rounding(101, half) == 51);
  CHECK(multiply_by_quantized_multiplier_single_rounding(101, half) == 51);
  CHECK(multiply_by_quantized_multiplier_single_rounding(-101, half) == -50);
  // 0.375 = 0.75 * 2^-1: double rounding rounds twice (SRDHM then RDBP), single once.
  const auto m = qk::ref::QuantizedMultiplier{1610612736, -1};
  // x = 3: 3 * 0.75 = 2.25 -> SRDHM 2; RDBP(2, 1) = 1 (1.0 exact); single: 1.125 -> 1
  CHECK(multiply_by_quantized_multiplier_double_rounding(3, m) == 1);
  CHECK(multiply_by_quantized_multiplier_single_rounding(3, m) == 1);
  // x = 4: 3.0 exact -> RDBP(3, 1) = 1.5 -> 2; single: 1.5 -> 2
  CHECK(multiply_by_quantized_multiplier_double_rounding(4, m) == 2);
  // x = 5: 3.75 -> SRDHM 4, RDBP(4,1) = 2; single: 1.875 -> 2
  CHECK(multiply_by_quantized_multiplier_double_rounding(5, m) == 2);
  // x = 2: 1.5 -> SRDHM 2, RDBP(2,1) = 1; single: 0.75 -> 1 ; x = 6: 4.5 -> 5, RDBP(5,1)=3; single 2.25 -> 2
  CHECK(multiply_by_quantized_multiplier_double_rounding(6, m) == 3);
  CHECK(multiply_by_quantized_multiplier_single_rounding(6, m) == 2);
  // shift 0 and large accumulators do not overflow
  CHECK(multiply_by_quantized_multiplier_double_rounding(kMin, half) == -(1 << 30));
  CHECK(multiply_by_quantized_multiplier_single_rounding(kMin, half) == -(1 << 30));
  CHECK(multiply_by_quantized_multiplier_single_rounding(kMax, qk::ref::QuantizedMultiplier{kMax, 0}) == 2147483646);
  // multipliers > 1 saturate instead of wrapping
  CHECK(multiply_by_quantized_multiplier_double_rounding(kMax, qk::ref::QuantizedMultiplier{1 << 30, 2}) == kMax);
}

TEST_CASE("scale schemes: constants and per-element results") {
  // float multiplier with the chosen rounding
  auto f = qk::FloatMultiplier<qk::RoundHalfEven>::make(0.5);
  CHECK(qk::FloatMultiplier<qk::RoundHalfEven>::apply(7, f) == 4);
  CHECK(qk::FloatMultiplier<qk::RoundHalfEven>::apply(5, f) == 2);
  CHECK(qk::FloatMultiplier<qk::RoundHalfAway>::apply(5, f) == 3);
  CHECK(qk::FloatMultiplier<qk::RoundHalfEven>::apply(kMax, qk::FloatMultiplier<>::make(4.0)) == kMax);
  // power of two: nearest shift in the log domain, exact integer rounding
  auto p = qk::PowerOfTwo<qk::RoundHalfAway>::make(0.3);
  CHECK(p.shift == 2);
  CHECK(qk::PowerOfTwo<qk::RoundHalfAway>::apply(-6, p) == -2);
  CHECK(qk::PowerOfTwo<qk::RoundHalfEven>::apply(-6, p) == -2);
  CHECK(qk::PowerOfTwo<qk::RoundHalfEven>::apply(-10, p) == -2);
  CHECK(qk::PowerOfTwo<qk::RoundHalfUp>::apply(-6, p) == -1);
  CHECK(qk::PowerOfTwo<>::approximation(p) == 0.25);
  // N2D2 single shift: floor
  auto s = qk::SingleShift::make(0.25);
  CHECK(s.shift == 2);
  CHECK(qk::SingleShift::apply(-6, s) == -2);
  CHECK(qk::SingleShift::apply(7, s) == 1);
  CHECK(qk::SingleShift::apply(kMin, qk::SingleShift::make(std::ldexp(1.0, -31))) == -1);
  // N2D2 double shift: 0.375 = 2^-2 + 2^-3 -> (acc + (acc << 1) + 4) >> 3
  auto d = qk::DoubleShift::make(0.375);
  CHECK(d.shift1 == 1);
  CHECK(d.shift2 == 3);
  CHECK(qk::DoubleShift::approximation(d) == 0.375);
  CHECK(qk::DoubleShift::apply(8, d) == 3);
  CHECK(qk::DoubleShift::apply(-8, d) == -3);
  CHECK(qk::DoubleShift::apply(kMax, qk::DoubleShift::make(1.5)) == kMax);
  CHECK(qk::DoubleShift::apply(kMin, d) == -805306368);
  // fixed point: approximation within 2^-31 relative
  auto fp = qk::FixedPointDoubleRounding::make(0.0072);
  CHECK(qk::FixedPointDoubleRounding::approximation(fp) == doctest::Approx(0.0072).epsilon(1e-9));
  CHECK(qk::FixedPointDoubleRounding::apply(10000, fp) == 72);
  CHECK(qk::FixedPointSingleRounding::apply(10000, qk::FixedPointSingleRounding::make(0.0072)) == 72);
}

TEST_CASE("multipliers a scheme cannot express are rejected naming the layer") {
  CHECK_THROWS_WITH_AS(qk::SingleShift::make(1.5, "conv3"),
                       doctest::Contains("layer 'conv3': requantization multiplier 1.5 exceeds 1"), qk::Error);
  CHECK_THROWS_WITH_AS(qk::DoubleShift::make(2.0, "fc"), doctest::Contains("use FixedPointDoubleRounding"), qk::Error);
  CHECK_THROWS_WITH_AS(qk::FixedPointDoubleRounding::make(0.0, "fc"),
                       doctest::Contains("layer 'fc': requantization multiplier 0; expected a finite value > 0"), qk::Error);
  CHECK_THROWS_AS(qk::FloatMultiplier<>::make(std::nan(""), "fc"), qk::Error);
  CHECK_THROWS_AS(qk::PowerOfTwo<>::make(-0.5, "fc"), qk::Error);
}

TEST_CASE("tensor requantize: per-channel multipliers, bias, zero point, fused ReLU") {
  // accumulators [2 rows, 3 channels], channels on axis 1
  const std::vector<std::int32_t> acc = {100, -100, 1000, -7, 7, 50};
  auto p = qk::RequantParams<qk::FixedPointDoubleRounding>::make({0.5, 0.25, 0.125}, qk::IntRange{-128, 127}, 5, "fc1");
  p.channel_axis = 1;
  p.bias = {10, 0, -8};
  std::vector<std::int8_t> out(6);
  qk::ref::requantize(qk::with_shape(acc, {2, 3}), p, qk::with_shape(out, {2, 3}), "fc1");
  // (100+10)*0.5+5=60, -100*0.25+5=-20, (1000-8)/8=124+5=129->127; (-7+10)*.5=1.5->2 +5=7, 7/4=1.75->2 +5=7, 42/8=5.25->5 +5=10
  CHECK(out == std::vector<std::int8_t>{60, -20, 127, 7, 7, 10});
  // fused ReLU: clamp below at the zero point
  p.clamp_min = 5;
  qk::ref::requantize(qk::with_shape(acc, {2, 3}), p, qk::with_shape(out, {2, 3}), "fc1");
  CHECK(out == std::vector<std::int8_t>{60, 5, 127, 7, 7, 10});
  // channels along axis 0 (NCHW-like): 2 channels
  auto q = qk::RequantParams<qk::SingleShift>::make({0.5, 0.25}, qk::IntRange{0, 255}, 0, "conv");
  q.channel_axis = 0;
  std::vector<std::uint8_t> o8(6);
  qk::ref::requantize(qk::with_shape(acc, {2, 3}), q, qk::with_shape(o8, {2, 3}), "conv");
  CHECK(o8 == std::vector<std::uint8_t>{50, 0, 255, 0, 1, 12});
  // a bias that would overflow int32 saturates
  auto r = qk::RequantParams<qk::PowerOfTwo<>>::make({std::ldexp(1.0, -24)}, qk::IntRange{-32768, 32767}, 0, "big");
  r.bias = {kMax};
  const std::vector<std::int32_t> big = {kMax};
  std::vector<std::int16_t> o16(1);
  qk::ref::requantize(qk::with_shape(big, {1}), r, qk::with_shape(o16, {1}), "big");
  CHECK(o16[0] == 128);  // (2^31 - 1) / 2^24 = 127.99 -> 128
  // count mismatches are errors naming the layer
  p.bias = {1, 2};
  CHECK_THROWS_WITH_AS(qk::ref::requantize(qk::with_shape(acc, {2, 3}), p, qk::with_shape(out, {2, 3}), "fc1"),
                       doctest::Contains("layer 'fc1': 2 biases for 3 channels; expected 3"), qk::Error);
}

namespace {
// The message of the quantkit::Error f throws ("" when none).
template <class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const qk::Error& e) {
    return e.what();
  }
  return {};
}

// Hand-built constants of a shift scheme: the edges of its int64 arithmetic compute `want`
// (ref and SIMD, every target), one past them is refused by both before anything is written.
template <class Scheme>
void check_shift_domain(const typename Scheme::Constants& edge, const std::vector<std::int8_t>& want,
                        const typename Scheme::Constants& bad, const std::string& problem) {
  const std::vector<std::int32_t> acc = {kMin, -70000, -3, -1, 0, 1, 2, 3, 70000, kMax};
  const qk::Dims shape{2, 5};
  qk::RequantParams<Scheme> p;
  p.constants = {edge};
  std::vector<std::int8_t> out(acc.size(), 42);
  qk::ref::requantize(qk::View<const std::int32_t>(acc.data(), shape), p, qk::View<std::int8_t>(out.data(), shape));
  CHECK(out == want);
  for (const qk::simd::Kernels* k : qk::simd::available_kernels()) {
    CAPTURE(k->name);
    std::fill(out.begin(), out.end(), std::int8_t{42});
    qk::simd::requantize(qk::View<const std::int32_t>(acc.data(), shape), p, qk::View<std::int8_t>(out.data(), shape),
                         "conv2", k);
    CHECK(out == want);
  }
  // per channel (axis 1): the bad constants third of five
  p.constants = {edge, edge, bad, edge, edge};
  p.channel_axis = 1;
  std::fill(out.begin(), out.end(), std::int8_t{42});
  CHECK(error_text([&] {
          qk::ref::requantize(qk::View<const std::int32_t>(acc.data(), shape), p,
                              qk::View<std::int8_t>(out.data(), shape), "conv2");
        }) == "quantkit: layer 'conv2': constants[2]" + problem);
  CHECK(error_text([&] {
          qk::simd::requantize(qk::View<const std::int32_t>(acc.data(), shape), p,
                               qk::View<std::int8_t>(out.data(), shape), "conv2");
        }) == "quantkit: simd::requantize: layer 'conv2': constants[2]" + problem);
  CHECK(out == std::vector<std::int8_t>(acc.size(), 42));
}
}  // namespace

TEST_CASE("hand-built shifts outside a scheme's int64 arithmetic are refused by ref and SIMD requantize") {
  const std::vector<std::int8_t> zeros(10, 0);
  // acc / 2^62 rounds to 0 for every int32; -1 is no right shift
  check_shift_domain<qk::PowerOfTwo<qk::RoundHalfEven>>({62}, zeros, {-1},
                                                        ".shift is -1; expected a shift in [0, 62] (pow2)");
  check_shift_domain<qk::PowerOfTwo<qk::RoundFloor>>({62}, {-1, -1, -1, -1, 0, 0, 0, 0, 0, 0}, {63},
                                                     ".shift is 63; expected a shift in [0, 62] (pow2)");
  // acc >> 63 is the sign
  check_shift_domain<qk::SingleShift>({63}, {-1, -1, -1, -1, 0, 0, 0, 0, 0, 0}, {64},
                                      ".shift is 64; expected a shift in [0, 63] (single-shift)");
  check_shift_domain<qk::SingleShift>({0}, {-128, -128, -3, -1, 0, 1, 2, 3, 127, 127},
                                      {std::numeric_limits<int>::min()},
                                      ".shift is -2147483648; expected a shift in [0, 63] (single-shift)");
  // (acc + acc * 2^31 + 2^61) >> 62: about acc / 2^31, rounded
  check_shift_domain<qk::DoubleShift>({31, 62}, {-1, 0, 0, 0, 0, 0, 0, 0, 0, 1}, {32, 62},
                                      " is {shift1 32, shift2 62}; expected shift1 in [0, 31] and shift2 in "
                                      "[1, 62] (double-shift)");
  check_shift_domain<qk::DoubleShift>({0, 1}, {-128, -128, -3, -1, 0, 1, 2, 3, 127, 127},
                                      {0, 63},
                                      " is {shift1 0, shift2 63}; expected shift1 in [0, 31] and shift2 in "
                                      "[1, 62] (double-shift)");
  // fixed point: x * 2^32 and x / 2^62 (edges against the SIMD kernels: test_simd_raw_checks)
  check_shift_domain<qk::FixedPointSingleRounding>({1 << 30, -32}, zeros, {1 << 30, 31},
                                                   ".shift is 31; expected a shift in [-32, 30] (fixed-point-single)");
  check_shift_domain<qk::FixedPointDoubleRounding>({1 << 30, -62}, zeros, {1 << 30, -63},
                                                   ".shift is -63; expected a shift in [-62, 32] (fixed-point)");
}
