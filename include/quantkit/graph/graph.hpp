// Graph IR: named values (element type + shape), initializers, nodes with attributes, graph
// inputs and outputs; topological order with cycle detection and validation whose errors name
// the node (and the file the graph came from).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/graph/attribute.hpp"
#include "quantkit/graph/dtype.hpp"
#include "quantkit/graph/tensor.hpp"

namespace quantkit {
namespace graph {

inline constexpr std::int64_t unknown_dim = -1;

// Static description of a value: element type and (possibly partial) shape.
struct ValueInfo {
  std::string name;
  DType dtype = DType::undefined;
  bool has_shape = false;                 // rank known
  std::vector<std::int64_t> dims;         // unknown_dim where not known
  std::vector<std::string> dim_params;    // symbolic names (ONNX dim_param), "" where none

  bool fully_known() const {
    return has_shape && std::none_of(dims.begin(), dims.end(), [](std::int64_t d) { return d < 0; });
  }
  std::string shape_string() const {
    if (!has_shape) return "[?]";
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (i) s += ", ";
      if (dims[i] >= 0) s += std::to_string(dims[i]);
      else if (i < dim_params.size() && !dim_params[i].empty()) s += dim_params[i];
      else s += "?";
    }
    return s + "]";
  }
};

struct Node {
  std::string op_type;
  std::string domain;                 // "" = the default ONNX domain
  std::string name;
  std::vector<std::string> inputs;    // "" marks an omitted optional input
  std::vector<std::string> outputs;   // "" marks an omitted optional output
  std::map<std::string, Attribute> attributes;
  std::string source;                 // the file the node was loaded from, for error messages

  // "node 'conv1' (op Conv, file 'm.onnx')"; unnamed nodes are named by their first output.
  std::string describe() const {
    std::string s = "node ";
    if (!name.empty()) s += "'" + name + "' ";
    s += "(op " + (domain.empty() || domain == "ai.onnx" ? op_type : domain + "::" + op_type);
    if (name.empty() && !outputs.empty()) s += ", output '" + outputs.front() + "'";
    if (!source.empty()) s += ", file '" + source + "'";
    return s + ")";
  }
  template <class... Parts>
  [[noreturn]] void fail(Parts&&... parts) const {
    detail::fail(describe(), ": ", std::forward<Parts>(parts)...);
  }

  bool has_input(std::size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  bool has_output(std::size_t i) const { return i < outputs.size() && !outputs[i].empty(); }
  bool has_attr(const std::string& key) const { return attributes.count(key) != 0; }

  const Attribute* find_attr(const std::string& key, AttrKind kind) const {
    auto it = attributes.find(key);
    if (it == attributes.end()) return nullptr;
    if (it->second.kind != kind)
      fail("attribute '", key, "' is of kind ", to_string(it->second.kind), "; expected ", to_string(kind));
    return &it->second;
  }
  std::int64_t attr_int(const std::string& key, std::int64_t fallback) const {
    const Attribute* a = find_attr(key, AttrKind::int_);
    return a ? a->i : fallback;
  }
  float attr_float(const std::string& key, float fallback) const {
    const Attribute* a = find_attr(key, AttrKind::float_);
    return a ? a->f : fallback;
  }
  std::string attr_string(const std::string& key, const std::string& fallback) const {
    const Attribute* a = find_attr(key, AttrKind::string);
    return a ? a->s : fallback;
  }
  std::vector<std::int64_t> attr_ints(const std::string& key,
                                      const std::vector<std::int64_t>& fallback = {}) const {
    const Attribute* a = find_attr(key, AttrKind::ints);
    return a ? a->ints : fallback;
  }
  std::vector<float> attr_floats(const std::string& key, const std::vector<float>& fallback = {}) const {
    const Attribute* a = find_attr(key, AttrKind::floats);
    return a ? a->floats : fallback;
  }
  const Tensor* attr_tensor(const std::string& key) const {
    const Attribute* a = find_attr(key, AttrKind::tensor);
    return a ? a->t.get() : nullptr;
  }
  std::int64_t require_int(const std::string& key) const {
    const Attribute* a = find_attr(key, AttrKind::int_);
    if (!a) fail("attribute '", key, "' is missing; expected an int attribute");
    return a->i;
  }
};

struct Graph {
  std::string name;
  std::string source;                           // file the graph was loaded from ("" if built)
  std::int64_t opset = 17;                      // default-domain opset the nodes follow
  std::map<std::string, std::int64_t> opsets;   // every imported domain -> version
  std::vector<ValueInfo> inputs;                // runtime inputs (initializers excluded)
  std::vector<ValueInfo> outputs;
  std::map<std::string, Tensor> initializers;
  std::map<std::string, ValueInfo> value_info;  // inferred/declared info of other values
  std::vector<Node> nodes;

  // Info of any value: input, output, initializer or intermediate (nullptr if none known).
  const ValueInfo* find_value(const std::string& v) const {
    for (const auto& i : inputs) if (i.name == v) return &i;
    for (const auto& o : outputs) if (o.name == v) return &o;
    auto it = value_info.find(v);
    return it == value_info.end() ? nullptr : &it->second;
  }
  bool is_initializer(const std::string& v) const { return initializers.count(v) != 0; }
  bool is_input(const std::string& v) const {
    return std::any_of(inputs.begin(), inputs.end(), [&](const ValueInfo& i) { return i.name == v; });
  }

