// Bad and degenerate input, for every observer kind:
//   all-zero tensors and channels give a finite, documented scale (float32 eps with the PyTorch
//   convention, 1.0 with the others — ncnn's tables got inf there); constant tensors; NaN/Inf
//   rejected with the tensor's name and the element's index (and the observer left as it was)
//   or skipped under IgnoreNonFinite; empty batches; channels that never saw a finite value;
//   changing channel counts; each observer plugged into a Quantizer through a Scheme.
// Batches go through quantkit::simd's reductions (this program links the runtime-dispatched
// implementation) and, in a second pass of each test, through the observers' plain loops.
#include <quantkit/simd/simd.hpp>  // implementation: tests/support/simd_dispatch.cpp

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <quantkit/quantkit.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_observer_bad_input {

namespace qk = quantkit;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

qk::QuantTarget target(qk::IntRange r, qk::SymmetryKind s, qk::ConventionKind c) {
  qk::QuantTarget t;
  t.range = r;
  t.symmetry = s;
  t.convention = c;
  return t;
}

template <class Obs>
Obs make(const std::string& name, qk::Granularity g = qk::Granularity::per_tensor(),
         qk::NonFiniteKind nf = qk::NonFiniteKind::reject) {
  qk::ObserverConfig c;
  c.name = name;
  c.granularity = g;
  c.nonfinite = nf;
  return Obs(c);
}

template <class F>
void for_each_kind_once(F&& f) {
  f(qk::MinMaxObserver());
  f(qk::MovingAverageMinMaxObserver());
  f(qk::HistogramObserver());
  f(qk::StatisticsObserver());
  f(qk::PercentileObserver());
  f(qk::KlObserver());
  f(qk::MseObserver());
  f(qk::AutoObserver());
}

// Runs f for every observer type, with the SIMD reductions and with the plain loops.
template <class F>
void for_each_kind(F&& f) {
  for (bool plain : {false, true}) {
    qk::detail::kernels::plain_reductions_only() = plain;
    for_each_kind_once(f);
  }
  qk::detail::kernels::plain_reductions_only() = false;
}

template <class Obs>
std::string kind() {
  return Obs::kind_name;
}

}  // namespace

TEST_CASE("all-zero tensor and all-zero channel: finite scale for every observer and convention") {
  std::vector<float> x(3 * 8, 0.0f);
  for (int i = 8; i < 16; ++i) x[static_cast<std::size_t>(i)] = 0.25f * static_cast<float>(i - 11);  // channel 1 has data
  for_each_kind([&](auto proto) {
    using Obs = decltype(proto);
    auto per_tensor = make<Obs>("zeros");
    std::vector<float> zeros(24, 0.0f);
    per_tensor.observe(qk::with_shape(zeros, {3, 8}));
    auto per_channel = make<Obs>("mixed", qk::Granularity::per_channel(0));
    per_channel.observe(qk::with_shape(x, {3, 8}));
    for (auto conv : {qk::ConventionKind::pytorch, qk::ConventionKind::onnxruntime, qk::ConventionKind::onnx,
                      qk::ConventionKind::tflite})
      for (auto sym : {qk::SymmetryKind::affine, qk::SymmetryKind::symmetric, qk::SymmetryKind::symmetric_restricted})
        for (qk::IntRange r : {qk::IntRange{-128, 127}, qk::IntRange{0, 255}, qk::IntRange{-8, 7}}) {
          if (sym == qk::SymmetryKind::symmetric_restricted && r.qmin == 0) continue;
          const auto t = target(r, sym, conv);
          INFO(kind<Obs>(), " ", qk::to_string(conv), " ", qk::to_string(sym), " [", r.qmin, ", ", r.qmax, "]");
          const auto rt = per_tensor.ranges(t);
          CHECK(rt.at(0) == qk::Range{0.0f, 0.0f});
          const auto pt = qk::compute_qparams(rt, qk::Granularity::per_tensor(), r, sym, conv, "zeros");
          pt.validate("zeros");
          const float documented = conv == qk::ConventionKind::pytorch ? std::numeric_limits<float>::epsilon() : 1.0f;
          CHECK(pt.scale[0] == documented);
          const auto rc = per_channel.ranges(t);
          const auto pc = qk::compute_qparams(rc, qk::Granularity::per_channel(0), r, sym, conv, "mixed");
          pc.validate("mixed");
          CHECK(pc.scale[0] == documented);
          CHECK(pc.scale[2] == documented);
          CHECK(std::isfinite(pc.scale[1]));
          CHECK(pc.scale[1] > documented * (conv == qk::ConventionKind::pytorch ? 1.0f : 0.0f));
        }
  });
}

