// Layer-wise comparison of two graphs run on the same inputs — a float model (the reference)
// and its quantized version — as AXera's pulsar run or Horizon's layer-wise compare print it:
// one row per value both graphs compute, in the reference graph's order, with every metric of
// quantkit/analysis/metrics.hpp.
//
//   const auto cmp = qk::analysis::compare_layers(float_graph, qdq_graph, {{"input", x}});
//   for (const auto& row : cmp.rows) std::printf("%s %f\n", row.value.c_str(), row.metrics.cosine);
//
// Which value of the quantized graph stands for reference value `v` (match_values()):
//   1. `v` produced by a DequantizeLinear: quantkit's QDQ export keeps the float names for the
//      dequantized copies (the producer writes v_float -> QuantizeLinear -> DequantizeLinear -> v);
//      also ONNX Runtime's quantizer for graph outputs;
//   2. the output of DequantizeLinear(QuantizeLinear(v)): ONNX Runtime's quantizer (producer
//      keeps `v`, consumers read `v_DequantizeLinear_Output`) and quantized graph inputs;
//   3. a value named `v_DequantizeLinear_Output` or `v_dq` (the fake-quant executor mode's
//      quantized graph inputs);
//   4. `v` itself, computed by any other node (parts left in float).
// Rows cover the reference graph's quantized graph inputs (rules 1-3 only) and every float32
// value its nodes compute, except values computed from initializers alone (dequantized weights,
// constants); integer values (QuantizeLinear outputs) are skipped. Reference values without a
// counterpart (e.g. a Conv output before a BatchNormalization the quantizer folded) are listed
// in `unmatched`. A row whose tensors cannot be compared (shapes differ, NaN/Inf) carries the
// reason in `error` instead of failing the whole comparison.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/analysis/metrics.hpp"
#include "quantkit/error.hpp"
#include "quantkit/executor/executor.hpp"
#include "quantkit/graph/graph.hpp"

