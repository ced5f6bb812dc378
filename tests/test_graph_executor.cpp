// Graph IR and float executor: hand-computed op results, graph validation, the executor's
// options (chosen outputs, intermediates, per-node callback), BatchNormalization folding, and
// error paths (every error names the node and op).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <hwy/targets.h>
#include <quantkit/executor.hpp>
#include <quantkit/ref/gemm_f32.hpp>
#include <quantkit/ref/quantize.hpp>
#include <quantkit/tensor/span.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_graph_executor {

namespace qk = quantkit;
using qk::Dims;
using qk::graph::Attribute;
using qk::graph::DType;
using qk::graph::Graph;
using qk::graph::Node;
using qk::graph::Tensor;

namespace {

using Attrs = std::map<std::string, Attribute>;

Attribute I(std::int64_t v) { return Attribute::make_int(v); }
Attribute F(float v) { return Attribute::make_float(v); }
Attribute S(const std::string& v) { return Attribute::make_string(v); }
Attribute Is(std::vector<std::int64_t> v) { return Attribute::make_ints(std::move(v)); }

Tensor f32(Dims shape, std::vector<float> v) { return Tensor::from_vector(shape, v); }
Tensor i64(Dims shape, std::vector<std::int64_t> v) { return Tensor::from_vector(shape, v); }
template <class T>
Tensor tensor(Dims shape, std::vector<T> v) { return Tensor::from_vector(shape, v); }

// A graph of one node whose inputs are graph inputs in0, in1, ... ("" inputs stay omitted).
Graph one_node(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs, std::int64_t opset,
               std::size_t outputs, const std::string& name = "n0") {
  Graph g;
  g.opset = opset;
  Node n;
  n.op_type = op;
  n.name = name;
  n.attributes = std::move(attrs);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) {
      n.inputs.push_back("");
      continue;
    }
    const std::string in = "in" + std::to_string(i);
    n.inputs.push_back(in);
    qk::graph::ValueInfo vi;
    vi.name = in;
    vi.dtype = inputs[i].dtype();
    g.inputs.push_back(vi);
  }
  for (std::size_t o = 0; o < outputs; ++o) {
    n.outputs.push_back("out" + std::to_string(o));
    qk::graph::ValueInfo vi;
    vi.name = n.outputs.back();
    g.outputs.push_back(vi);
  }
  g.nodes.push_back(n);
  return g;
}

std::vector<Tensor> run_op(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {},
                           std::int64_t opset = 17, std::size_t outputs = 1) {
  qk::Executor<> ex(one_node(op, inputs, std::move(attrs), opset, outputs));
  std::map<std::string, Tensor> feed;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].empty()) feed["in" + std::to_string(i)] = inputs[i];
  auto out = ex.run(feed);
  std::vector<Tensor> r;
  for (std::size_t o = 0; o < outputs; ++o) r.push_back(out.at("out" + std::to_string(o)));
  return r;
}
Tensor run1(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}, std::int64_t opset = 17) {
  return run_op(op, inputs, std::move(attrs), opset, 1)[0];
}

