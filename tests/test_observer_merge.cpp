// Streaming and merging: observing stream A then stream B versus merging observer(A) with
// observer(B).
//   min-max, statistics/percentile/KL/MSE/auto: exactly equal (state and parameters), in any
//     order and grouping, with ranges that grow, shrink and cross zero;
//   moving average: a.merge(b) is "a's batches then b's", within 8 float32 ulps;
//   HistogramObserver: exact when the ranges agree; otherwise the documented bound — the
//     cumulative count at every bin edge within the count of the two bins around it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <quantkit/quantkit.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_observer_merge {

namespace qk = quantkit;

namespace {

// Batches of shape [4, 6, 50] whose scale and offset change from batch to batch.
std::vector<std::vector<float>> stream(unsigned seed, int batches, float scale0, float growth) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::exponential_distribution<float> ex(1.0f);
  std::vector<std::vector<float>> out;
  for (int b = 0; b < batches; ++b) {
    std::vector<float> x(4 * 6 * 50);
    const float s = scale0 * std::pow(growth, static_cast<float>(b));
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = (i % 3 == 0 ? ex(g) : nd(g)) * s * static_cast<float>(1 + (i / 50) % 6) + 0.1f * b;
    out.push_back(std::move(x));
  }
  return out;
}

const qk::Dims kShape{4, 6, 50};

template <class Obs>
Obs observe_all(const qk::ObserverConfig& cfg, const typename Obs::Options& opt,
                const std::vector<std::vector<float>>& batches) {
  Obs o(cfg, opt);
  for (const auto& b : batches) o.observe(qk::with_shape(b, kShape));
  return o;
}

std::vector<std::vector<float>> concat(std::vector<std::vector<float>> a, const std::vector<std::vector<float>>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<qk::ObserverConfig> configs() {
  std::vector<qk::ObserverConfig> c(5);
  c[1].granularity = qk::Granularity::per_channel(0);
  c[2].granularity = qk::Granularity::per_channel(1);
  c[3].granularity = qk::Granularity::per_channel(-1);
  c[4].granularity = qk::Granularity::per_group(2, 16);
  return c;
}

qk::QuantTarget t8(qk::SymmetryKind s) {
  qk::QuantTarget t;
  t.range = {-128, 127};
  t.symmetry = s;
  return t;
}

}  // namespace

TEST_CASE("MinMaxObserver: merge(A, B) == observe(A then B), exactly") {
  const auto a = stream(1, 3, 1.0f, 1.5f), b = stream(2, 4, 0.3f, 2.0f), c = stream(3, 2, 5.0f, 0.5f);
  for (const auto& cfg : configs()) {
    const auto seq = observe_all<qk::MinMaxObserver>(cfg, {}, concat(concat(a, b), c));
    auto m = observe_all<qk::MinMaxObserver>(cfg, {}, a);
    m.merge(observe_all<qk::MinMaxObserver>(cfg, {}, b));
    m.merge(observe_all<qk::MinMaxObserver>(cfg, {}, c));
    CHECK(m.state() == seq.state());
    auto r = observe_all<qk::MinMaxObserver>(cfg, {}, c);  // other order, other grouping
    auto ab = observe_all<qk::MinMaxObserver>(cfg, {}, b);
    ab.merge(observe_all<qk::MinMaxObserver>(cfg, {}, a));
    r.merge(ab);
    CHECK(r.state() == seq.state());
    qk::MinMaxObserver empty(cfg);
    empty.merge(seq);
    CHECK(empty.state() == seq.state());
  }
}

