// The target-independent interface between quantkit's front end (quantkit/simd/api.hpp) and
// the per-target Highway kernels (quantkit/simd/*-inl.h): plain structs and one table of
// function pointers per compiled target. Nothing here depends on Highway.
//
// An element-wise operation is described by a Plan: the tensor's (collapsed) shape, element
// strides of input and output, and how the parameter index of an element is computed. Rows
// are the innermost dimension; along a row the parameters are either constant, constant in
// blocks of `inner_block` elements, or vary with every element (per_element: params[base + j]).
// The kernels walk the rows in row-major order, so per-element state such as the stochastic
// rounding draws stays in the reference's element order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "quantkit/policy/requantization.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/policy/scale_application.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace simd {

enum class ElemType : std::uint8_t { i8, u8, i16, u16, i32, f32 };

template <class T>
struct elem_type_of;
template <>
struct elem_type_of<std::int8_t> {
  static constexpr ElemType value = ElemType::i8;
};
template <>
struct elem_type_of<std::uint8_t> {
  static constexpr ElemType value = ElemType::u8;
};
template <>
struct elem_type_of<std::int16_t> {
  static constexpr ElemType value = ElemType::i16;
};
template <>
struct elem_type_of<std::uint16_t> {
  static constexpr ElemType value = ElemType::u16;
};
template <>
struct elem_type_of<std::int32_t> {
  static constexpr ElemType value = ElemType::i32;
};
template <>
struct elem_type_of<float> {
  static constexpr ElemType value = ElemType::f32;
};

// How the parameter index changes along a row (the innermost plan dimension).
enum class InnerParams : std::uint8_t { constant, blocks, per_element };

struct Plan {
  int rank = 1;  // >= 1; the last dimension is the row
  std::int64_t shape[max_rank] = {};
  std::int64_t in_stride[max_rank] = {};   // elements
  std::int64_t out_stride[max_rank] = {};  // elements (unused by reductions)
  // Parameter index of a row: sum over d < rank-1 of (idx[d] / param_div[d]) * param_stride[d].
  std::int64_t param_stride[max_rank] = {};
  std::int64_t param_div[max_rank] = {};
  // Along the row: constant (base), blocks (base + j / inner_block) or per_element (base + j).
  InnerParams inner = InnerParams::constant;
  std::int64_t inner_block = 1;

  std::int64_t size() const {
    std::int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= shape[d];
    return n;
  }
};

// Source of the uniforms stochastic rounding uses: fill(ctx, x, n, u) writes one uniform per
// element of x[0..n) in order, drawing nothing for NaN elements (the reference maps NaN to the
// zero point before rounding), exactly as RoundStochastic::next_uniform would.
struct UniformSource {
  void* context = nullptr;
  void (*fill)(void* context, const float* x, std::size_t n, float* u) = nullptr;
};

// How many vectors of each 4-vector block the AVX-512 and AVX2 dividing quantize kernels take
// past the divider (x * (1/s) with Markstein's exact correction on the FMA units; the others
// divide): 2 or 3. Which is faster depends on the divider: measured on 4K-64K int8 calls, Intel's
// (AVX-512 host of 2026-11-25: 3 of 4 13.0 Gelem/s against 10.7 for 2 of 4 and 12.3 for all 4)
// against AMD Zen 4's faster divider (2 of 4 fastest: 12.2-12.5 against 11.6 for all 4); on Zen 5
// (2026-11-26, bench_kernels --qk_divider_bypass) 3 of 4 was no faster than 2, within 4 %.
// Both give the same bits. Tests set it to reach both block shapes on any CPU.
namespace detail {
inline int default_divider_bypass() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // Vendor string "GenuineIntel": ebx "Genu", edx "ineI", ecx "ntel".
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) != 0 && ebx == 0x756e6547u && edx == 0x49656e69u &&
      ecx == 0x6c65746eu)
    return 3;
#endif
  return 2;
}
inline int& divider_bypass_storage() {
  static int vectors = default_divider_bypass();
  return vectors;
}
}  // namespace detail
inline int divider_bypass_vectors() { return detail::divider_bypass_storage(); }