void check_floats(const Tensor& t, Dims shape, const std::vector<float>& want, float tol = 1e-5f) {
  REQUIRE(t.dtype() == DType::float32);
  CHECK(t.shape() == shape);
  const auto got = t.to_vector<float>();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK_MESSAGE(std::fabs(got[i] - want[i]) <= tol, "index " << i << ": " << got[i] << " vs " << want[i]);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const qk::Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<float> iota(int n, float start = 1.0f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = start + static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("Tensor: owning storage, typed access, views, conversions") {
  Tensor t = f32({2, 3}, iota(6));
  CHECK(t.size() == 6);
  CHECK(t.nbytes() == 24);
  CHECK(t.view<float>().shape() == Dims{2, 3});
  CHECK(t.data<float>()[5] == 6.0f);
  CHECK(contains(error_of([&] { (void)t.data<std::int32_t>(); }), "accessed as int32"));
  CHECK(t.reshaped({3, 2}).shape() == Dims{3, 2});
  CHECK(contains(error_of([&] { (void)t.reshaped({4, 2}); }), "cannot reshape"));
  // From a strided (transposed) view: copied in row-major order of the view's shape.
  std::vector<float> m = {1, 2, 3, 4, 5, 6};
  qk::View<const float> tr(m.data(), Dims{3, 2}, Dims{1, 3});
  CHECK(Tensor::from_view(tr).to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
  // Any adapted user tensor converts.
  CHECK(qk::to_tensor(qk::as_tensor(m)).shape() == Dims{6});
  CHECK(contains(error_of([] { Tensor x(DType::float32, Dims{-1, 2}, "bad"); }), "extent -1"));
}

TEST_CASE("Graph: topological order, cycles, dangling inputs, duplicate outputs") {
  Graph g;
  qk::graph::ValueInfo x;
  x.name = "x";
  x.dtype = DType::float32;
  g.inputs.push_back(x);
  g.outputs.push_back({"z", DType::float32, false, {}, {}});
  Node b{"Relu", "", "second", {"y"}, {"z"}, {}, ""};
  Node a{"Relu", "", "first", {"x"}, {"y"}, {}, ""};
  g.nodes = {b, a};
  CHECK(g.topological_order() == std::vector<std::size_t>{1, 0});

  Graph dangling = g;
  dangling.nodes[1].inputs = {"nowhere"};
  CHECK(contains(error_of([&] { dangling.validate(); }), "node 'first' (op Relu): input 'nowhere' is not a graph input"));

  Graph dup = g;
  dup.nodes[0].outputs = {"y"};
  CHECK(contains(error_of([&] { dup.validate(); }), "node 'first' (op Relu): output 'y' is already produced by node 'second'"));

  Graph cycle = g;
  cycle.nodes[1].inputs = {"z"};
  CHECK(contains(error_of([&] { cycle.validate(); }), "part of a cycle"));

  Graph unproduced = g;
  unproduced.outputs[0].name = "w";
  CHECK(contains(error_of([&] { unproduced.validate(); }), "graph output 'w' is not produced"));
}

// run() keeps values by index (names resolved once at construction): shared intermediates,
// fed initializers, requested inputs, repeated and unknown names, copies of the executor.
TEST_CASE("Executor: values shared, overridden, requested twice; copies and moves run") {
  Graph g;
  g.inputs.push_back({"x", DType::float32, true, {2}, {""}});
  g.outputs.push_back({"s", DType::float32, false, {}, {}});
  g.outputs.push_back({"t", DType::float32, false, {}, {}});
  g.initializers["k"] = f32({2}, {1.0f, -3.0f});
  g.nodes.push_back({"Add", "", "a", {"x", "k"}, {"y"}, {}, "m.onnx"});
  g.nodes.push_back({"Relu", "", "r", {"y"}, {"s"}, {}, "m.onnx"});  // y read twice: freed after t
  g.nodes.push_back({"Identity", "", "n", {"y"}, {"t"}, {}, "m.onnx"});
  const Tensor x = f32({2}, {2.0f, 1.0f});
  const qk::Executor<> ex(g);
  auto out = ex.run({{"x", x}});
  CHECK(out.size() == 2);
  check_floats(out.at("s"), {2}, {3.0f, 0.0f});
  check_floats(out.at("t"), {2}, {3.0f, -2.0f});
  CHECK(out.at("t").name() == "t");

  // a fed initializer replaces the stored one
  out = ex.run({{"x", x}, {"k", f32({2}, {-5.0f, 5.0f})}});
  check_floats(out.at("s"), {2}, {0.0f, 6.0f});

  // inputs and initializers requested as outputs are copies; a name requested twice is one entry
  qk::RunOptions o;
  o.outputs = {"k", "x", "y", "y"};
  out = ex.run({{"x", x}}, o);
  CHECK(out.size() == 3);
  check_floats(out.at("k"), {2}, {1.0f, -3.0f});
  check_floats(out.at("x"), {2}, {2.0f, 1.0f});
  check_floats(out.at("y"), {2}, {3.0f, -2.0f});
  // only what "y" needs runs: no Relu, no Identity
  int calls = 0;
  o.on_node = [&](const Node& n, const std::vector<const Tensor*>& in, const std::vector<Tensor>&) {
    ++calls;
    CHECK(n.name == "a");
    CHECK(in.size() == 2);
  };
  (void)ex.run({{"x", x}}, o);
  CHECK(calls == 1);
  // every value with keep_intermediates, the shared one included
  qk::RunOptions all;
  all.keep_intermediates = true;
  out = ex.run({{"x", x}}, all);
  CHECK(out.size() == 3);
  check_floats(out.at("y"), {2}, {3.0f, -2.0f});

  qk::RunOptions unknown;
  unknown.outputs = {"s", "nope"};
  CHECK(contains(error_of([&] { ex.run({{"x", x}}, unknown); }),
                 "requested value 'nope' is not produced by any node, input or initializer"));
  CHECK(contains(error_of([&] { ex.run({{"x", x}, {"y", x}}); }), "fed value 'y' is not a graph input or initializer"));

  // a copy and a moved-to executor hold their own graph: the same results
  const qk::Executor<> copy = ex;
  qk::Executor<> moved_from(g);
  const qk::Executor<> moved = std::move(moved_from);
  for (const qk::Executor<>* e : {&copy, &moved}) {
    out = e->run({{"x", x}, {"k", f32({2}, {0.0f, 0.0f})}});
    check_floats(out.at("s"), {2}, {2.0f, 1.0f});
    out = e->run({{"x", x}});
    check_floats(out.at("t"), {2}, {3.0f, -2.0f});
  }
}

TEST_CASE("Executor: tensor storage reused from run to run (graph::BufferPool)") {
  // x -> Relu -> LeakyRelu -> Relu -> z, 4096 floats: every run makes three 16 KiB tensors
  Graph g;
  g.inputs.push_back({"x", DType::float32, true, {4096}, {""}});
  g.outputs.push_back({"z", DType::float32, false, {}, {}});
  g.nodes.push_back({"Relu", "", "r1", {"x"}, {"a"}, {}, "m.onnx"});
  g.nodes.push_back({"LeakyRelu", "", "l", {"a"}, {"b"}, {}, "m.onnx"});
  g.nodes.push_back({"Relu", "", "r2", {"b"}, {"z"}, {}, "m.onnx"});
  std::vector<float> xv(4096);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 7) - 3.0f;
  const Tensor x = f32({4096}, xv);
  std::vector<float> want(4096);
  for (std::size_t i = 0; i < xv.size(); ++i) want[i] = std::max(xv[i], 0.0f);
  std::map<std::string, Tensor> late;
  {
    const qk::Executor<> ex(g);
    const qk::graph::BufferPool& pool = ex.buffer_pool();
    CHECK(pool.reused_blocks() == 0);
    auto out = ex.run({{"x", x}});
    check_floats(out.at("z"), {4096}, want);
    // a went back to the pool when b was made, and z took its block; b is back now, z with us
    constexpr std::size_t bytes = 4096 * sizeof(float);
    CHECK(pool.reused_blocks() == 1);
    CHECK(pool.peak_bytes() == 2 * bytes);
    CHECK(pool.cached_bytes() == bytes);
    out.clear();  // z comes back too: two blocks kept, the most ever out at once
    CHECK(pool.cached_bytes() == 2 * bytes);
    for (int r = 0; r < 3; ++r) {
      out = ex.run({{"x", x}});
      check_floats(out.at("z"), {4096}, want);
    }
    CHECK(pool.reused_blocks() >= 7);  // at least two blocks of every later run came from the pool
    CHECK(pool.cached_bytes() <= pool.peak_bytes());
    // a block freed on another thread goes back all the same
    const std::size_t cached = pool.cached_bytes();
    Tensor moved = std::move(out.at("z"));
    std::thread([t = std::move(moved)]() mutable { t = Tensor(); }).join();
    CHECK(pool.cached_bytes() == std::min(cached + bytes, pool.peak_bytes()));
    // a copy of the executor shares the pool
    const qk::Executor<> copy = ex;
    const std::size_t before = pool.reused_blocks();
    late = copy.run({{"x", x}});
    CHECK(&copy.buffer_pool() == &pool);
    CHECK(pool.reused_blocks() > before);
  }
  // outputs outlive the executors: their blocks are freed when they go (ASan checks the rest)
  check_floats(late.at("z"), {4096}, want);
  late.clear();

  // The pool alone: exact sizes reused, scopes nest and restore, no pool outside a scope.
  auto pool = qk::graph::BufferPool::create();
  {
    const qk::graph::ScopedBufferPool scope(pool.get());
    { Tensor t(DType::float32, Dims{100}); }
    CHECK(pool->cached_bytes() == 400);
    {
      const qk::graph::ScopedBufferPool none(nullptr);  // plain storage inside
      Tensor t(DType::float32, Dims{100});
    }
    CHECK(pool->reused_blocks() == 0);
    CHECK(pool->cached_bytes() == 400);
    Tensor same(DType::float32, Dims{100});  // zero-filled even from a reused block
    CHECK(pool->reused_blocks() == 1);
    CHECK(same.to_vector<float>() == std::vector<float>(100, 0.0f));
    Tensor other(DType::int8, Dims{400});  // the same bytes: reused across element types
    Tensor larger(DType::float32, Dims{101});
    CHECK(pool->reused_blocks() == 1);
    CHECK(pool->peak_bytes() == 400 + 400 + 408);  // storage is whole 8-byte words
  }
  CHECK(pool->cached_bytes() == 400 + 400 + 408);
  { Tensor t(DType::float32, Dims{100}); }  // outside the scope: not from the pool
  CHECK(pool->reused_blocks() == 1);
}

TEST_CASE("Executor: chosen outputs, intermediates, callback, input checks, unknown op") {
  Graph g;
  g.inputs.push_back({"x", DType::float32, true, {2}, {""}});
  g.outputs.push_back({"z", DType::float32, false, {}, {}});
  g.nodes.push_back({"Relu", "", "r", {"x"}, {"y"}, {}, "m.onnx"});
  g.nodes.push_back({"Sigmoid", "", "s", {"y"}, {"z"}, {}, "m.onnx"});
  g.nodes.push_back({"Tanh", "", "t", {"x"}, {"unused"}, {}, "m.onnx"});
  qk::Executor<> ex(g);
  const Tensor x = f32({2}, {-1.0f, 2.0f});
  int calls = 0;
  qk::RunOptions opt;
  opt.on_node = [&](const Node&, const std::vector<const Tensor*>&, const std::vector<Tensor>&) { ++calls; };
  auto out = ex.run({{"x", x}}, opt);
  CHECK(calls == 2);  // Tanh is not needed for z
  CHECK(out.size() == 1);
  check_floats(out.at("z"), {2}, {0.5f, 1.0f / (1.0f + std::exp(-2.0f))});

  opt.outputs = {"y", "unused"};
  opt.keep_intermediates = true;
  calls = 0;
  out = ex.run({{"x", x}}, opt);
  CHECK(calls == 2);  // Relu and Tanh
  check_floats(out.at("y"), {2}, {0.0f, 2.0f});
  check_floats(out.at("unused"), {2}, {std::tanh(-1.0f), std::tanh(2.0f)});

  // Inputs as user tensors (here views of std::vector through the span adapter).
  std::vector<float> user = {3.0f, -4.0f};
  const std::map<std::string, qk::View<const float>> user_inputs = {{"x", qk::with_shape(user, Dims{2})}};
  check_floats(ex.run(user_inputs).at("z"), {2}, {1.0f / (1.0f + std::exp(-3.0f)), 0.5f});

  CHECK(contains(error_of([&] { ex.run({}); }), "input 'x' is needed but was not given"));
  CHECK(contains(error_of([&] { ex.run({{"x", f32({3}, {1, 2, 3})}}); }), "input 'x' has shape [3]; expected [2]"));
  CHECK(contains(error_of([&] { ex.run({{"x", i64({2}, {1, 2})}}); }), "element type int64; expected float32"));

  Graph bad = g;
  bad.nodes[1].op_type = "Frobnicate";
  const std::string e = error_of([&] { qk::Executor<> x2(bad); });
  CHECK(contains(e, "node 's' (op Frobnicate, file 'm.onnx'): unsupported op 'Frobnicate'"));

  // An attribute the implementation does not understand (here opset 21's block_size) is an
  // error, never silently ignored.
  Graph newer = g;
  newer.nodes[0].attributes["block_size"] = Attribute::make_int(32);
  CHECK(contains(error_of([&] { qk::Executor<> x3(newer); }),
                 "node 'r' (op Relu, file 'm.onnx'): attribute 'block_size' is not supported by Relu; expected only: consumed_inputs"));
}

TEST_CASE("Add Sub Mul Div: broadcasting, integer wrap and truncation") {
  check_floats(run1("Add", {f32({2, 3}, iota(6)), f32({3}, {10, 20, 30})}), {2, 3}, {11, 22, 33, 14, 25, 36});
  check_floats(run1("Sub", {f32({2, 1}, {1, 2}), f32({1, 3}, {1, 2, 3})}), {2, 3}, {0, -1, -2, 1, 0, -1});
  check_floats(run1("Mul", {f32({}, {2}), f32({2}, {3, 4})}), {2}, {6, 8});
  check_floats(run1("Div", {f32({2}, {1, 3}), f32({2}, {2, 4})}), {2}, {0.5f, 0.75f});
  CHECK(run1("Add", {tensor<std::uint8_t>({1}, {250}), tensor<std::uint8_t>({1}, {10})}).data<std::uint8_t>()[0] == 4);
  CHECK(run1("Div", {tensor<std::int32_t>({1}, {-7}), tensor<std::int32_t>({1}, {2})}).data<std::int32_t>()[0] == -3);
  CHECK(contains(error_of([] { run1("Div", {tensor<std::int32_t>({1}, {1}), tensor<std::int32_t>({1}, {0})}); }),
                 "node 'n0' (op Div): integer division by zero"));
  CHECK(contains(error_of([] { run1("Add", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}); }), "cannot be broadcast"));
  CHECK(contains(error_of([] { run1("Add", {f32({1}, {1}), i64({1}, {1})}); }), "expected the same type"));
}

TEST_CASE("Relu Clip LeakyRelu Sigmoid Tanh Identity Dropout") {
  check_floats(run1("Relu", {f32({3}, {-1, 0, 2})}), {3}, {0, 0, 2});
  {  // NaN, -0, denormals, infinities: v < 0 gives +0, anything else (NaN, -0) keeps its bits —
     // what ONNX Runtime 1.30 and PyTorch's relu give (checked with both on these values)
    const float d = std::numeric_limits<float>::denorm_min();
    const std::vector<float> x{std::nanf(""), -0.0f, d, -d, INFINITY, -INFINITY, 3.5f, -2.0f};
    const std::vector<float> got = run1("Relu", {f32({8}, x)}).to_vector<float>();
    const std::vector<float> want{std::nanf(""), -0.0f, d, 0.0f, INFINITY, 0.0f, 3.5f, 0.0f};
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(std::memcmp(&got[i], &want[i], 4) == 0);
  }
  check_floats(run1("LeakyRelu", {f32({2}, {-2, 3})}, {{"alpha", F(0.5f)}}), {2}, {-1, 3});
  check_floats(run1("LeakyRelu", {f32({1}, {-1})}), {1}, {-0.01f});
  check_floats(run1("Sigmoid", {f32({3}, {0, -100, 100})}), {3}, {0.5f, 0.0f, 1.0f});
  check_floats(run1("Tanh", {f32({1}, {0.5f})}), {1}, {std::tanh(0.5f)});
  // Clip: inputs (opset 11+) and attributes (opset 6); omitted bounds are unbounded.
  check_floats(run1("Clip", {f32({4}, {-3, -1, 1, 3}), f32({}, {-2}), f32({}, {2})}), {4}, {-2, -1, 1, 2});
  check_floats(run1("Clip", {f32({2}, {-3, 3}), Tensor(), f32({}, {2})}), {2}, {-3, 2});
  check_floats(run1("Clip", {f32({2}, {-3, 3})}, {{"min", F(-1)}, {"max", F(1)}}, 6), {2}, {-1, 1});
  CHECK(run1("Clip", {tensor<std::int8_t>({2}, {-100, 100}), tensor<std::int8_t>({}, {-5}), tensor<std::int8_t>({}, {5})})
            .to_vector<std::int8_t>() == std::vector<std::int8_t>{-5, 5});
  check_floats(run1("Identity", {f32({2}, {1, 2})}), {2}, {1, 2});
  auto d = run_op("Dropout", {f32({2}, {1, 2})}, {}, 13, 2);
  check_floats(d[0], {2}, {1, 2});
  CHECK(d[1].dtype() == DType::boolean);
  CHECK(d[1].data<bool>()[0]);
  CHECK(contains(error_of([] { run_op("Dropout", {f32({1}, {1}), f32({}, {0.5f}), tensor<bool>({}, {true})}, {}, 13, 1); }),
                 "random dropout"));
}

// The float ops run their elements in blocks of 8 plus a plain tail (ops/float_loops.hpp):
// every length from 0 to past two blocks, and special values in every lane position, give
// exactly the per-element formula's bits.
TEST_CASE("float elementwise ops: blocked loops equal the per-element formula at every length") {
  const float d = std::numeric_limits<float>::denorm_min();
  const std::vector<float> special{std::nanf(""), -0.0f, 0.0f, d, -d, INFINITY, -INFINITY, 3.5f, -2.25f,
                                   1e-30f, -7.0f, 0.1f, 65504.0f, -1e30f, 2.0f, -0.5f, 5.0f};
  // got equals want (or, where given, the fused multiply-add's result) bit for bit
  const auto same_bits_or = [](const std::vector<float>& got, const std::vector<float>& want,
                               const std::vector<float>& fused) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("element " << i << ": got " << got[i] << ", expected " << want[i] << " (fused: " << fused[i] << ")");
      CHECK((std::memcmp(&got[i], &want[i], 4) == 0 || std::memcmp(&got[i], &fused[i], 4) == 0));
    }
  };
  const auto same_bits = [&](const std::vector<float>& got, const std::vector<float>& want) {
    same_bits_or(got, want, want);
  };
  for (std::int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 23, 37}) {
    INFO("length " << n);
    std::vector<float> x(static_cast<std::size_t>(n)), y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = special[(i * 5 + static_cast<std::size_t>(n)) % special.size()];  // each value in varying lanes
      y[i] = special[(i * 3 + 1) % special.size()] * 0.75f;
    }
    const Dims shape{n};
    const auto each = [&](float (*f)(float)) {
      std::vector<float> r;
      for (float v : x) r.push_back(f(v));
      return r;
    };
    const auto pairwise = [&](float (*f)(float, float)) {
      std::vector<float> r;
      for (std::size_t i = 0; i < x.size(); ++i) r.push_back(f(x[i], y[i]));
      return r;
    };
    same_bits(run1("Relu", {f32(shape, x)}).to_vector<float>(), each([](float v) { return v < 0.0f ? 0.0f : v; }));
    same_bits(run1("Clip", {f32(shape, x), f32({}, {-3.0f}), f32({}, {4.0f})}).to_vector<float>(),
              each([](float v) { return v < -3.0f ? -3.0f : (v > 4.0f ? 4.0f : v); }));  // NaN stays NaN
    same_bits(run1("LeakyRelu", {f32(shape, x)}, {{"alpha", F(0.25f)}}).to_vector<float>(),
              each([](float v) { return v >= 0.0f ? v : v * 0.25f; }));
    same_bits(run1("Add", {f32(shape, x), f32(shape, y)}).to_vector<float>(), pairwise([](float a, float b) { return a + b; }));
    same_bits(run1("Sub", {f32(shape, x), f32(shape, y)}).to_vector<float>(), pairwise([](float a, float b) { return a - b; }));
    same_bits(run1("Mul", {f32(shape, x), f32(shape, y)}).to_vector<float>(), pairwise([](float a, float b) { return a * b; }));
    same_bits(run1("Div", {f32(shape, x), f32(shape, y)}).to_vector<float>(), pairwise([](float a, float b) { return a / b; }));
    // BatchNormalization over [1, 2, n]: (x - mean) / sqrt(var + eps) * scale + B per channel.
    {
      std::vector<float> two(x);
      two.insert(two.end(), y.begin(), y.end());
      const std::vector<float> got =
          run1("BatchNormalization", {f32({1, 2, n}, two), f32({2}, {1.5f, -0.5f}), f32({2}, {0.25f, 3.0f}),
                                      f32({2}, {0.5f, -1.0f}), f32({2}, {2.0f, 0.3f})})
              .to_vector<float>();
      // Rounded per operation; a build that fuses multiply-adds (FMA targets) may fuse the last two.
      std::vector<float> want, fused;
      const float scale[2] = {1.5f, -0.5f}, b[2] = {0.25f, 3.0f}, mean[2] = {0.5f, -1.0f};
      const float sd[2] = {std::sqrt(2.0f + 1e-5f), std::sqrt(0.3f + 1e-5f)};
      for (int c = 0; c < 2; ++c)
        for (float v : (c == 0 ? x : y)) {
          const float t = (v - mean[c]) / sd[c];
          want.push_back(qk::detail::no_contract(t * scale[c]) + b[c]);
          fused.push_back(std::fma(t, scale[c], b[c]));
        }
      same_bits_or(got, want, fused);
    }
    // Conv bias: 1x1 convolution of [1, 1, 1, n] into 2 channels, then + bias per channel.
    if (n > 0) {
      const std::vector<float> got =
          run1("Conv", {f32({1, 1, 1, n}, y), f32({2, 1, 1, 1}, {1.0f, -2.0f}), f32({2}, {0.5f, -1.25f})})
              .to_vector<float>();
      std::vector<float> want;  // the product, then the bias in a pass of its own: never fused
      for (float v : y) want.push_back(qk::detail::no_contract(v * 1.0f) + 0.5f);
      for (float v : y) want.push_back(qk::detail::no_contract(v * -2.0f) + -1.25f);
      same_bits(got, want);
    }
    // Gemm alpha and beta: [1 x 1] * [1 x n] * alpha + beta * C.
    if (n > 0) {
      const std::vector<float> got = run1("Gemm", {f32({1, 1}, {2.0f}), f32({1, n}, y), f32({1, n}, x)},
                                          {{"alpha", F(0.5f)}, {"beta", F(3.0f)}})
                                         .to_vector<float>();
      std::vector<float> want, fused;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const float p = (0.0f + qk::detail::no_contract(2.0f * y[i])) * 0.5f;  // the product sums from +0
        want.push_back(p + qk::detail::no_contract(3.0f * x[i]));
        fused.push_back(std::fma(3.0f, x[i], p));
      }
      same_bits_or(got, want, fused);
    }
  }
}

