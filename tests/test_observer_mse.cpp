// MSE clipping and the quantization-error integrals behind it (and behind auto's similarity):
//  - quantization_moments() on a histogram density against numerical integration of the scalar
//    reference's fake-quantization (ref::quantize_value / dequantize_value), every rounding mode;
//  - MseObserver's range against a brute-force search over the raw data with
//    ref::fake_quantize: the chosen range's real MSE is within 2% of the best found.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <quantkit/quantkit.hpp>

namespace qk = quantkit;

namespace {

qk::QuantTarget target(qk::IntRange r, qk::SymmetryKind s,
                       qk::RoundingMode m = qk::RoundingMode::half_even,
                       qk::ConventionKind c = qk::ConventionKind::pytorch) {
  qk::QuantTarget t;
  t.range = r;
  t.symmetry = s;
  t.rounding = m;
  t.convention = c;
  return t;
}

// Fake-quantization of one value by the scalar reference.
double fake(double x, const qk::ScaleZeroPoint& sz, qk::IntRange r, qk::RoundingMode mode) {
  return qk::visit_rounding(mode, [&](auto rounding) {
    const std::int32_t q = qk::ref::quantize_value(static_cast<float>(x), sz.scale,
                                                   qk::ScaleApplicationKind::divide, sz.zero_point, r, rounding);
    return static_cast<double>(qk::ref::dequantize_value(q, sz.scale, sz.zero_point));
  });
}

// Raw-data MSE of quantizing x with the parameters of range [lo, hi].
double raw_mse(const std::vector<float>& x, qk::Range range, const qk::QuantTarget& t) {
  const auto p = qk::compute_qparams({range}, qk::Granularity::per_tensor(), t.range, t.symmetry, t.convention);
  std::vector<float> y(x.size());
  qk::visit_rounding(t.rounding, [&](auto rounding) {
    qk::ref::fake_quantize(qk::as_tensor(x), p, qk::as_tensor(y), rounding);
    return 0;
  });
  double s = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) s += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
  return s / static_cast<double>(x.size());
}

std::vector<float> dataset(const std::string& kind, std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::vector<float> x(n);
  if (kind == "normal_outliers") {
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (auto& v : x) v = d(g);
    x[3] = 14.0f;
    x[7] = -9.0f;
    x[11] = 11.0f;
  } else if (kind == "laplace") {
    std::exponential_distribution<float> e(1.0f);
    std::bernoulli_distribution s(0.5);
    for (auto& v : x) v = (s(g) ? 1.0f : -1.0f) * e(g) * 0.8f + 0.3f;
  } else if (kind == "relu") {
    std::normal_distribution<float> d(0.2f, 1.0f);
    for (auto& v : x) v = std::max(0.0f, d(g));
  } else if (kind == "uniform") {
    std::uniform_real_distribution<float> d(-2.0f, 5.0f);
    for (auto& v : x) v = d(g);
  } else if (kind == "lognormal") {
    std::lognormal_distribution<float> d(0.0f, 0.9f);
    for (auto& v : x) v = d(g);
  }
  return x;
}

}  // namespace

