// Where ONNX Runtime's x86-64 kernels do not compute what a quantized model states: on CPUs
// without AVX-VNNI, MLAS's uint8 x int8 GEMM multiplies with VPMADDUBSW, which adds each pair
// of products of the reduction (k = 2j, 2j + 1) into int16 with saturation before the int32
// sum. A pair of a uint8 activation near 255 and int8 weights near +-127 (255 * 127 * 2 = 64770)
// saturates at 32767 / -32768 and the accumulator is wrong. ONNX Runtime's default session
// (session.x64quantprecision off) runs QLinearConv, QLinearMatMul, QGemm and MatMulIntegerToFloat
// this way; 7-bit weights (PtqConfig::reduce_range) bound a pair by 255 * 64 * 2 = 32640.
//
//   const auto rows = qk::analysis::ort_saturation(qm, {{"input", x}});
//   std::fputs(qk::analysis::format_ort_saturation(rows).c_str(), stdout);
//
// The model of ONNX Runtime's arithmetic (quantkit/executor/integer/ort_pairs.hpp) reproduces
// ONNX Runtime 1.30's outputs bit for bit on an AVX2 host (tests/golden/ort_saturation.json);
// int8 activations (int8 x int8 kernels) were exact there.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/builtin_ops.hpp"
#include "quantkit/executor/executor.hpp"
#include "quantkit/executor/integer/ort_pairs.hpp"
#include "quantkit/executor/ops/conv.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/fake_quant.hpp"
#include "quantkit/ptq/layer_data.hpp"
#include "quantkit/ptq/weights.hpp"

