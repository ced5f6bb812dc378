// PTQ accuracy remedies and the standalone C++ export, on the demo CNN and on the model
// hostile to per-tensor weights (examples/data/demo): cross-layer equalization leaves the
// float model as it was and balances the ranges (recovering per-tensor accuracy); bias
// correction brings the mean output error per channel on the calibration data to ~0; AdaRound
// never reconstructs a layer worse than round-to-nearest (measured here with the executor, not
// with AdaRound's own algebra); the requantization report; the generated header compiled with
// -Wall -Wextra -Wpedantic -Werror (both runtimes, once each) and run on the demo test set,
// equal to the integer executor bit for bit; and the error paths.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <quantkit/analysis/requant_report.hpp>
#include <quantkit/executor.hpp>
#include <quantkit/executor/integer/mode.hpp>
#include <quantkit/export/cpp.hpp>
#include <quantkit/io/npy.hpp>
#include <quantkit/observer/minmax.hpp>
#include <quantkit/onnx.hpp>
#include <quantkit/onnx/export_qdq.hpp>
#include <quantkit/ptq.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_ptq_remedies_onnx {

namespace qk = quantkit;
namespace fs = std::filesystem;
using qk::graph::DType;
using qk::graph::Graph;
using qk::graph::Node;
using qk::graph::Tensor;
using TensorMap = std::map<std::string, Tensor>;

namespace {

const std::string repo_dir = std::string(QUANTKIT_TEST_DIR) + "/..";
const std::string demo_dir = repo_dir + "/examples/data/demo/";

Graph load(const char* file) { return qk::onnx::load(demo_dir + file); }
Tensor npy_f32(const std::string& path) {
  const qk::npy::Array a = qk::npy::load(path);
  return Tensor::from_vector<float>(a.shape, a.as<float>(path), path);
}
const std::vector<TensorMap>& batches() {
  static const auto b = qk::ptq::split_batches("input", npy_f32(demo_dir + "digits_calib.npy"), 64);
  return b;
}
const Tensor& test_x() {
  static const Tensor t = npy_f32(demo_dir + "digits_test_x.npy");
  return t;
}
const std::vector<std::int64_t>& test_y() {
  static const auto y = qk::npy::load(demo_dir + "digits_test_y.npy").as<std::int64_t>();
  return y;
}
template <class T>
double accuracy_of(const T* logits) {
  std::size_t ok = 0;
  for (std::size_t i = 0; i < test_y().size(); ++i)
    ok += std::max_element(logits + i * 10, logits + i * 10 + 10) - (logits + i * 10) == test_y()[i];
  return 100.0 * static_cast<double>(ok) / static_cast<double>(test_y().size());
}
double float_accuracy(const Graph& g) {
  return accuracy_of(qk::Executor<>(g).run({{"input", test_x()}}).at("logits").data<float>());
}
double fake_accuracy(const qk::ptq::QuantizedModel& qm) {
  const qk::Executor<qk::ptq::FakeQuantMode> run(qm.graph, qk::ptq::FakeQuantMode(qm));
  return accuracy_of(run.run({{"input", test_x()}}).at("logits").data<float>());
}

qk::ptq::PtqConfig per_tensor(int weight_bits, bool cle = false) {
  qk::ptq::PtqConfig c;
  c.weight_bits = weight_bits;
  c.weight_granularity = qk::ptq::WeightGranularity::per_tensor();
  c.cross_layer_equalization = cle;
  return c;
}

struct Calibrated {
  Graph graph;  // the calibrator's float graph (BN folded, CLE applied): the float reference
  qk::ptq::QuantizedModel qm;
};
Calibrated calibrate(const Graph& g, const qk::ptq::PtqConfig& cfg) {
  qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(g, cfg);
  cal.observe(batches());
  return {cal.graph(), cal.finish()};
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (std::int64_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(static_cast<double>(a.data<float>()[i]) - b.data<float>()[i]));
  return m;
}

// Per-channel max |w| of a Conv weight's output channels (axis 0) and input channels (axis 1).
std::vector<double> channel_max(const Tensor& w, int axis) {
  const std::int64_t inner = w.size() / (w.dim(0) * w.dim(1));
  std::vector<double> r(static_cast<std::size_t>(w.dim(axis)), 0.0);
  for (std::int64_t i = 0; i < w.size(); ++i) {
    const std::int64_t c = axis == 0 ? i / (w.dim(1) * inner) : (i / inner) % w.dim(1);
    r[static_cast<std::size_t>(c)] = std::max(r[static_cast<std::size_t>(c)], std::fabs(static_cast<double>(w.data<float>()[i])));
  }
  return r;
}

const Node& node_named(const Graph& g, const std::string& key) {
  for (const auto& n : g.nodes)
    if (qk::ptq::node_key(n) == key) return n;
  FAIL("no node " << key);
  return g.nodes.front();
}

// Layer `key`'s output (before any activation) in the fake-quant model of `qm`, with only that
// output left unquantized, against the float reference; per output channel over the
// calibration batches: the mean of (float - quantized) and the mean squared L2 norm over
// channels of the difference (AdaRound's reconstruction error).
struct OutputError {
  std::vector<double> mean;  // per channel
  double squared = 0;
  double output_scale = 0;
};
OutputError output_error(const Graph& reference, const qk::ptq::QuantizedModel& qm, const std::string& key) {
  const Node& n = node_named(qm.graph, key);
  const std::string out = n.outputs.at(0);
  qk::ptq::QuantizedModel q = qm;
  OutputError e;
  e.output_scale = q.at(out).params.scale[0];
  q.tensors.erase(out);
  const qk::Executor<> float_run(reference);
  const qk::Executor<qk::ptq::FakeQuantMode> fake(q.graph, qk::ptq::FakeQuantMode(q));
  qk::RunOptions opt;
  opt.outputs = {out};
  std::vector<double> sum;
  double count = 0, sq = 0;
  for (const auto& b : batches()) {
    const Tensor yf = float_run.run(b, opt).at(out), yq = fake.run(b, opt).at(out);
    REQUIRE(yf.shape() == yq.shape());
    const std::int64_t N = yf.dim(0), C = yf.dim(1), inner = yf.size() / (N * C);
    sum.resize(static_cast<std::size_t>(C), 0.0);
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t k = 0; k < inner; ++k) {
          const std::int64_t at = (i * C + c) * inner + k;
          const double d = static_cast<double>(yf.data<float>()[at]) - yq.data<float>()[at];
          sum[static_cast<std::size_t>(c)] += d;
          sq += d * d;
        }
    count += static_cast<double>(N * inner);
  }
  for (double s : sum) e.mean.push_back(s / count);
  e.squared = sq / count;
  return e;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// A fresh folder, removed at the end of the test case.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/quantkit_remedies_XXXXXX";
    const char* d = mkdtemp(tmpl);
    REQUIRE(d != nullptr);
    path = d;
  }
  ~TempDir() {
    std::error_code ec;
    if (!std::getenv("QUANTKIT_KEEP_TEMP")) fs::remove_all(path, ec);
  }
};
std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

