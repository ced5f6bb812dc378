// Quantization parameters from ranges: every convention, symmetry and degenerate case.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <quantkit/quantkit.hpp>

namespace qk = quantkit;
using qk::ConventionKind;
using qk::IntRange;
using qk::SymmetryKind;

namespace {
const IntRange u8{0, 255}, s8{-128, 127}, u4{0, 15}, s16{-32768, 32767};
qk::ScaleZeroPoint qp(float lo, float hi, IntRange r, SymmetryKind s, ConventionKind c) {
  return qk::compute_qparams(lo, hi, r, s, c);
}
}  // namespace

TEST_CASE("pytorch convention: affine and symmetric") {
  // affine quint8 on [-1, 3]: scale = 4/255, zp = 0 - round(-1 / scale) = 64 (63.75 -> 64)
  auto a = qp(-1.0f, 3.0f, u8, SymmetryKind::affine, ConventionKind::pytorch);
  CHECK(a.scale == 4.0f / 255.0f);
  CHECK(a.zero_point == 64);
  // symmetric qint8: scale = max|x| / 127.5, zp 0; quint8: zp 128
  auto s = qp(-1.0f, 3.0f, s8, SymmetryKind::symmetric, ConventionKind::pytorch);
  CHECK(s.scale == 3.0f / 127.5f);
  CHECK(s.zero_point == 0);
  CHECK(qp(-1.0f, 3.0f, u8, SymmetryKind::symmetric, ConventionKind::pytorch).zero_point == 128);
  // custom unsigned range: floor midpoint (PyTorch's has_customized_qrange)
  CHECK(qp(-1.0f, 3.0f, u4, SymmetryKind::symmetric, ConventionKind::pytorch).zero_point == 7);
  // restricted: int8 [-127, 127], scale = max|x| / 127
  auto r = qp(-1.0f, 3.0f, s8, SymmetryKind::symmetric_restricted, ConventionKind::pytorch);
  CHECK(r.scale == 3.0f / 127.0f);
  CHECK(r.zero_point == 0);
  // a range that excludes 0 is widened to include it
  auto pos = qp(2.0f, 4.0f, u8, SymmetryKind::affine, ConventionKind::pytorch);
  CHECK(pos.scale == 4.0f / 255.0f);
  CHECK(pos.zero_point == 0);
  auto neg = qp(-4.0f, -2.0f, s8, SymmetryKind::affine, ConventionKind::pytorch);
  CHECK(neg.scale == 4.0f / 255.0f);
  CHECK(neg.zero_point == 127);
}

TEST_CASE("degenerate ranges give finite, documented parameters") {
  const float eps = std::numeric_limits<float>::epsilon();
  // all zeros
  CHECK(qp(0, 0, u8, SymmetryKind::affine, ConventionKind::pytorch) == qk::ScaleZeroPoint{eps, 0});
  CHECK(qp(0, 0, s8, SymmetryKind::symmetric, ConventionKind::pytorch) == qk::ScaleZeroPoint{eps, 0});
  CHECK(qp(0, 0, u8, SymmetryKind::affine, ConventionKind::onnxruntime) == qk::ScaleZeroPoint{1.0f, 0});
  CHECK(qp(0, 0, u8, SymmetryKind::affine, ConventionKind::onnx) == qk::ScaleZeroPoint{1.0f, 0});
  CHECK(qp(0, 0, s8, SymmetryKind::affine, ConventionKind::tflite) == qk::ScaleZeroPoint{1.0f, 0});
  // a constant (single element) c: the range [min(c,0), max(c,0)]
  auto c = qp(5.0f, 5.0f, u8, SymmetryKind::affine, ConventionKind::pytorch);
  CHECK(c.scale == 5.0f / 255.0f);
  CHECK(c.zero_point == 0);
  // tiny ranges are floored at float32 eps (pytorch) or replaced by (1, 0) below FLT_MIN (ORT)
  CHECK(qp(0, 1e-9f, u8, SymmetryKind::affine, ConventionKind::pytorch).scale == eps);
  CHECK(qp(0, 1e-40f, u8, SymmetryKind::affine, ConventionKind::onnxruntime) == qk::ScaleZeroPoint{1.0f, 0});
  // NaN / Inf / inverted ranges are errors naming the tensor
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(qk::compute_qparams(nan, 1.0f, u8, SymmetryKind::affine, ConventionKind::pytorch, "act0"),
                       doctest::Contains("tensor 'act0': found range [nan, 1]"), qk::Error);
  CHECK_THROWS_AS(qk::compute_qparams(0.0f, inf, u8, SymmetryKind::affine, ConventionKind::onnx), qk::Error);
  CHECK_THROWS_WITH_AS(qk::compute_qparams(2.0f, 1.0f, u8, SymmetryKind::affine, ConventionKind::onnx, "x", 3),
                       doctest::Contains("tensor 'x' channel 3"), qk::Error);
  CHECK_THROWS_WITH_AS(qk::compute_qparams(0.0f, 1.0f, IntRange{5, 9}, SymmetryKind::affine, ConventionKind::onnx),
                       doctest::Contains("expected qmin <= 0 <= qmax"), qk::Error);
}

