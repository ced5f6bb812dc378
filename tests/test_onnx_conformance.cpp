// ONNX conformance: quantkit's ONNX convention against the ONNX project's own node tests
// (Debian libonnx-testdata, read from disk at test time):
//   QuantizeLinear     y = saturate(round_half_even(x / y_scale) + y_zero_point), per tensor
//                      or per axis (attribute axis, default 1)
//   DequantizeLinear   y = (x - x_zero_point) * x_scale
//   DynamicQuantizeLinear  uint8; y_scale = (max(0, max(x)) - min(0, min(x))) / 255,
//                      y_zero_point = round_half_even(saturate(0 - min / y_scale)), y as above
// Every output must match bit for bit (float outputs compared by their bits).
#include <doctest/doctest.h>

#include "support/onnx_tensor.hpp"

#ifndef QUANTKIT_HAVE_ONNX_PROTO

TEST_CASE("ONNX conformance: QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear") {
  MESSAGE("skipped: built without the ONNX protobuf library (QUANTKIT_HAVE_ONNX_PROTO is not "
          "defined); install libonnx-dev and protobuf to run it");
}

#else

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <quantkit/quantkit.hpp>

namespace qk = quantkit;
namespace od = quantkit_test::onnx_data;

namespace {

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

qk::Dims dims_of(const od::Tensor& t) { return qk::Dims::from(t.dims.begin(), t.dims.end()); }

// The integer range of an ONNX integer tensor type (QuantizeLinear's output type is its zero
// point's type).
qk::IntRange range_of(int data_type) {
  switch (data_type) {
    case onnx::TensorProto::UINT8: return {0, 255};
    case onnx::TensorProto::INT8: return {-128, 127};
    case onnx::TensorProto::UINT16: return {0, 65535};
    case onnx::TensorProto::INT16: return {-32768, 32767};
    default:
      FAIL("zero point type " << od::data_type_name(data_type) << " is not an 8/16-bit integer type");
      return {};
  }
}

// QuantParams for a (Dequantize|Quantize)Linear node: per tensor for a scalar scale (or a
// 1-element scale on a 1-element axis), else per channel along `axis`.
qk::QuantParams node_params(const od::Tensor& scale, const od::Tensor* zp, qk::IntRange r,
                            std::int64_t axis, const od::Tensor& x) {
  qk::QuantParams p;
  p.scale = scale.as<float>();
  p.zero_point = zp ? zp->as<std::int32_t>() : std::vector<std::int32_t>(p.scale.size(), 0);
  p.range = r;
  const bool per_tensor = scale.dims.empty() || (scale.numel() == 1 && x.dims.empty());
  p.granularity = per_tensor ? qk::Granularity::per_tensor()
                             : qk::Granularity::per_channel(static_cast<int>(axis));
  return p;
}

void check_ints(const std::string& where, const std::vector<std::int32_t>& got,
                const od::Tensor& expected) {
  const auto want = expected.as<std::int64_t>();
  REQUIRE_MESSAGE(got.size() == want.size(), where, ": ", got.size(), " values; expected ",
                  want.size());
  int mismatches = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    ++mismatches;
    INFO(where, " element ", i);
    CHECK(got[i] == want[i]);
  }
  CHECK_MESSAGE(mismatches == 0, where, ": ", mismatches, " mismatches");
}

void check_floats(const std::string& where, const std::vector<float>& got,
                  const od::Tensor& expected) {
  REQUIRE_MESSAGE(expected.is_float(), where, ": expected output is ",
                  od::data_type_name(expected.data_type), "; expected FLOAT");
  REQUIRE(got.size() == expected.floats.size());
  int mismatches = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (bits(got[i]) == bits(expected.floats[i])) continue;
    ++mismatches;
    INFO(where, " element ", i, ": got ", got[i], " expected ", expected.floats[i]);
    CHECK(bits(got[i]) == bits(expected.floats[i]));
  }
  CHECK_MESSAGE(mismatches == 0, where, ": ", mismatches, " mismatches");
}

void run_quantize_linear(const std::string& where, const onnx::NodeProto& node,
                         const od::DataSet& ds) {
  REQUIRE(ds.inputs.size() >= 2);
  REQUIRE(ds.outputs.size() == 1);
  const auto& x = ds.inputs[0];
  const od::Tensor* zp = ds.inputs.size() > 2 ? &ds.inputs[2] : nullptr;
  const int out_type = zp ? zp->data_type : static_cast<int>(onnx::TensorProto::UINT8);
  CHECK_MESSAGE(ds.outputs[0].data_type == out_type, where, ": output type ",
                od::data_type_name(ds.outputs[0].data_type), " differs from the zero point's");
  const std::int64_t axis = od::int_attribute(node, "axis").value_or(1);
  const auto p = node_params(ds.inputs[1], zp, range_of(out_type), axis, x);
  const std::vector<float> xv = x.as<float>();
  std::vector<std::int32_t> q(xv.size());
  qk::ref::quantize(qk::View<const float>(xv.data(), dims_of(x), "x"), p,
                    qk::View<std::int32_t>(q.data(), dims_of(x), "y"), qk::RoundHalfEven{},
                    qk::ScaleApplicationKind::divide);
  check_ints(where + " y", q, ds.outputs[0]);
}