TEST_CASE("Conv: 2-D, pads and strides, bias, depthwise, 1-D dilated, 3-D, auto_pad") {
  const Tensor x = f32({1, 1, 3, 3}, iota(9));
  const Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  check_floats(run1("Conv", {x, w}), {1, 1, 2, 2}, {12, 16, 24, 28});
  check_floats(run1("Conv", {x, w, f32({1}, {1})}), {1, 1, 2, 2}, {13, 17, 25, 29});
  check_floats(run1("Conv", {x, w}, {{"pads", Is({1, 1, 1, 1})}, {"strides", Is({2, 2})}}), {1, 1, 2, 2}, {1, 5, 11, 28});
  // Depthwise: 2 channels, group 2.
  check_floats(run1("Conv", {f32({1, 2, 1, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 1, 1, 2}, {1, 1, 1, -1})}, {{"group", I(2)}}),
               {1, 2, 1, 2}, {3, 5, -1, -1});
  // 1-D with dilation 2: taps x[i] and x[i+2].
  check_floats(run1("Conv", {f32({1, 1, 5}, iota(5)), f32({1, 1, 2}, {1, 10})}, {{"dilations", Is({2})}}), {1, 1, 3},
               {31, 42, 53});
  check_floats(run1("Conv", {f32({1, 1, 2, 2, 2}, iota(8)), f32({1, 1, 2, 2, 2}, std::vector<float>(8, 1.0f))}),
               {1, 1, 1, 1, 1}, {36});
  const Tensor x1 = f32({1, 1, 4}, iota(4)), w1 = f32({1, 1, 2}, {1, 1});
  check_floats(run1("Conv", {x1, w1}, {{"auto_pad", S("SAME_UPPER")}}), {1, 1, 4}, {3, 5, 7, 4});
  check_floats(run1("Conv", {x1, w1}, {{"auto_pad", S("SAME_LOWER")}}), {1, 1, 4}, {1, 3, 5, 7});
  check_floats(run1("Conv", {x1, w1}, {{"auto_pad", S("VALID")}, {"strides", Is({2})}}), {1, 1, 2}, {3, 7});
  // An extent of 0 under SAME padding has no outputs: an empty result for a batch of images
  // (the images-together path divided by the output size: SIGFPE), grouped or not.
  for (const std::int64_t group : {1, 2}) {
    Attrs za{{"auto_pad", S("SAME_UPPER")}, {"group", I(group)}};
    const Tensor z = run1("Conv", {f32({2, 2, 0, 4}, {}), f32({2, 2 / group, 3, 3}, std::vector<float>(static_cast<std::size_t>(36 / group), 1.0f))}, za);
    CHECK(z.shape() == Dims{2, 2, 0, 4});
    CHECK(z.size() == 0);
  }
  // Errors name the node.
  CHECK(contains(error_of([&] { run1("Conv", {x, f32({1, 2, 2, 2}, std::vector<float>(8, 1.0f))}); }),
                 "node 'n0' (op Conv): input has 1 channels but weight [1, 2, 2, 2]"));
  CHECK(contains(error_of([&] { run1("Conv", {x, f32({1, 1, 4, 4}, std::vector<float>(16, 1.0f))}); }),
                 "larger than the padded input"));
  CHECK(contains(error_of([&] { run1("Conv", {x, w}, {{"auto_pad", S("SAME")}}); }), "attribute 'auto_pad' is 'SAME'"));
}

TEST_CASE("MaxPool, AveragePool (count_include_pad, ceil_mode), global pools") {
  auto mp = run_op("MaxPool", {f32({1, 1, 4, 4}, iota(16))}, {{"kernel_shape", Is({2, 2})}, {"strides", Is({2, 2})}}, 17, 2);
  check_floats(mp[0], {1, 1, 2, 2}, {6, 8, 14, 16});
  CHECK(mp[1].to_vector<std::int64_t>() == std::vector<std::int64_t>{5, 7, 13, 15});
  const Tensor x = f32({1, 1, 3, 3}, iota(9));
  Attrs a = {{"kernel_shape", Is({2, 2})}, {"pads", Is({1, 1, 1, 1})}, {"strides", Is({2, 2})}};
  check_floats(run1("AveragePool", {x}, a), {1, 1, 2, 2}, {1, 2.5f, 5.5f, 7});
  a["count_include_pad"] = I(1);
  check_floats(run1("AveragePool", {x}, a), {1, 1, 2, 2}, {0.25f, 1.25f, 2.75f, 7});
  const Tensor x5 = f32({1, 1, 5}, iota(5));
  Attrs c = {{"kernel_shape", Is({2})}, {"strides", Is({2})}, {"ceil_mode", I(1)}};
  check_floats(run1("MaxPool", {x5}, c), {1, 1, 3}, {2, 4, 5});
  check_floats(run1("AveragePool", {x5}, c), {1, 1, 3}, {1.5f, 3.5f, 5});
  c.erase("ceil_mode");
  check_floats(run1("MaxPool", {x5}, c), {1, 1, 2}, {2, 4});
  check_floats(run1("GlobalAveragePool", {f32({1, 2, 2}, {1, 2, 3, 5})}), {1, 2, 1}, {1.5f, 4});
  check_floats(run1("GlobalMaxPool", {f32({1, 2, 2}, {1, 2, 3, 5})}), {1, 2, 1}, {2, 5});
  CHECK(contains(error_of([&] { run1("MaxPool", {x}); }), "attribute 'kernel_shape' is missing"));
  // A spatial extent of 0 leaves a global pool no values: an error naming the node, as ONNX
  // Runtime refuses it ("Only N can be zero"; the average was NaN, the max -inf); no images or
  // no channels: an empty output.
  for (const std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    CAPTURE(op);
    for (const Dims& zero : {Dims{2, 3, 0, 4}, Dims{1, 1, 4, 0}, Dims{1, 2, 0}}) {
      CHECK(contains(error_of([&] { run1(op, {f32(zero, {})}); }),
                     "node 'n0' (op " + op + "): input shape " + zero.to_string() + " has a spatial extent of 0"));
    }
    CHECK(run1(op, {f32({0, 3, 4, 4}, {})}).shape() == Dims{0, 3, 1, 1});
    CHECK(run1(op, {f32({2, 0, 4, 4}, {})}).shape() == Dims{2, 0, 1, 1});
    CHECK(run1(op, {f32({0, 3, 0, 4}, {})}).shape() == Dims{0, 3, 1, 1});
  }
  // QLinearGlobalAveragePool (com.microsoft): the same refusal, not the "scale out of range" of
  // a division by the 0 values
  const auto qgap = [&](const Dims& shape) {
    const std::vector<Tensor> in = {
        tensor<std::uint8_t>(shape, std::vector<std::uint8_t>(static_cast<std::size_t>(shape.product()), 7)),
        f32({}, {0.5f}), tensor<std::uint8_t>({}, {1}), f32({}, {0.25f}), tensor<std::uint8_t>({}, {2})};
    Graph g = one_node("QLinearGlobalAveragePool", in, {}, 17, 1);
    g.nodes[0].domain = "com.microsoft";
    g.opsets["com.microsoft"] = 1;
    qk::Executor<> ex(g);
    std::map<std::string, Tensor> feed;
    for (std::size_t i = 0; i < in.size(); ++i) feed["in" + std::to_string(i)] = in[i];
    return ex.run(feed).at("out0");
  };
  CHECK(contains(error_of([&] { qgap({1, 2, 0, 3}); }),
                 "node 'n0' (op com.microsoft::QLinearGlobalAveragePool): image size 0 (a spatial extent of 0)"));
  // (7 - 1) * 4 values * 0.5 / (0.25 * 4) = 12, + 2
  CHECK(qgap({1, 2, 2, 2}).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{14, 14});
  CHECK(qgap({0, 2, 2, 2}).shape() == Dims{0, 2, 1, 1});
}

