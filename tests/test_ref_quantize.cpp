// Scalar reference quantize / dequantize / fake-quantize / pack on every granularity.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <quantkit/quantkit.hpp>

namespace qk = quantkit;

namespace {
qk::QuantParams per_tensor(float scale, std::int32_t zp, qk::IntRange r) {
  qk::QuantParams p;
  p.scale = {scale};
  p.zero_point = {zp};
  p.range = r;
  return p;
}
}  // namespace

TEST_CASE("quantize_value: divide vs multiply-by-reciprocal, ties, saturation, NaN/Inf") {
  const qk::IntRange s8{-128, 127};
  const auto div = qk::ScaleApplicationKind::divide;
  const auto mul = qk::ScaleApplicationKind::multiply_by_reciprocal;
  qk::RoundHalfEven even;
  // x / 0.5 = 2.5 -> 2 (even); half-away -> 3
  CHECK(qk::ref::quantize_value(1.25f, 0.5f, div, 0, s8, even) == 2);
  CHECK(qk::ref::quantize_value(1.25f, 0.5f, div, 0, s8, qk::RoundHalfAway{}) == 3);
  CHECK(qk::ref::quantize_value(1.25f, 0.5f, div, 10, s8, even) == 12);
  // saturation both ends, infinities, NaN -> zero point
  CHECK(qk::ref::quantize_value(1e6f, 0.5f, div, 3, s8, even) == 127);
  CHECK(qk::ref::quantize_value(-1e30f, 0.5f, div, 3, s8, even) == -128);
  CHECK(qk::ref::quantize_value(std::numeric_limits<float>::infinity(), 0.5f, div, 3, s8, even) == 127);
  CHECK(qk::ref::quantize_value(-std::numeric_limits<float>::infinity(), 0.5f, div, 3, s8, even) == -128);
  CHECK(qk::ref::quantize_value(std::numeric_limits<float>::quiet_NaN(), 0.5f, div, 3, s8, even) == 3);
  // x / s and x * (1/s) differ: s = 0.001f, x = -0.1815f: x / s is exactly -181.5 (-> -182,
  // even), x * (1 / s) is -181.499985 (-> -181). Found by search; the reason the policy exists.
  const float s = 0.001f, x = -0.1815f;
  CHECK(x / s == -181.5f);
  CHECK(x * (1.0f / s) > -181.5f);
  const qk::IntRange s16{-32768, 32767};
  CHECK(qk::ref::quantize_value(x, qk::scale_factor(div, s), div, 0, s16, even) == -182);
  CHECK(qk::ref::quantize_value(x, qk::scale_factor(mul, s), mul, 0, s16, even) == -181);
}

TEST_CASE("per-tensor quantize, dequantize and fake-quantize round trip") {
  std::vector<float> x = {-1.0f, -0.5f, 0.0f, 0.25f, 0.74f, 1.0f, 3.0f, -3.0f};
  auto p = per_tensor(1.0f / 128.0f, 0, {-128, 127});
  std::vector<std::int8_t> q(x.size());
  qk::ref::quantize(qk::as_tensor(std::as_const(x)), p, qk::as_tensor(q));
  CHECK(q == std::vector<std::int8_t>{-128, -64, 0, 32, 95, 127, 127, -128});
  std::vector<float> back(x.size());
  qk::ref::dequantize(qk::as_tensor(std::as_const(q)), p, qk::as_tensor(back));
  CHECK(back == std::vector<float>{-1.0f, -0.5f, 0.0f, 0.25f, 95.0f / 128, 127.0f / 128, 127.0f / 128, -1.0f});
  std::vector<float> fq(x.size());
  qk::ref::fake_quantize(qk::as_tensor(std::as_const(x)), p, qk::as_tensor(fq));
  CHECK(fq == back);
}

TEST_CASE("per-channel quantize on every axis of a 3-D tensor, contiguous and strided") {
  // shape [2, 3, 4]; value = linear index - 10
  const qk::Dims shape{2, 3, 4};
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = static_cast<float>(i - 10);
  for (int axis = -3; axis < 3; ++axis) {
    CAPTURE(axis);
    const int a = axis < 0 ? axis + 3 : axis;
    qk::QuantParams p;
    p.granularity = qk::Granularity::per_channel(axis);
    p.range = {-128, 127};
    p.scale.clear();
    p.zero_point.clear();
    for (int c = 0; c < shape[a]; ++c) {
      p.scale.push_back(static_cast<float>(c + 1));  // channel c divides by c + 1
      p.zero_point.push_back(c);
    }
    std::vector<std::int8_t> q(24);
    qk::ref::quantize(qk::with_shape(std::as_const(x), shape), p, qk::with_shape(q, shape));
    for (int i = 0; i < 24; ++i) {
      const int idx[3] = {i / 12, (i / 4) % 3, i % 4};
      const int c = idx[a];
      const float t = x[i] / static_cast<float>(c + 1);
      CHECK(q[i] == static_cast<std::int8_t>(qk::RoundHalfEven{}(t) + static_cast<float>(c)));
    }
    // The same through a transposed (strided) view of a column-major copy gives the same codes.
    std::vector<float> xt(24);
    for (int i = 0; i < 24; ++i) xt[(i % 4) * 6 + ((i / 4) % 3) * 2 + i / 12] = x[i];
    const qk::View<const float> strided(xt.data(), shape, qk::Dims{1, 2, 6});
    std::vector<std::int8_t> q2(24);
    qk::ref::quantize(strided, p, qk::with_shape(q2, shape));
    CHECK(q2 == q);
  }
}

