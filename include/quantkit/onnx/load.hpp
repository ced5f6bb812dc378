// ONNX adapter: load a model (file or bytes) into a graph::Graph, and TensorProto files into
// graph::Tensor. Needs QUANTKIT_WITH_ONNX: Debian's onnx protobuf bindings (onnx_proto +
// protobuf) and, for shape inference, libonnx (QUANTKIT_ONNX_SHAPE_INFERENCE, on by default
// when its header is present; define it to 0 when linking onnx_proto only: then call
// quantkit::passes::infer_shapes(graph) from the executor for the supported ops' shapes).
//
// Every problem is a quantkit::Error naming the file (and the node, op, tensor or attribute):
// truncated or corrupt protobuf, external data, element types or attribute kinds outside the
// supported set, missing initializers or inputs, bad or overflowing shapes, tensors whose
// declared size does not match the bytes present, shape-inference failures.
#pragma once

#if !defined(QUANTKIT_WITH_ONNX) && !defined(QUANTKIT_HAVE_ONNX_PROTO)
#error "quantkit/onnx/load.hpp needs the ONNX protobuf library: link quantkit::onnx (QUANTKIT_WITH_ONNX)"
#endif

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>

#ifndef QUANTKIT_ONNX_SHAPE_INFERENCE
#if defined(__has_include)
#if __has_include(<onnx/shape_inference/implementation.h>)
#define QUANTKIT_ONNX_SHAPE_INFERENCE 1
#endif
#endif
#endif
#ifndef QUANTKIT_ONNX_SHAPE_INFERENCE
#define QUANTKIT_ONNX_SHAPE_INFERENCE 0
#endif
#if QUANTKIT_ONNX_SHAPE_INFERENCE
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#endif

#include "quantkit/error.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/graph/tensor.hpp"

