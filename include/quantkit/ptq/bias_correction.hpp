// Empirical bias correction (Nagel et al. 2019; AIMET's empirical bias correction, Horizon's
// bias_correction option): quantizing weights (and the activations before a layer) shifts the
// mean of the layer's output. For each quantized Conv/Gemm in graph order, over the
// calibration batches,
//   shift[c] = E[ y_float[c] ] - E[ y_quantized[c] ]     (mean over samples and positions)
// where y_float is the layer's output in the float model and y_quantized = op(x_q, W_q, b_q)
// its output in the quantized model (its input from the fake-quant model with the layers
// before it already corrected, its stored weights and bias), before any activation; then
// b[c] += shift[c] (Gemm: C[c] += shift[c] / beta). A layer without a bias gets one (int32
// when the planner would have quantized it). Afterwards the mean output error of each
// corrected layer over the calibration data is zero up to the int32 bias step.
//
//   qk::ptq::BiasCorrectionReport r = qk::ptq::correct_bias(qm, batches);
//
// The float reference is qm.graph as it is on entry (pass `reference` when qm.graph already
// holds corrected biases). MatMul has no bias: it is listed in the notes, not corrected.
#pragma once

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/executor.hpp"
#include "quantkit/executor/passes/fold_batchnorm.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/layer_data.hpp"
#include "quantkit/ptq/weights.hpp"

