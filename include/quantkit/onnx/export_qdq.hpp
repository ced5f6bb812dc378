// QDQ export: a calibrated ptq::QuantizedModel -> an ONNX model in the QDQ form ONNX Runtime
// runs (and fuses into QLinearConv / QGemm / MatMulInteger where it can).
//
//   quantkit::onnx::QdqReport r = quantkit::onnx::save_qdq(qm, "model.qdq.onnx");
//
// What is written (the same placement ptq::FakeQuantMode computes, so quantkit's fake-quant
// outputs equal ONNX Runtime's on this model up to float rounding):
//   - weights: quantized initializers NAME_quantized (int8/uint8, int16/uint16, or int4/uint4
//     packed two to a byte) + NAME_scale + NAME_zero_point -> DequantizeLinear -> NAME_dequantized,
//     per tensor, per channel (axis) or in blocks (axis + block_size, opset 21);
//   - biases: int32 NAME_quantized with scale s_input * s_weight[c] and zero point 0 ->
//     DequantizeLinear (axis 0 when per channel);
//   - activations: the producer writes NAME_float, QuantizeLinear -> NAME_quantized ->
//     DequantizeLinear -> NAME, so every reader (and a graph output) sees the dequantized value
//     under the original name; a quantized graph input X feeds QuantizeLinear -> DequantizeLinear
//     -> X_dq, read by the quantized nodes.
// Opset: the model's, raised to 13 (per-axis DequantizeLinear) or to 21 when a format is
// 4- or 16-bit or weights are per group. Raising it converts Squeeze/Unsqueeze/Reduce* axes and
// Clip bounds from attributes to inputs; ops whose meaning changed otherwise are an error.
// Every node's op must exist at that opset (libonnx's schemas when linked, else the executor's
// registry); then libonnx's checker runs on the model when linked and it knows the opset
// (Debian's libonnx 1.12 knows <= 17; opset-21 models are for ONNX Runtime to check).
// The file is written atomically: on any error nothing is left at the path. Errors name the
// node, op, tensor and file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "quantkit/executor/builtin_ops.hpp"
#include "quantkit/onnx/load.hpp"
#include "quantkit/onnx/save.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/fake_quant.hpp"
#include "quantkit/ptq/weights.hpp"
#include "quantkit/ref/pack.hpp"

#if QUANTKIT_ONNX_SHAPE_INFERENCE
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#endif

