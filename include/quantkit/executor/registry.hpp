// The op registry: op type -> implementation. Adding an op is one `add` call in its family's
// register_*_ops function (executor/ops/*.hpp). An op type that is not registered is an error
// naming the node and the op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/graph/tensor.hpp"

namespace quantkit {

// What an op implementation sees: its node, the model's opset, its inputs (nullptr for omitted
// optional inputs), the values its registry entry's `prepare` derived from the node's constant
// inputs (see OpRegistry::set_prepare) and the outputs it fills (one per node output; omitted
// outputs may be left empty).
class OpContext {
 public:
  using Tensor = graph::Tensor;
  OpContext(const graph::Node& node, std::int64_t opset, std::vector<const Tensor*> inputs)
      : node_(node), opset_(opset), inputs_(std::move(inputs)), outputs_(node.outputs.size()) {}

  const graph::Node& node() const { return node_; }
  std::int64_t opset() const { return opset_; }
  std::size_t num_inputs() const { return inputs_.size(); }
  std::size_t num_outputs() const { return outputs_.size(); }
  bool has_input(std::size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  bool wants_output(std::size_t i) const { return node_.has_output(i); }

  const Tensor& input(std::size_t i) const {
    if (!has_input(i))
      fail("input ", i, " is missing; expected ", i + 1, " or more inputs");
    return *inputs_[i];
  }
  const Tensor* optional_input(std::size_t i) const { return has_input(i) ? inputs_[i] : nullptr; }
  // What the op's `prepare` made from the node's initializers when the executor was built, or
  // nullptr: no prepare, or this run feeds one of those initializers (then the inputs are the
  // truth). An op must compute the same outputs with and without it.
  const std::vector<Tensor>* prepared() const { return prepared_; }
  void set_prepared(const std::vector<Tensor>* p) { prepared_ = p; }
  // The input, checked to have element type `t`.
  const Tensor& input(std::size_t i, graph::DType t) const {
    const Tensor& x = input(i);
    if (x.dtype() != t)
      fail("input ", i, " ('", node_.inputs[i], "') has element type ", graph::to_string(x.dtype()),
           "; expected ", graph::to_string(t));
    return x;
  }
  Tensor& output(std::size_t i) { return outputs_.at(i); }
  void set_output(std::size_t i, Tensor t) {
    if (i >= outputs_.size()) return;  // the node did not ask for this optional output
    t.set_name(node_.outputs[i]);
    outputs_[i] = std::move(t);
  }
  std::vector<Tensor>& outputs() { return outputs_; }
  const std::string& input_name(std::size_t i) const { return node_.inputs.at(i); }

  template <class... Parts>
  [[noreturn]] void fail(Parts&&... parts) const {
    node_.fail(std::forward<Parts>(parts)...);
  }

 private:
  const graph::Node& node_;
  std::int64_t opset_;
  std::vector<const Tensor*> inputs_;
  const std::vector<Tensor>* prepared_ = nullptr;
  std::vector<Tensor> outputs_;
};

using OpFunction = void (*)(OpContext&);
// Derives values from a node's constant inputs once, when an Executor is built (a weight in the
// layout the op reads fastest): `constants[i]` is input i when it is an initializer, else
// nullptr. Returns the values OpContext::prepared() hands the op (empty: nothing to keep).
using PrepareFunction = std::vector<graph::Tensor> (*)(const graph::Node&,
                                                       const std::vector<const graph::Tensor*>& constants);

class OpRegistry {
 public:
  struct Entry {
    OpFunction run = nullptr;
    std::vector<std::string> attributes;  // every attribute the implementation understands
    std::vector<std::size_t> shape_inputs; // inputs whose values (not only shapes) set the
                                           // output shape: Reshape's shape, Pad's pads, ...
    PrepareFunction prepare = nullptr;     // optional (set_prepare)
  };

  // Registers op_type (default ONNX domain "" / "ai.onnx" unless `domain` is given) with the
  // attributes its implementation understands: a node carrying any other attribute is
  // rejected, so an attribute from a newer opset is never silently ignored.
  void add(const std::string& op_type, OpFunction fn, std::vector<std::string> attributes = {},
           std::vector<std::size_t> shape_inputs = {}, const std::string& domain = {}) {
    ops_[key(domain, op_type)] = Entry{fn, std::move(attributes), std::move(shape_inputs), nullptr};
  }
  // Gives a registered op a prepare step (nullptr removes it: e.g. to keep no second copy of
  // Gemm's transposed weights when memory matters more than batch-1 latency).
  void set_prepare(const std::string& op_type, PrepareFunction prepare, const std::string& domain = {}) {
    auto it = ops_.find(key(domain, op_type));
    if (it == ops_.end())
      throw Error("set_prepare: op '" + op_type + "'" + (domain.empty() ? "" : " in domain '" + domain + "'") +
                  " is not registered; expected one of: " + list());
    it->second.prepare = prepare;
  }
  const Entry* find_entry(const std::string& domain, const std::string& op_type) const {
    auto it = ops_.find(key(domain, op_type));
    return it == ops_.end() ? nullptr : &it->second;
  }
  OpFunction find(const std::string& domain, const std::string& op_type) const {
    const Entry* e = find_entry(domain, op_type);
    return e ? e->run : nullptr;
  }
  bool supports(const std::string& domain, const std::string& op_type) const {
    return find(domain, op_type) != nullptr;
  }
  // The implementation of the node's op, or an error naming the node and the op (or the
  // attribute the implementation does not understand).
  OpFunction get(const graph::Node& node) const {
    const Entry* e = find_entry(node.domain, node.op_type);
    if (!e)
      node.fail("unsupported op '", node.op_type, "'",
                node.domain.empty() ? std::string() : " in domain '" + node.domain + "'",
                "; expected one of: ", list());
    for (const auto& kv : node.attributes) {
      bool known = false;
      for (const auto& a : e->attributes) known = known || a == kv.first;
      if (!known) {
        std::string names;
        for (const auto& a : e->attributes) names += (names.empty() ? "" : ", ") + a;
        node.fail("attribute '", kv.first, "' is not supported by ", node.op_type, "; expected only: ",
                  names.empty() ? std::string("no attributes") : names);
      }
    }
    return e->run;
  }
  std::vector<std::string> op_types() const {
    std::vector<std::string> v;
    for (const auto& kv : ops_) v.push_back(kv.first);
    return v;
  }
  std::string list() const {
    std::string s;
    for (const auto& kv : ops_) s += (s.empty() ? "" : ", ") + kv.first;
    return s;
  }

 private:
  static std::string key(const std::string& domain, const std::string& op) {
    return (domain.empty() || domain == "ai.onnx") ? op : domain + "::" + op;
  }
  std::map<std::string, Entry> ops_;
};

}  // namespace quantkit
