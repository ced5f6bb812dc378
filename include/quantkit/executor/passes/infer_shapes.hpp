// Graph pass: static shape inference for the supported ops without libonnx, by running each
// op on stand-in data.
//
// Values whose contents are known before any input is fed (initializers, Constant outputs and
// everything computed from them only) are computed for real, so data-dependent shapes
// (Reshape's shape, Pad's pads, Squeeze's axes) come out right. Other values are zero-filled
// tensors of their known shape, filled with ones (a valid scale, divisor and zero point);
// an op whose output shape depends on the values of an input (OpRegistry::Entry::shape_inputs:
// Reshape's shape, Pad's pads, ...) is inferred only when that input is such a constant.
// Symbolic dimensions (e.g. a batch "N") are substituted twice, with two different extents: an output dimension that differs between the two runs is
// symbolic (unknown_dim), one that agrees is static. A node whose inputs have no known shape,
// or whose op fails on stand-in data, leaves its outputs unknown; nothing is ever guessed.
//
// quantkit::onnx::load uses libonnx's shape inference when it is linked; this pass serves
// graphs built in code and builds without libonnx.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "quantkit/executor/builtin_ops.hpp"
#include "quantkit/graph/graph.hpp"

namespace quantkit {
namespace passes {

struct InferShapesOptions {
  // Stand-in tensors larger than this are not built (the node's outputs stay unknown).
  std::int64_t max_elements = std::int64_t{1} << 24;
  std::int64_t symbol_extents[2] = {2, 3};  // what symbolic dimensions stand for
};

// Fills graph.value_info (and unknown parts of graph.outputs); returns how many values got a
// fully or partially known shape.
inline std::size_t infer_shapes(graph::Graph& g, const OpRegistry& registry = builtin_ops(),
                                const InferShapesOptions& opt = {}) {
  using graph::Tensor;
  struct Known {
    graph::ValueInfo info;
    bool constant = false;
    Tensor value[2];  // the stand-ins (or the real value, for constants) of both runs
  };
  std::map<std::string, Known> known;
  auto make_standin = [&](const graph::ValueInfo& vi, Known& k) {
    if (!vi.has_shape || vi.dtype == graph::DType::undefined) return false;
    for (int run = 0; run < 2; ++run) {
      std::vector<std::int64_t> dims = vi.dims;
      for (auto& d : dims)
        if (d < 0) d = opt.symbol_extents[run];
      const Dims shape = Dims::from(dims.begin(), dims.end());
      std::int64_t n = 1;
      for (auto d : dims) {
        if (d != 0 && n > opt.max_elements / d) return false;
        n *= d;
      }
      k.value[run] = Tensor(vi.dtype, shape, vi.name);
      graph::visit_dtype(vi.dtype, [&](auto tag) {
        using T = decltype(tag);
        T* p = k.value[run].template data<T>();
        for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(1);
      });
    }
    k.info = vi;
    return true;
  };
  for (const auto& kv : g.initializers) {
    Known k;
    k.constant = true;
    k.value[0] = k.value[1] = kv.second;
    k.info.name = kv.first;
    k.info.dtype = kv.second.dtype();
    k.info.has_shape = true;
    k.info.dims = graph::to_vector(kv.second.shape());
    k.info.dim_params.assign(k.info.dims.size(), "");
    known[kv.first] = std::move(k);
  }
  for (const auto& in : g.inputs) {
    Known k;
    if (make_standin(in, k)) known[in.name] = std::move(k);
  }

  std::size_t found = 0;
  for (std::size_t idx : g.topological_order()) {
    const graph::Node& node = g.nodes[idx];
    const OpRegistry::Entry* entry = registry.find_entry(node.domain, node.op_type);
    if (!entry) continue;
    bool ready = true, constant = true;
    for (const auto& in : node.inputs) {
      if (in.empty()) continue;
      auto it = known.find(in);
      if (it == known.end()) {
        ready = false;
        break;
      }
      constant = constant && it->second.constant;
    }
    if (!ready) continue;
    for (std::size_t k : entry->shape_inputs)
      if (k < node.inputs.size() && !node.inputs[k].empty() && !known.at(node.inputs[k]).constant) ready = false;
    if (!ready) continue;
    std::vector<Tensor> outs[2];
    bool ok = true;
    for (int run = 0; run < 2 && ok; ++run) {
      std::vector<const Tensor*> in(node.inputs.size(), nullptr);
      for (std::size_t k = 0; k < node.inputs.size(); ++k)
        if (!node.inputs[k].empty()) in[k] = &known.at(node.inputs[k]).value[run];
      const std::int64_t opset =
          node.domain.empty() ? g.opset : (g.opsets.count(node.domain) ? g.opsets.at(node.domain) : 1);
      OpContext ctx(node, opset, in);
      try {
        registry.get(node)(ctx);
      } catch (const Error&) {
        ok = false;
        break;
      }
      outs[run] = std::move(ctx.outputs());
    }
    if (!ok) continue;
    for (std::size_t k = 0; k < node.outputs.size(); ++k) {
      if (node.outputs[k].empty() || outs[0][k].empty() || outs[1][k].empty()) continue;
      const Tensor& a = outs[0][k];
      const Tensor& b = outs[1][k];
      if (a.rank() != b.rank() || a.dtype() != b.dtype()) continue;
      Known kn;
      kn.constant = constant && a == b;
      kn.info.name = node.outputs[k];
      kn.info.dtype = a.dtype();
      kn.info.has_shape = true;
      for (int d = 0; d < a.rank(); ++d) kn.info.dims.push_back(a.dim(d) == b.dim(d) ? a.dim(d) : graph::unknown_dim);
      kn.info.dim_params.assign(kn.info.dims.size(), "");
      kn.value[0] = std::move(outs[0][k]);
      kn.value[1] = std::move(outs[1][k]);
      g.value_info[kn.info.name] = kn.info;
      for (auto& o : g.outputs)
        if (o.name == kn.info.name) {
          if (o.dtype == graph::DType::undefined) o.dtype = kn.info.dtype;
          if (!o.has_shape) {
            o.has_shape = true;
            o.dims = kn.info.dims;
            o.dim_params = kn.info.dim_params;
          }
        }
      known[kn.info.name] = std::move(kn);
      ++found;
    }
  }
  return found;
}

}  // namespace passes
}  // namespace quantkit
