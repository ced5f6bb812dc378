// KL (TensorRT entropy) and percentile calibration against independent implementations:
//  - tests/golden/observers_reference.json (tools/golden/gen_torch_observers.py): plain
//    numpy/scipy code — the grid histogram, the uniform-in-bin model, its quantiles, the
//    resampled |x| histogram and pytorch-quantization's published _compute_amax_entropy;
//  - a deliberately naive C++ re-implementation of the entropy algorithm below;
//  - the raw data's order statistics (a histogram quantile lies within one bin width of the
//    order statistic it stands for).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <quantkit/quantkit.hpp>

#include "support/golden.hpp"

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_observer_reference {

namespace qk = quantkit;
namespace qt = quantkit_test;
using nlohmann::json;

namespace {

std::vector<unsigned char> decode_base64(const std::string& b64) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<unsigned char> bytes;
  unsigned acc = 0;
  int bits = 0;
  for (char c : b64) {
    const int v = val(c);
    if (v < 0) continue;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<unsigned char>((acc >> bits) & 0xffu));
    }
  }
  return bytes;
}
template <class T>
std::vector<T> decode(const std::string& b64) {
  const auto bytes = decode_base64(b64);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

const json& reference() {
  static const json doc = qt::load_golden("observers_reference.json");
  return doc;
}

std::map<std::string, std::vector<float>> datasets() {
  std::map<std::string, std::vector<float>> out;
  for (const auto& d : reference().at("datasets"))
    out[d.at("name").get<std::string>()] = decode<float>(d.at("data").get<std::string>());
  return out;
}

qk::StatisticsObserver observe_all(const std::vector<float>& x, int bins) {
  qk::StatisticsObserver::Options o;
  o.bins = bins;
  qk::StatisticsObserver obs({}, o);
  obs.observe(qk::as_tensor(x));
  return obs;
}

qk::QuantTarget int8_symmetric() {
  qk::QuantTarget t;
  t.range = qk::IntRange{-128, 127};
  t.symmetry = qk::SymmetryKind::symmetric;
  return t;
}

// pytorch-quantization's entropy algorithm, written as plainly as possible (no shared code).
std::int64_t naive_entropy_bin(std::vector<double> bins, std::int64_t levels, std::int64_t start,
                               bool zero_fix) {
  if (zero_fix) bins[0] = bins[1];
  const auto n = static_cast<std::int64_t>(bins.size());
  std::int64_t best_i = -1;
  double best = std::numeric_limits<double>::infinity();
  for (std::int64_t i = start; i <= n; ++i) {
    std::vector<double> p(bins.begin(), bins.begin() + i);
    for (std::int64_t k = i; k < n; ++k) p[static_cast<std::size_t>(i - 1)] += bins[static_cast<std::size_t>(k)];
    // group g holds the bins k with floor(k * levels / i) == g; each group's nonzero bins share
    // its mean (sums in increasing k, as a loop per group would add them)
    std::vector<double> q(static_cast<std::size_t>(i), 0.0), sum(static_cast<std::size_t>(levels), 0.0);
    std::vector<int> nonzero(static_cast<std::size_t>(levels), 0);
    for (std::int64_t k = 0; k < i; ++k)
      if (bins[static_cast<std::size_t>(k)] != 0.0) {
        sum[static_cast<std::size_t>(k * levels / i)] += bins[static_cast<std::size_t>(k)];
        ++nonzero[static_cast<std::size_t>(k * levels / i)];
      }
    for (std::int64_t k = 0; k < i; ++k)
      if (bins[static_cast<std::size_t>(k)] != 0.0)
        q[static_cast<std::size_t>(k)] = sum[static_cast<std::size_t>(k * levels / i)] /
                                         nonzero[static_cast<std::size_t>(k * levels / i)];
    double sp = 0.0, sq = 0.0;
    for (auto v : p) sp += v;
    for (auto v : q) sq += v;
    double kl = 0.0;
    for (std::size_t k = 0; k < p.size(); ++k) {
      if (p[k] == 0.0) continue;
      if (q[k] == 0.0) {
        kl = std::numeric_limits<double>::infinity();
        break;
      }
      kl += (p[k] / sp) * std::log((p[k] / sp) / (q[k] / sq));
    }
    if (kl <= best) {
      best = kl;
      best_i = i;
    }
  }
  return best_i;
}

}  // namespace

