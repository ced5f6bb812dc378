// The calibration API over many named tensors (quantkit/calibration/calibration.hpp) and
// profiles (quantkit/calibration/profile.hpp, saved/loaded with calibration/json.hpp):
// parameters for other methods, bit widths and symmetries derived from one profile equal those
// of observers run directly on the data; shards merge exactly; a profile loaded for another
// graph is an error.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <quantkit/calibration/json.hpp>
#include <quantkit/quantkit.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_calibration {

namespace qk = quantkit;

namespace {

struct Model {
  // three "activations" of a fake model for a batch index
  std::map<std::string, std::vector<float>> run(int batch) const {
    std::mt19937 g(static_cast<unsigned>(100 + batch));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::map<std::string, std::vector<float>> out;
    std::vector<float> x(8 * 16), relu(8 * 16), logits(8 * 10);
    for (auto& v : x) v = nd(g);
    for (std::size_t i = 0; i < relu.size(); ++i) relu[i] = std::max(0.0f, x[i] * 1.5f + 0.2f);
    for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = nd(g) * 4.0f + (i % 10 == 3 ? 9.0f : 0.0f);
    out["x"] = x;
    out["relu1"] = relu;
    out["logits"] = logits;
    return out;
  }
  static qk::Dims shape(const std::string& name) { return name == "logits" ? qk::Dims{8, 10} : qk::Dims{8, 16}; }
  std::string hash() const {
    qk::GraphHash h;
    for (const char* n : {"x", "relu1", "logits"}) h.add(n).add(shape(n));
    return h.hex();
  }
};

qk::QuantTarget target(qk::IntRange r, qk::SymmetryKind s) {
  qk::QuantTarget t;
  t.range = r;
  t.symmetry = s;
  return t;
}

std::string temp_path(const char* name) { return std::string("/tmp/quantkit_test_") + name; }

}  // namespace

TEST_CASE("Calibration: many named tensors, per-tensor configuration, QuantParams for each") {
  Model m;
  qk::Calibration<qk::KlObserver> cal;
  cal.configure("logits", qk::Granularity::per_channel(1));
  for (int b = 0; b < 5; ++b)
    for (const auto& [name, data] : m.run(b)) cal.observe(name, qk::with_shape(data, Model::shape(name)));
  CHECK(cal.size() == 3u);
  CHECK(cal.names() == std::vector<std::string>{"logits", "relu1", "x"});
  const auto t = target({-128, 127}, qk::SymmetryKind::symmetric);
  const auto all = cal.params(t);
  REQUIRE(all.size() == 3u);
  CHECK(all.at("logits").size() == 10u);
  CHECK(all.at("x").size() == 1u);
  for (const auto& [name, p] : all) p.validate(name);
  // the same as an observer run on its own
  qk::KlObserver solo;
  for (int b = 0; b < 5; ++b) solo.observe(qk::with_shape(m.run(b).at("relu1"), {8, 16}));
  CHECK(cal.observer("relu1").ranges(t) == solo.ranges(t));
  CHECK_THROWS_WITH_AS(cal.params("conv9", t), doctest::Contains("tensor 'conv9': not calibrated"), qk::Error);
  CHECK_THROWS_WITH_AS(cal.configure("x", qk::Granularity::per_channel(0)), doctest::Contains("tensor 'x': already configured"), qk::Error);
  // errors name the tensor: a batch with a NaN
  std::vector<float> bad(8 * 16, 1.0f);
  bad[17] = std::nanf("");
  CHECK_THROWS_WITH_AS(cal.observe("relu1", qk::with_shape(bad, {8, 16})), doctest::Contains("tensor 'relu1': found nan at index [1, 1]"), qk::Error);
}

TEST_CASE("Calibration: shards merge, and round-trip through a JSON file") {
  Model m;
  qk::Calibration<qk::MinMaxObserver> whole, s1, s2;
  for (int b = 0; b < 6; ++b)
    for (const auto& [name, data] : m.run(b)) {
      whole.observe(name, qk::with_shape(data, Model::shape(name)));
      (b % 2 ? s1 : s2).observe(name, qk::with_shape(data, Model::shape(name)));
    }
  const std::string path = temp_path("cal_shard.json");
  qk::save_calibration(s2, path);
  auto reduced = qk::load_calibration<qk::MinMaxObserver>(path);
  reduced.merge(s1);
  const auto t = target({0, 255}, qk::SymmetryKind::affine);
  for (const auto& n : whole.names()) CHECK(reduced.observer(n).state() == whole.observer(n).state());
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(qk::calibration_from_json<qk::KlObserver>(qk::calibration_to_json(s1)),
                       doctest::Contains("holds \"minmax\" observers; expected \"kl\""), qk::Error);
  (void)t;
}