// quantize (out_type integer) or fake-quantize (out_type f32). Per parameter index p:
//   factor[p] = scale or 1/scale (see application), zero[p] = float(zero point), scale[p].
// Kernels require qmin <= zero <= qmax, |qmin|, |qmax| <= 2^24 and the range to fit out_type.
// Calls whose input + output bytes exceed this store their output with non-temporal stores:
// past the last-level cache an ordinary store first reads the line it overwrites (a quarter
// more traffic for f32 -> int8), and the output would evict the rest anyway. The C library's
// last-level cache size, capped at 32 MiB: in virtual machines it often reports the whole
// host's cache, of which a guest's core sees a slice.
namespace detail {
// The threshold itself; tests lower it to reach the streaming path with small calls (under the
// sanitizers, 6.7M-element calls on every target take minutes).
inline std::size_t& stream_threshold_storage() {
  static std::size_t bytes = [] {
    constexpr std::size_t cap = std::size_t{32} << 20;
    long l3 = -1;
#if defined(_SC_LEVEL3_CACHE_SIZE)
    l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    return l3 > 0 && static_cast<std::size_t>(l3) < cap ? static_cast<std::size_t>(l3) : cap;
  }();
  return bytes;
}
}  // namespace detail
inline std::size_t stream_threshold_bytes() { return detail::stream_threshold_storage(); }

// Whether an element-wise call over `plan` moving `bytes_per_element` (input + output) streams
// its output. Not when the innermost output stride is not 1: such rows are written to a stack
// buffer and scattered from it (RunRow), and streaming the buffer would send it to memory only
// to read it back.
inline bool stream_output(const Plan& plan, std::size_t bytes_per_element) {
  const std::int64_t n = plan.size();
  if (plan.rank > 0 && plan.out_stride[plan.rank - 1] != 1) return false;
  return n > 0 && static_cast<std::size_t>(n) * bytes_per_element > stream_threshold_bytes();
}

// Per-channel requantize calls whose input + output bytes exceed this take a group of 64 rows
// whose biases mix signs in order, each row clamped on both sides of its bias (one op more per
// vector), instead of in three passes by the sign of the bias (rows out of order): past the
// core's own cache the hardware prefetcher does not follow those passes (Zen 5, static AVX-512,
// fixed point, rows of 196, random-sign biases: 16384 rows 6.2 -> 10.0 Gelem/s; 1024 rows,
// 1 MiB, 11.2 -> 9.0 the other way). The C library's level-2 cache size, 1 MiB when it
// reports none.
namespace detail {
inline std::size_t& rows_in_order_storage() {
  static std::size_t bytes = [] {
    long l2 = -1;
#if defined(_SC_LEVEL2_CACHE_SIZE)
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return l2 > 0 ? static_cast<std::size_t>(l2) : std::size_t{1} << 20;
  }();
  return bytes;
}
}  // namespace detail
inline std::size_t rows_in_order_bytes() { return detail::rows_in_order_storage(); }

// How far ahead (bytes) streaming calls prefetch their input on AVX2 and SSE targets
// (PrefetchStreamInput in common-inl.h says why); 0 turns the prefetch off. Read when the
// kernel arguments are made; bench_kernels' --qk_stream_prefetch sets it for A/B runs.
namespace detail {
inline std::size_t& stream_prefetch_storage() {
  static std::size_t bytes = 512;
  return bytes;
}
}  // namespace detail
inline std::size_t stream_prefetch_bytes() { return detail::stream_prefetch_storage(); }

struct QuantizeArgs {
  Plan plan;
  const float* x = nullptr;
  void* out = nullptr;
  ElemType out_type = ElemType::i8;
  RoundingMode rounding = RoundingMode::half_even;  // never custom
  ScaleApplicationKind application = ScaleApplicationKind::divide;
  const float* factor = nullptr;
  const float* zero = nullptr;
  const float* scale = nullptr;  // fake-quantize only
  float qmin = -128.0f;
  float qmax = 127.0f;
  UniformSource uniforms;  // stochastic only
  bool stream = false;     // non-temporal output stores (stream_output; the front end sets it)
  std::size_t stream_prefetch = stream_prefetch_bytes();  // with stream: input prefetch distance
  int divider_bypass = divider_bypass_vectors();  // AVX-512 / AVX2 dividing blocks: 2 or 3
  // Kernel-internal (any value passed in is replaced): AVX2's half-even byte and 16-bit blocks
  // read MXCSR once per call and round with VCVTPS2DQ only while it rounds to nearest. Mutable:
  // the kernel sets it on the call's own arguments (a copy per call was a tenth of a 16-value
  // call's instructions).
  mutable bool round_by_csr = false;
};