namespace quantkit {
namespace onnx {

struct LoadOptions {
  // Run ONNX shape inference (libonnx) and keep the inferred value infos; its errors are
  // load errors. Ignored when built without QUANTKIT_ONNX_SHAPE_INFERENCE.
  bool infer_shapes = true;
  // Limits checked before anything is allocated.
  std::uint64_t max_file_bytes = std::uint64_t{2} << 30;   // protobuf's own limit is 2 GiB
  std::int64_t max_tensor_elements = std::int64_t{1} << 32;
  // Sum of the decoded initializer and tensor-attribute bytes (typed fields such as packed
  // int64_data decode to up to 8x their size in the file).
  std::uint64_t max_initializer_bytes = std::uint64_t{4} << 30;
  // Nodes, graph inputs/outputs and value infos, each.
  std::int64_t max_nodes = std::int64_t{1} << 20;
  // Nested messages (a GraphProto inside an attribute inside a node ...): protobuf refuses
  // deeper nesting while parsing; graph-valued attributes are rejected after parsing anyway.
  int max_nesting = 64;
  // When set, every node's op must be supported (e.g. the executor's registry):
  //   opts.supported = [](auto& d, auto& op) { return quantkit::builtin_ops().supports(d, op); };
  std::function<bool(const std::string& domain, const std::string& op_type)> supported;
};

namespace detail {

using quantkit::detail::fail;

inline const char* onnx_type_name(int t) {
  switch (t) {
    case 1: return "FLOAT"; case 2: return "UINT8"; case 3: return "INT8"; case 4: return "UINT16";
    case 5: return "INT16"; case 6: return "INT32"; case 7: return "INT64"; case 8: return "STRING";
    case 9: return "BOOL"; case 10: return "FLOAT16"; case 11: return "DOUBLE"; case 12: return "UINT32";
    case 13: return "UINT64"; case 14: return "COMPLEX64"; case 15: return "COMPLEX128"; case 16: return "BFLOAT16";
    default: return "UNDEFINED";
  }
}

// ONNX TensorProto.DataType -> DType; undefined for types outside the supported set.
inline graph::DType dtype_from_onnx(int t) {
  switch (t) {
    case 1: return graph::DType::float32;
    case 2: return graph::DType::uint8;
    case 3: return graph::DType::int8;
    case 4: return graph::DType::uint16;
    case 5: return graph::DType::int16;
    case 6: return graph::DType::int32;
    case 7: return graph::DType::int64;
    case 9: return graph::DType::boolean;
    default: return graph::DType::undefined;
  }
}

inline int dtype_to_onnx(graph::DType t) {
  switch (t) {
    case graph::DType::float32: return 1;
    case graph::DType::uint8: return 2;
    case graph::DType::int8: return 3;
    case graph::DType::uint16: return 4;
    case graph::DType::int16: return 5;
    case graph::DType::int32: return 6;
    case graph::DType::int64: return 7;
    case graph::DType::boolean: return 9;
    case graph::DType::undefined: break;
  }
  return 0;
}

struct Where {
  std::string file;
  std::string prefix() const { return "file '" + file + "': "; }
};

inline graph::Tensor tensor_from_proto(const ::onnx::TensorProto& p, const std::string& what,
                                       const Where& w, const LoadOptions& opt) {
  const std::string name = what + (p.name().empty() ? std::string() : " '" + p.name() + "'");
  if (p.data_location() == ::onnx::TensorProto::EXTERNAL || p.external_data_size() > 0) {
    std::string loc;
    for (const auto& kv : p.external_data())
      if (kv.key() == "location") loc = kv.value();
    fail(w.prefix(), name, " stores its data externally", loc.empty() ? "" : " (in '" + loc + "')",
         "; external data is not supported: expected the data inside the model "
         "(onnx.save_model(..., save_as_external_data=False))");
  }
  if (p.has_segment()) fail(w.prefix(), name, ": segmented tensors are not supported");
  const graph::DType dt = dtype_from_onnx(p.data_type());
  if (dt == graph::DType::undefined)
    fail(w.prefix(), name, " has element type ", onnx_type_name(p.data_type()),
         ", which is not supported; expected FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64 or BOOL");
  if (p.dims_size() > max_rank)
    fail(w.prefix(), name, " has rank ", p.dims_size(), "; expected at most ", max_rank);
  Dims shape = Dims::from(p.dims().begin(), p.dims().end());
  const std::int64_t n = graph::checked_element_count(shape, w.prefix() + name, opt.max_tensor_elements);
  const std::size_t es = graph::size_of(dt);
  auto count_mismatch = [&](std::size_t found, const char* field) {
    fail(w.prefix(), name, ": shape ", shape.to_string(), " declares ", n, " elements but ", field,
         " holds ", found, "; expected as many (truncated or corrupt tensor?)");
  };
  // The data present must match the declared shape before anything is allocated: a few bytes
  // declaring a huge shape are an error, never an allocation.
  if (!p.has_raw_data()) {
    const int dt_field = dt == graph::DType::float32 ? p.float_data_size()
                         : dt == graph::DType::int64 ? p.int64_data_size()
                                                     : p.int32_data_size();
    const char* field = dt == graph::DType::float32 ? "float_data" : dt == graph::DType::int64 ? "int64_data" : "int32_data";
    if (static_cast<std::uint64_t>(dt_field) != static_cast<std::uint64_t>(n))
      count_mismatch(static_cast<std::size_t>(dt_field), field);
  }
  graph::Tensor t;
  if (p.has_raw_data()) {
    const std::string& raw = p.raw_data();
    if (raw.size() != static_cast<std::size_t>(n) * es)
      fail(w.prefix(), name, ": shape ", shape.to_string(), " of ", graph::to_string(dt), " needs ",
           static_cast<std::size_t>(n) * es, " bytes; raw_data holds ", raw.size());
    t = graph::Tensor(dt, shape, p.name());
    if (!raw.empty()) std::memcpy(t.raw(), raw.data(), raw.size());  // little-endian host
    if (dt == graph::DType::boolean)
      for (std::int64_t i = 0; i < n; ++i) t.data<bool>()[i] = static_cast<const unsigned char*>(t.raw())[i] != 0;
    return t;
  }
  t = graph::Tensor(dt, shape, p.name());
  const auto un = static_cast<std::size_t>(n);
  switch (dt) {
    case graph::DType::float32:
      if (static_cast<std::size_t>(p.float_data_size()) != un) count_mismatch(static_cast<std::size_t>(p.float_data_size()), "float_data");
      for (std::size_t i = 0; i < un; ++i) t.data<float>()[i] = p.float_data(static_cast<int>(i));
      break;
    case graph::DType::int64:
      if (static_cast<std::size_t>(p.int64_data_size()) != un) count_mismatch(static_cast<std::size_t>(p.int64_data_size()), "int64_data");
      for (std::size_t i = 0; i < un; ++i) t.data<std::int64_t>()[i] = p.int64_data(static_cast<int>(i));
      break;
    default:
      if (static_cast<std::size_t>(p.int32_data_size()) != un) count_mismatch(static_cast<std::size_t>(p.int32_data_size()), "int32_data");
      graph::visit_dtype(dt, [&](auto tag) {
        using T = decltype(tag);
        for (std::size_t i = 0; i < un; ++i) {
          const std::int32_t v = p.int32_data(static_cast<int>(i));
          if constexpr (std::is_same_v<T, bool>) {
            t.data<bool>()[i] = v != 0;
          } else if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, std::int64_t>) {
            if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
              fail(w.prefix(), name, ": int32_data[", i, "] = ", v, " is out of range for ", graph::to_string(dt));
            t.data<T>()[i] = static_cast<T>(v);
          }
        }
      });
  }
  return t;
}

inline graph::ValueInfo value_info_from_proto(const ::onnx::ValueInfoProto& v, const Where& w, bool strict) {
  graph::ValueInfo info;
  info.name = v.name();
  if (!v.type().has_tensor_type()) {
    if (strict)
      fail(w.prefix(), "value '", v.name(), "' is not a tensor (sequence, map or optional types are not supported)");
    return info;
  }
  const auto& tt = v.type().tensor_type();
  info.dtype = dtype_from_onnx(tt.elem_type());
  if (strict && info.dtype == graph::DType::undefined)
    fail(w.prefix(), "value '", v.name(), "' has element type ", onnx_type_name(tt.elem_type()),
         ", which is not supported; expected FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64 or BOOL");
  if (tt.has_shape()) {
    info.has_shape = true;
    if (tt.shape().dim_size() > max_rank)
      fail(w.prefix(), "value '", v.name(), "' has rank ", tt.shape().dim_size(), "; expected at most ", max_rank);
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          fail(w.prefix(), "value '", v.name(), "' has a negative dimension ", d.dim_value(), "; expected >= 0");
        info.dims.push_back(d.dim_value());
      } else {
        info.dims.push_back(graph::unknown_dim);
      }
      info.dim_params.push_back(d.has_dim_param() ? d.dim_param() : std::string());
    }
  }
  return info;
}

