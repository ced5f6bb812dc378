// Whole-model inference, batch 256 (--qk_batch=N; 1 for latency: the GEMM benches keep 256
// rows), one thread: quantkit's IntegerMode (int8 QDQ graph run in integers) and float
// executor on (a) the demo CNN (examples/data/demo) and (b) a 3-layer MLP 1024 wide
// (1024 -> 1024 -> 1024 -> 1024, Gemm + Relu), and the int8 GEMM kernel alone at
// M = 256, K = N = 1024 (u8 x s8; and in float: quantkit::simd::gemm_f32, which the float
// executor runs, and Eigen at this build's flags; and ONNX Runtime's int16 pair sums of x86-64
// CPUs without VNNI: the pair-sum kernel against its plain loop, and each model's integer mode
// with --ort-no-vnni's emulation). ONNX Runtime runs the same models, written here:
//
//   build/bench/bench/bench_inference --qk_models=DIR [--qk_batch=N] [benchmark flags]
//       writes DIR/{cnn,mlp}.{float,qdq,qop}.onnx, DIR/gemm_u8s8.onnx (MatMulInteger, B a
//       constant), DIR/matmul_f32.onnx, the batch inputs (.npy) and DIR/manifest.json, then
//       times quantkit;
//   node tools/bench/ort_inference.mjs DIR/manifest.json ort_inference.json
//       times ONNX Runtime (intra-op 1 thread, graph optimizations on) on those files;
//   tools/bench/render_inference.py inference.md bench_inference.json ort_inference.json
//       the table of times and ratios (tools/bench/run_all.sh --inference does all three).
//
// Models: the demo CNN calibrated with min-max on digits_calib.npy (W8A8: int8 per-channel
// symmetric weights, uint8 affine activations); the MLP with weights drawn as PyTorch's
// nn.Linear initializes them (uniform +-1/sqrt(K), fixed seed), calibrated on 512 random
// inputs N(0, 1) (min-max, W8A8). Counters: samples/s (models), GOPS = 2 M N K / s (GEMM).
#define HWY_COMPILE_ALL_ATTAINABLE
#define HWY_WANT_AVX3_DL
#define QUANTKIT_SIMD_IMPLEMENTATION
#include <quantkit/simd/implementation.hpp>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <quantkit/executor.hpp>
#include <quantkit/executor/integer/mode.hpp>
#include <quantkit/io/npy.hpp>
#include <quantkit/onnx.hpp>
#include <quantkit/onnx/export_qdq.hpp>
#include <quantkit/onnx/export_qoperator.hpp>
#include <quantkit/ptq.hpp>
#include <quantkit/simd/gemm.hpp>
#include <quantkit/simd/gemm_f32.hpp>

namespace qk = quantkit;
using qk::graph::DType;
using qk::graph::Tensor;

namespace {

constexpr std::int64_t kGemmM = 256;  // GEMM rows (the GEMM benches; ORT's MatMul models)
std::int64_t g_batch = 256;          // samples per model run (--qk_batch)
constexpr std::int64_t kWidth = 1024;  // MLP width, GEMM K and N

// A small deterministic generator (the same numbers on every platform).
struct Lcg {
  std::uint64_t s;
  explicit Lcg(std::uint64_t seed) : s(seed) {}
  double uniform() {  // [0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) * (1.0 / 9007199254740992.0);
  }
  double normal() {  // Box-Muller
    const double u = uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(1.0 - u)) * std::cos(6.283185307179586 * v);
  }
};