// The window ops' direct definitions, one output at a time with a bounds check per tap: what
// the executor's im2col (copies from a padded plane) and pools (tap ranges, 2x2 fast paths) must equal.
namespace {

struct Window {
  int s = 0;  // spatial dimensions
  std::vector<std::int64_t> in, k, stride, dil, pb, pe;
};

Window random_window(std::mt19937& rng, int s) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Window w;
  w.s = s;
  for (int i = 0; i < s; ++i) {
    w.in.push_back(pick(1, s == 3 ? 5 : 11));
    w.k.push_back(pick(1, 4));
    w.stride.push_back(pick(1, 3));
    w.dil.push_back(pick(1, 2));
    w.pb.push_back(pick(0, 2));
    w.pe.push_back(pick(0, 2));
  }
  return w;
}

Attrs window_attrs(const Window& w) {
  std::vector<std::int64_t> pads = w.pb;
  pads.insert(pads.end(), w.pe.begin(), w.pe.end());
  return {{"kernel_shape", Is(w.k)}, {"strides", Is(w.stride)}, {"dilations", Is(w.dil)}, {"pads", Is(pads)}};
}

// Calls f(taps) for every output position (row-major over `out`) with the window's taps:
// (flat input offset or -1 outside the input, inside the padded input, column-major offset).
template <class F>
void for_each_output(const Window& w, const std::vector<std::int64_t>& out, F f) {
  std::vector<std::int64_t> o(out.size(), 0);
  std::int64_t total = 1;
  for (auto e : out) total *= e;
  for (std::int64_t n = 0; n < total; ++n) {
    std::vector<std::tuple<std::int64_t, bool, std::int64_t>> taps;
    std::vector<std::int64_t> kk(static_cast<std::size_t>(w.s), 0);
    std::int64_t ktotal = 1;
    for (auto e : w.k) ktotal *= e;
    for (std::int64_t t = 0; t < ktotal; ++t) {
      std::int64_t at = 0, at_cm = 0;
      bool inside = true, padded = true;
      for (int d = 0; d < w.s; ++d) {
        const std::int64_t c = o[d] * w.stride[d] - w.pb[d] + kk[d] * w.dil[d];
        inside = inside && c >= 0 && c < w.in[d];
        padded = padded && c < w.in[d] + w.pe[d];
        at = at * w.in[d] + c;
        const int r = w.s - 1 - d;
        at_cm = at_cm * w.in[r] + (o[r] * w.stride[r] - w.pb[r] + kk[r] * w.dil[r]);
      }
      taps.emplace_back(inside ? at : -1, padded, at_cm);
      for (int d = w.s - 1; d >= 0 && ++kk[d] == w.k[d]; --d) kk[d] = 0;
    }
    f(taps);
    for (int d = w.s - 1; d >= 0 && ++o[d] == out[d]; --d) o[d] = 0;
  }
}

}  // namespace

TEST_CASE("im2col, MaxPool, AveragePool: random 1-D to 3-D windows equal the direct definitions bit for bit") {
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  int pools = 0, blocks = 0, large = 0, unpadded = 0, short_rows = 0, fixed_rows = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int s = 1 + trial % 3;
    Window w = random_window(rng, s);
    if (trial % 4 == 1)  // "same" rows (unit strides, pads adding up to the window's reach)
      for (int i = std::max(0, s - 2); i < s; ++i) {
        const std::int64_t reach = (w.k[i] - 1) * w.dil[i];
        w.stride[i] = 1;
        w.pb[i] = std::uniform_int_distribution<std::int64_t>(0, reach)(rng);
        w.pe[i] = reach - w.pb[i];
      }
    if (trial % 8 == 3) {  // a kernel one wide, unit strides, no padding along the width
      w.k.back() = 1, w.pb.back() = w.pe.back() = 0;
      for (int i = std::max(0, s - 2); i < s; ++i) w.stride[i] = 1;
    }
    if (trial % 12 == 4) {  // a padded plane over 1024 values (off the stack buffer)
      w.in[0] = 20 + trial % 5, w.in[1] = 62 + trial % 7;  // rows past 64 floats: one memcpy
      w.pb[0] = 1;
    }
    if (trial % 12 == 7)  // no padding: the windows read the input in place
      std::fill(w.pb.begin(), w.pb.end(), 0), std::fill(w.pe.begin(), w.pe.end(), 0);
    // im2col of 2 channels into rows ld apart (ld > P: the padding between rows stays untouched)
    qk::ops::WindowGeometry g;
    g.spatial = s;
    bool fits = true;
    for (int i = 0; i < s; ++i) {
      const int d = qk::ops::max_spatial - s + i;
      g.in[d] = w.in[i], g.kernel[d] = w.k[i], g.stride[d] = w.stride[i], g.dilation[d] = w.dil[i];
      g.pad_begin[d] = w.pb[i], g.pad_end[d] = w.pe[i];
      const std::int64_t span = w.in[i] + w.pb[i] + w.pe[i] - ((w.k[i] - 1) * w.dil[i] + 1);
      fits = fits && span >= 0;
      g.out[d] = span < 0 ? 0 : span / w.stride[i] + 1;
    }
    if (!fits) continue;
    std::vector<std::int64_t> out(g.out.begin() + (qk::ops::max_spatial - s), g.out.end());
    const std::int64_t C = 2, in_size = g.in_size(), P = g.out_size(), K = g.kernel_size(), ld = P + 3;
    std::vector<float> x(static_cast<std::size_t>(C * in_size));
    for (auto& v : x) v = u(rng);
    const auto columns = [&](const std::vector<float>& xv, float pad) {
      std::vector<float> r(static_cast<std::size_t>(C * K * ld), 99.0f);
      for (std::int64_t c = 0; c < C; ++c) {
        std::int64_t p = 0;
        for_each_output(w, out, [&](const std::vector<std::tuple<std::int64_t, bool, std::int64_t>>& taps) {
          for (std::size_t t = 0; t < taps.size(); ++t) {
            const std::int64_t at = std::get<0>(taps[t]);
            r[static_cast<std::size_t>((c * K + static_cast<std::int64_t>(t)) * ld + p)] =
                at < 0 ? pad : xv[static_cast<std::size_t>(c * in_size + at)];
          }
          ++p;
        });
      }
      return r;
    };
    const std::vector<float> want = columns(x, -7.0f);
    std::vector<float> col(want.size(), 99.0f);
    qk::ops::im2col(x.data(), C, g, -7.0f, col.data(), ld);
    CHECK_MESSAGE(col == want, "im2col, trial " << trial);
    {  // the same columns of bytes (the integer mode's im2col: 1-byte rows, other fixed copies)
      std::vector<float> xv(x.size());
      for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 29 + 3) % 251);
      const std::vector<float> wf = columns(xv, 7.0f);
      const std::vector<std::uint8_t> xb(xv.begin(), xv.end()), wantb(wf.begin(), wf.end());
      std::vector<std::uint8_t> colb(wantb.size(), 99);
      qk::ops::im2col(xb.data(), C, g, std::uint8_t{7}, colb.data(), ld);
      CHECK_MESSAGE(colb == wantb, "im2col of bytes, trial " << trial);
    }
    // im2col's list of short-row copies (stride 1 across, rows of at most 64 bytes, not one
    // copy per tap): 8-, 16- and 32-byte rows are fixed-size moves
    const std::int64_t OW = g.out[2], PW = g.in[2] + g.pad_begin[2] + g.pad_end[2];
    const bool one_copy_per_tap = g.stride[2] == 1 && g.stride[1] == 1 && OW == PW;
    if (g.stride[2] == 1 && !one_copy_per_tap && OW <= 16 && K * g.out[0] * g.out[1] <= 256) {
      ++short_rows;
      fixed_rows += OW == 2 || OW == 4 || OW == 8 ? 1 : 0;
    }
    // Depthwise Conv (group 2, 2 outputs per channel; 1-D and 2-D take the direct loop, 3-D
    // and a NaN weight the column matrix): gemm_f32's sums over the zero-padded columns.
    {
      std::vector<float> cw(static_cast<std::size_t>(4 * K));
      for (auto& v : cw) v = u(rng);
      if (trial % 5 == 0) cw[0] = std::nanf("");
      std::vector<float> zero_col = want, wy(static_cast<std::size_t>(4 * P));
      for (auto& v : zero_col) v = v == -7.0f ? 0.0f : v;
      for (std::int64_t gi = 0; gi < 2; ++gi)
        quantkit::ref::gemm_f32(2, static_cast<std::size_t>(P), static_cast<std::size_t>(K), cw.data() + gi * 2 * K, K, 1,
                                zero_col.data() + gi * K * ld, ld, 1, wy.data() + gi * 2 * P, static_cast<std::size_t>(P));
      std::vector<std::int64_t> xs{1, 2}, ws{4, 1};
      xs.insert(xs.end(), w.in.begin(), w.in.end());
      ws.insert(ws.end(), w.k.begin(), w.k.end());
      Attrs ca = window_attrs(w);
      ca["group"] = I(2);
      const std::vector<float> got = run1("Conv", {f32(Dims::from(xs.begin(), xs.end()), x), f32(Dims::from(ws.begin(), ws.end()), cw)}, ca).to_vector<float>();
      REQUIRE(got.size() == wy.size());
      bool same = true;
      for (std::size_t i = 0; i < got.size(); ++i) same = same && std::memcmp(&got[i], &wy[i], sizeof(float)) == 0;
      CHECK_MESSAGE(same, "depthwise Conv, trial " << trial);
    }
    // output rows as wide as the padded input's with unit strides: a tap's rows are one copy
    blocks += w.stride.back() == 1 && (s < 2 || w.stride[s - 2] == 1) && out.back() == w.in.back() + w.pb.back() + w.pe.back() ? 1 : 0;
    std::int64_t padded_size = 1, pads = 0;
    for (int i = 0; i < s; ++i) padded_size *= w.in[i] + w.pb[i] + w.pe[i], pads += w.pb[i] + w.pe[i];
    large += pads > 0 && padded_size > 1024 ? 1 : 0;
    unpadded += pads == 0 ? 1 : 0;

    // The pools, on 2 planes with NaNs (a NaN counts only as a window's first tap) and ties.
    std::vector<float> xp(static_cast<std::size_t>(2 * in_size));
    for (auto& v : xp) v = std::round(u(rng));
    for (std::size_t i = 0; i < xp.size(); i += 7) xp[i] = std::nanf("");
    std::vector<std::int64_t> shape{1, 2};
    shape.insert(shape.end(), w.in.begin(), w.in.end());
    const Tensor xt = f32(Dims::from(shape.begin(), shape.end()), xp);
    Attrs a = window_attrs(w);
    const Tensor mp1 = run1("MaxPool", {xt}, a);
    const bool column_major = trial % 4 >= 2;  // Indices in storage_order 1
    if (column_major) a["storage_order"] = I(1);
    const std::vector<Tensor> mp = run_op("MaxPool", {xt}, a, 17, 2);
    a.erase("storage_order");
    a["count_include_pad"] = I(trial % 2);
    const Tensor ap = run1("AveragePool", {xt}, a);
    std::vector<float> want_max, want_avg;
    std::vector<std::int64_t> want_idx;
    for (std::int64_t pl = 0; pl < 2; ++pl)
      for_each_output(w, out, [&](const std::vector<std::tuple<std::int64_t, bool, std::int64_t>>& taps) {
        float best = -INFINITY;
        double sum = 0.0;
        std::int64_t best_at = -1, inside = 0, padded = 0;
        for (const auto& t : taps) {
          padded += std::get<1>(t) ? 1 : 0;
          const std::int64_t at = std::get<0>(t);
          if (at < 0) continue;
          const float v = xp[static_cast<std::size_t>(pl * in_size + at)];
          if (best_at < 0 || v > best) best = v, best_at = column_major ? std::get<2>(t) : at;
          sum += v;
          ++inside;
        }
        want_max.push_back(best);
        want_idx.push_back(pl * in_size + best_at);
        const std::int64_t count = trial % 2 ? padded : inside;
        want_avg.push_back(count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f);
      });
    const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
      return true;
    };
    CHECK_MESSAGE(same(mp[0].to_vector<float>(), want_max), "MaxPool, trial " << trial);
    CHECK_MESSAGE(same(mp1.to_vector<float>(), want_max), "MaxPool without Indices, trial " << trial);
    CHECK_MESSAGE(mp[1].to_vector<std::int64_t>() == want_idx, "MaxPool Indices, trial " << trial);
    CHECK_MESSAGE(same(ap.to_vector<float>(), want_avg), "AveragePool, trial " << trial);
    ++pools;
  }
  CHECK(pools > 150);
  CHECK(blocks > 20);
  CHECK(large > 10);
  CHECK(unpadded > 20);
  CHECK(short_rows > 40);
  CHECK(fixed_rows > 10);
  // 2x2 stride 2 (the fast paths) on 2 x 3 x 6 x 8, with a NaN as a window's first, second and
  // last tap and tied signed zeros: the general loop's values (it runs when Indices are wanted).
  std::vector<float> x(2 * 3 * 6 * 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i * 37 % 11) - 5);
  x[0] = std::nanf("");                  // first tap of window (0, 0)
  x[3] = std::nanf("");                  // second tap of window (0, 1): ignored
  x[8 + 5] = std::nanf("");              // last tap of window (0, 2)
  x[16] = -0.0f, x[17] = 0.0f, x[24] = 0.0f, x[25] = 0.0f;  // window (1, 0): -0 first, then tied +0s
  const Tensor xt = f32({2, 3, 6, 8}, x);
  const Tensor fast = run1("MaxPool", {xt}, {{"kernel_shape", Is({2, 2})}, {"strides", Is({2, 2})}});
  const Tensor general = run_op("MaxPool", {xt}, {{"kernel_shape", Is({2, 2})}, {"strides", Is({2, 2})}}, 17, 2)[0];
  const std::vector<float> f = fast.to_vector<float>(), gv = general.to_vector<float>();
  REQUIRE(f.size() == gv.size());
  CHECK(std::isnan(f[0]));
  CHECK(f[1] == 3.0f);  // x[2], x[10], x[11] = 3, 2, -5 with the NaN x[3] skipped
  CHECK(f[2] == 4.0f);  // x[4], x[5], x[12] = 0, 4, -1 with the NaN x[13] skipped
  for (std::size_t i = 0; i < f.size(); ++i)
    CHECK_MESSAGE(std::memcmp(&f[i], &gv[i], sizeof(float)) == 0, "output " << i << ": " << f[i] << " vs " << gv[i]);
  CHECK(std::signbit(f[4]));  // -0 came first among the tied zeros
  const Tensor avg = run1("AveragePool", {xt}, {{"kernel_shape", Is({2, 2})}, {"strides", Is({2, 2})}});
  const std::vector<float> av = avg.to_vector<float>();
  CHECK(av[5] == static_cast<float>((static_cast<double>(x[2 * 8 + 2]) + x[2 * 8 + 3] + x[3 * 8 + 2] + x[3 * 8 + 3]) / 4.0));
  CHECK(std::isnan(av[0]));
}

