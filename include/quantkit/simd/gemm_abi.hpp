// The target-independent interface of the int8 GEMM kernels (quantkit/simd/gemm-inl.h):
// plain structs and one table of function pointers per Highway target, reached from that
// target's quantkit::simd::Kernels (Kernels::gemm). Nothing here depends on Highway.
//
// The kernels compute C = A * B over int8/uint8 values with int32 accumulators:
//   - B (K x N) is first packed by the target's pack_b into panels of `panel` columns:
//       packed[((j * G) + g) * panel * 4 + col * 4 + kk] = B[4 g + kk][j * panel + col]
//     (G = ceil(K / 4) groups of 4 consecutive k; zeros beyond K and N), optionally with
//     every byte XOR 0x80 (`flip`: int8 <-> uint8 offset by 128, for dot-product
//     instructions that need one unsigned and one signed operand);
//   - gemm then computes C[m][n] = sum_k A[m][k] * Bpacked[k][n] exactly (modulo 2^32).
// Zero points and the flip correction are applied by the front end (quantkit/simd/gemm.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace quantkit {
namespace simd {

struct GemmPackArgs {
  std::size_t k = 0, n = 0;
  const void* b = nullptr;  // K x N, row-major, leading dimension ldb
  std::size_t ldb = 0;
  bool b_signed = true;     // int8 (true) or uint8
  bool flip = false;        // store b ^ 0x80
  std::uint8_t* packed = nullptr;  // packed_size(k, n) bytes
};

struct GemmArgs {
  std::size_t m = 0, n = 0, k = 0;
  const void* a = nullptr;  // M x K, row-major, leading dimension lda
  std::size_t lda = 0;
  bool a_signed = false;
  const std::uint8_t* packed_b = nullptr;  // from pack_b of the same target
  bool packed_signed = true;               // element type of the packed values (after flip)
  std::int32_t* c = nullptr;               // M x N, leading dimension ldc
  std::size_t ldc = 0;
};

struct GemmKernels {
  std::int64_t target = 0;
  const char* name = "";
  std::size_t panel = 1;           // columns per packed panel
  bool dot_product = false;        // an int8 dot-product instruction (AVX-512 VNNI) is used
  bool needs_mixed_signs = false;  // A and packed B must differ in signedness (flip B otherwise)
  void (*pack_b)(const GemmPackArgs&) = nullptr;
  void (*gemm)(const GemmArgs&) = nullptr;

  std::size_t packed_size(std::size_t k, std::size_t n) const {
    return ((n + panel - 1) / panel) * panel * ((k + 3) / 4) * 4;
  }
};

}  // namespace simd
}  // namespace quantkit