TEST_CASE("histogram-based observers: merge is exact — state and every method's parameters") {
  const auto a = stream(4, 3, 1.0f, 1.7f), b = stream(5, 3, 0.05f, 3.0f), c = stream(6, 2, 40.0f, 0.2f);
  const auto all = concat(concat(a, b), c);
  const qk::RangeMethod methods[] = {qk::RangeMethod::minmax(), qk::RangeMethod::percentile_of(0.999),
                                     qk::RangeMethod::max_percentile(0.99995), qk::RangeMethod::kl(),
                                     qk::RangeMethod::mse(), qk::RangeMethod::l2(),
                                     qk::RangeMethod::automatic()};
  int compared = 0;
  for (const auto& cfg : configs()) {
    if (cfg.granularity.kind == qk::GranularityKind::per_group) continue;  // many slots: slow methods
    qk::StatisticsObserver::Options opt;
    opt.bins = 1024;
    const auto seq = observe_all<qk::StatisticsObserver>(cfg, opt, all);
    auto m = observe_all<qk::StatisticsObserver>(cfg, opt, c);
    m.merge(observe_all<qk::StatisticsObserver>(cfg, opt, a));
    m.merge(observe_all<qk::StatisticsObserver>(cfg, opt, b));
    REQUIRE(m.state().size() == seq.state().size());
    for (std::size_t i = 0; i < seq.state().size(); ++i) CHECK(m.state()[i] == seq.state()[i]);
    for (const auto& meth : methods)
      for (auto sym : {qk::SymmetryKind::affine, qk::SymmetryKind::symmetric}) {
        CHECK(m.ranges(t8(sym), meth) == seq.ranges(t8(sym), meth));
        ++compared;
      }
  }
  CHECK(compared == 4 * 7 * 2);
  // Each typed observer merges the same way.
  auto check_kind = [&](auto tag) {
    using Obs = decltype(tag);
    const qk::ObserverConfig cfg;
    typename Obs::Options opt;
    const auto seq = observe_all<Obs>(cfg, opt, all);
    auto m = observe_all<Obs>(cfg, opt, b);
    m.merge(observe_all<Obs>(cfg, opt, c));
    m.merge(observe_all<Obs>(cfg, opt, a));
    CHECK(m.state()[0] == seq.state()[0]);
    CHECK(m.ranges(t8(qk::SymmetryKind::symmetric)) == seq.ranges(t8(qk::SymmetryKind::symmetric)));
  };
  check_kind(qk::PercentileObserver());
  check_kind(qk::KlObserver());
  check_kind(qk::MseObserver());
  check_kind(qk::AutoObserver());
}

TEST_CASE("GridHistogram: equals direct binning of all the data on the final grid") {
  const auto all = concat(stream(7, 4, 0.01f, 10.0f), stream(8, 2, -3.0f, 1.0f));
  qk::GridHistogram h(512);
  float mn = std::numeric_limits<float>::infinity(), mx = -mn;
  for (const auto& b : all) {
    const float lo = *std::min_element(b.begin(), b.end()), hi = *std::max_element(b.begin(), b.end());
    h.prepare(lo, hi);
    h.add(b.data(), static_cast<std::int64_t>(b.size()), 1, false);
    mn = std::min(mn, lo);
    mx = std::max(mx, hi);
  }
  const auto g = qk::GridHistogram::grid_for(mn, mx, 512);
  CHECK(h.exponent() == g.first);
  CHECK(h.base() == g.second);
  const double w = std::ldexp(1.0, g.first);
  CHECK(std::floor(mx / w) - std::floor(mn / w) < 512);
  CHECK(std::floor(mx / w) - std::floor(mn / w) >= 256 - 1);  // the data spans at least half the bins
  std::vector<std::uint64_t> direct(512, 0);
  std::uint64_t n = 0;
  for (const auto& b : all)
    for (float v : b) {
      ++direct[static_cast<std::size_t>(static_cast<std::int64_t>(std::floor(v / w)) - g.second)];
      ++n;
    }
  CHECK(h.counts() == direct);
  CHECK(h.total() == n);
  CHECK(h.min() == mn);
  CHECK(h.max() == mx);
}

TEST_CASE("GridHistogram: tiny, huge, negative, subnormal and single values") {
  const std::vector<std::vector<float>> cases = {
      {1e-40f, -1e-40f, 0.0f, 3e-39f},                       // subnormals around 0
      {-3e38f, 3e38f, 1.0f, -1.0f},                          // near the float limits
      {-5.0f, -4.0f, -4.5f},                                 // all negative
      {7.0f},                                                // one value
      {1.0f, 1.0f + 1.1920929e-7f, 1.0f + 2.3841858e-7f},    // adjacent floats
      {-0.0f, 0.0f, -1e-45f, 1e-45f}};
  for (const auto& x : cases) {
    qk::StatisticsObserver o;
    o.observe(qk::as_tensor(x));
    const auto& h = o.state()[0];
    const double w = std::ldexp(1.0, h.exponent());
    std::vector<std::uint64_t> direct(static_cast<std::size_t>(h.bins()), 0);
    for (float v : x) {
      const auto k = static_cast<std::int64_t>(std::floor(static_cast<double>(v) / w)) - h.base();
      REQUIRE(k >= 0);
      REQUIRE(k < h.bins());
      ++direct[static_cast<std::size_t>(k)];
    }
    CHECK(h.counts() == direct);
    CHECK(h.total() == x.size());
  }
}

