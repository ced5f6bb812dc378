// analysis::ort_pair_sums / ort_saturation: ONNX Runtime's uint8 x int8 kernels on x86-64
// without AVX-VNNI (int16-saturating pair sums). The golden cases (tests/golden/ort_saturation.json,
// tools/golden/gen_ort_saturation_golden.py: ONNX Runtime 1.30 on an AVX2 host) are replayed bit
// for bit: quantkit's saturated accumulators, requantized as ONNX Runtime does, give its default
// session's outputs, and the exact ones its x64quantprecision session's; the integer mode with
// IntegerModeOptions::ort_pair_saturation runs each case's QDQ model to ONNX Runtime's default
// session's outputs (without it, to the exact session's). Then the check on the demo CNN:
// full-range weights saturate, --reduce-range's never can.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <quantkit/analysis/ort_saturation.hpp>
#include <quantkit/executor/integer/mode.hpp>
#include <quantkit/io/npy.hpp>
#include <quantkit/observer/minmax.hpp>
#include <quantkit/onnx.hpp>
#include <quantkit/ptq.hpp>
#include <quantkit/simd/gemm.hpp>

#include "support/golden.hpp"

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_analysis_ort_saturation_onnx {

namespace qk = quantkit;
namespace qa = quantkit::analysis;
using qk::graph::Tensor;
using nlohmann::json;

namespace {

const std::string demo_dir = std::string(QUANTKIT_TEST_DIR) + "/../examples/data/demo/";

Tensor npy_f32(const std::string& path) {
  const qk::npy::Array a = qk::npy::load(path);
  return Tensor::from_vector<float>(a.shape, a.as<float>(path), path);
}

qk::Dims dims_of(const json& j) {
  const auto v = j.get<std::vector<std::int64_t>>();
  return qk::Dims::from(v.begin(), v.end());
}

template <class T>
Tensor int_tensor(qk::graph::DType dt, const json& shape, const json& values) {
  Tensor t(dt, dims_of(shape));
  const auto v = values.get<std::vector<std::int64_t>>();
  REQUIRE(static_cast<std::int64_t>(v.size()) == t.size());
  for (std::size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = static_cast<T>(v[i]);
  return t;
}

qk::graph::Node node_of(const json& c) {
  qk::graph::Node n;
  n.op_type = c.at("op").get<std::string>();
  n.name = c.at("name").get<std::string>();
  n.inputs = {"x", "w"};
  n.outputs = {"y"};
  for (const auto& kv : c.at("attrs").items()) {
    if (kv.value().is_array())
      n.attributes[kv.key()] = qk::graph::Attribute::make_ints(kv.value().get<std::vector<std::int64_t>>());
    else
      n.attributes[kv.key()] = qk::graph::Attribute::make_int(kv.value().get<std::int64_t>());
  }
  return n;
}

// ONNX Runtime's requantization (MLAS): float32 acc * (x_scale * w_scale / y_scale), rounded
// half to even, + zero point, clamped to uint8.
std::int64_t requantize(std::int64_t acc, float scale, std::int64_t zp) {
  const float v = std::nearbyint(static_cast<float>(acc) * scale);
  return std::min<std::int64_t>(255, std::max<std::int64_t>(0, static_cast<std::int64_t>(v) + zp));
}

}  // namespace

TEST_CASE("ort_pair_sums: ONNX Runtime's uint8 x int8 outputs without VNNI, bit for bit (golden)") {
  const json g = quantkit_test::load_golden("ort_saturation.json");
  REQUIRE(g.at("cases").size() >= 16);
  std::int64_t differing_total = 0;
  for (const json& c : g.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    CAPTURE(name);
    const qk::graph::Node n = node_of(c);
    const Tensor x = int_tensor<std::uint8_t>(qk::graph::DType::uint8, c.at("x_shape"), c.at("x"));
    const Tensor w = int_tensor<std::int8_t>(qk::graph::DType::int8, c.at("w_shape"), c.at("w"));
    const std::int32_t zx = c.at("x_zero_point").get<std::int32_t>();
    const float xs = c.at("x_scale").get<float>(), ys = c.at("y_scale").get<float>();
    std::vector<float> ws;
    if (c.at("w_scale").is_array())
      ws = c.at("w_scale").get<std::vector<float>>();
    else
      ws = {c.at("w_scale").get<float>()};
    const auto ort_default = c.at("ort_default").get<std::vector<std::int64_t>>();
    const auto ort_exact = c.at("ort_exact").get<std::vector<std::int64_t>>();
    // the zero-point term ONNX Runtime subtracts exactly: zx * (sum of the channel's weights)
    const auto wv = c.at("w").get<std::vector<std::int64_t>>();
    const bool trans_b = n.attr_int("transB", 0) != 0;
    const auto wshape = c.at("w_shape").get<std::vector<std::int64_t>>();
    std::map<std::int64_t, std::int64_t> wsum;
    for (std::size_t i = 0; i < wv.size(); ++i) {
      std::int64_t ch;
      if (n.op_type == "Conv") ch = static_cast<std::int64_t>(i) / (static_cast<std::int64_t>(wv.size()) / wshape[0]);
      else ch = trans_b ? static_cast<std::int64_t>(i) / wshape[1] : static_cast<std::int64_t>(i) % wshape[1];
      wsum[ch] += wv[i];
    }
    std::vector<std::int64_t> got_default(ort_default.size(), -1), got_exact(ort_exact.size(), -1);
    std::int64_t calls = 0, differing = 0;
    const qa::PairSumStats st = qa::ort_pair_sums(
        n, 13, x, zx, w, [&](std::int64_t idx, std::int64_t ch, std::int64_t exact, std::int64_t sat) {
          ++calls;
          REQUIRE(idx >= 0);
          REQUIRE(idx < static_cast<std::int64_t>(got_default.size()));
          const float scale = xs * ws[ws.size() == 1 ? 0 : static_cast<std::size_t>(ch)] / ys;
          got_default[static_cast<std::size_t>(idx)] = requantize(sat - zx * wsum[ch], scale, 128);
          got_exact[static_cast<std::size_t>(idx)] = requantize(exact - zx * wsum[ch], scale, 128);
        });
    for (std::size_t i = 0; i < ort_default.size(); ++i) differing += ort_default[i] != ort_exact[i];
    differing_total += differing;
    if (name == "conv_depthwise") {
      // ONNX Runtime's depthwise kernel sums in int32: no pair sums, both sessions agree
      CHECK_FALSE(st.pair_sums);
      CHECK(calls == 0);
      CHECK(differing == 0);
      continue;
    }
    CHECK(st.pair_sums);
    CHECK(calls == static_cast<std::int64_t>(ort_default.size()));
    CHECK(st.outputs == calls);
    CHECK(st.pairs == st.outputs * ((st.reduction + 1) / 2));
    std::int64_t mismatches_default = 0, mismatches_exact = 0;
    for (std::size_t i = 0; i < ort_default.size(); ++i) {
      mismatches_default += got_default[i] != ort_default[i];
      mismatches_exact += got_exact[i] != ort_exact[i];
    }
    CHECK(mismatches_default == 0);
    CHECK(mismatches_exact == 0);
    // every output the sessions disagree on is an accumulator the check flags
    CHECK(st.affected_outputs >= differing);
    CHECK(differing > 0);
    CHECK(st.saturated_pairs > 0);
    CHECK(st.max_pair > 32767);
  }
  CHECK(differing_total > 1000);
}

TEST_CASE("ort_pair_sums: pairing, bounds and errors") {
  // MatMul [1, 4] x [4, 2]: column 0 pairs (k0, k1) at 255 x 127 (saturates); column 1 puts the
  // large weights on k1, k2 (two different pairs: exact)
  qk::graph::Node mm;
  mm.op_type = "MatMul";
  mm.name = "mm";
  const Tensor x = Tensor::from_vector<std::uint8_t>(qk::Dims{1, 4}, {255, 255, 255, 255});
  const Tensor w = Tensor::from_vector<std::int8_t>(qk::Dims{4, 2}, {127, 0, 127, 127, 0, 127, 0, 0});
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> acc;
  const auto st = qa::ort_pair_sums(mm, 13, x, 0, w, [&](std::int64_t i, std::int64_t, std::int64_t e, std::int64_t s) {
    acc[i] = {e, s};
  });
  CHECK(acc.at(0) == std::make_pair(std::int64_t{64770}, std::int64_t{32767}));
  CHECK(acc.at(1) == std::make_pair(std::int64_t{64770}, std::int64_t{64770}));
  CHECK(st.saturated_pairs == 1);
  CHECK(st.affected_outputs == 1);
  CHECK(st.max_error == 64770 - 32767);
  CHECK(st.max_pair == 64770);
  CHECK(st.reduction == 4);
  CHECK(st.pairs == 4);
  // -128 weights: the negative side saturates at -32768
  const Tensor wn = Tensor::from_vector<std::int8_t>(qk::Dims{4, 2}, {-128, 0, -128, 0, 0, 0, 0, 0});
  const auto sn = qa::ort_pair_sums(mm, 13, x, 0, wn, [&](std::int64_t i, std::int64_t, std::int64_t e, std::int64_t s) {
    if (i == 0) CHECK(e - s == -65280 + 32768);
  });
  CHECK(sn.min_pair == -65280);
  // 7-bit weights (reduce_range) never saturate: the worst pair is 255 * 64 * 2
  const Tensor w7 = Tensor::from_vector<std::int8_t>(qk::Dims{4, 2}, {-64, 64, -64, 64, -64, 64, -64, 64});
  const auto s7 = qa::ort_pair_sums(mm, 13, x, 0, w7, [](std::int64_t, std::int64_t, std::int64_t, std::int64_t) {});
  CHECK(s7.saturated_pairs == 0);
  CHECK(s7.max_pair == 32640);
  CHECK(s7.min_pair == -32640);
  // errors name the node and what was expected
  const Tensor xs8 = Tensor::from_vector<std::int8_t>(qk::Dims{1, 4}, {1, 2, 3, 4});
  auto none = [](std::int64_t, std::int64_t, std::int64_t, std::int64_t) {};
  CHECK_THROWS_WITH_AS(qa::ort_pair_sums(mm, 13, xs8, 0, w, none),
                       doctest::Contains("node 'mm' (op MatMul): input x has element type int8; expected uint8"),
                       qk::Error);
  const Tensor w3 = Tensor::from_vector<std::int8_t>(qk::Dims{3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(qa::ort_pair_sums(mm, 13, x, 0, w3, none),
                       doctest::Contains("reduces over 4 values but weight [3, 2] over 3"), qk::Error);
  qk::graph::Node relu;
  relu.op_type = "Relu";
  relu.name = "r";
  CHECK_THROWS_WITH_AS(qa::ort_pair_sums(relu, 13, x, 0, w, none), doctest::Contains("not a Conv, MatMul or Gemm"),
                       qk::Error);
  // Conv: the zero point fills the padding as a uint8, so one outside [0, 255] is an error, not a
  // wrapped value; a geometry or group that does not match the tensors (a direct caller of
  // integer::ort_conv_pair_sums) is one too, not an out-of-bounds read.
  qk::graph::Node conv;
  conv.op_type = "Conv";
  conv.name = "c";
  conv.attributes["pads"] = qk::graph::Attribute::make_ints({1, 1, 1, 1});
  const Tensor xc = Tensor::from_vector<std::uint8_t>(qk::Dims{1, 2, 3, 3}, std::vector<std::uint8_t>(18, 7));
  const Tensor wc = Tensor::from_vector<std::int8_t>(qk::Dims{2, 2, 3, 3}, std::vector<std::int8_t>(36, 1));
  std::int64_t sum0 = 0;
  const auto sc = qa::ort_pair_sums(conv, 13, xc, 255, wc, [&](std::int64_t i, std::int64_t, std::int64_t e, std::int64_t) {
    if (i == 0) sum0 = e;
  });
  CHECK(sc.outputs == 2 * 9);
  CHECK(sum0 == 2 * (4 * 7 + 5 * 255));  // the corner: 4 taps inside, 5 in the padding, 2 channels
  CHECK_THROWS_WITH_AS(qa::ort_pair_sums(conv, 13, xc, 256, wc, none),
                       doctest::Contains("node 'c' (op Conv): input x zero point 256 is outside uint8's [0, 255]"),
                       qk::Error);
  CHECK_THROWS_WITH_AS(qa::ort_pair_sums(conv, 13, xc, -1, wc, none),
                       doctest::Contains("input x zero point -1 is outside uint8's [0, 255]"), qk::Error);
  const auto conv_fail = [&conv](auto&&... parts) { conv.fail(std::forward<decltype(parts)>(parts)...); };
  qk::ops::WindowGeometry big;  // a 4 x 4 input where x is 3 x 3
  big.spatial = 2;
  big.in = {1, 4, 4};
  big.kernel = {1, 3, 3};
  big.out = {1, 2, 2};
  CHECK_THROWS_WITH_AS(qk::integer::ort_conv_pair_sums(big, 1, xc, 0, wc, conv_fail, none),
                       doctest::Contains("input [1, 2, 3, 3], weight [2, 2, 3, 3] and group 1 do not match the "
                                         "convolution (input N x C x spatial of 16 values"),
                       qk::Error);
  qk::ops::WindowGeometry g3 = big;
  g3.in = {1, 3, 3};
  g3.out = {1, 1, 1};
  CHECK_THROWS_WITH_AS(qk::integer::ort_conv_pair_sums(g3, 2, xc, 0, wc, conv_fail, none),
                       doctest::Contains("and group 2 do not match"), qk::Error);
}

TEST_CASE("ort_pair_sums: a reduction past 65536 (kernel chunks) sums in int64, every target's kernel") {
  // MatMul [2, 70001] x [70001, 3]: the exact sums pass 2^31 (35001 pairs of up to 64770), which
  // the kernel's int32 lanes hold only per chunk of 65536; the odd K leaves a last pair of one
  // product. Column 0 saturates every pair, column 1 alternates signs (exact), column 2 mixes.
  const std::int64_t K = 70001;
  std::vector<std::uint8_t> xv(static_cast<std::size_t>(2 * K));
  std::vector<std::int8_t> wv(static_cast<std::size_t>(K * 3));
  for (std::int64_t k = 0; k < K; ++k) {
    xv[static_cast<std::size_t>(k)] = 255;
    xv[static_cast<std::size_t>(K + k)] = static_cast<std::uint8_t>((k * 37) % 256);
    wv[static_cast<std::size_t>(k * 3)] = 127;
    wv[static_cast<std::size_t>(k * 3 + 1)] = k % 2 ? -128 : 127;
    wv[static_cast<std::size_t>(k * 3 + 2)] = static_cast<std::int8_t>((k * 91) % 256 - 128);
  }
  const Tensor x = Tensor::from_vector<std::uint8_t>(qk::Dims{2, K}, xv);
  const Tensor w = Tensor::from_vector<std::int8_t>(qk::Dims{K, 3}, wv);
  // the model, directly
  std::int64_t want_exact[6] = {}, want_sat[6] = {}, want_clamped = 0;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c)
      for (std::int64_t k = 0; k < K; k += 2) {
        std::int64_t p = std::int64_t{xv[static_cast<std::size_t>(r * K + k)]} * wv[static_cast<std::size_t>(k * 3 + c)];
        if (k + 1 < K) p += std::int64_t{xv[static_cast<std::size_t>(r * K + k + 1)]} * wv[static_cast<std::size_t>((k + 1) * 3 + c)];
        const std::int64_t s = std::min<std::int64_t>(std::max<std::int64_t>(p, -32768), 32767);
        want_exact[r * 3 + c] += p;
        want_sat[r * 3 + c] += s;
        want_clamped += s != p;
      }
  REQUIRE(want_exact[0] > std::int64_t{1} << 31);  // would wrap in one int32 sum
  qk::graph::Node mm;
  mm.op_type = "MatMul";
  mm.name = "wide";
  for (const qk::simd::Kernels* k : qk::simd::available_kernels()) {
    CAPTURE(k->name);
    std::int64_t got_exact[6] = {}, got_sat[6] = {}, got_only[6] = {};
    const auto fail = [&mm](auto&&... parts) { mm.fail(std::forward<decltype(parts)>(parts)...); };
    const auto st = qk::integer::ort_gemm_pair_sums(
        x, false, w, false, fail,
        [&](std::int64_t i, std::int64_t, std::int64_t e, std::int64_t s) {
          got_exact[i] = e;
          got_sat[i] = s;
        },
        qk::integer::PairSumDetail::statistics, k);
    qk::integer::ort_gemm_pair_sums(
        x, false, w, false, fail, [&](std::int64_t i, std::int64_t, std::int64_t, std::int64_t s) { got_only[i] = s; },
        qk::integer::PairSumDetail::saturated_only, k);
    for (int i = 0; i < 6; ++i) {
      CHECK(got_exact[i] == want_exact[i]);
      CHECK(got_sat[i] == want_sat[i]);
      CHECK(got_only[i] == want_sat[i]);
    }
    CHECK(st.saturated_pairs == want_clamped);
    CHECK(st.pairs == 6 * ((K + 1) / 2));
    CHECK(st.max_pair == 255 * 127 * 2);
  }
}

namespace {
// The golden case's model, as the generator writes it: X -> Q(uint8) -> DQ -> op(., DQ(W int8))
// -> Q(uint8, zero point 128) -> Y.
qk::graph::Graph case_graph(const json& c) {
  using qk::graph::Attribute;
  qk::graph::Graph g;
  g.name = c.at("name").get<std::string>();
  g.opset = 13;
  qk::graph::ValueInfo x;
  x.name = "X";
  x.dtype = qk::graph::DType::float32;
  x.has_shape = true;
  x.dims = c.at("x_shape").get<std::vector<std::int64_t>>();
  g.inputs.push_back(x);
  qk::graph::ValueInfo y;
  y.name = "Y";
  y.dtype = qk::graph::DType::uint8;
  g.outputs.push_back(y);
  Tensor w = int_tensor<std::int8_t>(qk::graph::DType::int8, c.at("w_shape"), c.at("w"));
  w.set_name("Wq");
  g.initializers["Wq"] = w;
  const bool per_channel = c.at("w_scale").is_array();
  const auto ws = per_channel ? c.at("w_scale").get<std::vector<float>>() : std::vector<float>{c.at("w_scale").get<float>()};
  g.initializers["ws"] = per_channel ? Tensor::from_vector<float>(qk::Dims{static_cast<std::int64_t>(ws.size())}, ws, "ws")
                                     : Tensor::scalar(ws[0], "ws");
  g.initializers["wz"] = per_channel ? Tensor::from_vector<std::int8_t>(qk::Dims{static_cast<std::int64_t>(ws.size())},
                                                                        std::vector<std::int8_t>(ws.size(), 0), "wz")
                                     : Tensor::scalar<std::int8_t>(0, "wz");
  g.initializers["xs"] = Tensor::scalar(c.at("x_scale").get<float>(), "xs");
  g.initializers["xz"] = Tensor::scalar(static_cast<std::uint8_t>(c.at("x_zero_point").get<int>()), "xz");
  g.initializers["ys"] = Tensor::scalar(c.at("y_scale").get<float>(), "ys");
  g.initializers["yz"] = Tensor::scalar(static_cast<std::uint8_t>(128), "yz");
  auto add = [&](const char* op, std::vector<std::string> in, std::string out) {
    qk::graph::Node n;
    n.op_type = op;
    n.name = out + "_node";
    n.inputs = std::move(in);
    n.outputs = {std::move(out)};
    return n;
  };
  g.nodes.push_back(add("QuantizeLinear", {"X", "xs", "xz"}, "Xq"));
  g.nodes.push_back(add("DequantizeLinear", {"Xq", "xs", "xz"}, "Xd"));
  qk::graph::Node wdq = add("DequantizeLinear", {"Wq", "ws", "wz"}, "Wd");
  const bool trans_b = c.at("attrs").value("transB", 0) != 0;
  if (per_channel) wdq.attributes["axis"] = Attribute::make_int(c.at("op") == "Conv" ? 0 : (trans_b ? 0 : 1));
  g.nodes.push_back(wdq);
  qk::graph::Node op = node_of(c);
  op.inputs = {"Xd", "Wd"};
  op.outputs = {"Yf"};
  g.nodes.push_back(op);
  g.nodes.push_back(add("QuantizeLinear", {"Yf", "ys", "yz"}, "Y"));
  return g;
}
}  // namespace

TEST_CASE("IntegerModeOptions::ort_pair_saturation: ONNX Runtime's default session without VNNI (golden)") {
  using Mode = qk::IntegerModeT<qk::FloatMultiplier<qk::RoundHalfEven>>;
  const json g = quantkit_test::load_golden("ort_saturation.json");
  for (const json& c : g.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    CAPTURE(name);
    const qk::graph::Graph model = case_graph(c);
    // X = (x - zero point) * scale: its QuantizeLinear gives back the golden integers
    const auto xi = c.at("x").get<std::vector<std::int64_t>>();
    std::vector<float> xf(xi.size());
    const float xs = c.at("x_scale").get<float>();
    const auto zx = c.at("x_zero_point").get<std::int64_t>();
    for (std::size_t i = 0; i < xi.size(); ++i) xf[i] = static_cast<float>(xi[i] - zx) * xs;
    const std::map<std::string, Tensor> in = {{"X", Tensor::from_vector<float>(dims_of(c.at("x_shape")), xf)}};
    if (c.at("attrs").value("transA", 0) != 0) {
      // the integer mode keeps Gemm with transA in float and says so (ort_pair_sums checks it above)
      const qk::Executor<Mode> run(model, Mode(qk::IntegerModeOptions{}));
      bool rejected = false;
      for (const auto& r : run.mode().report())
        if (r.node == name) {
          CHECK_FALSE(r.integer);
          CHECK(r.detail.find("Gemm with transA") != std::string::npos);
          rejected = true;
        }
      CHECK(rejected);
      continue;
    }
    for (bool emulate : {true, false}) {
      CAPTURE(emulate);
      qk::IntegerModeOptions opt;
      opt.ort_pair_saturation = emulate;
      const qk::Executor<Mode> run(model, Mode(opt));
      for (const auto& r : run.mode().report()) CHECK_MESSAGE(r.integer, r.node, ": ", r.detail);
      const Tensor y = run.run(in).at("Y");
      REQUIRE(y.dtype() == qk::graph::DType::uint8);
      const auto want = c.at(emulate ? "ort_default" : "ort_exact").get<std::vector<std::int64_t>>();
      REQUIRE(static_cast<std::int64_t>(want.size()) == y.size());
      std::int64_t mismatches = 0;
      for (std::int64_t i = 0; i < y.size(); ++i) mismatches += y.data<std::uint8_t>()[i] != want[static_cast<std::size_t>(i)];
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("ort_saturation: the demo CNN saturates with full-range weights, never with reduce_range") {
  const qk::graph::Graph g = qk::onnx::load(demo_dir + "digits_cnn.onnx");
  const Tensor calib = npy_f32(demo_dir + "digits_calib.npy");
  const std::map<std::string, Tensor> samples = {{"input", calib}};
  auto calibrate = [&](bool reduce, bool int8_activations = false) {
    qk::ptq::PtqConfig cfg;
    cfg.convention = qk::ConventionKind::onnxruntime;
    cfg.reduce_range = reduce;
    cfg.symmetric_activations = int8_activations;
    qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(g, cfg);
    cal.observe(qk::ptq::split_batches("input", calib, 64));
    return cal.finish();
  };
  const auto full = qa::ort_saturation(calibrate(false), samples);
  const auto reduced = qa::ort_saturation(calibrate(true), samples);
  REQUIRE(full.size() == reduced.size());
  REQUIRE(full.size() >= 4);
  std::size_t saturating = 0, depthwise = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    CAPTURE(full[i].node);
    CHECK(full[i].node == reduced[i].node);
    CHECK(full[i].formats == "uint8 x int8");
    if (!full[i].checked) {
      CHECK(full[i].reason == "depthwise: int32 sums");
      ++depthwise;
      continue;
    }
    const std::int64_t samples_n = calib.dim(0);
    CHECK(full[i].stats.outputs % samples_n == 0);
    CHECK(full[i].stats.pairs == full[i].stats.outputs * ((full[i].stats.reduction + 1) / 2));
    saturating += full[i].saturates();
    if (full[i].saturates()) {
      CHECK(full[i].stats.affected_outputs > 0);
      CHECK(full[i].max_real_error > 0);
    }
    // 7-bit weights: every pair within +-32640
    CHECK(reduced[i].checked);
    CHECK(reduced[i].stats.saturated_pairs == 0);
    CHECK(reduced[i].stats.affected_outputs == 0);
    CHECK(reduced[i].stats.max_pair <= 32640);
    CHECK(reduced[i].stats.min_pair >= -32640);
    CHECK(reduced[i].max_real_error == 0);
  }
  CHECK(depthwise >= 1);
  CHECK(saturating >= 1);
  const std::string text = qa::format_ort_saturation(full);
  CHECK(text.find("checked nodes saturate") != std::string::npos);
  CHECK(text.find("--reduce-range") != std::string::npos);
  CHECK(text.find("not checked: depthwise: int32 sums") != std::string::npos);
  CHECK(qa::format_ort_saturation(reduced).find("no pair sum outside int16") != std::string::npos);
  // int8 activations run ONNX Runtime's int8 x int8 kernels: nothing to check, and the rows say why
  const auto signed_rows = qa::ort_saturation(calibrate(false, true), samples);
  REQUIRE(signed_rows.size() == full.size());
  for (const auto& r : signed_rows) {
    CAPTURE(r.node);
    CHECK_FALSE(r.checked);
    CHECK(r.formats == "int8 x int8");
    CHECK(r.reason == "not uint8 x int8");
    CHECK(r.stats.outputs == 0);
  }
  CHECK(qa::format_ort_saturation(signed_rows).find("no node runs on ONNX Runtime's uint8 x int8 kernels") != std::string::npos);
}

}  // namespace test_analysis_ort_saturation_onnx
