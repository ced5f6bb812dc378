// FakeQuantMode: an Executor mode that computes what the QDQ model save_qdq() writes, in
// float: quantize-dequantize exactly where that model has QuantizeLinear -> DequantizeLinear.
//
//   qk::Executor<qk::ptq::FakeQuantMode> run(qm.graph, qk::ptq::FakeQuantMode(qm));
//   auto logits = run.run({{"input", x}}).at("logits");
//
//   prepare(graph):  every quantized node's weight (and int32 bias) input is rewired to a new
//                    initializer holding the dequantized stored integers; every quantized graph
//                    input gets an Identity node whose output (NAME_dq) the quantized consumers
//                    read, fake-quantized by after_node.
//   after_node:      every quantized activation a node writes is replaced by
//                    dequantize(quantize(x)) (x / s, round half to even, clamp; the SIMD
//                    kernel, bit-identical to quantkit::ref::fake_quantize), so every
//                    reader — quantized or not, graph outputs too — sees the dequantized value,
//                    as in the QDQ model. Intermediates keep their names (layer-wise compare).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/executor/builtin_ops.hpp"
#include "quantkit/executor/registry.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/weights.hpp"
#include "quantkit/simd/simd.hpp"

namespace quantkit {
namespace ptq {

namespace detail {
// The value the quantized consumers of graph input `input` read in the QDQ model.
inline std::string dequantized_input_name(const graph::Graph& g, const std::string& input) {
  return g.unique_name(input + "_dq");
}
}  // namespace detail

class FakeQuantMode {
 public:
  static constexpr const char* name = "fake-quant";

  explicit FakeQuantMode(const QuantizedModel& qm)
      : tensors_(std::make_shared<const std::map<std::string, TensorQuant>>(qm.tensors)),
        nodes_(qm.quantized_nodes) {}

  const OpRegistry& registry() const { return builtin_ops(); }

  void prepare(graph::Graph& g) {
    std::map<std::string, std::size_t> key_count;
    for (const auto& n : g.nodes) ++key_count[node_key(n)];
    for (const auto& k : nodes_)
      if (!key_count.count(k))
        g.fail("fake-quant: quantized node '", k, "' is not in the graph; expected the graph the model was calibrated on");

    // Quantized initializers, dequantized once, under new names (other readers keep the float).
    std::map<std::string, std::string> renamed;
    for (auto& n : g.nodes) {
      if (!is_quantized(n)) continue;
      for (auto& in : n.inputs) {
        auto q = tensors_->find(in);
        if (in.empty() || q == tensors_->end() || q->second.role == TensorRole::activation) continue;
        auto r = renamed.find(in);
        if (r == renamed.end()) {
          auto it = g.initializers.find(in);
          if (it == g.initializers.end())
            n.fail(to_string(q->second.role), " '", in, "' is not an initializer of the graph; expected the "
                   "quantized ", to_string(q->second.role), " to be stored in the model");
          graph::Tensor t = dequantized_initializer(it->second, q->second, in);
          const std::string fq = g.unique_name(in + "_fq");
          t.set_name(fq);
          g.initializers.emplace(fq, std::move(t));
          r = renamed.emplace(in, fq).first;
        }
        in = r->second;
      }
    }
    // Quantized graph inputs: Identity -> NAME_dq, fake-quantized in after_node.
    std::vector<graph::Node> added;
    for (const auto& gi : g.inputs) {
      auto q = tensors_->find(gi.name);
      if (q == tensors_->end()) continue;
      const std::string dq = detail::dequantized_input_name(g, gi.name);
      bool used = false;
      for (auto& n : g.nodes) {
        if (!is_quantized(n)) continue;
        for (auto& in : n.inputs)
          if (in == gi.name) {
            in = dq;
            used = true;
          }
      }
      if (!used) continue;
      graph::Node id;
      id.op_type = "Identity";
      id.name = dq;
      id.inputs = {gi.name};
      id.outputs = {dq};
      id.source = g.source;
      added.push_back(id);
      input_alias_.emplace(dq, gi.name);
    }
    g.nodes.insert(g.nodes.begin(), added.begin(), added.end());
  }

  void after_node(const graph::Node& node, std::vector<graph::Tensor>& outputs) const {
    for (std::size_t k = 0; k < outputs.size() && k < node.outputs.size(); ++k) {
      const std::string& v = node.outputs[k];
      if (v.empty()) continue;
      auto a = input_alias_.find(v);
      auto q = tensors_->find(a == input_alias_.end() ? v : a->second);
      if (q == tensors_->end() || q->second.role != TensorRole::activation) continue;
      graph::Tensor& t = outputs[k];
      if (t.dtype() != graph::DType::float32)
        node.fail("output '", v, "' has element type ", graph::to_string(t.dtype()),
                  "; expected float32 for a quantized activation");
      // The SIMD kernel (bit-identical to ref::fake_quantize) into a new tensor: the kernels
      // take no aliased input and output.
      graph::Tensor y(graph::DType::float32, t.shape(), t.name());
      simd::fake_quantize(View<const float>(t.data<float>(), t.shape(), v), q->second.params,
                          View<float>(y.data<float>(), y.shape(), v));
      t = std::move(y);
    }
  }

  const std::map<std::string, TensorQuant>& tensors() const { return *tensors_; }

 private:
  bool is_quantized(const graph::Node& n) const {
    const std::string k = node_key(n);
    for (const auto& q : nodes_)
      if (q == k) return true;
    return false;
  }

  std::shared_ptr<const std::map<std::string, TensorQuant>> tensors_;
  std::vector<std::string> nodes_;
  std::map<std::string, std::string> input_alias_;  // NAME_dq -> graph input NAME
};

}  // namespace ptq
}  // namespace quantkit
