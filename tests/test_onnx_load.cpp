// ONNX loader: models built with the protobuf API, loaded with quantkit::onnx::load_bytes and
// run; every malformed input (corrupt or truncated protobuf, external data, unsupported op,
// element type or attribute kind, missing initializer, size/byte mismatch, overflowing or
// inconsistent shapes) is a quantkit::Error naming the file and what was found.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <quantkit/executor.hpp>
#include <quantkit/onnx.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_onnx_load {

namespace qk = quantkit;
using qk::graph::DType;
using qk::graph::Tensor;

namespace {

void set_shape(::onnx::ValueInfoProto* v, const std::string& name, int elem, const std::vector<std::int64_t>& dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (auto d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
    else dim->set_dim_param("N");
  }
}

::onnx::TensorProto* add_float_init(::onnx::GraphProto* g, const std::string& name, const std::vector<std::int64_t>& dims,
                                    const std::vector<float>& values, bool raw) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  if (raw) t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  else for (float v : values) t->add_float_data(v);
  return t;
}

// x [N,1,3,3] -> Conv(w 2x1x2x2, b) -> Relu -> y, opset 13.
::onnx::ModelProto conv_model() {
  ::onnx::ModelProto m;
  m.set_ir_version(7);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  set_shape(g->add_input(), "x", ::onnx::TensorProto::FLOAT, {-1, 1, 3, 3});
  set_shape(g->add_output(), "y", ::onnx::TensorProto::FLOAT, {-1, 2, 2, 2});
  add_float_init(g, "w", {2, 1, 2, 2}, {1, 1, 1, 1, -1, 0, 0, 1}, true);
  add_float_init(g, "b", {2}, {0.5f, -100}, false);
  auto* conv = g->add_node();
  conv->set_op_type("Conv");
  conv->set_name("conv1");
  conv->add_input("x");
  conv->add_input("w");
  conv->add_input("b");
  conv->add_output("c");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu1");
  relu->add_input("c");
  relu->add_output("y");
  return m;
}

std::string bytes_of(const ::onnx::ModelProto& m) {
  std::string s;
  REQUIRE(m.SerializeToString(&s));
  return s;
}

std::string load_error(const std::string& bytes, const qk::onnx::LoadOptions& opt = {}) {
  try {
    (void)qk::onnx::load_bytes(bytes.data(), bytes.size(), "m.onnx", opt);
  } catch (const qk::Error& e) {
    return e.what();
  }
  return "(no error)";
}
std::string load_error(const ::onnx::ModelProto& m, const qk::onnx::LoadOptions& opt = {}) {
  return load_error(bytes_of(m), opt);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("load a model: initializers (raw and typed), opset, inferred shapes, run it") {
  const auto g = qk::onnx::load_bytes(bytes_of(conv_model()).data(), bytes_of(conv_model()).size(), "m.onnx");
  CHECK(g.opset == 13);
  CHECK(g.name == "tiny");
  CHECK(g.source == "m.onnx");
  REQUIRE(g.inputs.size() == 1);
  CHECK(g.inputs[0].dims == std::vector<std::int64_t>{-1, 1, 3, 3});
  CHECK(g.inputs[0].shape_string() == "[N, 1, 3, 3]");
  CHECK(g.initializers.at("w").to_vector<float>() == std::vector<float>{1, 1, 1, 1, -1, 0, 0, 1});
  CHECK(g.initializers.at("b").to_vector<float>() == std::vector<float>{0.5f, -100});
#if QUANTKIT_ONNX_SHAPE_INFERENCE
  REQUIRE(g.value_info.count("c"));
  CHECK(g.value_info.at("c").dims == std::vector<std::int64_t>{-1, 2, 2, 2});
#endif
  qk::Executor<> run(g);
  std::vector<float> xv = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const auto out = run.run({{"x", Tensor::from_vector(qk::Dims{1, 1, 3, 3}, xv)}});
  // channel 0: window sums + 0.5; channel 1: x[i+1][j+1] - x[i][j] - 100 < 0 -> 0
  CHECK(out.at("y").to_vector<float>() == std::vector<float>{12.5f, 16.5f, 24.5f, 28.5f, 0, 0, 0, 0});
}

TEST_CASE("corrupt, truncated and empty files are errors, never crashes") {
  CHECK(contains(load_error(std::string()), "file 'm.onnx': not a valid ONNX model (empty"));
  CHECK(contains(load_error(std::string("\xff\xff\xff\xff garbage", 13)), "file 'm.onnx': not a valid ONNX model"));
  const std::string full = bytes_of(conv_model());
  int errors = 0;
  for (std::size_t n = 0; n < full.size(); ++n) {
    try {
      (void)qk::onnx::load_bytes(full.data(), n, "cut.onnx");
    } catch (const qk::Error& e) {
      CHECK(contains(e.what(), "file 'cut.onnx'"));
      ++errors;
    }
  }
  CHECK(errors > static_cast<int>(full.size()) / 2);
  // Random byte flips: whatever parses is either valid or an error naming the file.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string b = full;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<char>(rng() & 0xff);
    try {
      auto g = qk::onnx::load_bytes(b.data(), b.size(), "flip.onnx");
      qk::Executor<> ex(g);
    } catch (const qk::Error& e) {
      CHECK(contains(e.what(), "flip.onnx"));
    }
  }
  CHECK(contains([] {
    try { (void)qk::onnx::load("/nonexistent/model.onnx"); } catch (const qk::Error& e) { return std::string(e.what()); }
    return std::string();
  }(), "file '/nonexistent/model.onnx': cannot open"));
}

