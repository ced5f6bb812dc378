// make_plan(graph, config): which nodes are quantized and which values are activations,
// weights and biases, with their formats and granularities — before any data is seen.
// Errors name the node (and file) or the config option.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/ptq/config.hpp"

namespace quantkit {
namespace ptq {

struct ActivationPlan {
  std::string node;  // the first quantized node touching the value
  TensorFormat format;
};
struct WeightPlan {
  std::string node;
  TensorFormat format;
  Granularity granularity;  // axis normalized (>= 0)
  int output_axis = 0;      // the output-channel axis of the weight
};
struct BiasPlan {
  std::string node;
  std::string input;   // the node's activation input
  std::string weight;  // the node's weight
};

struct Plan {
  std::vector<std::size_t> quantized_nodes;  // indices into graph.nodes, in graph order
  std::map<std::string, ActivationPlan> activations;
  std::map<std::string, WeightPlan> weights;
  std::map<std::string, BiasPlan> biases;
  std::vector<std::string> notes;
};

namespace detail {

// Inputs of a quantized node that carry data (the others are shapes, axes, pads, bounds).
inline std::vector<std::size_t> data_inputs(const graph::Node& n) {
  const std::string& op = n.op_type;
  if (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "ReduceMean" || op == "Pad" ||
      op == "Clip" || op == "Conv" || op == "Gemm")
    return {0};
  if (op == "MatMul") return {0, 1};
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) all.push_back(i);
  return all;
}

inline std::set<std::string> node_set(const graph::Graph& g, const std::vector<std::string>& names,
                                      const char* option) {
  std::set<std::string> keys;
  for (const auto& n : g.nodes) keys.insert(node_key(n));
  std::set<std::string> out;
  for (const auto& name : names) {
    if (!keys.count(name))
      g.fail("PtqConfig::", option, " names node '", name,
             "', which is not in the graph; expected a node name (or the first output of an unnamed node)");
    out.insert(name);
  }
  return out;
}

}  // namespace detail

inline Plan make_plan(const graph::Graph& g, const PtqConfig& cfg) {
  cfg.validate();
  const std::set<std::string> keep = detail::node_set(g, cfg.keep_float, "keep_float");
  const std::set<std::string> wide = detail::node_set(g, cfg.int16_nodes, "int16_nodes");
  for (const auto& k : keep)
    if (wide.count(k)) g.fail("PtqConfig: node '", k, "' is both in keep_float and in int16_nodes; expected one of them");

  Plan plan;
  std::vector<bool> quantized(g.nodes.size(), false);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& n = g.nodes[i];
    const bool default_domain = n.domain.empty() || n.domain == "ai.onnx";
    if (default_domain && cfg.quantize_ops.count(n.op_type) && !keep.count(node_key(n))) {
      quantized[i] = true;
      plan.quantized_nodes.push_back(i);
    }
  }

  // Activation bits: 16 where any quantized node reading or writing the value is an int16 node.
  auto add_activation = [&](const std::string& v, const graph::Node& n) {
    if (v.empty() || g.is_initializer(v)) return;
    const int bits = wide.count(node_key(n)) ? 16 : cfg.activation_bits;
    auto it = plan.activations.find(v);
    if (it == plan.activations.end())
      plan.activations.emplace(v, ActivationPlan{node_key(n), cfg.activation_format(bits)});
    else if (bits > it->second.format.bits)
      it->second.format = cfg.activation_format(bits);
  };

  for (std::size_t i : plan.quantized_nodes) {
    const graph::Node& n = g.nodes[i];
    for (std::size_t k : detail::data_inputs(n))
      if (n.has_input(k)) add_activation(n.inputs[k], n);
    if (n.has_output(0)) add_activation(n.outputs[0], n);

    const bool weighted = n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul";
    if (!weighted || !n.has_input(1)) continue;
    const std::string& w = n.inputs[1];
    if (!g.is_initializer(w)) {  // a computed B: an activation like A
      add_activation(w, n);
      continue;
    }
    const graph::Tensor& wt = g.initializers.at(w);
    if (wt.dtype() != graph::DType::float32) continue;  // already integer: left as it is
    const int rank = wt.rank();
    int out_axis = 0, in_axis = 1;
    if (n.op_type == "Conv") {
      if (rank < 3) n.fail("weight '", w, "' has shape ", wt.shape().to_string(), "; expected rank 3 or more");
    } else if (n.op_type == "Gemm") {
      if (rank != 2) n.fail("weight '", w, "' has shape ", wt.shape().to_string(), "; expected a matrix");
      const bool trans_b = n.attr_int("transB", 0) != 0;
      out_axis = trans_b ? 0 : 1;
      in_axis = trans_b ? 1 : 0;
    } else {  // MatMul: [..., K, N]
      out_axis = rank - 1;
      in_axis = rank - 2;
    }
    const bool wide_node = wide.count(node_key(n)) != 0;
    WeightPlan wp;
    wp.node = node_key(n);
    wp.format = TensorFormat{wide_node ? cfg.int16_weight_bits : cfg.weight_bits, cfg.weight_signed};
    wp.output_axis = out_axis;
    switch (cfg.weight_granularity.kind) {
      case GranularityKind::per_tensor: wp.granularity = Granularity::per_tensor(); break;
      case GranularityKind::per_channel:
        wp.granularity = rank >= 2 ? Granularity::per_channel(out_axis) : Granularity::per_tensor();
        break;
      case GranularityKind::per_group:
        wp.granularity = rank >= 2 ? Granularity::per_group(in_axis, cfg.weight_granularity.group_size)
                                   : Granularity::per_tensor();
        break;
    }
    auto it = plan.weights.find(w);
    if (it != plan.weights.end()) {
      if (it->second.format != wp.format || it->second.granularity != wp.granularity)
        n.fail("weight '", w, "' is shared with node '", it->second.node, "', which quantizes it as ",
               it->second.format.name(), " ", it->second.granularity.to_string(), "; this node needs ",
               wp.format.name(), " ", wp.granularity.to_string(), " (expected the same format)");
    } else {
      plan.weights.emplace(w, wp);
    }

    // Bias: Conv input 2, Gemm C (1-D, alpha = beta = 1).
    if (!cfg.quantize_bias || n.op_type == "MatMul" || !n.has_input(2)) continue;
    const std::string& b = n.inputs[2];
    if (!g.is_initializer(b) || g.initializers.at(b).dtype() != graph::DType::float32) continue;
    const graph::Tensor& bt = g.initializers.at(b);
    const std::int64_t channels = wt.dim(out_axis);
    std::string why;
    if (g.is_initializer(n.inputs[0])) why = "its input is an initializer";
    else if (wp.granularity.kind == GranularityKind::per_group) why = "the weights are per group";
    else if (bt.rank() != 1 || bt.dim(0) != channels) why = "the bias is not one value per output channel";
    else if (n.op_type == "Gemm" && (n.attr_float("alpha", 1.0f) != 1.0f || n.attr_float("beta", 1.0f) != 1.0f))
      why = "alpha or beta is not 1";
    else if (plan.biases.count(b)) why = "the bias is shared with node '" + plan.biases.at(b).node + "'";
    if (!why.empty()) {
      plan.notes.push_back(n.describe() + ": bias '" + b + "' stays float32 (" + why + ")");
      continue;
    }
    plan.biases.emplace(b, BiasPlan{node_key(n), n.inputs[0], w});
  }
  return plan;
}

}  // namespace ptq
}  // namespace quantkit
