// Per-channel requantize (int32 -> int8) of back-to-back rows against per tensor with a bias,
// one static target: the A/B harness for the requantize row paths (FixedPointRows, FloatRows).
// Build it twice, against two checkouts' include/ folders, and run the two alternately, pinned:
//   g++ -std=c++17 -O2 -march=x86-64-v3 -maes -mpclmul -I<old>/include tools/bench/requant_rows_ab.cpp -o /tmp/rq_old
//   g++ -std=c++17 -O2 -march=x86-64-v3 -maes -mpclmul -I<new>/include tools/bench/requant_rows_ab.cpp -o /tmp/rq_new
//   for L in 9 49 196; do taskset -c 1 /tmp/rq_old $L 1024 0; taskset -c 1 /tmp/rq_new $L 1024 0; done
// (AVX-512: -march=x86-64-v4.) Arguments: row length L (default 49), rows (1024), scheme (0
// fixed point, gemmlowp's double rounding; 1 float multiplier, half-even). Biases of both signs
// ((37 r) % 200 - 100, as bench_kernels), multipliers 0.0061 (1 + (r % 64) / 64); channel axis
// (0: each row one channel, as NCHW conv outputs; 1: each row's L values L channels, as a
// GEMM's [batch, channels] output). Prints the
// best of 300 windows of 20 calls for both granularities (Gelem/s) and a hash of the
// per-channel output: two builds must print the same hash. Not part of the build.
#include <quantkit/simd/api.hpp>

#include "ab_common.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

namespace qk = quantkit;
namespace qs = quantkit::simd;

using ab::best_gelems;
using ab::hash_of;

template <class Scheme>
void run(std::size_t L, std::size_t rows, int axis, const char* name) {
  const std::size_t n = L * rows;
  std::mt19937 gen(20240611u);
  std::uniform_int_distribution<std::int32_t> wide(-20000, 20000);  // as bench_kernels
  std::vector<std::int32_t> acc(n);
  for (std::int32_t& v : acc) v = wide(gen);
  const std::size_t channels = axis == 0 ? rows : L;
  std::vector<double> multipliers(channels);
  std::vector<std::int32_t> biases(channels);
  for (std::size_t r = 0; r < channels; ++r) {
    multipliers[r] = 0.0061 * (1.0 + static_cast<double>(r % 64) / 64.0);
    biases[r] = static_cast<std::int32_t>((r * 37) % 200) - 100;
  }
  auto pc = qk::RequantParams<Scheme>::make(multipliers, qk::IntRange{-128, 127}, 3, "rows");
  pc.bias = biases;
  pc.channel_axis = axis;
  auto pt = qk::RequantParams<Scheme>::make({multipliers[channels > 1 ? 1 : 0]}, qk::IntRange{-128, 127}, 3, "tensor");
  pt.bias = {biases[channels > 1 ? 1 : 0]};
  std::vector<std::int8_t> out(n);
  const qk::Dims shape{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(L)};
  const qk::View<const std::int32_t> in(acc.data(), shape);
  const qk::View<std::int8_t> q(out.data(), shape);
  const double per_channel = best_gelems([&] { qs::requantize(in, pc, q); }, n);
  const unsigned long long hash = hash_of(out);
  const qk::View<const std::int32_t> in1(acc.data(), qk::Dims{static_cast<std::int64_t>(n)});
  const qk::View<std::int8_t> q1(out.data(), qk::Dims{static_cast<std::int64_t>(n)});
  const double per_tensor = best_gelems([&] { qs::requantize(in1, pt, q1); }, n);
  std::printf("%s%zu x %zu, %s: per channel %.2f Gelem/s, per tensor with a bias %.2f (%.0f %%), output hash %016llx\n",
              axis == 0 ? "rows of " : "channels last, rows of ", L, rows, name, per_channel, per_tensor, 100 * per_channel / per_tensor, hash);
}

}  // namespace

int main(int argc, char** argv) {
  const long len = argc > 1 ? std::atol(argv[1]) : 49;
  const long rows = argc > 2 ? std::atol(argv[2]) : 1024;
  const int scheme = argc > 3 ? std::atoi(argv[3]) : 0;
  const int axis = argc > 4 ? std::atoi(argv[4]) : 0;
  if (len < 1 || rows < 1 || scheme < 0 || scheme > 1 || axis < 0 || axis > 1) {
    std::fprintf(stderr, "usage: %s [row length >= 1] [rows >= 1] [scheme 0 fixed point | 1 float] [channel axis 0 | 1]\n", argv[0]);
    return 2;
  }
  const auto L = static_cast<std::size_t>(len), R = static_cast<std::size_t>(rows);
  if (scheme == 0)
    run<qk::FixedPointDoubleRounding>(L, R, axis, "fixed point");
  else
    run<qk::FloatMultiplier<qk::RoundHalfEven>>(L, R, axis, "float half-even");
}