TEST_CASE("Gemm and MatMul") {
  const Tensor a = f32({2, 3}, iota(6)), b = f32({2, 3}, {1, 0, 1, 0, 1, 0});
  check_floats(run1("Gemm", {a, b, f32({2}, {1, 2})}, {{"transB", I(1)}, {"alpha", F(2)}, {"beta", F(0.5f)}}), {2, 2},
               {8.5f, 5, 20.5f, 11});
  check_floats(run1("Gemm", {f32({3, 2}, {1, 4, 2, 5, 3, 6}), b}, {{"transA", I(1)}, {"transB", I(1)}}), {2, 2}, {4, 2, 10, 5});
  check_floats(run1("MatMul", {f32({2, 1, 3}, iota(6)), f32({3}, {1, 1, 1})}), {2, 1}, {6, 15});
  check_floats(run1("MatMul", {f32({3}, {1, 2, 3}), f32({3, 1}, {1, 1, 1})}), {1}, {6});
  check_floats(run1("MatMul", {f32({2, 1, 2}, {1, 2, 3, 4}), f32({2, 1}, {1, 10})}), {2, 1, 1}, {21, 43});
  // K = 0: the outputs are not zero-filled before the products (Tensor::uninitialized), which
  // must then write zeros themselves; a freed tensor of -1s of the output's size first (the
  // allocator hands that block out again), so that leftover values would show.
  const auto junk = [](int n) { (void)Tensor::from_vector(Dims{n}, std::vector<float>(static_cast<std::size_t>(n), -1.0f)); };
  for (int round = 0; round < 3; ++round) {
    junk(6);
    check_floats(run1("MatMul", {f32({2, 0}, {}), f32({0, 3}, {})}), {2, 3}, std::vector<float>(6, 0.0f), 0.0f);
    junk(40);
    check_floats(run1("MatMul", {f32({2, 4, 0}, {}), f32({0, 5}, {})}), {2, 4, 5}, std::vector<float>(40, 0.0f), 0.0f);
    junk(6);
    check_floats(run1("Gemm", {f32({2, 0}, {}), f32({3, 0}, {})}, {{"transB", I(1)}}), {2, 3}, std::vector<float>(6, 0.0f), 0.0f);
    junk(6);
    check_floats(run1("Gemm", {f32({2, 0}, {}), f32({0, 3}, {}), f32({3}, {1, 2, 3})}), {2, 3}, {1, 2, 3, 1, 2, 3}, 0.0f);
  }
  CHECK(contains(error_of([&] { run1("MatMul", {a, a}); }), "inner dimensions differ"));
  CHECK(contains(error_of([&] { run1("Gemm", {a, a}); }), "expected equal K"));
}

TEST_CASE("Gemm, MatMul and Conv: the reference's sums, the same for a row at any batch size") {
  // The float products are quantkit::simd::gemm_f32: every output is ref::gemm_f32's value
  // (products and sums rounded in order), so a sample's outputs do not depend on the batch it
  // is in (a BLAS's matrix-vector and matrix-matrix paths differ in the last bit).
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const auto rnd = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = std::ldexp(u(rng), static_cast<int>(n % 7) - 3);
    return v;
  };
  const std::int64_t B = 5, K = 37, N = 19;
  const std::vector<float> x = rnd(B * K), w = rnd(N * K);
  const Tensor wt = f32({N, K}, w);
  const Tensor all = run1("Gemm", {f32({B, K}, x), wt}, {{"transB", I(1)}});
  std::vector<float> want(static_cast<std::size_t>(B * N));
  quantkit::ref::gemm_f32(B, N, K, x.data(), K, 1, w.data(), 1, K, want.data(), N);
  CHECK(all.to_vector<float>() == want);
  std::vector<float> w_kn(static_cast<std::size_t>(K * N));  // w transposed, for MatMul
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t j = 0; j < N; ++j) w_kn[k * N + j] = w[j * K + k];
  for (std::int64_t r = 0; r < B; ++r) {
    const std::vector<float> row(x.begin() + r * K, x.begin() + (r + 1) * K);
    const std::vector<float> one = run1("Gemm", {f32({1, K}, row), wt}, {{"transB", I(1)}}).to_vector<float>();
    const std::vector<float> mm = run1("MatMul", {f32({K}, row), f32({K, N}, w_kn)}).to_vector<float>();
    const std::vector<float> part(want.begin() + r * N, want.begin() + (r + 1) * N);
    CHECK(one == part);
    CHECK(mm == part);
  }
  // No input channels (K = 0 products), a batch of 2: zeros plus the bias.
  check_floats(run1("Conv", {f32({2, 0, 3, 3}, {}), f32({2, 0, 2, 2}, {}), f32({2}, {1, -2})}), {2, 2, 2, 2},
               {1, 1, 1, 1, -2, -2, -2, -2, 1, 1, 1, 1, -2, -2, -2, -2}, 0.0f);
  // Conv: each image's outputs alone and in a batch of 3.
  const std::vector<float> img = rnd(3 * 4 * 6 * 6), cw = rnd(5 * 4 * 3 * 3);
  const Tensor cwt = f32({5, 4, 3, 3}, cw);
  const Attrs pads = {{"pads", Is({1, 1, 1, 1})}};
  const std::vector<float> batch = run1("Conv", {f32({3, 4, 6, 6}, img), cwt}, pads).to_vector<float>();
  for (std::size_t n = 0; n < 3; ++n) {
    const std::vector<float> one(img.begin() + n * 144, img.begin() + (n + 1) * 144);
    const std::vector<float> y = run1("Conv", {f32({1, 4, 6, 6}, one), cwt}, pads).to_vector<float>();
    CHECK(y == std::vector<float>(batch.begin() + n * 180, batch.begin() + (n + 1) * 180));
  }
}