namespace quantkit {
namespace analysis {

using integer::PairSumStats;

// The accumulators of `node` (Conv, MatMul or Gemm, its weight input 1) as ONNX Runtime's x86-64
// uint8 x int8 kernels without VNNI compute them (integer::ort_conv_pair_sums /
// ort_gemm_pair_sums): x the uint8 input integers, x_zero_point its zero point (Conv padding), w
// the int8 weight integers; on_output(index, channel, exact, saturated) per accumulator. Errors
// name the node.
template <class F>
PairSumStats ort_pair_sums(const graph::Node& node, int opset, const graph::Tensor& x, std::int32_t x_zero_point,
                           const graph::Tensor& w, F&& on_output) {
  const auto fail = [&node](auto&&... parts) { node.fail(std::forward<decltype(parts)>(parts)...); };
  if (node.op_type == "Conv") {
    OpContext ctx(node, opset, {&x, &w});
    const std::int64_t group = node.attr_int("group", 1);
    const ops::WindowGeometry g = ops::conv_geometry(ctx, x.shape(), w.shape(), group);
    return integer::ort_conv_pair_sums(g, group, x, x_zero_point, w, fail, on_output);
  }
  if (node.op_type == "MatMul") return integer::ort_gemm_pair_sums(x, false, w, false, fail, on_output);
  if (node.op_type == "Gemm")
    return integer::ort_gemm_pair_sums(x, node.attr_int("transA", 0) != 0, w, node.attr_int("transB", 0) != 0, fail,
                                       on_output);
  node.fail("not a Conv, MatMul or Gemm; expected one of those (ONNX Runtime's uint8 x int8 GEMM ops)");
}

// One quantized Conv / MatMul / Gemm of a model over the samples.
struct OrtSaturationRow {
  std::string node, op;
  std::string input, weight;
  std::string formats;         // "uint8 x int8", ...
  bool checked = false;        // false: ONNX Runtime's kernel for it has no int16 pair sums
  std::string reason;          // why not checked
  PairSumStats stats;
  double max_real_error = 0;   // max over accumulators of |error| * s_x * s_w (the output's units)
  double max_output_steps = 0; // the same in steps of the output's scale (0: output not quantized)
  bool saturates() const { return checked && stats.saturated_pairs > 0; }
};

// Every quantized Conv, MatMul and Gemm of `qm` on `inputs` (its fake-quant run gives each
// node's input integers; weights are the integers the exports store).
inline std::vector<OrtSaturationRow> ort_saturation(const ptq::QuantizedModel& qm,
                                                    const std::map<std::string, graph::Tensor>& inputs) {
  const auto layers = ptq::detail::quantized_layers(qm);
  const Executor<ptq::FakeQuantMode> fake(qm.graph, ptq::FakeQuantMode(qm));
  // the fake-quant graph's name for each layer's (quantized) input
  std::vector<std::string> fq_input(layers.size());
  RunOptions opt;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const graph::Node& n = qm.graph.nodes[layers[i].node];
    for (const auto& fn : fake.graph().nodes)
      if (ptq::node_key(fn) == layers[i].key && fn.op_type == n.op_type) fq_input[i] = fn.inputs.at(0);
    if (fq_input[i].empty()) n.fail("not found in the fake-quant model");
    opt.outputs.push_back(fq_input[i]);
  }
  std::vector<OrtSaturationRow> rows;
  if (layers.empty()) return rows;
  const auto values = fake.run(inputs, opt);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const graph::Node& n = qm.graph.nodes[layers[i].node];
    OrtSaturationRow r;
    r.node = layers[i].key;
    r.op = n.op_type;
    r.input = n.inputs.at(0);
    r.weight = layers[i].weight;
    const ptq::TensorQuant& wq = qm.at(r.weight);
    const ptq::TensorQuant* xq = qm.find(r.input);
    r.formats = (xq ? xq->format.name() : std::string("float")) + " x " + wq.format.name();
    const ptq::TensorFormat u8{8, false}, s8{8, true};
    if (!xq) {
      r.reason = "input not quantized";
    } else if (xq->format != u8 || wq.format != s8) {
      r.reason = "not uint8 x int8";
    } else if (xq->params.size() != 1) {
      r.reason = "per-channel activations";
    } else {
      r.checked = true;
    }
    if (!r.checked) {
      rows.push_back(std::move(r));
      continue;
    }
    // the input's integers from its fake-quant values (exactly on the grid)
    const graph::Tensor& xf = values.at(fq_input[i]);
    if (xf.dtype() != graph::DType::float32) n.fail("input '", r.input, "' is not float32 in the fake-quant run");
    const float sx = xq->params.scale.at(0);
    const std::int32_t zx = xq->params.zero_point.at(0);
    graph::Tensor x8(graph::DType::uint8, xf.shape());
    for (std::int64_t k = 0; k < xf.size(); ++k) {
      const double q = std::nearbyint(static_cast<double>(xf.data<float>()[k]) / sx) + zx;
      if (!(q >= 0 && q <= 255))
        n.fail("input '", r.input, "' holds ", xf.data<float>()[k], " = integer ", q,
               " of scale ", sx, ", zero point ", zx, "; expected uint8 values");
      x8.data<std::uint8_t>()[k] = static_cast<std::uint8_t>(q);
    }
    const graph::Tensor& wt = qm.graph.initializers.at(r.weight);
    const auto wi = ptq::quantize_initializer(wt, wq, r.weight);
    graph::Tensor w8(graph::DType::int8, wt.shape());
    for (std::size_t k = 0; k < wi.size(); ++k) w8.data<std::int8_t>()[k] = static_cast<std::int8_t>(wi[k]);
    // a per-channel weight's scale: channel axis 0 for Conv, the column for MatMul / Gemm
    const auto& ws = wq.params.scale;
    const ptq::TensorQuant* yq = n.outputs.empty() ? nullptr : qm.find(n.outputs[0]);
    const double sy = yq ? static_cast<double>(yq->params.scale.at(0)) : 0.0;
    r.stats = ort_pair_sums(n, qm.graph.opset, x8, zx, w8,
                            [&](std::int64_t, std::int64_t c, std::int64_t exact, std::int64_t sat) {
                              if (exact == sat) return;
                              const double s = static_cast<double>(sx) *
                                               static_cast<double>(ws.size() == 1 ? ws[0] : ws.at(static_cast<std::size_t>(c)));
                              const double e = std::fabs(static_cast<double>(sat - exact)) * s;
                              r.max_real_error = std::max(r.max_real_error, e);
                              if (sy > 0) r.max_output_steps = std::max(r.max_output_steps, e / sy);
                            });
    if (!r.stats.pair_sums) {
      r.checked = false;
      r.reason = "depthwise: int32 sums";
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

// A table, one row per node, and a verdict naming the remedies.
inline std::string format_ort_saturation(const std::vector<OrtSaturationRow>& rows) {
  std::string s;
  char b[512];
  std::size_t width = 4;
  for (const auto& r : rows) width = std::max(width, r.node.size());
  std::snprintf(b, sizeof b, "%-*s  %-6s %-14s %6s %12s %10s %10s %13s %12s %10s\n", static_cast<int>(width), "node",
                "op", "formats", "K", "pair sums", "saturated", "outputs", "outputs hit", "worst pair", "max error");
  s += b;
  std::size_t hit = 0, checked = 0;
  for (const auto& r : rows) {
    if (!r.checked) {
      const std::string k = r.stats.reduction ? std::to_string(r.stats.reduction) : "-";
      std::snprintf(b, sizeof b, "%-*s  %-6s %-14s %6s   not checked: %s\n", static_cast<int>(width), r.node.c_str(),
                    r.op.c_str(), r.formats.c_str(), k.c_str(), r.reason.c_str());
      s += b;
      continue;
    }
    ++checked;
    hit += r.saturates();
    const auto& t = r.stats;
    const std::int32_t worst = -static_cast<std::int64_t>(t.min_pair) > t.max_pair ? t.min_pair : t.max_pair;
    char err[64] = "0";
    if (t.affected_outputs) {
      if (r.max_output_steps > 0)
        std::snprintf(err, sizeof err, "%.3g steps", r.max_output_steps);
      else
        std::snprintf(err, sizeof err, "%.3g", r.max_real_error);
    }
    const double share = t.outputs ? 100.0 * static_cast<double>(t.affected_outputs) / static_cast<double>(t.outputs) : 0.0;
    std::snprintf(b, sizeof b, "%-*s  %-6s %-14s %6lld %12lld %10lld %10lld %6lld %5.2f%% %12d %10s\n",
                  static_cast<int>(width), r.node.c_str(), r.op.c_str(), r.formats.c_str(),
                  static_cast<long long>(t.reduction), static_cast<long long>(t.pairs),
                  static_cast<long long>(t.saturated_pairs), static_cast<long long>(t.outputs),
                  static_cast<long long>(t.affected_outputs), share, worst, err);
    s += b;
  }
  if (hit) {
    std::snprintf(b, sizeof b,
                  "%zu of %zu checked nodes saturate: ONNX Runtime on x86-64 CPUs without AVX-VNNI (its default "
                  "session) computes them differently from the model. Remedies: 7-bit weights (quantkit --reduce-range, "
                  "PtqConfig::reduce_range: pair sums within +-32640), or the session option "
                  "session.x64quantprecision=1 (exact, slower).\n",
                  hit, checked);
  } else if (checked == 0) {
    std::snprintf(b, sizeof b, "no node runs on ONNX Runtime's uint8 x int8 kernels: nothing to check.\n");
  } else {
    std::snprintf(b, sizeof b,
                  "no pair sum outside int16 in %zu checked nodes: ONNX Runtime's uint8 x int8 kernels without AVX-VNNI "
                  "compute them exactly on these samples.\n",
                  checked);
  }
  s += b;
  return s;
}

}  // namespace analysis
}  // namespace quantkit