TEST_CASE("quantization_moments integrates the reference fake-quantization exactly (every rounding)") {
  // A hand-made density: pieces of different widths, a point mass, data beyond the clip range.
  qk::methods::Density d;
  d.pieces = {{-3.0, -2.5, 10.0}, {-1.0, -0.2, 40.0}, {-0.2, 0.0, 25.0}, {0.0, 0.37, 60.0},
              {0.5, 0.5, 7.0},   {0.9, 1.7, 30.0},   {2.2, 4.1, 12.0}};
  d.min = -3.0f;
  d.max = 4.1f;
  for (const auto& p : d.pieces) d.total += p.count;
  const qk::RoundingMode modes[] = {qk::RoundingMode::half_even, qk::RoundingMode::half_away,
                                    qk::RoundingMode::half_up, qk::RoundingMode::floor,
                                    qk::RoundingMode::toward_zero};
  const qk::Range ranges[] = {{-3.0f, 4.1f}, {-1.0f, 1.0f}, {-0.6f, 2.0f}, {0.0f, 0.8f}};
  const qk::IntRange formats[] = {{-128, 127}, {0, 15}, {-8, 7}, {0, 255}};
  int checks = 0;
  for (qk::RoundingMode mode : modes)
    for (const auto& r : ranges)
      for (const auto& f : formats)
        for (auto sym : {qk::SymmetryKind::affine, qk::SymmetryKind::symmetric}) {
          const auto t = target(f, sym, mode);
          const auto g = qk::methods::quant_grid(r, t);
          const auto m = qk::methods::quantization_moments(d, g);
          const auto sz = qk::compute_qparams(r.min, r.max, f, sym, t.convention);
          const qk::IntRange er = qk::effective_range(f, sym);
          // midpoint rule, 20000 samples per piece
          double err = 0.0, xq = 0.0, qq = 0.0, xx = 0.0;
          for (const auto& p : d.pieces) {
            if (p.hi == p.lo) {
              const double q = fake(p.lo, sz, er, mode);
              err += p.count * (p.lo - q) * (p.lo - q);
              xq += p.count * p.lo * q;
              qq += p.count * q * q;
              xx += p.count * p.lo * p.lo;
              continue;
            }
            const int n = 20000;
            const double w = (p.hi - p.lo) / n, c = p.count / n;
            for (int i = 0; i < n; ++i) {
              const double x = p.lo + (i + 0.5) * w;
              const double q = fake(x, sz, er, mode);
              err += c * (x - q) * (x - q);
              xq += c * x * q;
              qq += c * q * q;
              xx += c * x * x;
            }
          }
          INFO(qk::to_string(mode), " range [", r.min, ", ", r.max, "] format [", f.qmin, ", ", f.qmax,
               "] ", qk::to_string(sym), ": integral ", m.err, ", sampled ", err);
          CHECK(m.err == doctest::Approx(err).epsilon(2e-3));
          CHECK(m.xq == doctest::Approx(xq).epsilon(1e-4));
          CHECK(m.qq == doctest::Approx(qq).epsilon(1e-4));
          CHECK(m.xx == doctest::Approx(xx).epsilon(1e-6));
          ++checks;
        }
  CHECK(checks == 5 * 4 * 4 * 2);
}

TEST_CASE("quantization_moments: stochastic rounding's expected error") {
  qk::methods::Density d;
  d.pieces = {{-1.3, 0.4, 50.0}, {0.7, 0.7, 5.0}, {1.2, 2.6, 20.0}};
  d.min = -1.3f;
  d.max = 2.6f;
  for (const auto& p : d.pieces) d.total += p.count;
  const auto t = target({-8, 7}, qk::SymmetryKind::affine, qk::RoundingMode::stochastic);
  const qk::Range r{-1.0f, 2.0f};  // data beyond it is clamped (deterministically)
  const auto g = qk::methods::quant_grid(r, t);
  const auto m = qk::methods::quantization_moments(d, g);
  // E[(x - q)^2] for x between grid values a < b is (x - a)(b - x); outside, the clamp.
  const auto sz = qk::compute_qparams(r.min, r.max, t.range, t.symmetry, t.convention);
  auto expected = [&](double x) {
    const double vmin = (t.range.qmin - sz.zero_point) * static_cast<double>(sz.scale);
    const double vmax = (t.range.qmax - sz.zero_point) * static_cast<double>(sz.scale);
    if (x <= vmin) return (x - vmin) * (x - vmin);
    if (x >= vmax) return (x - vmax) * (x - vmax);
    const double k = std::floor(x / sz.scale);
    const double a = k * sz.scale, b = a + sz.scale;
    return (x - a) * (b - x);
  };
  double err = 0.0;
  for (const auto& p : d.pieces) {
    if (p.hi == p.lo) {
      err += p.count * expected(p.lo);
      continue;
    }
    const int n = 50000;
    for (int i = 0; i < n; ++i) err += p.count / n * expected(p.lo + (i + 0.5) * (p.hi - p.lo) / n);
  }
  CHECK(m.err == doctest::Approx(err).epsilon(1e-3));
  // Inside the grid stochastic rounding is unbiased: E[q^2] = x^2 + E[(x - q)^2].
  const auto inside = qk::methods::quantization_moments(d, qk::methods::quant_grid({-1.3f, 2.6f}, t));
  CHECK(inside.qq == doctest::Approx(inside.xx + inside.err).epsilon(1e-9));
  CHECK(inside.xq == doctest::Approx(inside.xx).epsilon(1e-12));
}