// ---------------------------------------------------------------- cross-layer equalization

TEST_CASE("CLE leaves the float model unchanged and balances the per-channel weight ranges") {
  for (const char* file : {"digits_hostile.onnx", "digits_cnn.onnx"}) {
    INFO(file);
    Graph before = load(file);
    (void)qk::passes::fold_batchnorm(before);
    Graph after = before;
    const qk::ptq::EqualizationReport r = qk::ptq::equalize_cross_layer(after);
    const Tensor y0 = qk::Executor<>(before).run({{"input", test_x()}}).at("logits");
    const Tensor y1 = qk::Executor<>(after).run({{"input", test_x()}}).at("logits");
    double peak = 0;
    for (std::int64_t i = 0; i < y0.size(); ++i) peak = std::max(peak, std::fabs(static_cast<double>(y0.data<float>()[i])));
    CHECK(max_abs_diff(y0, y1) <= 1e-5 * peak + 1e-5);
    CHECK(r.converged);
    for (const auto& p : r.pairs) {
      INFO(p.first << " -> " << p.second);
      CHECK(p.first_range_after == doctest::Approx(p.second_range_after).epsilon(0.01));
      CHECK(p.first_usage_after > p.first_usage_before);
      CHECK(p.second_usage_after >= p.second_usage_before);
      CHECK(p.range_delta <= qk::ptq::EqualizationOptions{}.tolerance);
    }
    if (std::string(file) == "digits_hostile.onnx") {
      REQUIRE(r.pairs.size() == 3);
      CHECK(r.pairs[1].first == "/conv2/Conv");
      CHECK(r.pairs[1].second == "/fc1/Gemm");
      CHECK(r.pairs[1].through == "Relu, MaxPool, Flatten");
      // The ranges of conv1's output channels equal those of conv2's input channels (read
      // from the weights, not from the report), where they were up to ~100x apart.
      const auto r1b = channel_max(before.initializers.at(node_named(before, "/conv1/Conv").inputs[1]), 0);
      const auto r1 = channel_max(after.initializers.at(node_named(after, "/conv1/Conv").inputs[1]), 0);
      const auto r2 = channel_max(after.initializers.at(node_named(after, "/conv2/Conv").inputs[1]), 1);
      CHECK(*std::max_element(r1b.begin(), r1b.end()) / *std::min_element(r1b.begin(), r1b.end()) > 50.0);
      for (std::size_t c = 0; c < r1.size(); ++c) CHECK(r1[c] == doctest::Approx(r2[c]).epsilon(0.01));
    } else {  // depthwise and grouped convolutions, pooling and Flatten between the layers
      REQUIRE(r.pairs.size() == 5);
      CHECK(r.pairs[0].second == "/dw2/Conv");
      CHECK(r.pairs[1].first == "/dw2/Conv");
      CHECK(r.pairs[3].first == "/conv3/Conv");
      CHECK(r.pairs[3].through == "Relu, AveragePool, Flatten");
    }
    CHECK(qk::ptq::format(r).find("quant. range delta") != std::string::npos);
  }
}