TEST_CASE("constant tensor: every method gives [c, c]") {
  std::vector<float> x(50, -2.5f);
  const qk::RangeMethod methods[] = {qk::RangeMethod::minmax(), qk::RangeMethod::percentile_of(0.99),
                                     qk::RangeMethod::max_percentile(0.9), qk::RangeMethod::kl(),
                                     qk::RangeMethod::mse(), qk::RangeMethod::l2(), qk::RangeMethod::automatic()};
  qk::StatisticsObserver s;
  s.observe(qk::as_tensor(x));
  s.observe(qk::as_tensor(x));
  for (const auto& m : methods)
    for (auto sym : {qk::SymmetryKind::affine, qk::SymmetryKind::symmetric}) {
      INFO(m.to_string());
      CHECK(s.ranges(target({-128, 127}, sym, qk::ConventionKind::pytorch), m).at(0) == qk::Range{-2.5f, -2.5f});
    }
  for_each_kind([&](auto proto) {
    using Obs = decltype(proto);
    auto o = make<Obs>("const");
    o.observe(qk::as_tensor(x));
    o.observe(qk::as_tensor(x));
    INFO(kind<Obs>());
    CHECK(o.ranges(target({0, 255}, qk::SymmetryKind::affine, qk::ConventionKind::pytorch)).at(0) == qk::Range{-2.5f, -2.5f});
    const auto p = qk::compute_qparams(o.ranges(target({0, 255}, qk::SymmetryKind::affine, qk::ConventionKind::pytorch)),
                                       qk::Granularity::per_tensor(), {0, 255}, qk::SymmetryKind::affine,
                                       qk::ConventionKind::pytorch);
    CHECK(p.scale[0] == doctest::Approx(2.5 / 255.0));
    CHECK(p.zero_point[0] == 255);
  });
  // HistogramObserver: a constant first batch is kept (default) or dropped (torch_1_13 mode)
  std::vector<float> y = {1.0f, 2.0f, 3.0f, 4.0f};
  qk::HistogramObserver kept;
  kept.observe(qk::as_tensor(x));
  kept.observe(qk::as_tensor(y));
  float total = 0.0f;
  for (float c : kept.state()[0].histogram) total += c;
  CHECK(total == 54.0f);
  CHECK(kept.state()[0].min == -2.5f);
  qk::HistogramObserver::Options o113;
  o113.torch_1_13 = true;
  qk::HistogramObserver dropped({}, o113);
  dropped.observe(qk::as_tensor(x));
  dropped.observe(qk::as_tensor(y));
  CHECK(dropped.state()[0].min == 1.0f);
}

TEST_CASE("NaN/Inf: rejected naming the tensor and index, observer unchanged; or skipped") {
  std::vector<float> good = {0.5f, -1.0f, 2.0f, 3.0f, -0.25f, 1.5f};
  for (float bad_value : {kNaN, kInf, -kInf}) {
    std::vector<float> bad = good;
    bad[4] = bad_value;  // index [1, 1] in shape [2, 3]
    for_each_kind([&](auto proto) {
      using Obs = decltype(proto);
      INFO(kind<Obs>(), " with ", bad_value);
      auto o = make<Obs>("act7");
      o.observe(qk::with_shape(good, {2, 3}));
      const auto before = o.state();
      CHECK_THROWS_WITH_AS(o.observe(qk::with_shape(bad, {2, 3})), doctest::Contains("tensor 'act7': found"), qk::Error);
      CHECK_THROWS_WITH_AS(o.observe(qk::with_shape(bad, {2, 3})), doctest::Contains("at index [1, 1]"), qk::Error);
      CHECK(o.state().size() == before.size());
      auto fresh = make<Obs>("act7");
      fresh.observe(qk::with_shape(good, {2, 3}));
      const auto t = target({-128, 127}, qk::SymmetryKind::affine, qk::ConventionKind::pytorch);
      CHECK(o.ranges(t) == fresh.ranges(t));
      // per channel too
      auto pc = make<Obs>("act8", qk::Granularity::per_channel(1));
      CHECK_THROWS_WITH_AS(pc.observe(qk::with_shape(bad, {2, 3})), doctest::Contains("tensor 'act8': found"), qk::Error);
      CHECK(pc.empty());

      // IgnoreNonFinite: the same as never having seen the value
      auto ig = make<Obs>("act9", qk::Granularity::per_tensor(), qk::NonFiniteKind::ignore);
      ig.observe(qk::with_shape(bad, {2, 3}));
      std::vector<float> filtered = good;
      filtered.erase(filtered.begin() + 4);
      auto ref = make<Obs>("act9");
      ref.observe(qk::as_tensor(filtered));
      CHECK(ig.ranges(t) == ref.ranges(t));
    });
  }
}

