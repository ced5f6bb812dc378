// Accuracy debugging (quantkit/analysis/{partial,sensitivity,distribution}.hpp) on a small MLP
// where one layer is made quantization-hostile: fc2's weight has an outlier input channel
// (column 5 = 100 while the other weights are ~N(0, 0.3)), harmless in float because fc1's
// output channel 5 is always 0, ruinous for fc2's weight quantization (every row's scale is set
// by the outlier). Sensitivity must rank fc2 first under every metric; leaving it in float must
// restore the output; the channel-wise statistics must show the outlier channel.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <quantkit/analysis/distribution.hpp>
#include <quantkit/analysis/mixed_precision.hpp>
#include <quantkit/analysis/partial.hpp>
#include <quantkit/analysis/sensitivity.hpp>
#include <quantkit/observer/kl.hpp>
#include <quantkit/observer/minmax.hpp>
#include <quantkit/ptq.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_analysis_debug {

namespace qk = quantkit;
namespace qa = quantkit::analysis;
using qk::graph::Attribute;
using qk::graph::DType;
using qk::graph::Graph;
using qk::graph::Node;
using qk::graph::Tensor;
using TensorMap = std::map<std::string, Tensor>;

namespace {

constexpr int outlier_channel = 5;

Tensor random_tensor(std::vector<std::int64_t> shape, float stddev, std::mt19937& rng, const std::string& name) {
  std::normal_distribution<float> d(0.0f, stddev);
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(rng);
  return Tensor::from_vector<float>(qk::graph::make_dims(shape, name), v, name);
}

Node gemm(const std::string& name, const std::string& in, const std::string& w, const std::string& b,
          const std::string& out) {
  return Node{"Gemm", "", name, {in, w, b}, {out}, {{"transB", Attribute::make_int(1)}}, ""};
}

// x[N,16] -> fc1 (32) -> relu1 -> fc2 (32) -> relu2 -> fc3 (10) -> logits
Graph hostile_mlp(bool hostile) {
  std::mt19937 rng(7);
  Graph g;
  g.name = "hostile_mlp";
  qk::graph::ValueInfo in;
  in.name = "x";
  in.dtype = DType::float32;
  in.has_shape = true;
  in.dims = {-1, 16};
  g.inputs.push_back(in);
  qk::graph::ValueInfo out;
  out.name = "logits";
  out.dtype = DType::float32;
  g.outputs.push_back(out);
  Tensor w1 = random_tensor({32, 16}, 0.3f, rng, "w1"), b1 = random_tensor({32}, 0.1f, rng, "b1");
  Tensor w2 = random_tensor({32, 32}, 0.3f, rng, "w2"), b2 = random_tensor({32}, 0.1f, rng, "b2");
  Tensor w3 = random_tensor({10, 32}, 0.3f, rng, "w3"), b3 = random_tensor({10}, 0.1f, rng, "b3");
  // fc1's output channel 5 is always 0 (after Relu too), so fc2's input channel 5 is unused.
  for (int k = 0; k < 16; ++k) w1.data<float>()[outlier_channel * 16 + k] = 0.0f;
  b1.data<float>()[outlier_channel] = 0.0f;
  if (hostile)
    for (int r = 0; r < 32; ++r) w2.data<float>()[r * 32 + outlier_channel] = 100.0f;
  for (Tensor* t : {&w1, &b1, &w2, &b2, &w3, &b3}) g.initializers.emplace(t->name(), *t);
  g.nodes = {gemm("fc1", "x", "w1", "b1", "h1"),     Node{"Relu", "", "relu1", {"h1"}, {"a1"}, {}, ""},
             gemm("fc2", "a1", "w2", "b2", "h2"),    Node{"Relu", "", "relu2", {"h2"}, {"a2"}, {}, ""},
             gemm("fc3", "a2", "w3", "b3", "logits")};
  return g;
}

TensorMap samples(int n, unsigned seed) {
  std::mt19937 rng(seed);
  return {{"x", random_tensor({n, 16}, 1.0f, rng, "x")}};
}

qk::ptq::QuantizedModel calibrate(const Graph& g) {
  qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(g, qk::ptq::PtqConfig{});
  cal.observe(samples(256, 1));
  return cal.finish();
}

}  // namespace

