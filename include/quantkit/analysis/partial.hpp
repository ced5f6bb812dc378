// Partially quantized models: a calibrated model (ptq::QuantizedModel) restricted to some of
// its nodes, to their weights only or to their activations only — without calibrating again,
// so every variant uses exactly the parameters of the fully quantized model. The fake-quant
// executor mode runs a variant as the QDQ file with only those Q/DQ pairs would run.
//
//   const auto only_conv2  = qk::analysis::restrict_to(qm, {"/conv2/Conv"}, QuantPart::node);
//   const auto all_but     = qk::analysis::keep_in_float(qm, {"/fc2/Gemm"});
//   const auto weight_only = qk::analysis::restrict_to(qm, qm.quantized_nodes, QuantPart::weight);
//
// What a node's quantization is (the QDQ placement of quantkit/ptq/config.hpp):
//   node        its weight and bias and every activation it reads or writes;
//   weight      its weight only (the bias stays float, as a file without the input's scale has it);
//   activation  the activations it reads or writes only (weights and bias float).
// keep_in_float(qm, F) quantizes every other node with all it touches: an activation between a
// float node and a quantized one stays quantized (the quantized node reads it), as
// PtqConfig::keep_float places it.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/ptq/config.hpp"

namespace quantkit {
namespace analysis {

enum class QuantPart { node, weight, activation };

inline const char* to_string(QuantPart p) {
  switch (p) {
    case QuantPart::node: return "node";
    case QuantPart::weight: return "weight";
    case QuantPart::activation: return "activation";
  }
  return "?";
}

// "node", "weight", "activation"; `what` names the option in the error.
inline QuantPart parse_quant_part(const std::string& text, const std::string& what = "node type") {
  for (QuantPart p : {QuantPart::node, QuantPart::weight, QuantPart::activation})
    if (text == to_string(p)) return p;
  quantkit::detail::fail(what, ": unknown node type '", text, "'; expected node, weight or activation");
}

// The quantized tensors one quantized node touches.
struct NodeQuantization {
  std::string node;                      // node key (name, or first output when unnamed)
  std::string op;
  std::vector<std::string> activations;  // read or written, input order then output order
  std::vector<std::string> weights;
  std::vector<std::string> biases;
  std::vector<std::string> outputs;      // the activations it writes
};

// Every quantized node of `qm`, in graph order.
inline std::vector<NodeQuantization> quantized_nodes(const ptq::QuantizedModel& qm) {
  std::vector<NodeQuantization> out;
  const std::set<std::string> keys(qm.quantized_nodes.begin(), qm.quantized_nodes.end());
  for (const graph::Node& n : qm.graph.nodes) {
    const std::string key = ptq::node_key(n);
    if (!keys.count(key)) continue;
    NodeQuantization q;
    q.node = key;
    q.op = n.op_type;
    auto add_unique = [](std::vector<std::string>& v, const std::string& s) {
      if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
    };
    for (const auto& in : n.inputs) {
      const ptq::TensorQuant* t = in.empty() ? nullptr : qm.find(in);
      if (!t) continue;
      if (t->role == ptq::TensorRole::activation) add_unique(q.activations, in);
      else if (t->role == ptq::TensorRole::weight) add_unique(q.weights, in);
      else add_unique(q.biases, in);
    }
    for (const auto& o : n.outputs) {
      const ptq::TensorQuant* t = o.empty() ? nullptr : qm.find(o);
      if (t && t->role == ptq::TensorRole::activation) {
        add_unique(q.activations, o);
        add_unique(q.outputs, o);
      }
    }
    out.push_back(std::move(q));
  }
  return out;
}

namespace detail {

inline void check_known_nodes(const ptq::QuantizedModel& qm, const std::vector<std::string>& nodes, const char* what) {
  for (const auto& k : nodes)
    if (!qm.is_quantized_node(k)) {
      std::string known;
      for (std::size_t i = 0; i < qm.quantized_nodes.size() && i < 8; ++i)
        known += (i ? ", " : "") + qm.quantized_nodes[i];
      if (qm.quantized_nodes.size() > 8) known += ", ...";
      quantkit::detail::fail(what, ": node '", k, "' is not a quantized node of the model; expected one of: ", known);
    }
}

// qm with only `nodes` quantized and only the tensors in `keep`.
inline ptq::QuantizedModel with_tensors(const ptq::QuantizedModel& qm, const std::vector<std::string>& nodes,
                                        const std::set<std::string>& keep) {
  ptq::QuantizedModel v;
  v.graph = qm.graph;
  v.config = qm.config;
  v.observer = qm.observer;
  v.notes = qm.notes;
  for (const auto& k : qm.quantized_nodes)
    if (std::find(nodes.begin(), nodes.end(), k) != nodes.end()) v.quantized_nodes.push_back(k);
  for (const auto& kv : qm.tensors)
    if (keep.count(kv.first)) v.tensors.insert(kv);
  return v;
}

}  // namespace detail

// Only `nodes` quantized, with the part of their quantization `part` names.
inline ptq::QuantizedModel restrict_to(const ptq::QuantizedModel& qm, const std::vector<std::string>& nodes,
                                       QuantPart part) {
  detail::check_known_nodes(qm, nodes, "restrict_to");
  std::set<std::string> keep;
  for (const auto& q : quantized_nodes(qm)) {
    if (std::find(nodes.begin(), nodes.end(), q.node) == nodes.end()) continue;
    if (part != QuantPart::activation) keep.insert(q.weights.begin(), q.weights.end());
    if (part == QuantPart::node) keep.insert(q.biases.begin(), q.biases.end());
    if (part != QuantPart::weight) keep.insert(q.activations.begin(), q.activations.end());
  }
  return detail::with_tensors(qm, nodes, keep);
}

// Every quantized node but `float_nodes`, each with all it touches.
inline ptq::QuantizedModel keep_in_float(const ptq::QuantizedModel& qm, const std::vector<std::string>& float_nodes) {
  detail::check_known_nodes(qm, float_nodes, "keep_in_float");
  std::vector<std::string> rest;
  for (const auto& k : qm.quantized_nodes)
    if (std::find(float_nodes.begin(), float_nodes.end(), k) == float_nodes.end()) rest.push_back(k);
  return restrict_to(qm, rest, QuantPart::node);
}

// Only the activation `value` quantized (its readers and writer among the quantized nodes are
// marked quantized, so a quantized graph input is fake-quantized where they read it).
inline ptq::QuantizedModel restrict_to_activation(const ptq::QuantizedModel& qm, const std::string& value) {
  const ptq::TensorQuant* t = qm.find(value);
  if (!t || t->role != ptq::TensorRole::activation)
    quantkit::detail::fail(quantkit::detail::describe_tensor(value),
                           ": not a quantized activation of the model; expected a value with a QuantizeLinear/"
                           "DequantizeLinear pair");
  std::vector<std::string> nodes;
  for (const auto& q : quantized_nodes(qm))
    if (std::find(q.activations.begin(), q.activations.end(), value) != q.activations.end()) nodes.push_back(q.node);
  return detail::with_tensors(qm, nodes, {value});
}

// The quantized activations of `qm`, in graph order (graph inputs first, then node outputs).
inline std::vector<std::string> quantized_activations(const ptq::QuantizedModel& qm) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& v) {
    const ptq::TensorQuant* t = v.empty() ? nullptr : qm.find(v);
    if (t && t->role == ptq::TensorRole::activation && seen.insert(v).second) out.push_back(v);
  };
  for (const auto& in : qm.graph.inputs) add(in.name);
  for (std::size_t idx : qm.graph.topological_order())
    for (const auto& o : qm.graph.nodes[idx].outputs) add(o);
  return out;
}

}  // namespace analysis
}  // namespace quantkit