inline graph::Attribute attribute_from_proto(const ::onnx::AttributeProto& a, const graph::Node& node,
                                             const Where& w, const LoadOptions& opt) {
  using K = ::onnx::AttributeProto;
  int type = a.type();
  if (type == K::UNDEFINED) {  // very old models leave the type out
    if (a.has_f()) type = K::FLOAT;
    else if (a.has_i()) type = K::INT;
    else if (a.has_s()) type = K::STRING;
    else if (a.has_t()) type = K::TENSOR;
    else if (a.floats_size()) type = K::FLOATS;
    else if (a.ints_size()) type = K::INTS;
  }
  switch (type) {
    case K::FLOAT: return graph::Attribute::make_float(a.f());
    case K::INT: return graph::Attribute::make_int(a.i());
    case K::STRING: return graph::Attribute::make_string(a.s());
    case K::FLOATS: return graph::Attribute::make_floats(std::vector<float>(a.floats().begin(), a.floats().end()));
    case K::INTS: return graph::Attribute::make_ints(std::vector<std::int64_t>(a.ints().begin(), a.ints().end()));
    case K::TENSOR:
      return graph::Attribute::make_tensor(tensor_from_proto(a.t(), node.describe() + " attribute '" + a.name() + "' tensor", w, opt));
    default: break;
  }
  node.fail("attribute '", a.name(), "' has kind ", K::AttributeType_Name(static_cast<K::AttributeType>(type)),
            ", which is not supported; expected int, float, string, ints, floats or tensor");
}

