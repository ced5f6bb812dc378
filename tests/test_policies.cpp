// Formats, rounding policies, scheme assembly.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

#include <quantkit/quantkit.hpp>

namespace qk = quantkit;

TEST_CASE("integer formats: ranges and storage") {
  CHECK(qk::Int8::qmin == -128);
  CHECK(qk::Int8::qmax == 127);
  CHECK(qk::Int8Narrow::qmin == -127);
  CHECK(qk::UInt8::qmin == 0);
  CHECK(qk::UInt8::qmax == 255);
  CHECK(qk::Int4::qmin == -8);
  CHECK(qk::Int4::qmax == 7);
  CHECK(qk::UInt4::qmax == 15);
  CHECK(qk::Int2::qmin == -2);
  CHECK(qk::Int2::qmax == 1);
  CHECK(qk::Int<12>::qmin == -2048);
  CHECK(qk::UInt<16>::qmax == 65535);
  CHECK(qk::Int<3>::qmax == 3);
  static_assert(std::is_same_v<qk::Int<12>::storage_type, std::int16_t>);
  static_assert(std::is_same_v<qk::UInt<7>::storage_type, std::uint8_t>);
  static_assert(std::is_same_v<qk::Int4::storage_type, std::int8_t>);
  static_assert(qk::Int4::packable && qk::UInt2::packable && !qk::Int8::packable && !qk::Int<3>::packable);
  static_assert(qk::Int4::values_per_byte == 2 && qk::Int2::values_per_byte == 4);
  // A wider storage than needed is allowed.
  static_assert(std::is_same_v<qk::IntFormat<8, true, false, std::int32_t>::storage_type, std::int32_t>);
}

TEST_CASE("rounding policies on ties and near-ties") {
  struct Case {
    float t, even, away, up, floor, zero;
  };
  const float below_half = std::nextafter(0.5f, 0.0f);  // 0.49999997: floor(t + 0.5) would give 1
  const Case cases[] = {
      {0.5f, 0, 1, 1, 0, 0},         {1.5f, 2, 2, 2, 1, 1},        {2.5f, 2, 3, 3, 2, 2},
      {-0.5f, -0.0f, -1, 0, -1, -0.0f}, {-1.5f, -2, -2, -1, -2, -1}, {-2.5f, -2, -3, -2, -3, -2},
      {2.4f, 2, 2, 2, 2, 2},         {-2.6f, -3, -3, -3, -3, -2},  {below_half, 0, 0, 0, 0, 0},
      {-below_half, 0, 0, 0, -1, 0}, {8388609.0f, 8388609.0f, 8388609.0f, 8388609.0f, 8388609.0f, 8388609.0f},
      {0.0f, 0, 0, 0, 0, 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.t);
    CHECK(qk::RoundHalfEven{}(c.t) == c.even);
    CHECK(qk::RoundHalfAway{}(c.t) == c.away);
    CHECK(qk::RoundHalfUp{}(c.t) == c.up);
    CHECK(qk::RoundFloor{}(c.t) == c.floor);
    CHECK(qk::RoundTowardZero{}(c.t) == c.zero);
  }
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(qk::RoundHalfEven{}(inf) == inf);
  CHECK(qk::RoundHalfUp{}(-inf) == -inf);
}

TEST_CASE("integer shift rounding equals rounding the exact quotient") {
  // x / 2^s for every x in a window and s in 0..6, against the float rounding of the exact
  // quotient (exact in float for these magnitudes).
  for (int s = 0; s <= 6; ++s)
    for (std::int64_t x = -300; x <= 300; ++x) {
      const float q = static_cast<float>(x) / static_cast<float>(1 << s);
      CAPTURE(x);
      CAPTURE(s);
      CHECK(qk::RoundHalfEven::shift_right(x, s) == static_cast<std::int64_t>(qk::RoundHalfEven{}(q)));
      CHECK(qk::RoundHalfAway::shift_right(x, s) == static_cast<std::int64_t>(qk::RoundHalfAway{}(q)));
      CHECK(qk::RoundHalfUp::shift_right(x, s) == static_cast<std::int64_t>(qk::RoundHalfUp{}(q)));
      CHECK(qk::RoundFloor::shift_right(x, s) == static_cast<std::int64_t>(qk::RoundFloor{}(q)));
      CHECK(qk::RoundTowardZero::shift_right(x, s) == static_cast<std::int64_t>(qk::RoundTowardZero{}(q)));
    }
}

TEST_CASE("stochastic rounding is unbiased and reproducible") {
  std::mt19937 g1(42), g2(42);
  qk::RoundStochastic<std::mt19937> r1(g1), r2(g2);
  double sum = 0;
  int ups = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const float v = r1(2.25f);
    CHECK((v == 2.0f || v == 3.0f));
    ups += v == 3.0f;
    sum += v;
    CHECK(v == r2(2.25f));  // same generator state, same result
  }
  CHECK(sum / n == doctest::Approx(2.25).epsilon(0.01));
  CHECK(ups == doctest::Approx(n * 0.25).epsilon(0.05));
  // Integral values never move.
  CHECK(r1(-7.0f) == -7.0f);
  // round_with is the documented rule: up iff u < frac.
  CHECK(qk::RoundStochastic<std::mt19937>::round_with(1.25f, 0.2f) == 2.0f);
  CHECK(qk::RoundStochastic<std::mt19937>::round_with(1.25f, 0.25f) == 1.0f);
}

TEST_CASE("scheme picks policies by category, in any order, with defaults") {
  using A = qk::Scheme<>;
  static_assert(std::is_same_v<A::format, qk::Int8>);
  static_assert(std::is_same_v<A::granularity, qk::PerTensor>);
  static_assert(std::is_same_v<A::symmetry, qk::Affine>);
  static_assert(std::is_same_v<A::rounding, qk::RoundHalfEven>);
  static_assert(std::is_same_v<A::scale_application, qk::DivideByScale>);
  static_assert(std::is_same_v<A::convention, qk::PyTorchConvention>);
  static_assert(std::is_same_v<A::observer, qk::MinMaxObserver>);
  using B = qk::Scheme<qk::RoundHalfAway, qk::PerGroup<1, 128>, qk::UInt<4>, qk::Symmetric,
                       qk::MultiplyByReciprocal, qk::OnnxRuntimeConvention, qk::IgnoreNonFinite>;
  static_assert(std::is_same_v<B::format, qk::UInt4>);
  static_assert(std::is_same_v<B::granularity, qk::PerGroup<1, 128>>);
  static_assert(std::is_same_v<B::rounding, qk::RoundHalfAway>);
  static_assert(B::nonfinite::kind == qk::NonFiniteKind::ignore);
  using C = qk::Scheme<qk::Int<8>, qk::SymmetricRestricted>;
  CHECK(C::range().qmin == -127);
  CHECK(C::range().qmax == 127);
  CHECK(qk::Scheme<qk::Int<4>, qk::SymmetricRestricted>::range().qmin == -7);
}
