// What the data-driven remedies (AdaRound, bias correction) need about one weighted layer of
// a QuantizedModel: which layers there are (Conv, Gemm, MatMul with a quantized weight, in
// graph order), the layer's input on each calibration batch in the float model and in the
// quantized (fake-quant) model, and the layer's op run on a tensor with other weights.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/builtin_ops.hpp"
#include "quantkit/executor/executor.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/fake_quant.hpp"

namespace quantkit {
namespace ptq {

// Progress of a remedy: stage ("adaround", "bias-correction"), the layer, and the step inside
// the layer (AdaRound iterations; calibration batches for bias correction).
struct RemedyProgress {
  const char* stage = "";
  std::string layer;
  std::size_t layer_index = 0, layers = 0;
  std::size_t step = 0, steps = 0;
};
using RemedyCallback = std::function<void(const RemedyProgress&)>;

namespace detail {

struct LayerRef {
  std::size_t node = 0;  // index into qm.graph.nodes
  std::string key;       // node_key
  std::string weight;    // the quantized weight initializer
};

// Conv, Gemm and MatMul nodes of the model whose weight (input 1) is quantized, in
// topological order.
inline std::vector<LayerRef> quantized_layers(const QuantizedModel& qm) {
  std::vector<LayerRef> out;
  for (std::size_t idx : qm.graph.topological_order()) {
    const graph::Node& n = qm.graph.nodes[idx];
    if (n.op_type != "Conv" && n.op_type != "Gemm" && n.op_type != "MatMul") continue;
    if (!qm.is_quantized_node(node_key(n)) || !n.has_input(1)) continue;
    const TensorQuant* w = qm.find(n.inputs[1]);
    if (!w || w->role != TensorRole::weight) continue;
    out.push_back({idx, node_key(n), n.inputs[1]});
  }
  return out;
}

inline std::size_t count_quantized_readers(const QuantizedModel& qm, const std::string& v) {
  std::size_t k = 0;
  for (const auto& n : qm.graph.nodes)
    if (qm.is_quantized_node(node_key(n)))
      for (const auto& in : n.inputs) k += in == v;
  return k;
}

// The node's op (float) on `inputs` (nullptr for omitted ones), with the graph's opset.
inline graph::Tensor run_op(const graph::Graph& g, const graph::Node& n, std::vector<const graph::Tensor*> inputs) {
  OpContext ctx(n, g.opset, std::move(inputs));
  builtin_ops().get(n)(ctx);
  return std::move(ctx.output(0));
}

// Calls f(batch_index, x_float, x_quantized) for every calibration batch: the value input 0
// of the layer holds in the float graph `float_run` runs and in the fake-quant model of `qm`
// (rebuilt here, so it reflects every change made to qm so far).
template <class F>
void for_each_layer_input(const Executor<FloatMode>& float_run, const QuantizedModel& qm, const LayerRef& layer,
                          const std::vector<std::map<std::string, graph::Tensor>>& batches, F&& f) {
  const Executor<FakeQuantMode> fake(qm.graph, FakeQuantMode(qm));
  const std::string& float_name = qm.graph.nodes[layer.node].inputs.at(0);
  std::string quant_name;
  for (const auto& n : fake.graph().nodes)
    if (node_key(n) == layer.key && n.op_type == qm.graph.nodes[layer.node].op_type) quant_name = n.inputs.at(0);
  if (quant_name.empty()) qm.graph.nodes[layer.node].fail("not found in the fake-quant model");
  for (std::size_t b = 0; b < batches.size(); ++b) {
    RunOptions fo;
    fo.outputs = {float_name};
    RunOptions qo;
    qo.outputs = {quant_name};
    const graph::Tensor xf = float_run.run(batches[b], fo).at(float_name);
    const graph::Tensor xq = fake.run(batches[b], qo).at(quant_name);
    if (xf.dtype() != graph::DType::float32 || xq.dtype() != graph::DType::float32)
      qm.graph.nodes[layer.node].fail("input '", float_name, "' is not float32 during calibration");
    f(b, xf, xq);
  }
}

inline void check_batches(const std::vector<std::map<std::string, graph::Tensor>>& batches, const char* what) {
  if (batches.empty())
    quantkit::detail::fail(what, ": no calibration batch; expected the batches the model was calibrated with");
}

}  // namespace detail
}  // namespace ptq
}  // namespace quantkit