TEST_CASE("Gemm with a constant weight: packed once when the executor is built, the same sums") {
  // prepare_gemm packs B (either transB) in gemm_f32's panels; outputs must be the reference's
  // bit for bit at every batch size, as with B fed at run time (then the fed value is used, not
  // the packed copy), on kernels of another panel width than the packing's (B read as given),
  // and without the prepare step.
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const auto rnd = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    return v;
  };
  const std::int64_t K = 70, N = 33;
  for (const bool tb : {true, false}) {
    CAPTURE(tb);
    const std::vector<float> w = rnd(N * K), w2 = rnd(N * K), bias = rnd(N);
    const Dims wdims = tb ? Dims{N, K} : Dims{K, N};
    const std::ptrdiff_t b_row = tb ? 1 : N, b_col = tb ? K : 1;  // element (k, j) of B
    Graph g;
    g.opset = 13;
    g.inputs.push_back({"x", DType::float32, true, {-1, K}, {"batch", ""}});
    g.outputs.push_back({"y", DType::float32, false, {}, {}});
    g.initializers["W"] = f32(wdims, w);
    g.initializers["bias"] = f32({N}, bias);
    g.nodes.push_back({"Gemm", "", "fc", {"x", "W", "bias"}, {"y"}, {{"transB", I(tb ? 1 : 0)}, {"alpha", F(0.75f)}}, ""});
    const qk::Executor<> ex(g);

    // The registry's prepare for Gemm: B as simd::gemm_f32_pack_b packs it, [panels, K, width];
    // nothing for a non-constant B.
    const qk::OpRegistry::Entry* e = qk::builtin_ops().find_entry("", "Gemm");
    REQUIRE(e);
    REQUIRE(static_cast<bool>(e->prepare));
    const Tensor& wt = g.initializers.at("W");
    const std::vector<Tensor> p = e->prepare(g.nodes[0], {nullptr, &wt, nullptr});
    REQUIRE(p.size() == 1);
    const std::int64_t nr = static_cast<std::int64_t>(qk::simd::gemm_f32_panel_width());
    CHECK(p[0].shape() == Dims{(N + nr - 1) / nr, K, nr});
    std::vector<float> packed(qk::simd::gemm_f32_packed_size(K, N));
    qk::simd::gemm_f32_pack_b(K, N, w.data(), static_cast<std::size_t>(tb ? K : N), tb, packed.data());
    CHECK(p[0].to_vector<float>() == packed);
    CHECK(p[0].data<float>()[5 * nr + 2] == w[static_cast<std::size_t>(5 * b_row + 2 * b_col)]);  // B[5][2]
    CHECK(e->prepare(g.nodes[0], {nullptr, nullptr, nullptr}).empty());

    for (const std::int64_t M : {1, 2, 3, 8, 9, 40}) {
      CAPTURE(M);
      const std::vector<float> x = rnd(M * K);
      const auto want = [&](const std::vector<float>& wv) {
        std::vector<float> r(static_cast<std::size_t>(M * N));
        quantkit::ref::gemm_f32(M, N, K, x.data(), K, 1, wv.data(), b_row, b_col, r.data(), N);
        for (std::int64_t i = 0; i < M * N; ++i) r[i] = r[i] * 0.75f + bias[i % N];
        return r;
      };
      CHECK(ex.run({{"x", f32({M, K}, x)}}).at("y").to_vector<float>() == want(w));
      // a fed weight replaces the stored one and its packed copy
      CHECK(ex.run({{"x", f32({M, K}, x)}, {"W", f32(wdims, w2)}}).at("y").to_vector<float>() == want(w2));
      CHECK(ex.run({{"x", f32({M, K}, x)}, {"W", f32(wdims, w)}}).at("y").to_vector<float>() == want(w));
      // every target's kernels, whatever width B was packed for
      for (const qk::simd::Kernels* k : qk::simd::available_kernels()) {
        CAPTURE(k->name);
        hwy::SetSupportedTargetsForTest(k->target);
        CHECK(ex.run({{"x", f32({M, K}, x)}}).at("y").to_vector<float>() == want(w));
      }
      hwy::SetSupportedTargetsForTest(0);
    }
    // Without the prepare step (a registry that drops it): the same outputs.
    qk::OpRegistry lean = qk::make_builtin_registry();
    lean.set_prepare("Gemm", nullptr);
    const qk::Executor<> ex_lean(g, lean);
    const std::vector<float> x = rnd(3 * K);
    CHECK(ex_lean.run({{"x", f32({3, K}, x)}}).at("y").to_vector<float>() ==
          ex.run({{"x", f32({3, K}, x)}}).at("y").to_vector<float>());
    CHECK(contains(error_of([&] { lean.set_prepare("NoSuchOp", nullptr); }),
                   "set_prepare: op 'NoSuchOp' is not registered; expected one of:"));
  }
}

TEST_CASE("MatMul with a constant 2-D weight: packed once, every batch of A the reference's sums") {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const auto rnd = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = std::ldexp(u(rng), static_cast<int>(n % 5) - 2);
    return v;
  };
  const std::int64_t K = 45, N = 37;
  const std::vector<float> w = rnd(K * N), w2 = rnd(K * N);
  Graph g;
  g.opset = 13;
  g.inputs.push_back({"x", DType::float32, false, {}, {}});
  g.outputs.push_back({"y", DType::float32, false, {}, {}});
  g.initializers["W"] = f32({K, N}, w);
  g.nodes.push_back({"MatMul", "", "mm", {"x", "W"}, {"y"}, {}, ""});
  const qk::Executor<> ex(g);
  const qk::OpRegistry::Entry* e = qk::builtin_ops().find_entry("", "MatMul");
  REQUIRE(e);
  REQUIRE(static_cast<bool>(e->prepare));
  const Tensor& wt = g.initializers.at("W");
  const std::vector<Tensor> p = e->prepare(g.nodes[0], {nullptr, &wt});
  REQUIRE(p.size() == 1);
  const std::int64_t nr = static_cast<std::int64_t>(qk::simd::gemm_f32_panel_width());
  CHECK(p[0].shape() == Dims{(N + nr - 1) / nr, K, nr});
  const Tensor w3 = f32({2, K, N}, rnd(2 * K * N));
  CHECK(e->prepare(g.nodes[0], {nullptr, &w3}).empty());  // a batch of Bs: multiplied as given

  for (const Dims& xd : {Dims{K}, Dims{1, K}, Dims{9, K}, Dims{2, 3, K}, Dims{3, 1, 7, K}}) {
    CAPTURE(xd.to_string());
    const std::int64_t rows = xd.product() / K;
    const std::vector<float> x = rnd(static_cast<std::size_t>(xd.product()));
    const auto want = [&](const std::vector<float>& wv) {
      std::vector<float> r(static_cast<std::size_t>(rows * N));
      quantkit::ref::gemm_f32(rows, N, K, x.data(), K, 1, wv.data(), N, 1, r.data(), N);
      return r;
    };
    const Tensor y = ex.run({{"x", f32(xd, x)}}).at("y");
    Dims yd = xd;  // [..., K] -> [..., N] (a vector A: [N])
    yd[xd.rank - 1] = N;
    CHECK(y.shape() == yd);
    CHECK(y.to_vector<float>() == want(w));
    CHECK(ex.run({{"x", f32(xd, x)}, {"W", f32({K, N}, w2)}}).at("y").to_vector<float>() == want(w2));
    for (const qk::simd::Kernels* k : qk::simd::available_kernels()) {
      CAPTURE(k->name);
      hwy::SetSupportedTargetsForTest(k->target);
      CHECK(ex.run({{"x", f32(xd, x)}}).at("y").to_vector<float>() == want(w));
    }
    hwy::SetSupportedTargetsForTest(0);
  }
}

namespace {
// A user op with a prepare step: the output says whether the prepared value reached the op.
std::vector<Tensor> prepare_sum(const Node&, const std::vector<const Tensor*>& constants) {
  if (constants.size() < 2 || !constants[1]) return {};
  float s = 0.0f;
  for (float v : constants[1]->to_vector<float>()) s += v;
  if (s < 0.0f) throw qk::Error("negative sum " + std::to_string(s) + "; expected >= 0");
  std::vector<Tensor> r;
  r.push_back(f32({1}, {s}));
  return r;
}
void op_add_sum(qk::OpContext& ctx) {  // x + sum(k), from the prepared sum when there is one
  Tensor y = ctx.input(0, DType::float32);
  float s = -1000.0f;  // marks "not prepared"
  if (const std::vector<Tensor>* p = ctx.prepared()) s = p->front().data<float>()[0];
  for (std::int64_t i = 0; i < y.size(); ++i) y.data<float>()[i] += s;
  ctx.set_output(0, std::move(y));
}
}  // namespace

TEST_CASE("Executor: an op's prepare runs once over its initializers; fed initializers bypass it") {
  qk::OpRegistry r = qk::make_builtin_registry();
  r.add("AddSum", op_add_sum, {}, {}, "com.example");
  r.set_prepare("AddSum", prepare_sum, "com.example");
  Graph g;
  g.inputs.push_back({"x", DType::float32, false, {}, {}});
  g.outputs.push_back({"y", DType::float32, false, {}, {}});
  g.initializers["k"] = f32({3}, {1.0f, 2.0f, 3.5f});
  g.nodes.push_back({"AddSum", "com.example", "s", {"x", "k"}, {"y"}, {}, "m.onnx"});
  const qk::Executor<> ex(g, r);
  check_floats(ex.run({{"x", f32({2}, {0.0f, 1.0f})}}).at("y"), {2}, {6.5f, 7.5f});
  check_floats(ex.run({{"x", f32({2}, {0.0f, 1.0f})}, {"k", f32({1}, {2.0f})}}).at("y"), {2}, {-1000.0f, -999.0f});
  const qk::Executor<> copy = ex;
  check_floats(copy.run({{"x", f32({1}, {0.5f})}}).at("y"), {1}, {7.0f});
  // the input is a graph input, not an initializer: nothing to prepare
  Graph fed = g;
  fed.initializers.clear();
  fed.inputs.push_back({"k", DType::float32, false, {}, {}});
  const qk::Executor<> ex_fed(fed, r);
  check_floats(ex_fed.run({{"x", f32({1}, {0.0f})}, {"k", f32({1}, {4.0f})}}).at("y"), {1}, {-1000.0f});
  // an error in prepare names the node
  g.initializers["k"] = f32({1}, {-2.0f});
  const std::string err = error_of([&] { qk::Executor<> bad(g, r); });
  CHECK(contains(err, "node 's' (op com.example::AddSum, file 'm.onnx'): negative sum"));
  CHECK(contains(err, "negative sum -2"));
}