// The quantize kernels' per-parameter floats from a call's scales and zero points, and their
// check, in one pass (the front end's kernel_params for many parameters): zero[i] =
// float(zero_point[i]); factor[i] = 1 / scale[i] when factor != nullptr (multiply by the
// reciprocal). Returns nonzero when a scale is not finite and > 0, a reciprocal written to
// factor is not finite (kMinReciprocalScale), or a zero point lies outside
// [qmin, qmax] (quantkit::detail::ParamTest); the outputs are then unspecified. With zero ==
// nullptr (and factor == nullptr) the pass only checks (the dequantize front end's params_ok).
struct QuantizeParamsArgs {
  const float* scale = nullptr;
  const std::int32_t* zero_point = nullptr;
  std::size_t count = 0;
  std::int32_t qmin = -128, qmax = 127;
  float* zero = nullptr;    // nullptr: check only
  float* factor = nullptr;  // nullptr: not written
};

// x = float(q - zero[p]) * scale[p]
struct DequantizeArgs {
  Plan plan;
  const void* q = nullptr;
  ElemType in_type = ElemType::i8;
  float* out = nullptr;
  const float* scale = nullptr;
  const std::int32_t* zero = nullptr;
  bool stream = false;  // non-temporal output stores (stream_output; the front end sets it)
};

// Per-channel constants of a requantization scheme, prepared by the front end (api.hpp):
//   float_multiplier  kf = multiplier
//   power_of_two      k0 = shift, k1 = 2^shift - 1, k2 = shift ? 2^(shift-1) : 1
//   fixed_point       k0 = q, k1 = left, k2 = right (the kernels derive 2^right - 1 and
//                     the saturation bounds INT32_MIN >> left, INT32_MAX >> left)
//   fixed_point_single k0 = q, k1 = 30 - shift (the first of two right shifts)
//   single_shift      k0 = min(shift, 31)
//   double_shift      k0 = shift1, k1 = shift2, k2 = 2^(shift2 - 1)
// bias[p] is added (saturating) first; out = clamp(apply + zero_point, lo, hi).
struct RequantizeArgs {
  Plan plan;
  const std::int32_t* acc = nullptr;
  void* out = nullptr;
  ElemType out_type = ElemType::i8;
  RequantScheme scheme = RequantScheme::fixed_point;
  RoundingMode rounding = RoundingMode::half_even;  // float_multiplier, power_of_two
  const std::int32_t* k[7] = {};
  const float* kf = nullptr;
  const std::int32_t* bias = nullptr;
  std::int32_t zero_point = 0;
  std::int32_t lo = -128;
  std::int32_t hi = 127;
  bool stream = false;  // non-temporal output stores (stream_output; the front end sets it)
  // per-channel rows of mixed-sign biases in order, both sides of each bias clamped
  // (rows_in_order_bytes; the front end sets it)
  bool rows_in_order = false;
  std::size_t stream_prefetch = stream_prefetch_bytes();  // with stream: input prefetch distance
};

// A layer's constants in RequantizeArgs' form (k, kf above) for `count` channels, and their
// check, in one pass: the front end's kernel_requant_constants for more than one channel (the
// front end's own loops stayed scalar at -O2 and are compiled for the baseline target).
// `constants` points at Scheme::Constants structs read as 32-bit words: two per constant for
// fixed_point, fixed_point_single (multiplier, shift) and double_shift (shift1, shift2), one for
// the others; one constant for every channel when `broadcast`. `shift_min[w]`..`shift_max[w]`:
// where the scheme's arithmetic is defined for word w when it is a shift (Scheme::kMinShift ...).
// Returns kRequantUncovered when a constant lies outside what the kernels cover (the reference
// runs the call; the outputs are then unspecified) and kRequantUndefined when a shift lies
// outside its defined range (the front end throws, naming it).
struct RequantConstantsArgs {
  RequantScheme scheme = RequantScheme::fixed_point;
  const void* constants = nullptr;
  bool broadcast = false;
  std::size_t count = 0;
  std::int32_t shift_min[2] = {0, 0};
  std::int32_t shift_max[2] = {0, 0};
  std::int32_t* k[3] = {};  // the slots the scheme writes (requant_slots in api.hpp)
  float* kf = nullptr;      // float_multiplier
};
constexpr std::uint32_t kRequantUncovered = 1;
constexpr std::uint32_t kRequantUndefined = 2;

