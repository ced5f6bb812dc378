// Observer state as JSON (quantkit/observer/json.hpp): every kind round-trips exactly; a
// calibration sharded over "processes" (observers serialized to text and parsed back) reduces
// to the observer that saw every batch; malformed or mismatched state is a clear error.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <quantkit/observer/json.hpp>
#include <quantkit/quantkit.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_observer_json {

namespace qk = quantkit;
using nlohmann::json;

namespace {

std::vector<std::vector<float>> batches(unsigned seed, int n) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<std::vector<float>> out;
  for (int b = 0; b < n; ++b) {
    std::vector<float> x(2 * 3 * 64);
    for (auto& v : x) v = nd(g) * (1.0f + 0.7f * b) + 0.2f * b;
    out.push_back(std::move(x));
  }
  return out;
}

qk::QuantTarget t8() {
  qk::QuantTarget t;
  t.range = {-128, 127};
  t.symmetry = qk::SymmetryKind::symmetric;
  return t;
}

// Serializes to text and parses back, as another process would.
template <class Obs>
Obs through_text(const Obs& o) {
  return qk::observer_from_json<Obs>(json::parse(qk::observer_to_json(o).dump()));
}

template <class Obs>
void round_trip_and_shards(typename Obs::Options opt, bool exact_merge) {
  qk::ObserverConfig cfg;
  cfg.name = "blk3.out";
  cfg.granularity = qk::Granularity::per_channel(1);
  const auto data = batches(7, 8);
  Obs whole(cfg, opt);
  for (const auto& b : data) whole.observe(qk::with_shape(b, {2, 3, 64}));
  const Obs back = through_text(whole);
  CHECK(back.config().name == "blk3.out");
  CHECK(back.config().granularity == cfg.granularity);
  CHECK(back.ranges(t8()) == whole.ranges(t8()));
  CHECK(qk::observer_to_json(back) == qk::observer_to_json(whole));
  // Four shards of two batches each, reduced in one process.
  Obs reduced(cfg, opt);
  for (int s = 0; s < 4; ++s) {
    Obs shard(cfg, opt);
    for (int b = 2 * s; b < 2 * s + 2; ++b) shard.observe(qk::with_shape(data[static_cast<std::size_t>(b)], {2, 3, 64}));
    qk::merge_observer_json(reduced, json::parse(qk::observer_to_json(shard).dump()));
  }
  if (exact_merge) CHECK(reduced.ranges(t8()) == whole.ranges(t8()));
}

}  // namespace

TEST_CASE("every observer kind round-trips through JSON text; sharded calibration reduces exactly") {
  round_trip_and_shards<qk::MinMaxObserver>({}, true);
  round_trip_and_shards<qk::MovingAverageMinMaxObserver>({}, false);
  round_trip_and_shards<qk::HistogramObserver>({}, false);
  qk::HistogramObserver::Options h;
  h.torch_1_13 = true;
  round_trip_and_shards<qk::HistogramObserver>(h, false);
  round_trip_and_shards<qk::StatisticsObserver>({}, true);
  round_trip_and_shards<qk::PercentileObserver>({}, true);
  qk::KlObserver::Options k;
  k.bins = 2048;
  k.method.kl_zero_bin_fix = true;
  round_trip_and_shards<qk::KlObserver>(k, true);
  round_trip_and_shards<qk::MseObserver>({}, true);
  qk::AutoObserver::Options a;
  a.method = qk::RangeMethod::automatic(qk::SimilarityMetric::sqnr,
                                        {qk::RangeMethod::max(), qk::RangeMethod::percentile_of(0.999, qk::PercentileSide::two_sided),
                                         qk::RangeMethod::mse()});
  round_trip_and_shards<qk::AutoObserver>(a, true);
}

