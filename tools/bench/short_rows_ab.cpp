// Per-channel quantize of back-to-back short rows against per tensor, one static target: the
// A/B harness behind the flat short-row paths' figures in the README (QuantizeShortRows,
// QuantizeFlatRowsAvx2). Build it twice, against two checkouts' include/ folders, and run the
// two alternately, pinned:
//   g++ -std=c++17 -O2 -march=x86-64-v4 -maes -mpclmul -I<old>/include tools/bench/short_rows_ab.cpp -o /tmp/ab_old
//   g++ -std=c++17 -O2 -march=x86-64-v4 -maes -mpclmul -I<new>/include tools/bench/short_rows_ab.cpp -o /tmp/ab_new
//   for L in 3 16 49 100; do taskset -c 1 /tmp/ab_old $L 1024 0; taskset -c 1 /tmp/ab_new $L 1024 0; done
// (AVX2: -march=x86-64-v3 -maes -mpclmul, QuantizeFlatRowsAvx2; alternate several times: on a
// noisy VM both granularities' rates move together, so compare the per-channel % of per tensor.)
// Arguments: row length L (default 49), rows (1024), output (0 int8, 1 int16, 2 fake-quantize
// int8, 3 dequantize int8 -> f32: DequantizeRows), channel axis (0: each row one channel, as
// NCHW maps; 1: each row's L values L channels, as [batch, channels]: LaneRows). Prints the
// best of 300 windows of 20 calls
// for both granularities (Gelem/s) and a hash of the per-channel output: two builds must print
// the same hash. Not part of the build.
#include <quantkit/simd/api.hpp>

#include "ab_common.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

namespace qs = quantkit::simd;

using ab::best_gelems;
using ab::hash_of;

}  // namespace

int main(int argc, char** argv) {
  const long len = argc > 1 ? std::atol(argv[1]) : 49;
  const long rows_arg = argc > 2 ? std::atol(argv[2]) : 1024;
  const int output = argc > 3 ? std::atoi(argv[3]) : 0;
  const int axis = argc > 4 ? std::atoi(argv[4]) : 0;
  if (len < 1 || rows_arg < 1 || output < 0 || output > 3 || axis < 0 || axis > 1) {
    std::fprintf(stderr, "usage: %s [row length >= 1] [rows >= 1] [output 0 int8 | 1 int16 | 2 fake | 3 dequantize int8] [axis 0 | 1]\n", argv[0]);
    return 2;
  }
  const auto L = static_cast<std::size_t>(len), rows = static_cast<std::size_t>(rows_arg);
  const std::size_t n = L * rows;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> uniform(-1.1f, 1.1f);  // as bench_kernels
  std::vector<float> x(n), y(n);
  for (float& v : x) v = uniform(gen);
  const std::size_t channels = axis == 0 ? rows : L;
  std::vector<float> scales(channels);
  std::vector<std::int32_t> zero_points(channels);
  for (std::size_t r = 0; r < channels; ++r) {
    scales[r] = (1.0f + 0.01f * static_cast<float>(r % 100)) / 127;
    zero_points[r] = static_cast<std::int32_t>(r % 5) - 2;
  }
  std::vector<std::int8_t> q8(n);
  std::vector<std::int16_t> q16(n);
  double per_channel = 0, per_tensor = 0;
  unsigned long long hash = 0;
  if (output == 0) {
    per_channel = best_gelems([&] { qs::quantize_per_channel(x.data(), rows, L, axis, scales.data(), zero_points.data(), q8.data()); }, n);
    hash = hash_of(q8);
    per_tensor = best_gelems([&] { qs::quantize(x.data(), n, scales[0], zero_points[0], q8.data()); }, n);
  } else if (output == 1) {
    per_channel = best_gelems([&] { qs::quantize_per_channel(x.data(), rows, L, axis, scales.data(), zero_points.data(), q16.data()); }, n);
    hash = hash_of(q16);
    per_tensor = best_gelems([&] { qs::quantize(x.data(), n, scales[0], zero_points[0], q16.data()); }, n);
  } else if (output == 3) {
    for (std::size_t i = 0; i < n; ++i) q8[i] = static_cast<std::int8_t>(static_cast<int>(gen() % 256) - 128);
    per_channel = best_gelems([&] { qs::dequantize_per_channel(q8.data(), rows, L, axis, scales.data(), zero_points.data(), y.data()); }, n);
    hash = hash_of(y);
    per_tensor = best_gelems([&] { qs::dequantize(q8.data(), n, scales[0], zero_points[0], y.data()); }, n);
  } else {
    const auto options = qs::QuantizeOptions{}.with_range(quantkit::IntRange{-128, 127});
    per_channel = best_gelems([&] { qs::fake_quantize_per_channel(x.data(), rows, L, axis, scales.data(), zero_points.data(), options, y.data()); }, n);
    hash = hash_of(y);
    per_tensor = best_gelems([&] { qs::fake_quantize(x.data(), n, scales[0], zero_points[0], options, y.data()); }, n);
  }
  static const char* const names[] = {"int8", "int16", "fake-quantize", "dequantize int8"};
  std::printf("%srows of %zu x %zu, %s: per channel %.2f Gelem/s, per tensor %.2f (%.0f %%), output hash %016llx\n", axis == 1 ? "channels last, " : "", L, rows,
              names[output], per_channel, per_tensor, 100 * per_channel / per_tensor, hash);
}