TEST_CASE("per-group (blocked) quantize: ONNX block layout, short last block") {
  // shape [2, 5], blocks of 2 along axis 1 -> param shape [2, 3]
  const qk::Dims shape{2, 5};
  std::vector<float> x = {1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
  qk::QuantParams p;
  p.granularity = qk::Granularity::per_group(1, 2);
  p.range = {-8, 7};
  p.scale = {1, 2, 4, 1, 2, 4};
  p.zero_point = {0, 0, 0, 0, 0, 0};
  std::vector<std::int8_t> q(10);
  qk::ref::quantize(qk::with_shape(std::as_const(x), shape), p, qk::with_shape(q, shape));
  // 1/1, 2/1, 3/2=1.5->2, 4/2=2, 5/4=1.25->1 ; -1, -2, -2, -2, -1
  CHECK(q == std::vector<std::int8_t>{1, 2, 2, 2, 1, -1, -2, -2, -2, -1});
  // along axis 0 with block 2 on a [3, 2] tensor: param shape [2, 2]
  std::vector<float> y = {10, 20, 30, 40, 50, 60};
  qk::QuantParams p0;
  p0.granularity = qk::Granularity::per_group(0, 2);
  p0.range = {-128, 127};
  p0.scale = {10, 20, 1, 2};
  p0.zero_point = {0, 0, 0, 0};
  std::vector<std::int8_t> q0(6);
  qk::ref::quantize(qk::with_shape(std::as_const(y), {3, 2}), p0, qk::with_shape(q0, {3, 2}));
  CHECK(q0 == std::vector<std::int8_t>{1, 1, 3, 2, 50, 30});
  // wrong parameter count names the tensor and what was needed
  p0.scale.pop_back();
  p0.zero_point.pop_back();
  CHECK_THROWS_WITH_AS(
      qk::ref::quantize(qk::with_shape(std::as_const(y), {3, 2}, "w"), p0, qk::with_shape(q0, {3, 2})),
      doctest::Contains("tensor 'w': per-group(axis 0, block 2) on shape [3, 2] needs 4 scales/zero points; found 3"),
      qk::Error);
}

TEST_CASE("bad shapes and axes are errors naming the tensor") {
  std::vector<float> x(6, 1.0f);
  std::vector<std::int8_t> q(6);
  auto p = per_tensor(1.0f, 0, {-128, 127});
  CHECK_THROWS_WITH_AS(qk::ref::quantize(qk::with_shape(std::as_const(x), {2, 3}, "act"), p, qk::with_shape(q, {3, 2})),
                       doctest::Contains("tensor 'act': quantize output has shape [3, 2]; expected the input's shape [2, 3]"),
                       qk::Error);
  p.granularity = qk::Granularity::per_channel(2);
  CHECK_THROWS_WITH_AS(qk::ref::quantize(qk::with_shape(std::as_const(x), {2, 3}, "act"), p, qk::with_shape(q, {2, 3})),
                       doctest::Contains("per-channel(axis 2) on shape [2, 3]; expected an axis in [-2, 2)"), qk::Error);
  CHECK_THROWS_WITH_AS(qk::with_shape(x, {4, 2}, "buf"),
                       doctest::Contains("tensor 'buf': shape [4, 2] holds 8 elements; the buffer has 6"), qk::Error);
}

TEST_CASE("packing 4- and 2-bit values: low bits first, odd lengths, sign extension") {
  const std::vector<std::int8_t> v4 = {1, -2, 7, -8, 3};  // odd length
  std::vector<std::uint8_t> packed(qk::packed_size(v4.size(), 4));
  CHECK(packed.size() == 3);
  qk::ref::pack(v4.data(), v4.size(), 4, packed.data(), packed.size());
  CHECK(packed == std::vector<std::uint8_t>{0xE1, 0x87, 0x03});
  std::vector<std::int8_t> back(v4.size());
  qk::ref::unpack(packed.data(), back.size(), 4, true, back.data());
  CHECK(back == v4);
  const std::vector<std::uint8_t> u2 = {0, 1, 2, 3, 3, 2};
  std::vector<std::uint8_t> p2(qk::packed_size(u2.size(), 2));
  qk::ref::pack(u2.data(), u2.size(), 2, p2.data(), p2.size());
  CHECK(p2 == std::vector<std::uint8_t>{0xE4, 0x0B});
  std::vector<std::uint8_t> u2back(u2.size());
  qk::ref::unpack(p2.data(), u2.size(), 2, false, u2back.data());
  CHECK(u2back == u2);
  CHECK_THROWS_WITH_AS(qk::ref::pack(v4.data(), v4.size(), 4, packed.data(), 2, "w4"),
                       doctest::Contains("tensor 'w4': packed output has 2 bytes; expected 3 for 5 values"), qk::Error);
  CHECK_THROWS_AS(qk::ref::pack(v4.data(), v4.size(), 3, packed.data(), 3), qk::Error);
}