TEST_CASE("empty batches, channels without finite values, changing channel counts") {
  for_each_kind([&](auto proto) {
    using Obs = decltype(proto);
    INFO(kind<Obs>());
    auto o = make<Obs>("feat", qk::Granularity::per_channel(0));
    std::vector<float> none;
    CHECK_THROWS_WITH_AS(o.observe(qk::with_shape(none, {0, 4})), doctest::Contains("tensor 'feat': empty batch (shape [0, 4])"), qk::Error);
    CHECK_THROWS_WITH_AS(o.ranges(), doctest::Contains("tensor 'feat': no data observed"), qk::Error);
    std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
    o.observe(qk::with_shape(x, {2, 3}));
    CHECK_THROWS_WITH_AS(o.observe(qk::with_shape(x, {3, 2})), doctest::Contains("has 3 channels/blocks for per-channel(axis 0); earlier batches had 2"), qk::Error);
    auto ig = make<Obs>("feat2", qk::Granularity::per_channel(0), qk::NonFiniteKind::ignore);
    std::vector<float> y = {1.0f, 2.0f, 3.0f, kNaN, kNaN, kInf};
    ig.observe(qk::with_shape(y, {2, 3}));
    CHECK_THROWS_WITH_AS(ig.ranges(), doctest::Contains("tensor 'feat2': channel/block 1 saw no finite value"), qk::Error);
  });
}

TEST_CASE("bad options are rejected when the observer is made") {
  qk::ObserverConfig c;
  c.name = "t";
  qk::MovingAverageMinMaxObserver::Options ma;
  ma.averaging_constant = 0.0;
  CHECK_THROWS_WITH_AS(qk::MovingAverageMinMaxObserver(c, ma), doctest::Contains("expected a value in (0, 1]"), qk::Error);
  qk::HistogramObserver::Options h;
  h.bins = 1;
  CHECK_THROWS_AS(qk::HistogramObserver(c, h), qk::Error);
  qk::PercentileObserver::Options p;
  p.method = qk::RangeMethod::percentile_of(1.5);
  CHECK_THROWS_WITH_AS(qk::PercentileObserver(c, p), doctest::Contains("tensor 't': percentile 1.5"), qk::Error);
  qk::AutoObserver::Options a;
  a.method = qk::RangeMethod::automatic(qk::SimilarityMetric::cosine, {qk::RangeMethod::automatic()});
  CHECK_THROWS_WITH_AS(qk::AutoObserver(c, a), doctest::Contains("cannot be a candidate of another"), qk::Error);
  qk::KlObserver::Options k;
  k.bins = 0;
  CHECK_THROWS_AS(qk::KlObserver(c, k), qk::Error);
}

namespace {
inline qk::PercentileObserver::Options p99995() {
  qk::PercentileObserver::Options o;
  o.method = qk::RangeMethod::max_percentile(0.99995);
  return o;
}
}  // namespace

