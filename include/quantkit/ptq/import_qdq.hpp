// import_qdq(float_graph, qdq_graph): the calibrated model (QuantizedModel) a QDQ file stands
// for, on the float graph it was made from — so the accuracy-debug tools
// (quantkit/analysis/sensitivity.hpp) can take apart a model quantized elsewhere (quantkit's own
// QDQ files, ONNX Runtime's quantizer's).
//
//   const auto qm = qk::ptq::import_qdq(qk::onnx::load("model.onnx"), qk::onnx::load("model.qdq.onnx"));
//
// How the QDQ graph is read:
//   - the float graph's BatchNormalization nodes are folded first when the QDQ graph has none
//     (quantkit and ONNX Runtime's pre-processing fold them);
//   - activations: every float value the QDQ graph quantizes (value matching of
//     quantkit/analysis/compare.hpp: a DequantizeLinear(QuantizeLinear(v)) pair, or the
//     dequantized copy keeping v's name) takes the DequantizeLinear's scale and zero point;
//   - weights and biases: for every node of the float graph, the node of the same name and op in
//     the QDQ graph; an input it reads from a DequantizeLinear of an initializer is that input's
//     quantization: scale, zero point, axis (per-channel when there are several scales) and the
//     stored integers themselves (so the fake-quant mode computes exactly the file's weights and
//     biases, while the float graph keeps its own values); int32 initializers are biases;
//   - a node with any input so dequantized is a quantized node.
// 8-bit activations and 8-bit (or int32 bias) initializers; a weight the QDQ graph holds in float
// under another name (e.g. a blocked DequantizeLinear folded on loading) is an error naming it.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/analysis/compare.hpp"
#include "quantkit/error.hpp"
#include "quantkit/executor/passes/fold_batchnorm.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/params.hpp"
#include "quantkit/ptq/config.hpp"

