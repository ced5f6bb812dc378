// Executor<Mode>: runs a graph::Graph node by node in topological order.
//
//   quantkit::Executor<> run(graph);                       // FloatMode
//   auto out = run.run({{"x", x}});                       // graph outputs
//   auto all = run.run({{"x", x}}, {{"conv1_out"}, true}); // chosen outputs + every intermediate
//
// A Mode is a (possibly stateful) object the executor keeps; it supplies:
//   const OpRegistry& registry() const          required: the op implementations
//   void prepare(graph::Graph&)                 optional: rewrite the graph once, before
//                                               validation (e.g. insert QDQ pairs, swap in
//                                               integer ops)
//   void after_node(const graph::Node&, std::vector<graph::Tensor>& outputs) const
//                                               optional: transform a node's outputs before
//                                               anything reads them (e.g. fake-quantize
//                                               activations where the scheme says)
// FloatMode is the float reference: no rewriting, the built-in registry (where the quantized
// ONNX ops run exactly as their definitions say). Fake-quant and integer-only modes plug in
// through the same three points; RunOptions::on_node observes values (calibration).
// Ops may keep values derived from initializers, made once when the executor is built
// (OpRegistry::set_prepare: float Gemm keeps a transB = 1 weight transposed back); a run that
// feeds such an initializer computes from the fed value instead.
// The tensors a run makes take their storage from the executor's graph::BufferPool: what one
// run freed, the next reuses (kept up to the most bytes a run had out at once), instead of
// glibc handing the megabytes back to the system and faulting them in again on every run.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <type_traits>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/builtin_ops.hpp"
#include "quantkit/executor/registry.hpp"
#include "quantkit/graph/buffer_pool.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/graph/tensor.hpp"
#include "quantkit/tensor/tensor_traits.hpp"

namespace quantkit {

struct FloatMode {
  static constexpr const char* name = "float";
  const OpRegistry& registry() const { return builtin_ops(); }
};

namespace detail {
template <class M, class = void>
struct has_prepare : std::false_type {};
template <class M>
struct has_prepare<M, std::void_t<decltype(std::declval<M&>().prepare(std::declval<graph::Graph&>()))>>
    : std::true_type {};
template <class M, class = void>
struct has_after_node : std::false_type {};
template <class M>
struct has_after_node<M, std::void_t<decltype(std::declval<const M&>().after_node(
                             std::declval<const graph::Node&>(), std::declval<std::vector<graph::Tensor>&>()))>>
    : std::true_type {};
}  // namespace detail

// Copies any adapted tensor (Eigen, std::vector + shape, a user type, a View) into an owning
// graph::Tensor, e.g. run.run({{"x", quantkit::to_tensor(my_tensor)}}).
template <class T>
graph::Tensor to_tensor(T&& t) {
  return graph::Tensor::from_view(make_view(std::forward<T>(t)));
}

struct RunOptions {
  // Values to compute (graph outputs when empty). Only the nodes they need are run.
  std::vector<std::string> outputs;
  // Return every value computed on the way (for layer-wise comparison), not only `outputs`.
  bool keep_intermediates = false;
  // Called after each node with its inputs and outputs (calibration, tracing, debugging).
  std::function<void(const graph::Node&, const std::vector<const graph::Tensor*>&,
                     const std::vector<graph::Tensor>&)>
      on_node;
};

template <class Mode = FloatMode>
class Executor {
 public:
  using Tensor = graph::Tensor;
  using TensorMap = std::map<std::string, Tensor>;

  // Lets the mode prepare the graph, then validates it (dangling inputs, duplicate outputs,
  // cycles) and that every op has an implementation that understands its attributes: errors
  // name the node, the op and the file.
  explicit Executor(graph::Graph g, Mode mode = {}) : Executor(std::move(g), std::move(mode), nullptr) {}
  // The same with an explicit op registry instead of the mode's (copied).
  Executor(graph::Graph g, const OpRegistry& registry, Mode mode = {})
      : Executor(std::move(g), std::move(mode), &registry) {}

