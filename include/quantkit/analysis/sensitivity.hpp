// Where a quantized model loses accuracy, measured against the float model on the same samples
// (what Horizon's accuracy debug tool, AXera's layer-wise compare and AIMET's QuantAnalyzer do):
//
//   qk::analysis::DebugSession s(qm, {{"input", samples}});     // float outputs computed once
//   auto sens  = s.sensitivity({QuantPart::node, {Metric::cosine, Metric::sqnr}});
//   auto curve = s.error_curve(qk::analysis::keep_in_float(qm, {"/fc2/Gemm"}), "all but fc2");
//   auto part  = s.partial(0.999);   // sensitive nodes, and k of them left in float, k = 1..n
//
// Every variant is a partially quantized model (quantkit/analysis/partial.hpp) run by the
// fake-quant executor mode: the parameters are those of the fully quantized model, never
// calibrated again. The measured value is one tensor — the model's first output unless
// DebugOptions::output names another (any value the graph computes) — over all samples at once.
//   sensitivity  one row per quantized node (node: all it touches; weight: its weight only;
//                activation: one row per quantized activation), sorted worst first by the first
//                metric (ascending for cosine and SQNR, descending for MSE, MRE, Chebyshev).
//   error_curve  the similarity of every value along the graph (the reference graph's order)
//                for one variant; running_mean() gives the "average" mode (mean of the first n).
//   partial      the nodes whose quantization alone gives an output cosine under the threshold
//                (sensitive, worst first), and the output similarity when the first k of them are
//                left in float, k = 1..n.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/analysis/compare.hpp"
#include "quantkit/analysis/metrics.hpp"
#include "quantkit/analysis/partial.hpp"
#include "quantkit/error.hpp"
#include "quantkit/executor/executor.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/fake_quant.hpp"

namespace quantkit {
namespace analysis {

struct DebugOptions {
  std::string output;  // the value measured; "" = the graph's first output
};

struct SensitivityOptions {
  QuantPart part = QuantPart::node;
  std::vector<Metric> metrics = {Metric::cosine};  // sorted by the first
  std::vector<std::string> nodes;                  // interested nodes (activation: values); empty = all
};

struct SensitivityRow {
  std::string node;    // the node (activation part: the value's producer, "" for a graph input)
  std::string op;
  std::string tensor;  // weight / activation part: the tensor quantized alone
  Similarity metrics;  // the measured output, float (x) vs this variant (y)
};

struct SensitivityResult {
  QuantPart part = QuantPart::node;
  std::string output;
  std::vector<Metric> metrics;
  std::vector<SensitivityRow> rows;  // worst first by metrics.front()
  Similarity full;                   // every node quantized
};

struct ErrorCurve {
  std::string label;
  std::vector<LayerRow> rows;  // every float value along the graph, reference graph order
};

struct PartialStep {
  std::size_t float_nodes = 0;        // k: the first k sensitive nodes left in float
  std::vector<std::string> kept_float;
  Similarity metrics;
};

struct PartialResult {
  double threshold = 0.999;
  std::string output;
  Similarity full;
  std::vector<SensitivityRow> sensitive;  // only this node quantized: cosine < threshold, worst first
  std::vector<PartialStep> steps;         // k = 1..sensitive.size()
};

// Worse first by `m`.
inline bool worse(Metric m, double a, double b) { return higher_is_better(m) ? a < b : a > b; }

// Running mean of metric `m` over the first n rows, n = 1..rows (rows with errors skipped).
inline std::vector<double> running_mean(const ErrorCurve& c, Metric m) {
  std::vector<double> out;
  double sum = 0;
  std::size_t n = 0;
  for (const auto& r : c.rows) {
    if (!r.error.empty()) continue;
    const double v = r.metrics.get(m);
    sum += std::isfinite(v) ? v : 0.0;  // an infinite SQNR (exact value) adds nothing to the mean
    ++n;
    out.push_back(sum / static_cast<double>(n));
  }
  return out;
}

class DebugSession {
 public:
  using TensorMap = std::map<std::string, graph::Tensor>;

  // `qm`: the fully quantized model; `inputs`: the samples (every graph input, batched).
  DebugSession(ptq::QuantizedModel qm, TensorMap inputs, DebugOptions options = {})
      : qm_(std::move(qm)), inputs_(std::move(inputs)), options_(std::move(options)) {
    if (qm_.graph.outputs.empty()) qm_.graph.fail("the model has no output; expected at least one to measure");
    if (options_.output.empty()) options_.output = qm_.graph.outputs.front().name;
    if (!qm_.graph.is_output(options_.output) && !qm_.graph.producers().count(options_.output))
      quantkit::detail::fail("debug output '", options_.output,
                             "' is not a value the model computes; expected a graph output or a node output");
    reference_ = run_float();
  }

  const ptq::QuantizedModel& model() const { return qm_; }
  const TensorMap& inputs() const { return inputs_; }
  const std::string& output() const { return options_.output; }
  const graph::Tensor& reference_output() const { return reference_; }

  // The measured output of a variant.
  graph::Tensor run(const ptq::QuantizedModel& variant) const {
    Executor<ptq::FakeQuantMode> ex(variant.graph, ptq::FakeQuantMode(variant));
    RunOptions opt;
    opt.outputs = {options_.output};
    TensorMap out = ex.run(inputs_, opt);
    auto it = out.find(options_.output);
    if (it == out.end())
      quantkit::detail::fail("debug output '", options_.output, "' was not computed by the fake-quant run");
    return std::move(it->second);
  }