TEST_CASE("MseObserver: the range's real MSE is within 2% of a brute-force search on the raw data") {
  struct Case {
    const char* data;
    qk::IntRange range;
    qk::SymmetryKind sym;
    qk::RoundingMode mode;
  };
  const Case cases[] = {
      {"normal_outliers", {-128, 127}, qk::SymmetryKind::symmetric, qk::RoundingMode::half_even},
      {"normal_outliers", {0, 255}, qk::SymmetryKind::affine, qk::RoundingMode::half_even},
      {"normal_outliers", {-8, 7}, qk::SymmetryKind::symmetric_restricted, qk::RoundingMode::half_away},
      {"laplace", {-8, 7}, qk::SymmetryKind::affine, qk::RoundingMode::half_even},
      {"laplace", {-128, 127}, qk::SymmetryKind::symmetric, qk::RoundingMode::floor},
      {"relu", {0, 255}, qk::SymmetryKind::affine, qk::RoundingMode::half_even},
      {"relu", {0, 15}, qk::SymmetryKind::affine, qk::RoundingMode::toward_zero},
      {"uniform", {-8, 7}, qk::SymmetryKind::affine, qk::RoundingMode::half_even},
      {"lognormal", {-128, 127}, qk::SymmetryKind::symmetric, qk::RoundingMode::half_even},
      {"lognormal", {0, 15}, qk::SymmetryKind::affine, qk::RoundingMode::half_up},
  };
  double worst = 0.0;
  for (const auto& c : cases) {
    const auto x = dataset(c.data, 6000, 17);
    const auto t = target(c.range, c.sym, c.mode);
    qk::MseObserver obs;
    obs.observe(qk::as_tensor(x));
    const qk::Range r = obs.ranges(t).at(0);
    const double mine = raw_mse(x, r, t);
    // brute force
    const float mn = *std::min_element(x.begin(), x.end()), mx = *std::max_element(x.begin(), x.end());
    double best = std::numeric_limits<double>::infinity();
    if (c.sym != qk::SymmetryKind::affine) {
      const double amax = std::max(-static_cast<double>(mn), static_cast<double>(mx));
      for (int k = 1; k <= 1500; ++k) {
        const double th = amax * k / 1500;
        best = std::min(best, raw_mse(x, {std::max(std::min(mn, 0.0f), static_cast<float>(-th)),
                                          std::min(std::max(mx, 0.0f), static_cast<float>(th))}, t));
      }
    } else {
      const double neg = std::min(0.0f, mn), pos = std::max(0.0f, mx);
      const int ka = neg < 0.0 ? 60 : 1;
      for (int a = 1; a <= ka; ++a)
        for (int b = 1; b <= 60; ++b) {
          const double fa = neg < 0.0 ? static_cast<double>(a) / ka : 1.0;
          best = std::min(best, raw_mse(x, {static_cast<float>(neg * fa), static_cast<float>(pos * b / 60.0)}, t));
        }
    }
    const double ratio = mine / best;
    worst = std::max(worst, ratio);
    INFO(c.data, " [", c.range.qmin, ", ", c.range.qmax, "] ", qk::to_string(c.sym), " ",
         qk::to_string(c.mode), ": range [", r.min, ", ", r.max, "] MSE ", mine, ", brute force ", best);
    CHECK(mine <= best * 1.02);
    // clipping never widens the range and always helps versus min-max here
    CHECK(r.min >= std::min(mn, 0.0f));
    CHECK(r.max <= std::max(mx, 0.0f));
    CHECK(mine <= raw_mse(x, {mn, mx}, t) * 1.0000001);
  }
  MESSAGE("MSE clipping: worst ratio to the brute-force best ", worst);
}

TEST_CASE("MseObserver: per channel on any axis, each channel its own search") {
  // [2, 3, 40]: channel c of axis 1 has scale (c + 1) and an outlier
  std::vector<float> x(2 * 3 * 40);
  std::mt19937 g(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = nd(g) * static_cast<float>((i / 40) % 3 + 1);
  x[5] = 30.0f;
  qk::ObserverConfig cfg;
  cfg.granularity = qk::Granularity::per_channel(1);
  qk::MseObserver obs(cfg);
  obs.observe(qk::with_shape(x, {2, 3, 40}));
  const auto t = target({-128, 127}, qk::SymmetryKind::symmetric);
  const auto r = obs.ranges(t);
  REQUIRE(r.size() == 3u);
  for (int c = 0; c < 3; ++c) {
    std::vector<float> xc;
    for (int o = 0; o < 2; ++o)
      for (int k = 0; k < 40; ++k) xc.push_back(x[static_cast<std::size_t>((o * 3 + c) * 40 + k)]);
    qk::MseObserver one;
    one.observe(qk::as_tensor(xc));
    CHECK(one.ranges(t).at(0) == r[static_cast<std::size_t>(c)]);
  }
  CHECK_FALSE(r[0] == r[1]);
  CHECK_FALSE(r[1] == r[2]);
}