TEST_CASE("onnx (DynamicQuantizeLinear) convention matches the conformance values") {
  // test_dynamicquantizelinear: X = [0, 2, -3, -2.5, 1.34, 0.5] -> scale 0.0196078438, zp 153
  auto a = qp(-3.0f, 2.0f, u8, SymmetryKind::affine, ConventionKind::onnx);
  CHECK(a.scale == 5.0f / 255.0f);
  CHECK(a.scale == doctest::Approx(0.0196078438));
  CHECK(a.zero_point == 153);
  // max_adjusted: all negative, min -4 -> scale 4/255, zp 255
  auto b = qp(-4.0f, -1.0f, u8, SymmetryKind::affine, ConventionKind::onnx);
  CHECK(b.scale == 4.0f / 255.0f);
  CHECK(b.zero_point == 255);
  // min_adjusted: all positive, max 4 -> zp 0
  CHECK(qp(1.0f, 4.0f, u8, SymmetryKind::affine, ConventionKind::onnx).zero_point == 0);
}

TEST_CASE("onnxruntime convention: float64 scale, restricted and midpoint zero points") {
  auto s = qp(-0.5f, 1.7f, s8, SymmetryKind::symmetric_restricted, ConventionKind::onnxruntime);
  CHECK(s.scale == static_cast<float>(static_cast<double>(1.7f + 1.7f) / 254.0));
  CHECK(s.zero_point == 0);
  CHECK(qp(-0.5f, 1.7f, u8, SymmetryKind::symmetric, ConventionKind::onnxruntime).zero_point == 128);
  CHECK(qp(-0.5f, 1.7f, IntRange{0, 65535}, SymmetryKind::symmetric, ConventionKind::onnxruntime).zero_point == 32768);
  CHECK(qp(-0.5f, 1.7f, s16, SymmetryKind::symmetric_restricted, ConventionKind::onnxruntime).scale ==
        static_cast<float>(static_cast<double>(3.4f) / 65534.0));
  auto a = qp(-1.0f, 3.0f, u8, SymmetryKind::affine, ConventionKind::onnxruntime);
  CHECK(a.scale == static_cast<float>(4.0 / 255.0));
  CHECK(a.zero_point == 64);
  // reduce_range
  CHECK(qk::reduced_range(s8, ConventionKind::onnxruntime).qmin == -64);
  CHECK(qk::reduced_range(s8, ConventionKind::onnxruntime).qmax == 64);
  CHECK(qk::reduced_range(s8, ConventionKind::pytorch).qmax == 63);
  CHECK(qk::reduced_range(u8, ConventionKind::pytorch).qmax == 127);
}

TEST_CASE("tflite convention: nudged zero point, half away from zero") {
  // [-1, 3] int8: scale 4/255; zp from min = -128 + 63.75 = -64.25, error 128 + 63.75;
  // from max = 127 - 191.25 = -64.25, error 127 + 191.25 -> min wins: round(-64.25) = -64
  auto a = qp(-1.0f, 3.0f, s8, SymmetryKind::affine, ConventionKind::tflite);
  CHECK(a.scale == static_cast<float>(4.0 / 255.0));
  CHECK(a.zero_point == -64);
  // symmetric int8 weights: zp 0, scale max|x| / 127
  auto w = qp(-0.6f, 0.3f, s8, SymmetryKind::symmetric_restricted, ConventionKind::tflite);
  CHECK(w.zero_point == 0);
  CHECK(w.scale == static_cast<float>(static_cast<double>(0.6f) * 2.0 / 254.0));
}

TEST_CASE("per-channel parameters and validation") {
  std::vector<qk::Range> ranges{{-1.0f, 1.0f}, {0.0f, 0.0f}, {-2.0f, 0.5f}};
  auto p = qk::compute_qparams(ranges, qk::Granularity::per_channel(0), s8, SymmetryKind::symmetric,
                               ConventionKind::pytorch, "w");
  REQUIRE(p.size() == 3);
  CHECK(p.scale[0] == 1.0f / 127.5f);
  CHECK(p.scale[1] == std::numeric_limits<float>::epsilon());
  CHECK(p.scale[2] == 2.0f / 127.5f);
  CHECK(p.range.qmin == -128);
  p.validate("w");
  auto bad = p;
  bad.scale[1] = 0.0f;
  CHECK_THROWS_WITH_AS(bad.validate("w"), doctest::Contains("tensor 'w': scale[1] is 0; expected a finite value > 0"), qk::Error);
  bad = p;
  bad.zero_point[2] = 300;
  CHECK_THROWS_WITH_AS(bad.validate("w"), doctest::Contains("zero_point[2] is 300; expected a value in [-128, 127]"), qk::Error);
  bad = p;
  bad.zero_point.pop_back();
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("found 3 scales and 2 zero points"), qk::Error);
  auto restricted = qk::compute_qparams(ranges, qk::Granularity::per_channel(0), s8,
                                        SymmetryKind::symmetric_restricted, ConventionKind::pytorch);
  CHECK(restricted.range.qmin == -127);
  CHECK_THROWS_WITH_AS(qk::compute_qparams({}, qk::Granularity::per_tensor(), s8, SymmetryKind::affine,
                                           ConventionKind::pytorch, "t"),
                       doctest::Contains("tensor 't': no ranges"), qk::Error);
}
