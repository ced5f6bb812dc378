// quantkit info MODEL.onnx: opset, inputs/outputs with shapes, op histogram, and for quantized
// models which nodes are quantized and how (weights: bits, granularity, axis, block; activation
// formats). Reads the protobuf directly, so it describes any model (16-bit, 4-bit, blocked QDQ,
// QOperator) whether or not quantkit's executor can run it.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "model_io.hpp"

namespace quantkit {
namespace cli {

namespace {

struct InfoArgs {
  std::string model;
  bool json = false;
};

std::string shape_of(const ::onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return "[?]";
  std::string s = "[";
  const auto& dims = v.type().tensor_type().shape().dim();
  for (int i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    if (dims[i].has_dim_value()) s += std::to_string(dims[i].dim_value());
    else if (dims[i].has_dim_param() && !dims[i].dim_param().empty()) s += dims[i].dim_param();
    else s += "?";
  }
  return s + "]";
}

std::string elem_type_of(const ::onnx::ValueInfoProto& v) {
  return v.type().has_tensor_type() ? onnx_type_name(v.type().tensor_type().elem_type()) : "non-tensor";
}

std::string node_label(const ::onnx::NodeProto& n) {
  return !n.name().empty() ? n.name() : (n.output_size() ? n.output(0) : n.op_type());
}

std::int64_t element_count(const ::onnx::TensorProto& t) {
  std::int64_t n = 1;
  for (auto d : t.dims()) n *= d;
  return n;
}

// The first value of a zero-point initializer (int4/8/16/32, raw or typed data).
std::int64_t first_value(const ::onnx::TensorProto& t) {
  if (t.has_raw_data() && !t.raw_data().empty()) {
    const auto* b = reinterpret_cast<const unsigned char*>(t.raw_data().data());
    switch (t.data_type()) {
      case 2: return b[0];                                           // uint8
      case 3: return static_cast<std::int8_t>(b[0]);                 // int8
      case 21: return b[0] & 0x0f;                                   // uint4
      case 22: return (b[0] & 0x08) ? (b[0] & 0x0f) - 16 : (b[0] & 0x0f);  // int4
      case 4: return b[0] | (b[1] << 8);                             // uint16
      case 5: return static_cast<std::int16_t>(b[0] | (b[1] << 8));  // int16
      default: {
        std::int32_t v = 0;
        std::memcpy(&v, b, std::min<std::size_t>(4, t.raw_data().size()));
        return v;
      }
    }
  }
  if (t.int32_data_size()) return t.int32_data(0);
  if (t.int64_data_size()) return t.int64_data(0);
  return 0;
}

// All values of a small integer initializer (zero points) are zero; true when unknown layout.
bool all_zero(const ::onnx::TensorProto& t) {
  if (t.has_raw_data()) {
    for (char c : t.raw_data())
      if (c != 0) return false;
    return true;
  }
  for (auto v : t.int32_data())
    if (v != 0) return false;
  for (auto v : t.int64_data())
    if (v != 0) return false;
  return true;
}

// One DequantizeLinear: what it dequantizes.
struct DqInfo {
  bool initializer = false;  // a stored tensor (weight/bias) rather than an activation
  std::string type;          // int8, uint8, int4, int32, ...
  std::string granularity;   // per-tensor | per-channel | per-group
  std::int64_t axis = 0;
  std::int64_t block = 0;
  std::int64_t scales = 1;
  bool zero_point_zero = true;
  std::int64_t zero_point = 0;  // the first one
  bool is_signed() const { return type.compare(0, 3, "int") == 0; }
  // Symmetric: a signed format with zero points 0.
  bool symmetric() const { return is_signed() && zero_point_zero; }
  // Weights: "int8 per-channel(axis 0, 16 scales) symmetric".
  std::string describe() const {
    std::string s = type + " " + granularity;
    if (granularity == "per-channel") s += fmt::format("(axis {}, {} scales)", axis, scales);
    if (granularity == "per-group") s += fmt::format("(axis {}, block {})", axis, block);
    s += symmetric() ? " symmetric" : " affine";
    return s;
  }
  // Activations: "uint8 zp 0", "int8 symmetric".
  std::string activation() const {
    if (granularity != "per-tensor") return type + " " + granularity;
    return symmetric() ? type + " symmetric" : fmt::format("{} zp {}", type, zero_point);
  }
  Json json() const {
    Json j = {{"type", type}, {"granularity", granularity}, {"symmetric", symmetric()}};
    if (granularity == "per-tensor") j["zero_point"] = zero_point;
    if (granularity != "per-tensor") j["axis"] = axis;
    if (granularity == "per-channel") j["scales"] = scales;
    if (granularity == "per-group") j["block_size"] = block;
    return j;
  }
};

void run_info(const InfoArgs& a) {
  const ::onnx::ModelProto m = read_proto(a.model);
  const auto& g = m.graph();
  std::map<std::string, const ::onnx::TensorProto*> inits;
  std::int64_t params = 0;
  std::size_t bytes = 0;
  for (const auto& t : g.initializer()) {
    inits[t.name()] = &t;
    params += element_count(t);
    bytes += t.raw_data().size();
  }
  std::int64_t opset = 0;
  Json opsets = Json::object();
  for (const auto& op : m.opset_import()) {
    opsets[op.domain().empty() ? "ai.onnx" : op.domain()] = op.version();
    if (op.domain().empty() || op.domain() == "ai.onnx") opset = op.version();
  }
  std::map<std::string, int> histogram;
  for (const auto& n : g.node()) ++histogram[n.domain().empty() ? n.op_type() : n.domain() + "::" + n.op_type()];
  std::vector<std::pair<std::string, int>> ops(histogram.begin(), histogram.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return x.second > y.second; });

