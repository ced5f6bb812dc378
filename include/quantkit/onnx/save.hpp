// ONNX adapter, writing: graph::Graph -> ModelProto, and files written atomically (a temporary
// file in the same folder, renamed over the target once complete), so a failure never leaves a
// half-written or partial model behind. Needs QUANTKIT_WITH_ONNX.
//
//   quantkit::onnx::save(graph, "model.onnx");   // errors name the file (and node/tensor)
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "quantkit/io/atomic_file.hpp"
#include "quantkit/onnx/load.hpp"

namespace quantkit {
namespace onnx {

namespace detail {

// Element types ONNX knows beyond graph::DType (int4/uint4 since IR 10 / opset 21).
enum OnnxType : int {
  onnx_float = 1, onnx_uint8 = 2, onnx_int8 = 3, onnx_uint16 = 4, onnx_int16 = 5, onnx_int32 = 6,
  onnx_int64 = 7, onnx_bool = 9, onnx_uint4 = 21, onnx_int4 = 22
};

inline void tensor_to_proto(const graph::Tensor& t, const std::string& name, ::onnx::TensorProto& p) {
  p.set_name(name);
  const int type = dtype_to_onnx(t.dtype());
  if (type == 0) fail("tensor '", name, "': element type ", graph::to_string(t.dtype()), " cannot be written to ONNX");
  p.set_data_type(type);
  for (int i = 0; i < t.rank(); ++i) p.add_dims(t.dim(i));
  p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
}

inline void value_info_to_proto(const graph::ValueInfo& v, ::onnx::ValueInfoProto& p) {
  p.set_name(v.name);
  auto* tt = p.mutable_type()->mutable_tensor_type();
  if (v.dtype != graph::DType::undefined) tt->set_elem_type(dtype_to_onnx(v.dtype));
  if (!v.has_shape) return;
  auto* shape = tt->mutable_shape();
  for (std::size_t i = 0; i < v.dims.size(); ++i) {
    auto* d = shape->add_dim();
    if (v.dims[i] >= 0) d->set_dim_value(v.dims[i]);
    else if (i < v.dim_params.size() && !v.dim_params[i].empty()) d->set_dim_param(v.dim_params[i]);
  }
}

inline void attribute_to_proto(const std::string& key, const graph::Attribute& a, ::onnx::AttributeProto& p) {
  using K = ::onnx::AttributeProto;
  p.set_name(key);
  switch (a.kind) {
    case graph::AttrKind::int_: p.set_type(K::INT); p.set_i(a.i); break;
    case graph::AttrKind::float_: p.set_type(K::FLOAT); p.set_f(a.f); break;
    case graph::AttrKind::string: p.set_type(K::STRING); p.set_s(a.s); break;
    case graph::AttrKind::ints:
      p.set_type(K::INTS);
      for (auto v : a.ints) p.add_ints(v);
      break;
    case graph::AttrKind::floats:
      p.set_type(K::FLOATS);
      for (auto v : a.floats) p.add_floats(v);
      break;
    case graph::AttrKind::tensor:
      p.set_type(K::TENSOR);
      tensor_to_proto(*a.t, a.t->name(), *p.mutable_t());
      break;
  }
}

inline void node_to_proto(const graph::Node& n, ::onnx::NodeProto& p) {
  p.set_op_type(n.op_type);
  if (!n.domain.empty()) p.set_domain(n.domain);
  if (!n.name.empty()) p.set_name(n.name);
  for (const auto& i : n.inputs) p.add_input(i);
  for (const auto& o : n.outputs) p.add_output(o);
  for (const auto& kv : n.attributes) attribute_to_proto(kv.first, kv.second, *p.add_attribute());
}

// The IR version a model of default-domain opset `opset` needs.
inline std::int64_t ir_version_for(std::int64_t opset) {
  if (opset >= 21) return 10;
  if (opset >= 19) return 9;
  if (opset >= 15) return 8;
  return 7;
}

inline std::atomic<unsigned>& temp_counter() {
  static std::atomic<unsigned> n{0};
  return n;
}

}  // namespace detail

// Graph -> ModelProto (default-domain opset = graph.opset, other domains from graph.opsets;
// initializers as raw data; inputs/outputs with their declared types and shapes).
inline ::onnx::ModelProto to_proto(const graph::Graph& g, const std::string& producer = "quantkit") {
  ::onnx::ModelProto m;
  m.set_ir_version(detail::ir_version_for(g.opset));
  m.set_producer_name(producer);
  auto* def = m.add_opset_import();
  def->set_domain("");
  def->set_version(g.opset);
  for (const auto& kv : g.opsets) {
    if (kv.first.empty() || kv.first == "ai.onnx") continue;
    auto* op = m.add_opset_import();
    op->set_domain(kv.first);
    op->set_version(kv.second);
  }
  auto* gp = m.mutable_graph();
  gp->set_name(g.name.empty() ? std::string("quantkit") : g.name);
  for (const auto& kv : g.initializers) detail::tensor_to_proto(kv.second, kv.first, *gp->add_initializer());
  for (const auto& i : g.inputs) detail::value_info_to_proto(i, *gp->add_input());
  for (const auto& o : g.outputs) detail::value_info_to_proto(o, *gp->add_output());
  for (std::size_t idx : g.topological_order()) detail::node_to_proto(g.nodes[idx], *gp->add_node());
  return m;
}

// Writes `bytes` to `path` atomically (quantkit/io/atomic_file.hpp): a temporary file in the
// same folder, renamed over PATH when complete; on failure PATH is left as it was.
inline void write_file_atomically(const std::string& path, const std::string& bytes) {
  io::write_file_atomically(path, bytes);
}

// Serializes a model and writes it atomically.
inline void save_proto(const ::onnx::ModelProto& m, const std::string& path) {
  std::string bytes;
  if (!m.SerializeToString(&bytes))
    detail::fail("file '", path, "': the model could not be serialized (over 2 GiB?)");
  write_file_atomically(path, bytes);
}

// Writes a (float or quantized) graph as an ONNX model, atomically.
inline void save(const graph::Graph& g, const std::string& path) { save_proto(to_proto(g), path); }

}  // namespace onnx
}  // namespace quantkit
