// quantkit/analysis/metrics.hpp: hand-derived exact cases, numpy/PyTorch golden values
// (tests/golden/metrics.json from tools/golden/gen_metrics_golden.py), strided views, per-channel
// metrics and the errors (shape mismatch, NaN/Inf, bad axis) naming the tensors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "quantkit/analysis/metrics.hpp"
#include "support/golden.hpp"

namespace qk = quantkit;
namespace qa = quantkit::analysis;

namespace {

qk::View<const float> view(const std::vector<float>& v, qk::Dims shape, const char* name) {
  return qk::View<const float>(v.data(), shape, name);
}

void check_close(double got, double want, double rel, const std::string& what) {
  INFO(what << ": got " << got << ", want " << want);
  if (std::isinf(want)) {
    CHECK(got == want);
    return;
  }
  CHECK(std::fabs(got - want) <= rel * std::max(1.0, std::fabs(want)));
}

}  // namespace

TEST_CASE("metrics: hand-derived exact values") {
  const double inf = std::numeric_limits<double>::infinity();
  SUBCASE("equal tensors") {
    const std::vector<float> x = {3, -4, 0.5f};
    const auto s = qa::similarity(view(x, {3}, "x"), view(x, {3}, "y"));
    CHECK(s.cosine == 1.0);
    CHECK(s.mse == 0.0);
    CHECK(s.mre == 0.0);
    CHECK(s.sqnr_db == inf);
    CHECK(s.chebyshev == 0.0);
    CHECK(s.count == 3);
  }
  SUBCASE("one element lost") {
    // x = [1, 2, 2] (|x| = 3), y = [1, 2, 0]: d = [0, 0, 2].
    const std::vector<float> x = {1, 2, 2}, y = {1, 2, 0};
    const auto s = qa::similarity(view(x, {3}, "x"), view(y, {3}, "y"));
    CHECK(s.cosine == doctest::Approx(std::sqrt(5.0) / 3.0).epsilon(1e-15));
    CHECK(s.mse == doctest::Approx(4.0 / 3.0).epsilon(1e-15));
    CHECK(s.mre == doctest::Approx(1.0 / 3.0).epsilon(1e-15));  // |2| / max(|2|, 0.002) / 3
    CHECK(s.sqnr_db == doctest::Approx(20.0 * std::log10(3.0 / 2.0)).epsilon(1e-15));
    CHECK(s.chebyshev == 2.0);
    CHECK(qa::cosine_similarity(view(x, {3}, "x"), view(y, {3}, "y")) == s.cosine);
    CHECK(qa::chebyshev_distance(view(x, {3}, "x"), view(y, {3}, "y")) == 2.0);
  }
  SUBCASE("the relative-error guard: elements below 1e-3 max|x| are measured against it") {
    // max|x| = 1024, guard 1.024: rel = (0 + 0.25 / 1.024 + 0.25 / 1.024) / 3.
    const std::vector<float> x = {1024, 0.5f, 0}, y = {1024, 0.75f, 0.25f};
    const auto s = qa::similarity(view(x, {3}, "x"), view(y, {3}, "y"));
    CHECK(s.mre == doctest::Approx(0.5 / 1.024 / 3.0).epsilon(1e-15));
    // Scale-free: multiplying both by 8 changes nothing.
    std::vector<float> x8 = x, y8 = y;
    for (auto& v : x8) v *= 8;
    for (auto& v : y8) v *= 8;
    CHECK(qa::mean_relative_error(view(x8, {3}, "x"), view(y8, {3}, "y")) == s.mre);
  }
  SUBCASE("all-zero tensors") {
    const std::vector<float> z = {0, 0}, y = {1, 0};
    const auto same = qa::similarity(view(z, {2}, "x"), view(z, {2}, "y"));
    CHECK(same.cosine == 1.0);
    CHECK(same.mre == 0.0);
    CHECK(same.sqnr_db == inf);
    const auto s = qa::similarity(view(z, {2}, "x"), view(y, {2}, "y"));
    CHECK(s.cosine == 0.0);
    CHECK(s.mse == 0.5);
    CHECK(s.mre == inf);
    CHECK(s.sqnr_db == -inf);
    CHECK(s.chebyshev == 1.0);
    const auto r = qa::similarity(view(y, {2}, "x"), view(z, {2}, "y"));  // y lost everything
    CHECK(r.cosine == 0.0);
    CHECK(r.sqnr_db == 0.0);
    CHECK(r.mre == 0.5);  // (1/1 + 0) / 2
  }
  SUBCASE("empty tensors compare as equal") {
    const std::vector<float> e;
    const auto s = qa::similarity(view(e, {0, 3}, "x"), view(e, {0, 3}, "y"));
    CHECK(s.count == 0);
    CHECK(s.cosine == 1.0);
    CHECK(s.sqnr_db == inf);
  }
  SUBCASE("integer and float element types, a strided (transposed) view") {
    // x: [[1, 2, 3], [4, 5, 6]] as int8; y: the same values stored transposed (column-major).
    const std::vector<std::int8_t> x = {1, 2, 3, 4, 5, 6};
    const std::vector<float> yt = {1, 4, 2, 5, 3, 6.5f};
    const qk::View<const std::int8_t> vx(x.data(), qk::Dims{2, 3}, "x8");
    const qk::View<const float> vy(yt.data(), qk::Dims{2, 3}, qk::Dims{1, 2}, "yT");
    const auto s = qa::similarity(vx, vy);
    CHECK(s.chebyshev == 0.5);
    CHECK(s.mse == doctest::Approx(0.25 / 6).epsilon(1e-15));
    const auto c = qa::similarity_per_channel(vx, vy, -1);  // columns
    REQUIRE(c.size() == 3);
    CHECK(c[0].chebyshev == 0.0);
    CHECK(c[1].chebyshev == 0.0);
    CHECK(c[2].chebyshev == 0.5);
    CHECK(c[2].count == 2);
    CHECK(c[2].mre == doctest::Approx(0.5 / 6 / 2).epsilon(1e-15));
  }
}