TEST_CASE("percentile: the histogram model's quantiles equal the numpy reference; within a bin of the data's") {
  const auto data = datasets();
  const int bins = reference().at("grid").at("bins").get<int>();
  std::map<std::string, qk::StatisticsObserver> obs;
  for (const auto& [name, x] : data) obs.emplace(name, observe_all(x, bins));
  int cases = 0;
  double worst_ref = 0.0, worst_raw_bins = 0.0;
  for (const auto& c : reference().at("percentile")) {
    const std::string ds = c.at("dataset").get<std::string>();
    const double p = c.at("p").get<double>();
    const bool abs = c.at("side") == "abs";
    const auto method = qk::RangeMethod::percentile_of(p, abs ? qk::PercentileSide::abs : qk::PercentileSide::two_sided);
    const qk::Range r = obs.at(ds).ranges(int8_symmetric(), method).at(0);
    const auto want = c.at("range").get<std::vector<double>>();
    const double w = c.at("bin_width").get<double>();
    INFO(ds, " p ", p, abs ? " abs" : " two-sided", ": quantkit [", r.min, ", ", r.max,
         "], reference [", want[0], ", ", want[1], "]");
    for (int e = 0; e < 2; ++e) {
      const double got = e == 0 ? r.min : r.max;
      const double err = std::fabs(got - want[static_cast<std::size_t>(e)]);
      worst_ref = std::max(worst_ref, err / std::max(1.0, std::fabs(want[static_cast<std::size_t>(e)])));
      CHECK(err <= 2e-7 * std::max(1.0, std::fabs(want[static_cast<std::size_t>(e)])));
    }
    // The data's own quantile: the ceil(q n)-th smallest value (of |x| for abs), +- one bin.
    std::vector<double> v;
    for (float x : data.at(ds)) v.push_back(abs ? std::fabs(static_cast<double>(x)) : x);
    std::sort(v.begin(), v.end());
    const double n = static_cast<double>(v.size());
    auto order_stat = [&](double q) {
      const auto k = static_cast<std::size_t>(std::max(1.0, std::ceil(q * n - 1e-9)));
      return v[std::min(k, v.size()) - 1];
    };
    if (abs) {
      const double t = order_stat(p);
      const double got = std::max(static_cast<double>(r.max), -static_cast<double>(r.min));
      worst_raw_bins = std::max(worst_raw_bins, std::fabs(got - t) / w);
      CHECK(std::fabs(got - t) <= w * 1.0001);
    } else {
      const double cut = (1.0 - p) / 2.0;
      const double lo = order_stat(cut), hi = order_stat(1.0 - cut);
      worst_raw_bins = std::max({worst_raw_bins, std::fabs(r.min - lo) / w, std::fabs(r.max - hi) / w});
      CHECK(std::fabs(r.min - lo) <= w * 1.0001);
      CHECK(std::fabs(r.max - hi) <= w * 1.0001);
    }
    ++cases;
  }
  CHECK(cases == 60);
  MESSAGE("percentile: ", cases, " cases; max relative difference to the numpy reference ", worst_ref,
          "; max distance to the data's order statistic ", worst_raw_bins, " bin widths");
}

TEST_CASE("KL: entropy_threshold_bin equals pytorch-quantization's published algorithm (numpy/scipy)") {
  std::map<std::string, std::vector<double>> hists;
  for (const auto& [k, v] : reference().at("kl_histograms").items()) hists[k] = decode<double>(v.get<std::string>());
  int same = 0, near_tie = 0;
  for (const auto& c : reference().at("kl")) {
    const auto& h = hists.at(c.at("histogram").get<std::string>());
    REQUIRE(h.size() == 2048u);
    const auto levels = c.at("levels").get<std::int64_t>();
    const auto start = c.at("start_bin").get<std::int64_t>();
    const bool fix = c.at("zero_bin_fix").get<bool>();
    std::vector<double> div;
    const std::int64_t i = qk::methods::entropy_threshold_bin(h, levels, start, fix, &div);
    const auto want = c.at("bin").get<std::int64_t>();
    const double want_div = c.at("divergence").get<double>();
    INFO(c.at("histogram").get<std::string>(), " levels ", levels, fix ? " zero-bin fix" : "",
         ": quantkit bin ", i, " (KL ", div[static_cast<std::size_t>(i - start)], "), reference bin ",
         want, " (KL ", want_div, ")");
    // Same divergence at the reference's bin (summation order aside) ...
    CHECK(div[static_cast<std::size_t>(want - start)] == doctest::Approx(want_div).epsilon(1e-9));
    // ... and the same choice, or one whose divergence ties with it to 1e-12.
    if (i == want)
      ++same;
    else {
      ++near_tie;
      CHECK(std::fabs(div[static_cast<std::size_t>(i - start)] - want_div) <= 1e-12 * std::max(1.0, want_div));
    }
    CHECK(naive_entropy_bin(h, levels, start, fix) == i);
  }
  CHECK(same + near_tie == 18);
  MESSAGE("KL: ", same, " cases pick the reference's bin, ", near_tie, " a tie within 1e-12");
}

