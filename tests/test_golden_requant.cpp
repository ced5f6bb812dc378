// quantkit's fixed-point requantization against tests/golden/requant.json: an independent
// arbitrary-precision Python implementation of gemmlowp / TFLite (QuantizeMultiplier,
// SaturatingRoundingDoublingHighMul, RoundingDivideByPOT, MultiplyByQuantizedMultiplier with
// double and single rounding) and N2D2's single/double shift (tools/golden/gen_requant_golden.py).
// Every mismatch is reported with its section, case index and values.
//
// Where the peers are undefined (x * 2^shift leaving int32 in gemmlowp's double rounding) the
// golden value is null and quantkit's documented choice is checked instead: saturation to
// INT32_MIN / INT32_MAX by the sign of x. Where the exact result leaves int32 (single rounding,
// double shift) quantkit saturates it.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <quantkit/quantkit.hpp>

#include "support/golden.hpp"

namespace qk = quantkit;
namespace qt = quantkit_test;
using nlohmann::json;

namespace {

constexpr std::int64_t kI32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kI32Max = std::numeric_limits<std::int32_t>::max();

std::int32_t sat32(std::int64_t v) {
  return static_cast<std::int32_t>(v < kI32Min ? kI32Min : (v > kI32Max ? kI32Max : v));
}

// The golden value for a quantkit int32 result: exact value saturated; null -> saturation by
// the sign of x (quantkit's rule where the peers overflow).
std::int32_t expected_i32(const json& v, std::int32_t x) {
  if (v.is_null()) return x < 0 ? std::numeric_limits<std::int32_t>::min()
                                : std::numeric_limits<std::int32_t>::max();
  return sat32(v.get<std::int64_t>());
}

const json& load() {
  static const json doc = qt::load_golden("requant.json");
  return doc;
}

}  // namespace

TEST_CASE("golden requant: QuantizeMultiplier (frexp, round half away, 2^31 fold, flush)") {
  const auto& cases = load().at("quantize_multiplier");
  REQUIRE(cases.size() > 30);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    const double m = c.at("m").get<double>();
    CAPTURE(i);
    INFO("m = ", c.at("m_hex").get<std::string>(), " (", m, ")");
    const auto d = qk::ref::quantize_multiplier(m, false);
    CHECK(d.multiplier == c.at("multiplier").get<std::int64_t>());
    CHECK(d.shift == c.at("shift").get<int>());
    const auto s = qk::ref::quantize_multiplier(m, true);
    CHECK(s.multiplier == c.at("multiplier_single").get<std::int64_t>());
    CHECK(s.shift == c.at("shift_single").get<int>());
  }
}

TEST_CASE("golden requant: SaturatingRoundingDoublingHighMul") {
  const auto& cases = load().at("srdhm");
  REQUIRE(cases.size() > 30);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    const auto a = c.at("a").get<std::int32_t>(), b = c.at("b").get<std::int32_t>();
    CAPTURE(i);
    CAPTURE(a);
    CAPTURE(b);
    CHECK(qk::ref::saturating_rounding_doubling_high_mul(a, b) == c.at("result").get<std::int64_t>());
  }
}

TEST_CASE("golden requant: RoundingDivideByPOT (and PowerOfTwo<RoundHalfAway>)") {
  const auto& cases = load().at("rdbp");
  REQUIRE(cases.size() > 100);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    const auto x = c.at("x").get<std::int32_t>();
    const int e = c.at("exponent").get<int>();
    const auto want = c.at("result").get<std::int64_t>();
    CAPTURE(i);
    CAPTURE(x);
    CAPTURE(e);
    CHECK(qk::ref::rounding_divide_by_pot(x, e) == want);
    // A power-of-two scale with ties away from zero is the same operation.
    CHECK(qk::PowerOfTwo<qk::RoundHalfAway>::apply(x, qk::ShiftScale{e}) == want);
  }
}

TEST_CASE("golden requant: MultiplyByQuantizedMultiplier, double and single rounding") {
  const auto& cases = load().at("multiply_by_quantized_multiplier");
  REQUIRE(cases.size() > 30);
  int checked = 0, undefined = 0;
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const json& c = cases[ci];
    const qk::ref::QuantizedMultiplier qm{c.at("multiplier").get<std::int32_t>(),
                                          c.at("shift").get<int>()};
    const auto xs = qt::int_vector<std::int32_t>(c.at("x"));
    const json& dbl = c.at("double_rounding");
    const json& sgl = c.at("single_rounding");
    for (std::size_t i = 0; i < xs.size(); ++i) {
      INFO("case ", ci, " q = ", qm.multiplier, " shift = ", qm.shift, " x[", i, "] = ", xs[i],
           " golden double ", dbl[i].dump(), ", single ", sgl.is_null() ? "-" : sgl[i].dump());
      CHECK(qk::ref::multiply_by_quantized_multiplier_double_rounding(xs[i], qm) ==
            expected_i32(dbl[i], xs[i]));
      if (dbl[i].is_null()) ++undefined;
      if (!sgl.is_null())
        CHECK(qk::ref::multiply_by_quantized_multiplier_single_rounding(xs[i], qm) ==
              expected_i32(sgl[i], xs[i]));
      ++checked;
    }
  }
  MESSAGE("multiply_by_quantized_multiplier: ", checked, " values (", undefined,
          " where the peers overflow int32: saturation checked)");
}

