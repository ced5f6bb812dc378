// Test-only: reading ONNX conformance data (model.onnx + test_data_set_N/{input,output}_K.pb)
// with Debian's ONNX protobuf classes. Available when the test links onnx_proto + protobuf
// (the build defines QUANTKIT_HAVE_ONNX_PROTO then); otherwise this header declares only
// onnx_testdata_dir() and have_onnx_proto() == false, so a test can report itself skipped.
//
//   using namespace quantkit_test::onnx_data;
//   const auto dir = node_case_dir("test_quantizelinear");          // .../data/node/<case>
//   Model m = read_model(dir + "/model.onnx");
//   const onnx::NodeProto& n = single_node(m.proto, "QuantizeLinear");
//   std::int64_t axis = int_attribute(n, "axis").value_or(1);
//   DataSet ds = read_data_set(dir + "/test_data_set_0");          // inputs, outputs in order
//   std::vector<float> x = ds.inputs[0].as<float>();
#pragma once

#include <cstdint>
#include <string>

#ifndef QUANTKIT_ONNX_TESTDATA_DIR
#define QUANTKIT_ONNX_TESTDATA_DIR "/usr/share/libonnx-testdata/data"
#endif

#ifdef QUANTKIT_HAVE_ONNX_PROTO
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <type_traits>
#include <vector>

#ifndef ONNX_ML
#define ONNX_ML 1  // Debian ships only the -ml variant of the generated headers
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <onnx/onnx_pb.h>
#endif

namespace quantkit_test {
namespace onnx_data {

inline std::string onnx_testdata_dir() { return QUANTKIT_ONNX_TESTDATA_DIR; }
inline std::string node_case_dir(const std::string& case_name) {
  return onnx_testdata_dir() + "/node/" + case_name;
}

#ifdef QUANTKIT_HAVE_ONNX_PROTO
constexpr bool have_onnx_proto() { return true; }

inline bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string data_type_name(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return "FLOAT";
    case onnx::TensorProto::UINT8: return "UINT8";
    case onnx::TensorProto::INT8: return "INT8";
    case onnx::TensorProto::UINT16: return "UINT16";
    case onnx::TensorProto::INT16: return "INT16";
    case onnx::TensorProto::INT32: return "INT32";
    case onnx::TensorProto::INT64: return "INT64";
    case onnx::TensorProto::BOOL: return "BOOL";
    case onnx::TensorProto::DOUBLE: return "DOUBLE";
    case onnx::TensorProto::UINT32: return "UINT32";
    case onnx::TensorProto::UINT64: return "UINT64";
    default: return "unsupported";
  }
}

// A decoded TensorProto: float tensors keep their float32 bits exactly (floats), integer and
// bool tensors are widened to int64 (ints), doubles go to doubles.
struct Tensor {
  std::string name;
  int data_type = 0;  // onnx::TensorProto::DataType
  std::vector<std::int64_t> dims;
  std::vector<float> floats;
  std::vector<double> doubles;
  std::vector<std::int64_t> ints;

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    return n;
  }
  bool is_float() const { return data_type == onnx::TensorProto::FLOAT; }
  bool is_integer() const { return !ints.empty() || (numel() == 0 && !is_float()); }

  // The elements converted to T (float tensors only to floating T; integers to any arithmetic T).
  template <class T>
  std::vector<T> as() const {
    std::vector<T> out;
    if (is_float()) {
      static_assert(std::is_arithmetic_v<T>, "Tensor::as<T>: T must be arithmetic");
      if constexpr (!std::is_floating_point_v<T>)
        throw std::runtime_error("tensor '" + name + "' is FLOAT; asked for an integer type");
      else
        for (float f : floats) out.push_back(static_cast<T>(f));
    } else if (data_type == onnx::TensorProto::DOUBLE) {
      for (double d : doubles) out.push_back(static_cast<T>(d));
    } else {
      for (auto v : ints) out.push_back(static_cast<T>(v));
    }
    return out;
  }
};

