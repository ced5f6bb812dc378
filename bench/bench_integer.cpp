// int8 GEMM (quantkit/simd/gemm.hpp) at M = 256, K = N = 1024, u8 x s8 -> int32, one thread:
// every Highway target the CPU supports (AVX3_DL: AVX-512 VNNI), with B packed once (weights)
// and packed per call, vs the plain loop built -O3 -march=native (autovectorized) and built
// for baseline x86-64. Counter GOPS = 2 M N K / time / 1e9.
//
//   cmake -S . -B build/bench -DQUANTKIT_BUILD_BENCH=ON && cmake --build build/bench --target bench_integer
//   build/bench/bench/bench_integer --benchmark_format=json --benchmark_out=integer.json
#define HWY_COMPILE_ALL_ATTAINABLE
#define HWY_WANT_AVX3_DL
#define QUANTKIT_SIMD_IMPLEMENTATION
#include <quantkit/simd/implementation.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <quantkit/simd/gemm.hpp>

void plain_gemm_native(std::size_t M, std::size_t N, std::size_t K, const std::uint8_t* a, const std::int8_t* bt,
                       std::int32_t* c);
void plain_gemm_baseline(std::size_t M, std::size_t N, std::size_t K, const std::uint8_t* a, const std::int8_t* bt,
                         std::int32_t* c);

namespace {

constexpr std::size_t kM = 256, kK = 1024, kN = 1024;

struct Data {
  std::vector<std::uint8_t> a = std::vector<std::uint8_t>(kM * kK);
  std::vector<std::int8_t> b = std::vector<std::int8_t>(kK * kN);
  std::vector<std::int8_t> bt = std::vector<std::int8_t>(kN * kK);  // B transposed, for the plain loop
  std::vector<std::int32_t> c = std::vector<std::int32_t>(kM * kN);
  Data() {
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> d(0, 255);
    for (auto& v : a) v = static_cast<std::uint8_t>(d(rng));
    for (auto& v : b) v = static_cast<std::int8_t>(d(rng) - 128);
    for (std::size_t k = 0; k < kK; ++k)
      for (std::size_t n = 0; n < kN; ++n) bt[n * kK + k] = b[k * kN + n];
  }
};

Data& data() {
  static Data d;
  return d;
}

void set_counters(benchmark::State& state) {
  state.counters["GOPS"] = benchmark::Counter(2.0 * kM * kN * kK / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_GemmPacked(benchmark::State& state, const quantkit::simd::Kernels* k) {
  Data& d = data();
  const auto pb = quantkit::simd::pack_b(d.b.data(), kK, kN, kN, false, k);
  for (auto _ : state) {
    quantkit::simd::gemm_s32(kM, d.a.data(), kK, pb, d.c.data(), kN);
    benchmark::DoNotOptimize(d.c.data());
    benchmark::ClobberMemory();
  }
  set_counters(state);
}

void BM_GemmPackEachCall(benchmark::State& state, const quantkit::simd::Kernels* k) {
  Data& d = data();
  for (auto _ : state) {
    quantkit::simd::gemm_s32(kM, kN, kK, d.a.data(), kK, d.b.data(), kN, d.c.data(), kN, {}, k);
    benchmark::DoNotOptimize(d.c.data());
    benchmark::ClobberMemory();
  }
  set_counters(state);
}

void BM_PlainLoop(benchmark::State& state, bool native) {
  Data& d = data();
  for (auto _ : state) {
    (native ? plain_gemm_native : plain_gemm_baseline)(kM, kN, kK, d.a.data(), d.bt.data(), d.c.data());
    benchmark::DoNotOptimize(d.c.data());
    benchmark::ClobberMemory();
  }
  set_counters(state);
}

const bool registered = [] {
  for (const quantkit::simd::Kernels* k : quantkit::simd::available_kernels()) {
    if (k->target == HWY_SCALAR || k->target == HWY_EMU128) continue;  // minutes per run
    const std::string t = k->name;
    benchmark::RegisterBenchmark(("gemm_u8s8_256x1024x1024/packed/" + t).c_str(), BM_GemmPacked, k)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("gemm_u8s8_256x1024x1024/pack_each_call/" + t).c_str(), BM_GemmPackEachCall, k)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("gemm_u8s8_256x1024x1024/plain_loop/native_O3", BM_PlainLoop, true)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gemm_u8s8_256x1024x1024/plain_loop/baseline_x86-64", BM_PlainLoop, false)
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
