// Graph pass: fold BatchNormalization into the Conv or Gemm that produces its input.
//
//   s = scale / sqrt(var + eps)
//   Conv:  W'[m] = W[m] * s[m],              B'[m] = (B[m] - mean[m]) * s[m] + beta_bn[m]
//   Gemm:  B' = B with output column n scaled by s[n],
//          C'[n] = beta * C[n] * s[n] + beta_bn[n] - mean[n] * s[n], and beta = 1
//
// A BatchNormalization is folded only when its producer's output feeds nothing else (and is
// not a graph output), its statistics and the producer's weights are initializers, and (Gemm)
// C is absent or one value per output column; otherwise it stays a node (the executor runs it).
// Initializers shared with other nodes are copied, never changed under another node.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "quantkit/graph/graph.hpp"

namespace quantkit {
namespace passes {

struct FoldReport {
  std::vector<std::string> folded;  // BatchNormalization nodes folded (described)
  std::vector<std::string> kept;    // and those left as nodes, with the reason
};

namespace detail {

inline std::size_t count_uses(const graph::Graph& g, const std::string& v) {
  std::size_t n = 0;
  for (const auto& node : g.nodes)
    for (const auto& in : node.inputs) n += (in == v);
  for (const auto& o : g.outputs) n += (o.name == v);
  return n;
}

// The initializer `name`, made private to the node (copied under a new name if shared).
inline graph::Tensor& private_initializer(graph::Graph& g, graph::Node& node, std::size_t input) {
  const std::string name = node.inputs[input];
  if (count_uses(g, name) > 1) {
    const std::string fresh = g.unique_name(name + "_bnfolded");
    g.initializers[fresh] = g.initializers.at(name);
    g.initializers[fresh].set_name(fresh);
    node.inputs[input] = fresh;
    return g.initializers[fresh];
  }
  return g.initializers.at(name);
}

}  // namespace detail

inline FoldReport fold_batchnorm(graph::Graph& g) {
  using graph::DType;
  using graph::Tensor;
  FoldReport report;
  for (std::size_t bi = 0; bi < g.nodes.size();) {
    graph::Node& bn = g.nodes[bi];
    if (bn.op_type != "BatchNormalization" || !(bn.domain.empty() || bn.domain == "ai.onnx")) {
      ++bi;
      continue;
    }
    auto keep = [&](const std::string& why) {
      report.kept.push_back(bn.describe() + ": " + why);
      ++bi;
    };
    if (bn.inputs.size() < 5 || bn.attr_int("training_mode", 0) != 0 || bn.attr_int("spatial", 1) == 0) {
      keep("training mode, per-activation statistics or missing inputs");
      continue;
    }
    bool extra_outputs = false;
    for (std::size_t k = 1; k < bn.outputs.size(); ++k) extra_outputs |= !bn.outputs[k].empty();
    if (extra_outputs) { keep("uses its optional outputs"); continue; }
    const auto producers = g.producers();
    auto p = producers.find(bn.inputs[0]);
    if (p == producers.end()) { keep("its input is not produced by a node"); continue; }
    graph::Node& prod = g.nodes[p->second];
    const bool is_conv = prod.op_type == "Conv", is_gemm = prod.op_type == "Gemm";
    if (!(is_conv || is_gemm) || !(prod.domain.empty() || prod.domain == "ai.onnx")) { keep("its input is not a Conv or Gemm output"); continue; }
    if (detail::count_uses(g, bn.inputs[0]) != 1) { keep("the " + prod.op_type + " output has other users"); continue; }
    std::vector<const Tensor*> stats;
    for (std::size_t k = 1; k <= 4; ++k) {
      auto it = g.initializers.find(bn.inputs[k]);
      stats.push_back(it != g.initializers.end() && it->second.dtype() == DType::float32 ? &it->second : nullptr);
    }
    if (!stats[0] || !stats[1] || !stats[2] || !stats[3]) { keep("its statistics are not float initializers"); continue; }
    if (prod.inputs.size() < 2 || !g.is_initializer(prod.inputs[1]) ||
        g.initializers.at(prod.inputs[1]).dtype() != DType::float32) { keep("the weights are not a float initializer"); continue; }
    const std::int64_t C = stats[0]->size();
    if (stats[1]->size() != C || stats[2]->size() != C || stats[3]->size() != C) { keep("statistics of different sizes"); continue; }
    const float eps = bn.attr_float("epsilon", 1e-5f);
    std::vector<float> s(static_cast<std::size_t>(C)), shift(static_cast<std::size_t>(C));
    for (std::int64_t c = 0; c < C; ++c) {
      const auto i = static_cast<std::size_t>(c);
      s[i] = stats[0]->data<float>()[c] / std::sqrt(stats[3]->data<float>()[c] + eps);
      shift[i] = stats[1]->data<float>()[c] - stats[2]->data<float>()[c] * s[i];
    }
    const bool has_bias = prod.inputs.size() > 2 && !prod.inputs[2].empty();
    if (has_bias && !g.is_initializer(prod.inputs[2])) { keep("the bias is not an initializer"); continue; }

    if (is_conv) {
      const Tensor& w0 = g.initializers.at(prod.inputs[1]);
      if (w0.rank() < 3 || w0.dim(0) != C) { keep("weight shape does not match the channels"); continue; }
      if (has_bias && (g.initializers.at(prod.inputs[2]).size() != C ||
                       g.initializers.at(prod.inputs[2]).dtype() != DType::float32)) { keep("bias shape does not match"); continue; }
      Tensor& w = detail::private_initializer(g, prod, 1);
      const std::int64_t per = w.size() / C;
      for (std::int64_t i = 0; i < w.size(); ++i) w.data<float>()[i] *= s[static_cast<std::size_t>(i / per)];
      std::vector<float> b(static_cast<std::size_t>(C), 0.0f);
      if (has_bias) b = g.initializers.at(prod.inputs[2]).to_vector<float>();
      for (std::size_t c = 0; c < b.size(); ++c) b[c] = b[c] * s[c] + shift[c];
      Tensor bt = Tensor::from_vector(Dims{C}, b);
      if (has_bias) {
        Tensor& dst = detail::private_initializer(g, prod, 2);
        bt.set_name(dst.name());
        dst = std::move(bt);
      } else {
        const std::string name = g.unique_name(prod.inputs[1] + "_bias_bnfolded");
        bt.set_name(name);
        g.initializers[name] = std::move(bt);
        prod.inputs.resize(3);
        prod.inputs[2] = name;
      }
    } else {  // Gemm: output columns are the channels
      const Tensor& b0 = g.initializers.at(prod.inputs[1]);
      const bool tb = prod.attr_int("transB", 0) != 0;
      if (b0.rank() != 2 || (tb ? b0.dim(0) : b0.dim(1)) != C) { keep("weight shape does not match the channels"); continue; }
      const float beta = prod.attr_float("beta", 1.0f);
      std::vector<float> c_old(static_cast<std::size_t>(C), 0.0f);
      if (has_bias && beta != 0.0f) {
        const Tensor& ct = g.initializers.at(prod.inputs[2]);
        const bool per_column = ct.dtype() == DType::float32 && ct.rank() <= 2 &&
                                (ct.size() == 1 || (ct.size() == C && ct.dim(ct.rank() - 1) == C));
        if (!per_column) { keep("C is not one value per output column"); continue; }
        for (std::int64_t c = 0; c < C; ++c) c_old[static_cast<std::size_t>(c)] = ct.data<float>()[ct.size() == 1 ? 0 : c];
      }
      Tensor& w = detail::private_initializer(g, prod, 1);
      for (std::int64_t r = 0; r < w.dim(0); ++r)
        for (std::int64_t c = 0; c < w.dim(1); ++c)
          w.data<float>()[r * w.dim(1) + c] *= s[static_cast<std::size_t>(tb ? r : c)];
      std::vector<float> cn(static_cast<std::size_t>(C));
      for (std::size_t c = 0; c < cn.size(); ++c) cn[c] = beta * c_old[c] * s[c] + shift[c];
      const std::string name = g.unique_name(prod.inputs[1] + "_C_bnfolded");
      g.initializers[name] = Tensor::from_vector(Dims{C}, cn, name);
      prod.inputs.resize(3);
      prod.inputs[2] = name;
      prod.attributes["beta"] = graph::Attribute::make_float(1.0f);
    }
    // The producer now writes the BatchNormalization's output; drop the BN node.
    const std::string old_out = prod.outputs[0];
    prod.outputs[0] = bn.outputs[0];
    g.value_info.erase(old_out);
    report.folded.push_back(bn.describe());
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(bi));
  }
  return report;
}

}  // namespace passes
}  // namespace quantkit
