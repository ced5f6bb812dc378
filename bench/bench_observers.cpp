// bench_observers: calibration observers on float32 batches, against the memory roofline.
//
//   observe/minmax/per_tensor/quantkit/<n>        MinMaxObserver::observe
//   observe/minmax/per_channel64/quantkit/<n>     the same, 64 channels on axis 0
//   observe/histogram/per_tensor/quantkit/<n>     HistogramObserver (PyTorch's, 2048 bins)
//   observe/histogram.torch113/per_tensor/...     the same with Options::torch_1_13 (integer
//                                                 histc bounds: what stock PyTorch 1.13 does)
//   observe/kl/per_tensor/quantkit/<n>            KlObserver (exactly mergeable grid histogram)
//   ranges/histogram/per_tensor/quantkit/2048     the L2 search ranges() runs over 2048 bins
//   read/-/-/memchr/<n>                           glibc memchr over the batch's bytes, never
//                                                 matching: streaming-read bandwidth
//   memcpy/-/-/memcpy/<n>                         memcpy of the batch (read + write)
//   floor/increments/-/plain/<n>                  the histogram's increments alone: the bins of
//                                                 the batch precomputed (2048 over the settled
//                                                 range), ++h[bin] into two uint16 copies, as
//                                                 the observer's inner loop
//   floor/stores/-/plain/<n>                      the same bins stored to (h[bin] = q, no load
//                                                 or add): the core's rate of stores to random
//                                                 L1 lines, which bounds any histogram that
//                                                 does one store per value
//
// Each observer cycles over 4 batches of n normal values with slightly different spreads, so a
// histogram's range settles after the first few batches (as in calibration over a dataset).
// tools/bench/torch_observers.py times PyTorch's observers on the same sizes and kind of data;
// tools/bench/render_observers.py puts both in one table. Counters: size (elements per batch),
// bytes_per_second over the batch's float32 bytes (read once).
#define QUANTKIT_SIMD_IMPLEMENTATION
#include <quantkit/simd/implementation.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <quantkit/observer/histogram.hpp>
#include <quantkit/observer/kl.hpp>
#include <quantkit/observer/minmax.hpp>
#include <quantkit/params.hpp>
#include <quantkit/tensor/span.hpp>

namespace qk = quantkit;

namespace {

constexpr int kBatches = 4;
constexpr std::int64_t kChannels = 64;

struct FreeDelete {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDelete>;

Buffer allocate(std::size_t n) {
  const std::size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
  return Buffer(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

// kBatches batches of n values ~ N(0, 1 + b / 8): the first batches widen the range.
struct Data {
  std::size_t n = 0;
  std::vector<Buffer> batches;
};

const Data& data(std::size_t n) {
  static std::vector<std::unique_ptr<Data>> cache;
  for (const auto& d : cache)
    if (d->n == n) return *d;
  auto d = std::make_unique<Data>();
  d->n = n;
  std::mt19937 rng(20241122u);
  for (int b = 0; b < kBatches; ++b) {
    std::normal_distribution<float> normal(0.0f, 1.0f + static_cast<float>(b) / 8.0f);
    Buffer buf = allocate(n);
    for (std::size_t i = 0; i < n; ++i) buf[i] = normal(rng);
    d->batches.push_back(std::move(buf));
  }
  cache.push_back(std::move(d));
  return *cache.back();
}

void set_counters(benchmark::State& state, std::size_t n) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n * 4));
  state.counters["size"] = static_cast<double>(n);
  state.counters["bpe"] = 4.0;
}

qk::Dims shape_of(std::size_t n, bool per_channel) {
  if (!per_channel) return qk::Dims{static_cast<std::int64_t>(n)};
  return qk::Dims{kChannels, static_cast<std::int64_t>(n) / kChannels};
}

template <class Observer>
void observe(benchmark::State& state, Observer proto, bool per_channel) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Data& d = data(n);
  Observer obs = proto;
  const qk::Dims shape = shape_of(n, per_channel);
  std::size_t b = 0;
  for (auto _ : state) {
    obs.observe(qk::View<const float>(d.batches[b].get(), shape, "x"));
    b = (b + 1) % kBatches;
    benchmark::ClobberMemory();
  }
  set_counters(state, n);
}