TEST_CASE("CLE: the scale formula on a small chain, and what stops a chain") {
  // x -> Conv A (2 maps) -> Relu -> depthwise Conv B -> Clip -> Conv C; D also reads B's weight.
  auto make = [] {
    Graph g;
    g.opset = 13;
    qk::graph::ValueInfo x;
    x.name = "x";
    x.dtype = DType::float32;
    x.has_shape = true;
    x.dims = {1, 1, 4, 4};
    g.inputs.push_back(x);
    auto init = [&](const std::string& n, qk::Dims shape, std::vector<float> v) {
      g.initializers[n] = Tensor::from_vector<float>(shape, v, n);
    };
    init("wa", {2, 1, 1, 1}, {4.0f, -0.01f});
    init("ba", {2}, {0.5f, 0.25f});
    init("wb", {2, 1, 1, 1}, {0.5f, 8.0f});
    init("wc", {1, 2, 1, 1}, {1.0f, 1.0f});
    init("lo", {}, {0.0f});
    init("hi", {}, {6.0f});
    auto node = [&](const std::string& op, std::vector<std::string> in, std::string out, const std::string& name) {
      Node n;
      n.op_type = op;
      n.name = name;
      n.inputs = std::move(in);
      n.outputs = {std::move(out)};
      g.nodes.push_back(n);
    };
    node("Conv", {"x", "wa", "ba"}, "a", "A");
    node("Relu", {"a"}, "r", "R");
    node("Conv", {"r", "wb"}, "b", "B");
    g.nodes.back().attributes["group"] = qk::graph::Attribute::make_int(2);
    node("Clip", {"b", "lo", "hi"}, "k", "K");
    node("Conv", {"k", "wc"}, "c", "C");
    node("Conv", {"r", "wb"}, "d", "D");  // a second reader of r and of wb
    g.nodes.back().attributes["group"] = qk::graph::Attribute::make_int(2);
    for (const char* o : {"c", "d"}) {
      qk::graph::ValueInfo v;
      v.name = o;
      v.dtype = DType::float32;
      g.outputs.push_back(v);
    }
    return g;
  };
  {  // r has two readers: no chain at all
    Graph g = make();
    const auto r = qk::ptq::equalize_cross_layer(g);
    CHECK(r.pairs.empty());
    CHECK(g.initializers.at("wa") == make().initializers.at("wa"));
  }
  Graph g = make();
  g.nodes.pop_back();  // without D: A -> Relu -> B is a chain; B -> Clip -> C is not (Clip)
  g.outputs.pop_back();
  {  // E: a Conv on x sharing B's weight wb ([2, 1, 1, 1] fits x's one channel)
    Node e = g.nodes[4];
    e.name = "E";
    e.inputs = {"x", "wb"};
    e.outputs = {"e"};
    e.attributes.clear();
    g.nodes.push_back(e);
    qk::graph::ValueInfo v;
    v.name = "e";
    v.dtype = DType::float32;
    g.outputs.push_back(v);
  }
  const Graph original = g;
  const auto r = qk::ptq::equalize_cross_layer(g);
  REQUIRE(r.pairs.size() == 1);
  CHECK(r.pairs[0].first == "A");
  CHECK(r.pairs[0].second == "B");
  CHECK(r.passes == 2);  // one pair: balanced after the first pass, the second changes nothing
  // s = sqrt(r1 r2) / r2: channel 0: r1 = 4, r2 = 0.5 -> s = sqrt(8); channel 1: 0.01, 8 -> s = sqrt(0.01/8).
  const double s0 = std::sqrt(4.0 * 0.5) / 0.5, s1 = std::sqrt(0.01 * 8.0) / 8.0;
  const Node& a = node_named(g, "A");
  const Node& b = node_named(g, "B");
  CHECK(g.initializers.at(a.inputs[1]).data<float>()[0] == doctest::Approx(4.0 / s0));
  CHECK(g.initializers.at(a.inputs[1]).data<float>()[1] == doctest::Approx(-0.01 / s1));
  CHECK(g.initializers.at(a.inputs[2]).data<float>()[0] == doctest::Approx(0.5 / s0));
  CHECK(g.initializers.at(a.inputs[2]).data<float>()[1] == doctest::Approx(0.25 / s1));
  CHECK(g.initializers.at(b.inputs[1]).data<float>()[0] == doctest::Approx(0.5 * s0));
  CHECK(g.initializers.at(b.inputs[1]).data<float>()[1] == doctest::Approx(8.0 * s1));
  CHECK(b.inputs[1] != "wb");                                      // B got a private copy ...
  CHECK(g.initializers.at("wb") == original.initializers.at("wb"));  // ... E's weight is as it was
  Tensor x(DType::float32, {1, 1, 4, 4});
  for (std::int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] = static_cast<float>(i % 5) - 1.5f;
  const auto y0 = qk::Executor<>(original).run({{"x", x}});
  const auto y1 = qk::Executor<>(g).run({{"x", x}});
  for (const char* o : {"c", "e"}) CHECK(max_abs_diff(y0.at(o), y1.at(o)) < 1e-5);

  qk::ptq::EqualizationOptions skip;
  skip.skip = {"B"};
  Graph h = original;
  const auto rs = qk::ptq::equalize_cross_layer(h, skip);
  CHECK(rs.pairs.empty());
  REQUIRE(rs.skipped.size() == 1);
  CHECK(rs.skipped[0].find("A -> B") != std::string::npos);

  skip.skip = {"nope"};
  CHECK_THROWS_WITH_AS(qk::ptq::equalize_cross_layer(h, skip), doctest::Contains("skip names node 'nope'"), qk::Error);
  qk::ptq::EqualizationOptions bad;
  bad.max_passes = 0;
  CHECK_THROWS_WITH_AS(qk::ptq::equalize_cross_layer(h, bad), doctest::Contains("max_passes is 0"), qk::Error);
  bad = {};
  bad.tolerance = -1;
  CHECK_THROWS_WITH_AS(qk::ptq::equalize_cross_layer(h, bad), doctest::Contains("tolerance is -1"), qk::Error);
}