namespace detail {
template <class Raw, class Out>
void decode_raw_as(const std::string& raw, std::int64_t count, const std::string& what,
                   std::vector<Out>& out) {
  if (raw.size() != static_cast<std::size_t>(count) * sizeof(Raw))
    throw std::runtime_error(what + ": raw_data has " + std::to_string(raw.size()) +
                             " bytes; expected " + std::to_string(count) + " x " +
                             std::to_string(sizeof(Raw)));
  out.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    Raw v;  // ONNX raw_data is little endian, as is every machine this runs on
    std::memcpy(&v, raw.data() + static_cast<std::size_t>(i) * sizeof(Raw), sizeof(Raw));
    out[static_cast<std::size_t>(i)] = static_cast<Out>(v);
  }
}
}  // namespace detail

// Decodes raw_data or the typed repeated fields; throws naming the tensor on anything
// unexpected (unsupported type, size mismatch, external data).
inline Tensor from_proto(const onnx::TensorProto& t, const std::string& origin = {}) {
  Tensor out;
  out.name = t.name();
  out.data_type = t.data_type();
  for (auto d : t.dims()) out.dims.push_back(d);
  const std::string what = (origin.empty() ? std::string() : origin + ": ") + "tensor '" +
                           t.name() + "' (" + data_type_name(t.data_type()) + ")";
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    throw std::runtime_error(what + ": external data is not supported by this test helper");
  const std::int64_t n = out.numel();
  const bool raw = t.has_raw_data();
  const std::string& r = t.raw_data();
  auto check_count = [&](int have) {
    if (have != n)
      throw std::runtime_error(what + ": " + std::to_string(have) + " values; expected " +
                               std::to_string(n));
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (raw) detail::decode_raw_as<float>(r, n, what, out.floats);
      else {
        check_count(t.float_data_size());
        out.floats.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    case onnx::TensorProto::DOUBLE:
      if (raw) detail::decode_raw_as<double>(r, n, what, out.doubles);
      else {
        check_count(t.double_data_size());
        out.doubles.assign(t.double_data().begin(), t.double_data().end());
      }
      break;
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::BOOL:
      if (raw) {
        switch (t.data_type()) {
          case onnx::TensorProto::UINT8: detail::decode_raw_as<std::uint8_t>(r, n, what, out.ints); break;
          case onnx::TensorProto::INT8: detail::decode_raw_as<std::int8_t>(r, n, what, out.ints); break;
          case onnx::TensorProto::UINT16: detail::decode_raw_as<std::uint16_t>(r, n, what, out.ints); break;
          case onnx::TensorProto::INT16: detail::decode_raw_as<std::int16_t>(r, n, what, out.ints); break;
          case onnx::TensorProto::INT32: detail::decode_raw_as<std::int32_t>(r, n, what, out.ints); break;
          default: detail::decode_raw_as<std::uint8_t>(r, n, what, out.ints); break;
        }
      } else {
        // int32_data holds these types, one value per element (8/16-bit values widened)
        check_count(t.int32_data_size());
        for (auto v : t.int32_data()) {
          std::int64_t w = v;
          if (t.data_type() == onnx::TensorProto::INT8) w = static_cast<std::int8_t>(v);
          if (t.data_type() == onnx::TensorProto::INT16) w = static_cast<std::int16_t>(v);
          if (t.data_type() == onnx::TensorProto::UINT8) w = static_cast<std::uint8_t>(v);
          if (t.data_type() == onnx::TensorProto::UINT16) w = static_cast<std::uint16_t>(v);
          out.ints.push_back(w);
        }
      }
      break;
    case onnx::TensorProto::INT64:
      if (raw) detail::decode_raw_as<std::int64_t>(r, n, what, out.ints);
      else {
        check_count(t.int64_data_size());
        out.ints.assign(t.int64_data().begin(), t.int64_data().end());
      }
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      if (raw && t.data_type() == onnx::TensorProto::UINT32)
        detail::decode_raw_as<std::uint32_t>(r, n, what, out.ints);
      else if (raw)
        detail::decode_raw_as<std::uint64_t>(r, n, what, out.ints);  // values > 2^63 wrap
      else {
        check_count(t.uint64_data_size());
        for (auto v : t.uint64_data()) out.ints.push_back(static_cast<std::int64_t>(v));
      }
      break;
    default:
      throw std::runtime_error(what + ": data type " + std::to_string(t.data_type()) +
                               " is not supported by this test helper");
  }
  return out;
}

inline Tensor read_tensor(const std::string& path) {
  onnx::TensorProto t;
  if (!t.ParseFromString(read_file(path)))
    throw std::runtime_error(path + ": not a serialized onnx.TensorProto");
  return from_proto(t, path);
}

struct Model {
  std::string path;
  onnx::ModelProto proto;
  // The version of the default ("" or "ai.onnx") domain.
  std::int64_t opset() const {
    for (const auto& o : proto.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
    return -1;
  }
};

inline Model read_model(const std::string& path) {
  Model m;
  m.path = path;
  if (!m.proto.ParseFromString(read_file(path)))
    throw std::runtime_error(path + ": not a serialized onnx.ModelProto");
  return m;
}

// The graph's only node, which must be of op_type (or any type when op_type is empty).
inline const onnx::NodeProto& single_node(const Model& m, const std::string& op_type = {}) {
  const auto& g = m.proto.graph();
  if (g.node_size() != 1)
    throw std::runtime_error(m.path + ": graph has " + std::to_string(g.node_size()) +
                             " nodes; expected 1");
  const auto& n = g.node(0);
  if (!op_type.empty() && n.op_type() != op_type)
    throw std::runtime_error(m.path + ": node is " + n.op_type() + "; expected " + op_type);
  return n;
}

inline const onnx::AttributeProto* find_attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
inline std::optional<std::int64_t> int_attribute(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = find_attribute(n, name);
  if (!a) return std::nullopt;
  if (a->type() != onnx::AttributeProto::INT)
    throw std::runtime_error("node " + n.name() + " attribute " + name + " is not an INT");
  return a->i();
}
inline std::optional<float> float_attribute(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = find_attribute(n, name);
  if (!a) return std::nullopt;
  if (a->type() != onnx::AttributeProto::FLOAT)
    throw std::runtime_error("node " + n.name() + " attribute " + name + " is not a FLOAT");
  return a->f();
}

struct DataSet {
  std::string dir;
  std::vector<Tensor> inputs, outputs;  // input_0.pb, input_1.pb, ...; output_0.pb, ...
};

// Reads <dir>/input_K.pb and <dir>/output_K.pb for K = 0, 1, ... until one is missing.
inline DataSet read_data_set(const std::string& dir) {
  DataSet ds;
  ds.dir = dir;
  for (int k = 0;; ++k) {
    const std::string p = dir + "/input_" + std::to_string(k) + ".pb";
    if (!exists(p)) break;
    ds.inputs.push_back(read_tensor(p));
  }
  for (int k = 0;; ++k) {
    const std::string p = dir + "/output_" + std::to_string(k) + ".pb";
    if (!exists(p)) break;
    ds.outputs.push_back(read_tensor(p));
  }
  if (ds.inputs.empty() && ds.outputs.empty())
    throw std::runtime_error(dir + ": no input_*.pb or output_*.pb");
  return ds;
}

// test_data_set_0, test_data_set_1, ... of a case directory.
inline std::vector<std::string> data_set_dirs(const std::string& case_dir) {
  std::vector<std::string> dirs;
  for (int k = 0;; ++k) {
    const std::string d = case_dir + "/test_data_set_" + std::to_string(k);
    if (!exists(d)) break;
    dirs.push_back(d);
  }
  return dirs;
}

#else
constexpr bool have_onnx_proto() { return false; }
#endif

}  // namespace onnx_data
}  // namespace quantkit_test
