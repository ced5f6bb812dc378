// The integer graph IntegerModeT<Scheme> makes of a QDQ graph, described layer by layer for
// code generation (quantkit/export/cpp.hpp) and reports (quantkit/analysis/requant_report.hpp):
//
//   auto t = quantkit::integer::trace<quantkit::FixedPointDoubleRounding>(qdq_graph);
//   for (const auto& n : t.graph.nodes)                     // integer ops + the input
//     for (const auto& m : quantkit::integer::real_multipliers<Scheme>(t, n)) ...  // Q / DQ
//
// trace() runs the integer executor once on zero inputs (batch 1 unless shapes are given) and
// keeps every value, so each layer's shapes and element types are known. real_multipliers()
// gives the real rescale factors a node's op hands to Scheme::make, computed exactly as
// quantkit/executor/integer/ops.hpp computes them: s_x * s_w[c] / s_y per output channel
// (Conv, MatMul), s_a / t, s_b / t and t / (2^20 s_y) with t = 2 max(s_a, s_b) (Add),
// s_x / (s_y * count) per window size (average pools), s_x / s_y where a requantization or
// rescale changes the scale (Relu/Clip, MaxPool, Flatten, Reshape, Concat inputs).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/executor.hpp"
#include "quantkit/executor/integer/mode.hpp"
#include "quantkit/executor/ops/pool.hpp"
#include "quantkit/graph/graph.hpp"

namespace quantkit {
namespace integer {

struct TracedGraph {
  graph::Graph graph;                           // after IntegerModeT<Scheme>::prepare
  std::vector<IntegerNodeInfo> report;          // which compute nodes are integer, and why not
  std::map<std::string, graph::Tensor> values;  // every value of one run on zero inputs
  std::map<std::string, Dims> input_shapes;     // the shapes the trace used