TEST_CASE("CLE recovers per-tensor W8A8 and W4A8 accuracy on the hostile model") {
  const Graph g = load("digits_hostile.onnx");
  const double fa = float_accuracy(g);
  CHECK(fa > 97.0);
  const Calibrated w8 = calibrate(g, per_tensor(8)), w8c = calibrate(g, per_tensor(8, true));
  const Calibrated w4 = calibrate(g, per_tensor(4)), w4c = calibrate(g, per_tensor(4, true));
  const double a8 = fake_accuracy(w8.qm), a8c = fake_accuracy(w8c.qm), a4 = fake_accuracy(w4.qm), a4c = fake_accuracy(w4c.qm);
  MESSAGE("hostile model per-tensor: float " << fa << ", W8A8 " << a8 << " -> CLE " << a8c << ", W4A8 " << a4 << " -> CLE " << a4c);
  CHECK(a8 < fa - 10.0);   // one scale per tensor does not fit channels 100x apart ...
  CHECK(a8c >= fa - 1.0);  // ... after equalization it does
  CHECK(a4 < 50.0);
  CHECK(a4c >= fa - 2.0);
  CHECK(std::any_of(w8c.qm.notes.begin(), w8c.qm.notes.end(),
                    [](const std::string& n) { return n.find("cross-layer equalization: 3 pair(s)") != std::string::npos; }));
}

// ---------------------------------------------------------------- bias correction