TEST_CASE("every observer plugs into a Quantizer through a Scheme") {
  std::vector<float> x(400);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.37f) * (i % 50 == 0 ? 6.0f : 1.0f);
  auto run = [&](auto q) {
    q.observe(qk::with_shape(x, {4, 100}));
    q.observe(qk::with_shape(x, {4, 100}));
    const auto& p = q.params();
    p.validate();
    std::vector<std::int8_t> out(x.size());
    q.quantize(qk::with_shape(x, {4, 100}), qk::with_shape(out, {4, 100}));
    return p;
  };
  using qk::Int8;
  using qk::Symmetric;
  const auto p1 = run(qk::Quantizer<qk::Scheme<Int8, Symmetric, qk::MovingAverageMinMaxObserver>>("a"));
  const auto p2 = run(qk::Quantizer<qk::Scheme<Int8, Symmetric, qk::HistogramObserver>>("a"));
  const auto p3 = run(qk::Quantizer<qk::Scheme<Int8, Symmetric, qk::PercentileObserver>>("a"));
  const auto p4 = run(qk::Quantizer<qk::Scheme<Int8, Symmetric, qk::KlObserver>>("a"));
  const auto p5 = run(qk::Quantizer<qk::Scheme<Int8, Symmetric, qk::MseObserver>>("a"));
  const auto p6 = run(qk::Quantizer<qk::Scheme<Int8, Symmetric, qk::AutoObserver>>("a"));
  const auto p7 = run(qk::Quantizer<qk::Scheme<Int8, Symmetric, qk::PerChannel<0>, qk::KlObserver>>("w"));
  const auto p8 = run(qk::Quantizer<qk::Scheme<Int8, Symmetric, qk::Configured<qk::PercentileObserver, p99995>>>("a"));
  CHECK(p7.size() == 4u);
  const auto pmax = run(qk::Quantizer<qk::Scheme<Int8, Symmetric>>("a"));
  // clipping methods clip the outliers of this data; min-max does not
  CHECK(p3.scale[0] < pmax.scale[0]);
  CHECK(p5.scale[0] < pmax.scale[0]);
  CHECK(p8.scale[0] <= pmax.scale[0]);
  CHECK(p1.scale[0] == pmax.scale[0]);  // the same batch twice: the average is the range
  (void)p2;
  (void)p4;
  (void)p6;
}

TEST_CASE("NaN/Inf in large batches (vector kernels): the index, and skipping, per tensor and per channel") {
  std::vector<float> x(4 * 600);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(static_cast<float>(i) * 0.01f) * static_cast<float>(1 + i % 7);
  std::vector<float> bad = x;
  bad[1234] = kNaN;  // index [2, 34] in [4, 600]
  bad[2000] = -kInf;
  for_each_kind([&](auto proto) {
    using Obs = decltype(proto);
    INFO(kind<Obs>(), std::string(qk::detail::kernels::plain_reductions_only() ? " plain" : " simd"));
    auto o = make<Obs>("big");
    CHECK_THROWS_WITH_AS(o.observe(qk::with_shape(bad, {4, 600})), doctest::Contains("found nan at index [2, 34]"), qk::Error);
    auto pc = make<Obs>("big", qk::Granularity::per_channel(0));
    CHECK_THROWS_WITH_AS(pc.observe(qk::with_shape(bad, {4, 600})), doctest::Contains("found nan at index [2, 34]"), qk::Error);
    const auto t = target({-128, 127}, qk::SymmetryKind::affine, qk::ConventionKind::pytorch);
    // Channels along axis 1 of a [40, 60] view (the bad values at [20, 34] and [33, 20]): strided
    // channels without the 600 searches of [4, 600]'s columns (minutes under the sanitizers).
    for (auto g : {qk::Granularity::per_tensor(), qk::Granularity::per_channel(0), qk::Granularity::per_channel(1)}) {
      const qk::Dims shape = g.axis == 1 ? qk::Dims{40, 60} : qk::Dims{4, 600};
      auto ig = make<Obs>("big", g, qk::NonFiniteKind::ignore);
      ig.observe(qk::with_shape(bad, shape));
      std::vector<float> repaired = bad;  // the same data with the two values replaced by a finite one already present
      repaired[1234] = x[0];
      repaired[2000] = x[0];
      auto ref = make<Obs>("big", g);
      ref.observe(qk::with_shape(repaired, shape));
      // min-max: skipping a value equals replacing it by one inside the range
      if (g.kind == qk::GranularityKind::per_tensor && std::string(Obs::kind_name) == "minmax")
        CHECK(ig.ranges(t) == ref.ranges(t));
      CHECK_NOTHROW(ig.ranges(t));
    }
  });
}