namespace quantkit {
namespace ptq {

namespace detail {

inline const graph::Tensor& qdq_initializer(const graph::Graph& g, const graph::Node& dq, std::size_t k,
                                            const char* what) {
  if (!dq.has_input(k)) dq.fail("has no ", what, " input; expected an initializer");
  auto it = g.initializers.find(dq.inputs[k]);
  if (it == g.initializers.end())
    dq.fail(what, " '", dq.inputs[k], "' is not an initializer; expected a constant ", what);
  return it->second;
}

// Scale, zero point and axis of a DequantizeLinear as QuantParams (range from the zero point's type).
inline QuantParams dq_params(const graph::Graph& g, const graph::Node& dq, TensorFormat& format, int rank) {
  const graph::Tensor& s = qdq_initializer(g, dq, 1, "scale");
  if (s.dtype() != graph::DType::float32) dq.fail("scale has element type ", graph::to_string(s.dtype()), "; expected float32");
  QuantParams p;
  p.scale = s.to_vector<float>();
  graph::DType zt = graph::DType::uint8;
  if (dq.has_input(2)) {
    const graph::Tensor& z = qdq_initializer(g, dq, 2, "zero point");
    zt = z.dtype();
    p.zero_point.clear();
    for (std::int64_t i = 0; i < z.size(); ++i) p.zero_point.push_back(static_cast<std::int32_t>(z.as_int64(i)));
  } else {
    p.zero_point.assign(p.scale.size(), 0);
  }
  if (p.zero_point.size() != p.scale.size())
    dq.fail(p.scale.size(), " scales and ", p.zero_point.size(), " zero points; expected as many of each");
  if (zt == graph::DType::int8) format = {8, true};
  else if (zt == graph::DType::uint8) format = {8, false};
  else if (zt == graph::DType::int32) format = {32, true};
  else dq.fail("zero point of element type ", graph::to_string(zt), "; expected uint8, int8 or int32");
  p.range = format.bits == 32 ? IntRange{std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()}
                              : format.range();
  if (dq.attr_int("block_size", 0) != 0)
    dq.fail("is a blocked (per-group) DequantizeLinear; expected per-tensor or per-channel parameters to import");
  if (p.scale.size() > 1) {
    std::int64_t axis = dq.attr_int("axis", 1);
    if (axis < 0) axis += rank;
    p.granularity = Granularity::per_channel(static_cast<int>(axis));
  }
  p.validate(dq.outputs.empty() ? std::string() : dq.outputs[0]);
  return p;
}

}  // namespace detail

inline QuantizedModel import_qdq(graph::Graph float_graph, const graph::Graph& qdq) {
  bool qdq_has_bn = false;
  for (const auto& n : qdq.nodes) qdq_has_bn = qdq_has_bn || n.op_type == "BatchNormalization";
  if (!qdq_has_bn) (void)passes::fold_batchnorm(float_graph);

  QuantizedModel qm;
  qm.observer = "imported from '" + qdq.source + "'";
  const auto producers = qdq.producers();
  auto producer = [&](const std::string& v) -> const graph::Node* {
    auto it = producers.find(v);
    return it == producers.end() ? nullptr : &qdq.nodes[it->second];
  };
  auto is_dq = [](const graph::Node* n) { return n && n->op_type == "DequantizeLinear" && analysis::detail::is_default_domain(*n); };

  // Activations.
  for (const auto& kv : analysis::match_values(float_graph, qdq)) {
    if (kv.second.kind == analysis::MatchKind::same_name) continue;
    const graph::Node* dq = producer(kv.second.value);
    if (!is_dq(dq) || !dq->has_input(0) || qdq.initializers.count(dq->inputs[0])) continue;
    TensorQuant t;
    t.role = TensorRole::activation;
    t.params = detail::dq_params(qdq, *dq, t.format, 0);
    if (t.format.bits != 8) dq->fail("dequantizes activation '", kv.first, "' from ", t.format.name(), "; expected 8 bits");
    t.symmetry = t.format.is_signed && t.params.zero_point[0] == 0 ? SymmetryKind::symmetric : SymmetryKind::affine;
    qm.tensors.emplace(kv.first, std::move(t));
  }

  // Weights and biases, node by node.
  std::map<std::string, const graph::Node*> qdq_nodes;
  for (const auto& n : qdq.nodes) qdq_nodes.emplace(node_key(n), &n);
  for (auto& n : float_graph.nodes) {
    const std::string key = node_key(n);
    auto it = qdq_nodes.find(key);
    if (it == qdq_nodes.end() || it->second->op_type != n.op_type) continue;
    const graph::Node& qn = *it->second;
    bool quantized = false;
    for (std::size_t k = 0; k < n.inputs.size() && k < qn.inputs.size(); ++k) {
      const graph::Node* dq = qn.inputs[k].empty() ? nullptr : producer(qn.inputs[k]);
      if (!is_dq(dq)) continue;
      quantized = true;
      if (!dq->has_input(0) || !qdq.initializers.count(dq->inputs[0])) continue;  // an activation
      const std::string& name = n.inputs[k];
      auto fi = float_graph.initializers.find(name);
      if (fi == float_graph.initializers.end())
        n.fail("input ", k, " '", name, "' is quantized in '", qdq.source, "' but not an initializer of the float "
               "model; expected the float model the QDQ file was made from");
      const graph::Tensor& stored = qdq.initializers.at(dq->inputs[0]);
      if (stored.shape() != fi->second.shape())
        n.fail("input '", name, "' has shape ", fi->second.shape().to_string(), " in the float model but ",
               stored.shape().to_string(), " in '", qdq.source, "'; expected the same shape");
      TensorQuant t;
      t.params = detail::dq_params(qdq, *dq, t.format, fi->second.rank());
      t.node = key;
      t.role = t.format.bits == 32 ? TensorRole::bias : TensorRole::weight;
      t.symmetry = t.params.zero_point[0] == 0 ? SymmetryKind::symmetric : SymmetryKind::affine;
      // The stored integers themselves: the fake-quant mode computes exactly the file's values.
      t.integers.reserve(static_cast<std::size_t>(stored.size()));
      for (std::int64_t i = 0; i < stored.size(); ++i) t.integers.push_back(static_cast<std::int32_t>(stored.as_int64(i)));
      qm.tensors[name] = std::move(t);
    }
    // A weight stored in float under another name (e.g. a blocked DequantizeLinear folded when
    // the file was read) cannot be imported.
    if (quantized && (n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul") && n.inputs.size() > 1 &&
        qn.inputs.size() > 1 && float_graph.initializers.count(n.inputs[1]) && !qm.tensors.count(n.inputs[1]) &&
        qn.inputs[1] != n.inputs[1] && qdq.initializers.count(qn.inputs[1]))
      n.fail("weight '", n.inputs[1], "' is stored as '", qn.inputs[1], "' in float in '", qdq.source,
             "' (a blocked or 4-bit weight dequantized when the file was read); expected a DequantizeLinear of "
             "8-bit integers to import");
    if (quantized) qm.quantized_nodes.push_back(key);
  }
  // Activations the quantized nodes touch are named after the first one.
  for (const auto& n : float_graph.nodes) {
    const std::string key = node_key(n);
    if (!qm.is_quantized_node(key)) continue;
    for (const auto* list : {&n.inputs, &n.outputs})
      for (const auto& v : *list) {
        auto t = qm.tensors.find(v);
        if (t != qm.tensors.end() && t->second.node.empty()) t->second.node = key;
      }
  }
  if (qm.quantized_nodes.empty())
    quantkit::detail::fail("'", qdq.source, "': no node of the float model reads a DequantizeLinear output in it; "
                           "expected a QDQ model of this float model");
  qm.graph = std::move(float_graph);
  return qm;
}

}  // namespace ptq
}  // namespace quantkit