#if QUANTKIT_ONNX_SHAPE_INFERENCE
// Input ranks (and axes) that libonnx 1.12's inference functions index without checking them,
// each a crash found by fuzz/fuzz_onnx_load or tests/test_onnx_libonnx_sweep.cpp: Gemm (opset 6, 7) reads
// dims 0 and 1 of A and B, the convolutions' convPoolShapeInference reads W's dims by X's rank,
// the recurrent ops' inference (RNNShapeInference1) dims 0..2 of X, STFT dims 0..2 of the signal,
// LayerNormalization the dims before its axis. `rank_of(i)` is input i's rank (-1: not known),
// `name_of(i)` names input i, `attribute(name)` is the node's attribute or null. Returns what is
// wrong, or "" when nothing is.
// The input W of the convolutions (inferred by convPoolShapeInference), or -1 for other ops.
inline int conv_weight_input(const std::string& op) {
  return op == "QLinearConv" ? 3 : (op == "Conv" || op == "ConvInteger" || op == "ConvTranspose") ? 1 : -1;
}

// The ranks the operator's specification gives its first inputs, where libonnx relies on them:
// Gemm's A and B; RNN, GRU and LSTM's X, W, R, B, sequence_lens, initial_h, initial_c (LSTM)
// and P (LSTM); STFT's signal. Empty for other ops.
inline std::vector<int> spec_ranks(const std::string& op) {
  if (op == "Gemm") return {2, 2};
  if (op == "RNN" || op == "GRU" || op == "LSTM") return {3, 3, 3, 2, 1, 3, 3, 2};
  if (op == "STFT") return {3};
  return {};
}

// Whether libonnx_rank_problem has a rule for op.
inline bool has_libonnx_rank_rule(const std::string& op) {
  return conv_weight_input(op) > 0 || op == "LayerNormalization" || !spec_ranks(op).empty();
}

inline std::string libonnx_rank_problem(const std::string& op, int n_inputs, const std::function<int(int)>& rank_of,
                                        const std::function<std::string(int)>& name_of,
                                        const std::function<const ::onnx::AttributeProto*(const char*)>& attribute) {
  auto rank = [&](int i) { return i < n_inputs ? rank_of(i) : -1; };
  const int w_index = conv_weight_input(op);
  if (w_index > 0) {
    const int x = rank(0), wr = rank(w_index);
    if (x >= 0 && wr >= 0 && (x != wr || x < 3))
      return name_of(0) + " has rank " + std::to_string(x) + ", " + name_of(w_index) + " rank " + std::to_string(wr) +
             "; expected equal ranks of at least 3";
  }
  if (op == "LayerNormalization" && rank(0) >= 0) {
    const ::onnx::AttributeProto* a = attribute("axis");
    const std::int64_t axis = a != nullptr ? a->i() : -1, r = rank(0);
    if (axis < -r || axis >= r)
      return name_of(0) + " has rank " + std::to_string(r) + " and 'axis' is " + std::to_string(axis) +
             "; expected an axis in [-rank, rank)";
  }
  const std::vector<int> expected = spec_ranks(op);
  for (int i = 0; i < static_cast<int>(expected.size()); ++i) {
    const int r = rank(i);
    if (r >= 0 && r != expected[static_cast<std::size_t>(i)])
      return name_of(i) + " has rank " + std::to_string(r) + "; expected rank " +
             std::to_string(expected[static_cast<std::size_t>(i)]);
  }
  return {};
}