TEST_CASE("partial models: restrict_to / keep_in_float / restrict_to_activation keep the right tensors") {
  const auto qm = calibrate(hostile_mlp(true));
  REQUIRE(qm.quantized_nodes == std::vector<std::string>{"fc1", "relu1", "fc2", "relu2", "fc3"});
  const auto nodes = qa::quantized_nodes(qm);
  REQUIRE(nodes.size() == 5);
  CHECK(nodes[2].node == "fc2");
  CHECK(nodes[2].weights == std::vector<std::string>{"w2"});
  CHECK(nodes[2].biases == std::vector<std::string>{"b2"});
  CHECK(nodes[2].activations == std::vector<std::string>{"a1", "h2"});
  CHECK(nodes[2].outputs == std::vector<std::string>{"h2"});

  const auto node_only = qa::restrict_to(qm, {"fc2"}, qa::QuantPart::node);
  CHECK(node_only.quantized_nodes == std::vector<std::string>{"fc2"});
  CHECK(node_only.tensors.size() == 4);  // w2, b2, a1, h2
  CHECK(node_only.find("b2"));
  const auto weight_only = qa::restrict_to(qm, {"fc2"}, qa::QuantPart::weight);
  CHECK(weight_only.tensors.size() == 1);
  CHECK(weight_only.find("w2"));
  const auto act_only = qa::restrict_to(qm, {"fc2"}, qa::QuantPart::activation);
  CHECK(act_only.tensors.size() == 2);
  CHECK(!act_only.find("w2"));

  // All but fc2: a1 and h2 stay quantized (relu1 writes a1, relu2 reads h2).
  const auto all_but = qa::keep_in_float(qm, {"fc2"});
  CHECK(all_but.quantized_nodes == std::vector<std::string>{"fc1", "relu1", "relu2", "fc3"});
  CHECK(!all_but.find("w2"));
  CHECK(!all_but.find("b2"));
  CHECK(all_but.find("a1"));
  CHECK(all_but.find("h2"));

  const auto x_only = qa::restrict_to_activation(qm, "x");
  CHECK(x_only.quantized_nodes == std::vector<std::string>{"fc1"});
  CHECK(x_only.tensors.size() == 1);
  CHECK(qa::quantized_activations(qm) == std::vector<std::string>{"x", "h1", "a1", "h2", "a2", "logits"});

  CHECK_THROWS_WITH_AS(qa::restrict_to(qm, {"fc9"}, qa::QuantPart::node),
                       doctest::Contains("node 'fc9' is not a quantized node of the model; expected one of: fc1"),
                       qk::Error);
  CHECK_THROWS_WITH_AS(qa::restrict_to_activation(qm, "w2"), doctest::Contains("not a quantized activation"), qk::Error);
  CHECK_THROWS_WITH_AS(qa::parse_quant_part("layer"), doctest::Contains("unknown node type 'layer'"), qk::Error);
}

TEST_CASE("sensitivity ranks the hostile layer first under every metric, for node and weight types") {
  const auto qm = calibrate(hostile_mlp(true));
  const qa::DebugSession s(qm, samples(64, 2));
  // The fully quantized model is ruined by fc2's weight.
  CHECK(s.measure_full().cosine < 0.9);
  for (qa::Metric m : qa::all_metrics()) {
    for (qa::QuantPart part : {qa::QuantPart::node, qa::QuantPart::weight}) {
      CAPTURE(qa::to_string(m));
      CAPTURE(qa::to_string(part));
      const auto r = s.sensitivity({part, {m}, {}});
      REQUIRE(r.rows.size() == (part == qa::QuantPart::node ? 5u : 3u));
      CHECK(r.rows.front().node == "fc2");
      // Sorted worst first.
      for (std::size_t i = 1; i < r.rows.size(); ++i)
        CHECK(!qa::worse(m, r.rows[i].metrics.get(m), r.rows[i - 1].metrics.get(m)));
    }
  }
  const auto w = s.sensitivity({qa::QuantPart::weight, {qa::Metric::sqnr}, {}});
  CHECK(w.rows.front().tensor == "w2");
  CHECK(w.rows.front().metrics.sqnr_db < 20.0);
  CHECK(w.rows.back().metrics.sqnr_db > 30.0);

  // Activation type: one row per quantized activation; none is hostile (the dead channel is 0).
  const auto a = s.sensitivity({qa::QuantPart::activation, {qa::Metric::cosine}, {}});
  CHECK(a.rows.size() == 6);
  for (const auto& row : a.rows) CHECK(row.metrics.cosine > 0.999);

  // Interested nodes only; an unknown one is an error naming it.
  const auto only = s.sensitivity({qa::QuantPart::node, {qa::Metric::mse}, {"fc3", "fc1"}});
  REQUIRE(only.rows.size() == 2);
  CHECK_THROWS_WITH_AS(s.sensitivity({qa::QuantPart::node, {qa::Metric::mse}, {"nope"}}),
                       doctest::Contains("'nope' is not a quantized node"), qk::Error);
}