  // Float vs `variant` on the measured output.
  Similarity measure(const ptq::QuantizedModel& variant) const {
    const graph::Tensor y = run(variant);
    return similarity(reference_.view<float>().named(options_.output + " (float)"),
                      y.view<float>().named(options_.output + " (quantized)"));
  }
  Similarity measure_full() const { return measure(qm_); }

  SensitivityResult sensitivity(const SensitivityOptions& o) const {
    if (o.metrics.empty()) quantkit::detail::fail("sensitivity: no metric; expected at least one (e.g. cosine)");
    SensitivityResult r;
    r.part = o.part;
    r.output = options_.output;
    r.metrics = o.metrics;
    r.full = measure_full();
    const std::set<std::string> wanted(o.nodes.begin(), o.nodes.end());
    std::set<std::string> matched;
    auto interested = [&](const std::string& a, const std::string& b) {
      if (wanted.empty()) return true;
      bool hit = false;
      for (const auto& k : {a, b})
        if (!k.empty() && wanted.count(k)) {
          matched.insert(k);
          hit = true;
        }
      return hit;
    };
    if (o.part == QuantPart::activation) {
      const auto producers = qm_.graph.producers();
      for (const auto& v : quantized_activations(qm_)) {
        auto p = producers.find(v);
        const graph::Node* n = p == producers.end() ? nullptr : &qm_.graph.nodes[p->second];
        const std::string node = n ? ptq::node_key(*n) : std::string();
        if (!interested(v, node)) continue;
        r.rows.push_back({node, n ? n->op_type : "input", v, measure(restrict_to_activation(qm_, v))});
      }
    } else {
      for (const auto& q : quantized_nodes(qm_)) {
        if (o.part == QuantPart::weight && q.weights.empty()) continue;
        if (!interested(q.node, std::string())) continue;
        SensitivityRow row;
        row.node = q.node;
        row.op = q.op;
        if (o.part == QuantPart::weight) row.tensor = q.weights.front();
        row.metrics = measure(restrict_to(qm_, {q.node}, o.part));
        r.rows.push_back(std::move(row));
      }
    }
    for (const auto& k : wanted)
      if (!matched.count(k))
        quantkit::detail::fail("sensitivity: '", k, "' is not a quantized ",
                               o.part == QuantPart::activation ? "activation or its producer"
                               : o.part == QuantPart::weight   ? "node with a quantized weight"
                                                               : "node",
                               " of the model; expected a name `quantkit info` or the full sensitivity list shows");
    const Metric m = o.metrics.front();
    std::stable_sort(r.rows.begin(), r.rows.end(), [m](const SensitivityRow& a, const SensitivityRow& b) {
      return worse(m, a.metrics.get(m), b.metrics.get(m));
    });
    return r;
  }

  // Every value along the graph, float vs `variant`.
  ErrorCurve error_curve(const ptq::QuantizedModel& variant, std::string label) const {
    ErrorCurve c;
    c.label = std::move(label);
    c.rows = compare_layers(Executor<>(qm_.graph), Executor<ptq::FakeQuantMode>(variant.graph, ptq::FakeQuantMode(variant)),
                            inputs_)
                 .rows;
    return c;
  }

  PartialResult partial(double threshold = 0.999) const {
    SensitivityOptions o;
    o.metrics = all_metrics();
    return partial(threshold, sensitivity(o));
  }
  // From a node sensitivity already measured (part node, every node).
  PartialResult partial(double threshold, const SensitivityResult& s) const {
    if (!(threshold > -1.0) || !(threshold <= 1.0))
      quantkit::detail::fail("partial: cosine threshold ", threshold, "; expected a value in (-1, 1]");
    if (s.part != QuantPart::node)
      quantkit::detail::fail("partial: a sensitivity of type ", to_string(s.part), "; expected type node");
    PartialResult r;
    r.threshold = threshold;
    r.output = options_.output;
    r.full = s.full;
    for (const auto& row : s.rows)
      if (row.metrics.cosine < threshold) r.sensitive.push_back(row);
    std::stable_sort(r.sensitive.begin(), r.sensitive.end(), [](const SensitivityRow& a, const SensitivityRow& b) {
      return a.metrics.cosine < b.metrics.cosine;
    });
    std::vector<std::string> kept;
    for (std::size_t k = 0; k < r.sensitive.size(); ++k) {
      kept.push_back(r.sensitive[k].node);
      r.steps.push_back({k + 1, kept, measure(keep_in_float(qm_, kept))});
    }
    return r;
  }

 private:
  graph::Tensor run_float() const {
    Executor<> ex(qm_.graph);
    RunOptions opt;
    opt.outputs = {options_.output};
    TensorMap out = ex.run(inputs_, opt);
    auto it = out.find(options_.output);
    if (it == out.end()) quantkit::detail::fail("debug output '", options_.output, "' was not computed by the float run");
    if (it->second.dtype() != graph::DType::float32)
      quantkit::detail::fail("debug output '", options_.output, "' has element type ", graph::to_string(it->second.dtype()),
                             "; expected a float32 value to measure");
    return std::move(it->second);
  }

  ptq::QuantizedModel qm_;
  TensorMap inputs_;
  DebugOptions options_;
  graph::Tensor reference_;
};

}  // namespace analysis
}  // namespace quantkit