// Min and max of the finite values (std::min/std::max order: the first of equal values wins,
// which only matters for -0.0 vs +0.0); +inf/-inf when there is none.
struct MinMaxResult {
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  std::size_t finite = 0;
  std::size_t nonfinite = 0;
};

struct AbsMaxResult {
  float absmax = 0.0f;  // max |x| over the finite values; 0 when there is none
  std::size_t finite = 0;
  std::size_t nonfinite = 0;
};

// Per-parameter (channel/block) min/max: min[p], max[p] are updated in place as
// Range::include does, element by element in row-major order; non-finite values are skipped
// and counted.
struct MinMaxParamsArgs {
  Plan plan;  // in_stride only
  const float* x = nullptr;
  float* min = nullptr;
  float* max = nullptr;
};

// Histogram of x (or |x| when absolute) over [lo, hi] in `bins` equal bins:
//   bin = min(bins - 1, int(((v - lo) * float(bins)) / (hi - lo)))   for lo <= v <= hi
// (torch.histc's formula); values below lo / above hi / NaN are not binned but counted.
// counts[0..bins) are incremented (accumulation). Requires lo < hi, both finite.
struct HistogramArgs {
  const float* x = nullptr;
  std::size_t n = 0;
  float lo = 0.0f;
  float hi = 1.0f;
  std::size_t bins = 0;
  bool absolute = false;
  std::uint64_t* counts = nullptr;
  // When set (absolute must be false): also the min/max of x's finite values and the count of
  // non-finite ones, exactly as minmax() gives them, from the same pass.
  MinMaxResult* minmax = nullptr;
};

struct HistogramResult {
  std::size_t below = 0;
  std::size_t above = 0;
  std::size_t nan = 0;
};

// Histogram on a power-of-two grid (GridHistogram's): value v goes to bin floor(v * inv_width)
// - base, with floor(t) = int(t) - (t < int(t)) - (v < 0 && t == 0) (the product underflowing
// to zero keeps v's side of 0). counts[0..bins) are incremented (accumulation). Values whose
// bin lies outside [0, bins), NaN and +-Inf are not counted. Requires inv_width a power of
// two and base .. base + bins - 1 within (-2^31, 2^31), so |v * inv_width| < 2^31 for every
// value counted.
struct GridHistogramArgs {
  const float* x = nullptr;
  std::size_t n = 0;
  float inv_width = 1.0f;
  std::int32_t base = 0;
  std::size_t bins = 0;
  std::uint64_t* counts = nullptr;
  // When set: also the min/max of x's finite values and the count of non-finite ones, exactly
  // as minmax() gives them, from the same pass.
  MinMaxResult* minmax = nullptr;
};

struct GemmKernels;  // quantkit/simd/gemm_abi.hpp

// C = A * B in float (quantkit/simd/gemm_f32.hpp): element (i, k) of A at a[i * a_row + k * a_col],
// (k, j) of B at b[k * b_row + j * b_col] (strides in elements: transposes are strides), C
// row-major with leading dimension ldc. Every C[i][j] is ((0 + p0) + p1) + ... + p(K-1) with
// pk = A[i][k] * B[k][j], each product and sum rounded to float (no fused multiply-add), in
// that order: quantkit::ref::gemm_f32's value on every target.
struct GemmF32Args {
  std::size_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  std::ptrdiff_t a_row = 0, a_col = 1;
  const float* b = nullptr;
  std::ptrdiff_t b_row = 0, b_col = 1;
  float* c = nullptr;
  std::size_t ldc = 0;
  // When set: B as Kernels::gemm_f32_pack_b packed it with a target of the same gemm_f32_nr
  // (b, b_row and b_col are then not read).
  const float* b_packed = nullptr;
};