// "input X": input i by the name its schema gives it.
inline std::string formal_input_name(const ::onnx::OpSchema& schema, int i) {
  const auto& formal = schema.inputs();
  const auto k = static_cast<std::size_t>(i);
  return "input " + (k < formal.size() ? formal[k].GetName() : std::to_string(i));
}

// libonnx's schema registry, with the inference function of each op libonnx_rank_problem knows
// wrapped in that check. Inside inference the check sees the ranks inference has propagated so far
// (an input another node makes), which no check before inference can: GRU(Neg(x)) with x of rank
// 1 was a crash in RNNShapeInference1.
class RankCheckedSchemaRegistry final : public ::onnx::ISchemaRegistry {
 public:
  const ::onnx::OpSchema* GetSchema(const std::string& key, const int max_inclusive_version,
                                    const std::string& domain) const override {
    const ::onnx::OpSchema* s = ::onnx::OpSchemaRegistry::Schema(key, max_inclusive_version, domain);
    if (s == nullptr || !s->has_type_and_shape_inference_function() || !has_libonnx_rank_rule(key) ||
        !(domain.empty() || domain == "ai.onnx"))
      return s;
    std::unique_ptr<::onnx::OpSchema>& copy = checked_[s];
    if (!copy) {
      copy.reset(new ::onnx::OpSchema(*s));
      const ::onnx::OpSchema* schema = copy.get();
      copy->TypeAndShapeInferenceFunction(
          [schema, infer = s->GetTypeAndShapeInferenceFunction()](::onnx::InferenceContext& ctx) {
            const std::string problem = libonnx_rank_problem(
                schema->Name(), static_cast<int>(ctx.getNumInputs()),
                [&](int i) {
                  const ::onnx::TypeProto* t = ctx.getInputType(static_cast<std::size_t>(i));
                  return t != nullptr && t->has_tensor_type() && t->tensor_type().has_shape()
                             ? t->tensor_type().shape().dim_size()
                             : -1;
                },
                [&](int i) { return formal_input_name(*schema, i); },
                [&](const char* name) { return ctx.getAttribute(name); });
            if (!problem.empty()) throw ::onnx::InferenceError("[ShapeInferenceError] " + problem);
            infer(ctx);
          });
    }
    return copy.get();
  }

 private:
  mutable std::map<const ::onnx::OpSchema*, std::unique_ptr<::onnx::OpSchema>> checked_;
};