TEST_CASE("bias correction: the mean output error per channel on the calibration data drops to ~0") {
  const Graph g = load("digits_hostile.onnx");
  const Calibrated c = calibrate(g, per_tensor(4, true));
  qk::ptq::QuantizedModel corrected = c.qm;
  std::size_t calls = 0;
  const qk::ptq::BiasCorrectionReport r =
      qk::ptq::correct_bias(corrected, batches(), [&](const qk::ptq::RemedyProgress& p) {
        CHECK(std::string(p.stage) == "bias-correction");
        CHECK(p.step <= p.steps);
        ++calls;
      });
  REQUIRE(r.layers.size() == 4);
  CHECK(calls == 4 * batches().size());
  double worst_before = 0;
  for (const auto& l : r.layers) {
    INFO(l.node);
    const OutputError before = output_error(c.graph, c.qm, l.node);
    const OutputError after = output_error(c.graph, corrected, l.node);
    worst_before = std::max(worst_before, max_abs(before.mean) / before.output_scale);
    MESSAGE(l.node << ": max |mean error| " << max_abs(before.mean) / before.output_scale << " -> "
                   << max_abs(after.mean) / after.output_scale << " output steps");
    // Zero up to the rounding of the int32 bias: half its step s_input * s_weight.
    const std::vector<float>& bias_step = corrected.at(l.bias).params.scale;
    for (std::size_t ch = 0; ch < after.mean.size(); ++ch)
      CHECK(std::fabs(after.mean[ch]) <= 0.5 * bias_step[bias_step.size() == 1 ? 0 : ch] + 1e-6);
    CHECK(max_abs(after.mean) <= 0.02 * after.output_scale);
    CHECK(max_abs(after.mean) < 0.02 * max_abs(before.mean));
  }
  // The first layer's correction is the shift measured here (later ones see corrected inputs).
  CHECK(r.layers[0].max_abs_shift == doctest::Approx(max_abs(output_error(c.graph, c.qm, r.layers[0].node).mean)).epsilon(1e-3));
  CHECK(worst_before > 1.0);  // W4 per tensor shifted some channel by more than an output step
  // The same through PtqConfig and finish(batches).
  qk::ptq::PtqConfig cfg = per_tensor(4, true);
  cfg.bias_correction = true;
  qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(g, cfg);
  cal.observe(batches());
  const qk::ptq::QuantizedModel via_config = cal.finish(batches());
  for (const auto& l : r.layers) CHECK(via_config.graph.initializers.at(l.bias) == corrected.graph.initializers.at(l.bias));
  CHECK_THROWS_WITH_AS((void)cal.finish(), doctest::Contains("expected finish(batches)"), qk::Error);
  CHECK_THROWS_WITH_AS(qk::ptq::correct_bias(corrected, {}), doctest::Contains("no calibration batch"), qk::Error);
}

TEST_CASE("bias correction adds an int32 bias to a layer that had none") {
  Graph g;
  g.opset = 13;
  qk::graph::ValueInfo x;
  x.name = "input";
  x.dtype = DType::float32;
  x.has_shape = true;
  x.dims = {-1, 1, 8, 8};
  g.inputs.push_back(x);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 0.5f);
  std::vector<float> w(4 * 9);
  for (auto& v : w) v = nd(rng);
  w[0] = 3.0f;  // one large weight: per-tensor int4 rounds the others coarsely
  g.initializers["w"] = Tensor::from_vector<float>({4, 1, 3, 3}, w, "w");
  Node conv;
  conv.op_type = "Conv";
  conv.name = "conv";
  conv.inputs = {"input", "w"};
  conv.outputs = {"y"};
  conv.attributes["pads"] = qk::graph::Attribute::make_ints({1, 1, 1, 1});
  g.nodes.push_back(conv);
  Node relu;
  relu.op_type = "Relu";
  relu.name = "relu";
  relu.inputs = {"y"};
  relu.outputs = {"out"};
  g.nodes.push_back(relu);
  qk::graph::ValueInfo o;
  o.name = "out";
  o.dtype = DType::float32;
  g.outputs.push_back(o);
  const Calibrated c = calibrate(g, per_tensor(4));
  qk::ptq::QuantizedModel q = c.qm;
  const auto r = qk::ptq::correct_bias(q, batches());
  REQUIRE(r.layers.size() == 1);
  CHECK(r.layers[0].added);
  const Node& n = node_named(q.graph, "conv");
  REQUIRE(n.has_input(2));
  CHECK(q.at(n.inputs[2]).role == qk::ptq::TensorRole::bias);
  CHECK(q.at(n.inputs[2]).format.bits == 32);
  const OutputError before = output_error(c.graph, c.qm, "conv"), after = output_error(c.graph, q, "conv");
  CHECK(max_abs(before.mean) > 0.1 * before.output_scale);
  const float bias_step = q.at(n.inputs[2]).params.scale[0];
  CHECK(max_abs(after.mean) <= 0.5 * bias_step + 1e-6);
}

// ---------------------------------------------------------------- AdaRound