TEST_CASE("Softmax (opset 11 coerces to 2-D, opset 13 one axis), ReduceMean, BatchNormalization") {
  const float l3 = std::log(3.0f);
  check_floats(run1("Softmax", {f32({1, 2}, {0, l3})}), {1, 2}, {0.25f, 0.75f});
  const Tensor x = f32({1, 2, 2}, {0, 0, 0, l3});
  check_floats(run1("Softmax", {x}, {}, 11), {1, 2, 2}, {1.0f / 6, 1.0f / 6, 1.0f / 6, 0.5f});
  check_floats(run1("Softmax", {x}, {}, 13), {1, 2, 2}, {0.5f, 0.5f, 0.25f, 0.75f});
  const Tensor r = f32({2, 3}, iota(6));
  check_floats(run1("ReduceMean", {r}, {{"axes", Is({1})}, {"keepdims", I(0)}}), {2}, {2, 5});
  check_floats(run1("ReduceMean", {r}, {{"axes", Is({-2})}}), {1, 3}, {2.5f, 3.5f, 4.5f});
  check_floats(run1("ReduceMean", {r}), {1, 1}, {3.5f});
  const Tensor bx = f32({1, 2, 2}, {1, 3, 10, 20});
  check_floats(run1("BatchNormalization", {bx, f32({2}, {2, 1}), f32({2}, {0, 1}), f32({2}, {2, 15}), f32({2}, {1, 25})},
                    {{"epsilon", F(0.0f)}}),
               {1, 2, 2}, {-2, 2, 0, 2});
  CHECK(contains(error_of([&] {
                   run1("BatchNormalization", {bx, f32({3}, {1, 1, 1}), f32({2}, {0, 1}), f32({2}, {2, 15}), f32({2}, {1, 25})});
                 }),
                 "input 'scale' has shape [3]; expected [2]"));
}

TEST_CASE("Shape ops: Reshape Flatten Squeeze Unsqueeze Transpose Concat Pad Constant") {
  const Tensor x = f32({2, 3}, iota(6));
  CHECK(run1("Reshape", {x, i64({2}, {0, -1})}).shape() == Dims{2, 3});
  CHECK(run1("Reshape", {x, i64({2}, {3, -1})}).shape() == Dims{3, 2});
  CHECK(contains(error_of([&] { run1("Reshape", {x, i64({2}, {-1, -1})}); }), "more than one -1"));
  CHECK(contains(error_of([&] { run1("Reshape", {x, i64({1}, {4})}); }), "cannot reshape [2, 3]"));
  CHECK(run1("Flatten", {f32({2, 3, 4}, iota(24))}, {{"axis", I(2)}}).shape() == Dims{6, 4});
  CHECK(run1("Flatten", {f32({2, 3, 4}, iota(24))}, {{"axis", I(0)}}).shape() == Dims{1, 24});
  CHECK(run1("Squeeze", {f32({1, 3, 1}, iota(3))}, {{"axes", Is({0})}}, 11).shape() == Dims{3, 1});
  CHECK(run1("Squeeze", {f32({1, 3, 1}, iota(3)), i64({1}, {-1})}, {}, 13).shape() == Dims{1, 3});
  CHECK(run1("Squeeze", {f32({1, 3, 1}, iota(3))}, {}, 13).shape() == Dims{3});
  CHECK(contains(error_of([] { run1("Squeeze", {f32({2}, iota(2)), i64({1}, {0})}); }), "extent is not 1"));
  CHECK(run1("Unsqueeze", {f32({3}, iota(3)), i64({2}, {0, -1})}, {}, 13).shape() == Dims{1, 3, 1});
  CHECK(run1("Unsqueeze", {f32({3}, iota(3))}, {{"axes", Is({1})}}, 11).shape() == Dims{3, 1});
  check_floats(run1("Transpose", {x}), {3, 2}, {1, 4, 2, 5, 3, 6});
  check_floats(run1("Transpose", {f32({1, 2, 3}, iota(6))}, {{"perm", Is({2, 0, 1})}}), {3, 1, 2}, {1, 4, 2, 5, 3, 6});
  CHECK(contains(error_of([&] { run1("Transpose", {x}, {{"perm", Is({0, 0})}}); }), "not a permutation"));
  check_floats(run1("Concat", {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})}, {{"axis", I(1)}}), {2, 3}, {1, 3, 4, 2, 5, 6});
  check_floats(run1("Concat", {f32({1, 2}, {1, 2}), f32({1, 2}, {3, 4})}, {{"axis", I(-2)}}), {2, 2}, {1, 2, 3, 4});
  check_floats(run1("Concat", {f32({1, 1}, {1}), f32({1, 1}, {2})}, {}, 1), {1, 2}, {1, 2});  // Concat-1: axis 1
  CHECK(contains(error_of([] { run1("Concat", {f32({1, 1}, {1}), f32({1, 1}, {2})}); }), "attribute 'axis' is missing"));
  CHECK(contains(error_of([] { run1("Concat", {f32({1, 2}, {1, 2}), f32({1, 3}, {3, 4, 5})}, {{"axis", I(0)}}); }),
                 "except along axis 0"));
  const Tensor p = f32({3}, {1, 2, 3});
  check_floats(run1("Pad", {p, i64({2}, {2, 2})}, {{"mode", S("reflect")}}), {7}, {3, 2, 1, 2, 3, 2, 1});
  check_floats(run1("Pad", {p, i64({2}, {2, 1})}, {{"mode", S("edge")}}), {6}, {1, 1, 1, 2, 3, 3});
  check_floats(run1("Pad", {p, i64({2}, {1, -1}), f32({}, {9})}), {3}, {9, 1, 2});
  check_floats(run1("Pad", {p}, {{"pads", Is({0, 1})}, {"value", F(7)}}, 2), {4}, {1, 2, 3, 7});
  Attrs constant;
  constant["value"] = Attribute::make_tensor(i64({2}, {4, 5}));
  CHECK(run_op("Constant", {}, constant)[0].to_vector<std::int64_t>() == std::vector<std::int64_t>{4, 5});
  check_floats(run_op("Constant", {}, {{"value_float", F(1.5f)}})[0], {}, {1.5f});
}

TEST_CASE("QuantizeLinear / DequantizeLinear: half-even ties, saturation, per-axis") {
  const Tensor x = f32({5}, {0.5f, 1.5f, 2.5f, -1000, 1000});
  CHECK(run1("QuantizeLinear", {x, f32({}, {1}), tensor<std::uint8_t>({}, {128})}).to_vector<std::uint8_t>() ==
        std::vector<std::uint8_t>{128, 130, 130, 0, 255});
  CHECK(run1("QuantizeLinear", {x, f32({}, {1}), tensor<std::int8_t>({}, {0})}).to_vector<std::int8_t>() ==
        std::vector<std::int8_t>{0, 2, 2, -128, 127});
  CHECK(run1("QuantizeLinear", {x, f32({}, {1})}).dtype() == DType::uint8);  // no zero point: uint8
  CHECK(run1("QuantizeLinear", {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 2}), tensor<std::int8_t>({2}, {0, 1})})
            .to_vector<std::int8_t>() == std::vector<std::int8_t>{1, 2, 3, 3});
  check_floats(run1("DequantizeLinear", {tensor<std::uint8_t>({3}, {0, 128, 255}), f32({}, {0.5f}), tensor<std::uint8_t>({}, {128})}),
               {3}, {-64, 0, 63.5f});
  check_floats(run1("DequantizeLinear", {tensor<std::int8_t>({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 10}), tensor<std::int8_t>({2}, {0, 1})},
                    {{"axis", I(0)}}),
               {2, 2}, {1, 2, 20, 30});
  check_floats(run1("DequantizeLinear", {tensor<std::int32_t>({2}, {-3, 4}), f32({}, {0.5f})}), {2}, {-1.5f, 2});
  CHECK(contains(error_of([&] { run1("QuantizeLinear", {x, f32({}, {0})}); }), "node 'n0' (op QuantizeLinear)"));
  CHECK(contains(error_of([&] { run1("QuantizeLinear", {f32({2, 2}, {1, 2, 3, 4}), f32({3}, {1, 1, 1})}); }),
                 "expected one per index along the axis"));
}

TEST_CASE("QuantizeLinear / DequantizeLinear: 16-bit (uint16, int16), opset 21") {
  const Tensor x = f32({6}, {0.5f, 1.5f, -2.5f, -1e9f, 1e9f, 300.25f});
  CHECK(run1("QuantizeLinear", {x, f32({}, {0.25f}), tensor<std::uint16_t>({}, {32768})}, {}, 21).to_vector<std::uint16_t>() ==
        std::vector<std::uint16_t>{32770, 32774, 32758, 0, 65535, 33969});
  CHECK(run1("QuantizeLinear", {x, f32({}, {0.25f}), tensor<std::int16_t>({}, {-7})}, {}, 21).to_vector<std::int16_t>() ==
        std::vector<std::int16_t>{-5, -1, -17, -32768, 32767, 1194});
  CHECK(run1("QuantizeLinear", {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 2}), tensor<std::int16_t>({2}, {0, 300})}, {}, 21)
            .to_vector<std::int16_t>() == std::vector<std::int16_t>{1, 301, 3, 302});
  check_floats(run1("DequantizeLinear", {tensor<std::uint16_t>({3}, {0, 32768, 65535}), f32({}, {0.5f}),
                                         tensor<std::uint16_t>({}, {32768})}, {}, 21),
               {3}, {-16384, 0, 16383.5f});
  check_floats(run1("DequantizeLinear", {tensor<std::int16_t>({2, 2}, {-32768, 2, 3, 32767}), f32({2}, {1, 10}),
                                         tensor<std::int16_t>({2}, {0, 1})}, {{"axis", I(0)}}, 21),
               {2, 2}, {-32768, 2, 20, 327660});
  // The zero point's type is the output's: a uint16 zero point with an int8 input is an error.
  CHECK(contains(error_of([&] { run1("DequantizeLinear", {tensor<std::int8_t>({1}, {1}), f32({}, {1}), tensor<std::uint16_t>({}, {0})}, {}, 21); }),
                 "expected int8"));
}

