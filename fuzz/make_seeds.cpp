// Writes the JSON seed corpora of fuzz_observer_json and fuzz_profile_json (fuzz/corpus/):
// every observer kind per tensor and per channel, calibration state and a small profile.
// Built and run by hand when the formats change:
//   c++ -std=c++17 -Iinclude -I/usr/include/hwy fuzz/make_seeds.cpp -o /tmp/make_seeds && /tmp/make_seeds fuzz/corpus
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <quantkit/calibration/json.hpp>
#include <quantkit/observer/json.hpp>
#include <quantkit/quantkit.hpp>

namespace qk = quantkit;

static std::vector<float> batch(unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(2 * 3 * 16);
  for (auto& v : x) v = nd(g);
  return x;
}

static void write(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump() << "\n"; }

template <class Obs>
void seeds(const std::string& dir, const std::string& kind, typename Obs::Options opt = {}) {
  for (int per_channel = 0; per_channel < 2; ++per_channel) {
    qk::ObserverConfig cfg;
    cfg.name = "t";
    if (per_channel) cfg.granularity = qk::Granularity::per_channel(1);
    Obs o(cfg, opt);
    for (unsigned s = 0; s < 2; ++s) o.observe(qk::with_shape(batch(s), {2, 3, 16}));
    write(dir + "/fuzz_observer_json/" + kind + (per_channel ? "_pc" : "_pt") + ".json", qk::observer_to_json(o));
    qk::Calibration<Obs> cal(cfg, opt);
    cal.observe("a", qk::with_shape(batch(5), {2, 3, 16}));
    write(dir + "/fuzz_profile_json/calibration_" + kind + (per_channel ? "_pc" : "_pt") + ".json",
          qk::calibration_to_json(cal));
  }
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "fuzz/corpus";
  qk::HistogramObserver::Options ho;
  ho.bins = 16;
  qk::PercentileObserver::Options po;
  po.bins = 16;
  qk::MseObserver::Options mo;
  mo.bins = 16;
  qk::KlObserver::Options ko;
  ko.bins = 32;
  seeds<qk::MinMaxObserver>(dir, "minmax");
  seeds<qk::MovingAverageMinMaxObserver>(dir, "moving_average");
  seeds<qk::HistogramObserver>(dir, "histogram", ho);
  seeds<qk::PercentileObserver>(dir, "percentile", po);
  seeds<qk::MseObserver>(dir, "mse", mo);
  seeds<qk::KlObserver>(dir, "kl", ko);
  qk::Profile p("0123abcd", 16);
  p.observe("x", qk::with_shape(batch(1), {2, 3, 16}));
  p.observe("y", qk::with_shape(batch(2), {2, 3, 16}));
  write(dir + "/fuzz_profile_json/profile.json", qk::profile_to_json(p));
  return 0;
}
