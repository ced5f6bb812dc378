// AutoObserver (Horizon's calibration_type "default"): tries max, max-percentile 0.99995 and KL
// (or the user's list), keeps the candidate whose fake-quantized data is most similar to the
// data, and reports the choice. The similarity it computes on the histogram is checked against
// the real cosine / MSE / SQNR of the tensor and its fake-quantized copy (ref::fake_quantize).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <quantkit/quantkit.hpp>

namespace qk = quantkit;

namespace {

std::vector<float> data(const std::string& kind, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(20000);
  for (auto& v : x) v = nd(g);
  if (kind == "outliers")
    for (int i = 0; i < 4; ++i) x[static_cast<std::size_t>(i * 97)] = 25.0f * (i % 2 ? -1.0f : 1.0f);
  if (kind == "relu")
    for (auto& v : x) v = std::max(0.0f, v);
  if (kind == "uniform") {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& v : x) v = u(g);
  }
  return x;
}

qk::QuantTarget t8(qk::SymmetryKind s = qk::SymmetryKind::symmetric) {
  qk::QuantTarget t;
  t.range = {-128, 127};
  t.symmetry = s;
  return t;
}

struct Real {
  double cosine, mse, sqnr;
};
Real real_similarity(const std::vector<float>& x, const qk::Range& r, const qk::QuantTarget& t) {
  const auto p = qk::compute_qparams({r}, qk::Granularity::per_tensor(), t.range, t.symmetry, t.convention);
  std::vector<float> y(x.size());
  qk::ref::fake_quantize(qk::as_tensor(x), p, qk::as_tensor(y));
  double xy = 0.0, xx = 0.0, yy = 0.0, e = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    xy += static_cast<double>(x[i]) * y[i];
    xx += static_cast<double>(x[i]) * x[i];
    yy += static_cast<double>(y[i]) * y[i];
    e += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
  }
  return {xy / std::sqrt(xx * yy), e / static_cast<double>(x.size()), 10.0 * std::log10(xx / e)};
}

}  // namespace

TEST_CASE("auto: picks the most similar candidate and reports every candidate's scores") {
  for (const std::string kind : {"normal", "outliers", "relu", "uniform"}) {
    const auto x = data(kind, 3);
    qk::AutoObserver obs;
    obs.observe(qk::as_tensor(x));
    for (auto metric : {qk::SimilarityMetric::cosine, qk::SimilarityMetric::mse, qk::SimilarityMetric::sqnr}) {
      const auto m = qk::RangeMethod::automatic(metric);
      const auto choice = obs.explain(t8(), m).at(0);
      REQUIRE(choice.candidates.size() == 3u);
      CHECK(choice.candidates[0].method == "minmax");
      CHECK(choice.candidates[1].method == "percentile(0.99995, abs)");
      CHECK(choice.candidates[2].method == "kl");
      auto value = [&](const qk::CandidateScore& s) {
        return metric == qk::SimilarityMetric::cosine ? s.cosine
               : metric == qk::SimilarityMetric::mse  ? -s.mse
                                                       : s.sqnr_db;
      };
      const auto best = std::max_element(choice.candidates.begin(), choice.candidates.end(),
                                         [&](const auto& a, const auto& b) { return value(a) < value(b); });
      INFO(kind, " ", qk::to_string(metric), ": chose ", choice.method);
      CHECK(choice.method == best->method);
      CHECK(choice.range == best->range);
      // each candidate's range is that method's own
      const qk::RangeMethod each[] = {qk::RangeMethod::max(), qk::RangeMethod::max_percentile(0.99995), qk::RangeMethod::kl()};
      for (int i = 0; i < 3; ++i)
        CHECK(choice.candidates[static_cast<std::size_t>(i)].range == obs.ranges(t8(), each[i]).at(0));
      // the histogram-model similarity is close to the real one
      for (const auto& c : choice.candidates) {
        const Real r = real_similarity(x, c.range, t8());
        INFO(c.method, ": model cosine ", c.cosine, " real ", r.cosine, "; model MSE ", c.mse, " real ", r.mse);
        CHECK(c.cosine == doctest::Approx(r.cosine).epsilon(1e-4));
        CHECK(c.mse == doctest::Approx(r.mse).epsilon(0.05));
        CHECK(c.sqnr_db == doctest::Approx(r.sqnr).epsilon(0.01));
      }
    }
    // The default AutoObserver's ranges are the cosine choice.
    CHECK(obs.ranges(t8()).at(0) == obs.explain(t8()).at(0).range);
  }
}

TEST_CASE("auto: a user list, per channel, and what it chooses on outlier-heavy data") {
  std::vector<float> x = data("outliers", 9);
  const auto m = qk::RangeMethod::automatic(
      qk::SimilarityMetric::mse, {qk::RangeMethod::max(), qk::RangeMethod::mse(), qk::RangeMethod::percentile_of(0.999)});
  qk::AutoObserver::Options opt;
  opt.method = m;
  qk::ObserverConfig cfg;
  cfg.granularity = qk::Granularity::per_channel(0);
  qk::AutoObserver obs(cfg, opt);
  obs.observe(qk::with_shape(x, {4, 5000}));
  const auto why = obs.explain(t8());
  REQUIRE(why.size() == 4u);
  for (const auto& c : why) {
    REQUIRE(c.candidates.size() == 3u);
    // the MSE method minimises the (model) MSE, so it wins by that metric (or ties)
    CHECK(c.candidates[1].mse <= c.candidates[0].mse);
    CHECK(c.candidates[1].mse <= c.candidates[2].mse * (1 + 1e-12));
    CHECK(c.method == "mse");
  }
  CHECK(m.to_string() == "auto(mse: minmax mse percentile(0.999, by_target))");
  // default candidates extended with MSE
  auto more = qk::RangeMethod::default_candidates();
  more.push_back(qk::RangeMethod::mse());
  CHECK(qk::RangeMethod::automatic(qk::SimilarityMetric::cosine, more).automatic_candidates().size() == 4u);
}
