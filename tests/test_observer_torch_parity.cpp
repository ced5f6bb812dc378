// Observers against PyTorch 1.13.1 on the same data (tests/golden/observers_torch.json,
// written by tools/golden/gen_torch_observers.py): after every batch the observer's state and
// the (scale, zero point) derived from it.
//   MinMaxObserver, PerChannelMinMaxObserver        -> quantkit::MinMaxObserver
//   MovingAverage[PerChannel]MinMaxObserver         -> quantkit::MovingAverageMinMaxObserver
//   HistogramObserver (stock 1.13.1)                -> HistogramObserver, Options::torch_1_13
//   HistogramObserver with float histc bounds       -> HistogramObserver (default options)
// Min-max kinds must agree bit for bit; HistogramObserver within 1e-6 relative on the scale and
// exactly on the zero point. Everything runs twice: with quantkit::simd's reductions (this
// program links the runtime-dispatched implementation) and with the observers' plain loops.
#include <quantkit/simd/simd.hpp>  // implementation: tests/support/simd_dispatch.cpp

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <quantkit/quantkit.hpp>

#include "support/golden.hpp"

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_observer_torch_parity {

namespace qk = quantkit;
namespace qt = quantkit_test;
using nlohmann::json;

namespace {

std::vector<float> decode_f32(const std::string& b64) {
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
    if (v < 0) continue;  // '=' padding
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<unsigned char>((acc >> bits) & 0xffu));
    }
  }
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

struct Dataset {
  std::string name;
  qk::Dims shape;
  std::vector<std::vector<float>> batches;
};

// QUANTKIT_OBSERVER_GOLDEN=<file in tests/golden> runs the same checks on a larger file made
// with gen_torch_observers.py --shape/--seed/--name (stress runs; not committed).
const json& golden() {
  static const json doc = [] {
    const char* alt = std::getenv("QUANTKIT_OBSERVER_GOLDEN");
    return qt::load_golden(alt ? alt : "observers_torch.json");
  }();
  return doc;
}
bool stress() { return std::getenv("QUANTKIT_OBSERVER_GOLDEN") != nullptr; }

const std::vector<Dataset>& datasets() {
  static const std::vector<Dataset> all = [] {
    std::vector<Dataset> out;
    for (const auto& d : golden().at("datasets")) {
      Dataset ds;
      ds.name = d.at("name").get<std::string>();
      const auto s = d.at("shape").get<std::vector<std::int64_t>>();
      ds.shape = qk::Dims::from(s.begin(), s.end());
      for (const auto& b : d.at("batches")) ds.batches.push_back(decode_f32(b.get<std::string>()));
      out.push_back(std::move(ds));
    }
    return out;
  }();
  return all;
}

const Dataset& dataset(const std::string& name) {
  for (const auto& d : datasets())
    if (d.name == name) return d;
  FAIL("no dataset " << name);
  throw 0;
}

qk::QuantTarget target_of(const json& c) {
  qk::QuantTarget t;
  const bool u8 = c.at("dtype") == "quint8";
  t.range = u8 ? qk::IntRange{0, 255} : qk::IntRange{-128, 127};
  const std::string qs = c.at("qscheme").get<std::string>();
  t.symmetry = qs.find("symmetric") != std::string::npos ? qk::SymmetryKind::symmetric
                                                         : qk::SymmetryKind::affine;
  t.convention = qk::ConventionKind::pytorch;
  return t;
}

qk::ObserverConfig config_of(const json& c) {
  qk::ObserverConfig cfg;
  if (!c.at("ch_axis").is_null()) cfg.granularity = qk::Granularity::per_channel(c.at("ch_axis").get<int>());
  cfg.name = c.at("dataset").get<std::string>() + "/" + c.at("observer").get<std::string>();
  return cfg;
}