namespace quantkit {
namespace onnx {

struct QdqOptions {
  std::int64_t min_opset = 13;  // never below 13 (per-axis DequantizeLinear)
  bool check = true;            // libonnx's checker, where linked and it knows the opset
  std::string producer = "quantkit";
};

struct QdqReport {
  std::int64_t opset = 0;
  bool checked = false;         // libonnx's checker ran and passed
  std::string check_note;       // why it did not run
  std::size_t activation_pairs = 0;      // QuantizeLinear -> DequantizeLinear pairs
  std::size_t quantized_initializers = 0;  // weights and biases behind a DequantizeLinear
  std::size_t float_nodes = 0;           // nodes left in float (not quantized)
};

namespace detail {

inline int qdq_onnx_type(const ptq::TensorFormat& f, const std::string& what) {
  switch (f.bits) {
    case 4: return f.is_signed ? onnx_int4 : onnx_uint4;
    case 8: return f.is_signed ? onnx_int8 : onnx_uint8;
    case 16: return f.is_signed ? onnx_int16 : onnx_uint16;
    case 32:
      if (f.is_signed) return onnx_int32;
      break;
    default: break;
  }
  fail(what, ": format ", f.name(), " cannot be stored in an ONNX QDQ model; expected int4/uint4, "
       "int8/uint8, int16/uint16 or int32");
}

// Integer values (already in range) as an ONNX tensor of `type`.
inline void int_tensor_to_proto(const std::vector<std::int32_t>& v, const std::vector<std::int64_t>& dims, int type,
                                const std::string& name, ::onnx::TensorProto& p) {
  p.set_name(name);
  p.set_data_type(type);
  for (auto d : dims) p.add_dims(d);
  std::string raw;
  switch (type) {
    case onnx_int4: case onnx_uint4: {
      raw.resize(packed_size(v.size(), 4));
      ref::pack(v.data(), v.size(), 4, reinterpret_cast<std::uint8_t*>(&raw[0]), raw.size(), name);
      break;
    }
    case onnx_int8: case onnx_uint8:
      for (auto x : v) raw.push_back(static_cast<char>(static_cast<std::uint8_t>(x & 0xff)));
      break;
    case onnx_int16: case onnx_uint16:
      for (auto x : v) {
        const auto u = static_cast<std::uint16_t>(x & 0xffff);
        raw.push_back(static_cast<char>(u & 0xff));
        raw.push_back(static_cast<char>(u >> 8));
      }
      break;
    case onnx_int32:
      raw.resize(v.size() * 4);
      if (!v.empty()) std::memcpy(&raw[0], v.data(), raw.size());  // little-endian host
      break;
    default: fail("tensor '", name, "': cannot write element type ", type);
  }
  p.set_raw_data(raw);
}

inline void float_tensor_to_proto(const std::vector<float>& v, const std::vector<std::int64_t>& dims,
                                  const std::string& name, ::onnx::TensorProto& p) {
  p.set_name(name);
  p.set_data_type(onnx_float);
  for (auto d : dims) p.add_dims(d);
  p.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

// Shape of the scale / zero point tensors of a quantized initializer of shape `shape`.
inline std::vector<std::int64_t> param_dims(const QuantParams& p, const Dims& shape) {
  switch (p.granularity.kind) {
    case GranularityKind::per_tensor: return {};
    case GranularityKind::per_channel: return {static_cast<std::int64_t>(p.size())};
    case GranularityKind::per_group: {
      std::vector<std::int64_t> d = graph::to_vector(shape);
      const int axis = p.granularity.axis < 0 ? p.granularity.axis + shape.rank : p.granularity.axis;
      d[static_cast<std::size_t>(axis)] = (d[static_cast<std::size_t>(axis)] + p.granularity.block_size - 1) /
                                          p.granularity.block_size;
      return d;
    }
  }
  return {};
}

inline graph::Node make_node(const std::string& op, const std::string& name, std::vector<std::string> in,
                             std::vector<std::string> out, const std::string& source) {
  graph::Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.source = source;
  return n;
}

// Attribute -> int64 initializer input (Squeeze/Unsqueeze/Reduce* axes when raising the opset).
inline void attribute_to_input(graph::Graph& g, graph::Node& n, const std::string& attr, std::size_t index) {
  auto it = n.attributes.find(attr);
  if (it == n.attributes.end()) return;
  const std::vector<std::int64_t> v = it->second.ints;
  const std::string name = g.unique_name((n.name.empty() ? n.outputs.front() : n.name) + "_" + attr);
  g.initializers.emplace(name, graph::Tensor::from_vector<std::int64_t>(Dims{static_cast<std::int64_t>(v.size())}, v, name));
  n.attributes.erase(it);
  if (n.inputs.size() <= index) n.inputs.resize(index + 1);
  n.inputs[index] = name;
}

// Rewrites nodes whose form changed between `from` and `to` (default domain); fails on those
// that cannot be rewritten.
inline void raise_opset(graph::Graph& g, std::int64_t from, std::int64_t to) {
  for (auto& n : g.nodes) {
    if (!(n.domain.empty() || n.domain == "ai.onnx")) continue;
    const std::string& op = n.op_type;
    auto cannot = [&](std::int64_t changed_at, const char* what) {
      n.fail("cannot raise the model's opset from ", from, " to ", to, ": ", op, " ", what, " at opset ",
             changed_at, "; expected a model of opset ", changed_at, " or later (re-export it)");
    };
    if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && from < 13 && to >= 13)
      cannot(13, "changed the meaning of its axis");
    if (op == "Pad" && from < 11 && to >= 11 && n.has_attr("pads")) cannot(11, "moved pads to an input");
    if ((op == "Dropout") && from < 12 && to >= 12 && n.has_attr("ratio")) cannot(12, "moved ratio to an input");
    if (op == "Split" && from < 13 && to >= 13 && n.has_attr("split")) cannot(13, "moved split to an input");
    if ((op == "Squeeze" || op == "Unsqueeze") && to >= 13) attribute_to_input(g, n, "axes", 1);
    if (op.compare(0, 6, "Reduce") == 0 && op != "ReduceSum" && to >= 18) attribute_to_input(g, n, "axes", 1);
    if (op == "ReduceSum" && to >= 13) attribute_to_input(g, n, "axes", 1);
    if (op == "Clip" && to >= 11 && (n.has_attr("min") || n.has_attr("max"))) {
      for (const char* bound : {"min", "max"}) {
        auto it = n.attributes.find(bound);
        if (it == n.attributes.end()) continue;
        const std::string name = g.unique_name((n.name.empty() ? n.outputs.front() : n.name) + "_" + bound);
        g.initializers.emplace(name, graph::Tensor::scalar<float>(it->second.f, name));
        const std::size_t index = std::string(bound) == "min" ? 1 : 2;
        if (n.inputs.size() <= index) n.inputs.resize(index + 1);
        n.inputs[index] = name;
        n.attributes.erase(it);
      }
    }
  }
}

// Every node's op must exist at `opset` (libonnx's schemas, else the executor's registry).
inline void check_ops_exist(const graph::Graph& g, std::int64_t opset) {
  for (const auto& n : g.nodes) {
    const bool default_domain = n.domain.empty() || n.domain == "ai.onnx";
    if (!default_domain) {
      if (!g.opsets.count(n.domain))
        n.fail("unsupported op '", n.op_type, "' for export: the model imports no opset of domain '", n.domain, "'");
      continue;
    }
#if QUANTKIT_ONNX_SHAPE_INFERENCE
    const int known = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(::onnx::ONNX_DOMAIN).second;
    const int at = static_cast<int>(std::min<std::int64_t>(opset, known));
    if (!::onnx::OpSchemaRegistry::Schema(n.op_type, at, ::onnx::ONNX_DOMAIN))
      n.fail("unsupported op '", n.op_type, "' for export: ONNX has no such operator at opset ", opset,
             " (in file '", g.source, "')");
#else
    (void)opset;
    if (!builtin_ops().supports(n.domain, n.op_type))
      n.fail("unsupported op '", n.op_type, "' for export: not an ONNX operator quantkit knows");
#endif
  }
}

}  // namespace detail

// The QDQ ModelProto of a calibrated model (nothing written). `report` is filled if given.
inline ::onnx::ModelProto to_qdq_proto(const ptq::QuantizedModel& qm, const QdqOptions& opt = {},
                                       QdqReport* report = nullptr) {
  using detail::fail;
  graph::Graph g = qm.graph;
  const std::string file = g.source.empty() ? std::string("<graph>") : g.source;
  QdqReport rep;

  // Which nodes are quantized, and the tensors they refer to.
  std::set<std::string> quantized(qm.quantized_nodes.begin(), qm.quantized_nodes.end());
  {
    std::set<std::string> keys;
    for (const auto& n : g.nodes) keys.insert(ptq::node_key(n));
    for (const auto& k : quantized)
      if (!keys.count(k)) g.fail("QDQ export: quantized node '", k, "' is not in the graph");
  }
  auto node_of = [&](const std::string& key) -> const graph::Node* {
    for (const auto& n : g.nodes)
      if (ptq::node_key(n) == key) return &n;
    return nullptr;
  };
  const auto producers = g.producers();
  bool needs_21 = false;
  for (const auto& kv : qm.tensors) {
    const ptq::TensorQuant& t = kv.second;
    const graph::Node* owner = node_of(t.node);
    const std::string who = owner ? owner->describe() : "graph (file '" + file + "')";
    t.params.validate(kv.first);
    if (t.role != ptq::TensorRole::activation) {
      if (!g.is_initializer(kv.first))
        fail(who, ": ", ptq::to_string(t.role), " '", kv.first, "' is missing: no initializer of that name in the "
             "graph; expected the quantized ", ptq::to_string(t.role), " to be an initializer");
    } else if (!g.is_input(kv.first) && !producers.count(kv.first)) {
      fail(who, ": activation '", kv.first, "' is neither a graph input nor produced by any node");
    }
    (void)detail::qdq_onnx_type(t.format, who + ": tensor '" + kv.first + "'");
    if (t.role != ptq::TensorRole::bias && t.format.bits != 8) needs_21 = true;
    if (t.params.granularity.kind == GranularityKind::per_group) needs_21 = true;
  }
  const std::int64_t opset = std::max({g.opset, opt.min_opset, std::int64_t{13}, needs_21 ? std::int64_t{21} : 0});
  if (opset > g.opset) detail::raise_opset(g, g.opset, opset);
  detail::check_ops_exist(g, opset);
  g.opset = opset;
  g.opsets[""] = opset;
  rep.opset = opset;

  std::map<std::string, std::string> input_dq;  // graph input -> its dequantized value
  for (const auto& gi : qm.graph.inputs)
    if (qm.find(gi.name)) input_dq[gi.name] = ptq::detail::dequantized_input_name(qm.graph, gi.name);

  std::vector<graph::Node> added;
  std::vector<::onnx::TensorProto> int_initializers;  // written straight to the proto
  std::set<std::string> reserved;                     // names of those
  auto fresh = [&](const std::string& base) {
    std::string n = g.unique_name(base);
    for (std::size_t k = 1; reserved.count(n) || std::any_of(added.begin(), added.end(), [&](const graph::Node& a) {
                              return a.name == n || std::find(a.outputs.begin(), a.outputs.end(), n) != a.outputs.end();
                            });
         ++k)
      n = g.unique_name(base + "_" + std::to_string(k));
    reserved.insert(n);
    return n;
  };
  // scale + zero point initializers; returns {scale name, zero point name}.
  auto add_params = [&](const std::string& v, const ptq::TensorQuant& t, const Dims& shape, int type) {
    const std::vector<std::int64_t> dims = detail::param_dims(t.params, shape);
    const std::string s = fresh(v + "_scale"), z = fresh(v + "_zero_point");
    ::onnx::TensorProto sp, zp;
    detail::float_tensor_to_proto(t.params.scale, dims, s, sp);
    detail::int_tensor_to_proto(t.params.zero_point, dims, type, z, zp);
    int_initializers.push_back(sp);
    int_initializers.push_back(zp);
    return std::make_pair(s, z);
  };
  auto set_axis = [](graph::Node& dq, const QuantParams& p) {
    if (p.granularity.kind == GranularityKind::per_tensor) return;
    dq.attributes["axis"] = graph::Attribute::make_int(p.granularity.axis);
    if (p.granularity.kind == GranularityKind::per_group)
      dq.attributes["block_size"] = graph::Attribute::make_int(p.granularity.block_size);
  };

  // Weights and biases of quantized nodes.
  std::map<std::string, std::string> dequantized;  // initializer -> DequantizeLinear output
  for (auto& n : g.nodes) {
    if (!quantized.count(ptq::node_key(n))) continue;
    for (auto& in : n.inputs) {
      const ptq::TensorQuant* t = qm.find(in);
      if (in.empty() || !t || t->role == ptq::TensorRole::activation) continue;
      auto d = dequantized.find(in);
      if (d == dequantized.end()) {
        const graph::Tensor& w = g.initializers.at(in);
        const int type = detail::qdq_onnx_type(t->format, n.describe() + ": tensor '" + in + "'");
        const std::vector<std::int32_t> ints = ptq::quantize_initializer(w, *t, in);
        const std::string qname = fresh(in + "_quantized");
        ::onnx::TensorProto qp;
        detail::int_tensor_to_proto(ints, graph::to_vector(w.shape()), type, qname, qp);
        int_initializers.push_back(qp);
        const auto sz = add_params(in, *t, w.shape(), type);
        const std::string out = fresh(in + "_dequantized");
        graph::Node dq = detail::make_node("DequantizeLinear", fresh(in + "_DequantizeLinear"), {qname, sz.first, sz.second},
                                           {out}, g.source);
        set_axis(dq, t->params);
        added.push_back(dq);
        d = dequantized.emplace(in, out).first;
        ++rep.quantized_initializers;
      }
      in = d->second;
    }
  }

  // Activations.
  for (const auto& kv : qm.tensors) {
    const std::string& v = kv.first;
    const ptq::TensorQuant& t = kv.second;
    if (t.role != ptq::TensorRole::activation) continue;
    const int type = detail::qdq_onnx_type(t.format, "activation '" + v + "'");
    const auto sz = add_params(v, t, Dims{}, type);
    const std::string q = fresh(v + "_quantized");
    std::string source = v, target = v;
    auto gi = input_dq.find(v);
    if (gi != input_dq.end()) {
      target = gi->second;
      reserved.insert(target);
      for (auto& n : g.nodes)
        if (quantized.count(ptq::node_key(n)))
          for (auto& in : n.inputs)
            if (in == v) in = target;
    } else {
      source = fresh(v + "_float");
      graph::Node& p = g.nodes[producers.at(v)];
      for (auto& o : p.outputs)
        if (o == v) o = source;
    }
    added.push_back(detail::make_node("QuantizeLinear", fresh(v + "_QuantizeLinear"), {source, sz.first, sz.second},
                                      {q}, g.source));
    added.push_back(detail::make_node("DequantizeLinear", fresh(v + "_DequantizeLinear"), {q, sz.first, sz.second},
                                      {target}, g.source));
    ++rep.activation_pairs;
  }
  for (const auto& n : qm.graph.nodes) rep.float_nodes += !quantized.count(ptq::node_key(n));
  // Float initializers no node reads any more (replaced by their quantized form).
  for (const auto& kv : dequantized) {
    bool used = g.is_output(kv.first);
    for (const auto& n : g.nodes)
      used = used || std::find(n.inputs.begin(), n.inputs.end(), kv.first) != n.inputs.end();
    if (!used) g.initializers.erase(kv.first);
  }

  // Placeholders so the graph validates (the real tensors go straight into the proto).
  std::vector<std::string> placeholder_names;
  for (const auto& p : int_initializers) {
    g.initializers.emplace(p.name(), graph::Tensor(graph::DType::float32, Dims{}, p.name()));
    placeholder_names.push_back(p.name());
  }
  g.nodes.insert(g.nodes.end(), added.begin(), added.end());
  g.value_info.clear();
  g.validate();
  ::onnx::ModelProto m = to_proto(g, opt.producer);
  // Replace the placeholders by the real integer/scale tensors.
  {
    auto* inits = m.mutable_graph()->mutable_initializer();
    std::map<std::string, const ::onnx::TensorProto*> real;
    for (const auto& p : int_initializers) real[p.name()] = &p;
    for (auto& p : *inits) {
      auto it = real.find(p.name());
      if (it != real.end()) p = *it->second;
    }
  }

  if (opt.check) {
#if QUANTKIT_ONNX_SHAPE_INFERENCE
    const int known = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(::onnx::ONNX_DOMAIN).second;
    if (opset <= known) {
      try {
        ::onnx::checker::check_model(m);
      } catch (const std::exception& e) {
        fail("file '", file, "': the QDQ model fails ONNX's checker: ", e.what());
      }
      rep.checked = true;
    } else {
      rep.check_note = "libonnx knows opsets up to " + std::to_string(known) + "; the model is opset " +
                       std::to_string(opset) + " (check it with ONNX Runtime)";
    }
#else
    rep.check_note = "libonnx is not linked (QUANTKIT_ONNX_SHAPE_INFERENCE=0)";
#endif
  } else {
    rep.check_note = "not asked";
  }
  if (report) *report = rep;
  return m;
}

// The QDQ model as a graph, as quantkit::onnx::load reads back the file save_qdq writes: what
// IntegerMode runs and quantkit::cpp_export exports. (The graph IR holds 8- and 16-bit
// integers: a model with 4-bit tensors is an error naming the tensor.)
inline graph::Graph qdq_graph(const ptq::QuantizedModel& qm, const QdqOptions& opt = {}) {
  const ::onnx::ModelProto m = to_qdq_proto(qm, opt);
  return from_proto(m, qm.graph.source.empty() ? std::string("<QDQ model>") : qm.graph.source + " (QDQ)");
}

// Writes the QDQ model to `path` atomically (nothing is left there on error).
inline QdqReport save_qdq(const ptq::QuantizedModel& qm, const std::string& path, const QdqOptions& opt = {}) {
  QdqReport rep;
  ::onnx::ModelProto m;
  try {
    m = to_qdq_proto(qm, opt, &rep);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find(path) != std::string::npos) throw;
    detail::fail("writing '", path, "': ", what.compare(0, 10, "quantkit: ") == 0 ? what.substr(10) : what);
  }
  save_proto(m, path);
  return rep;
}

}  // namespace onnx
}  // namespace quantkit