// The layout version of Kernels and of every struct it passes (this header's, gemm_abi.hpp's).
// Bump it with any change to them: the runtime-dispatch implementation's symbols carry it
// (namespace detail::abi_v<N>, quantkit/simd/dispatch.hpp), so an implementation compiled from
// other quantkit headers than its callers does not link (QUANTKIT_SIMD_DYNAMIC: "undefined
// reference to quantkit::simd::detail::abi_v<N>::dynamic_kernels()") or, under the weak
// reference, is not picked up (dynamic_dispatch() is false: static dispatch) instead of being
// called with another layout. tests/test_simd_raw_checks.cpp pins the sizes of this version.
#define QUANTKIT_SIMD_ABI_VERSION 2
#define QUANTKIT_SIMD_ABI_NAMESPACE QUANTKIT_SIMD_ABI_NAMESPACE_(QUANTKIT_SIMD_ABI_VERSION)
#define QUANTKIT_SIMD_ABI_NAMESPACE_(v) QUANTKIT_SIMD_ABI_NAMESPACE__(v)
#define QUANTKIT_SIMD_ABI_NAMESPACE__(v) abi_v##v

// One target's kernels. `target` is the Highway target bit (HWY_AVX2, ...), `name` its name.
struct Kernels {
  std::int64_t target = 0;
  const char* name = "";
  void (*quantize)(const QuantizeArgs&) = nullptr;
  void (*dequantize)(const DequantizeArgs&) = nullptr;
  void (*requantize)(const RequantizeArgs&) = nullptr;
  std::uint32_t (*quantize_params)(const QuantizeParamsArgs&) = nullptr;  // nonzero: a bad value
  std::uint32_t (*requant_constants)(const RequantConstantsArgs&) = nullptr;  // kRequant* bits
  // 2- and 4-bit packing of value bytes (two's complement), low bits first (ONNX order).
  void (*pack)(const std::uint8_t* values, std::size_t n, int bits, std::uint8_t* packed) = nullptr;
  void (*unpack)(const std::uint8_t* packed, std::size_t n, int bits, bool is_signed,
                 std::uint8_t* values) = nullptr;
  MinMaxResult (*minmax)(const float* x, std::size_t n) = nullptr;
  AbsMaxResult (*absmax)(const float* x, std::size_t n) = nullptr;
  std::size_t (*minmax_params)(const MinMaxParamsArgs&) = nullptr;  // returns #non-finite
  HistogramResult (*histogram)(const HistogramArgs&) = nullptr;
  std::size_t (*grid_histogram)(const GridHistogramArgs&) = nullptr;  // returns #counted
  const GemmKernels* gemm = nullptr;  // int8 GEMM (quantkit/simd/gemm.hpp)
  void (*gemm_f32)(const GemmF32Args&) = nullptr;  // float GEMM (quantkit/simd/gemm_f32.hpp)
  // B packed once for gemm_f32 (GemmF32Args::b_packed): ceil(n / gemm_f32_nr) panels of
  // gemm_f32_nr() columns by k, the layout of every target with the same width.
  void (*gemm_f32_pack_b)(const GemmF32Args& b, float* packed) = nullptr;
  std::size_t (*gemm_f32_nr)() = nullptr;
  // out[i] = table[in[i]] (256 entries); in may equal out.
  void (*lookup_bytes)(const std::uint8_t* table, const std::uint8_t* in, std::uint8_t* out,
                       std::size_t n) = nullptr;
  // out unit i = bytewise max(in unit 2i, in unit 2i + 1); units of `unit` bytes (any size),
  // int8 or uint8 values.
  void (*max_pairs)(const std::uint8_t* in, std::size_t n_out, std::size_t unit, bool is_signed,
                    std::uint8_t* out) = nullptr;
  // sum[i] = sum_t w[t] * in[offset[t] + i], i < n, modulo 2^32 (depthwise taps of one plane).
  void (*depthwise_rows)(const std::uint8_t* in, std::size_t n, const std::int32_t* w, const std::int64_t* offset,
                         std::size_t taps, std::int32_t* sum) = nullptr;
  // sum[i] = ((+0 + w[0] in[offset[0] + i]) + w[1] in[offset[1] + i]) + ..., i < n, every
  // product and sum rounded to float in that order (no FMA): the float depthwise taps.
  void (*depthwise_rows_f32)(const float* in, std::size_t n, const float* w, const std::int64_t* offset,
                             std::size_t taps, float* sum) = nullptr;
};

}  // namespace simd
}  // namespace quantkit
