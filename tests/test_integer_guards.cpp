// Numeric guards of the integer executor (quantkit/executor/integer/ops.hpp, top comment): a
// reduction long enough to overflow the int32 accumulator is refused naming the layer and the
// bound, one just inside the bound runs; requantization multipliers outside a scheme's range are
// refused when the integer graph is built, naming the layer.
#include <quantkit/simd/simd.hpp>  // implementation: tests/support/simd_dispatch.cpp

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <quantkit/executor.hpp>
#include <quantkit/executor/integer/mode.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_integer_guards {

namespace qk = quantkit;
using qk::graph::DType;
using qk::graph::Graph;
using qk::graph::Node;
using qk::graph::Tensor;

namespace {
Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out, std::string name) {
  Node n;
  n.op_type = op;
  n.name = std::move(name);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}
qk::graph::ValueInfo info(const std::string& name, DType t) {
  qk::graph::ValueInfo v;
  v.name = name;
  v.dtype = t;
  return v;
}
// a [1, K] uint8 -> DQ -> MatMul(DQ(b [K, 1] int8)) -> Q -> y: the integer mode makes it IntMatMul.
Graph matmul_graph(std::int64_t K, float out_scale) {
  Graph g;
  g.opset = 13;
  g.inputs = {info("a", DType::uint8)};
  g.outputs = {info("y", DType::uint8)};
  auto init = [&](const std::string& n, Tensor t) { g.initializers.emplace(n, std::move(t)); };
  init("as", Tensor::scalar(0.01f));
  init("az", Tensor::scalar<std::uint8_t>(0));
  Tensor b(DType::int8, qk::Dims{K, 1});
  for (std::int64_t i = 0; i < K; ++i) b.data<std::int8_t>()[i] = 127;
  init("b", std::move(b));
  init("bs", Tensor::scalar(0.01f));
  init("bz", Tensor::scalar<std::int8_t>(0));
  init("ys", Tensor::scalar(out_scale));
  init("yz", Tensor::scalar<std::uint8_t>(0));
  g.nodes.push_back(node("DequantizeLinear", {"a", "as", "az"}, {"af"}, "dq_a"));
  g.nodes.push_back(node("DequantizeLinear", {"b", "bs", "bz"}, {"bf"}, "dq_b"));
  g.nodes.push_back(node("MatMul", {"af", "bf"}, {"yf"}, "fc_big"));
  g.nodes.push_back(node("QuantizeLinear", {"yf", "ys", "yz"}, {"y"}, "q_y"));
  return g;
}
}  // namespace

TEST_CASE("integer mode: a reduction that could overflow int32 is refused naming the layer") {
  using Scheme = qk::FixedPointDoubleRounding;
  const std::int64_t max_k = 2147483647 / (255 * 128);  // 65793
  {
    qk::Executor<qk::IntegerModeT<Scheme>> ex(matmul_graph(max_k + 1, 2000.0f));
    REQUIRE(ex.mode().integer_count() == 1);
    Tensor a(DType::uint8, qk::Dims{1, max_k + 1});
    std::string msg;
    try {
      ex.run({{"a", a}});
    } catch (const qk::Error& e) {
      msg = e.what();
    }
    CHECK(msg.find("fc_big") != std::string::npos);
    CHECK(msg.find("int32 accumulator could overflow: 65794 products of |x - zx| <= 255 and |w - zw| <= 128") !=
          std::string::npos);
    CHECK(msg.find("expected a reduction length K <= 65793") != std::string::npos);
  }
  {
    // K = 65793 with every product at its maximum: 65793 * 255 * 127 = 2130706305 fits, and the
    // result is exact: y = round(0.01 * 0.01 * acc / 2000) = 107 (uint8).
    qk::Executor<qk::IntegerModeT<Scheme>> ex(matmul_graph(max_k, 2000.0f));
    Tensor a(DType::uint8, qk::Dims{1, max_k});
    for (std::int64_t i = 0; i < max_k; ++i) a.data<std::uint8_t>()[i] = 255;
    const Tensor y = ex.run({{"a", a}}).at("y");
    REQUIRE(y.size() == 1);
    CHECK(static_cast<int>(y.data<std::uint8_t>()[0]) == 107);
  }
}

TEST_CASE("integer mode: a requantization multiplier a scheme cannot represent is never wrapped") {
  // 0.01 * 0.01 / 1e-7 = 1000 > 1: a power-of-two right shift cannot multiply by 1000. The
  // integer rewrite keeps that layer in float (the fake-quant result) and its report names the
  // layer and the multiplier; the integer op itself refuses it naming the layer.
  using Shift = qk::PowerOfTwo<qk::RoundHalfAway>;
  qk::Executor<qk::IntegerModeT<Shift>> ex(matmul_graph(4, 1e-7f));
  CHECK(ex.mode().integer_count() == 0);
  std::string why;
  for (const auto& r : ex.mode().report())
    if (!r.integer && r.op_type == "MatMul") why = r.detail;
  MESSAGE(why);
  CHECK(why.find("layer 'fc_big': requantization multiplier 1000 exceeds 1") != std::string::npos);
  std::string msg;
  try {
    (void)Shift::make(1000.0, "fc_big");
  } catch (const qk::Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("layer 'fc_big': requantization multiplier 1000 exceeds 1") != std::string::npos);
}

}  // namespace test_integer_guards