std::string case_name(const json& c) {
  std::string n = c.at("dataset").get<std::string>() + " " + c.at("observer").get<std::string>() +
                  " " + c.at("dtype").get<std::string>() + " " + c.at("qscheme").get<std::string>();
  if (!c.at("ch_axis").is_null()) n += " axis " + std::to_string(c.at("ch_axis").get<int>());
  if (!c.at("histc_bounds").is_null()) n += " histc " + c.at("histc_bounds").get<std::string>();
  return n;
}

struct Stats {
  int cases = 0, checks = 0, mismatches = 0;
  double max_rel_scale = 0.0;
};

// Observes the case's batches with `obs`, comparing after each. exact: scale bits must match.
template <class Obs, class StateCheck>
void run_case(const json& c, Obs obs, bool exact, Stats& st, StateCheck&& check_state) {
  const Dataset& ds = dataset(c.at("dataset").get<std::string>());
  const qk::QuantTarget t = target_of(c);
  const auto& after = c.at("after");
  const std::string name = case_name(c);
  ++st.cases;
  for (std::size_t k = 0; k < after.size(); ++k) {
    obs.observe(qk::View<const float>(ds.batches[k].data(), ds.shape));
    const json& a = after[k];
    check_state(obs, a, name + " after " + std::to_string(k + 1));
    const auto ranges = obs.ranges(t);
    const qk::QuantParams p = qk::compute_qparams(ranges, obs.config().granularity, t.range,
                                                  t.symmetry, t.convention);
    const auto want_s = qt::f32_vector(a.at("scale"));
    const auto want_z = qt::int_vector<std::int32_t>(a.at("zero_point"));
    REQUIRE(p.size() == want_s.size());
    for (std::size_t i = 0; i < p.size(); ++i) {
      ++st.checks;
      const double rel = std::fabs(static_cast<double>(p.scale[i]) - want_s[i]) / want_s[i];
      st.max_rel_scale = std::max(st.max_rel_scale, rel);
      const bool ok = exact ? (qt::float_bits(p.scale[i]) == qt::float_bits(want_s[i]))
                            : rel <= 1e-6;
      if (ok && p.zero_point[i] == want_z[i]) continue;
      ++st.mismatches;
      INFO(name, " after ", k + 1, " batches, param ", i, ": quantkit (", qt::show(p.scale[i]),
           ", ", p.zero_point[i], ") range [", ranges[i].min, ", ", ranges[i].max,
           "], PyTorch (", qt::show(want_s[i]), ", ", want_z[i], ")");
      CHECK(ok);
      CHECK(p.zero_point[i] == want_z[i]);
    }
  }
}

void check_ranges(const std::vector<qk::Range>& got, const json& a, const std::string& where) {
  const auto mn = qt::f32_vector(a.at("min"));
  const auto mx = qt::f32_vector(a.at("max"));
  REQUIRE(got.size() == mn.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(where, " slot ", i, ": quantkit [", qt::show(got[i].min), ", ", qt::show(got[i].max),
         "], PyTorch [", qt::show(mn[i]), ", ", qt::show(mx[i]), "]");
    CHECK(qt::float_bits(got[i].min) == qt::float_bits(mn[i]));
    CHECK(qt::float_bits(got[i].max) == qt::float_bits(mx[i]));
  }
}

}  // namespace

TEST_CASE("MinMaxObserver and PerChannelMinMaxObserver: bit-identical to PyTorch") {
  for (bool plain : {false, true}) {
  qk::detail::kernels::plain_reductions_only() = plain;
  Stats st;
  for (const auto& c : golden().at("cases")) {
    const std::string o = c.at("observer").get<std::string>();
    if (o != "MinMaxObserver" && o != "PerChannelMinMaxObserver") continue;
    run_case(c, qk::MinMaxObserver(config_of(c)), true, st,
             [](const qk::MinMaxObserver& obs, const json& a, const std::string& w) {
               check_ranges(obs.state(), a, w);
             });
  }
  if (!stress()) CHECK(st.cases == 7 * 4 + 5 * 12);
  CHECK(st.mismatches == 0);
  MESSAGE("min-max (", std::string(plain ? "plain loops" : qk::simd::active_kernels().name), "): ", st.cases,
          " cases, ", st.checks, " (scale, zp) checks, max relative scale error ", st.max_rel_scale);
  }
  qk::detail::kernels::plain_reductions_only() = false;
}