TEST_CASE("AdaRound never reconstructs a layer worse than round-to-nearest on the calibration data") {
  // The demo CNN (depthwise and grouped convolutions, Gemm), per-tensor W4A8.
  const Graph g = load("digits_cnn.onnx");
  const Calibrated c = calibrate(g, per_tensor(4));
  qk::ptq::QuantizedModel ada = c.qm;
  qk::ptq::AdaRoundOptions opt;
  opt.iterations = 120;
  std::map<std::string, std::size_t> last_step;
  const qk::ptq::AdaRoundReport r = qk::ptq::adaround(ada, batches(), opt, [&](const qk::ptq::RemedyProgress& p) {
    CHECK(std::string(p.stage) == "adaround");
    CHECK(p.step > last_step[p.layer]);
    CHECK(p.step <= p.steps);
    last_step[p.layer] = p.step;
    if (p.step == p.steps) last_step[p.layer + " done"] = 1;
  });
  REQUIRE(r.layers.size() == 6);
  std::size_t better = 0;
  double total_rtn = 0, total_ada = 0;
  for (const auto& l : r.layers) {
    INFO(l.node);
    CHECK(last_step.count(l.node + " done") == 1);
    // Nearest rounding for this layer only, the layers before it as AdaRound left them: the
    // same inputs AdaRound saw.
    qk::ptq::QuantizedModel nearest = ada;
    nearest.tensors.at(l.weight).integers.clear();
    const OutputError e_ada = output_error(c.graph, ada, l.node), e_rtn = output_error(c.graph, nearest, l.node);
    MESSAGE(l.node << ": reconstruction error " << e_rtn.squared << " -> " << e_ada.squared << ", "
                   << 100 * l.changed << "% of the integers changed");
    CHECK(e_ada.squared <= e_rtn.squared * (1 + 1e-6));
    CHECK(l.adaround_error <= l.nearest_error);
    // AdaRound's own (Gram-matrix) errors are the ones measured here with the executor.
    CHECK(l.nearest_error == doctest::Approx(e_rtn.squared).epsilon(1e-3));
    CHECK(l.adaround_error == doctest::Approx(e_ada.squared).epsilon(1e-3));
    better += e_ada.squared < 0.99 * e_rtn.squared;
    total_rtn += e_rtn.squared;
    total_ada += e_ada.squared;
    // Every learned integer rounds w / s down or up (or is clamped).
    const Tensor& w = ada.graph.initializers.at(l.weight);
    const qk::ptq::TensorQuant& tq = ada.at(l.weight);
    REQUIRE(tq.integers.size() == static_cast<std::size_t>(w.size()));
    const float s = tq.params.scale[0];
    for (std::int64_t i = 0; i < w.size(); ++i) {
      const double v = static_cast<double>(w.data<float>()[i]) / s;
      const double q = tq.integers[static_cast<std::size_t>(i)];
      CHECK((q == std::floor(v) || q == std::floor(v) + 1 || q == tq.params.range.qmin || q == tq.params.range.qmax));
    }
  }
  CHECK(better * 2 >= r.layers.size());
  CHECK(total_ada < 0.9 * total_rtn);
  CHECK(qk::ptq::format(r).find("of the integers changed") != std::string::npos);

  qk::ptq::AdaRoundOptions bad;
  bad.iterations = -1;
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("iterations is -1"), qk::Error);
  bad = {};
  bad.beta_start = 1;
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("beta_start >= beta_end"), qk::Error);
  qk::ptq::PtqConfig cfg;
  cfg.adaround.iterations = 10;
  qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(g, cfg);
  cal.observe(batches());
  CHECK_THROWS_WITH_AS((void)cal.finish(), doctest::Contains("PtqConfig::adaround"), qk::Error);
}

// ---------------------------------------------------------------- requantization report

TEST_CASE("scaling report: real factors, their shift approximations, and the fallback warnings") {
  const Graph g = load("digits_cnn.onnx");
  const Calibrated c = calibrate(g, qk::ptq::PtqConfig{});  // W8A8 per channel
  const Graph qdq = qk::onnx::qdq_graph(c.qm);

  const auto fixed = qk::analysis::requant_report<qk::FixedPointDoubleRounding>(qdq);
  REQUIRE(fixed.size() > 100);
  for (const auto& row : fixed) {
    CHECK_FALSE(row.fell_back);
    CHECK(row.relative_error < 1e-8);
  }
  // conv1's factor for channel 3 is s_input * s_weight[3] / s_output, from the model's params.
  const Node& conv1 = node_named(c.graph, "/conv1/Conv");
  const double expected = static_cast<double>(c.qm.at(conv1.inputs[0]).params.scale[0]) *
                          c.qm.at(conv1.inputs[1]).params.scale[3] / c.qm.at(conv1.outputs[0]).params.scale[0];
  const auto it = std::find_if(fixed.begin(), fixed.end(),
                               [](const qk::analysis::RequantRow& r) { return r.node == "/conv1/Conv" && r.what == "channel 3"; });
  REQUIRE(it != fixed.end());
  CHECK(it->op == "IntConv");
  CHECK(it->real == doctest::Approx(expected).epsilon(1e-12));

  const auto single = qk::analysis::requant_report(qdq, qk::RequantScheme::single_shift);
  REQUIRE(single.size() == fixed.size());
  std::size_t fallbacks = 0;
  for (const auto& row : single) {
    INFO(row.node << " " << row.what << " " << row.real);
    if (row.real > 1.0) {
      ++fallbacks;
      CHECK(row.fell_back);
      CHECK(row.scheme == qk::RequantScheme::fixed_point);
      CHECK(row.warning.find("SINGLE_SHIFT cannot express") != std::string::npos);
      CHECK(row.warning.find("fell back to FIXED_MULT32") != std::string::npos);
    } else {
      CHECK_FALSE(row.fell_back);
      CHECK(row.scheme == qk::RequantScheme::single_shift);
      const int shift = static_cast<int>(std::lround(-std::log2(row.real)));
      CHECK(row.approximation == std::ldexp(1.0, -shift));
      CHECK(row.constants == "2 ^ " + std::to_string(-shift));
      CHECK(row.relative_error == doctest::Approx(std::fabs(row.approximation - row.real) / row.real));
    }
  }
  CHECK(fallbacks >= 1);  // the Relu requantizations need scales > 1 here
  const std::string text = qk::analysis::format_requant_report(single);
  CHECK(text.find("SINGLE_SHIFT: 2 ^ [- ") != std::string::npos);
  CHECK(text.find("warning: /Relu") != std::string::npos);

  for (const auto& row : qk::analysis::requant_report(qdq, qk::RequantScheme::double_shift)) {
    CHECK(row.fell_back == (row.real > 1.5));
    if (!row.fell_back) CHECK(row.relative_error < 0.2);
  }
}