// Runs libonnx shape inference (strict: node-level errors are errors) on a copy of the model
// and collects the value infos it finds.
inline void infer_shapes(const ::onnx::ModelProto& model, graph::Graph& g, const Where& w) {
  // Ranks known before inference: declared inputs, initializers, value infos, Constant outputs.
  std::map<std::string, int> known_rank;
  for (const auto& kv : g.initializers) known_rank[kv.first] = kv.second.shape().rank;
  for (const auto& i : g.inputs)
    if (i.has_shape) known_rank[i.name] = static_cast<int>(i.dims.size());
  for (const auto& kv : g.value_info)
    if (kv.second.has_shape) known_rank.emplace(kv.first, static_cast<int>(kv.second.dims.size()));
  for (const auto& np : model.graph().node())  // Constant outputs: the rank of their value
    if (np.op_type() == "Constant" && np.output_size() == 1)
      for (const auto& a : np.attribute())
        if (a.name() == "value" && a.has_t()) known_rank[np.output(0)] = a.t().dims_size();
  for (const auto& np : model.graph().node()) {
    const bool onnx_domain = np.domain().empty() || np.domain() == "ai.onnx";
    if (!onnx_domain) continue;
    const std::string& op = np.op_type();
    // libonnx's convolution and pooling inference divides by strides and dilations (and by
    // group): zero or negative values are a SIGFPE there.
    for (const auto& a : np.attribute()) {
      const bool positive_ints = a.name() == "strides" || a.name() == "dilations";
      if (positive_ints)
        for (auto v : a.ints())
          if (v <= 0)
            fail(w.prefix(), "node '", np.name(), "' (", op, "): attribute '", a.name(), "' has ", v,
                 "; expected positive values");
      if (a.name() == "group" && a.i() <= 0 && conv_weight_input(op) > 0)
        fail(w.prefix(), "node '", np.name(), "' (", op, "): attribute 'group' is ", a.i(), "; expected >= 1");
    }
  }
  // libonnx 1.12's inference functions trust that a node matches its schema (input and output
  // counts, attribute kinds). So every node whose op libonnx knows is verified against its
  // schema first (ops it does not know, e.g. com.microsoft's, are left to the executor), then
  // the ranks known so far are checked (reported with the tensors' names).
  for (const auto& np : model.graph().node()) {
    const std::string domain = np.domain() == "ai.onnx" ? std::string() : np.domain();
    auto v = g.opsets.find(domain);
    if (v == g.opsets.end() && domain.empty()) v = g.opsets.find("ai.onnx");
    const int version = v != g.opsets.end() ? static_cast<int>(v->second) : g.opset;
    const ::onnx::OpSchema* schema = ::onnx::OpSchemaRegistry::Schema(np.op_type(), version, domain);
    if (schema == nullptr) continue;
    try {
      schema->Verify(np);
    } catch (const std::exception& e) {
      std::string what = e.what();
      while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
      for (auto& c : what)
        if (c == '\n') c = ' ';
      fail(w.prefix(), "node '", np.name(), "' (", np.op_type(), "): does not match the ONNX schema of ",
           np.op_type(), " at opset ", version, ": ", what);
    }
    const std::string problem = libonnx_rank_problem(
        np.op_type(), np.input_size(),
        [&](int i) {
          auto r = known_rank.find(np.input(i));
          return r != known_rank.end() ? r->second : -1;
        },
        [&](int i) { return formal_input_name(*schema, i) + " '" + np.input(i) + "'"; },
        [&](const char* name) -> const ::onnx::AttributeProto* {
          for (const auto& a : np.attribute())
            if (a.name() == name) return &a;
          return nullptr;
        });
    if (!problem.empty()) fail(w.prefix(), "node '", np.name(), "' (", np.op_type(), "): ", problem);
  }
  ::onnx::ModelProto m = model;
  try {
    // Node-level inference errors are errors (strict); element types are not checked against
    // the schemas' type constraints (old exporters wrote e.g. int64 Constants at opset 6,
    // which runtimes accept), the executor checks the types it needs.
    ::onnx::ShapeInferenceOptions options(/*check_type=*/false, /*strict_mode=*/1, /*data_prop=*/false);
    const RankCheckedSchemaRegistry registry;
    ::onnx::shape_inference::InferShapes(m, &registry, options);
  } catch (const std::exception& e) {
    fail(w.prefix(), "shape inference failed: ", e.what());
  }
  for (const auto& v : m.graph().value_info()) {
    graph::ValueInfo info = value_info_from_proto(v, w, false);
    if (!info.name.empty()) g.value_info[info.name] = std::move(info);
  }
  // Inference may refine declared outputs.
  for (int i = 0; i < m.graph().output_size() && i < static_cast<int>(g.outputs.size()); ++i) {
    graph::ValueInfo info = value_info_from_proto(m.graph().output(i), w, false);
    if (info.has_shape && !g.outputs[static_cast<std::size_t>(i)].has_shape) g.outputs[static_cast<std::size_t>(i)] = info;
  }
}
#endif

}  // namespace detail