TEST_CASE("MovingAverageMinMaxObserver (per tensor and per channel): bit-identical to PyTorch") {
  for (bool plain : {false, true}) {
  qk::detail::kernels::plain_reductions_only() = plain;
  Stats st;
  for (const auto& c : golden().at("cases")) {
    const std::string o = c.at("observer").get<std::string>();
    if (o.find("MovingAverage") == std::string::npos) continue;
    qk::MovingAverageMinMaxObserver::Options opt;
    opt.averaging_constant = c.at("averaging_constant").get<double>();
    run_case(c, qk::MovingAverageMinMaxObserver(config_of(c), opt), true, st,
             [](const qk::MovingAverageMinMaxObserver& obs, const json& a, const std::string& w) {
               std::vector<qk::Range> r;
               for (const auto& s : obs.state()) r.push_back(s.average);
               check_ranges(r, a, w);
             });
  }
  if (!stress()) CHECK(st.cases == 7 * 4 + 5 * 12);
  CHECK(st.mismatches == 0);
  MESSAGE("moving average (", std::string(plain ? "plain loops" : qk::simd::active_kernels().name), "): ",
          st.cases, " cases, ", st.checks, " (scale, zp) checks, max relative scale error ",
          st.max_rel_scale);
  }
  qk::detail::kernels::plain_reductions_only() = false;
}

TEST_CASE("HistogramObserver: PyTorch's L2 search and re-binning, both histc bound modes") {
  for (bool plain : {false, true})
  for (const std::string mode : {"torch_1_13", "float"}) {
    qk::detail::kernels::plain_reductions_only() = plain;
    Stats st;
    int hist_bins_off = 0;
    double max_hist_diff = 0.0;
    for (const auto& c : golden().at("cases")) {
      if (c.at("observer") != "HistogramObserver" || c.at("histc_bounds") != mode) continue;
      qk::HistogramObserver::Options opt;
      opt.torch_1_13 = mode == "torch_1_13";
      run_case(c, qk::HistogramObserver(config_of(c), opt), false, st,
               [&](const qk::HistogramObserver& obs, const json& a, const std::string& w) {
                 const auto& s = obs.state().at(0);
                 check_ranges({qk::Range{s.min, s.max}}, a, w);
                 if (!a.contains("histogram")) return;
                 const auto h = decode_f32(a.at("histogram").get<std::string>());
                 REQUIRE(h.size() == s.histogram.size());
                 for (std::size_t i = 0; i < h.size(); ++i) {
                   const double d = std::fabs(static_cast<double>(h[i]) - s.histogram[i]);
                   max_hist_diff = std::max(max_hist_diff, d);
                   if (d > 1e-3 * std::max(1.0, std::fabs(static_cast<double>(h[i])))) {
                     if (++hist_bins_off <= 5)
                       MESSAGE(w, " bin ", i, ": quantkit ", s.histogram[i], ", PyTorch ", h[i]);
                   }
                 }
               });
    }
    if (!stress()) CHECK(st.cases == 7 * 4);
    CHECK(hist_bins_off == 0);
    CHECK(st.mismatches == 0);
    MESSAGE("histogram (histc ", mode, ", ", std::string(plain ? "plain loops" : qk::simd::active_kernels().name), "): ", st.cases, " cases, ", st.checks,
            " (scale, zp) checks, max relative scale error ", st.max_rel_scale,
            ", max histogram count difference ", max_hist_diff);
  }
  qk::detail::kernels::plain_reductions_only() = false;
}

}  // namespace test_observer_torch_parity