Tensor random_normal(const qk::Dims& shape, std::uint64_t seed, const std::string& name) {
  Tensor t(DType::float32, shape, name);
  Lcg g(seed);
  for (std::int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = static_cast<float>(g.normal());
  return t;
}

// 1024 -> 1024 -> 1024 -> 1024: Gemm (transB = 1, as PyTorch exports nn.Linear) + Relu, twice,
// then a last Gemm. Weights and biases uniform in +-1/sqrt(K) (nn.Linear's initialization).
qk::graph::Graph make_mlp() {
  qk::graph::Graph g;
  g.name = "mlp_1024";
  g.opset = 13;
  g.opsets[""] = 13;
  qk::graph::ValueInfo in;
  in.name = "input";
  in.dtype = DType::float32;
  in.has_shape = true;
  in.dims = {qk::graph::unknown_dim, kWidth};
  in.dim_params = {"batch", ""};
  g.inputs.push_back(in);
  Lcg rng(20240611);
  const double bound = 1.0 / std::sqrt(static_cast<double>(kWidth));
  std::string x = "input";
  for (int layer = 1; layer <= 3; ++layer) {
    const std::string w = "fc" + std::to_string(layer) + ".weight", b = "fc" + std::to_string(layer) + ".bias";
    Tensor wt(DType::float32, qk::Dims{kWidth, kWidth}, w), bt(DType::float32, qk::Dims{kWidth}, b);
    for (std::int64_t i = 0; i < wt.size(); ++i) wt.data<float>()[i] = static_cast<float>((2 * rng.uniform() - 1) * bound);
    for (std::int64_t i = 0; i < bt.size(); ++i) bt.data<float>()[i] = static_cast<float>((2 * rng.uniform() - 1) * bound);
    g.initializers.emplace(w, std::move(wt));
    g.initializers.emplace(b, std::move(bt));
    qk::graph::Node gemm;
    gemm.op_type = "Gemm";
    gemm.name = "/fc" + std::to_string(layer) + "/Gemm";
    gemm.inputs = {x, w, b};
    gemm.outputs = {layer == 3 ? std::string("output") : gemm.name + "_output_0"};
    gemm.attributes["transB"] = qk::graph::Attribute::make_int(1);
    g.nodes.push_back(gemm);
    x = gemm.outputs[0];
    if (layer == 3) break;
    qk::graph::Node relu;
    relu.op_type = "Relu";
    relu.name = "/relu" + std::to_string(layer) + "/Relu";
    relu.inputs = {x};
    relu.outputs = {relu.name + "_output_0"};
    g.nodes.push_back(relu);
    x = relu.outputs[0];
  }
  qk::graph::ValueInfo out;
  out.name = "output";
  out.dtype = DType::float32;
  out.has_shape = true;
  out.dims = {qk::graph::unknown_dim, kWidth};
  out.dim_params = {"batch", ""};
  g.outputs.push_back(out);
  g.validate();
  return g;
}

// A one-node model: Y = MatMulInteger(A uint8 [M, K], B int8 [K, N] constant), or
// Y = MatMul(A float, B float constant).
qk::graph::Graph make_matmul(bool integer) {
  qk::graph::Graph g;
  g.name = integer ? "gemm_u8s8" : "matmul_f32";
  g.opset = 13;
  g.opsets[""] = 13;
  qk::graph::ValueInfo a;
  a.name = "A";
  a.dtype = integer ? DType::uint8 : DType::float32;
  a.has_shape = true;
  a.dims = {kGemmM, kWidth};
  g.inputs.push_back(a);
  Tensor b(integer ? DType::int8 : DType::float32, qk::Dims{kWidth, kWidth}, "B");
  Lcg rng(7);
  for (std::int64_t i = 0; i < b.size(); ++i) {
    if (integer) b.data<std::int8_t>()[i] = static_cast<std::int8_t>(static_cast<int>(rng.uniform() * 256) - 128);
    else b.data<float>()[i] = static_cast<float>(rng.normal());
  }
  g.initializers.emplace("B", std::move(b));
  qk::graph::Node n;
  n.op_type = integer ? "MatMulInteger" : "MatMul";
  n.name = n.op_type;
  n.inputs = {"A", "B"};
  n.outputs = {"Y"};
  g.nodes.push_back(n);
  qk::graph::ValueInfo y;
  y.name = "Y";
  y.dtype = integer ? DType::int32 : DType::float32;
  y.has_shape = true;
  y.dims = {kGemmM, kWidth};
  g.outputs.push_back(y);
  return g;
}

Tensor first_rows(const Tensor& x, std::int64_t rows) {
  if (rows > x.dim(0))
    throw qk::Error("--qk_batch=" + std::to_string(rows) + ": '" + x.name() + "' has " + std::to_string(x.dim(0)) +
                    " samples; expected a batch of at most that many");
  qk::Dims shape = x.shape();
  shape[0] = rows;
  Tensor out(x.dtype(), shape, x.name());
  std::memcpy(out.raw(), x.raw(), out.nbytes());
  return out;
}

Tensor load_npy(const std::string& path) {
  const qk::npy::Array a = qk::npy::load(path);
  return Tensor::from_vector<float>(a.shape, a.as<float>(path), path);
}

void save_npy(const std::string& path, const Tensor& t) {
  const qk::npy::DType dt = t.dtype() == DType::uint8 ? qk::npy::DType::u8 : qk::npy::DType::f32;
  qk::npy::save(path, dt, t.shape(), t.raw());
}

// One model as the benchmarks use it.
struct Model {
  std::string name;
  std::string input;     // graph input name
  Tensor x;              // batch of g_batch samples
  qk::graph::Graph float_graph;
  qk::graph::Graph qdq_graph;  // the written QDQ model, loaded back
  std::string float_path, qdq_path, qop_path, input_path;
};

struct Setup {
  std::string dir;
  std::vector<Model> models;
  std::string gemm_path, matmul_path, gemm_input_path, matmul_input_path;
};

Setup& setup() {
  static Setup s;
  return s;
}

void write_models(const std::string& dir) {
  Setup& s = setup();
  s.dir = dir;
  ::mkdir(dir.c_str(), 0755);
  const std::string demo = QUANTKIT_BENCH_DEMO_DIR;
  {  // (a) the demo CNN
    Model m;
    m.name = "cnn";
    m.input = "input";
    m.float_graph = qk::onnx::load(demo + "/digits_cnn.onnx");
    m.x = first_rows(load_npy(demo + "/digits_test_x.npy"), g_batch);
    qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(m.float_graph, qk::ptq::PtqConfig{});
    cal.observe(qk::ptq::split_batches("input", load_npy(demo + "/digits_calib.npy"), 64));
    const qk::ptq::QuantizedModel qm = cal.finish();
    m.float_path = dir + "/cnn.float.onnx";
    m.qdq_path = dir + "/cnn.qdq.onnx";
    m.qop_path = dir + "/cnn.qop.onnx";
    m.input_path = dir + "/cnn_input.npy";
    qk::onnx::save(m.float_graph, m.float_path);
    (void)qk::onnx::save_qdq(qm, m.qdq_path);
    (void)qk::onnx::save_qoperator(qm, m.qop_path);
    m.qdq_graph = qk::onnx::load(m.qdq_path);
    save_npy(m.input_path, m.x);
    s.models.push_back(std::move(m));
  }
  {  // (b) the MLP
    Model m;
    m.name = "mlp";
    m.input = "input";
    m.float_graph = make_mlp();
    m.x = random_normal(qk::Dims{g_batch, kWidth}, 99, "input");
    qk::ptq::GraphCalibrator<qk::MinMaxObserver> cal(m.float_graph, qk::ptq::PtqConfig{});
    cal.observe(qk::ptq::split_batches("input", random_normal(qk::Dims{512, kWidth}, 5, "calib"), 128));
    const qk::ptq::QuantizedModel qm = cal.finish();
    m.float_path = dir + "/mlp.float.onnx";
    m.qdq_path = dir + "/mlp.qdq.onnx";
    m.qop_path = dir + "/mlp.qop.onnx";
    m.input_path = dir + "/mlp_input.npy";
    qk::onnx::save(m.float_graph, m.float_path);
    (void)qk::onnx::save_qdq(qm, m.qdq_path);
    (void)qk::onnx::save_qoperator(qm, m.qop_path);
    m.qdq_graph = qk::onnx::load(m.qdq_path);
    save_npy(m.input_path, m.x);
    s.models.push_back(std::move(m));
  }
  {  // the GEMM alone
    s.gemm_path = dir + "/gemm_u8s8.onnx";
    s.matmul_path = dir + "/matmul_f32.onnx";
    s.gemm_input_path = dir + "/gemm_a.npy";
    s.matmul_input_path = dir + "/matmul_a.npy";
    qk::onnx::save(make_matmul(true), s.gemm_path);
    qk::onnx::save(make_matmul(false), s.matmul_path);
    Tensor a(DType::uint8, qk::Dims{kGemmM, kWidth}, "A");
    Lcg rng(1);
    for (std::int64_t i = 0; i < a.size(); ++i) a.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(rng.uniform() * 256);
    save_npy(s.gemm_input_path, a);
    save_npy(s.matmul_input_path, random_normal(qk::Dims{kGemmM, kWidth}, 3, "A"));
  }
  // The manifest the ONNX Runtime script reads.
  std::ostringstream js;
  js << "{\n \"batch\": " << g_batch << ",\n \"cases\": [\n";
  bool first = true;
  auto entry = [&](const std::string& bench, const std::string& model, const std::string& input,
                   const std::string& npy, double items, const std::string& counter) {
    js << (first ? "" : ",\n") << "  {\"bench\": \"" << bench << "\", \"model\": \"" << model << "\", \"input\": \""
       << input << "\", \"npy\": \"" << npy << "\", \"items\": " << items << ", \"counter\": \"" << counter << "\"}";
    first = false;
  };
  for (const Model& m : s.models) {
    entry("inference/" + m.name + "/ort_float", m.float_path, m.input, m.input_path, g_batch, "samples");
    entry("inference/" + m.name + "/ort_qdq", m.qdq_path, m.input, m.input_path, g_batch, "samples");
    entry("inference/" + m.name + "/ort_qoperator", m.qop_path, m.input, m.input_path, g_batch, "samples");
  }
  const double ops = 2.0 * kGemmM * kWidth * kWidth;
  entry("gemm/256x1024x1024/ort_matmulinteger_u8s8", s.gemm_path, "A", s.gemm_input_path, ops, "ops");
  entry("gemm/256x1024x1024/ort_matmul_f32", s.matmul_path, "A", s.matmul_input_path, ops, "ops");
  js << "\n ]\n}\n";
  const std::string manifest = dir + "/manifest.json";
  std::ofstream(manifest) << js.str();
}

void set_samples(benchmark::State& state) {
  state.counters["samples_per_s"] =
      benchmark::Counter(static_cast<double>(g_batch), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Float(benchmark::State& state, const Model* m) {
  const qk::Executor<> run(m->float_graph);
  const std::map<std::string, Tensor> feeds{{m->input, m->x}};
  for (auto _ : state) {
    auto out = run.run(feeds);
    benchmark::DoNotOptimize(out.begin()->second.raw());
  }
  set_samples(state);
}

void BM_Integer(benchmark::State& state, const Model* m, bool ort_no_vnni) {
  qk::IntegerModeOptions options;
  options.ort_pair_saturation = ort_no_vnni;  // ONNX Runtime's int16 pair sums (x86-64 without VNNI)
  const qk::Executor<qk::IntegerMode> run(m->qdq_graph, qk::IntegerMode(options));
  if (run.mode().integer_count() == 0) state.SkipWithError("no node runs in integers");
  const std::map<std::string, Tensor> feeds{{m->input, m->x}};
  for (auto _ : state) {
    auto out = run.run(feeds);
    benchmark::DoNotOptimize(out.begin()->second.raw());
  }
  set_samples(state);
}

void BM_Gemm(benchmark::State& state) {
  std::vector<std::uint8_t> a(static_cast<std::size_t>(kGemmM * kWidth));
  std::vector<std::int8_t> b(static_cast<std::size_t>(kWidth * kWidth));
  std::vector<std::int32_t> c(static_cast<std::size_t>(kGemmM * kWidth));
  Lcg rng(1);
  for (auto& v : a) v = static_cast<std::uint8_t>(rng.uniform() * 256);
  for (auto& v : b) v = static_cast<std::int8_t>(static_cast<int>(rng.uniform() * 256) - 128);
  const auto pb = qk::simd::pack_b(b.data(), kWidth, kWidth, kWidth, false);
  for (auto _ : state) {
    qk::simd::gemm_s32(kGemmM, a.data(), kWidth, pb, c.data(), kWidth);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GOPS"] = benchmark::Counter(2.0 * kGemmM * kWidth * kWidth / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(qk::simd::active_kernels().name);
}

// The float product of the MLP's layers: quantkit's GEMM (what the float executor runs) and
// Eigen's (what it ran before; vectorized for this build's flags only, no dispatch).
// ONNX Runtime's uint8 x int8 arithmetic on x86-64 without VNNI (int16 pair sums, saturated) on
// the same product: the pair-sum kernel with statistics (what `quantkit debug ort-saturation`
// runs), saturated sums only (the integer mode's --ort-no-vnni), and the plain scalar loop
// (ref::pair_sums_s16sat at this build's flags). A (uint8) and Bt (N x K, int8) as the front end
// (quantkit/executor/integer/ort_pairs.hpp) prepares them.
enum class PairVariant { stats, saturated, plain };
template <PairVariant kVariant>
void BM_PairSums(benchmark::State& state) {
  const qk::simd::GemmKernels& g = qk::simd::gemm_kernels();
  const std::size_t K = kWidth, kp = (K + g.pair_step - 1) / g.pair_step * g.pair_step;
  std::vector<std::uint8_t> a(static_cast<std::size_t>(kGemmM) * kp, 0);
  std::vector<std::int8_t> bt(static_cast<std::size_t>(kWidth) * kp, 0);
  std::vector<std::int32_t> sat(static_cast<std::size_t>(kGemmM * kWidth)), ex(sat.size());
  Lcg rng(3);
  for (std::size_t m = 0; m < static_cast<std::size_t>(kGemmM); ++m)
    for (std::size_t k = 0; k < K; ++k) a[m * kp + k] = static_cast<std::uint8_t>(rng.uniform() * 256);
  for (std::size_t n = 0; n < static_cast<std::size_t>(kWidth); ++n)
    for (std::size_t k = 0; k < K; ++k) bt[n * kp + k] = static_cast<std::int8_t>(static_cast<int>(rng.uniform() * 256) - 128);
  qk::simd::PairSumArgs args;
  args.m = kGemmM;
  args.n = kWidth;
  args.k = kp;
  args.a = a.data();
  args.lda = kp;
  args.bt = bt.data();
  args.ldb = kp;
  args.saturated = sat.data();
  args.exact = kVariant == PairVariant::saturated ? nullptr : ex.data();
  args.ldc = kWidth;
  qk::simd::PairSumCounts counts;
  for (auto _ : state) {
    if constexpr (kVariant == PairVariant::plain)
      qk::ref::pair_sums_s16sat(kGemmM, kWidth, K, a.data(), kp, bt.data(), kp, sat.data(), ex.data(), kWidth,
                                counts.saturated_pairs, counts.max_pair, counts.min_pair);
    else
      g.pair_sums(args, counts);
    benchmark::DoNotOptimize(sat.data());
    benchmark::ClobberMemory();
  }
  state.counters["GOPS"] = benchmark::Counter(2.0 * kGemmM * kWidth * kWidth / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(kVariant == PairVariant::plain ? "this build's flags" : qk::simd::active_kernels().name);
}

enum class F32Variant { quantkit, prepacked, eigen };

template <F32Variant kVariant>
void BM_GemmF32(benchmark::State& state) {
  std::vector<float> a(static_cast<std::size_t>(kGemmM * kWidth)), b(static_cast<std::size_t>(kWidth * kWidth));
  std::vector<float> c(static_cast<std::size_t>(kGemmM * kWidth));
  Lcg rng(2);
  for (auto& v : a) v = static_cast<float>(rng.uniform() * 2 - 1);
  for (auto& v : b) v = static_cast<float>(rng.uniform() * 2 - 1);
  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMatrix> A(a.data(), kGemmM, kWidth), B(b.data(), kWidth, kWidth);
  Eigen::Map<RowMatrix> C(c.data(), kGemmM, kWidth);
  // prepacked: B packed once before the loop (a constant weight, as the float executor keeps it)
  const std::size_t nr = qk::simd::gemm_f32_panel_width();
  std::vector<float> pb(kVariant == F32Variant::prepacked ? qk::simd::gemm_f32_packed_size(kWidth, kWidth) : 0);
  if (kVariant == F32Variant::prepacked) qk::simd::gemm_f32_pack_b(kWidth, kWidth, b.data(), kWidth, false, pb.data());
  for (auto _ : state) {
    if constexpr (kVariant == F32Variant::eigen) {
      C.noalias() = A * B;
    } else if constexpr (kVariant == F32Variant::prepacked) {
      qk::simd::gemm_f32_prepacked(kGemmM, kWidth, kWidth, a.data(), kWidth, false, pb.data(), nr, c.data(), kWidth);
    } else {
      qk::simd::gemm_f32(kGemmM, kWidth, kWidth, a.data(), kWidth, false, b.data(), kWidth, false, c.data(), kWidth);
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GOPS"] = benchmark::Counter(2.0 * kGemmM * kWidth * kWidth / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(kVariant == F32Variant::eigen ? "this build's flags" : qk::simd::active_kernels().name);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "inference_models";
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--qk_models=", 0) == 0) {
      dir = a.substr(12);
    } else if (a.rfind("--qk_batch=", 0) == 0) {
      char* end = nullptr;
      const long long v = std::strtoll(a.c_str() + 11, &end, 10);
      if (end == a.c_str() + 11 || *end != '\0' || v < 1) {
        std::fprintf(stderr, "bench_inference: %s: expected a batch size >= 1\n", a.c_str());
        return 1;
      }
      g_batch = v;
    } else {
      args.push_back(argv[i]);
    }
  }
  int bargc = static_cast<int>(args.size());
  benchmark::Initialize(&bargc, args.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, args.data())) return 1;
  try {
    write_models(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_inference: %s\n", e.what());
    return 1;
  }
  for (const Model& m : setup().models) {
    benchmark::RegisterBenchmark(("inference/" + m.name + "/quantkit_integer").c_str(), BM_Integer, &m, false)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark(("inference/" + m.name + "/quantkit_integer_ort_no_vnni").c_str(), BM_Integer, &m, true)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark(("inference/" + m.name + "/quantkit_float").c_str(), BM_Float, &m)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  benchmark::RegisterBenchmark("gemm/256x1024x1024/quantkit_packed_u8s8", BM_Gemm)
      ->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("gemm/256x1024x1024/quantkit_f32", BM_GemmF32<F32Variant::quantkit>)
      ->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("gemm/256x1024x1024/quantkit_f32_prepacked", BM_GemmF32<F32Variant::prepacked>)
      ->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("gemm/256x1024x1024/eigen_f32", BM_GemmF32<F32Variant::eigen>)
      ->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("gemm/256x1024x1024/quantkit_ort_pairs_stats", BM_PairSums<PairVariant::stats>)
      ->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("gemm/256x1024x1024/quantkit_ort_pairs", BM_PairSums<PairVariant::saturated>)
      ->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("gemm/256x1024x1024/plain_ort_pairs_stats", BM_PairSums<PairVariant::plain>)
      ->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::AddCustomContext("quantkit.models", dir);
  benchmark::AddCustomContext("quantkit.batch", std::to_string(g_batch));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