TEST_CASE("moving average and PyTorch histogram shards: ordered merge through JSON matches in-process merge") {
  const auto data = batches(3, 6);
  qk::MovingAverageMinMaxObserver a, b;
  for (int i = 0; i < 3; ++i) a.observe(qk::as_tensor(data[static_cast<std::size_t>(i)]));
  for (int i = 3; i < 6; ++i) b.observe(qk::as_tensor(data[static_cast<std::size_t>(i)]));
  auto direct = a;
  direct.merge(b);
  auto via = a;
  qk::merge_observer_json(via, json::parse(qk::observer_to_json(b).dump()));
  CHECK(via.ranges() == direct.ranges());
  qk::HistogramObserver ha, hb;
  ha.observe(qk::as_tensor(data[0]));
  hb.observe(qk::as_tensor(data[5]));
  auto hd = ha;
  hd.merge(hb);
  auto hv = ha;
  qk::merge_observer_json(hv, json::parse(qk::observer_to_json(hb).dump()));
  CHECK(hv.state()[0].histogram == hd.state()[0].histogram);
}

TEST_CASE("malformed or mismatched observer JSON is a clear error") {
  std::vector<float> x = {1.0f, -2.0f, 3.5f, 0.25f};
  qk::ObserverConfig cfg;
  cfg.name = "x";
  qk::KlObserver kl(cfg);
  kl.observe(qk::as_tensor(x));
  const json j = qk::observer_to_json(kl);
  CHECK_THROWS_WITH_AS(qk::observer_from_json<qk::PercentileObserver>(j),
                       doctest::Contains("state of a \"kl\" observer cannot be loaded into a \"percentile\" observer"), qk::Error);
  qk::KlObserver other_bins(cfg, [] { qk::KlObserver::Options o; o.bins = 1024; return o; }());
  CHECK_THROWS_WITH_AS(qk::merge_observer_json(other_bins, j), doctest::Contains("of 4096 bins into one of 1024"), qk::Error);
  json bad = j;
  bad["format"] = "something";
  CHECK_THROWS_WITH_AS(qk::observer_from_json<qk::KlObserver>(bad), doctest::Contains("not a quantkit observer"), qk::Error);
  bad = j;
  bad["version"] = 7;
  CHECK_THROWS_WITH_AS(qk::observer_from_json<qk::KlObserver>(bad), doctest::Contains("version 7"), qk::Error);
  bad = j;
  bad["state"][0]["exponent"] = bad["state"][0]["exponent"].get<int>() - 1;
  CHECK_THROWS_WITH_AS(qk::observer_from_json<qk::KlObserver>(bad), doctest::Contains("expected 4096 bins on the grid of that range"), qk::Error);
  bad = j;
  bad["state"][0]["total"] = 5;
  CHECK_THROWS_WITH_AS(qk::observer_from_json<qk::KlObserver>(bad), doctest::Contains("add up to 4"), qk::Error);
  bad = j;
  bad["state"][0].erase("counts");
  CHECK_THROWS_WITH_AS(qk::observer_from_json<qk::KlObserver>(bad), doctest::Contains("missing \"counts\""), qk::Error);
  bad = j;
  bad["options"]["method"]["kind"] = "median";
  CHECK_THROWS_WITH_AS(qk::observer_from_json<qk::KlObserver>(bad), doctest::Contains("method \"median\" is not known"), qk::Error);
  bad = j;
  bad["config"]["granularity"] = json{{"kind", "per_row"}};
  CHECK_THROWS_WITH_AS(qk::observer_from_json<qk::KlObserver>(bad), doctest::Contains("granularity kind \"per_row\""), qk::Error);

  qk::HistogramObserver h(cfg);
  h.observe(qk::as_tensor(x));
  json hj = qk::observer_to_json(h);
  hj["state"][0]["histogram"].erase(0);
  CHECK_THROWS_WITH_AS(qk::observer_from_json<qk::HistogramObserver>(hj), doctest::Contains("histogram state with 2047 bins"), qk::Error);
  qk::MinMaxObserver m(cfg);
  m.observe(qk::as_tensor(x));
  json mj = qk::observer_to_json(m);
  mj["state"][0]["min"] = 9.0;
  CHECK_THROWS_WITH_AS(qk::observer_from_json<qk::MinMaxObserver>(mj), doctest::Contains("expected min <= max"), qk::Error);
}

}  // namespace test_observer_json