// Ranges near the float limits. PyTorch's histogram search cubes bin offsets in float32, so
// past a width of ~7e12 (or below ~1e-16) its norms overflow (underflow) and the search narrows
// to one bin; histc's (v - lo) * bins overflows past ~1.7e35 and sends values to the last bin;
// a range wider than the largest float has no bins and no scale under the float conventions.
TEST_CASE("ranges near the float limits: exact scaling of the histogram search, clear errors past a float's width") {
  std::vector<float> d(600);
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = std::sin(static_cast<float>(i) * 0.37f) * (1.0f + static_cast<float>(i % 11) * 0.3f);
  d[5] = 9.0f;
  d[17] = -7.0f;
  const auto t = target({-128, 127}, qk::SymmetryKind::affine, qk::ConventionKind::pytorch);
  auto observe = [](qk::HistogramObserver& o, const std::vector<float>& v) {
    o.observe(qk::with_shape(v, {static_cast<std::int64_t>(v.size())}));
  };

  SUBCASE("the histogram observer's result scales with the data by powers of two, exactly") {
    for (bool plain : {false, true}) {
      qk::detail::kernels::plain_reductions_only() = plain;
      qk::HistogramObserver base;
      observe(base, d);
      const qk::Range rb = base.ranges(t).at(0);
      CHECK(rb.max - rb.min > 10.0f);  // the search keeps most of the range
      for (int p : {-100, -60, -40, 40, 60, 100}) {
        INFO("2^", p, plain ? " plain" : " simd");
        std::vector<float> s(d);
        for (float& v : s) v = std::ldexp(v, p);
        qk::HistogramObserver o;
        observe(o, s);
        CHECK(o.state().at(0).histogram == base.state().at(0).histogram);
        const qk::Range r = o.ranges(t).at(0);
        CHECK(r.min == std::ldexp(rb.min, p));  // PyTorch's arithmetic gives [-7, -6.99] past 2^43
        CHECK(r.max == std::ldexp(rb.max, p));
      }
      // Past (max - min) * bins > FLT_MAX histc bins in double: within a bin of the scaled result.
      std::vector<float> s(d);
      for (float& v : s) v = std::ldexp(v, 120);
      qk::HistogramObserver o;
      observe(o, s);
      const auto& h = o.state().at(0).histogram;
      double total = 0.0;
      for (float c : h) total += c;
      CHECK(total == 600.0);
      const qk::Range r = o.ranges(t).at(0);
      const double bin = std::ldexp(static_cast<double>(rb.max) - rb.min, 120) / 2048.0 * 2.0;
      CHECK(std::fabs(r.min - std::ldexp(static_cast<double>(rb.min), 120)) <= bin);
      CHECK(std::fabs(r.max - std::ldexp(static_cast<double>(rb.max), 120)) <= bin);
    }
    qk::detail::kernels::plain_reductions_only() = false;
  }

  SUBCASE("histc over a range too wide for float's (v - lo) * bins: middle values stay in the middle") {
    std::vector<float> v(100, 0.0f);
    v[0] = -1e36f;
    v[1] = 1e36f;
    qk::HistogramObserver o;
    observe(o, v);
    const auto& h = o.state().at(0).histogram;
    CHECK(h.front() == 1.0f);
    CHECK(h.back() == 1.0f);  // torch.histc's float formula puts all 99 non-minimum values here
    CHECK(h[1024] == 98.0f);
  }

  SUBCASE("a tiny first range, then a wide one: every count kept, no int64 overflow") {
    std::vector<float> tiny(100);
    for (std::size_t i = 0; i < tiny.size(); ++i) tiny[i] = 1e-20f * static_cast<float>(i) / 99.0f;
    qk::HistogramObserver o;
    observe(o, tiny);
    observe(o, d);  // PyTorch would upsample the old histogram by ~2^70
    double total = 0.0;
    for (float c : o.state().at(0).histogram) total += c;
    CHECK(total == 700.0);
    CHECK(o.state().at(0).min == -7.0f);
    CHECK(o.state().at(0).max >= 9.0f);
    const qk::Range r = o.ranges(t).at(0);
    CHECK(r.max - r.min > 10.0f);
    qk::HistogramObserver m;  // the same through merge
    observe(m, tiny);
    qk::HistogramObserver other;
    observe(other, d);
    m.merge(other);
    total = 0.0;
    for (float c : m.state().at(0).histogram) total += c;
    CHECK(total == doctest::Approx(700.0));
    for_each_kind_once([&](auto proto) {  // the grid histograms fold by ~2^200 here
      using Obs = decltype(proto);
      INFO(kind<Obs>());
      auto g = make<Obs>("grow");
      g.observe(qk::with_shape(tiny, {100}));
      g.observe(qk::with_shape(d, {600}));
      const qk::Range gr = g.ranges(t).at(0);
      CHECK(gr.min >= -7.0f);
      CHECK(gr.max <= 9.0f);
      CHECK(gr.max - gr.min > 0.1f);  // (the moving average moves 1 % of the way)
    });
  }

  SUBCASE("wider than the largest float: the histogram refuses it, qparams name the convention") {
    std::vector<float> v(d);
    v[3] = -3e38f;
    v[4] = 3e38f;
    for_each_kind([&](auto proto) {
      using Obs = decltype(proto);
      INFO(kind<Obs>(), std::string(qk::detail::kernels::plain_reductions_only() ? " plain" : " simd"));
      auto o = make<Obs>("huge");
      if (std::string(Obs::kind_name) == "histogram") {
        CHECK_THROWS_WITH_AS(o.observe(qk::with_shape(v, {600})),
                             doctest::Contains("tensor 'huge': histogram range would be [-3e+38, 3e+38], wider than the largest float32"),
                             qk::Error);
        CHECK(o.empty());
        return;
      }
      o.observe(qk::with_shape(v, {600}));
      const qk::Range r = o.ranges(t).at(0);
      if (std::isfinite(r.max - r.min)) {  // a clipping method (MSE ranks unusable candidates last)
        CHECK(std::isfinite(qk::compute_qparams(r.min, r.max, t.range, t.symmetry, t.convention, "huge").scale));
        return;
      }
      for (auto conv : {qk::ConventionKind::pytorch, qk::ConventionKind::onnxruntime, qk::ConventionKind::onnx}) {
        const std::string want = "] gives scale inf under the " + std::string(qk::to_string(conv)) + " convention";
        CHECK_THROWS_WITH_AS(qk::compute_qparams(r.min, r.max, t.range, t.symmetry, conv, "huge", 2),
                             doctest::Contains("tensor 'huge' channel 2: range [-"), qk::Error);
        CHECK_THROWS_WITH_AS(qk::compute_qparams(r.min, r.max, t.range, t.symmetry, conv, "huge", 2),
                             doctest::Contains(want.c_str()), qk::Error);
      }
      // tflite computes in double: (max - min) / 255 is a float
      CHECK(qk::compute_qparams(r.min, r.max, t.range, t.symmetry, qk::ConventionKind::tflite, "huge").scale ==
            doctest::Approx((static_cast<double>(r.max) - r.min) / 255.0).epsilon(1e-6));
    });
    // Merging two halves whose union is too wide; restoring such a state.
    std::vector<float> lo(d), hi(d);
    lo[0] = -3e38f;
    hi[0] = 3e38f;
    auto a = make<qk::HistogramObserver>("halves", qk::Granularity::per_channel(0));
    auto b = make<qk::HistogramObserver>("halves", qk::Granularity::per_channel(0));
    a.observe(qk::with_shape(lo, {2, 300}));
    b.observe(qk::with_shape(hi, {2, 300}));
    CHECK_THROWS_WITH_AS(a.merge(b), doctest::Contains("tensor 'halves' channel/block 0: histogram range would be [-3e+38, 3e+38]"),
                         qk::Error);
    auto state = a.state();
    state[1].min = -3e38f;
    state[1].max = 3e38f;
    CHECK_THROWS_WITH_AS(a.restore(state), doctest::Contains("a finite float32 width"), qk::Error);
  }
}

}  // namespace test_observer_bad_input
