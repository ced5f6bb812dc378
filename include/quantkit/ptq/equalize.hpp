// Cross-layer equalization (Nagel et al. 2019, "Data-Free Quantization Through Weight
// Equalization and Bias Correction"; AIMET's CLE, N2D2's export default): a float-graph pass
// that balances the per-channel weight ranges of consecutive layers so that one scale per
// tensor fits every channel, without changing what the float model computes.
//
//   qk::ptq::EqualizationReport r = qk::ptq::equalize_cross_layer(graph);  // BN folded first
//   std::fputs(qk::ptq::format(r).c_str(), stdout);
//
// For each chain  A -> [Relu | LeakyRelu | MaxPool | AveragePool | GlobalAveragePool |
// Identity | Dropout | Flatten]* -> B  with A, B in {Conv (depthwise and grouped included),
// Gemm}, every intermediate value read by one node only and not a graph output, and the
// weights (and A's bias) float32 initializers:
//   r1[i] = max |W_A| over output channel i of A,  r2[i] = max |W_B| over input channel i of B,
//   s[i]  = sqrt(r1[i] * r2[i]) / r2[i],
//   W_A[i, ...] /= s[i], b_A[i] /= s[i], W_B[..., i, ...] *= s[i]
// so both ranges become sqrt(r1[i] * r2[i]). Every op between A and B is positively
// homogeneous per channel (f(x / s) = f(x) / s for s > 0), so the float outputs are unchanged
// up to float rounding. A Flatten before a Gemm maps channel i of A to the block of
// K / channels consecutive inputs of B. Pairs sharing a layer (A -> B -> C) are equalized in
// turn, over several passes, until no scale of a pass differs from 1 by more than the
// tolerance (the per-pass "quant. range delta" N2D2 prints) or max_passes is reached.
// Initializers shared with other nodes are copied first, never changed under another node.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/passes/fold_batchnorm.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/ptq/config.hpp"

namespace quantkit {
namespace ptq {

// One equalized pair. Ranges are the per-tensor quantization ranges (max |w|); "usage" is the
// mean over channels of (channel range / tensor range): the share of the per-tensor integer
// grid an average channel uses (1 when balanced).
struct EqualizedPair {
  std::string first, second;  // node names (first output for unnamed nodes)
  std::string through;        // ops between them, e.g. "Relu, MaxPool" ("" when adjacent)
  std::int64_t channels = 0;
  double first_range_before = 0, first_range_after = 0;
  double second_range_before = 0, second_range_after = 0;
  double first_usage_before = 0, first_usage_after = 0;
  double second_usage_before = 0, second_usage_after = 0;
  double largest_scale = 1, smallest_scale = 1;  // total s[i] applied over all passes
  double range_delta = 0;  // max |1 - s[i]| in the last pass (N2D2's "quant. range delta")
};

struct EqualizationReport {
  std::vector<EqualizedPair> pairs;
  std::vector<std::string> skipped;  // chains not equalized, with the reason
  int passes = 0;
  double last_delta = 0;  // max over pairs of range_delta in the last pass
  bool converged = false;
};

namespace detail {

// A Conv or Gemm whose weight is a float32 initializer: how its flat weight index maps to
// output channels and to input channels.
struct WeightedLayer {
  std::size_t node = 0;
  std::int64_t out_channels = 0;  // M
  std::int64_t in_channels = 0;   // C (Conv: group * W.dim(1); Gemm: K)
  std::int64_t group = 1;
  std::int64_t kernel = 1;        // Conv: elements per (output, input channel) pair
  bool gemm = false, trans_b = false;

