// The in-cache traffic floor of each operation: its loads and stores with no arithmetic
// (floor_native.cpp). Not a correct quantizer: bench_kernels times it beside the kernels, never
// checks it against the reference.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qk_bench {

struct FloorTable {
  const char* name;
  void (*narrow_32_to_8)(const void* in, std::int8_t* out, std::size_t n);  // quantize, requantize
  void (*narrow_32_to_16)(const float* in, std::int16_t* out, std::size_t n);  // quantize_i16
  void (*widen_8_to_32)(const std::int8_t* q, float* out, std::size_t n);   // dequantize
  void (*copy_32)(const float* x, float* out, std::size_t n);               // fake-quantize
};

const FloorTable& floor_native();

}  // namespace qk_bench