qk::ObserverConfig config(bool per_channel) {
  qk::ObserverConfig c;
  c.name = "x";
  c.granularity = per_channel ? qk::Granularity::per_channel(0) : qk::Granularity::per_tensor();
  return c;
}

void BM_minmax(benchmark::State& state) { observe(state, qk::MinMaxObserver(config(false)), false); }
void BM_minmax_per_channel(benchmark::State& state) {
  observe(state, qk::MinMaxObserver(config(true)), true);
}
void BM_histogram(benchmark::State& state) { observe(state, qk::HistogramObserver(config(false)), false); }
void BM_histogram_torch113(benchmark::State& state) {
  qk::HistogramOptions o;
  o.torch_1_13 = true;
  observe(state, qk::HistogramObserver(config(false), o), false);
}
void BM_kl(benchmark::State& state) { observe(state, qk::KlObserver(config(false)), false); }

// The L2 search over the settled 2048-bin histogram of the 4 batches (PyTorch's
// calculate_qparams), for a uint8 affine target.
void BM_histogram_ranges(benchmark::State& state) {
  const std::size_t n = 1 << 20;
  const Data& d = data(n);
  qk::HistogramObserver obs(config(false));
  for (const auto& b : d.batches) obs.observe(qk::View<const float>(b.get(), shape_of(n, false), "x"));
  qk::QuantTarget t;
  t.range = qk::IntRange{0, 255};
  for (auto _ : state) {
    auto r = obs.ranges(t);
    benchmark::DoNotOptimize(r);
  }
  state.counters["size"] = 2048;
}

void BM_read(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Data& d = data(n);
  std::size_t b = 0;
  for (auto _ : state) {
    // scrub() removed every 0xA5 byte from the batches, so memchr reads all of them.
    const void* hit = std::memchr(d.batches[b].get(), 0xA5, n * sizeof(float));
    benchmark::DoNotOptimize(hit);
    b = (b + 1) % kBatches;
  }
  set_counters(state, n);
}

void BM_memcpy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Data& d = data(n);
  Buffer out = allocate(n);
  std::size_t b = 0;
  for (auto _ : state) {
    std::memcpy(out.get(), d.batches[b].get(), n * sizeof(float));
    benchmark::ClobberMemory();
    b = (b + 1) % kBatches;
  }
  set_counters(state, n);
  state.counters["bpe"] = 8.0;  // read + written
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n * 8));
}

// The bins of each batch over the range of all batches (the observer's settled range), as the
// observer computes them: int((v - lo) * 2048 / (hi - lo)), the top edge in the last bin.
struct Bins {
  std::size_t n = 0;
  std::vector<std::vector<std::uint32_t>> batches;
};

const Bins& bins(std::size_t n) {
  static std::vector<std::unique_ptr<Bins>> cache;
  for (const auto& b : cache)
    if (b->n == n) return *b;
  const Data& d = data(n);
  float lo = d.batches[0][0];
  float hi = lo;
  for (const auto& b : d.batches)
    for (std::size_t i = 0; i < n; ++i) {
      lo = b[i] < lo ? b[i] : lo;
      hi = b[i] > hi ? b[i] : hi;
    }
  auto r = std::make_unique<Bins>();
  r->n = n;
  for (const auto& b : d.batches) {
    std::vector<std::uint32_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) {
      const float q = (b[i] - lo) * 2048.0f / (hi - lo);
      idx[i] = q >= 2048.0f ? 2047u : static_cast<std::uint32_t>(q);
    }
    r->batches.push_back(std::move(idx));
  }
  cache.push_back(std::move(r));
  return *cache.back();
}