namespace quantkit {
namespace ptq {

struct BiasCorrectionLayer {
  std::string node, bias;
  std::int64_t channels = 0;
  double mean_abs_shift = 0;  // mean over channels of |shift[c]| (the correction applied)
  double max_abs_shift = 0;
  double output_scale = 0;    // the layer output's activation scale (0 when not quantized)
  bool added = false;         // the node had no bias: one was added
};

struct BiasCorrectionReport {
  std::vector<BiasCorrectionLayer> layers;
  std::vector<std::string> notes;  // layers not corrected, and why
};

namespace detail {

// Per output channel (axis 1) sums of a - b over every other axis; adds the element count
// per channel to `count`.
inline void accumulate_channel_difference(const graph::Tensor& a, const graph::Tensor& b, std::vector<double>& sum,
                                          double& count) {
  const std::int64_t n = a.dim(0), c = a.dim(1), inner = a.size() / std::max<std::int64_t>(n * c, 1);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch) {
      double s = 0;
      const std::int64_t off = (i * c + ch) * inner;
      for (std::int64_t k = 0; k < inner; ++k) s += static_cast<double>(pa[off + k]) - static_cast<double>(pb[off + k]);
      sum[static_cast<std::size_t>(ch)] += s;
    }
  count += static_cast<double>(n * inner);
}

// The tensor a quantized node reads for initializer `v`: the dequantized stored integers, or
// the float initializer when `v` is not quantized.
inline graph::Tensor as_read_by_quantized_node(const QuantizedModel& qm, const std::string& v) {
  const graph::Tensor& t = qm.graph.initializers.at(v);
  const TensorQuant* q = qm.find(v);
  return q && q->role != TensorRole::activation ? dequantized_initializer(t, *q, v) : t;
}

}  // namespace detail

inline BiasCorrectionReport correct_bias(QuantizedModel& qm, const std::vector<std::map<std::string, graph::Tensor>>& batches,
                                         const RemedyCallback& progress = {}, const graph::Graph* reference = nullptr) {
  detail::check_batches(batches, "bias correction");
  const graph::Graph float_graph = reference ? *reference : qm.graph;
  const Executor<FloatMode> float_run(float_graph);
  BiasCorrectionReport report;
  const auto layers = detail::quantized_layers(qm);
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const detail::LayerRef& layer = layers[li];
    graph::Node& node = qm.graph.nodes[layer.node];
    const std::string who = node.describe();
    if (node.op_type == "MatMul") {
      report.notes.push_back(who + ": not bias-corrected (MatMul has no bias)");
      continue;
    }
    const graph::Node* ref_node = nullptr;
    for (const auto& n : float_graph.nodes)
      if (node_key(n) == layer.key && n.op_type == node.op_type) ref_node = &n;
    if (!ref_node) node.fail("is not in the float reference graph; expected the graph the model was calibrated on");
    const graph::Tensor& wt = qm.graph.initializers.at(layer.weight);
    const bool gemm = node.op_type == "Gemm";
    const std::int64_t channels = gemm ? (node.attr_int("transB", 0) != 0 ? wt.dim(0) : wt.dim(1)) : wt.dim(0);
    const float beta = gemm ? node.attr_float("beta", 1.0f) : 1.0f;
    if (gemm && !(beta != 0.0f)) {
      report.notes.push_back(who + ": not bias-corrected (Gemm with beta = 0)");
      continue;
    }
    if (node.has_input(2)) {
      if (!qm.graph.is_initializer(node.inputs[2]) ||
          qm.graph.initializers.at(node.inputs[2]).dtype() != graph::DType::float32 ||
          qm.graph.initializers.at(node.inputs[2]).rank() != 1 ||
          qm.graph.initializers.at(node.inputs[2]).dim(0) != channels) {
        report.notes.push_back(who + ": not bias-corrected (its bias is not a float32 initializer with one value per output channel)");
        continue;
      }
    }

    // Mean output shift over the calibration set.
    std::vector<double> sum(static_cast<std::size_t>(channels), 0.0);
    double count = 0;
    const graph::Tensor wq = detail::as_read_by_quantized_node(qm, layer.weight);
    const graph::Tensor* wf = &float_graph.initializers.at(ref_node->inputs[1]);
    const graph::Tensor* bf = ref_node->has_input(2) ? &float_graph.initializers.at(ref_node->inputs[2]) : nullptr;
    graph::Tensor bq;
    if (node.has_input(2)) bq = detail::as_read_by_quantized_node(qm, node.inputs[2]);
    detail::for_each_layer_input(float_run, qm, layer, batches,
                                 [&](std::size_t b, const graph::Tensor& xf, const graph::Tensor& xq) {
      const graph::Tensor yf = detail::run_op(float_graph, *ref_node, {&xf, wf, bf});
      const graph::Tensor yq = detail::run_op(qm.graph, node, {&xq, &wq, node.has_input(2) ? &bq : nullptr});
      if (yf.shape() != yq.shape() || yf.rank() < 2 || yf.dim(1) != channels)
        node.fail("output shapes ", yf.shape().to_string(), " (float) and ", yq.shape().to_string(),
                  " (quantized); expected N x ", channels, " x ...");
      detail::accumulate_channel_difference(yf, yq, sum, count);
      if (progress) {
        RemedyProgress p;
        p.stage = "bias-correction";
        p.layer = layer.key;
        p.layer_index = li;
        p.layers = layers.size();
        p.step = b + 1;
        p.steps = batches.size();
        progress(p);
      }
    });

    BiasCorrectionLayer row;
    row.node = layer.key;
    row.channels = channels;
    if (const TensorQuant* out = node.has_output(0) ? qm.find(node.outputs[0]) : nullptr) row.output_scale = out->params.scale[0];
    std::vector<float> shift(static_cast<std::size_t>(channels));
    for (std::size_t c = 0; c < shift.size(); ++c) {
      const double s = count > 0 ? sum[c] / count : 0.0;
      shift[c] = static_cast<float>(s);
      row.mean_abs_shift += std::fabs(s) / static_cast<double>(shift.size());
      row.max_abs_shift = std::max(row.max_abs_shift, std::fabs(s));
    }

    // The corrected bias: private to the node, int32 when its input and weight are quantized.
    if (!node.has_input(2)) {
      const std::string name = qm.graph.unique_name(layer.key + "_bias");
      qm.graph.initializers.emplace(name, graph::Tensor(graph::DType::float32, Dims{channels}, name));
      if (node.inputs.size() < 3) node.inputs.resize(3);
      node.inputs[2] = name;
      row.added = true;
      const TensorQuant* in = qm.find(node.inputs[0]);
      const TensorQuant& w = qm.at(layer.weight);
      const bool plain_gemm = !gemm || (node.attr_float("alpha", 1.0f) == 1.0f && beta == 1.0f);
      if (qm.config.quantize_bias && in && plain_gemm && w.params.granularity.kind != GranularityKind::per_group &&
          !qm.graph.is_initializer(node.inputs[0]))
        qm.tensors.emplace(name, bias_quant(*in, w, layer.key, node.inputs[0], layer.weight));
    }
    graph::Tensor& bias = passes::detail::private_initializer(qm.graph, node, 2);
    row.bias = node.inputs[2];
    const graph::Tensor before = bias;
    // From the bias as stored (dequantized int32): the shift was measured with it, and its
    // own rounding is corrected too; the new value is then rounded once.
    if (const TensorQuant* bqp = qm.find(row.bias)) bias = dequantized_initializer(before, *bqp, row.bias);
    for (std::int64_t c = 0; c < channels; ++c) bias.data<float>()[c] += shift[static_cast<std::size_t>(c)] / beta;
    if (const TensorQuant* bqp = qm.find(row.bias)) {
      try {
        (void)quantize_initializer(bias, *bqp, row.bias);
      } catch (const Error& e) {
        bias = before;
        report.notes.push_back(who + ": not bias-corrected (" + e.what() + ")");
        continue;
      }
    }
    report.layers.push_back(row);
  }
  return report;
}

// The report as text, one line per layer.
inline std::string format(const BiasCorrectionReport& r) {
  std::string out = "bias correction: " + std::to_string(r.layers.size()) + " layer(s)\n";
  char line[512];
  for (const auto& l : r.layers) {
    std::snprintf(line, sizeof line, "  %s: %lld channels, mean |shift| %.4g, max |shift| %.4g", l.node.c_str(),
                  static_cast<long long>(l.channels), l.mean_abs_shift, l.max_abs_shift);
    out += line;
    if (l.output_scale > 0) {
      std::snprintf(line, sizeof line, " (%.2f output steps)", l.max_abs_shift / l.output_scale);
      out += line;
    }
    out += l.added ? ", bias added\n" : "\n";
  }
  for (const auto& n : r.notes) out += "  " + n + "\n";
  return out;
}

}  // namespace ptq
}  // namespace quantkit