TEST_CASE("unsupported op, missing initializer, external data, unsupported element types and attributes") {
  auto m = conv_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("Gelu");
  qk::onnx::LoadOptions opt;
  opt.supported = [](const std::string& d, const std::string& op) { return qk::builtin_ops().supports(d, op); };
  CHECK(contains(load_error(m, opt), "node 'relu1' (op Gelu, file 'm.onnx'): unsupported op 'Gelu'"));
  // Without the check the loader accepts it and the executor rejects it, naming the same.
  opt.supported = nullptr;
  opt.infer_shapes = false;
  const auto g = qk::onnx::load_bytes(bytes_of(m).data(), bytes_of(m).size(), "m.onnx", opt);
  try {
    qk::Executor<> ex(g);
    FAIL("expected an error");
  } catch (const qk::Error& e) {
    CHECK(contains(e.what(), "node 'relu1' (op Gelu, file 'm.onnx'): unsupported op 'Gelu'"));
  }

  m = conv_model();
  m.mutable_graph()->mutable_initializer()->RemoveLast();  // b
  CHECK(contains(load_error(m), "node 'conv1' (op Conv, file 'm.onnx'): input 'b' is not a graph input, an initializer"));

  m = conv_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("weights.bin");
  CHECK(contains(load_error(m), "file 'm.onnx': initializer 'w' stores its data externally (in 'weights.bin'); external data is not supported"));

  m = conv_model();
  m.mutable_graph()->mutable_initializer(1)->set_data_type(::onnx::TensorProto::DOUBLE);
  CHECK(contains(load_error(m), "initializer 'b' has element type DOUBLE, which is not supported"));

  m = conv_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT16);
  CHECK(contains(load_error(m), "value 'x' has element type FLOAT16, which is not supported"));

  m = conv_model();
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("body");
  a->set_type(::onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("sub");
  CHECK(contains(load_error(m), "node 'conv1' (op Conv, file 'm.onnx'): attribute 'body' has kind GRAPH, which is not supported"));

  m = conv_model();
  m.clear_opset_import();
  CHECK(contains(load_error(m), "imports no default-domain (ai.onnx) opset"));
}

TEST_CASE("limits: declared sizes against the bytes present, overflowing and negative shapes") {
  auto m = conv_model();
  m.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(8, '\0'));
  CHECK(contains(load_error(m), "initializer 'w': shape [2, 1, 2, 2] of float32 needs 32 bytes; raw_data holds 8"));

  m = conv_model();
  m.mutable_graph()->mutable_initializer(1)->add_float_data(3.0f);
  CHECK(contains(load_error(m), "initializer 'b': shape [2] declares 2 elements but float_data holds 3"));

  m = conv_model();
  auto* big = m.mutable_graph()->mutable_initializer(1);
  big->clear_dims();
  big->add_dims(std::int64_t{1} << 40);
  big->add_dims(std::int64_t{1} << 40);
  CHECK(contains(load_error(m), "initializer 'b': shape [1099511627776, 1099511627776] has more than"));

  m = conv_model();
  m.mutable_graph()->mutable_initializer(1)->set_dims(0, -2);
  CHECK(contains(load_error(m), "initializer 'b': extent -2 in dimension 0"));

  m = conv_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(-5);
  CHECK(contains(load_error(m), "value 'x' has a negative dimension -5"));

  qk::onnx::LoadOptions small;
  small.max_file_bytes = 10;
  CHECK(contains(load_error(conv_model(), small), "bytes exceed the limit of 10 bytes"));
}

#if QUANTKIT_ONNX_SHAPE_INFERENCE
TEST_CASE("bad shapes found by shape inference name the file and the node") {
  auto m = conv_model();
  // The output declares 3 channels; the weights give 2.
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(3);
  std::string e = load_error(m);
  MESSAGE(e);
  CHECK(contains(e, "file 'm.onnx': shape inference failed"));
  // A MatMul whose inner dimensions differ.
  m = conv_model();
  auto* g = m.mutable_graph();
  g->clear_node();
  g->clear_initializer();
  add_float_init(g, "k", {4, 2}, std::vector<float>(8, 1.0f), true);
  set_shape(g->mutable_input(0), "x", ::onnx::TensorProto::FLOAT, {2, 3});
  set_shape(g->mutable_output(0), "y", ::onnx::TensorProto::FLOAT, {2, 2});
  auto* mm = g->add_node();
  mm->set_op_type("MatMul");
  mm->set_name("mm");
  mm->add_input("x");
  mm->add_input("k");
  mm->add_output("y");
  e = load_error(m);
  MESSAGE(e);
  CHECK(contains(e, "file 'm.onnx': shape inference failed"));
  CHECK(contains(e, "MatMul"));
}
#endif

TEST_CASE("TensorProto files (the conformance data format)") {
  ::onnx::TensorProto t;
  t.set_name("q");
  t.set_data_type(::onnx::TensorProto::INT8);
  t.add_dims(3);
  for (int v : {-128, 0, 127}) t.add_int32_data(v);
  std::string s;
  REQUIRE(t.SerializeToString(&s));
  const Tensor q = qk::onnx::load_tensor_bytes(s.data(), s.size(), "q.pb");
  CHECK(q.dtype() == DType::int8);
  CHECK(q.to_vector<std::int8_t>() == std::vector<std::int8_t>{-128, 0, 127});
  t.set_int32_data(1, 300);
  REQUIRE(t.SerializeToString(&s));
  try {
    (void)qk::onnx::load_tensor_bytes(s.data(), s.size(), "q.pb");
    FAIL("expected an error");
  } catch (const qk::Error& e) {
    CHECK(contains(e.what(), "file 'q.pb': tensor 'q': int32_data[1] = 300 is out of range for int8"));
  }
}

}  // namespace test_onnx_load