// The histogram's inner loop alone (CountBlocks' increments: two interleaved uint16 copies,
// flushed into uint64 counts every 64K values), over the precomputed bins.
void BM_floor_increments(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Bins& bb = bins(n);
  std::vector<std::uint16_t> sub(2 * 2048, 0);
  std::vector<std::uint64_t> counts(2048, 0);
  std::uint16_t* const h0 = sub.data();
  std::uint16_t* const h1 = sub.data() + 2048;
  std::size_t b = 0;
  for (auto _ : state) {
    const std::uint32_t* idx = bb.batches[b].data();
    for (std::size_t c = 0; c < n; c += 65536) {
      const std::size_t end = n - c < 65536 ? n : c + 65536;
      for (std::size_t q = c; q + 1 < end; q += 2) {
        ++h0[idx[q]];
        ++h1[idx[q + 1]];
      }
      for (std::size_t k = 0; k < 2048; ++k) counts[k] += std::uint64_t{h0[k]} + h1[k];
      std::fill(sub.begin(), sub.end(), std::uint16_t{0});
    }
    benchmark::DoNotOptimize(counts.data());
    benchmark::ClobberMemory();
    b = (b + 1) % kBatches;
  }
  set_counters(state, n);
}

// One store per value to the value's bin, nothing loaded or added: the store rate that bounds
// any histogram doing one counter update (one store) per value.
void BM_floor_stores(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Bins& bb = bins(n);
  std::vector<std::uint16_t> sub(2 * 2048, 0);
  std::uint16_t* const h0 = sub.data();
  std::uint16_t* const h1 = sub.data() + 2048;
  std::size_t b = 0;
  for (auto _ : state) {
    const std::uint32_t* idx = bb.batches[b].data();
    for (std::size_t q = 0; q + 1 < n; q += 2) {
      h0[idx[q]] = static_cast<std::uint16_t>(q);
      h1[idx[q + 1]] = static_cast<std::uint16_t>(q);
    }
    benchmark::DoNotOptimize(sub.data());
    benchmark::ClobberMemory();
    b = (b + 1) % kBatches;
  }
  set_counters(state, n);
}

// Makes the memchr baseline read every byte: no byte 0xA5 anywhere in the batches.
void scrub(std::size_t n) {
  const Data& d = data(n);
  for (const auto& b : d.batches) {
    auto* bytes = reinterpret_cast<unsigned char*>(b.get());
    for (std::size_t i = 0; i < n * sizeof(float); ++i)
      if (bytes[i] == 0xA5) bytes[i] = 0xA4;  // a change in the last bits of some values
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::int64_t> sizes = {1 << 20, 1 << 24};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--qk_sizes=", 0) == 0) {
      sizes.clear();
      std::size_t pos = 11;
      while (pos < a.size()) {
        const std::size_t end = a.find(',', pos);
        sizes.push_back(std::stoll(a.substr(pos, end - pos)));
        if (end == std::string::npos) break;
        pos = end + 1;
      }
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      --i;
    }
  }
  for (const std::int64_t n : sizes) {
    const std::string s = std::to_string(n);
    scrub(static_cast<std::size_t>(n));
    benchmark::RegisterBenchmark(("observe/minmax/per_tensor/quantkit/" + s).c_str(), BM_minmax)->Arg(n);
    benchmark::RegisterBenchmark(("observe/minmax/per_channel64/quantkit/" + s).c_str(), BM_minmax_per_channel)
        ->Arg(n);
    benchmark::RegisterBenchmark(("observe/histogram/per_tensor/quantkit/" + s).c_str(), BM_histogram)->Arg(n);
    benchmark::RegisterBenchmark(("observe/histogram.torch113/per_tensor/quantkit/" + s).c_str(),
                                 BM_histogram_torch113)
        ->Arg(n);
    benchmark::RegisterBenchmark(("observe/kl/per_tensor/quantkit/" + s).c_str(), BM_kl)->Arg(n);
    benchmark::RegisterBenchmark(("read/-/-/memchr/" + s).c_str(), BM_read)->Arg(n);
    benchmark::RegisterBenchmark(("memcpy/-/-/memcpy/" + s).c_str(), BM_memcpy)->Arg(n);
    benchmark::RegisterBenchmark(("floor/increments/-/plain/" + s).c_str(), BM_floor_increments)->Arg(n);
    benchmark::RegisterBenchmark(("floor/stores/-/plain/" + s).c_str(), BM_floor_stores)->Arg(n);
  }
  benchmark::RegisterBenchmark("ranges/histogram/per_tensor/quantkit/2048", BM_histogram_ranges);
  benchmark::AddCustomContext("simd_target", qk::simd::active_kernels().name);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