// ModelProto -> Graph. `source` names the model in errors.
inline graph::Graph from_proto(const ::onnx::ModelProto& model, const std::string& source,
                               const LoadOptions& opt = {}) {
  using detail::fail;
  const detail::Where w{source};
  if (!model.has_graph()) fail(w.prefix(), "the model has no graph (not an ONNX model?)");
  const auto& gp = model.graph();
  graph::Graph g;
  g.name = gp.name();
  g.source = source;
  bool has_default = false;
  for (const auto& op : model.opset_import()) {
    g.opsets[op.domain()] = op.version();
    if (op.domain().empty() || op.domain() == "ai.onnx") {
      g.opset = op.version();
      has_default = true;
    }
  }
  if (!has_default) {
    if (model.opset_import_size() > 0 || model.ir_version() >= 3)
      fail(w.prefix(), "the model imports no default-domain (ai.onnx) opset; expected one in opset_import");
    g.opset = 1;  // IR version < 3 had no opset_import
  }
  auto check_count = [&](int count, const char* what) {
    if (count > opt.max_nodes)
      fail(w.prefix(), "the graph has ", count, " ", what, "; expected at most ", opt.max_nodes,
           " (LoadOptions::max_nodes)");
  };
  check_count(gp.node_size(), "nodes");
  check_count(gp.input_size(), "inputs");
  check_count(gp.output_size(), "outputs");
  check_count(gp.value_info_size(), "value infos");
  check_count(gp.initializer_size(), "initializers");
  if (gp.sparse_initializer_size() > 0)
    fail(w.prefix(), "sparse initializers are not supported (found ", gp.sparse_initializer_size(), ")");
  std::uint64_t initializer_bytes = 0;
  for (const auto& t : gp.initializer()) {
    if (t.name().empty()) fail(w.prefix(), "an initializer has no name");
    if (g.initializers.count(t.name())) fail(w.prefix(), "initializer '", t.name(), "' is defined twice");
    auto it = g.initializers.emplace(t.name(), detail::tensor_from_proto(t, "initializer", w, opt)).first;
    initializer_bytes += it->second.nbytes();
    if (initializer_bytes > opt.max_initializer_bytes)
      fail(w.prefix(), "initializers hold more than ", opt.max_initializer_bytes, " bytes (at '", t.name(),
           "'); expected at most LoadOptions::max_initializer_bytes");
  }
  for (const auto& in : gp.input()) {
    if (g.initializers.count(in.name())) continue;  // a constant with a declared input (IR < 4)
    g.inputs.push_back(detail::value_info_from_proto(in, w, true));
    if (g.inputs.back().name.empty()) fail(w.prefix(), "a graph input has no name");
  }
  for (const auto& out : gp.output()) {
    g.outputs.push_back(detail::value_info_from_proto(out, w, true));
    if (g.outputs.back().name.empty()) fail(w.prefix(), "a graph output has no name");
  }
  for (const auto& v : gp.value_info()) {
    graph::ValueInfo info = detail::value_info_from_proto(v, w, false);
    if (!info.name.empty()) g.value_info[info.name] = std::move(info);
  }
  g.nodes.reserve(static_cast<std::size_t>(gp.node_size()));
  for (const auto& np : gp.node()) {
    graph::Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? std::string() : np.domain();
    n.name = np.name();
    n.source = source;
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    if (n.op_type.empty()) n.fail("has no op_type");
    if (!g.opsets.count(n.domain) && !(n.domain.empty() && has_default) && !n.domain.empty())
      n.fail("uses domain '", n.domain, "', which the model does not import");
    if (opt.supported && !opt.supported(n.domain, n.op_type))
      n.fail("unsupported op '", n.op_type, "'", n.domain.empty() ? "" : " in domain '" + n.domain + "'");
    for (const auto& a : np.attribute()) {
      if (!a.ref_attr_name().empty()) n.fail("attribute '", a.name(), "' refers to a function attribute; expected a value");
      if (n.attributes.count(a.name())) n.fail("attribute '", a.name(), "' is given twice");
      auto it = n.attributes.emplace(a.name(), detail::attribute_from_proto(a, n, w, opt)).first;
      if (it->second.kind == graph::AttrKind::tensor && it->second.t) {
        initializer_bytes += it->second.t->nbytes();
        if (initializer_bytes > opt.max_initializer_bytes)
          n.fail("attribute '", a.name(), "': initializers and tensor attributes hold more than ",
                 opt.max_initializer_bytes, " bytes; expected at most LoadOptions::max_initializer_bytes");
      }
    }
    g.nodes.push_back(std::move(n));
  }
  g.validate();  // dangling inputs (missing initializers), duplicate outputs, cycles
#if QUANTKIT_ONNX_SHAPE_INFERENCE
  if (opt.infer_shapes) detail::infer_shapes(model, g, w);
#endif
  return g;
}