// ---------------------------------------------------------------- C++ export

TEST_CASE("C++ export: the generated header compiles warning-free and equals the integer executor bit for bit") {
  const Graph g = load("digits_cnn.onnx");
  const Calibrated c = calibrate(g, qk::ptq::PtqConfig{});  // W8A8 per channel
  const Graph qdq = qk::onnx::qdq_graph(c.qm);
  const qk::Executor<qk::IntegerMode> run(qdq);
  qk::RunOptions ro;
  ro.keep_intermediates = true;
  const auto values = run.run({{"input", test_x()}}, ro);
  const Tensor& reference = values.at("logits_quantized");  // the integers DequantizeLinear reads
  REQUIRE(reference.dtype() == DType::uint8);
  const double executor_accuracy = accuracy_of(values.at("logits").data<float>());
  CHECK(executor_accuracy > 96.0);
  {
    // The export follows the unfolded integer graph (one op per layer); folding the standalone
    // requantizations into their producers must not change an integer.
    qk::IntegerModeOptions unfolded;
    unfolded.fold_requantize = false;
    const qk::Executor<qk::IntegerMode> plain(qdq, qk::IntegerMode(unfolded));
    CHECK(plain.graph().nodes.size() > run.graph().nodes.size());
    const auto v2 = plain.run({{"input", test_x()}}, ro);
    const Tensor& r2 = v2.at("logits_quantized");
    REQUIRE(r2.nbytes() == reference.nbytes());
    CHECK(std::memcmp(r2.raw(), reference.raw(), reference.nbytes()) == 0);
  }

  TempDir dir;
  {
    std::ofstream x(dir.path / "x.bin", std::ios::binary);
    x.write(static_cast<const char*>(test_x().raw()), static_cast<std::streamsize>(test_x().nbytes()));
  }
  std::ofstream(dir.path / "driver.cpp") << R"(#include MODEL_HEADER
#include <cstdio>
#include <vector>
// Reads float inputs from argv[1], writes the integer outputs of infer() to argv[2].
int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::FILE* in = std::fopen(argv[1], "rb");
  std::FILE* out = std::fopen(argv[2], "wb");
  if (!in || !out) return 3;
  std::vector<float> x(digits::input_size);
  std::vector<digits::input_type> q(digits::input_size);
  std::vector<digits::logits_type> y(digits::logits_size);
  digits::Workspace ws;
  while (std::fread(x.data(), sizeof(float), x.size(), in) == x.size()) {
    digits::quantize_input(x.data(), q.data());
    digits::infer(q.data(), y.data(), ws);
    std::fwrite(y.data(), sizeof(digits::logits_type), y.size(), out);
  }
  std::fclose(in);
  return std::fclose(out) == 0 ? 0 : 4;
}
)";
  for (const auto runtime : {qk::cpp_export::Runtime::quantkit, qk::cpp_export::Runtime::standalone}) {
    const bool standalone = runtime == qk::cpp_export::Runtime::standalone;
    const std::string variant = standalone ? "standalone" : "quantkit headers";
    INFO(variant);
    qk::cpp_export::Options opt;
    opt.name_space = "digits";
    opt.runtime = runtime;
    const std::string header = standalone ? "digits_std.hpp" : "digits_qk.hpp";
    const qk::cpp_export::Report rep = qk::cpp_export::write(qdq, (dir.path / header).string(), opt);
    CHECK(rep.layers.size() == 14);
    REQUIRE(rep.inputs.size() == 1);
    CHECK(rep.inputs[0].identifier == "input");
    CHECK(rep.outputs[0].identifier == "logits");
    CHECK(rep.outputs[0].shape == qk::Dims{1, 10});
    const std::string text = read_text(dir.path / header);
    CHECK(text.find(standalone ? "#include <cmath>" : "#include \"quantkit/ref/requantize.hpp\"") != std::string::npos);
    CHECK(text.find("quantkit") != std::string::npos);  // the comment names its generator ...
    if (standalone) CHECK(text.find("#include \"quantkit") == std::string::npos);  // ... but needs nothing of it

    // Compiled once per runtime; the standalone one also with the conversion warnings an
    // embedded build may use.
    const std::string exe = (dir.path / (standalone ? "run_std" : "run_qk")).string();
    const std::string log = (dir.path / "compile.log").string();
    std::string cmd = std::string(QUANTKIT_TEST_CXX) + " -std=c++17 -O1 -Wall -Wextra -Wpedantic -Werror";
    cmd += standalone ? " -Wshadow -Wconversion -Wsign-conversion" : " -I'" + repo_dir + "/include'";
    cmd += " -DMODEL_HEADER='\"" + header + "\"' -I'" + dir.path.string() + "' '" + (dir.path / "driver.cpp").string() +
           "' -o '" + exe + "' > '" + log + "' 2>&1";
    const int compiled = std::system(cmd.c_str());
    INFO("compile: " << cmd << "\n" << read_text(log));
    REQUIRE(compiled == 0);
    const std::string out = (dir.path / "y.bin").string();
    REQUIRE(std::system(("'" + exe + "' '" + (dir.path / "x.bin").string() + "' '" + out + "'").c_str()) == 0);
    const std::string y = read_text(out);
    REQUIRE(y.size() == reference.nbytes());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < y.size(); ++i) differ += static_cast<std::uint8_t>(y[i]) != reference.data<std::uint8_t>()[i];
    CHECK(differ == 0);
    CHECK(accuracy_of(reinterpret_cast<const std::uint8_t*>(y.data())) == executor_accuracy);
  }
}