TEST_CASE("leaving the hostile layer in float restores the output; partial() finds it") {
  const auto qm = calibrate(hostile_mlp(true));
  const qa::DebugSession s(qm, samples(64, 3));
  const double full = s.measure_full().cosine;
  const double without_fc2 = s.measure(qa::keep_in_float(qm, {"fc2"})).cosine;
  CHECK(full < 0.9);
  CHECK(without_fc2 > 0.999);
  const qa::PartialResult p = s.partial(0.999);
  REQUIRE(!p.sensitive.empty());
  CHECK(p.sensitive.front().node == "fc2");
  REQUIRE(p.steps.size() == p.sensitive.size());
  CHECK(p.steps.front().kept_float == std::vector<std::string>{"fc2"});
  CHECK(p.steps.front().metrics.cosine == doctest::Approx(without_fc2));

  // The same model without the outlier: nothing sensitive at 0.999 with 8-bit min-max? Its
  // full-model cosine is high and the curve of the fully quantized model stays high.
  const auto benign = calibrate(hostile_mlp(false));
  const qa::DebugSession b(benign, samples(64, 3));
  CHECK(b.measure_full().cosine > 0.999);
  CHECK(b.partial(0.999).sensitive.empty());

  // Error curves: every float value along the graph (input, h1, a1, h2, a2, logits).
  const qa::ErrorCurve c = s.error_curve(qm, "all");
  REQUIRE(c.rows.size() == 6);
  CHECK(c.rows[0].value == "x");
  CHECK(c.rows[3].value == "h2");
  CHECK(c.rows[2].metrics.cosine > 0.999);  // a1: before the hostile layer
  CHECK(c.rows[3].metrics.cosine < 0.95);   // h2: after it
  const auto mean = qa::running_mean(c, qa::Metric::cosine);
  REQUIRE(mean.size() == 6);
  CHECK(mean[1] == doctest::Approx((c.rows[0].metrics.cosine + c.rows[1].metrics.cosine) / 2));
  // Weight only: the input is not quantized (no row for it), h1 differs only by fc1's weight.
  const qa::ErrorCurve wo = s.error_curve(qa::restrict_to(qm, qm.quantized_nodes, qa::QuantPart::weight), "weights");
  REQUIRE(wo.rows.size() == 5);
  CHECK(wo.rows[0].value == "h1");
  CHECK(wo.rows[0].metrics.cosine > 0.999);
  CHECK(wo.rows[2].value == "h2");
  CHECK(wo.rows[2].metrics.cosine < 0.95);
}

