// Quantizer<Scheme>: observe -> params -> quantize/dequantize/fake-quantize/pack, user policies.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <quantkit/quantkit.hpp>
#include <quantkit/tensor/eigen.hpp>

namespace qk = quantkit;

namespace {
// A user rounding policy: round half toward zero. Needs only a category and operator().
struct RoundHalfTowardZero {
  using category = qk::category::rounding;
  float operator()(float t) const {
    const float r = std::round(t);
    return std::fabs(t - std::trunc(t)) == 0.5f ? std::trunc(t) : r;
  }
};
}  // namespace

TEST_CASE("observe several batches, per-tensor affine uint8") {
  qk::Quantizer<qk::Scheme<qk::UInt<8>>> q("act");
  std::vector<float> a = {0.5f, 1.0f, -0.25f}, b = {2.0f, -1.0f};
  q.observe(qk::as_tensor(a));
  q.observe(qk::as_tensor(b));
  const auto& p = q.params();
  CHECK(p.scale[0] == 3.0f / 255.0f);
  CHECK(p.zero_point[0] == 85);
  std::vector<std::uint8_t> codes(3);
  q.quantize(qk::as_tensor(a), qk::as_tensor(codes));
  // 0.5 / (3/255) is exactly 42.5: half-even gives 42, + 85 = 127
  CHECK(codes == std::vector<std::uint8_t>{127, 170, 64});
  std::vector<float> back(3), fake(3);
  q.dequantize(qk::as_tensor(codes), qk::as_tensor(back));
  q.fake_quantize(qk::as_tensor(a), qk::as_tensor(fake));
  CHECK(back == fake);
  for (std::size_t i = 0; i < 3; ++i) CHECK(std::fabs(back[i] - a[i]) <= p.scale[0] / 2);
  // observing again invalidates the parameters
  std::vector<float> c = {10.0f};
  q.observe(qk::as_tensor(c));
  CHECK(q.params().scale[0] == 11.0f / 255.0f);
}

TEST_CASE("per-channel symmetric int8 weights on an Eigen matrix (rows = output channels)") {
  Eigen::MatrixXf w(3, 4);
  w << 0.1f, -0.2f, 0.3f, -0.4f,  //
      1, 2, 3, 4,                 //
      0, 0, 0, 0;                 // an all-zero channel
  qk::Quantizer<qk::Scheme<qk::Int<8>, qk::PerChannel<0>, qk::SymmetricRestricted>> q("fc.weight");
  q.observe(w);
  const auto& p = q.params();
  CHECK(p.scale[0] == 0.4f / 127.0f);
  CHECK(p.scale[1] == 4.0f / 127.0f);
  CHECK(p.scale[2] == std::numeric_limits<float>::epsilon());  // finite, documented
  Eigen::Matrix<std::int8_t, Eigen::Dynamic, Eigen::Dynamic> codes(3, 4);
  q.quantize(w, codes);
  CHECK(codes(0, 3) == -127);
  CHECK(codes(1, 3) == 127);
  CHECK(codes(1, 0) == 32);  // 1 / (4/127) = 31.75
  CHECK(codes(2, 2) == 0);
  Eigen::MatrixXf back(3, 4);
  q.dequantize(codes, back);
  CHECK((back - w).cwiseAbs().maxCoeff() <= 4.0f / 127.0f / 2 + 1e-7f);
}

TEST_CASE("per-group int4, packed output round trip") {
  std::vector<float> w(2 * 8);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<float>(i)) * (i < 8 ? 1.0f : 4.0f);
  qk::Quantizer<qk::Scheme<qk::Int<4>, qk::PerGroup<1, 4>, qk::Symmetric>> q("w4");
  q.observe(qk::with_shape(w, {2, 8}));
  CHECK(q.params().size() == 4);
  auto packed = q.quantize_packed(qk::with_shape(w, {2, 8}));
  CHECK(packed.size() == 8);
  std::vector<float> back(16), fake(16);
  q.dequantize_packed(packed, qk::with_shape(back, {2, 8}));
  q.fake_quantize(qk::with_shape(w, {2, 8}), qk::with_shape(fake, {2, 8}));
  CHECK(back == fake);
  CHECK_THROWS_WITH_AS(q.dequantize_packed(std::vector<std::uint8_t>(3), qk::with_shape(back, {2, 8})),
                       doctest::Contains("tensor 'w4': packed input has 3 bytes; expected 8 for 16 values"), qk::Error);
}