// Serialized ModelProto bytes -> Graph.
inline graph::Graph load_bytes(const void* data, std::size_t size, const std::string& source = "<memory>",
                               const LoadOptions& opt = {}) {
  using detail::fail;
  if (size > opt.max_file_bytes || size > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    fail("file '", source, "': ", size, " bytes exceed the limit of ", opt.max_file_bytes,
         " bytes (models over 2 GiB need external data, which is not supported)");
  ::onnx::ModelProto model;
  bool parsed = false;
  if (size != 0) {
    google::protobuf::io::CodedInputStream in(static_cast<const std::uint8_t*>(data), static_cast<int>(size));
    in.SetRecursionLimit(opt.max_nesting);
    parsed = model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
  }
  if (!parsed)
    fail("file '", source, "': not a valid ONNX model (", size == 0 ? "empty" : "protobuf parsing failed",
         "; truncated or corrupt file?)");
  return from_proto(model, source, opt);
}

inline std::vector<char> read_file(const std::string& path, std::uint64_t limit) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) detail::fail("file '", path, "': cannot open for reading");
  const std::streamoff end = in.tellg();
  if (end < 0) detail::fail("file '", path, "': cannot determine the size");
  if (static_cast<std::uint64_t>(end) > limit)
    detail::fail("file '", path, "': ", end, " bytes exceed the limit of ", limit, " bytes");
  std::vector<char> bytes(static_cast<std::size_t>(end));
  in.seekg(0);
  if (!bytes.empty() && !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    detail::fail("file '", path, "': read failed");
  return bytes;
}

inline graph::Graph load(const std::string& path, const LoadOptions& opt = {}) {
  const std::vector<char> bytes = read_file(path, opt.max_file_bytes);
  return load_bytes(bytes.data(), bytes.size(), path, opt);
}

// A serialized TensorProto (the ONNX test-data input_*.pb / output_*.pb files).
inline graph::Tensor load_tensor_bytes(const void* data, std::size_t size, const std::string& source,
                                       const LoadOptions& opt = {}) {
  if (size > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    detail::fail("file '", source, "': too large for a TensorProto");
  ::onnx::TensorProto p;
  if (!p.ParseFromArray(data, static_cast<int>(size)))
    detail::fail("file '", source, "': not a valid TensorProto (truncated or corrupt file?)");
  return detail::tensor_from_proto(p, "tensor", detail::Where{source}, opt);
}

inline graph::Tensor load_tensor(const std::string& path, const LoadOptions& opt = {}) {
  const std::vector<char> bytes = read_file(path, opt.max_file_bytes);
  return load_tensor_bytes(bytes.data(), bytes.size(), path, opt);
}

}  // namespace onnx
}  // namespace quantkit