  template <class... Parts>
  [[noreturn]] void fail(Parts&&... parts) const {
    const std::string where = source.empty() ? std::string("graph") : "file '" + source + "'";
    detail::fail(where, (name.empty() ? "" : " (graph '" + name + "')"), ": ",
                 std::forward<Parts>(parts)...);
  }

  // Index of the node producing each value.
  std::unordered_map<std::string, std::size_t> producers() const {
    std::unordered_map<std::string, std::size_t> p;
    for (std::size_t i = 0; i < nodes.size(); ++i)
      for (const auto& o : nodes[i].outputs)
        if (!o.empty()) p.emplace(o, i);
    return p;
  }

  // Indices of the nodes reading each value (a node reading a value twice is listed twice).
  std::unordered_map<std::string, std::vector<std::size_t>> consumers() const {
    std::unordered_map<std::string, std::vector<std::size_t>> c;
    for (std::size_t i = 0; i < nodes.size(); ++i)
      for (const auto& in : nodes[i].inputs)
        if (!in.empty()) c[in].push_back(i);
    return c;
  }

  bool is_output(const std::string& v) const {
    return std::any_of(outputs.begin(), outputs.end(), [&](const ValueInfo& o) { return o.name == v; });
  }

  // True if `v` names any value (input, initializer, node output) or node of the graph.
  bool uses_name(const std::string& v) const {
    if (is_input(v) || is_initializer(v) || is_output(v) || value_info.count(v)) return true;
    for (const auto& n : nodes) {
      if (n.name == v) return true;
      for (const auto& o : n.outputs)
        if (o == v) return true;
    }
    return false;
  }

  // `base`, or `base_1`, `base_2`, ... : the first name not yet used (for values and nodes
  // that passes add: folded weights, inserted quantize/dequantize pairs).
  std::string unique_name(const std::string& base) const {
    if (!uses_name(base)) return base;
    for (std::size_t k = 1;; ++k) {
      const std::string n = base + "_" + std::to_string(k);
      if (!uses_name(n)) return n;
    }
  }

  // Checks: unique value producers (no output produced twice, or produced and also an input or
  // initializer), every node input produced somewhere, every graph output produced, no cycles.
  void validate() const { (void)topological_order(); }

  // Node indices in an order where every node comes after the producers of its inputs (stable:
  // nodes already in order keep their order). Fails on duplicates, dangling inputs, cycles.
  std::vector<std::size_t> topological_order() const {
    std::unordered_map<std::string, std::size_t> producer;
    std::set<std::string> external;
    for (const auto& i : inputs) {
      if (i.name.empty()) fail("a graph input has an empty name");
      if (!external.insert(i.name).second) fail("graph input '", i.name, "' is declared twice");
    }
    for (const auto& kv : initializers) external.insert(kv.first);
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      for (const auto& o : nodes[n].outputs) {
        if (o.empty()) continue;
        if (external.count(o))
          nodes[n].fail("output '", o, "' is also a graph input or initializer; expected each value "
                        "to have one producer");
        auto [it, inserted] = producer.emplace(o, n);
        if (!inserted) {
          if (it->second == n)
            nodes[n].fail("output '", o, "' is listed twice; expected distinct outputs");
          nodes[n].fail("output '", o, "' is already produced by ", nodes[it->second].describe(),
                        "; expected each value to have one producer");
        }
      }
    }
    // Kahn's algorithm, taking the lowest ready index first.
    std::vector<std::size_t> pending(nodes.size(), 0);
    std::vector<std::vector<std::size_t>> users(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      std::set<std::size_t> deps;
      for (const auto& in : nodes[n].inputs) {
        if (in.empty() || external.count(in)) continue;
        auto it = producer.find(in);
        if (it == producer.end())
          nodes[n].fail("input '", in, "' is not a graph input, an initializer or any node's output");
        deps.insert(it->second);
      }
      pending[n] = deps.size();
      for (auto d : deps) users[d].push_back(n);
    }
    for (const auto& o : outputs)
      if (!external.count(o.name) && !producer.count(o.name))
        fail("graph output '", o.name, "' is not produced by any node, input or initializer");
    std::set<std::size_t> ready;
    for (std::size_t n = 0; n < nodes.size(); ++n)
      if (pending[n] == 0) ready.insert(n);
    std::vector<std::size_t> order;
    order.reserve(nodes.size());
    while (!ready.empty()) {
      const std::size_t n = *ready.begin();
      ready.erase(ready.begin());
      order.push_back(n);
      for (auto u : users[n])
        if (--pending[u] == 0) ready.insert(u);
    }
    if (order.size() != nodes.size()) {
      for (std::size_t n = 0; n < nodes.size(); ++n)
        if (pending[n] != 0)
          nodes[n].fail("is part of a cycle (its inputs depend on its own outputs); expected an "
                        "acyclic graph");
    }
    return order;
  }
};

}  // namespace graph
}  // namespace quantkit