TEST_CASE("MovingAverageMinMaxObserver: ordered merge within 8 float32 ulps of sequential") {
  const auto a = stream(9, 5, 1.0f, 1.2f), b = stream(10, 7, 0.5f, 1.4f);
  for (double c : {0.01, 0.1, 0.5, 1.0}) {
    qk::MovingAverageMinMaxObserver::Options opt;
    opt.averaging_constant = c;
    for (const auto& cfg : configs()) {
      const auto seq = observe_all<qk::MovingAverageMinMaxObserver>(cfg, opt, concat(a, b));
      auto m = observe_all<qk::MovingAverageMinMaxObserver>(cfg, opt, a);
      m.merge(observe_all<qk::MovingAverageMinMaxObserver>(cfg, opt, b));
      const auto rs = seq.ranges(), rm = m.ranges();
      REQUIRE(rs.size() == rm.size());
      for (std::size_t i = 0; i < rs.size(); ++i) {
        const float mag = std::max({std::fabs(rs[i].min), std::fabs(rs[i].max), 1e-30f});
        const float ulp = std::nextafter(mag, std::numeric_limits<float>::infinity()) - mag;
        INFO("c ", c, " slot ", i, ": sequential [", rs[i].min, ", ", rs[i].max, "], merged [", rm[i].min, ", ", rm[i].max, "]");
        CHECK(std::fabs(rs[i].min - rm[i].min) <= 8 * ulp);
        CHECK(std::fabs(rs[i].max - rm[i].max) <= 8 * ulp);
        CHECK(m.state()[i].batches == seq.state()[i].batches);
      }
    }
  }
  // c = 1: the last batch's range, exactly
  qk::MovingAverageMinMaxObserver::Options one;
  one.averaging_constant = 1.0;
  auto m = observe_all<qk::MovingAverageMinMaxObserver>({}, one, a);
  m.merge(observe_all<qk::MovingAverageMinMaxObserver>({}, one, b));
  qk::MinMaxObserver last;
  last.observe(qk::with_shape(b.back(), kShape));
  CHECK(m.ranges() == last.ranges());
}