TEST_CASE("metrics: numpy and PyTorch Numeric Suite golden values") {
  const nlohmann::json doc = quantkit_test::load_golden("metrics.json");
  REQUIRE(doc.at("cases").size() >= 4);
  for (const auto& c : doc.at("cases")) {
    const std::string name = c.at("name");
    CAPTURE(name);
    const std::vector<std::int64_t> shape_v = c.at("shape");
    const qk::Dims shape = qk::Dims::from(shape_v.begin(), shape_v.end());
    const std::vector<float> x = c.at("x").get<std::vector<float>>();
    const std::vector<float> y = c.at("y").get<std::vector<float>>();
    const auto s = qa::similarity(view(x, shape, "x"), view(y, shape, "y"));
    for (qa::Metric m : qa::all_metrics()) {
      // numpy in float64: the same sums in a different order.
      check_close(s.get(m), c.at("whole").at(qa::to_string(m)).get<double>(), 1e-12,
                  name + " " + qa::to_string(m) + " (numpy)");
      // PyTorch computes in float32: agreement to float32 accuracy.
      if (c.at("torch").contains(qa::to_string(m)))
        check_close(s.get(m), c.at("torch").at(qa::to_string(m)).get<double>(), 2e-5,
                    name + " " + qa::to_string(m) + " (torch)");
    }
    const auto per = qa::similarity_per_channel(view(x, shape, "x"), view(y, shape, "y"), c.at("axis").get<int>());
    REQUIRE(per.size() == c.at("per_channel").size());
    for (std::size_t k = 0; k < per.size(); ++k)
      for (qa::Metric m : qa::all_metrics())
        check_close(per[k].get(m), c.at("per_channel")[k].at(qa::to_string(m)).get<double>(), 1e-12,
                    name + " channel " + std::to_string(k) + " " + qa::to_string(m));
  }
}

TEST_CASE("metrics: errors name the tensors") {
  const std::vector<float> a = {1, 2, 3, 4}, b = {1, 2, std::nanf(""), 4};
  CHECK_THROWS_WITH_AS(qa::similarity(view(a, {4}, "conv1"), view(a, {2, 2}, "conv1_q")),
                       "quantkit: tensor 'conv1' vs tensor 'conv1_q': shapes [4] and [2, 2] differ; expected the same shape",
                       qk::Error);
  CHECK_THROWS_WITH_AS(qa::similarity(view(a, {2, 2}, "relu"), view(b, {2, 2}, "relu_q")),
                       "quantkit: tensor 'relu' vs tensor 'relu_q': found nan at index [1, 0] of tensor 'relu_q'; "
                       "expected finite values",
                       qk::Error);
  const std::vector<float> inf = {std::numeric_limits<float>::infinity(), 0, 0, 0};
  CHECK_THROWS_WITH_AS(qa::similarity(view(inf, {4}, "x"), view(a, {4}, "y")),
                       doctest::Contains("found inf at index [0] of tensor 'x'"), qk::Error);
  CHECK_THROWS_WITH_AS(qa::similarity_per_channel(view(a, {2, 2}, "x"), view(a, {2, 2}, "y"), 2),
                       doctest::Contains("channel axis 2 for shape [2, 2]; expected an axis in [-2, 1]"), qk::Error);
  CHECK_THROWS_WITH_AS(qa::parse_metric("cos", "--metric"),
                       "quantkit: --metric: unknown metric 'cos'; expected cosine, mse, mre, sqnr or chebyshev", qk::Error);
  CHECK(qa::parse_metric("sqnr") == qa::Metric::sqnr);
  CHECK(qa::higher_is_better(qa::Metric::cosine));
  CHECK_FALSE(qa::higher_is_better(qa::Metric::mre));
}
