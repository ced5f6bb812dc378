// The raw-pointer SIMD API's input checks: bad scales, zero points and requantization shifts
// throw quantkit::Error naming the function, the argument (and channel index) and the value
// found, before anything is written; the values at the edges of what is accepted give the
// scalar reference's results on every compiled target.
#include "test_simd_common.hpp"

#include <quantkit/simd/gemm_abi.hpp>

#include <sstream>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace {

using simd_test::kI32Max;
using simd_test::kI32Min;
using simd_test::kInf;
using simd_test::ScopedBytes;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kSentinelF = std::nanf("0x5a5");

template <class T>
std::string str(T v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

template <class T>
bool all_sentinel(const std::vector<T>& v, T sentinel) {
  for (const T& e : v)
    if (!simd_test::same(e, sentinel)) return false;
  return true;
}

// The message of the call f() throws as quantkit::Error ("" when it does not throw).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const qk::Error& e) {
    return e.what();
  }
  return std::string();
}

// Inputs that reach every branch of the kernels: the clamps on both sides, +-inf, NaN, ties,
// values around 0, over 1037 elements (whole blocks of 4 vectors, single vectors and a tail
// on every target).
std::vector<float> raw_inputs(float scale) {
  std::mt19937 rng(11);
  std::vector<float> x(1037);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t i = 0; i < x.size(); ++i) {
    switch (i % 9) {
      case 0: x[i] = kInf; break;
      case 1: x[i] = -kInf; break;
      case 2: x[i] = kNaN; break;
      case 3: x[i] = 3e38f; break;
      case 4: x[i] = -3e38f; break;
      case 5: x[i] = (static_cast<float>(i % 97) - 48.0f + 0.5f) * scale; break;  // ties
      default: x[i] = u(rng) * scale * 70000.0f; break;
    }
  }
  return x;
}

// Quantizes with the raw API on every target, per tensor and per channel (axis 1 of [61, 17]
// with every column's zero point `zp`), and compares with ref::quantize.
template <class Q>
void check_raw_quantize_equals_ref(qk::IntRange range, std::int32_t zp, bool explicit_range) {
  const float scale = 0.37f;
  const std::vector<float> x = raw_inputs(scale);
  const std::size_t n = x.size();
  qk::QuantParams p;
  p.scale = {scale};
  p.zero_point = {zp};
  p.range = range;
  std::vector<Q> want(n);
  const qk::Dims shape{static_cast<std::int64_t>(n)};
  if constexpr (std::is_same<Q, float>::value)
    qk::ref::fake_quantize(qk::View<const float>(x.data(), shape), p, qk::View<float>(want.data(), shape));
  else
    qk::ref::quantize(qk::View<const float>(x.data(), shape), p, qk::View<Q>(want.data(), shape));
  const auto o = explicit_range ? qks::QuantizeOptions{}.with_range(range) : qks::QuantizeOptions{};
  const std::vector<float> scales(17, scale);
  const std::vector<std::int32_t> zps(17, zp);
  for (const qks::Kernels* k : qks::available_kernels()) {
    const std::string target = k->name;
    CAPTURE(target);
    std::vector<Q> got(n), got_pc(n);
    if constexpr (std::is_same<Q, float>::value) {
      qks::fake_quantize(x.data(), n, scale, zp, o, got.data(), *k);
      qks::fake_quantize_per_channel(x.data(), 61, 17, 1, scales.data(), zps.data(), o, got_pc.data(), *k);
    } else {
      qks::quantize(x.data(), n, scale, zp, o, got.data(), *k);
      qks::quantize_per_channel(x.data(), 61, 17, 1, scales.data(), zps.data(), o, got_pc.data(), *k);
    }
    QK_CHECK_SAME(got, want, x);
    QK_CHECK_SAME(got_pc, want, x);
  }
}

// Dequantizes q over Q's range with the raw API on every target, per tensor and per channel
// (axis 1 of [61, 17]), and compares with ref::dequantize_value.
template <class Q>
void check_raw_dequantize_equals_ref(float scale, std::int32_t zp) {
  std::mt19937 rng(5);
  std::vector<Q> q(1037);
  for (std::size_t i = 0; i < q.size(); ++i)
    q[i] = i % 5 == 0 ? std::numeric_limits<Q>::min()
           : i % 5 == 1 ? std::numeric_limits<Q>::max()
                        : static_cast<Q>(rng());
  std::vector<float> want(q.size());
  for (std::size_t i = 0; i < q.size(); ++i)
    want[i] = qk::ref::dequantize_value(static_cast<std::int32_t>(q[i]), scale, zp);
  const std::vector<float> scales(17, scale);
  const std::vector<std::int32_t> zps(17, zp);
  for (const qks::Kernels* k : qks::available_kernels()) {
    const std::string target = k->name;
    CAPTURE(target);
    std::vector<float> got(q.size(), kSentinelF), got_pc(q.size(), kSentinelF);
    qks::dequantize(q.data(), q.size(), scale, zp, got.data(), *k);
    qks::dequantize_per_channel(q.data(), 61, 17, 1, scales.data(), zps.data(), got_pc.data(), *k);
    QK_CHECK_SAME(got, want, q);
    QK_CHECK_SAME(got_pc, want, q);
  }
}

// The bad scales every raw call rejects, as quantize's check does (finite and > 0).
std::vector<float> bad_scales() {
  return {0.0f, -0.0f, -0.5f, kNaN, -kNaN, kInf, -kInf, -1e-40f};
}

}  // namespace

// ------------------------------------------------------------------ 1. dequantize's scale

TEST_CASE_TEMPLATE("simd raw: dequantize per tensor rejects the scales quantize rejects", Q, std::int8_t,
                   std::uint8_t, std::int16_t, std::uint16_t, std::int32_t) {
  const Q q[5] = {1, 2, 3, 4, 5};
  for (float s : bad_scales()) {
    CAPTURE(s);
    std::vector<float> y(5, kSentinelF);
    const std::string msg = error_of([&] { qks::dequantize(q, 5, s, 0, y.data()); });
    CHECK(msg == "quantkit: simd::dequantize: scale is " + str(s) + "; expected a finite value > 0");
    CHECK(all_sentinel(y, kSentinelF));
    CHECK_THROWS_AS(qks::dequantize(q, 5, s, 0, y.data(), *qks::available_kernels().back()), qk::Error);
    CHECK(all_sentinel(y, kSentinelF));
  }
  // the edges quantize accepts: denormal and the largest finite scale
  check_raw_dequantize_equals_ref<Q>(1e-40f, 0);
  check_raw_dequantize_equals_ref<Q>(std::numeric_limits<float>::max(), 0);
}

// ------------------------------------------------------------------ 2. names and indices

