// Reading ONNX models for execution. quantkit::onnx::load reads the element types the executor
// computes with (float32, int8, uint8, int32, int64, bool); the QDQ models `quantkit quantize`
// writes can also hold 4-bit weights (opset 21) packed two to a byte, per group (blocked
// DequantizeLinear). Both are made runnable here without changing what the model computes:
//   - int4/uint4 initializers are unpacked to int8/uint8 holding the same values, so
//     DequantizeLinear computes the same (q - zp) * s and the integer mode sees int8 weights;
//   - a blocked DequantizeLinear (block_size) of an initializer is folded into the float
//     initializer it computes (the executor's DequantizeLinear has no block_size).
// 16-bit tensors (int16/uint16: A16 activations, W16 weights) load as they are.
#include "model_io.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "cli.hpp"
#include "quantkit/onnx.hpp"
#include "quantkit/onnx/export_qdq.hpp"
#include "quantkit/onnx/export_qoperator.hpp"

namespace quantkit {
namespace cli {

const char* onnx_type_name(int type) {
  switch (type) {
    case 1: return "float32";
    case 2: return "uint8";
    case 3: return "int8";
    case 4: return "uint16";
    case 5: return "int16";
    case 6: return "int32";
    case 7: return "int64";
    case 9: return "bool";
    case 10: return "float16";
    case 11: return "float64";
    case 16: return "bfloat16";
    case 21: return "uint4";
    case 22: return "int4";
    default: return quantkit::onnx::detail::onnx_type_name(type);
  }
}

::onnx::ModelProto read_proto(const std::string& path) {
  const std::vector<char> bytes = quantkit::onnx::read_file(path, std::uint64_t{2} << 30);
  ::onnx::ModelProto m;
  if (bytes.empty() || !m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    quantkit::detail::fail("file '", path, "': not a valid ONNX model (",
                           bytes.empty() ? "empty" : "protobuf parsing failed", "; truncated or corrupt file?)");
  if (!m.has_graph()) quantkit::detail::fail("file '", path, "': the model has no graph (not an ONNX model?)");
  return m;
}

namespace {

constexpr int onnx_uint8 = 2, onnx_int8 = 3, onnx_uint4 = 21, onnx_int4 = 22;

// int4/uint4 (two values a byte, low nibble first) -> one int8/uint8 per value.
void unpack_4bit(::onnx::TensorProto& t, const std::string& path) {
  const bool is_signed = t.data_type() == onnx_int4;
  std::int64_t n = 1;
  for (auto d : t.dims()) n *= d;
  std::string packed;
  if (t.has_raw_data()) {
    packed = t.raw_data();
  } else {  // int32_data: one packed byte per entry
    for (auto v : t.int32_data()) packed.push_back(static_cast<char>(v & 0xff));
  }
  if (static_cast<std::int64_t>(packed.size()) != (n + 1) / 2)
    quantkit::detail::fail("file '", path, "': ", onnx_type_name(t.data_type()), " tensor '", t.name(), "' of ", n,
                           " values holds ", packed.size(), " bytes; expected ", (n + 1) / 2, " (two values a byte)");
  std::string out(static_cast<std::size_t>(n), '\0');
  for (std::int64_t i = 0; i < n; ++i) {
    const auto byte = static_cast<std::uint8_t>(packed[static_cast<std::size_t>(i / 2)]);
    int v = (i % 2 == 0) ? (byte & 0x0f) : (byte >> 4);
    if (is_signed && v >= 8) v -= 16;
    out[static_cast<std::size_t>(i)] = static_cast<char>(static_cast<std::uint8_t>(v & 0xff));
  }
  t.clear_int32_data();
  t.set_raw_data(out);
  t.set_data_type(is_signed ? onnx_int8 : onnx_uint8);
}

void prepare_tensors(::onnx::ModelProto& m, const std::string& path) {
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.data_type() == onnx_int4 || t.data_type() == onnx_uint4) unpack_4bit(t, path);
  }
}

// Blocked DequantizeLinear of an initializer -> the float initializer it computes.
void fold_blocked_dequantize(graph::Graph& g) {
  std::vector<graph::Node> keep;
  for (auto& n : g.nodes) {
    const bool blocked = n.op_type == "DequantizeLinear" && n.domain.empty() && n.attr_int("block_size", 0) != 0;
    if (!blocked || !g.is_initializer(n.inputs.at(0)) || !g.is_initializer(n.inputs.at(1)) ||
        (n.has_input(2) && !g.is_initializer(n.inputs[2]))) {
      keep.push_back(std::move(n));
      continue;
    }
    const graph::Tensor& q = g.initializers.at(n.inputs[0]);
    const graph::Tensor& s = g.initializers.at(n.inputs[1]);
    const graph::Tensor* z = n.has_input(2) ? &g.initializers.at(n.inputs[2]) : nullptr;
    const std::int64_t block = n.attr_int("block_size", 0);
    std::int64_t axis = n.attr_int("axis", 1);
    if (axis < 0) axis += q.rank();
    if (block < 1 || axis < 0 || axis >= q.rank() || s.rank() != q.rank() || s.dtype() != graph::DType::float32 ||
        (z && z->shape() != s.shape()))
      n.fail("blocked DequantizeLinear with block_size ", block, ", axis ", n.attr_int("axis", 1), ", input shape ",
             q.shape().to_string(), " and scale shape ", s.shape().to_string(),
             "; expected a scale (and zero point) of the input's shape with the axis divided into blocks");
    for (int d = 0; d < q.rank(); ++d) {
      const std::int64_t want = d == axis ? (q.dim(d) + block - 1) / block : q.dim(d);
      if (s.dim(d) != want)
        n.fail("scale shape ", s.shape().to_string(), " does not fit input shape ", q.shape().to_string(),
               " in blocks of ", block, " along axis ", axis);
    }
    graph::Tensor y(graph::DType::float32, q.shape(), n.outputs.at(0));
    const Dims qs = contiguous_strides(q.shape()), ss = contiguous_strides(s.shape());
    for (std::int64_t i = 0; i < q.size(); ++i) {
      std::int64_t rest = i, param = 0;
      for (int d = 0; d < q.rank(); ++d) {
        std::int64_t idx = rest / qs[d];
        rest %= qs[d];
        if (d == axis) idx /= block;
        param += idx * ss[d];
      }
      const double zp = z ? static_cast<double>(z->as_int64(param)) : 0.0;
      y.data<float>()[i] = static_cast<float>((static_cast<double>(q.as_int64(i)) - zp)) * s.data<float>()[param];
    }
    g.initializers[n.outputs[0]] = std::move(y);
  }
  g.nodes = std::move(keep);
}

graph::Graph to_graph(::onnx::ModelProto& m, const std::string& source) {
  prepare_tensors(m, source);
  quantkit::onnx::LoadOptions opt;
  std::int64_t opset = 1;
  for (const auto& op : m.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") opset = op.version();
  // libonnx 1.12's shape inference knows opsets <= 17; the executor needs no inferred shapes.
  if (opset > 17) opt.infer_shapes = false;
  graph::Graph g = quantkit::onnx::from_proto(m, source, opt);
  fold_blocked_dequantize(g);
  return g;
}

}  // namespace

graph::Graph read_model(const std::string& path) {
  ::onnx::ModelProto m = read_proto(path);
  return to_graph(m, path);
}

bool is_quantized(const graph::Graph& g) {
  static const std::set<std::string> ops = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
                                            "ConvInteger",    "MatMulInteger",    "DynamicQuantizeLinear"};
  for (const auto& n : g.nodes)
    if ((n.domain.empty() || n.domain == "ai.onnx") && ops.count(n.op_type)) return true;
  return false;
}

QdqSummary write_qdq(const ptq::QuantizedModel& qm, const std::string& path) {
  const quantkit::onnx::QdqReport r = quantkit::onnx::save_qdq(qm, path);
  return {r.opset, r.activation_pairs, r.quantized_initializers, r.checked, r.check_note};
}

QOperatorSummary write_qoperator(const ptq::QuantizedModel& qm, const std::string& path) {
  const quantkit::onnx::QOperatorReport r = quantkit::onnx::save_qoperator(qm, path);
  QOperatorSummary s;
  s.opset = r.opset;
  s.checked = r.checked;
  s.check_note = r.check_note;
  s.qoperator_nodes = r.qoperator_nodes;
  s.quantize_nodes = r.quantize_nodes;
  s.dequantize_nodes = r.dequantize_nodes;
  s.requantize_nodes = r.requantize_nodes;
  s.ops = r.ops;
  for (const auto& f : r.float_nodes) s.float_nodes.emplace_back(f.node + " (" + f.op_type + ")", f.reason);
  return s;
}

graph::Graph qdq_graph(const ptq::QuantizedModel& qm) {
  quantkit::onnx::QdqOptions opt;
  opt.check = false;
  ::onnx::ModelProto m = quantkit::onnx::to_qdq_proto(qm, opt);
  return to_graph(m, (qm.graph.source.empty() ? std::string("model") : qm.graph.source) + " (quantized in memory)");
}

}  // namespace cli
}  // namespace quantkit
