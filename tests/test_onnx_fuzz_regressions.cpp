// Every input a fuzz harness (fuzz/) ever crashed on, committed under
// tests/data/fuzz_regressions/<harness>/, fed to the same reader: each must end in a
// quantkit::Error whose message names the file, never a crash (this test runs under ASan+UBSan in
// the clang-asan stage). Plus the loader's limits (LoadOptions), which turn hostile sizes into
// errors before anything is allocated.
#include <doctest/doctest.h>

#include <algorithm>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <quantkit/calibration/json.hpp>
#include <quantkit/executor.hpp>
#include <quantkit/io/npy.hpp>
#include <quantkit/observer/json.hpp>
#include <quantkit/onnx/load.hpp>
#include <quantkit/quantkit.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_onnx_fuzz_regressions {

namespace qk = quantkit;

namespace {

const std::string regressions = std::string(QUANTKIT_TEST_DIR) + "/data/fuzz_regressions";

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const qk::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("fuzz regressions: ONNX loader") {
  const auto files = files_in(regressions + "/fuzz_onnx_load");
  REQUIRE(files.size() >= 1);
  for (const auto& f : files) {
    CAPTURE(f);
    const std::string b = bytes_of(f);
    const std::string msg = error_of([&] { qk::onnx::load_bytes(b.data(), b.size(), "regression.onnx"); });
    CHECK(msg.find("file 'regression.onnx'") != std::string::npos);
  }
  // Each crashed libonnx 1.12's shape inference; now the message names the node and input.
  auto error_loading_regression = [](const std::string& name) {
    const std::string b = bytes_of(regressions + "/fuzz_onnx_load/" + name);
    return error_of([&] { qk::onnx::load_bytes(b.data(), b.size(), "m.onnx"); });
  };
  // The first one: Gemm (opset 6) with a rank-0 input A.
  CHECK(error_loading_regression("gemm_rank0_input_libonnx_segv.onnx") ==
        "quantkit: file 'm.onnx': node '' (Gemm): input A '0' has rank 0; expected rank 2");
  // QLinearConv with X of rank 3 and W of rank 4 (convPoolShapeInference).
  CHECK(error_loading_regression("qlinearconv_rank_mismatch_libonnx_segv.onnx") ==
        "quantkit: file 'm.onnx': node '' (QLinearConv): input x 'x' has rank 3, input w 'w' rank 4; expected "
        "equal ranks of at least 3");
  // GRU (opset 6) with a rank-1 X (RNNShapeInference1).
  CHECK(error_loading_regression("gru_rank1_input_libonnx_segv.onnx") ==
        "quantkit: file 'm.onnx': node '' (GRU): input X '0' has rank 1; expected rank 3");
  // LayerNormalization (opset 17) with a rank-0 X (its axis attribute misspelt, so -1).
  CHECK(error_loading_regression("layernorm_rank0_input_libonnx_segv.onnx") ==
        "quantkit: file 'm.onnx': node '' (LayerNormalization): input X 'X' has rank 0 and 'axis' is -1; expected an "
        "axis in [-rank, rank)");
}

namespace {
using Dims = std::vector<std::int64_t>;
// x (shape `x_dims`) -> Neg -> t -> `op` (inputs t, then graph inputs of shapes `more`) -> y, at
// `opset`: the rank of t is known only once inference has run Neg.
std::string error_of_op_after_neg(const std::string& op, int opset, const Dims& x_dims, const std::vector<Dims>& more) {
  ::onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  auto add_input = [&](const std::string& name, const std::vector<std::int64_t>& dims) {
    auto* in = g->add_input();
    in->set_name(name);
    in->mutable_type()->mutable_tensor_type()->set_elem_type(1);
    auto* shape = in->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (auto d : dims) shape->add_dim()->set_dim_value(d);
  };
  add_input("x", x_dims);
  auto* neg = g->add_node();
  neg->set_op_type("Neg");
  neg->set_name("neg");
  neg->add_input("x");
  neg->add_output("t");
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("n");
  n->add_input("t");
  for (std::size_t i = 0; i < more.size(); ++i) {
    add_input("in" + std::to_string(i), more[i]);
    n->add_input("in" + std::to_string(i));
  }
  n->add_output("y");
  if (op == "GRU" || op == "RNN" || op == "LSTM") {
    auto* a = n->add_attribute();
    a->set_name("hidden_size");
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(1);
  }
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  const std::string b = m.SerializeAsString();
  return error_of([&] { qk::onnx::load_bytes(b.data(), b.size(), "m.onnx"); });
}
}  // namespace

TEST_CASE("fuzz regressions: ranks libonnx trusts, known only during shape inference") {
  // The rank of Neg's output reaches the recurrent, Gemm and convolution inference only inside
  // libonnx: the check wrapped around their inference functions reports it, with the node.
  for (const std::string op : {"GRU", "RNN", "LSTM"}) {
    CAPTURE(op);
    const std::vector<Dims> w_r = {{1, 3, 2}, {1, 3, 1}};
    const std::string e = error_of_op_after_neg(op, 7, {4}, w_r);
    CHECK(e.find("quantkit: file 'm.onnx': shape inference failed: ") == 0);
    CHECK(e.find("node name: n") != std::string::npos);
    CHECK(e.find("input X has rank 1; expected rank 3") != std::string::npos);
    CHECK(error_of_op_after_neg(op, 7, {2, 1, 2}, w_r) == "(no error)");
  }
  for (const int opset : {6, 7, 13}) {
    CAPTURE(opset);
    const std::string e = error_of_op_after_neg("Gemm", opset, {}, {{2, 2}, {2}});
    CHECK(e.find("quantkit: file 'm.onnx': shape inference failed: ") == 0);
    CHECK(e.find("input A has rank 0; expected rank 2") != std::string::npos);
    CHECK(error_of_op_after_neg("Gemm", opset, {3, 2}, {{2, 2}, {2}}) == "(no error)");
  }
  CHECK(error_of_op_after_neg("Conv", 13, {1, 3, 2, 2}, {{1, 3, 2}}).find(
            "input X has rank 4, input W rank 3; expected equal ranks of at least 3") != std::string::npos);
}

TEST_CASE("fuzz regressions: executor on small graphs (as fuzz/fuzz_executor.cpp runs them)") {
  const auto files = files_in(regressions + "/fuzz_executor");
  REQUIRE(files.size() >= 1);
  int ran = 0;
  for (const auto& f : files) {
    CAPTURE(f);
    const std::string b = bytes_of(f);
    const std::string msg = error_of([&] {
      qk::onnx::LoadOptions opt;
      opt.supported = [](const std::string& d, const std::string& op) { return qk::builtin_ops().supports(d, op); };
      const qk::graph::Graph g = qk::onnx::load_bytes(b.data(), b.size(), "regression.onnx", opt);
      qk::Executor<> ex(g);
      qk::Executor<>::TensorMap inputs;
      for (const auto& in : g.inputs) {
        qk::graph::Tensor t(in.dtype, qk::graph::make_dims(in.dims, in.name));
        qk::graph::visit_dtype(in.dtype, [&](auto tag) {
          using T = decltype(tag);
          for (std::int64_t i = 0; i < t.size(); ++i) t.data<T>()[i] = static_cast<T>(i % 7);
        });
        inputs.emplace(in.name, std::move(t));
      }
      ++ran;
      ex.run(inputs);
    });
    CHECK(msg.find("quantkit: ") == 0);
  }
  CHECK(ran >= 1);  // at least one reaches the executor (a Reshape whose shape product overflowed int64)
}

TEST_CASE("fuzz regressions: .npy reader") {
  for (const auto& f : files_in(regressions + "/fuzz_npy")) {
    CAPTURE(f);
    const std::string b = bytes_of(f);
    const std::vector<unsigned char> v(b.begin(), b.end());
    CHECK(error_of([&] { qk::npy::parse(v, "regression.npy"); }).find("file 'regression.npy'") != std::string::npos);
  }
}

TEST_CASE("fuzz regressions: profile and observer JSON") {
  for (const std::string h : {"fuzz_profile_json", "fuzz_observer_json"}) {
    for (const auto& f : files_in(regressions + "/" + h)) {
      CAPTURE(f);
      const auto j = nlohmann::json::parse(bytes_of(f));
      if (h == "fuzz_profile_json")
        CHECK(error_of([&] { qk::profile_from_json(j, "profile 'p.json'"); }) != "(no error)");
      else
        CHECK(error_of([&] { qk::observer_from_json<qk::HistogramObserver>(j); }) != "(no error)");
    }
  }
  // 1.5e38 as an int axis was a float-to-int conversion with undefined behaviour in nlohmann's get<int>.
  const auto j = nlohmann::json::parse(bytes_of(regressions + "/fuzz_observer_json/int_out_of_range_ub.json"));
  CHECK(error_of([&] { qk::observer_from_json<qk::HistogramObserver>(j); }) ==
        "quantkit: observer JSON: \"axis\" is 1.5555555555555555e+38; expected an integer in [-2147483648, 2147483647]");
}

namespace {
// x -> Identity -> y, with one initializer 'w' (shape `dims`, `n_floats` values in float_data).
::onnx::ModelProto tiny_model(std::vector<std::int64_t> dims, int n_floats) {
  ::onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->set_name("id");
  n->add_input("x");
  n->add_output("y");
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(1);
  for (auto d : dims) w->add_dims(d);
  for (int i = 0; i < n_floats; ++i) w->add_float_data(1.0f);
  return m;
}
std::string error_loading(const ::onnx::ModelProto& m, const qk::onnx::LoadOptions& opt = {}) {
  const std::string b = m.SerializeAsString();
  return error_of([&] { qk::onnx::load_bytes(b.data(), b.size(), "m.onnx", opt); });
}
}  // namespace

TEST_CASE("loader limits: declared sizes vs data present, totals, counts, nesting") {
  // A few bytes declaring 2^31 floats: an error before any allocation (ASan's allocator would
  // report an 8 GiB request).
  CHECK(error_loading(tiny_model({1 << 16, 1 << 15}, 0)) ==
        "quantkit: file 'm.onnx': initializer 'w': shape [65536, 32768] declares 2147483648 elements but "
        "float_data holds 0; expected as many (truncated or corrupt tensor?)");
  // Shape products that overflow int64 / size_t.
  CHECK(error_loading(tiny_model({std::int64_t{1} << 40, std::int64_t{1} << 40}, 0))
            .find("has more than 4294967296 elements; expected a smaller tensor") != std::string::npos);
  CHECK(error_loading(tiny_model({-3}, 0)).find("extent -3 in dimension 0") != std::string::npos);
  CHECK(error_loading(tiny_model({2, 2}, 4)) == "(no error)");
  // Total initializer bytes.
  qk::onnx::LoadOptions small;
  small.max_initializer_bytes = 8;
  CHECK(error_loading(tiny_model({2, 2}, 4), small) ==
        "quantkit: file 'm.onnx': initializers hold more than 8 bytes (at 'w'); expected at most "
        "LoadOptions::max_initializer_bytes");
  // Node count.
  qk::onnx::LoadOptions few;
  few.max_nodes = 0;
  CHECK(error_loading(tiny_model({1}, 1), few) ==
        "quantkit: file 'm.onnx': the graph has 1 nodes; expected at most 0 (LoadOptions::max_nodes)");
  // Nesting: a Loop body nested 80 deep is refused by the parser (recursion limit 64).
  ::onnx::ModelProto deep = tiny_model({1}, 1);
  ::onnx::GraphProto* body = deep.mutable_graph();
  for (int i = 0; i < 80; ++i) {
    auto* n = body->add_node();
    n->set_op_type("Loop");
    auto* a = n->add_attribute();
    a->set_name("body");
    a->set_type(::onnx::AttributeProto::GRAPH);
    body = a->mutable_g();
  }
  CHECK(error_loading(deep) ==
        "quantkit: file 'm.onnx': not a valid ONNX model (protobuf parsing failed; truncated or corrupt file?)");
}

}  // namespace test_onnx_fuzz_regressions