TEST_CASE("KL: the observer's resampled |x| histogram and threshold match the reference") {
  const auto data = datasets();
  const int bins = reference().at("grid").at("bins").get<int>();
  std::map<std::string, std::vector<double>> hists;
  for (const auto& [k, v] : reference().at("kl_histograms").items()) hists[k] = decode<double>(v.get<std::string>());
  int cases = 0;
  for (const auto& c : reference().at("kl")) {
    if (!c.contains("dataset")) continue;
    const std::string ds = c.at("dataset").get<std::string>();
    const auto obs = observe_all(data.at(ds), bins);
    const qk::methods::Density d = qk::methods::density_of(obs.state().at(0));
    CHECK(static_cast<double>(d.amax()) == c.at("amax").get<double>());
    const auto h = qk::methods::resample(qk::methods::folded(d), d.amax(), 2048);
    const auto& want = hists.at(ds);
    double worst = 0.0;
    for (std::size_t k = 0; k < h.size(); ++k) worst = std::max(worst, std::fabs(h[k] - want[k]));
    INFO(ds, ": max bin difference ", worst);
    CHECK(worst <= 1e-9);
    qk::RangeMethod m = qk::RangeMethod::kl();
    m.kl_levels = c.at("levels").get<int>();
    m.kl_zero_bin_fix = c.at("zero_bin_fix").get<bool>();
    const qk::Range r = obs.ranges(int8_symmetric(), m).at(0);
    const double t = c.at("threshold").get<double>();
    const double lo0 = std::min(0.0f, obs.state()[0].min()), hi0 = std::max(0.0f, obs.state()[0].max());
    CHECK(r.max == static_cast<float>(std::min(hi0, t)));
    CHECK(r.min == static_cast<float>(std::max(lo0, -t)));
    ++cases;
  }
  CHECK(cases == 9);
}

TEST_CASE("KL: naive re-implementation agrees on random histograms (zeros, spikes, levels 8..256)") {
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 12; ++trial) {
    const int n = 300 + 97 * trial;
    std::vector<double> h(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
      const double x = static_cast<double>(k) / n;
      h[static_cast<std::size_t>(k)] = u(gen) < 0.15 ? 0.0 : std::floor(1000.0 * std::exp(-x * (2 + trial)) * u(gen));
    }
    if (trial % 3 == 0) h[0] = 50000.0;
    const std::int64_t levels = std::int64_t{8} << (trial % 6);  // 8 .. 256
    const std::int64_t start = std::min<std::int64_t>(128, n / 2);
    for (bool fix : {false, true}) {
      INFO("trial ", trial, " bins ", n, " levels ", levels, fix ? " fix" : "");
      CHECK(qk::methods::entropy_threshold_bin(h, levels, start, fix) == naive_entropy_bin(h, levels, start, fix));
    }
  }
}

TEST_CASE("KL: errors for impossible parameters") {
  std::vector<double> h(100, 1.0);
  CHECK_THROWS_AS(qk::methods::entropy_threshold_bin(h, 128, 101, false), qk::Error);
  CHECK_THROWS_AS(qk::methods::entropy_threshold_bin(h, 0, 10, false), qk::Error);
  qk::RangeMethod m = qk::RangeMethod::kl();
  m.kl_start_bin = 4096;
  CHECK_THROWS_WITH_AS(m.validate("tensor 'x'"), doctest::Contains("expected 2 or more bins and 1 <= start bin <= bins"), qk::Error);
  CHECK_THROWS_WITH_AS(qk::RangeMethod::percentile_of(99.99).validate(), doctest::Contains("expected a fraction in (0, 1]"), qk::Error);
}

}  // namespace test_observer_reference