  // Q/DQ structure.
  std::map<std::string, const ::onnx::NodeProto*> producer;
  std::map<std::string, std::vector<const ::onnx::NodeProto*>> consumers;
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) producer[o] = &n;
    for (const auto& i : n.input()) consumers[i].push_back(&n);
  }
  auto type_of_zero_point = [&](const ::onnx::NodeProto& n, const std::string& fallback) {
    if (n.input_size() > 2 && inits.count(n.input(2))) return std::string(onnx_type_name(inits.at(n.input(2))->data_type()));
    return fallback;
  };
  std::map<std::string, DqInfo> dq;  // DequantizeLinear output -> info
  for (const auto& n : g.node()) {
    if (n.op_type() != "DequantizeLinear" || n.input_size() < 2 || n.output_size() < 1) continue;
    DqInfo d;
    auto src = inits.find(n.input(0));
    d.initializer = src != inits.end();
    d.type = d.initializer ? onnx_type_name(src->second->data_type()) : type_of_zero_point(n, "uint8");
    if (!d.initializer) {
      auto p = producer.find(n.input(0));
      if (p != producer.end() && p->second->op_type() == "QuantizeLinear") d.type = type_of_zero_point(*p->second, d.type);
    }
    std::int64_t axis = 1, block = 0;
    for (const auto& at : n.attribute()) {
      if (at.name() == "axis") axis = at.i();
      if (at.name() == "block_size") block = at.i();
    }
    auto s = inits.find(n.input(1));
    d.scales = s != inits.end() ? element_count(*s->second) : 1;
    d.axis = axis;
    d.block = block;
    d.granularity = block > 0 ? "per-group" : (d.scales > 1 ? "per-channel" : "per-tensor");
    if (n.input_size() > 2 && inits.count(n.input(2))) {
      d.zero_point_zero = all_zero(*inits.at(n.input(2)));
      d.zero_point = first_value(*inits.at(n.input(2)));
    }
    dq[n.output(0)] = d;
  }
  static const std::set<std::string> qdq_ops = {"QuantizeLinear", "DequantizeLinear", "Constant"};
  static const std::set<std::string> qoperator_ops = {"QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger",
                                                      "QGemm", "QLinearAdd", "QLinearMul", "QLinearAveragePool",
                                                      "QLinearGlobalAveragePool", "QLinearConcat", "QLinearSigmoid",
                                                      "QLinearLeakyRelu", "DynamicQuantizeLinear"};
  Json quantized = Json::array(), floats = Json::array();
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> float_names;
  std::size_t compute = 0, qop = 0;
  for (const auto& n : g.node()) {
    if (qdq_ops.count(n.op_type())) continue;
    ++compute;
    if (qoperator_ops.count(n.op_type())) {
      ++qop;
      quantized.push_back({{"node", node_label(n)}, {"op", n.op_type()}, {"format", "qoperator"}});
      table.push_back({node_label(n), n.op_type(), "(QOperator)", "", ""});
      continue;
    }
    Json weights = Json(), bias = Json(), ins = Json::array(), outs = Json::array();
    std::string wtext, itext, otext;
    std::vector<std::string> float_parts;  // why the node does not run quantized
    const bool weighted = n.op_type() == "Conv" || n.op_type() == "Gemm" || n.op_type() == "MatMul";
    for (int k = 0; k < n.input_size(); ++k) {
      const std::string& in = n.input(k);
      if (in.empty()) continue;
      auto d = dq.find(in);
      if (d == dq.end()) {
        auto init = inits.find(in);
        if (init != inits.end()) {
          if (weighted && k == 1 && init->second->data_type() == 1) float_parts.push_back("float weights '" + in + "'");
          continue;  // bias, shapes, axes, bounds
        }
        auto p = producer.find(in);
        if (p != producer.end() && p->second->op_type() == "Constant") continue;
        float_parts.push_back("float input '" + in + "'");
        continue;
      }
      if (d->second.initializer && d->second.type == "int32") {
        bias = d->second.json();
      } else if (d->second.initializer) {
        weights = d->second.json();
        wtext = d->second.describe();
      } else {
        ins.push_back({{"value", in}, {"format", d->second.json()}});
        itext += (itext.empty() ? "" : ", ") + d->second.activation();
      }
    }
    for (const auto& o : n.output()) {
      if (o.empty()) continue;
      auto c = consumers.find(o);
      bool to_quantize = false;
      if (c != consumers.end())
        for (const auto* q : c->second) to_quantize = to_quantize || (q->op_type() == "QuantizeLinear" && q->input(0) == o);
      if (!to_quantize) float_parts.push_back("float output '" + o + "'");
      if (c == consumers.end()) continue;
      for (const auto* q : c->second)
        if (q->op_type() == "QuantizeLinear" && q->input(0) == o) {
          DqInfo d;
          d.type = type_of_zero_point(*q, "uint8");
          if (q->input_size() > 2 && inits.count(q->input(2))) {
            d.zero_point_zero = all_zero(*inits.at(q->input(2)));
            d.zero_point = first_value(*inits.at(q->input(2)));
          }
          auto s = q->input_size() > 1 ? inits.find(q->input(1)) : inits.end();
          d.scales = s != inits.end() ? element_count(*s->second) : 1;
          d.granularity = d.scales > 1 ? "per-channel" : "per-tensor";
          outs.push_back({{"value", o}, {"format", d.json()}});
          otext += (otext.empty() ? "" : ", ") + d.activation();
          break;
        }
    }
    if (!float_parts.empty() || (weights.is_null() && ins.empty() && outs.empty())) {
      std::string why;
      if (weights.is_null() && ins.empty() && outs.empty()) why = "no QuantizeLinear/DequantizeLinear around it";
      for (const auto& f : float_parts)
        if (why.empty() || why[0] != 'n') why += (why.empty() ? "" : ", ") + f;
      floats.push_back({{"node", node_label(n)}, {"op", n.op_type()}, {"reason", why}});
      float_names.push_back(node_label(n) + " (" + n.op_type() + "): " + why);
      continue;
    }
    Json q = {{"node", node_label(n)}, {"op", n.op_type()}, {"format", "qdq"}, {"inputs", ins}, {"outputs", outs}};
    if (!weights.is_null()) q["weights"] = weights;
    if (!bias.is_null()) q["bias"] = bias;
    quantized.push_back(q);
    table.push_back({node_label(n), n.op_type(), wtext.empty() ? "-" : wtext + (bias.is_null() ? "" : " + int32 bias"),
                     itext.empty() ? "-" : itext, otext.empty() ? "-" : otext});
  }
  const std::string format = quantized.empty() ? "float" : (qop > 0 && qop == quantized.size() ? "qoperator" : "qdq");