TEST_CASE("HistogramObserver: merge exact for equal ranges, bounded otherwise") {
  int compared = 0;
  for (bool torch_113 : {false, true}) {
    qk::HistogramObserver::Options opt;
    opt.torch_1_13 = torch_113;
    // Equal ranges: every batch holds the same extreme values.
    auto pinned = [](std::vector<std::vector<float>> s) {
      for (auto& b : s) {
        b[0] = -7.25f;
        b[1] = 9.5f;
        for (auto& v : b) v = std::clamp(v, -7.25f, 9.5f);
      }
      return s;
    };
    const auto a = pinned(stream(11, 2, 1.0f, 1.0f)), b = pinned(stream(12, 3, 2.0f, 1.0f));
    const auto seq = observe_all<qk::HistogramObserver>({}, opt, concat(a, b));
    auto m = observe_all<qk::HistogramObserver>({}, opt, a);
    m.merge(observe_all<qk::HistogramObserver>({}, opt, b));
    CHECK(m.state()[0].histogram == seq.state()[0].histogram);
    CHECK(m.ranges(t8(qk::SymmetryKind::affine)) == seq.ranges(t8(qk::SymmetryKind::affine)));

    // Growing ranges (default mode: torch_1_13 mode drops the values outside PyTorch's integer
    // histc bounds, differently in each stream, so it has no such bound).
    if (torch_113) continue;
    for (unsigned seed = 0; seed < 6; ++seed) {
      const auto x = stream(20 + seed, 3, 0.5f, 1.6f), y = stream(40 + seed, 3, 1.0f + seed, 1.3f);
      const auto s = observe_all<qk::HistogramObserver>({}, opt, concat(x, y));
      auto mm = observe_all<qk::HistogramObserver>({}, opt, x);
      mm.merge(observe_all<qk::HistogramObserver>({}, opt, y));
      const auto& hs = s.state()[0];
      const auto& hm = mm.state()[0];
      REQUIRE(hs.histogram.size() == hm.histogram.size());
      double total_s = 0.0, total_m = 0.0;
      for (float v : hs.histogram) total_s += v;
      for (float v : hm.histogram) total_m += v;
      // PyTorch's re-binning rounds its shifted integrals to float32 and does not conserve the
      // count exactly; the merge does.
      CHECK(total_m == doctest::Approx(total_s).epsilon(1e-3));
      // The two histograms may sit on different grids (sequential observation grows the range
      // batch by batch): compare cumulative counts at the merged histogram's edges, the
      // sequential one read with uniform density inside its bins.
      const std::size_t n = hs.histogram.size();
      const double ws = (static_cast<double>(hs.max) - hs.min) / n, wm = (static_cast<double>(hm.max) - hm.min) / n;
      auto cdf_s = [&](double x) {
        double c = 0.0;
        for (std::size_t k = 0; k < n; ++k) {
          const double lo = hs.min + ws * k, hi = lo + ws;
          if (x >= hi) c += hs.histogram[k];
          else if (x > lo) c += hs.histogram[k] * (x - lo) / ws;
        }
        return c;
      };
      double cm = 0.0, worst = 0.0;
      for (std::size_t k = 0; k < n; ++k) {
        cm += hm.histogram[k];
        const double edge = hm.min + wm * (k + 1);
        const double window = cdf_s(edge + 2 * wm) - cdf_s(edge - 2 * wm);
        const double diff = std::fabs(cdf_s(edge) - cm);
        worst = std::max(worst, diff / std::max(window, 1.0));
        CHECK(diff <= window + 1e-3 * total_s);
      }
      ++compared;
      MESSAGE("histogram merge, seed ", seed, ": worst |cumulative difference| / count within 2 bins of the edge ", worst);
    }
  }
  CHECK(compared >= 3);
}

TEST_CASE("merging mismatched observers is an error naming the difference") {
  qk::ObserverConfig pc;
  pc.granularity = qk::Granularity::per_channel(0);
  pc.name = "w";
  std::vector<float> x(12, 1.0f);
  qk::MinMaxObserver a(pc), b;
  a.observe(qk::with_shape(x, {3, 4}));
  b.observe(qk::with_shape(x, {3, 4}));
  CHECK_THROWS_WITH_AS(a.merge(b), doctest::Contains("cannot merge a per-tensor observer into a per-channel(axis 0) one"), qk::Error);
  qk::MinMaxObserver c(pc);
  c.observe(qk::with_shape(x, {4, 3}));
  CHECK_THROWS_WITH_AS(a.merge(c), doctest::Contains("cannot merge an observer of 4 channels into one of 3"), qk::Error);

  qk::StatisticsObserver::Options o1, o2;
  o1.bins = 2048;
  o2.bins = 4096;
  qk::StatisticsObserver s1({}, o1), s2({}, o2);
  s1.observe(qk::as_tensor(x));
  s2.observe(qk::as_tensor(x));
  CHECK_THROWS_WITH_AS(s1.merge(s2), doctest::Contains("of 4096 bins into one of 2048"), qk::Error);

  qk::HistogramObserver::Options h1, h2;
  h2.torch_1_13 = true;
  qk::HistogramObserver ha({}, h1), hb({}, h2);
  ha.observe(qk::as_tensor(x));
  hb.observe(qk::as_tensor(x));
  CHECK_THROWS_WITH_AS(ha.merge(hb), doctest::Contains("expected the same bins and mode"), qk::Error);

  qk::MovingAverageMinMaxObserver::Options m1, m2;
  m2.averaging_constant = 0.5;
  qk::MovingAverageMinMaxObserver ma({}, m1), mb({}, m2);
  ma.observe(qk::as_tensor(x));
  mb.observe(qk::as_tensor(x));
  CHECK_THROWS_WITH_AS(ma.merge(mb), doctest::Contains("expected the same constant"), qk::Error);
}

}  // namespace test_observer_merge
