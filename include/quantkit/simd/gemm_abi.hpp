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
//
// pair_sums models ONNX Runtime's uint8 x int8 kernels on x86-64 without VNNI (VPMADDUBSW: each
// pair of products k = 2j, 2j + 1 summed into int16 with saturation); see
// quantkit/executor/integer/ort_pairs.hpp, its front end, and ref::pair_sums_s16sat.
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

// A (M x K, uint8) and Bt (N x K, int8: each column of B contiguous); K a multiple of
// GemmKernels::pair_step, zero padded. For every (m, n): saturated = sum_j clamp(p_j, -32768,
// 32767), exact = sum_j p_j with p_j = A[m][2j] Bt[n][2j] + A[m][2j+1] Bt[n][2j+1], both int32
// modulo 2^32 (exact for K <= 65536). exact == nullptr: only `saturated` is written and the
// statistics are left untouched.
struct PairSumArgs {
  std::size_t m = 0, n = 0, k = 0;
  const std::uint8_t* a = nullptr;
  std::size_t lda = 0;
  const std::int8_t* bt = nullptr;
  std::size_t ldb = 0;
  std::int32_t* saturated = nullptr;  // M x N, leading dimension ldc
  std::int32_t* exact = nullptr;      // M x N, leading dimension ldc, or nullptr
  std::size_t ldc = 0;
};

// Accumulated over calls (only when PairSumArgs::exact is given).
struct PairSumCounts {
  std::int64_t saturated_pairs = 0;          // pair sums outside int16
  std::int32_t max_pair = 0, min_pair = 0;   // extreme pair sums (0 included)
};

struct GemmKernels {
  std::int64_t target = 0;
  const char* name = "";
  std::size_t panel = 1;           // columns per packed panel
  bool dot_product = false;        // an int8 dot-product instruction (AVX-512 VNNI) is used
  bool needs_mixed_signs = false;  // A and packed B must differ in signedness (flip B otherwise)
  void (*pack_b)(const GemmPackArgs&) = nullptr;
  void (*gemm)(const GemmArgs&) = nullptr;
  std::size_t pair_step = 1;  // PairSumArgs::k must be a multiple of it
  void (*pair_sums)(const PairSumArgs&, PairSumCounts&) = nullptr;

  std::size_t packed_size(std::size_t k, std::size_t n) const {
    return ((n + panel - 1) / panel) * panel * ((k + 3) / 4) * 4;
  }
};

}  // namespace simd
}  // namespace quantkit