namespace quantkit {
namespace analysis {

using TensorMap = std::map<std::string, graph::Tensor>;

enum class MatchKind { dequantized, qdq_pair, by_suffix, same_name };

inline const char* to_string(MatchKind k) {
  switch (k) {
    case MatchKind::dequantized: return "dequantized";
    case MatchKind::qdq_pair: return "qdq-pair";
    case MatchKind::by_suffix: return "suffix";
    case MatchKind::same_name: return "same-name";
  }
  return "?";
}

struct ValueMatch {
  std::string value;  // the name in the compared (quantized) graph
  MatchKind kind = MatchKind::same_name;
};

struct LayerRow {
  std::string value;         // name in the reference graph
  std::string node;          // its producer (name, or first output when unnamed); "" for inputs
  std::string op;            // the producer's op type; "input" for graph inputs
  std::string actual_value;  // the matched value in the compared graph
  MatchKind match = MatchKind::same_name;
  Dims shape;
  Similarity metrics;        // reference = x, compared = y
  std::string error;         // non-empty: why there are no metrics
};

struct LayerComparison {
  std::vector<LayerRow> rows;          // reference graph order
  std::vector<std::string> unmatched;  // reference values without a counterpart
};

namespace detail {

inline std::string node_label(const graph::Node& n) {
  return !n.name.empty() ? n.name : (n.outputs.empty() ? std::string() : n.outputs.front());
}

inline bool is_default_domain(const graph::Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

// Values computed from initializers alone (weights behind DequantizeLinear, Constant outputs).
inline std::set<std::string> constant_values(const graph::Graph& g) {
  std::set<std::string> constant;
  for (const auto& kv : g.initializers) constant.insert(kv.first);
  for (std::size_t idx : g.topological_order()) {
    const graph::Node& n = g.nodes[idx];
    bool all = true;
    for (const auto& in : n.inputs)
      if (!in.empty() && !constant.count(in)) all = false;
    if (all)
      for (const auto& o : n.outputs)
        if (!o.empty()) constant.insert(o);
  }
  return constant;
}

}  // namespace detail

// For every value `reference` computes (and every graph input), the value of `actual` that
// stands for it, by the rules above; values without one are absent.
inline std::map<std::string, ValueMatch> match_values(const graph::Graph& reference, const graph::Graph& actual) {
  const auto producers = actual.producers();
  const auto consumers = actual.consumers();
  auto produced_by = [&](const std::string& v, const char* op) {
    auto it = producers.find(v);
    return it != producers.end() && actual.nodes[it->second].op_type == op &&
           detail::is_default_domain(actual.nodes[it->second]);
  };
  // Rule 2: DequantizeLinear(QuantizeLinear(v)).
  auto qdq_of = [&](const std::string& v) -> std::string {
    auto c = consumers.find(v);
    if (c == consumers.end()) return {};
    for (std::size_t qi : c->second) {
      const graph::Node& q = actual.nodes[qi];
      if (q.op_type != "QuantizeLinear" || !detail::is_default_domain(q) || q.inputs.empty() || q.inputs[0] != v ||
          !q.has_output(0))
        continue;
      auto d = consumers.find(q.outputs[0]);
      if (d == consumers.end()) continue;
      for (std::size_t di : d->second) {
        const graph::Node& dq = actual.nodes[di];
        if (dq.op_type == "DequantizeLinear" && detail::is_default_domain(dq) && dq.inputs[0] == q.outputs[0] &&
            dq.has_output(0))
          return dq.outputs[0];
      }
    }
    return {};
  };

  std::map<std::string, ValueMatch> out;
  auto match_one = [&](const std::string& v, bool input) {
    if (produced_by(v, "DequantizeLinear")) {
      out[v] = {v, MatchKind::dequantized};
      return;
    }
    const std::string d = qdq_of(v);
    if (!d.empty()) {
      out[v] = {d, MatchKind::qdq_pair};
      return;
    }
    for (const char* suffix : {"_DequantizeLinear_Output", "_dq"}) {
      const std::string s = v + suffix;
      if (producers.count(s)) {
        out[v] = {s, MatchKind::by_suffix};
        return;
      }
    }
    if (!input && producers.count(v)) out[v] = {v, MatchKind::same_name};
  };
  for (const auto& in : reference.inputs) match_one(in.name, true);
  for (const auto& n : reference.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty()) match_one(o, false);
  return out;
}

// Rows from values already computed: `ref_values` / `actual_values` hold every value each graph
// computed (Executor::run with keep_intermediates) and its graph inputs.
inline LayerComparison compare_values(const graph::Graph& reference, const TensorMap& ref_values,
                                      const graph::Graph& actual, const TensorMap& actual_values) {
  const auto matches = match_values(reference, actual);
  const auto constant = detail::constant_values(reference);
  LayerComparison out;
  auto add = [&](const std::string& v, const std::string& node, const std::string& op, bool input) {
    auto r = ref_values.find(v);
    if (r == ref_values.end() || r->second.dtype() != graph::DType::float32 || constant.count(v)) return;
    auto m = matches.find(v);
    const graph::Tensor* y = nullptr;
    if (m != matches.end()) {
      auto a = actual_values.find(m->second.value);
      if (a != actual_values.end() && a->second.dtype() == graph::DType::float32) y = &a->second;
    }
    if (!y) {
      if (!input) out.unmatched.push_back(v);
      return;
    }
    LayerRow row;
    row.value = v;
    row.node = node;
    row.op = op;
    row.actual_value = m->second.value;
    row.match = m->second.kind;
    row.shape = r->second.shape();
    try {
      row.metrics = similarity(r->second.view<float>().named(v), y->view<float>().named(m->second.value));
    } catch (const Error& e) {
      row.error = e.what();
    }
    out.rows.push_back(std::move(row));
  };
  for (const auto& in : reference.inputs) add(in.name, "", "input", true);
  for (std::size_t idx : reference.topological_order()) {
    const graph::Node& n = reference.nodes[idx];
    for (const auto& o : n.outputs)
      if (!o.empty()) add(o, detail::node_label(n), n.op_type, false);
  }
  return out;
}

// Runs both executors on `inputs` (keeping every intermediate value) and compares them; the
// graphs the executors hold (after their modes' rewriting) are matched.
template <class ReferenceMode, class ActualMode>
LayerComparison compare_layers(const Executor<ReferenceMode>& reference, const Executor<ActualMode>& actual,
                               const TensorMap& inputs) {
  RunOptions opt;
  opt.keep_intermediates = true;
  TensorMap a = reference.run(inputs, opt);
  TensorMap b = actual.run(inputs, opt);
  for (const auto& kv : inputs) {
    a.emplace(kv.first, kv.second);
    b.emplace(kv.first, kv.second);
  }
  return compare_values(reference.graph(), a, actual.graph(), b);
}

// Both graphs run by the float executor (a QDQ graph computes its QuantizeLinear and
// DequantizeLinear nodes: fake quantization as the model file defines it).
inline LayerComparison compare_layers(const graph::Graph& reference, const graph::Graph& actual,
                                      const TensorMap& inputs) {
  return compare_layers(Executor<>(reference), Executor<>(actual), inputs);
}

}  // namespace analysis
}  // namespace quantkit