TEST_CASE("channel statistics show the outlier channel; histograms and clipping ranges") {
  const auto qm = calibrate(hostile_mlp(true));
  const Tensor& w2 = qm.graph.initializers.at("w2");
  const auto per_input = qa::channel_stats(w2.view<float>().named("w2"), 1);
  REQUIRE(per_input.size() == 32);
  for (const auto& c : per_input) {
    if (c.channel == outlier_channel) {
      CHECK(c.median == 100.0);
      CHECK(c.min == 100.0);
    } else {
      CHECK(std::fabs(c.median) < 1.0);
      CHECK(c.max < 2.0);
    }
  }
  // Per output channel every row holds one outlier value.
  const auto per_output = qa::channel_stats(w2.view<float>().named("w2"), 0);
  for (const auto& c : per_output) {
    CHECK(c.outliers >= 1);
    REQUIRE(!c.extreme.empty());
    CHECK(c.extreme.front() == 100.0);
    CHECK(c.max == 100.0);
  }
  // Hand-checked box: 1..9 and 100 -> quartiles 3.25, 5.5, 7.75 (numpy linear), outlier 100.
  const std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 100};
  const Tensor t = Tensor::from_vector<float>(qk::graph::make_dims(std::vector<std::int64_t>{1, 10}, "v"), v, "v");
  const auto box = qa::channel_stats(t.view<float>().named("v"), 0);
  REQUIRE(box.size() == 1);
  CHECK(box[0].q1 == doctest::Approx(3.25));
  CHECK(box[0].median == doctest::Approx(5.5));
  CHECK(box[0].q3 == doctest::Approx(7.75));
  CHECK(box[0].mean == doctest::Approx(14.5));
  CHECK(box[0].outliers == 1);
  CHECK(box[0].whisker_hi == 9.0);
  CHECK(box[0].extreme == std::vector<double>{100.0});

  const auto h = qa::histogram(t.view<float>().named("v"), 10, 0.0, 10.0);
  CHECK(h.total == 10);
  CHECK(h.max_abs == 100.0);
  std::int64_t counted = 0;
  for (auto c : h.counts) counted += c;
  CHECK(counted == 9);  // 100 is outside [0, 10]
  CHECK(h.counts[1] == 1);
  CHECK(h.counts[9] == 1);

  const auto clip = qa::clipping_range(qm.at("w2"));
  CHECK(clip.channels == 32);
  // PyTorch's symmetric int8: s = max|w| / ((127 - -128) / 2), so the top is 127 s.
  CHECK(clip.hi == doctest::Approx(127 * 100.0 / 127.5).epsilon(1e-6));
  const auto aclip = qa::clipping_range(qm.at("a1"));
  CHECK(aclip.channels == 1);
  CHECK(aclip.lo == doctest::Approx(0.0).epsilon(1e-6));
  CHECK_THROWS_WITH_AS(qa::channel_stats(t.view<float>().named("v"), 2), doctest::Contains("channel axis 2"), qk::Error);
}

TEST_CASE("auto mixed precision: int16 does not fix a hostile weight, float does; every step reported") {
  const Graph g = hostile_mlp(true);
  const TensorMap calib = samples(256, 1);
  int calibrations = 0;
  const qa::Calibrate calibrate = [&](const qk::ptq::PtqConfig& cfg) {
    ++calibrations;
    qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(g, cfg);
    cal.observe(calib);
    return cal.finish();
  };
  const auto r = qa::auto_mixed_precision(qk::ptq::PtqConfig{}, calibrate, samples(64, 4), 0.999);
  CHECK(r.reached);
  CHECK(r.initial_cosine < 0.9);
  CHECK(r.final_cosine >= 0.999);
  REQUIRE(!r.steps.empty());
  // fc2 (the worst) is raised to int16 first; its 8-bit weight stays hostile, so later int16 steps
  // do not reach the target either, and fc2 is the first node moved to float — which reaches it.
  CHECK(r.steps.front().node == "fc2");
  CHECK(r.steps.front().action == std::string("int16"));
  CHECK(r.steps.front().cosine < 0.999);
  CHECK(r.steps.back().node == "fc2");
  CHECK(r.steps.back().action == std::string("float"));
  CHECK(r.config.keep_float == std::vector<std::string>{"fc2"});
  CHECK(std::find(r.config.int16_nodes.begin(), r.config.int16_nodes.end(), "fc2") == r.config.int16_nodes.end());
  CHECK(!r.model.is_quantized_node("fc2"));
  CHECK(calibrations == static_cast<int>(r.steps.size()) + 1);

  // Already at the target: no step, one calibration.
  calibrations = 0;
  const Graph benign = hostile_mlp(false);
  const qa::Calibrate calibrate_benign = [&](const qk::ptq::PtqConfig& cfg) {
    ++calibrations;
    qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(benign, cfg);
    cal.observe(calib);
    return cal.finish();
  };
  const auto b = qa::auto_mixed_precision(qk::ptq::PtqConfig{}, calibrate_benign, samples(64, 4), 0.99);
  CHECK(b.reached);
  CHECK(b.steps.empty());
  CHECK(calibrations == 1);
  CHECK_THROWS_WITH_AS(qa::auto_mixed_precision(qk::ptq::PtqConfig{}, calibrate_benign, samples(8, 4), 1.5),
                       doctest::Contains("target cosine 1.5"), qk::Error);
}