  std::int64_t output_channel(std::int64_t i) const {
    if (!gemm) return i / ((in_channels / group) * kernel);
    return trans_b ? i / in_channels : i % out_channels;
  }
  std::int64_t input_channel(std::int64_t i) const {
    if (!gemm) {
      const std::int64_t cg = in_channels / group, mg = out_channels / group;
      const std::int64_t m = i / (cg * kernel);
      return (m / mg) * cg + (i / kernel) % cg;
    }
    return trans_b ? i % in_channels : i / out_channels;
  }
};

inline bool weighted_layer(const graph::Graph& g, std::size_t idx, WeightedLayer& out, std::string& why) {
  const graph::Node& n = g.nodes[idx];
  if (!(n.domain.empty() || n.domain == "ai.onnx") || (n.op_type != "Conv" && n.op_type != "Gemm")) return false;
  if (!n.has_input(1) || !g.is_initializer(n.inputs[1]) ||
      g.initializers.at(n.inputs[1]).dtype() != graph::DType::float32) {
    why = n.describe() + ": its weight is not a float32 initializer";
    return false;
  }
  if (n.has_input(2) && (!g.is_initializer(n.inputs[2]) || g.initializers.at(n.inputs[2]).dtype() != graph::DType::float32)) {
    why = n.describe() + ": its bias is not a float32 initializer";
    return false;
  }
  const graph::Tensor& w = g.initializers.at(n.inputs[1]);
  WeightedLayer l;
  l.node = idx;
  if (n.op_type == "Conv") {
    if (w.rank() < 3) {
      why = n.describe() + ": weight shape " + w.shape().to_string() + " is not M x C/group x k...";
      return false;
    }
    l.group = n.attr_int("group", 1);
    l.out_channels = w.dim(0);
    l.in_channels = w.dim(1) * l.group;
    l.kernel = 1;
    for (int d = 2; d < w.rank(); ++d) l.kernel *= w.dim(d);
    if (l.group < 1 || l.out_channels % l.group != 0) {
      why = n.describe() + ": group " + std::to_string(l.group) + " does not divide " + std::to_string(l.out_channels) + " output channels";
      return false;
    }
  } else {
    if (w.rank() != 2 || n.attr_int("transA", 0) != 0) {
      why = n.describe() + ": Gemm with transA or a weight that is not a matrix";
      return false;
    }
    l.gemm = true;
    l.trans_b = n.attr_int("transB", 0) != 0;
    l.out_channels = l.trans_b ? w.dim(0) : w.dim(1);
    l.in_channels = l.trans_b ? w.dim(1) : w.dim(0);
  }
  if (n.has_input(2)) {
    const graph::Tensor& b = g.initializers.at(n.inputs[2]);
    if (b.rank() != 1 || b.dim(0) != l.out_channels) {
      why = n.describe() + ": bias of shape " + b.shape().to_string() + " is not one value per output channel";
      return false;
    }
  }
  out = l;
  return true;
}

// Ops between A and B: each commutes with a positive per-channel scale of its input.
inline bool is_scale_equivariant(const graph::Node& n) {
  if (!(n.domain.empty() || n.domain == "ai.onnx")) return false;
  const std::string& op = n.op_type;
  return op == "Relu" || op == "LeakyRelu" || op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
         op == "GlobalMaxPool" || op == "Identity" || op == "Dropout" || op == "Flatten";
}

struct Chain {
  WeightedLayer a, b;
  std::string through;
  std::int64_t block = 1;  // inputs of B per channel of A (Flatten before a Gemm)
};

// Per-channel max |w|: of A's output channels, or of B's input channels (divided in blocks).
inline std::vector<double> output_ranges(const graph::Tensor& w, const WeightedLayer& l) {
  std::vector<double> r(static_cast<std::size_t>(l.out_channels), 0.0);
  const float* p = w.data<float>();
  for (std::int64_t i = 0; i < w.size(); ++i) {
    double& m = r[static_cast<std::size_t>(l.output_channel(i))];
    m = std::max(m, std::fabs(static_cast<double>(p[i])));
  }
  return r;
}
inline std::vector<double> input_ranges(const graph::Tensor& w, const WeightedLayer& l, std::int64_t block,
                                        std::int64_t channels) {
  std::vector<double> r(static_cast<std::size_t>(channels), 0.0);
  const float* p = w.data<float>();
  for (std::int64_t i = 0; i < w.size(); ++i) {
    double& m = r[static_cast<std::size_t>(l.input_channel(i) / block)];
    m = std::max(m, std::fabs(static_cast<double>(p[i])));
  }
  return r;
}
inline double tensor_range(const std::vector<double>& r) {
  double m = 0;
  for (double v : r) m = std::max(m, v);
  return m;
}
inline double usage(const std::vector<double>& r) {
  const double m = tensor_range(r);
  if (!(m > 0) || r.empty()) return 1.0;
  double sum = 0;
  for (double v : r) sum += v / m;
  return sum / static_cast<double>(r.size());
}

inline std::string key_of(const graph::Node& n) { return node_key(n); }

// Finds the chains of the graph; describes the ones it cannot equalize in `skipped`.
inline std::vector<Chain> find_chains(const graph::Graph& g, const std::vector<std::string>& skip,
                                      std::vector<std::string>& skipped) {
  const auto consumers = g.consumers();
  auto only_reader = [&](const std::string& v, std::size_t& reader) {
    auto it = consumers.find(v);
    if (g.is_output(v) || it == consumers.end() || it->second.size() != 1) return false;
    reader = it->second[0];
    return true;
  };
  auto skipped_by_user = [&](const graph::Node& n) {
    return std::find(skip.begin(), skip.end(), key_of(n)) != skip.end();
  };
  std::vector<Chain> chains;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    Chain c;
    std::string why;
    if (!weighted_layer(g, i, c.a, why)) continue;
    const graph::Node& a = g.nodes[i];
    if (!a.has_output(0)) continue;
    std::string v = a.outputs[0];
    std::size_t next = 0;
    bool flattened = false, ok = true;
    std::vector<std::string> ops;
    for (;;) {
      if (!only_reader(v, next)) {
        ok = false;
        break;
      }
      const graph::Node& n = g.nodes[next];
      if (n.op_type == "Conv" || n.op_type == "Gemm") break;
      if (!is_scale_equivariant(n) || n.inputs.empty() || n.inputs[0] != v || !n.has_output(0)) {
        ok = false;
        break;
      }
      if (n.op_type == "Flatten") {
        if (n.attr_int("axis", 1) != 1) {
          ok = false;
          break;
        }
        flattened = true;
      }
      if (n.op_type == "Dropout" && n.outputs.size() > 1 && !n.outputs[1].empty()) {
        ok = false;
        break;
      }
      ops.push_back(n.op_type);
      v = n.outputs[0];
    }
    if (!ok) continue;  // not a chain (the output branches, is read by another op, ...)
    const graph::Node& b = g.nodes[next];
    if (b.inputs.empty() || b.inputs[0] != v) continue;
    const std::string label = "pair " + key_of(a) + " -> " + key_of(b);
    if (skipped_by_user(a) || skipped_by_user(b)) {
      skipped.push_back(label + ": named in the skip list");
      continue;
    }
    if (!weighted_layer(g, next, c.b, why)) {
      skipped.push_back(label + ": " + why);
      continue;
    }
    if (flattened && !c.b.gemm) {
      skipped.push_back(label + ": Flatten before a Conv");
      continue;
    }
    if (c.b.in_channels % c.a.out_channels != 0 || (!flattened && c.b.in_channels != c.a.out_channels)) {
      skipped.push_back(label + ": " + std::to_string(c.a.out_channels) + " output channels feed " +
                        std::to_string(c.b.in_channels) + " inputs");
      continue;
    }
    c.block = c.b.in_channels / c.a.out_channels;
    for (const auto& o : ops) c.through += (c.through.empty() ? "" : ", ") + o;
    chains.push_back(c);
  }
  return chains;
}

}  // namespace detail

// Equalizes every chain of `g` in place (after BatchNormalization folding: a BN between A
// and B stops the chain). Errors name the option.
inline EqualizationReport equalize_cross_layer(graph::Graph& g, const EqualizationOptions& opt = {}) {
  opt.validate();
  for (const auto& name : opt.skip)
    if (std::none_of(g.nodes.begin(), g.nodes.end(), [&](const graph::Node& n) { return node_key(n) == name; }))
      g.fail("EqualizationOptions::skip names node '", name,
             "', which is not in the graph; expected a node name (or the first output of an unnamed node)");
  EqualizationReport report;
  std::vector<detail::Chain> chains = detail::find_chains(g, opt.skip, report.skipped);
  if (chains.empty()) return report;
  // Every initializer a chain changes becomes private to its node first.
  for (const auto& c : chains)
    for (std::size_t idx : {c.a.node, c.b.node}) {
      graph::Node& n = g.nodes[idx];
      (void)passes::detail::private_initializer(g, n, 1);
      if (idx == c.a.node && n.has_input(2)) (void)passes::detail::private_initializer(g, n, 2);
    }

  report.pairs.resize(chains.size());
  std::vector<std::vector<double>> total(chains.size());
  for (std::size_t k = 0; k < chains.size(); ++k) {
    const detail::Chain& c = chains[k];
    EqualizedPair& p = report.pairs[k];
    p.first = detail::key_of(g.nodes[c.a.node]);
    p.second = detail::key_of(g.nodes[c.b.node]);
    p.through = c.through;
    p.channels = c.a.out_channels;
    const auto r1 = detail::output_ranges(g.initializers.at(g.nodes[c.a.node].inputs[1]), c.a);
    const auto r2 = detail::input_ranges(g.initializers.at(g.nodes[c.b.node].inputs[1]), c.b, c.block, p.channels);
    p.first_range_before = detail::tensor_range(r1);
    p.second_range_before = detail::tensor_range(r2);
    p.first_usage_before = detail::usage(r1);
    p.second_usage_before = detail::usage(r2);
    total[k].assign(static_cast<std::size_t>(p.channels), 1.0);
  }

  for (int pass = 0; pass < opt.max_passes; ++pass) {
    double delta = 0;
    for (std::size_t k = 0; k < chains.size(); ++k) {
      const detail::Chain& c = chains[k];
      graph::Node& na = g.nodes[c.a.node];
      graph::Node& nb = g.nodes[c.b.node];
      graph::Tensor& wa = g.initializers.at(na.inputs[1]);
      graph::Tensor& wb = g.initializers.at(nb.inputs[1]);
      const auto r1 = detail::output_ranges(wa, c.a);
      const auto r2 = detail::input_ranges(wb, c.b, c.block, c.a.out_channels);
      std::vector<double> s(r1.size(), 1.0);
      double pair_delta = 0;
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (!(r1[i] > 0) || !(r2[i] > 0)) continue;  // a dead channel: nothing to balance
        const double v = std::sqrt(r1[i] * r2[i]) / r2[i];
        if (!std::isfinite(v) || !(v > 0)) continue;
        s[i] = v;
        pair_delta = std::max(pair_delta, std::fabs(1.0 - v));
        total[k][i] *= v;
      }
      float* pa = wa.data<float>();
      for (std::int64_t i = 0; i < wa.size(); ++i)
        pa[i] = static_cast<float>(static_cast<double>(pa[i]) / s[static_cast<std::size_t>(c.a.output_channel(i))]);
      if (na.has_input(2)) {
        float* pb = g.initializers.at(na.inputs[2]).data<float>();
        for (std::size_t i = 0; i < s.size(); ++i) pb[i] = static_cast<float>(static_cast<double>(pb[i]) / s[i]);
      }
      float* pw = wb.data<float>();
      for (std::int64_t i = 0; i < wb.size(); ++i)
        pw[i] = static_cast<float>(static_cast<double>(pw[i]) * s[static_cast<std::size_t>(c.b.input_channel(i) / c.block)]);
      report.pairs[k].range_delta = pair_delta;
      delta = std::max(delta, pair_delta);
    }
    report.passes = pass + 1;
    report.last_delta = delta;
    if (delta <= opt.tolerance) {
      report.converged = true;
      break;
    }
  }