  if (a.json) {
    Json j;
    j["file"] = a.model;
    j["ir_version"] = m.ir_version();
    j["producer"] = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
    j["opset"] = opset;
    j["opsets"] = opsets;
    Json in = Json::array(), out = Json::array();
    for (const auto& v : g.input())
      if (!inits.count(v.name())) in.push_back({{"name", v.name()}, {"dtype", elem_type_of(v)}, {"shape", shape_of(v)}});
    for (const auto& v : g.output()) out.push_back({{"name", v.name()}, {"dtype", elem_type_of(v)}, {"shape", shape_of(v)}});
    j["inputs"] = in;
    j["outputs"] = out;
    j["nodes"] = g.node_size();
    j["initializers"] = g.initializer_size();
    j["parameters"] = params;
    Json h = Json::object();
    for (const auto& kv : ops) h[kv.first] = kv.second;
    j["op_histogram"] = h;
    j["quantization"] = {{"format", format},
                         {"compute_nodes", compute},
                         {"quantized_nodes", quantized},
                         {"float_nodes", floats}};
    print_json(j);
    return;
  }
  fmt::print("model '{}': ir_version {}, opset {}, producer '{}'\n", a.model, m.ir_version(), opset,
             m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version()));
  for (const auto& v : g.input())
    if (!inits.count(v.name())) fmt::print("  input  {} {} {}\n", v.name(), elem_type_of(v), shape_of(v));
  for (const auto& v : g.output()) fmt::print("  output {} {} {}\n", v.name(), elem_type_of(v), shape_of(v));
  fmt::print("  {} nodes, {} initializers ({} values, {} bytes of raw data)\n", g.node_size(), g.initializer_size(),
             params, bytes);
  std::string hist;
  for (const auto& kv : ops) hist += fmt::format("{}{} {}", hist.empty() ? "" : ", ", kv.first, kv.second);
  fmt::print("  ops: {}\n", hist);
  if (quantized.empty()) {
    fmt::print("  not quantized (no QuantizeLinear/DequantizeLinear or QLinear ops)\n");
    return;
  }
  fmt::print("  quantized ({}): {} of {} compute nodes\n", format, quantized.size(), compute);
  std::vector<std::size_t> w = {4, 2, 7, 6, 7};
  const std::vector<std::string> head = {"node", "op", "weights", "inputs", "outputs"};
  for (const auto& row : table)
    for (std::size_t k = 0; k < row.size(); ++k) w[k] = std::max(w[k], row[k].size());
  auto print_row = [&](const std::vector<std::string>& row) {
    fmt::print("    {:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", row[0], w[0], row[1], w[1], row[2], w[2], row[3], w[3], row[4]);
  };
  print_row(head);
  for (const auto& row : table) print_row(row);
  for (const auto& f : float_names) fmt::print("  float: {}\n", f);
}

}  // namespace

void add_info(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "info", "describe a model: opset, inputs/outputs, op histogram, which nodes are quantized and how");
  cmd->add_option("model", args->model, "the ONNX model")->required()->type_name("MODEL.onnx");
  cmd->add_flag("--json", args->json, "print the description as JSON");
  cmd->callback([args] { run_info(*args); });
}

}  // namespace cli
}  // namespace quantkit