  const graph::Graph& graph() const { return graph_; }
  const Mode& mode() const { return mode_; }
  // Where run() takes tensor storage from: the blocks earlier runs freed, kept up to the most
  // bytes the runs had out at once (see graph/buffer_pool.hpp).
  const graph::BufferPool& buffer_pool() const { return *pool_.get(); }

 private:
  Executor(graph::Graph g, Mode mode, const OpRegistry* registry)
      : graph_(std::move(g)), mode_(std::move(mode)) {
    if constexpr (detail::has_prepare<Mode>::value) mode_.prepare(graph_);
    registry_ = registry ? *registry : mode_.registry();
    order_ = graph_.topological_order();
    functions_.resize(graph_.nodes.size());
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i) functions_[i] = registry_.get(graph_.nodes[i]);
    index_values();
    prepare_nodes();
  }

 public:
  TensorMap run(const TensorMap& inputs, const RunOptions& options = {}) const {
    check_inputs(inputs);
    const graph::ScopedBufferPool storage(pool_.get());
    std::vector<std::string> wanted = options.outputs;
    if (wanted.empty())
      for (const auto& o : graph_.outputs) wanted.push_back(o.name);
    const std::size_t n_values = names_.size();
    // Before a node computes it, a value is read from the fed tensors, else the initializers.
    std::vector<const Tensor*> given(n_values, nullptr);
    std::vector<char> fed(n_values, 0);
    {
      auto it = graph_.initializers.begin();
      for (std::size_t id : initializer_ids_) given[id] = &(it++)->second;
    }
    for (const auto& kv : inputs) {
      const std::size_t id = ids_.at(kv.first);  // (check_inputs: a graph input or initializer)
      given[id] = &kv.second;
      fed[id] = 1;
    }
    const std::vector<char> needed = needed_nodes(wanted, fed);

    // Remaining uses of each value by the nodes still to run, to free intermediates early.
    std::vector<std::size_t> uses(n_values, 0);
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i)
      if (needed[i])
        for (std::size_t id : node_inputs_[i])
          if (id != kNoValue) ++uses[id];
    std::vector<char> keep(n_values, 0);
    for (const auto& w : wanted)
      if (auto it = ids_.find(w); it != ids_.end()) keep[it->second] = 1;

    std::vector<Tensor> values(n_values);
    std::vector<char> computed(n_values, 0);
    auto lookup = [&](std::size_t id) -> const Tensor* { return computed[id] ? &values[id] : given[id]; };

    for (std::size_t idx : order_) {
      if (!needed[idx]) continue;
      const graph::Node& node = graph_.nodes[idx];
      const std::vector<std::size_t>& in_ids = node_inputs_[idx];
      std::vector<const Tensor*> in(in_ids.size(), nullptr);
      for (std::size_t k = 0; k < in_ids.size(); ++k) {
        if (in_ids[k] == kNoValue) continue;
        in[k] = lookup(in_ids[k]);
        if (!in[k]) node.fail("input '", node.inputs[k], "' has no value (not fed and not produced)");
      }
      OpContext ctx(node, opset_of(node), in);
      if (!prepared_[idx].empty()) {
        bool valid = true;  // a fed initializer makes what was derived from it stale
        for (std::size_t id : in_ids) valid = valid && (id == kNoValue || !is_initializer_[id] || !fed[id]);
        if (valid) ctx.set_prepared(&prepared_[idx]);
      }
      run_node(node, functions_[idx], ctx);
      for (std::size_t k = 0; k < node.outputs.size(); ++k) {
        if (node.outputs[k].empty()) continue;
        if (ctx.output(k).empty())
          node.fail("produced no value for output '", node.outputs[k], "'");
      }
      if constexpr (detail::has_after_node<Mode>::value) mode_.after_node(node, ctx.outputs());
      if (options.on_node) options.on_node(node, in, ctx.outputs());
      const std::vector<std::size_t>& out_ids = node_outputs_[idx];
      for (std::size_t k = 0; k < out_ids.size(); ++k)
        if (out_ids[k] != kNoValue) {
          values[out_ids[k]] = std::move(ctx.output(k));
          computed[out_ids[k]] = 1;
        }
      if (!options.keep_intermediates)
        for (std::size_t id : in_ids)
          if (id != kNoValue && --uses[id] == 0 && !keep[id] && computed[id]) {
            values[id] = Tensor();
            computed[id] = 0;
          }
    }