TEST_CASE("golden requant: FixedPointDoubleRounding / FixedPointSingleRounding from real multipliers") {
  const auto& cases = load().at("requantize_from_real");
  REQUIRE(cases.size() > 30);
  int checked = 0, differ = 0;
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const json& c = cases[ci];
    const double m = c.at("m").get<double>();
    const auto kd = qk::FixedPointDoubleRounding::make(m, "golden");
    const auto ks = qk::FixedPointSingleRounding::make(m, "golden");
    const auto accs = qt::int_vector<std::int32_t>(c.at("acc"));
    for (std::size_t i = 0; i < accs.size(); ++i) {
      const json& d = c.at("double_rounding")[i];
      const json& s = c.at("single_rounding")[i];
      INFO("case ", ci, " m = ", c.at("m_hex").get<std::string>(), " acc[", i, "] = ", accs[i],
           " golden double ", d.dump(), ", single ", s.dump());
      CHECK(qk::FixedPointDoubleRounding::apply(accs[i], kd) == expected_i32(d, accs[i]));
      CHECK(qk::FixedPointSingleRounding::apply(accs[i], ks) == expected_i32(s, accs[i]));
      if (!d.is_null() && d != s) ++differ;
      ++checked;
    }
  }
  MESSAGE("requantize_from_real: ", checked, " values, ", differ,
          " where double and single rounding differ");
}

TEST_CASE("golden requant: requantize with bias, zero point and clamp") {
  const auto& cases = load().at("requantize_output");
  REQUIRE(!cases.empty());
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const json& c = cases[ci];
    const double m = c.at("m").get<double>();
    const auto bias = c.at("bias").get<std::int32_t>();
    const auto zp = c.at("zero_point").get<std::int32_t>();
    const auto lo = c.at("clamp_min").get<std::int32_t>(), hi = c.at("clamp_max").get<std::int32_t>();
    const auto accs = qt::int_vector<std::int32_t>(c.at("acc"));
    const auto want_d = qt::int_vector<std::int32_t>(c.at("out_double_rounding"));
    const auto want_s = qt::int_vector<std::int32_t>(c.at("out_single_rounding"));
    CAPTURE(ci);
    INFO("m = ", c.at("m_hex").get<std::string>(), " bias ", bias, " zp ", zp, " clamp [", lo,
         ", ", hi, "]");
    const auto kd = qk::FixedPointDoubleRounding::make(m);
    const auto ks = qk::FixedPointSingleRounding::make(m);
    for (std::size_t i = 0; i < accs.size(); ++i) {
      CAPTURE(i);
      CAPTURE(accs[i]);
      CHECK(qk::ref::requantize_value<qk::FixedPointDoubleRounding>(accs[i], bias, kd, zp, lo, hi) ==
            want_d[i]);
      CHECK(qk::ref::requantize_value<qk::FixedPointSingleRounding>(accs[i], bias, ks, zp, lo, hi) ==
            want_s[i]);
    }
    // The tensor-level reference gives the same (per tensor, one bias).
    auto pd = qk::RequantParams<qk::FixedPointDoubleRounding>::make({m}, {lo, hi}, zp, "golden");
    pd.bias = {bias};
    std::vector<std::int32_t> out(accs.size());
    qk::ref::requantize(qk::as_tensor(accs), pd, qk::as_tensor(out), "golden");
    CHECK(out == want_d);
  }
}

TEST_CASE("golden requant: N2D2-style single shift and double shift") {
  const auto& singles = load().at("single_shift");
  REQUIRE(!singles.empty());
  for (std::size_t ci = 0; ci < singles.size(); ++ci) {
    const json& c = singles[ci];
    const int s = c.at("s").get<int>();
    const auto accs = qt::int_vector<std::int32_t>(c.at("acc"));
    const auto want = qt::int_vector<std::int64_t>(c.at("result"));
    for (std::size_t i = 0; i < accs.size(); ++i) {
      INFO("single shift case ", ci, " s = ", s, " acc[", i, "] = ", accs[i], " golden ", want[i]);
      CHECK(qk::SingleShift::apply(accs[i], qk::ShiftScale{s}) == sat32(want[i]));
      CHECK(qk::PowerOfTwo<qk::RoundFloor>::apply(accs[i], qk::ShiftScale{s}) == sat32(want[i]));
    }
  }
  const auto& doubles = load().at("double_shift");
  REQUIRE(!doubles.empty());
  for (std::size_t ci = 0; ci < doubles.size(); ++ci) {
    const json& c = doubles[ci];
    qk::DoubleShift::Constants k;
    k.shift1 = c.at("s1").get<int>();
    k.shift2 = c.at("s2").get<int>();
    const auto accs = qt::int_vector<std::int32_t>(c.at("acc"));
    const auto want = qt::int_vector<std::int64_t>(c.at("result"));
    for (std::size_t i = 0; i < accs.size(); ++i) {
      INFO("double shift case ", ci, " s1 = ", k.shift1, " s2 = ", k.shift2, " acc[", i, "] = ",
           accs[i], " golden ", want[i]);
      CHECK(qk::DoubleShift::apply(accs[i], k) == sat32(want[i]));
    }
  }
}