TEST_CASE("simd raw: bad scales are named with the function and the channel index") {
  const float x[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const std::int32_t zps[5] = {0, 1, -1, 2, 0};
  const auto o = qks::QuantizeOptions{}.with_range({-128, 127});
  for (float s : bad_scales()) {
    CAPTURE(s);
    const float scales[5] = {0.1f, 0.2f, 0.3f, s, 0.5f};
    const std::string tail = " is " + str(s) + "; expected a finite value > 0";
    std::vector<std::int8_t> q(10, 77);
    std::vector<float> y(10, kSentinelF);
    // per channel: axis 1 of [2, 5] and axis 0 of [5, 2], channel 3
    for (int axis : {0, 1}) {
      CAPTURE(axis);
      const std::size_t rows = axis == 0 ? 5 : 2, cols = axis == 0 ? 2 : 5;
      CHECK(error_of([&] { qks::quantize_per_channel(x, rows, cols, axis, scales, zps, q.data()); }) ==
            "quantkit: simd::quantize_per_channel: scale[3]" + tail);
      CHECK(error_of([&] { qks::fake_quantize_per_channel(x, rows, cols, axis, scales, zps, o, y.data()); }) ==
            "quantkit: simd::fake_quantize_per_channel: scale[3]" + tail);
      CHECK(error_of([&] { qks::dequantize_per_channel(q.data(), rows, cols, axis, scales, zps, y.data()); }) ==
            "quantkit: simd::dequantize_per_channel: scale[3]" + tail);
    }
    // per tensor
    CHECK(error_of([&] { qks::quantize(x, 10, s, 0, q.data()); }) == "quantkit: simd::quantize: scale" + tail);
    CHECK(error_of([&] { qks::fake_quantize(x, 10, s, 0, o, y.data()); }) ==
          "quantkit: simd::fake_quantize: scale" + tail);
    CHECK(all_sentinel(q, std::int8_t{77}));
    CHECK(all_sentinel(y, kSentinelF));
  }
  // the first bad channel is the one named, even with a later one bad too
  const float two_bad[5] = {0.1f, kNaN, 0.3f, 0.0f, 0.5f};
  std::vector<std::int8_t> q(10, 77);
  CHECK(error_of([&] { qks::quantize_per_channel(x, 2, 5, 1, two_bad, zps, q.data()); }) ==
        "quantkit: simd::quantize_per_channel: scale[1] is " + str(kNaN) + "; expected a finite value > 0");
  // the rest of the call's checks name the function too
  CHECK_THROWS_WITH_AS(qks::quantize_per_channel(x, 2, 5, 1, two_bad, zps, qks::QuantizeOptions{}.with_range({5, 5}),
                                                 q.data()),
                       "quantkit: simd::quantize_per_channel: integer range [5, 5] is empty; expected qmin < qmax",
                       qk::Error);
  std::vector<float> y(10, kSentinelF);
  CHECK_THROWS_WITH_AS(qks::fake_quantize(x, 10, 0.1f, 0, qks::QuantizeOptions{}, y.data()),
                       doctest::Contains("simd::fake_quantize: float/int32 outputs need an explicit range"), qk::Error);
  CHECK(all_sentinel(y, kSentinelF));
  CHECK(all_sentinel(q, std::int8_t{77}));
}

// Multiplying by the reciprocal needs 1.0f / scale finite: below kMinReciprocalScale (a denormal)
// it is +inf and 0 * inf is NaN (PyTorch quantizes every value, 1.0 included, to qmin there).
// Every front end and the reference reject those scales, naming them; the smallest scale they
// take gives the reference's values, and dividing takes the rejected ones.
TEST_CASE("simd: multiply_by_reciprocal rejects scales whose float reciprocal overflows, by every entry point") {
  const float min_s = qk::kMinReciprocalScale;
  CHECK(min_s == 0x1.000008p-128f);
  CHECK(std::isfinite(1.0f / min_s));
  CHECK(std::isinf(1.0f / std::nextafter(min_s, 0.0f)));
  CHECK(qk::reciprocal_finite(min_s));
  CHECK_FALSE(qk::reciprocal_finite(std::nextafter(min_s, 0.0f)));
  const auto mul = qks::QuantizeOptions{}.with_application(qk::ScaleApplicationKind::multiply_by_reciprocal);
  const auto mul_r = qks::QuantizeOptions(mul).with_range({-128, 127});
  // 40 channels: the vector pass of the parameter kernel (16 or 8 lanes) and its scalar tail
  constexpr std::size_t kCh = 40;
  std::vector<float> x(2 * kCh);
  const float cycle[7] = {-1e-36f, -1e-38f, 0.0f, 1e-38f, 3e-39f, 2e-39f, 1e-36f};
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = cycle[i % 7];
  const std::vector<std::int32_t> zps(kCh, 3);
  for (float bad : {std::nextafter(min_s, 0.0f), 2.0e-39f, 1e-45f}) {
    CAPTURE(bad);
    const std::string tail = " is " + str(bad) + ", whose float reciprocal is inf; multiply_by_reciprocal needs a scale >= " +
                             str(min_s) + " (divide takes any finite scale > 0)";
    std::vector<std::int8_t> q(x.size(), 77);
    std::vector<float> y(x.size(), kSentinelF);
    CHECK(error_of([&] { qks::quantize(x.data(), x.size(), bad, 0, mul, q.data()); }) ==
          "quantkit: simd::quantize: scale" + tail);
    CHECK(error_of([&] { qks::fake_quantize(x.data(), x.size(), bad, 0, mul_r, y.data()); }) ==
          "quantkit: simd::fake_quantize: scale" + tail);
    for (std::size_t c : {std::size_t{5}, std::size_t{17}, kCh - 1}) {  // vector lanes and the tail
      CAPTURE(c);
      std::vector<float> scales(kCh, 0.25f);
      scales[c] = bad;
      for (const qks::Kernels* k : qks::available_kernels()) {
        CAPTURE(k->name);
        CHECK(error_of([&] { qks::quantize_per_channel(x.data(), 2, kCh, 1, scales.data(), zps.data(), mul, q.data(), *k); }) ==
              "quantkit: simd::quantize_per_channel: scale[" + str(c) + "]" + tail);
        CHECK(error_of([&] {
                qks::fake_quantize_per_channel(x.data(), 2, kCh, 1, scales.data(), zps.data(), mul_r, y.data(), *k);
              }) == "quantkit: simd::fake_quantize_per_channel: scale[" + str(c) + "]" + tail);
      }
      // the View API and the reference name the tensor and the policy
      qk::QuantParams p;
      p.granularity = qk::Granularity::per_channel(1);
      p.scale = scales;
      p.zero_point = zps;
      const qk::Dims shape{2, static_cast<std::int64_t>(kCh)};
      const qk::View<const float> xv(x.data(), shape, "act");
      const qk::View<std::int8_t> qv(q.data(), shape);
      const std::string policy = "quantkit: tensor 'act': scale[" + str(c) + "] is " + str(bad) +
                                 ", whose float reciprocal is inf; MultiplyByReciprocal needs a scale >= " + str(min_s) +
                                 " (DivideByScale takes any finite scale > 0)";
      CHECK(error_of([&] { qks::quantize(xv, p, qv, qk::RoundHalfEven{}, qk::ScaleApplicationKind::multiply_by_reciprocal); }) ==
            policy);
      CHECK(error_of([&] { qk::ref::quantize(xv, p, qv, qk::RoundHalfEven{}, qk::ScaleApplicationKind::multiply_by_reciprocal); }) ==
            policy);
      CHECK(error_of([&] { qk::ref::fake_quantize(xv, p, qk::View<float>(y.data(), shape), qk::RoundHalfEven{},
                                                  qk::ScaleApplicationKind::multiply_by_reciprocal); }) == policy);
      // dividing takes the same scales
      CHECK(error_of([&] { qks::quantize(xv, p, qv); }) == "");
      CHECK(error_of([&] { qks::quantize_per_channel(x.data(), 2, kCh, 1, scales.data(), zps.data(), q.data()); }) == "");
    }
    CHECK(all_sentinel(y, kSentinelF));
  }
  // the smallest scale taken: the reference's values on every target (x = 0 -> z, the rest
  // saturate), per tensor and per channel
  const std::vector<float> scales(kCh, min_s);
  qk::QuantParams p;
  p.scale = {min_s};
  p.zero_point = {3};
  const qk::Dims shape{static_cast<std::int64_t>(x.size())};
  std::vector<std::int8_t> want(x.size());
  qk::ref::quantize(qk::View<const float>(x.data(), shape), p, qk::View<std::int8_t>(want.data(), shape), qk::RoundHalfEven{},
                    qk::ScaleApplicationKind::multiply_by_reciprocal);
  CHECK(want[2] == 3);  // x = 0
  CHECK(want[0] == -128);
  CHECK(want[6] == 127);
  for (const qks::Kernels* k : qks::available_kernels()) {
    CAPTURE(k->name);
    std::vector<std::int8_t> got(x.size(), 77), got_pc(x.size(), 77);
    qks::quantize(x.data(), x.size(), min_s, 3, mul, got.data(), *k);
    qks::quantize_per_channel(x.data(), 2, kCh, 1, scales.data(), zps.data(), mul, got_pc.data(), *k);
    QK_CHECK_SAME(got, want, x);
    QK_CHECK_SAME(got_pc, want, x);
  }
}

// ------------------------------------------------------------------ 3. zero points

TEST_CASE_TEMPLATE("simd raw: quantize zero points at the type's edges equal the reference, one past throws", Q,
                   std::int8_t, std::uint8_t, std::int16_t, std::uint16_t) {
  const qk::IntRange full = simd_test::range_of<Q>();
  for (std::int32_t zp : {full.qmin, full.qmin + 1, full.qmax - 1, full.qmax}) {
    CAPTURE(zp);
    check_raw_quantize_equals_ref<Q>(full, zp, false);
  }
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const float scales[3] = {0.1f, 0.2f, 0.3f};
  const std::string in = "; expected a value in [" + str(full.qmin) + ", " + str(full.qmax) + "] (the quantization range)";
  for (std::int32_t zp : {full.qmin - 1, full.qmax + 1, kI32Min, kI32Max}) {
    CAPTURE(zp);
    std::vector<Q> q(6, Q{42});
    CHECK(error_of([&] { qks::quantize(x, 6, 0.1f, zp, q.data()); }) ==
          "quantkit: simd::quantize: zero_point is " + str(zp) + in);
    const std::int32_t zps[3] = {0 + full.qmin, full.qmax, zp};
    CHECK(error_of([&] { qks::quantize_per_channel(x, 2, 3, 1, scales, zps, q.data()); }) ==
          "quantkit: simd::quantize_per_channel: zero_point[2] is " + str(zp) + in);
    CHECK(error_of([&] { qks::quantize_per_channel(x, 3, 2, 0, scales, zps, q.data()); }) ==
          "quantkit: simd::quantize_per_channel: zero_point[2] is " + str(zp) + in);
    CHECK(all_sentinel(q, Q{42}));
  }
}

TEST_CASE("simd raw: int32 quantize and fake_quantize zero points at the range's edges (+-2^24)") {
  const std::int32_t e = 1 << 24;
  // the widest range the kernels cover, and a narrow one
  for (qk::IntRange r : {qk::IntRange{-e, e}, qk::IntRange{-e, 0}, qk::IntRange{0, e}, qk::IntRange{-128, 127}}) {
    CAPTURE(r.qmin);
    CAPTURE(r.qmax);
    for (std::int32_t zp : {r.qmin, r.qmin + 1, 0, r.qmax - 1, r.qmax}) {
      CAPTURE(zp);
      check_raw_quantize_equals_ref<std::int32_t>(r, zp, true);
      check_raw_quantize_equals_ref<float>(r, zp, true);
    }
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const float scales[3] = {0.1f, 0.2f, 0.3f};
    const std::string in = "; expected a value in [" + str(r.qmin) + ", " + str(r.qmax) + "] (the quantization range)";
    const auto o = qks::QuantizeOptions{}.with_range(r);
    for (std::int32_t zp : {r.qmin - 1, r.qmax + 1}) {
      CAPTURE(zp);
      std::vector<std::int32_t> q(6, 42);
      std::vector<float> y(6, kSentinelF);
      const std::int32_t zps[3] = {r.qmin, zp, r.qmax};
      CHECK(error_of([&] { qks::quantize(x, 6, 0.1f, zp, o, q.data()); }) ==
            "quantkit: simd::quantize: zero_point is " + str(zp) + in);
      CHECK(error_of([&] { qks::fake_quantize(x, 6, 0.1f, zp, o, y.data()); }) ==
            "quantkit: simd::fake_quantize: zero_point is " + str(zp) + in);
      CHECK(error_of([&] { qks::quantize_per_channel(x, 2, 3, 1, scales, zps, o, q.data()); }) ==
            "quantkit: simd::quantize_per_channel: zero_point[1] is " + str(zp) + in);
      CHECK(error_of([&] { qks::fake_quantize_per_channel(x, 3, 2, 0, scales, zps, o, y.data()); }) ==
            "quantkit: simd::fake_quantize_per_channel: zero_point[1] is " + str(zp) + in);
      CHECK(all_sentinel(q, std::int32_t{42}));
      CHECK(all_sentinel(y, kSentinelF));
    }
  }
}

TEST_CASE_TEMPLATE("simd raw: dequantize zero points at the type's edges equal the reference, one past throws", Q,
                   std::int8_t, std::uint8_t, std::int16_t, std::uint16_t) {
  const std::int32_t lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  for (std::int32_t zp : {lo, lo + 1, hi - 1, hi}) {
    CAPTURE(zp);
    check_raw_dequantize_equals_ref<Q>(0.0173f, zp);
  }
  const Q q[6] = {1, 2, 3, 4, 5, 6};
  const float scales[3] = {0.1f, 0.2f, 0.3f};
  const std::string in = "; expected a value in [" + str(lo) + ", " + str(hi) + "] (the input type's range)";
  // one past the type; far past (q - z would leave int32 in the kernels' subtraction)
  for (std::int32_t zp : {lo - 1, hi + 1, kI32Min, kI32Max, 300, -300}) {
    if (zp >= lo && zp <= hi) continue;  // 300: inside int16/uint16
    CAPTURE(zp);
    std::vector<float> y(6, kSentinelF);
    CHECK(error_of([&] { qks::dequantize(q, 6, 0.1f, zp, y.data()); }) ==
          "quantkit: simd::dequantize: zero_point is " + str(zp) + in);
    const std::int32_t zps[3] = {lo, hi, zp};
    CHECK(error_of([&] { qks::dequantize_per_channel(q, 2, 3, 1, scales, zps, y.data()); }) ==
          "quantkit: simd::dequantize_per_channel: zero_point[2] is " + str(zp) + in);
    CHECK(error_of([&] { qks::dequantize_per_channel(q, 3, 2, 0, scales, zps, y.data()); }) ==
          "quantkit: simd::dequantize_per_channel: zero_point[2] is " + str(zp) + in);
    CHECK(all_sentinel(y, kSentinelF));
  }
}

TEST_CASE("simd raw: int32 dequantize takes every int32 zero point, exactly (q - z in int64)") {
  for (std::int32_t zp : {kI32Min, kI32Min + 1, -1, 0, 1, kI32Max - 1, kI32Max}) {
    CAPTURE(zp);
    check_raw_dequantize_equals_ref<std::int32_t>(1e-9f, zp);
  }
  // e.g. q = INT32_MAX, z = INT32_MIN: q - z = 2^32 - 1, not wrapped to -1
  const std::int32_t q[2] = {kI32Max, kI32Min};
  float y[2] = {0, 0};
  qks::dequantize(q, 2, 1.0f, kI32Min, y);
  CHECK(y[0] == 4294967296.0f);
  CHECK(y[1] == 0.0f);
}

// ------------------------------------------------------------------ 4. requantize shifts

namespace {

template <class Scheme>
void check_requant_shift_edges(int lo, int hi) {
  using P = qk::RequantParams<Scheme>;
  using C = typename Scheme::Constants;
  const std::vector<std::int32_t> acc = {kI32Min, -70000, -3, -1, 0, 1, 2, 3, 70000, 123456789, kI32Max, 5};
  const std::size_t n = acc.size();
  const qk::Dims shape{3, 4};
  const std::int32_t m = 1518500250;  // ~ 2^30.5
  // accepted: the edges, per tensor and per channel; equal to the reference
  for (int shift : {lo, lo + 1, -31, 0, 30, hi - 1, hi}) {
    CAPTURE(shift);
    P p;
    p.constants = std::vector<C>{C{m, shift}};  // (not assign(init_list): GCC 12 -O3 warns -Wnonnull falsely)
    p.output_zero_point = 3;
    std::vector<std::int8_t> want(n), got(n);
    qk::ref::requantize(qk::View<const std::int32_t>(acc.data(), shape), p, qk::View<std::int8_t>(want.data(), shape));
    for (const qks::Kernels* k : qks::available_kernels()) {
      const std::string target = k->name;
      CAPTURE(target);
      std::fill(got.begin(), got.end(), std::int8_t{0});
      qks::requantize(acc.data(), n, p, got.data(), *k);
      CHECK(got == want);
    }
    P pc = p;
    pc.constants = std::vector<C>{C{m, 0}, C{m, -5}, C{m, shift}, C{m, 2}};
    pc.channel_axis = 1;
    qk::ref::requantize(qk::View<const std::int32_t>(acc.data(), shape), pc, qk::View<std::int8_t>(want.data(), shape));
    for (const qks::Kernels* k : qks::available_kernels()) {
      const std::string target = k->name;
      CAPTURE(target);
      std::fill(got.begin(), got.end(), std::int8_t{0});
      qks::requantize(acc.data(), n, pc, got.data(), *k);
      CHECK(got == want);
    }
  }
  // rejected before any shift is negated: one past the edges, INT_MIN and INT_MAX
  const std::string expected = "; expected a shift in [" + str(lo) + ", " + str(hi) + "] (" +
                               qk::to_string(Scheme::scheme) + ")";
  for (int shift : {lo - 1, hi + 1, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()}) {
    CAPTURE(shift);
    P p;
    p.constants = std::vector<C>{C{m, shift}};  // (not assign(init_list): GCC 12 -O3 warns -Wnonnull falsely)
    std::vector<std::int8_t> out(n, std::int8_t{42});
    CHECK(error_of([&] { qks::requantize(acc.data(), n, p, out.data()); }) ==
          "quantkit: simd::requantize: constants[0].shift is " + str(shift) + expected);
    CHECK(error_of([&] {
            qks::requantize(qk::View<const std::int32_t>(acc.data(), shape), p, qk::View<std::int8_t>(out.data(), shape),
                            "conv7");
          }) == "quantkit: simd::requantize: layer 'conv7': constants[0].shift is " + str(shift) + expected);
    P pc = p;
    pc.constants = std::vector<C>{C{m, 0}, C{m, -5}, C{m, shift}, C{m, 2}};
    pc.bias = {1, 2, 3, 4};
    CHECK(error_of([&] { qks::requantize(acc.data(), n, pc, out.data()); }) ==
          "quantkit: simd::requantize: constants[2].shift is " + str(shift) + expected);
    // also where the call would otherwise run the reference (a clamp wider than int8)
    P wide = pc;
    wide.clamp_min = -1000;
    CHECK(error_of([&] { qks::requantize(acc.data(), n, wide, out.data()); }) ==
          "quantkit: simd::requantize: constants[2].shift is " + str(shift) + expected);
    // before the layout's and the counts' errors too, as the reference checks the shifts first
    // (fixed point per channel checks them in its conversion pass), on every target
    P bad_axis = pc;
    bad_axis.channel_axis = 5;
    P bad_bias = pc;
    bad_bias.bias = {1, 2, 3};
    for (const qks::Kernels* k : qks::available_kernels()) {
      const std::string target = k->name;
      CAPTURE(target);
      CHECK(error_of([&] { qks::requantize(acc.data(), n, pc, out.data(), *k); }) ==
            "quantkit: simd::requantize: constants[2].shift is " + str(shift) + expected);
      CHECK(error_of([&] {
              qks::requantize(qk::View<const std::int32_t>(acc.data(), shape), bad_axis,
                              qk::View<std::int8_t>(out.data(), shape), "conv7", k);
            }) == "quantkit: simd::requantize: layer 'conv7': constants[2].shift is " + str(shift) + expected);
      CHECK(error_of([&] { qks::requantize(acc.data(), n, bad_bias, out.data(), *k); }) ==
            "quantkit: simd::requantize: constants[2].shift is " + str(shift) + expected);
    }
    CHECK(all_sentinel(out, std::int8_t{42}));
  }
}

}  // namespace

TEST_CASE("simd raw: fixed-point requantize rejects shifts outside [-62, 32], INT_MIN and INT_MAX included") {
  check_requant_shift_edges<qk::FixedPointDoubleRounding>(-62, 32);
}

TEST_CASE("simd raw: single-rounding fixed-point requantize rejects shifts outside [-32, 30]") {
  check_requant_shift_edges<qk::FixedPointSingleRounding>(-32, 30);
}

// ------------------------------------------------------------------ 5. fixed-point clamp, bias 0

TEST_CASE_TEMPLATE("simd raw: per-tensor fixed-point requantize clamps as the reference with bias 0 and not", O,
                   std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t) {
  std::mt19937 rng(99);
  std::vector<std::int32_t> acc(1037);
  for (std::size_t i = 0; i < acc.size(); ++i) {
    switch (i % 7) {
      case 0: acc[i] = kI32Min; break;
      case 1: acc[i] = kI32Max; break;
      case 2: acc[i] = static_cast<std::int32_t>(rng() % 2001) - 1000; break;
      default: acc[i] = static_cast<std::int32_t>(rng()); break;
    }
  }
  const std::size_t n = acc.size();
  const qk::IntRange full = simd_test::range_of<O>();
  const std::int32_t mid = static_cast<std::int32_t>((std::int64_t{full.qmin} + full.qmax) / 2);
  // (zero point, clamp): ReLU [zp, max], ReLU6-like [zp, zp + 50], a clip [zp - 20, zp + 20], full
  for (double mult : {0.0123, 0.5, 0.999, 3.7, 1000.0}) {
    const auto c = qk::FixedPointDoubleRounding::make(mult);
    for (std::int32_t zp : {full.qmin, mid, 0}) {
      if (zp < full.qmin || zp > full.qmax) continue;
      const std::int32_t lo6 = zp, hi6 = static_cast<std::int32_t>(std::min<std::int64_t>(std::int64_t{zp} + 50, full.qmax));
      const std::int32_t clo = static_cast<std::int32_t>(std::max<std::int64_t>(std::int64_t{zp} - 20, full.qmin));
      const std::int32_t chi = static_cast<std::int32_t>(std::min<std::int64_t>(std::int64_t{zp} + 20, full.qmax));
      const std::pair<std::int32_t, std::int32_t> clamps[] = {{zp, full.qmax}, {lo6, hi6}, {clo, chi},
                                                              {full.qmin, full.qmax}};
      for (const auto& cl : clamps) {
        for (std::int32_t bias : {0, 1, -1, 1000, -1000, kI32Max, kI32Min}) {
          CAPTURE(mult);
          CAPTURE(zp);
          CAPTURE(cl.first);
          CAPTURE(cl.second);
          CAPTURE(bias);
          qk::RequantParams<qk::FixedPointDoubleRounding> p;
          p.constants = {c};
          if (bias != 0 || (zp & 1)) p.bias = {bias};  // bias 0 both given and absent
          p.output_zero_point = zp;
          p.clamp_min = cl.first;
          p.clamp_max = cl.second;
          std::vector<O> want(n), got(n);
          const qk::Dims shape{static_cast<std::int64_t>(n)};
          qk::ref::requantize(qk::View<const std::int32_t>(acc.data(), shape), p, qk::View<O>(want.data(), shape));
          for (const qks::Kernels* k : qks::available_kernels()) {
            const std::string target = k->name;
            CAPTURE(target);
            for (bool stream : {false, true}) {  // ordinary and non-temporal stores
              CAPTURE(stream);
              ScopedBytes threshold(qks::detail::stream_threshold_storage(), stream ? 1 : std::size_t{1} << 40);
              std::fill(got.begin(), got.end(), O{0});
              qks::requantize(acc.data(), n, p, got.data(), *k);
              CHECK(simd_test::first_difference(got, want) == -1);
            }
          }
        }
      }
    }
  }
}

#if defined(__linux__)
// Streaming calls prefetch their input ahead of the loads (AVX2 and SSE targets), past its end
// near the end of a call: a prefetch does not fault, so an input that ends where an unmapped
// page begins must give the reference's results for every prefetch distance, 0 (off) included.
// A load in place of the prefetch would crash here.
TEST_CASE("simd raw: streaming calls whose input ends at an unmapped page prefetch past it and equal the reference") {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t data_pages = 8;  // 8192 floats or int32 with 4 KiB pages
  void* base = mmap(nullptr, (data_pages + 1) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(base != MAP_FAILED);
  char* const guard = static_cast<char*>(base) + data_pages * page;
  REQUIRE(mprotect(guard, page, PROT_NONE) == 0);
  const std::size_t n = data_pages * page / sizeof(float) - 3;  // ends exactly at the guard page
  float* const x = reinterpret_cast<float*>(guard) - n;
  const std::vector<float> data = simd_test::quantize_inputs(n, 0.05f, 7);
  std::copy(data.begin(), data.end(), x);
  const qk::Dims shape{static_cast<std::int64_t>(n)};
  const qk::View<const float> xv(x, shape);
  qk::QuantParams p;
  p.scale = {0.05f};
  p.zero_point = {3};
  p.range = simd_test::range_of<std::int8_t>();
  qk::QuantParams p16 = p;
  p16.range = simd_test::range_of<std::int16_t>();
  std::vector<std::int8_t> want(n), got(n);
  std::vector<std::int16_t> want16(n), got16(n);
  std::vector<float> fwant(n), fgot(n);
  qk::ref::quantize(xv, p, qk::View<std::int8_t>(want.data(), shape), qk::RoundHalfEven{});
  qk::ref::quantize(xv, p16, qk::View<std::int16_t>(want16.data(), shape), qk::RoundHalfEven{});
  qk::ref::fake_quantize(xv, p, qk::View<float>(fwant.data(), shape), qk::RoundHalfEven{});
  // int32 accumulators ending at the same page
  std::int32_t* const acc = reinterpret_cast<std::int32_t*>(guard) - n;
  qk::RequantParams<qk::FloatMultiplier<>> rp;
  rp.constants = {qk::FloatMultiplier<>::make(0.0123)};
  rp.output_zero_point = -5;
  rp.clamp_min = -128;
  rp.clamp_max = 127;
  std::vector<std::int32_t> acc_copy(n);
  for (std::size_t i = 0; i < n; ++i) acc_copy[i] = static_cast<std::int32_t>(i * 2654435761u) >> 12;
  std::vector<std::int8_t> rwant(n), rgot(n);
  qk::ref::requantize(qk::View<const std::int32_t>(acc_copy.data(), shape), rp, qk::View<std::int8_t>(rwant.data(), shape));
  // Short rows (under 1 KiB of output): per-group blocks of 32 back to back, which prefetch
  // linearly, and per-channel rows of 32 values 40 apart (a strided view ending at the guard
  // page), which prefetch whole rows ahead. Outputs a vector-aligned distance into a 64-byte
  // aligned buffer (non-temporal stores) and one element past it (ordinary stores).
  qk::QuantParams pg = p;
  pg.granularity = qk::Granularity::per_group(0, 32);
  pg.scale.clear();
  pg.zero_point.clear();
  for (std::size_t i = 0; i < (n + 31) / 32; ++i) {
    pg.scale.push_back(0.01f * (1.0f + static_cast<float>(i % 13) / 7.0f));
    pg.zero_point.push_back(static_cast<std::int32_t>(i % 9) - 4);
  }
  std::vector<std::int8_t> gwant(n);
  qk::ref::quantize(xv, pg, qk::View<std::int8_t>(gwant.data(), shape), qk::RoundHalfEven{});
  constexpr std::int64_t kRows = 200, kRowLen = 32, kRowStride = 40;
  const qk::Dims rshape{kRows, kRowLen};
  const float* const xs = reinterpret_cast<const float*>(guard) - ((kRows - 1) * kRowStride + kRowLen);
  const qk::View<const float> xsv(xs, rshape, qk::Dims{kRowStride, 1});
  qk::QuantParams pc = p16;
  pc.granularity = qk::Granularity::per_channel(0);
  pc.scale.clear();
  pc.zero_point.clear();
  for (std::int64_t r = 0; r < kRows; ++r) {
    pc.scale.push_back(0.003f * static_cast<float>(1 + r % 5));
    pc.zero_point.push_back(static_cast<std::int32_t>(r % 7) * 100 - 300);
  }
  constexpr std::size_t kOut = static_cast<std::size_t>(kRows * kRowLen);
  std::vector<std::int16_t> cwant(kOut);
  qk::ref::quantize(xsv, pc, qk::View<std::int16_t>(cwant.data(), rshape), qk::RoundHalfEven{});
  const std::vector<float> strided_data(xs, xs + (kRows - 1) * kRowStride + kRowLen);  // for the report
  std::vector<std::int8_t> gstore(n + 128);
  std::vector<std::int16_t> cstore(kOut + 64);
  const auto aligned64 = [](auto& v) { return v.data() + (64 - reinterpret_cast<std::uintptr_t>(v.data()) % 64) % 64 / sizeof(v[0]); };
  std::int8_t* const gbuf = aligned64(gstore);
  std::int16_t* const cbuf = aligned64(cstore);
  ScopedBytes threshold(qks::detail::stream_threshold_storage(), 1);
  for (std::size_t ahead : {std::size_t{0}, std::size_t{512}, std::size_t{4096}, std::size_t{1} << 20}) {
    CAPTURE(ahead);
    ScopedBytes prefetch(qks::detail::stream_prefetch_storage(), ahead);
    for (const qks::Kernels* k : qks::available_kernels()) {
      const std::string target = k->name;
      CAPTURE(target);
      std::copy(data.begin(), data.end(), x);
      for (const std::size_t offset : {std::size_t{0}, std::size_t{32}, std::size_t{1}}) {
        CAPTURE(offset);
        std::fill(gstore.begin(), gstore.end(), std::int8_t{0});
        qks::quantize(xv, pg, qk::View<std::int8_t>(gbuf + offset, shape), qk::RoundHalfEven{}, qk::ScaleApplicationKind::divide, k);
        QK_CHECK_SAME(std::vector<std::int8_t>(gbuf + offset, gbuf + offset + n), gwant, data);
        std::fill(cstore.begin(), cstore.end(), std::int16_t{0});
        std::int16_t* const c = cbuf + offset / sizeof(std::int16_t) + (offset == 1);
        qks::quantize(xsv, pc, qk::View<std::int16_t>(c, rshape), qk::RoundHalfEven{}, qk::ScaleApplicationKind::divide, k);
        QK_CHECK_SAME(std::vector<std::int16_t>(c, c + kOut), cwant, strided_data);
      }
      std::fill(got.begin(), got.end(), std::int8_t{0});
      qks::quantize(xv, p, qk::View<std::int8_t>(got.data(), shape), qk::RoundHalfEven{}, qk::ScaleApplicationKind::divide, k);
      QK_CHECK_SAME(got, want, data);
      std::fill(got16.begin(), got16.end(), std::int16_t{0});
      qks::quantize(xv, p16, qk::View<std::int16_t>(got16.data(), shape), qk::RoundHalfEven{}, qk::ScaleApplicationKind::divide, k);
      QK_CHECK_SAME(got16, want16, data);
      std::fill(fgot.begin(), fgot.end(), 0.0f);
      qks::fake_quantize(xv, p, qk::View<float>(fgot.data(), shape), qk::RoundHalfEven{}, qk::ScaleApplicationKind::divide, k);
      QK_CHECK_SAME(fgot, fwant, data);
      std::copy(acc_copy.begin(), acc_copy.end(), acc);
      std::fill(rgot.begin(), rgot.end(), std::int8_t{0});
      qks::requantize(qk::View<const std::int32_t>(acc, shape), rp, qk::View<std::int8_t>(rgot.data(), shape), std::string(), k);
      QK_CHECK_SAME(rgot, rwant, acc_copy);
    }
  }
  munmap(base, (data_pages + 1) * page);
}
#endif

// The View dequantize takes any zero point inside the parameters' range, also far outside the
// input type, where the kernels' int32 q - z would wrap: those run the reference.
TEST_CASE_TEMPLATE("simd: View dequantize of narrow types with zero points far outside the type equals the reference",
                   Q, std::int8_t, std::uint8_t, std::int16_t, std::uint16_t) {
  std::vector<Q> q(1037);
  for (std::size_t i = 0; i < q.size(); ++i)
    q[i] = i % 3 == 0 ? std::numeric_limits<Q>::min() : i % 3 == 1 ? std::numeric_limits<Q>::max() : static_cast<Q>(i);
  const qk::Dims shape{static_cast<std::int64_t>(q.size())};
  for (std::int32_t zp : {kI32Min, kI32Min + 1, -70000, 70000, kI32Max - 1, kI32Max}) {
    CAPTURE(zp);
    qk::QuantParams p;
    p.scale = {1.0f};
    p.zero_point = {zp};
    p.range = simd_test::range_of<std::int32_t>();
    std::vector<float> want(q.size()), got(q.size());
    qk::ref::dequantize(qk::View<const Q>(q.data(), shape), p, qk::View<float>(want.data(), shape));
    for (const qks::Kernels* k : qks::available_kernels()) {
      const std::string target = k->name;
      CAPTURE(target);
      std::fill(got.begin(), got.end(), 0.0f);
      qks::dequantize(qk::View<const Q>(q.data(), shape), p, qk::View<float>(got.data(), shape), *k);
      QK_CHECK_SAME(got, want, q);
    }
  }
}

// The View API sends non-finite float multipliers to the reference; a call of the kernel table
// itself (as simd::requantize builds it) takes FloatRows' out-of-line path for those rows.
TEST_CASE("simd: the kernel table's per-channel float requantize equals the reference for non-finite multipliers") {
  constexpr std::int64_t kC = 6, kK = 203;  // rows of several blocks and a tail on every target
  const qk::Dims shape{kC, kK};
  std::vector<std::int32_t> acc(static_cast<std::size_t>(kC * kK));
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::int32_t> wide(-300000, 300000);
  for (std::int32_t& v : acc) v = wide(rng);
  acc[3] = 0;  // 0 * inf is NaN
  acc[static_cast<std::size_t>(kK + 5)] = 0;
  acc[static_cast<std::size_t>(3 * kK + 7)] = 0;
  acc[static_cast<std::size_t>(2 * kK)] = kI32Max;
  acc[static_cast<std::size_t>(2 * kK + 1)] = kI32Min;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  qk::RequantParams<qk::FloatMultiplier<qk::RoundHalfEven>> p;
  // row 5: zeros times inf give NaN (x86's default NaN has the sign bit set)
  for (std::int64_t j = 0; j < kK; j += 3) acc[static_cast<std::size_t>(5 * kK + j)] = 0;
  p.constants = {{0.01f}, {kInf}, {nan}, {-kInf}, {0.003f}, {kInf}};
  p.bias = {5, -3, 0, 7, 1, 0};
  p.output_zero_point = 2;
  p.channel_axis = 0;
  std::vector<std::int8_t> want(acc.size()), got(acc.size());
  qk::ref::requantize(qk::View<const std::int32_t>(acc.data(), shape), p, qk::View<std::int8_t>(want.data(), shape));
  std::vector<float> kf;
  for (const auto& c : p.constants) kf.push_back(c.multiplier);
  qks::RequantizeArgs a;
  qks::detail::make_plan(shape, qk::Dims{kK, 1}, qk::Dims{kK, 1},
                         qk::ParamLayout(shape, qk::Granularity::per_channel(0)), a.plan);
  a.acc = acc.data();
  a.out = got.data();
  a.out_type = qks::ElemType::i8;
  a.scheme = qk::RequantScheme::float_multiplier;
  a.rounding = qk::RoundingMode::half_even;
  a.kf = kf.data();
  a.bias = p.bias.data();
  a.zero_point = p.output_zero_point;
  a.lo = p.clamp_min;
  a.hi = p.clamp_max;
  for (const qks::Kernels* k : qks::available_kernels()) {
    const std::string target = k->name;
    CAPTURE(target);
    std::fill(got.begin(), got.end(), std::int8_t{42});
    k->requantize(a);
    const long at = simd_test::first_difference(got, want);
    CHECK_MESSAGE(at < 0, "element " << at << " (row " << at / kK << "): got " << (at < 0 ? 0 : int(got[static_cast<std::size_t>(at)]))
                                     << ", want " << (at < 0 ? 0 : int(want[static_cast<std::size_t>(at)])) << ", acc "
                                     << (at < 0 ? 0 : acc[static_cast<std::size_t>(at)]));
  }
  // the rows with a non-finite multiplier saturate as the reference's apply() documents
  CHECK(want[static_cast<std::size_t>(kK + 1)] == (acc[static_cast<std::size_t>(kK + 1)] - 3 >= 0 ? 127 : -128));
  CHECK(want[static_cast<std::size_t>(2 * kK + 9)] == 127);  // NaN multiplier: INT32_MAX
  CHECK(want[static_cast<std::size_t>(5 * kK + 3)] == 127);  // 0 * inf: NaN, INT32_MAX
}

namespace {
// One per-tensor view pair: shape, input and output strides, and whether make_plan gives the
// one-row plan (both views dense in row-major order; strides of extent-1 dimensions free).
struct ViewCase {
  qk::Dims shape, in_strides, out_strides;
  bool one_row;
};

// Elements a view of `shape` with `strides` spans (the largest offset + 1; 0 when empty).
std::size_t span_of(const qk::Dims& shape, const qk::Dims& strides) {
  if (shape.product() == 0) return 0;
  std::int64_t last = 0;
  for (int d = 0; d < shape.rank; ++d) last += (shape[d] - 1) * strides[d];
  return static_cast<std::size_t>(last + 1);
}
}  // namespace

// make_plan takes dense per-tensor views to one row without its general merge, and
// RunPlan sends that row straight to the run function: the views it takes and the ones it
// must not (a padded or transposed view, a strided output) give the reference's values on
// every target, and nothing outside the output view is written.
TEST_CASE("simd: per-tensor views, dense (one-row plan) or not, equal the reference on every target") {
  const std::vector<ViewCase> cases = {
      {qk::Dims{1, 37}, qk::Dims{12345, 1}, qk::Dims{999, 1}, true},                // extent-1 dim, any stride
      {qk::Dims{3, 1, 20}, qk::Dims{20, 20, 1}, qk::Dims{20, 7, 1}, true},          // same, in the middle
      {qk::Dims{2, 3, 17}, qk::Dims{51, 17, 1}, qk::Dims{51, 17, 1}, true},         // dense rank 3
      {qk::Dims{4, 33}, qk::Dims{33, 1}, qk::Dims{40, 1}, false},                   // padded output rows
      {qk::Dims{4, 33}, qk::Dims{36, 1}, qk::Dims{33, 1}, false},                   // padded input rows
      {qk::Dims{5, 8}, qk::Dims{1, 5}, qk::Dims{8, 1}, false},                      // transposed input
      {qk::Dims{70}, qk::Dims{1}, qk::Dims{2}, false},                              // strided output
      {qk::Dims{0, 5}, qk::Dims{7, 3}, qk::Dims{11, 2}, true},                      // empty
  };
  qk::QuantParams p;
  p.scale = {0.37f};
  p.zero_point = {3};
  p.range = simd_test::range_of<std::int8_t>();
  const auto rp = qk::RequantParams<qk::FloatMultiplier<qk::RoundHalfEven>>::make({0.0123}, p.range, -2, "rq");
  const auto fp = qk::RequantParams<qk::FixedPointDoubleRounding>::make({0.0123}, p.range, -2, "rq");
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const ViewCase& vc = cases[c];
    CAPTURE(c);
    qks::Plan plan;
    qks::detail::make_plan(vc.shape, vc.in_strides, vc.out_strides, qk::ParamLayout(vc.shape, qk::Granularity::per_tensor()),
                           plan);
    CHECK((plan.rank == 1 && plan.in_stride[0] == 1 && plan.out_stride[0] == 1) == vc.one_row);
    if (vc.one_row) CHECK(plan.shape[0] == vc.shape.product());
    const std::size_t span = std::max(span_of(vc.shape, vc.in_strides), span_of(vc.shape, vc.out_strides));
    const std::vector<float> x = simd_test::quantize_inputs(span, p.scale[0], static_cast<std::uint32_t>(c + 1));
    const std::vector<std::int32_t> acc = simd_test::accumulators(span, static_cast<std::uint32_t>(c + 7));
    std::vector<std::int8_t> q(span);
    for (std::size_t i = 0; i < span; ++i) q[i] = static_cast<std::int8_t>(acc[i]);
    const qk::View<const float> xv(x.data(), vc.shape, vc.in_strides, "x");
    const qk::View<const std::int8_t> qv(q.data(), vc.shape, vc.in_strides, "q");
    const qk::View<const std::int32_t> av(acc.data(), vc.shape, vc.in_strides, "acc");
    std::vector<std::int8_t> qwant(span, 0x5a), rwant(span, 0x5a), fwant(span, 0x5a);
    std::vector<float> dwant(span, -7.0f);
    qk::ref::quantize(xv, p, qk::View<std::int8_t>(qwant.data(), vc.shape, vc.out_strides));
    qk::ref::dequantize(qv, p, qk::View<float>(dwant.data(), vc.shape, vc.out_strides));
    qk::ref::requantize(av, rp, qk::View<std::int8_t>(rwant.data(), vc.shape, vc.out_strides));
    qk::ref::requantize(av, fp, qk::View<std::int8_t>(fwant.data(), vc.shape, vc.out_strides));
    for (const qks::Kernels* k : qks::available_kernels()) {
      const std::string target = k->name;
      CAPTURE(target);
      std::vector<std::int8_t> qgot(span, 0x5a), rgot(span, 0x5a), fgot(span, 0x5a);
      std::vector<float> dgot(span, -7.0f);
      qks::quantize(xv, p, qk::View<std::int8_t>(qgot.data(), vc.shape, vc.out_strides), qk::RoundHalfEven{},
                    qk::ScaleApplicationKind::divide, k);
      qks::dequantize(qv, p, qk::View<float>(dgot.data(), vc.shape, vc.out_strides), k);
      qks::requantize(av, rp, qk::View<std::int8_t>(rgot.data(), vc.shape, vc.out_strides), "rq", k);
      qks::requantize(av, fp, qk::View<std::int8_t>(fgot.data(), vc.shape, vc.out_strides), "rq", k);
      QK_CHECK_SAME(qgot, qwant, x);
      QK_CHECK_SAME(dgot, dwant, q);
      QK_CHECK_SAME(rgot, rwant, acc);
      QK_CHECK_SAME(fgot, fwant, acc);
    }
  }
}

// The raw requantize runs its accumulators as [n / channels, channels] (channels on the last
// axis) whatever the parameters' channel_axis says; it copies the parameters only when that
// axis must change: every axis gives the reference's values over that shape.
TEST_CASE("simd raw: per-channel requantize reads channels along the last axis for any channel_axis") {
  constexpr std::size_t kChannels = 4, kRows = 37;
  constexpr std::size_t n = kChannels * kRows;
  auto p = qk::RequantParams<qk::FixedPointDoubleRounding>::make({0.01, 0.003, 0.25, 0.0007},
                                                                 simd_test::range_of<std::int8_t>(), 5, "raw");
  p.bias = {100, -40000, 0, 7};
  const std::vector<std::int32_t> acc = simd_test::accumulators(n, 99);
  std::vector<std::int8_t> want(n);
  auto last = p;
  last.channel_axis = -1;
  const qk::Dims shape{static_cast<std::int64_t>(kRows), static_cast<std::int64_t>(kChannels)};
  qk::ref::requantize(qk::View<const std::int32_t>(acc.data(), shape), last, qk::View<std::int8_t>(want.data(), shape));
  for (int axis : {-1, 0, 1, 3}) {
    CAPTURE(axis);
    p.channel_axis = axis;
    for (const qks::Kernels* k : qks::available_kernels()) {
      const std::string target = k->name;
      CAPTURE(target);
      std::vector<std::int8_t> got(n, 0x5a);
      qks::requantize(acc.data(), n, p, got.data(), k);
      QK_CHECK_SAME(got, want, acc);
    }
    CHECK(p.channel_axis == axis);  // the caller's parameters are left as they were
  }
}

namespace {
// Float requantize to bytes: with hi the type's maximum and every multiplier |m| < 1, the AVX-512
// blocks leave the upper clamp to the packs' saturation (|float(x') * m| <= 2^31 - 128 then);
// at |m| >= 1 (float(INT32_MAX) * 1 = 2^31 would convert to INT32_MIN) or below the type's
// maximum they clamp in float. Multipliers on both sides of 1, accumulators at the int32 edges
// and where x' * m crosses 2^31, biases that saturate x + bias either way: the reference's values.
template <class Round, class Out>
void check_float_requantize_near_one(const qks::Kernels& k) {
  const std::vector<float> ms = {0.99999994f, 1.0f, 1.00000012f, 0.5f, -0.99999994f, -1.0f, 2.5f, 1e-3f};
  const std::vector<float> small = {0.99999994f, 0.5f, -0.99999994f, 1e-3f, 0.75f, -0.25f, 0.9f, 0x1p-20f};
  constexpr std::size_t kLen = 3 * 64 + 5;  // whole blocks on every target and a tail
  std::vector<std::int32_t> acc = simd_test::accumulators(kLen * 8, 2024);
  const std::int32_t edges[] = {kI32Max, kI32Min, kI32Max - 1, kI32Min + 1, kI32Max - 127, kI32Max - 128,
                                kI32Min + 128, 2147483520, -2147483520, 1 << 30, -(1 << 30), 0, 1, -1};
  for (std::size_t i = 0; i < acc.size(); i += 3) acc[i] = edges[(i / 3) % (sizeof(edges) / sizeof(edges[0]))];
  const qk::IntRange full = simd_test::range_of<Out>();
  const std::int32_t zps[] = {0, std::is_signed<Out>::value ? -5 : 200};
  const std::int32_t biases[] = {0, 7, -7, kI32Max - 5, kI32Min + 5};
  for (const std::int32_t hi : {full.qmax, full.qmax - 3}) {
    for (const std::int32_t zp : zps) {
      // per tensor: every multiplier, every bias side
      for (const float m : ms) {
        for (const std::int32_t b : biases) {
          qk::RequantParams<qk::FloatMultiplier<Round>> p;
          p.constants = {{m}};
          p.bias = {b};
          p.output_zero_point = zp;
          p.clamp_min = full.qmin;
          p.clamp_max = hi;
          const qk::Dims shape{static_cast<std::int64_t>(kLen)};
          std::vector<Out> want(kLen), got(kLen, Out{42});
          const qk::View<const std::int32_t> av(acc.data(), shape, "acc");
          qk::ref::requantize(av, p, qk::View<Out>(want.data(), shape));
          qks::requantize(av, p, qk::View<Out>(got.data(), shape), "near one", k);
          CAPTURE(m);
          CAPTURE(b);
          CAPTURE(hi);
          CAPTURE(zp);
          QK_CHECK_SAME(got, want, acc);
        }
      }
      // per channel: a call with multipliers >= 1 among its rows, and one with all |m| < 1
      for (const std::vector<float>* set : {&ms, &small}) {
        qk::RequantParams<qk::FloatMultiplier<Round>> p;
        for (const float m : *set) p.constants.push_back({m});
        p.bias = {0, 7, -7, kI32Max - 5, kI32Min + 5, 3, 0, -100000};
        p.channel_axis = 0;
        p.output_zero_point = zp;
        p.clamp_min = full.qmin;
        p.clamp_max = hi;
        const qk::Dims shape{8, static_cast<std::int64_t>(kLen)};
        std::vector<Out> want(acc.size()), got(acc.size(), Out{42});
        const qk::View<const std::int32_t> av(acc.data(), shape, "acc");
        qk::ref::requantize(av, p, qk::View<Out>(want.data(), shape));
        qks::requantize(av, p, qk::View<Out>(got.data(), shape), "near one", k);
        CAPTURE(set == &small);
        CAPTURE(hi);
        CAPTURE(zp);
        QK_CHECK_SAME(got, want, acc);
      }
    }
  }
}
}  // namespace

TEST_CASE("simd: float requantize to bytes with multipliers near 1 and accumulators at the int32 edges") {
  for (const qks::Kernels* k : qks::available_kernels()) {
    const std::string target = k->name;
    CAPTURE(target);
    check_float_requantize_near_one<qk::RoundHalfEven, std::int8_t>(*k);
    check_float_requantize_near_one<qk::RoundHalfEven, std::uint8_t>(*k);
    check_float_requantize_near_one<qk::RoundHalfAway, std::int8_t>(*k);
    check_float_requantize_near_one<qk::RoundFloor, std::uint8_t>(*k);
  }
}

// The runtime-dispatch implementation is found through symbols in the namespace of
// QUANTKIT_SIMD_ABI_VERSION (quantkit/simd/abi.hpp), so that one compiled from headers of another
// layout is not called. That only protects while the version changes with the layout: these are
// version 2's sizes (LP64; 2 added RequantizeArgs::rows_in_order, in padding). When this
// fails, a struct of abi.hpp or gemm_abi.hpp changed: bump
// QUANTKIT_SIMD_ABI_VERSION and write the new sizes and version here.
TEST_CASE("simd ABI: the kernel table's and its argument structs' layout is QUANTKIT_SIMD_ABI_VERSION's") {
  static_assert(QUANTKIT_SIMD_ABI_VERSION == 2, "ABI version changed: update the sizes below with it");
  // the declarations the front end calls are the versioned ones
  const quantkit::simd::Kernels* (*versioned)() noexcept = &qks::detail::abi_v2::dynamic_kernels;
  const bool same_function = versioned == &qks::detail::dynamic_kernels;  // (doctest prints no function pointers)
  CHECK(same_function);
  CHECK(versioned() == &qks::active_kernels());
  CHECK(qks::dynamic_dispatch());
  if (sizeof(void*) != 8 || sizeof(long) != 8) return;  // the sizes are LP64's
  const std::pair<const char*, std::size_t> sizes[] = {
      {"Plan", sizeof(qks::Plan)},
      {"UniformSource", sizeof(qks::UniformSource)},
      {"QuantizeArgs", sizeof(qks::QuantizeArgs)},
      {"QuantizeParamsArgs", sizeof(qks::QuantizeParamsArgs)},
      {"DequantizeArgs", sizeof(qks::DequantizeArgs)},
      {"RequantizeArgs", sizeof(qks::RequantizeArgs)},
      {"RequantConstantsArgs", sizeof(qks::RequantConstantsArgs)},
      {"MinMaxResult", sizeof(qks::MinMaxResult)},
      {"AbsMaxResult", sizeof(qks::AbsMaxResult)},
      {"MinMaxParamsArgs", sizeof(qks::MinMaxParamsArgs)},
      {"HistogramArgs", sizeof(qks::HistogramArgs)},
      {"HistogramResult", sizeof(qks::HistogramResult)},
      {"GridHistogramArgs", sizeof(qks::GridHistogramArgs)},
      {"GemmF32Args", sizeof(qks::GemmF32Args)},
      {"Kernels", sizeof(qks::Kernels)},
      {"GemmPackArgs", sizeof(qks::GemmPackArgs)},
      {"GemmArgs", sizeof(qks::GemmArgs)},
      {"PairSumArgs", sizeof(qks::PairSumArgs)},
      {"PairSumCounts", sizeof(qks::PairSumCounts)},
      {"GemmKernels", sizeof(qks::GemmKernels)},
  };
  const std::size_t version2[] = {344, 16, 448, 48, 392, 472, 80, 24, 24, 368, 56, 24, 48, 96, 176, 48, 80, 80, 16, 64};
  static_assert(sizeof(sizes) / sizeof(sizes[0]) == sizeof(version2) / sizeof(version2[0]), "one size per struct");
  for (std::size_t i = 0; i < sizeof(version2) / sizeof(version2[0]); ++i) {
    INFO("struct " << sizes[i].first << ": bump QUANTKIT_SIMD_ABI_VERSION if its layout changed");
    CHECK(sizes[i].second == version2[i]);
  }
}