TEST_CASE("Profile: any method, bit width and symmetry from one set of statistics") {
  Model m;
  qk::Profile prof(m.hash());
  prof.configure("logits", qk::Granularity::per_channel(1));
  for (int b = 0; b < 4; ++b)
    for (const auto& [name, data] : m.run(b)) prof.observe(name, qk::with_shape(data, Model::shape(name)));

  struct Want {
    qk::RangeMethod method;
    qk::QuantTarget target;
  };
  const Want wants[] = {
      {qk::RangeMethod::kl(), target({-128, 127}, qk::SymmetryKind::symmetric)},
      {qk::RangeMethod::mse(), target({-8, 7}, qk::SymmetryKind::affine)},
      {qk::RangeMethod::percentile_of(0.999), target({0, 255}, qk::SymmetryKind::affine)},
      {qk::RangeMethod::max_percentile(0.99995), target({-128, 127}, qk::SymmetryKind::symmetric_restricted)},
      {qk::RangeMethod::automatic(), target({-32768, 32767}, qk::SymmetryKind::symmetric)},
  };
  for (const auto& w : wants) {
    // A dedicated observer on the same data, configured for that method.
    qk::Calibration<qk::StatisticsObserver> direct({}, [&] {
      qk::StatisticsObserver::Options o;
      o.method = w.method;
      return o;
    }());
    direct.configure("logits", qk::Granularity::per_channel(1));
    for (int b = 0; b < 4; ++b)
      for (const auto& [name, data] : m.run(b)) direct.observe(name, qk::with_shape(data, Model::shape(name)));
    const auto from_profile = prof.params(w.method, w.target);
    const auto from_direct = direct.params(w.target);
    for (const auto& entry : from_direct) {
      // a named copy: Clang 14 cannot capture structured bindings in INFO's lambda
      const std::string& name = entry.first;
      const auto& p = entry.second;
      INFO(w.method.to_string(), " ", name);
      CHECK(from_profile.at(name).scale == p.scale);
      CHECK(from_profile.at(name).zero_point == p.zero_point);
    }
  }
  // the auto method reports its choice per channel
  const auto why = prof.explain("logits", qk::RangeMethod::automatic(), target({-128, 127}, qk::SymmetryKind::symmetric));
  REQUIRE(why.size() == 10u);
  for (const auto& c : why) CHECK(c.candidates.size() == 3u);
}

TEST_CASE("Profile: saved and loaded; another graph's profile is an error; shards merge exactly") {
  Model m;
  qk::Profile whole(m.hash()), a(m.hash()), b(m.hash());
  for (int i = 0; i < 6; ++i)
    for (const auto& [name, data] : m.run(i)) {
      whole.observe(name, qk::with_shape(data, Model::shape(name)));
      (i < 2 ? a : b).observe(name, qk::with_shape(data, Model::shape(name)));
    }
  const std::string pa = temp_path("profile_a.json"), pb = temp_path("profile_b.json");
  qk::save_profile(a, pa);
  qk::save_profile(b, pb);
  auto reduced = qk::load_profile(pa, m.hash());
  reduced.merge(qk::load_profile(pb, m.hash()));
  const auto t = target({-128, 127}, qk::SymmetryKind::symmetric);
  for (const auto& n : whole.names()) {
    CHECK(reduced.statistics(n).state() == whole.statistics(n).state());
    CHECK(reduced.params(n, qk::RangeMethod::kl(), t).scale == whole.params(n, qk::RangeMethod::kl(), t).scale);
  }
  // a different graph: names or shapes differ
  qk::GraphHash other;
  other.add("x").add(qk::Dims{8, 16}).add("relu1").add(qk::Dims{8, 16}).add("logits").add(qk::Dims{8, 11});
  CHECK(other.hex() != m.hash());
  CHECK_THROWS_WITH_AS(qk::load_profile(pa, other.hex()), doctest::Contains(("recorded from graph " + m.hash()).c_str()), qk::Error);
  CHECK_THROWS_WITH_AS(qk::load_profile(pa, other.hex()), doctest::Contains(("this graph is " + other.hex()).c_str()), qk::Error);
  qk::Profile foreign(other.hex());
  CHECK_THROWS_WITH_AS(reduced.merge(foreign), doctest::Contains("profile shard: recorded from graph"), qk::Error);
  CHECK_THROWS_WITH_AS(qk::load_profile(temp_path("does_not_exist.json"), m.hash()), doctest::Contains("cannot open"), qk::Error);
  {
    std::ofstream(temp_path("garbage.json")) << "{not json";
  }
  CHECK_THROWS_WITH_AS(qk::load_profile(temp_path("garbage.json"), m.hash()), doctest::Contains("is not valid JSON"), qk::Error);
  // nothing half-written: the temporary file is gone after a save
  std::ifstream tmp(pa + ".tmp");
  CHECK_FALSE(tmp.good());
  std::remove(pa.c_str());
  std::remove(pb.c_str());
  std::remove(temp_path("garbage.json").c_str());
}

TEST_CASE("GraphHash: order and boundaries matter") {
  CHECK(qk::GraphHash().add("ab").add("c").hex() != qk::GraphHash().add("a").add("bc").hex());
  CHECK(qk::GraphHash().add("a").add("b").hex() != qk::GraphHash().add("b").add("a").hex());
  CHECK(qk::GraphHash().add("a").hex() == qk::GraphHash().add(std::string("a")).hex());
  CHECK(qk::GraphHash().hex() == "fnv1a64:cbf29ce484222325");
}

}  // namespace test_calibration