  const graph::Tensor& value(const std::string& v, const graph::Node& n) const {
    auto it = values.find(v);
    if (it == values.end()) n.fail("value '", v, "' was not computed by the trace");
    return it->second;
  }
  const graph::Tensor& initializer(const std::string& v, const graph::Node& n) const {
    auto it = graph.initializers.find(v);
    if (it == graph.initializers.end()) n.fail("input '", v, "' is not an initializer; expected a constant");
    return it->second;
  }
};

// Shapes of the graph inputs: `given` where named, else the declared shape with an unknown
// first (batch) dimension set to 1. Errors name the input.
inline std::map<std::string, Dims> input_shapes(const graph::Graph& g,
                                                const std::map<std::string, std::vector<std::int64_t>>& given) {
  for (const auto& kv : given)
    if (!g.is_input(kv.first)) g.fail("input shape given for '", kv.first, "', which is not a graph input");
  std::map<std::string, Dims> out;
  for (const auto& in : g.inputs) {
    auto it = given.find(in.name);
    std::vector<std::int64_t> dims;
    if (it != given.end()) {
      dims = it->second;
    } else {
      if (!in.has_shape) g.fail("input '", in.name, "' has no declared shape; expected one to be given");
      dims = in.dims;
      if (!dims.empty() && dims[0] < 0) dims[0] = 1;
    }
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (dims[d] < 1)
        g.fail("input '", in.name, "' has shape ", in.shape_string(), "; dimension ", d,
               " is not known: expected a fixed shape (give it explicitly)");
    out[in.name] = graph::make_dims(dims, "input '" + in.name + "'");
  }
  return out;
}

template <class Scheme>
TracedGraph trace(const graph::Graph& qdq, const std::map<std::string, std::vector<std::int64_t>>& shapes = {}) {
  TracedGraph t;
  t.input_shapes = input_shapes(qdq, shapes);
  // Unfolded: one integer op per layer (IntegerModeOptions::fold_requantize computes the same
  // integers with the standalone requantizations merged into their producers).
  IntegerModeOptions unfolded;
  unfolded.fold_requantize = false;
  const Executor<IntegerModeT<Scheme>> run(qdq, IntegerModeT<Scheme>(unfolded));
  t.graph = run.graph();
  t.report = run.mode().report();
  std::map<std::string, graph::Tensor> inputs;
  for (const auto& in : qdq.inputs) {
    const graph::DType type = in.dtype == graph::DType::undefined ? graph::DType::float32 : in.dtype;
    inputs.emplace(in.name, graph::Tensor(type, t.input_shapes.at(in.name), in.name));
  }
  RunOptions opt;
  opt.keep_intermediates = true;
  t.values = run.run(inputs, opt);
  for (auto& kv : inputs) t.values.emplace(kv.first, std::move(kv.second));
  return t;
}

namespace detail {

inline std::vector<float> floats(const graph::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.size()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t.as_double(static_cast<std::int64_t>(i)));
  return v;
}

// The window geometry of an integer pooling node on its traced input.
inline ops::WindowGeometry pool_window(const TracedGraph& t, const graph::Node& n) {
  const graph::Tensor& x = t.value(n.inputs.at(0), n);
  OpContext ctx(n, t.graph.opset, {&x});
  if (n.op_type == "IntGlobalAveragePool") {
    if (x.rank() < 3) n.fail("input shape ", x.shape().to_string(), "; expected N x C x D1 ...");
    std::vector<std::int64_t> kernel(x.shape().value.begin() + 2, x.shape().value.begin() + x.rank());
    return ops::window_geometry(ctx, x.shape(), kernel);
  }
  return ops::detail::pool_geometry(ctx, x.shape());
}

}  // namespace detail

// Element count of each window of an (integer) AveragePool over output positions, as the op
// counts them: with count_include_pad the padded extent (ceil_mode overhang excluded), else
// the elements inside the input.
inline std::vector<std::int64_t> window_counts(const ops::WindowGeometry& g, bool include_pad) {
  const ops::detail::WindowRange rd = ops::detail::window_range(g, 0), rh = ops::detail::window_range(g, 1),
                                 rw = ops::detail::window_range(g, 2);
  std::vector<std::int64_t> counts;
  counts.reserve(static_cast<std::size_t>(g.out_size()));
  for (std::int64_t od = 0; od < g.out[0]; ++od)
    for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
      for (std::int64_t ow = 0; ow < g.out[2]; ++ow)
        counts.push_back(ops::detail::window_count(rd, rh, rw, od, oh, ow, include_pad));
  return counts;
}

struct RealMultiplier {
  std::string what;        // "channel 3", "per tensor", "input a", "output", "window of 4", "input 1"
  std::int64_t index = 0;  // the channel; 0, 1, 2 for Add's a, b, output; the window's count;
                           // the Concat input
  double value = 0;        // the real multiplier handed to Scheme::make
};

// The real multipliers of integer node `n` of a traced graph (none for nodes that do not
// rescale: a requantization between equal scales is exact).
template <class Scheme>
std::vector<RealMultiplier> real_multipliers(const TracedGraph& t, const graph::Node& n) {
  std::vector<RealMultiplier> out;
  if (n.domain != kDomain) return out;
  auto scalar = [&](std::size_t i) { return static_cast<float>(t.initializer(n.inputs.at(i), n).as_double(0)); };
  const std::string& op = n.op_type;
  if (op == "IntConv" || op == "IntMatMul") {
    const float sx = scalar(1), sy = scalar(6);
    const std::vector<float> sw = detail::floats(t.initializer(n.inputs.at(4), n));
    for (std::size_t c = 0; c < sw.size(); ++c)
      out.push_back({sw.size() == 1 ? "per tensor" : "channel " + std::to_string(c), static_cast<std::int64_t>(c),
                     integer::detail::multiplier<Scheme>(sx, sw[c], sy)});
  } else if (op == "IntAdd") {
    const double sa = scalar(1), sb = scalar(4), sy = scalar(6);
    const double tw = 2.0 * std::max(sa, sb);
    out.push_back({"input a", 0, sa / tw});
    out.push_back({"input b", 1, sb / tw});
    out.push_back({"output", 2, tw / (static_cast<double>(std::int64_t{1} << 20) * sy)});
  } else if (op == "IntRequantize") {
    const float sx = scalar(1), sy = scalar(3);
    if (sx != sy) out.push_back({"per tensor", 0, static_cast<double>(sx) / static_cast<double>(sy)});
  } else if (op == "IntAveragePool" || op == "IntGlobalAveragePool") {
    const double sx = scalar(1), sy = scalar(3);
    const bool include_pad = op == "IntAveragePool" && n.attr_int("count_include_pad", 0) != 0;
    std::set<std::int64_t> seen;
    for (std::int64_t c : window_counts(detail::pool_window(t, n), include_pad))
      if (seen.insert(c).second)
        out.push_back({"window of " + std::to_string(c), c, sx / (sy * static_cast<double>(std::max<std::int64_t>(c, 1)))});
  } else if (op == "IntMaxPool" || op == "IntFlatten" || op == "IntReshape") {
    const std::size_t q = op == "IntReshape" ? 2 : 1;
    const float sx = scalar(q), sy = scalar(q + 2);
    if (sx != sy) out.push_back({"per tensor", 0, static_cast<double>(sx) / static_cast<double>(sy)});
  } else if (op == "IntConcat") {
    const std::size_t k = n.inputs.size();
    const float sy = scalar(k - 2);
    for (std::size_t i = 0; i + 2 < k; i += 3) {
      const float sx = scalar(i + 1);
      if (sx != sy)
        out.push_back({"input " + std::to_string(i / 3), static_cast<std::int64_t>(i / 3),
                       static_cast<double>(sx) / static_cast<double>(sy)});
    }
  }
  return out;
}

}  // namespace integer
}  // namespace quantkit