void run_dequantize_linear(const std::string& where, const onnx::NodeProto& node,
                           const od::DataSet& ds) {
  REQUIRE(ds.inputs.size() >= 2);
  REQUIRE(ds.outputs.size() == 1);
  const auto& x = ds.inputs[0];
  const od::Tensor* zp = ds.inputs.size() > 2 ? &ds.inputs[2] : nullptr;
  const std::int64_t axis = od::int_attribute(node, "axis").value_or(1);
  const auto p = node_params(ds.inputs[1], zp, range_of(x.data_type), axis, x);
  const std::vector<std::int32_t> xv = x.as<std::int32_t>();
  std::vector<float> y(xv.size());
  qk::ref::dequantize(qk::View<const std::int32_t>(xv.data(), dims_of(x), "x"), p,
                      qk::View<float>(y.data(), dims_of(x), "y"));
  check_floats(where + " y", y, ds.outputs[0]);
}

void run_dynamic_quantize_linear(const std::string& where, const od::DataSet& ds) {
  REQUIRE(ds.inputs.size() == 1);
  REQUIRE(ds.outputs.size() == 3);
  const auto& x = ds.inputs[0];
  const std::vector<float> xv = x.as<float>();
  REQUIRE(!xv.empty());
  const auto [lo, hi] = std::minmax_element(xv.begin(), xv.end());
  const qk::IntRange u8{0, 255};
  const auto sz = qk::compute_qparams(*lo, *hi, u8, qk::SymmetryKind::affine,
                                      qk::ConventionKind::onnx, "x");
  check_floats(where + " y_scale", {sz.scale}, ds.outputs[1]);
  check_ints(where + " y_zero_point", {sz.zero_point}, ds.outputs[2]);
  qk::QuantParams p;
  p.scale = {sz.scale};
  p.zero_point = {sz.zero_point};
  p.range = u8;
  std::vector<std::int32_t> q(xv.size());
  qk::ref::quantize(qk::View<const float>(xv.data(), dims_of(x), "x"), p,
                    qk::View<std::int32_t>(q.data(), dims_of(x), "y"), qk::RoundHalfEven{},
                    qk::ScaleApplicationKind::divide);
  check_ints(where + " y", q, ds.outputs[0]);
}

// Every node test directory whose name starts with one of the prefixes, sorted.
std::vector<std::string> case_names(const std::vector<std::string>& prefixes) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(od::onnx_testdata_dir() + "/node", ec)) {
    const std::string n = e.path().filename().string();
    for (const auto& p : prefixes)
      if (n.rfind(p, 0) == 0) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("ONNX conformance: QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear") {
  if (!od::exists(od::onnx_testdata_dir() + "/node")) {
    MESSAGE("skipped: no ONNX test data at ", od::onnx_testdata_dir(),
            " (Debian package libonnx-testdata)");
    return;
  }
  const auto names = case_names({"test_quantizelinear", "test_dequantizelinear",
                                 "test_dynamicquantizelinear"});
  // The cases Debian's libonnx-testdata 1.12 ships; newer data sets add more (all are run).
  for (const char* required :
       {"test_quantizelinear", "test_quantizelinear_axis", "test_dequantizelinear",
        "test_dequantizelinear_axis", "test_dynamicquantizelinear",
        "test_dynamicquantizelinear_max_adjusted", "test_dynamicquantizelinear_min_adjusted"})
    CHECK_MESSAGE(std::find(names.begin(), names.end(), required) != names.end(),
                  "missing conformance case ", required);

  int data_sets = 0;
  for (const auto& name : names) {
    CAPTURE(name);
    const std::string dir = od::node_case_dir(name);
    const od::Model model = od::read_model(dir + "/model.onnx");
    const auto& graph = model.proto.graph();
    // The *_expanded variants hold the op's function body (many nodes) with the same data:
    // they are checked against the op itself.
    std::string op = graph.node_size() == 1 ? graph.node(0).op_type() : std::string();
    if (op.empty() && name.rfind("test_dynamicquantizelinear", 0) == 0) op = "DynamicQuantizeLinear";
    for (const auto& ds_dir : od::data_set_dirs(dir)) {
      const std::string where = name + "/" + std::filesystem::path(ds_dir).filename().string();
      const od::DataSet ds = od::read_data_set(ds_dir);
      if (op == "QuantizeLinear") {
        // opset 19+ cases may carry float8 outputs or saturate attributes; 8/16-bit only here
        if (ds.outputs.size() == 1 && ds.outputs[0].is_integer())
          run_quantize_linear(where, graph.node(0), ds);
        else {
          MESSAGE(where, ": skipped (output type ", od::data_type_name(ds.outputs[0].data_type), ")");
          continue;
        }
      } else if (op == "DequantizeLinear") {
        if (ds.inputs[0].is_integer())
          run_dequantize_linear(where, graph.node(0), ds);
        else {
          MESSAGE(where, ": skipped (input type ", od::data_type_name(ds.inputs[0].data_type), ")");
          continue;
        }
      } else if (op == "DynamicQuantizeLinear") {
        run_dynamic_quantize_linear(where, ds);
      } else {
        FAIL(where, ": unexpected graph (", graph.node_size(), " nodes, first ",
             graph.node_size() ? graph.node(0).op_type() : "none", ")");
      }
      ++data_sets;
    }
  }
  MESSAGE("checked ", data_sets, " ONNX conformance data sets from ", names.size(), " cases");
  CHECK(data_sets >= 7);
}

#endif  // QUANTKIT_HAVE_ONNX_PROTO