  for (std::size_t k = 0; k < chains.size(); ++k) {
    const detail::Chain& c = chains[k];
    EqualizedPair& p = report.pairs[k];
    const auto r1 = detail::output_ranges(g.initializers.at(g.nodes[c.a.node].inputs[1]), c.a);
    const auto r2 = detail::input_ranges(g.initializers.at(g.nodes[c.b.node].inputs[1]), c.b, c.block, p.channels);
    p.first_range_after = detail::tensor_range(r1);
    p.second_range_after = detail::tensor_range(r2);
    p.first_usage_after = detail::usage(r1);
    p.second_usage_after = detail::usage(r2);
    p.largest_scale = *std::max_element(total[k].begin(), total[k].end());
    p.smallest_scale = *std::min_element(total[k].begin(), total[k].end());
  }
  return report;
}

// The report as text: one line per pair (ranges, channel usage before -> after, scales).
inline std::string format(const EqualizationReport& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "cross-layer equalization: %zu pair(s), %d pass(es), %s (last quant. range delta %.3g)\n",
                r.pairs.size(), r.passes, r.converged ? "converged" : "stopped at max_passes", r.last_delta);
  out += line;
  for (const auto& p : r.pairs) {
    std::snprintf(line, sizeof line,
                  "  %s -> %s%s%s: %lld channels; range %.4g -> %.4g and %.4g -> %.4g; channel usage %.0f%% -> %.0f%% "
                  "and %.0f%% -> %.0f%%; scales %.3g..%.3g; quant. range delta %.3g\n",
                  p.first.c_str(), p.second.c_str(), p.through.empty() ? "" : " via ", p.through.c_str(),
                  static_cast<long long>(p.channels), p.first_range_before, p.first_range_after, p.second_range_before,
                  p.second_range_after, 100 * p.first_usage_before, 100 * p.first_usage_after, 100 * p.second_usage_before,
                  100 * p.second_usage_after, p.smallest_scale, p.largest_scale, p.range_delta);
    out += line;
  }
  for (const auto& s : r.skipped) out += "  skipped " + s + "\n";
  return out;
}

}  // namespace ptq
}  // namespace quantkit