TEST_CASE("user-defined rounding plugs into a scheme") {
  qk::Quantizer<qk::Scheme<qk::Int<8>, RoundHalfTowardZero>> q;
  q.set_params([] {
    qk::QuantParams p;
    p.scale = {0.5f};
    p.zero_point = {0};
    p.range = {-128, 127};
    return p;
  }());
  std::vector<float> x = {1.25f, -1.25f, 1.3f, 0.75f};
  std::vector<std::int8_t> codes(4);
  q.quantize(qk::as_tensor(x), qk::as_tensor(codes));
  CHECK(codes == std::vector<std::int8_t>{2, -2, 3, 1});
  static_assert(qk::rounding_mode_of<RoundHalfTowardZero>::value == qk::RoundingMode::custom);
}

TEST_CASE("stochastic rounding through the Quantizer is reproducible per seed") {
  using S = qk::Scheme<qk::Int<8>, qk::RoundStochastic<std::mt19937>>;
  std::mt19937 g1(7), g2(7);
  qk::Quantizer<S> q1("x", qk::RoundStochastic<std::mt19937>(g1)), q2("x", qk::RoundStochastic<std::mt19937>(g2));
  q1.set_range(-1.0f, 1.0f);
  q2.set_range(-1.0f, 1.0f);
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -1.0f + 2.0f * static_cast<float>(i) / 1000.0f;
  std::vector<std::int8_t> a(x.size()), b(x.size());
  q1.quantize(qk::as_tensor(x), qk::as_tensor(a));
  q2.quantize(qk::as_tensor(x), qk::as_tensor(b));
  CHECK(a == b);
  std::vector<std::int8_t> nearest(x.size());
  qk::Quantizer<qk::Scheme<qk::Int<8>>> qn;
  qn.set_range(-1.0f, 1.0f);
  qn.quantize(qk::as_tensor(x), qk::as_tensor(nearest));
  CHECK(a != nearest);  // it really is stochastic
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::abs(a[i] - nearest[i]) <= 1);
}

TEST_CASE("errors: nothing observed, NaN in a batch, empty batch, wrong granularity") {
  qk::Quantizer<qk::Scheme<qk::Int<8>>> q("act3");
  CHECK_THROWS_WITH_AS(q.params(), doctest::Contains("tensor 'act3': no data observed"), qk::Error);
  std::vector<float> bad = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  CHECK_THROWS_WITH_AS(q.observe(qk::with_shape(bad, {1, 2})), doctest::Contains("tensor 'act3': found nan at index [0, 1]"), qk::Error);
  std::vector<float> empty;
  CHECK_THROWS_WITH_AS(q.observe(qk::with_shape(empty, {0, 3})), doctest::Contains("empty batch"), qk::Error);
  // IgnoreNonFinite skips them explicitly
  qk::Quantizer<qk::Scheme<qk::Int<8>, qk::IgnoreNonFinite>> qi("act4");
  qi.observe(qk::as_tensor(bad));
  CHECK(qi.params().scale[0] == 1.0f / 255.0f);
  std::vector<float> all_nan = {std::nanf("")};
  qk::Quantizer<qk::Scheme<qk::Int<8>, qk::IgnoreNonFinite>> qn("act5");
  qn.observe(qk::as_tensor(all_nan));
  CHECK_THROWS_WITH_AS(qn.params(), doctest::Contains("saw no finite value"), qk::Error);
  qk::QuantParams pc;
  pc.granularity = qk::Granularity::per_channel(0);
  CHECK_THROWS_WITH_AS(q.set_params(pc), doctest::Contains("parameters are per-channel(axis 0); this quantizer's scheme is per-tensor"), qk::Error);
  // per-channel batches must agree on the channel count
  qk::Quantizer<qk::Scheme<qk::Int<8>, qk::PerChannel<1>>> qc("feat");
  std::vector<float> x6(6, 1.0f);
  qc.observe(qk::with_shape(x6, {2, 3}));
  CHECK_THROWS_WITH_AS(qc.observe(qk::with_shape(x6, {3, 2})), doctest::Contains("has 2 channels/blocks"), qk::Error);
}