TEST_CASE("C++ export: errors name the node or the option, and nothing is written") {
  const Graph g = load("digits_cnn.onnx");
  qk::ptq::PtqConfig cfg;
  cfg.keep_float = {"/fc2/Gemm"};
  const Graph with_float = qk::onnx::qdq_graph(calibrate(g, cfg).qm);
  CHECK_THROWS_WITH_AS(qk::cpp_export::generate(with_float), doctest::Contains("/fc2/Gemm (Gemm): "), qk::Error);
  const Graph qdq = qk::onnx::qdq_graph(calibrate(g, qk::ptq::PtqConfig{}).qm);
  // The Relu requantizations need scales > 1: a single right shift cannot express them.
  CHECK_THROWS_WITH_AS(qk::cpp_export::generate<qk::SingleShift>(qdq), doctest::Contains("cannot express"), qk::Error);
  CHECK_THROWS_WITH_AS(qk::cpp_export::generate(qdq, qk::RequantScheme::single_shift), doctest::Contains("cannot express"),
                       qk::Error);
  CHECK_THROWS_WITH_AS(qk::cpp_export::generate(qdq, qk::RequantScheme::float_multiplier),
                       doctest::Contains("scheme 'float' cannot be exported"), qk::Error);
  CHECK(qk::cpp_export::generate(qdq, qk::RequantScheme::fixed_point_single).find("single rounding") != std::string::npos);
  qk::cpp_export::Options bad;
  bad.name_space = "9lives";
  CHECK_THROWS_WITH_AS(qk::cpp_export::generate(qdq, bad), doctest::Contains("name_space '9lives'"), qk::Error);
  bad.name_space = "app::net";
  CHECK(qk::cpp_export::generate(qdq, bad).find("namespace app::net {") != std::string::npos);
  bad.input_shapes = {{"nope", {1, 1, 8, 8}}};
  CHECK_THROWS_WITH_AS(qk::cpp_export::generate(qdq, bad), doctest::Contains("'nope', which is not a graph input"), qk::Error);

  TempDir dir;
  const fs::path path = dir.path / "model.hpp";
  std::ofstream(path) << "previous";
  CHECK_THROWS_WITH_AS(qk::cpp_export::write(with_float, path.string()),
                       doctest::Contains(("writing '" + path.string() + "'").c_str()), qk::Error);
  CHECK(read_text(path) == "previous");
  const fs::path missing = dir.path / "no" / "such" / "folder" / "model.hpp";
  CHECK_THROWS_WITH_AS(qk::cpp_export::write(qdq, missing.string()), doctest::Contains(missing.string().c_str()), qk::Error);
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) files += e.is_regular_file();
  CHECK(files == 1);  // no temporary file left behind
}

}  // namespace test_ptq_remedies_onnx