TEST_CASE("mix calibration: per sensitive node the best of the candidate observers, biases rescaled") {
  const Graph g = hostile_mlp(false);
  const TensorMap calib = samples(256, 1);
  auto with = [&](auto observer_tag) {
    using O = typename decltype(observer_tag)::type;
    qk::ptq::GraphCalibrator<O> cal(g, qk::ptq::PtqConfig{});
    cal.observe(calib);
    return cal.finish();
  };
  struct KlTag { using type = qk::KlObserver; };
  struct MaxTag { using type = qk::MinMaxObserver; };
  const auto kl = with(KlTag{});
  const auto mx = with(MaxTag{});
  // A threshold this strict makes every node "sensitive", so every node gets a choice.
  const auto r = qa::mix_activation_calibration(kl, {{"max", &mx}}, samples(64, 5), 0.9999999);
  CHECK(r.choices.size() == 5);
  CHECK(r.final_cosine >= r.base_cosine);
  for (const auto& c : r.choices) {
    CHECK(c.cosine.count("kl"));
    CHECK((c.chosen == "kl" || c.chosen == "max"));
    for (const auto& kv : c.cosine) CHECK(kv.second <= r.final_cosine + 1e-12);
  }
  // Biases follow their input's scale: s_bias = s_in * s_w for every quantized bias.
  for (const auto& kv : r.model.tensors) {
    if (kv.second.role != qk::ptq::TensorRole::bias) continue;
    const auto& in = r.model.at(kv.second.input);
    const auto& w = r.model.at(kv.second.weight);
    for (std::size_t c = 0; c < w.params.scale.size(); ++c)
      CHECK(kv.second.params.scale[c] == in.params.scale[0] * w.params.scale[c]);
  }
  // Nothing sensitive at a loose threshold: the base model unchanged.
  const auto none = qa::mix_activation_calibration(kl, {{"max", &mx}}, samples(64, 5), 0.5);
  CHECK(none.choices.empty());
  CHECK(none.final_cosine == none.base_cosine);
}

TEST_CASE("saturated_count: per element parameters, half a step of rounding margin") {
  // Per channel along axis 0: channel 0 keeps [-1.28, 1.27] (+- 0.005), channel 1 [-12.8, 12.7].
  qk::QuantParams p;
  p.scale = {0.01f, 0.1f};
  p.zero_point = {0, 0};
  p.granularity = qk::Granularity::per_channel(0);
  p.range = qk::IntRange{-128, 127};
  const std::vector<float> v = {1.27f, 1.274f, 1.276f, -1.3f, 12.74f, 12.76f, -12.86f, 0.0f};
  const Tensor t = Tensor::from_vector<float>(qk::graph::make_dims(std::vector<std::int64_t>{2, 4}, "t"), v, "t");
  CHECK(qa::saturated_count(t.view<float>().named("t"), p) == 4);  // 1.276, -1.3 | 12.76, -12.86
  p.granularity = qk::Granularity::per_tensor();
  p.scale = {0.1f};
  p.zero_point = {0};
  CHECK(qa::saturated_count(t.view<float>().named("t"), p) == 2);
  // Min-max parameters of the hostile model's weights saturate nothing.
  const auto qm = calibrate(hostile_mlp(true));
  const Tensor& w2 = qm.graph.initializers.at("w2");
  CHECK(qa::saturated_count(w2.view<float>().named("w2"), qm.at("w2").params) == 0);
}

}  // namespace test_analysis_debug