    TensorMap result;
    if (options.keep_intermediates)
      for (std::size_t id = 0; id < n_values; ++id)
        if (computed[id]) {
          result[names_[id]] = std::move(values[id]);
          computed[id] = 0;
        }
    for (const auto& w : wanted) {
      if (result.count(w)) continue;
      auto it = ids_.find(w);
      const std::size_t id = it == ids_.end() ? kNoValue : it->second;
      if (id != kNoValue && computed[id]) {  // computed here: moved, not copied
        result[w] = std::move(values[id]);
        result[w].set_name(w);
      } else if (const Tensor* t = id == kNoValue ? nullptr : lookup(id)) {
        result[w] = *t;
        result[w].set_name(w);
      } else {
        graph_.fail("requested output '", w, "' was not computed");
      }
    }
    return result;
  }

  // Inputs as any adapted tensor type (Eigen, std::vector + shape, a View, a user type with
  // tensor_traits): copied into graph::Tensors, then run as above.
  template <class UserTensor, class = std::enable_if_t<is_tensor_v<UserTensor>>>
  TensorMap run(const std::map<std::string, UserTensor>& inputs, const RunOptions& options = {}) const {
    TensorMap converted;
    for (const auto& kv : inputs) converted[kv.first] = to_tensor(kv.second);
    return run(converted, options);
  }

 private:
  std::int64_t opset_of(const graph::Node& node) const {
    if (node.domain.empty() || node.domain == "ai.onnx") return graph_.opset;
    auto it = graph_.opsets.find(node.domain);
    return it == graph_.opsets.end() ? 1 : it->second;
  }

  static void run_node(const graph::Node& node, OpFunction fn, OpContext& ctx) {
    naming_node(node, [&] { fn(ctx); });
  }

  // Runs f (the node's op or its prepare); errors raised below it (reference functions,
  // tensors) get the node's name.
  template <class F>
  static void naming_node(const graph::Node& node, F&& f) {
    try {
      f();
    } catch (const Error& e) {
      const std::string what = e.what();
      const std::string about = node.describe();
      if (what.find(about) != std::string::npos) throw;
      const std::string prefix = "quantkit: ";
      throw Error(about + ": " + (what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what));
    } catch (const std::bad_alloc&) {
      node.fail("out of memory computing its outputs (are the shapes as intended?)");
    }
  }

  void check_inputs(const TensorMap& inputs) const {
    for (const auto& decl : graph_.inputs) {
      auto it = inputs.find(decl.name);
      if (it == inputs.end()) continue;  // may be unneeded for the requested outputs
      const Tensor& t = it->second;
      if (decl.dtype != graph::DType::undefined && t.dtype() != decl.dtype)
        graph_.fail("input '", decl.name, "' has element type ", graph::to_string(t.dtype()), "; expected ",
                    graph::to_string(decl.dtype));
      if (!decl.has_shape) continue;
      bool ok = static_cast<std::size_t>(t.rank()) == decl.dims.size();
      for (std::size_t d = 0; ok && d < decl.dims.size(); ++d)
        ok = decl.dims[d] < 0 || decl.dims[d] == t.dim(static_cast<int>(d));
      if (!ok)
        graph_.fail("input '", decl.name, "' has shape ", t.shape().to_string(), "; expected ", decl.shape_string());
    }
    for (const auto& kv : inputs)
      if (!graph_.is_input(kv.first) && !graph_.is_initializer(kv.first))
        graph_.fail("fed value '", kv.first, "' is not a graph input or initializer");
  }

  // Nodes needed for `wanted`, failing on values nobody produces or feeds.
  std::vector<char> needed_nodes(const std::vector<std::string>& wanted, const std::vector<char>& fed) const {
    std::vector<char> needed(graph_.nodes.size(), 0);
    std::vector<char> seen(names_.size(), 0);
    // (value id, name): kNoValue for a requested name the graph does not have
    std::vector<std::pair<std::size_t, const std::string*>> stack;
    for (const auto& w : wanted) {
      auto it = ids_.find(w);
      stack.emplace_back(it == ids_.end() ? kNoValue : it->second, &w);
    }
    while (!stack.empty()) {
      const auto [id, name] = stack.back();
      stack.pop_back();
      if (name->empty()) continue;
      if (id == kNoValue) graph_.fail("requested value '", *name, "' is not produced by any node, input or initializer");
      if (seen[id]) continue;
      seen[id] = 1;
      if (fed[id]) continue;
      const std::size_t p = producer_[id];
      if (p == kNoValue) {
        if (is_initializer_[id]) continue;
        if (graph_.is_input(*name)) graph_.fail("input '", *name, "' is needed but was not given");
        graph_.fail("requested value '", *name, "' is not produced by any node, input or initializer");
      }
      if (needed[p]) continue;
      needed[p] = 1;
      const graph::Node& node = graph_.nodes[p];
      for (std::size_t k = 0; k < node.inputs.size(); ++k) stack.emplace_back(node_inputs_[p][k], &node.inputs[k]);
    }
    return needed;
  }

  // Value names as indices, made once: run() keeps values, uses and producers in vectors (string
  // maps per run were 45 % of the integer demo CNN's time at batch 1).
  void index_values() {
    auto id = [&](const std::string& v) {
      if (v.empty()) return kNoValue;
      const auto r = ids_.emplace(v, names_.size());
      if (r.second) names_.push_back(v);
      return r.first->second;
    };
    for (const auto& d : graph_.inputs) id(d.name);
    for (const auto& kv : graph_.initializers) initializer_ids_.push_back(id(kv.first));
    node_inputs_.resize(graph_.nodes.size());
    node_outputs_.resize(graph_.nodes.size());
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
      for (const auto& v : graph_.nodes[i].inputs) node_inputs_[i].push_back(id(v));
      for (const auto& v : graph_.nodes[i].outputs) node_outputs_[i].push_back(id(v));
    }
    for (const auto& o : graph_.outputs) id(o.name);
    producer_.assign(names_.size(), kNoValue);
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i)
      for (std::size_t v : node_outputs_[i])
        if (v != kNoValue && producer_[v] == kNoValue) producer_[v] = i;  // the first, as Graph::producers
    is_initializer_.assign(names_.size(), 0);
    for (std::size_t v : initializer_ids_) is_initializer_[v] = 1;
  }

  // Each node's registry `prepare` over its initializer inputs, once (errors name the node).
  void prepare_nodes() {
    prepared_.resize(graph_.nodes.size());
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
      const graph::Node& node = graph_.nodes[i];
      const OpRegistry::Entry* e = registry_.find_entry(node.domain, node.op_type);
      if (!e || !e->prepare) continue;
      std::vector<const Tensor*> constants(node.inputs.size(), nullptr);
      bool any = false;
      for (std::size_t k = 0; k < node.inputs.size(); ++k) {
        auto it = node.inputs[k].empty() ? graph_.initializers.end() : graph_.initializers.find(node.inputs[k]);
        if (it == graph_.initializers.end()) continue;
        constants[k] = &it->second;
        any = true;
      }
      if (!any) continue;
      naming_node(node, [&] { prepared_[i] = e->prepare(node, constants); });
    }
  }

  static constexpr std::size_t kNoValue = static_cast<std::size_t>(-1);

  graph::Graph graph_;
  Mode mode_;
  OpRegistry registry_;  // a copy: the executor never depends on the caller's registry's lifetime
  std::vector<std::size_t> order_;
  std::vector<OpFunction> functions_;
  std::vector<std::vector<Tensor>> prepared_;         // per node: its op's prepare (often empty)
  std::unordered_map<std::string, std::size_t> ids_;  // value name -> index
  std::vector<std::string> names_;                    // index -> value name
  std::vector<std::size_t> initializer_ids_;          // in graph_.initializers' order
  std::vector<std::vector<std::size_t>> node_inputs_, node_outputs_;  // kNoValue: omitted
  std::vector<std::size_t> producer_;                 // node index, or kNoValue
  std::vector<char> is_initializer_;
  // Storage of the tensors run() makes, reused by the next run (copies of the executor share it).
  graph::BufferPool::Handle pool_ = graph::BufferPool::create();
};

}  // namespace quantkit
