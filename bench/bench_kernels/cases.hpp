// What bench_kernels measures: one Case (operation x variant x granularity x size) run by one
// Impl (a SIMD target, a plain loop, the scalar reference, memcpy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plain.hpp"
#include "quantkit/params.hpp"
#include "quantkit/policy/format.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/ref/requantize.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace simd {
struct Kernels;
}  // namespace simd
}  // namespace quantkit

namespace qk_bench {

// quantize_i16: f32 -> int16 (A16 activations: range [-32768, 32767], zero point 2).
enum class Op { quantize, dequantize, fake_quantize, requantize, quantize_i16 };
// per_tensor: shape [n]; per_channel: [kChannels, n / kChannels], axis 0 (weights: one
// channel per row; --qk_channel_len / --qk_channels_last change it, see below); per_group:
// [n / kRowLen, kRowLen], blocks of kBlock along axis 1.
enum class Gran { per_tensor, per_channel, per_group };

inline constexpr std::size_t kChannels = 64;
inline constexpr std::size_t kBlock = 32;
inline constexpr std::size_t kRowLenMax = 4096;

const char* to_string(Op op);
const char* to_string(Gran g);
const char* to_string(Round r);
const char* to_string(Requant s);

// Scales/zero points and requantization multipliers of a case, one entry per parameter row
// (1 per tensor, kChannels per channel, n / kBlock per group), in row-major order.
struct CaseParams {
  std::vector<float> scale;
  std::vector<std::int32_t> zero_point;
  std::int32_t qmin = -128, qmax = 127;
  std::vector<double> multiplier;     // requantize
  std::vector<std::int32_t> bias;     // requantize, per channel (per tensor: empty, or one: Case::bias)
  std::int32_t out_zero_point = 0;    // requantize
};

struct Case {
  Op op = Op::quantize;
  Round round = Round::half_even;  // quantize / fake_quantize
  bool multiply = false;           // x * (1/s) instead of x / s
  Requant requant = Requant::fixed_point;
  // requantize per tensor: with a bias (variant "<scheme>.bias"), as a layer's per-tensor
  // requantization has one; per-channel cases always have one per channel
  bool bias = false;
  Gran gran = Gran::per_tensor;
  std::size_t n = 0;
  // Shape as rows x row_len (per_group: the tensor's rows; blocks run inside a row).
  std::size_t rows = 1, row_len = 0;
  // per_channel: the channel axis of [rows, row_len]: 0 (a channel per row) or 1 (channels
  // last: a channel per column, --qk_channels_last).
  int axis = 0;
  const CaseParams* params = nullptr;
  // Buffers (the ones the op uses): float in/out, int8 in/out, int16 out, int32 accumulators.
  const float* x = nullptr;
  const std::int8_t* q_in = nullptr;
  const std::int32_t* acc = nullptr;
  float* y = nullptr;
  std::int8_t* q_out = nullptr;
  std::int16_t* q16_out = nullptr;

  std::string variant() const;  // "half_even", "half_even.mul", "fixed_point", "float.bias", "linear", ...
  std::size_t param_count() const;  // per channel: rows (axis 0) or row_len (axis 1)
  std::size_t in_bytes() const;
  std::size_t out_bytes() const;
};

// Returns the function to time for a case, or an empty function when the impl does not
// support it. Everything that is not part of the operation (views, constant conversion) is
// prepared here, outside the timed loop.
using Run = std::function<void()>;
struct Impl {
  std::string name;
  std::function<Run(const Case&)> make;
  // Called around a benchmark (e.g. restricting Highway's dispatch to one target).
  std::function<void()> enter = [] {};
  std::function<void()> leave = [] {};
  bool sweep = true;  // also measured over every size (else only the variant matrix)
};

// --qk_requant_layers=L: the "simd" requantize rows cycle through L layers' parameters, call by
// call (1: one layer, the default). See requantize_run in kernels_dispatch.cpp.
inline int& requant_layers() {
  static int layers = 1;
  return layers;
}
// --qk_channel_len=L: per-channel cases have rows of L values (n / L rows; sizes not a multiple
// of L are left out) instead of 64 rows of n / 64: the rows of NCHW convolution outputs
// (7 x 7 = 49, 14 x 14 = 196, 28 x 28 = 784), which are not whole vectors. 0: 64 rows.
inline std::size_t& channel_len() {
  static std::size_t len = 0;
  return len;
}
// --qk_channels_last=C: per-channel cases are [n / C, C] with the channels on axis 1, the
// innermost (sizes not a multiple of C are left out): GEMM outputs [batch, channels] and NHWC
// activations, whose parameters change with every element of a row. 0: axis 0 (the default).
inline std::size_t& channels_last() {
  static std::size_t channels = 0;
  return channels;
}
// --qk_requant_positive_biases: those layers' biases are >= 0 (else of random sign).
inline bool& requant_positive_biases() {
  static bool positive = false;
  return positive;
}

// The case's tensor shape and quantkit parameters, as quantkit::ref takes them (bench_kernels.cpp).
quantkit::Dims dims_of(const Case& c);

// The case's requantization parameters (int8 output, channels along Case::axis), as every
// requantize row takes them.
template <class Scheme>
quantkit::RequantParams<Scheme> requant_params_of(const Case& c) {
  auto p = quantkit::RequantParams<Scheme>::make(c.params->multiplier, quantkit::IntRange{-128, 127},
                                                 c.params->out_zero_point, "bench");
  p.bias = c.params->bias;
  p.channel_axis = c.axis;
  return p;
}
quantkit::QuantParams quant_params(const Case& c);
quantkit::RoundingMode mode_of(Round r);

// kernels_dispatch.cpp: quantkit's SIMD kernels through quantkit::simd's public entry points
// (raw pointers per tensor, Views otherwise) with runtime dispatch ("simd") and with every
// compiled target this CPU runs ("simd:<TARGET>").
void add_simd_impls(std::vector<Impl>& impls);
// The same public entry points on an explicit kernel table.
Run simd_front_run(const quantkit::simd::Kernels& kernels, const Case& c);
// kernels_static_native.cpp: the kernels compiled for -march=native, no dispatch ("simd_static").
void add_simd_static_impls(std::vector<Impl>& impls);

}  // namespace qk_bench