TEST_CASE("DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv") {
  auto d = run_op("DynamicQuantizeLinear", {f32({4}, {-1, 0, 1, 2})}, {}, 17, 3);
  CHECK(d[0].to_vector<std::uint8_t>() == std::vector<std::uint8_t>{0, 85, 170, 255});
  CHECK(d[1].data<float>()[0] == 3.0f / 255.0f);
  CHECK(d[2].data<std::uint8_t>()[0] == 85);

  const Tensor mi = run1("MatMulInteger", {tensor<std::uint8_t>({2, 2}, {10, 20, 30, 40}), tensor<std::int8_t>({2, 1}, {1, 2}),
                                           tensor<std::uint8_t>({}, {10}), tensor<std::int8_t>({}, {1})});
  CHECK(mi.dtype() == DType::int32);
  CHECK(mi.to_vector<std::int32_t>() == std::vector<std::int32_t>{10, 30});
  // Per-row A zero points.
  CHECK(run1("MatMulInteger", {tensor<std::uint8_t>({2, 1}, {5, 5}), tensor<std::uint8_t>({1, 1}, {2}),
                               tensor<std::uint8_t>({2}, {1, 3})})
            .to_vector<std::int32_t>() == std::vector<std::int32_t>{8, 4});

  // ConvInteger: 1x1 kernel with pads: the padding contributes 0 after the zero point.
  const Tensor ci = run1("ConvInteger", {tensor<std::uint8_t>({1, 1, 2, 2}, {1, 2, 3, 4}), tensor<std::uint8_t>({1, 1, 1, 1}, {3}),
                                         tensor<std::uint8_t>({}, {1}), tensor<std::uint8_t>({}, {1})},
                         {{"pads", Is({1, 1, 1, 1})}});
  CHECK(ci.shape() == Dims{1, 1, 4, 4});
  CHECK(ci.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 0, 0, 0, 0, 0, 2, 0, 0, 4, 6, 0, 0, 0, 0, 0});

  // QLinearMatMul: acc = 2*2 + 4*4 = 20, * 0.5 * 0.25 / 1 = 2.5 -> 2 (half even) + zp.
  const Tensor q = run1("QLinearMatMul", {tensor<std::uint8_t>({1, 2}, {2, 4}), f32({}, {0.5f}), tensor<std::uint8_t>({}, {0}),
                                          tensor<std::uint8_t>({2, 1}, {3, 5}), f32({}, {0.25f}), tensor<std::uint8_t>({}, {1}),
                                          f32({}, {1}), tensor<std::uint8_t>({}, {10})});
  CHECK(q.to_vector<std::uint8_t>() == std::vector<std::uint8_t>{12});

  // QLinearConv with bias: acc = (x - 2) * 3 + 1 = [7, 13], * 0.5 = [3.5, 6.5] -> [4, 6].
  const Tensor qc = run1("QLinearConv", {tensor<std::uint8_t>({1, 1, 1, 2}, {4, 6}), f32({}, {0.5f}), tensor<std::uint8_t>({}, {2}),
                                         tensor<std::int8_t>({1, 1, 1, 1}, {3}), f32({1}, {1}), tensor<std::int8_t>({1}, {0}),
                                         f32({}, {1}), tensor<std::uint8_t>({}, {0}), tensor<std::int32_t>({1}, {1})});
  CHECK(qc.to_vector<std::uint8_t>() == std::vector<std::uint8_t>{4, 6});
  CHECK(contains(error_of([] {
                   run1("MatMulInteger", {f32({1, 1}, {1}), tensor<std::uint8_t>({1, 1}, {1})});
                 }),
                 "input A has element type float32; expected int8 or uint8"));
}

TEST_CASE("BatchNormalization folding into Conv and Gemm") {
  auto bn_inputs = [](Graph& g, const std::string& p) {
    g.initializers[p + "s"] = f32({2}, {1.5f, 2});
    g.initializers[p + "b"] = f32({2}, {0.5f, -1});
    g.initializers[p + "m"] = f32({2}, {1, 0.25f});
    g.initializers[p + "v"] = f32({2}, {3, 0.5f});
  };
  Graph g;
  g.inputs.push_back({"x", DType::float32, true, {1, 1, 2, 2}, {"", "", "", ""}});
  g.outputs.push_back({"y", DType::float32, false, {}, {}});
  g.initializers["w"] = f32({2, 1, 1, 1}, {2, -3});
  g.initializers["b"] = f32({2}, {1, 1});
  bn_inputs(g, "bn");
  g.nodes.push_back({"Conv", "", "conv", {"x", "w", "b"}, {"c"}, {}, ""});
  g.nodes.push_back({"BatchNormalization", "", "bn", {"c", "bns", "bnb", "bnm", "bnv"}, {"y"}, {}, ""});
  const Tensor x = f32({1, 1, 2, 2}, {1, -2, 3, 0.5f});
  const auto want = qk::Executor<>(g).run({{"x", x}}).at("y");
  Graph folded = g;
  const auto report = qk::passes::fold_batchnorm(folded);
  CHECK(report.folded.size() == 1);
  CHECK(folded.nodes.size() == 1);
  check_floats(qk::Executor<>(folded).run({{"x", x}}).at("y"), want.shape(), want.to_vector<float>(), 1e-5f);

  // Weights shared with another Conv are copied, never changed under the other node.
  Graph two = g;
  two.outputs.push_back({"other", DType::float32, false, {}, {}});
  two.nodes.push_back({"Conv", "", "conv2", {"x", "w"}, {"other"}, {}, ""});
  const auto want2 = qk::Executor<>(two).run({{"x", x}});
  CHECK(qk::passes::fold_batchnorm(two).folded.size() == 1);
  CHECK(two.initializers.at("w").to_vector<float>() == std::vector<float>{2, -3});
  CHECK(two.nodes[0].inputs[1] == "w_bnfolded");
  const auto got2 = qk::Executor<>(two).run({{"x", x}});
  check_floats(got2.at("y"), want2.at("y").shape(), want2.at("y").to_vector<float>(), 1e-5f);
  check_floats(got2.at("other"), want2.at("other").shape(), want2.at("other").to_vector<float>(), 0.0f);

  // A Conv output with a second user is not folded.
  Graph shared = g;
  shared.outputs.push_back({"c", DType::float32, false, {}, {}});
  const auto r2 = qk::passes::fold_batchnorm(shared);
  CHECK(r2.folded.empty());
  CHECK(r2.kept.size() == 1);

  // Gemm with transB and a vector C; and a Gemm without C.
  for (bool with_c : {true, false}) {
    Graph h;
    h.inputs.push_back({"a", DType::float32, true, {2, 3}, {"", ""}});
    h.outputs.push_back({"y", DType::float32, false, {}, {}});
    h.initializers["B"] = f32({2, 3}, {1, 0, -1, 2, 1, 0.5f});
    bn_inputs(h, "bn");
    Node gemm{"Gemm", "", "gemm", {"a", "B"}, {"g"}, {{"transB", I(1)}, {"beta", F(0.5f)}}, ""};
    if (with_c) {
      h.initializers["C"] = f32({2}, {0.25f, -4});
      gemm.inputs.push_back("C");
    }
    h.nodes.push_back(gemm);
    h.nodes.push_back({"BatchNormalization", "", "bn", {"g", "bns", "bnb", "bnm", "bnv"}, {"y"}, {}, ""});
    const Tensor a = f32({2, 3}, {1, 2, 3, -1, 0.5f, 2});
    const auto hw = qk::Executor<>(h).run({{"a", a}}).at("y");
    Graph hf = h;
    CHECK(qk::passes::fold_batchnorm(hf).folded.size() == 1);
    CHECK(hf.nodes.size() == 1);
    check_floats(qk::Executor<>(hf).run({{"a", a}}).at("y"), hw.shape(), hw.to_vector<float>(), 1e-5f);
  }
}

TEST_CASE("passes::infer_shapes: constants computed, symbolic batch kept symbolic, value-dependent shapes left open") {
  Graph g;
  g.inputs.push_back({"x", DType::float32, true, {-1, 1, 4, 4}, {"N", "", "", ""}});
  g.inputs.push_back({"s", DType::int64, true, {2}, {"", ""}});
  g.outputs.push_back({"y", DType::undefined, false, {}, {}});
  g.outputs.push_back({"r", DType::undefined, false, {}, {}});
  g.initializers["w"] = f32({3, 1, 3, 3}, std::vector<float>(27, 0.5f));
  g.initializers["shape"] = i64({2}, {0, -1});
  g.nodes.push_back({"Conv", "", "conv", {"x", "w"}, {"c"}, {{"pads", Is({1, 1, 1, 1})}}, ""});
  g.nodes.push_back({"Reshape", "", "flat", {"c", "shape"}, {"f"}, {}, ""});
  g.nodes.push_back({"Relu", "", "relu", {"f"}, {"y"}, {}, ""});
  g.nodes.push_back({"Reshape", "", "dyn", {"c", "s"}, {"r"}, {}, ""});  // shape fed at run time
  qk::passes::infer_shapes(g);
  REQUIRE(g.value_info.count("c"));
  CHECK(g.value_info.at("c").dims == std::vector<std::int64_t>{-1, 3, 4, 4});
  CHECK(g.value_info.at("f").dims == std::vector<std::int64_t>{-1, 48});
  CHECK(g.outputs[0].has_shape);
  CHECK(g.outputs[0].dtype == DType::float32);
  CHECK(g.outputs[0].dims == std::vector<std::int64_t>{-1, 48});
  CHECK(!g.outputs[1].has_shape);
  CHECK(!g.value_info.count("r"));
}

namespace {
// A user mode: its own registry (the built-ins plus a custom op), a graph rewrite, and
// fake-quantization of every float node output to a 0.5 grid (the shape a fake-quant mode has).
void op_double(qk::OpContext& ctx) {
  Tensor y = ctx.input(0, DType::float32);
  for (std::int64_t i = 0; i < y.size(); ++i) y.data<float>()[i] *= 2.0f;
  ctx.set_output(0, std::move(y));
}
struct HalfGridMode {
  qk::OpRegistry ops = [] {
    qk::OpRegistry r = qk::make_builtin_registry();
    r.add("Double", op_double, {}, {}, "com.example");
    return r;
  }();
  const qk::OpRegistry& registry() const { return ops; }
  void prepare(Graph& g) {  // Relu -> Double
    for (auto& n : g.nodes)
      if (n.op_type == "Relu") n.op_type = "Double", n.domain = "com.example";
  }
  void after_node(const Node&, std::vector<Tensor>& outputs) const {
    qk::QuantParams p;
    p.scale = {0.5f};
    p.zero_point = {0};
    p.range = {-128, 127};
    for (auto& t : outputs)
      if (t.dtype() == DType::float32) qk::ref::fake_quantize(t.view<float>(), p, t.view<float>());
  }
};
}  // namespace

TEST_CASE("Executor modes: registry, prepare and after_node hooks") {
  Graph g;
  g.inputs.push_back({"x", DType::float32, false, {}, {}});
  g.outputs.push_back({"y", DType::float32, false, {}, {}});
  g.nodes.push_back({"Relu", "", "r", {"x"}, {"h"}, {}, ""});
  g.nodes.push_back({"Sigmoid", "", "s", {"h"}, {"y"}, {}, ""});
  qk::Executor<HalfGridMode> ex(g);
  CHECK(ex.graph().nodes[0].op_type == "Double");
  qk::RunOptions o;
  o.keep_intermediates = true;
  const auto out = ex.run({{"x", f32({3}, {-0.3f, 0.2f, 1.1f})}}, o);
  check_floats(out.at("h"), {3}, {-0.5f, 0.5f, 2.0f});  // round_half_even(2x / 0.5) * 0.5
  check_floats(out.at("y"), {3}, {0.5f, 0.5f, 1.0f});   // sigmoid, then onto the 0.5 grid
  // The same graph in float mode does not know the custom op's domain.
  Graph custom = g;
  custom.nodes[0].op_type = "Double";
  custom.nodes[0].domain = "com.example";
  CHECK(contains(error_of([&] { qk::Executor<> f(custom); }), "unsupported op 'Double' in domain 'com.example'"));
}

}  // namespace test_graph_executor
