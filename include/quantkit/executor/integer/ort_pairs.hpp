// ONNX Runtime's uint8 x int8 accumulation on x86-64 CPUs without AVX-VNNI: MLAS multiplies with
// VPMADDUBSW, which adds each pair of products of the reduction (k = 2j, 2j + 1) into int16 with
// saturation before the int32 sum, so a pair of uint8 activations near 255 and int8 weights near
// +-127 (255 * 127 * 2 = 64770) comes out as 32767. ONNX Runtime's default session
// (session.x64quantprecision off) runs QLinearConv, QLinearMatMul, QGemm and MatMulIntegerToFloat
// this way there.
//
// The model of that arithmetic, checked bit for bit against ONNX Runtime 1.30 on an AVX2 host
// (tests/golden/ort_saturation.json, tools/golden/gen_ort_saturation_golden.py): the activations'
// raw uint8 integers (zero point included; Conv padding holds the zero point) times the stored
// int8 weights; pairs follow the reduction order, which for Conv is channels-last: (kernel
// position, input channel of the group), each group its own product; MatMul and Gemm pair along
// K. Depthwise Conv (one input and one output channel per group) sums in int32 and is exact.
// Used by analysis::ort_saturation (where it happens) and IntegerModeOptions::ort_pair_saturation
// (running a model as ONNX Runtime does there). The sums run on the SIMD pair-sum kernel
// (simd::GemmKernels::pair_sums, equal to ref::pair_sums_s16sat on every target) over
// channels-last patches (Conv) or rows (MatMul / Gemm).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/ops/conv.hpp"
#include "quantkit/graph/tensor.hpp"
#include "quantkit/simd/gemm.hpp"

namespace quantkit {
namespace integer {

// What saturating pair sums do to one node's accumulators.
struct PairSumStats {
  bool pair_sums = false;           // the node runs on the pairing kernel (false: exact int32)
  std::int64_t reduction = 0;       // K: products per accumulator
  std::int64_t outputs = 0;         // accumulators
  std::int64_t pairs = 0;           // pair sums: outputs * ceil(K / 2)
  std::int64_t saturated_pairs = 0; // pair sums outside int16
  std::int64_t affected_outputs = 0;  // accumulators the saturation changes
  std::int32_t max_pair = 0, min_pair = 0;  // the extreme pair sums, before saturation
  std::int64_t max_error = 0;       // max |saturated - exact| over the accumulators
};

// What ort_conv_pair_sums / ort_gemm_pair_sums compute: the exact sums and every statistic
// (statistics), or only the saturated sums (saturated_only: on_output's `exact` argument is the
// saturated sum too and PairSumStats counts only outputs and pairs; on x86 it runs ONNX Runtime's
// own instruction, VPMADDUBSW, about 4x faster).
enum class PairSumDetail { statistics, saturated_only };

namespace detail {

template <class Fail>
void expect_dtype(const graph::Tensor& t, graph::DType want, const Fail& fail, const char* what) {
  if (t.dtype() != want) fail(what, " has element type ", graph::to_string(t.dtype()), "; expected ", graph::to_string(want));
}

// The reduction padded to the kernel's step (zeros: pairs of 0 change nothing).
inline std::size_t padded_reduction(const simd::GemmKernels& g, std::int64_t K) {
  const std::size_t step = g.pair_step, k = static_cast<std::size_t>(K);
  return (k + step - 1) / step * step;
}

// `rows` rows of A (fill(row, dst) writes a row's K values; the padding stays 0) against bt
// (cols x kp, each column's K weights then zeros) through the pair-sum kernel; calls
// report(row, column, exact, saturated) in row-major order and adds to st.
template <class Fill, class Report>
void pair_sum_pass(const simd::GemmKernels& g, std::int64_t rows, std::int64_t cols, std::int64_t K, std::size_t kp,
                   const std::int8_t* bt, PairSumDetail mode, PairSumStats& st, Fill&& fill,
                   Report&& report) {
  constexpr std::size_t kChunk = 65536;  // the kernel's int32 sums are exact up to this K
  const bool stats = mode == PairSumDetail::statistics;
  const std::size_t ncols = static_cast<std::size_t>(cols);
  // rows per block: A's block about 256 KiB, a multiple of the kernel's 4-row blocks
  const std::size_t block =
      std::max<std::size_t>(4, std::min<std::size_t>(256, (262144 / std::max<std::size_t>(kp, 1)) / 4 * 4));
  std::vector<std::uint8_t> a(block * kp, 0);
  std::vector<std::int32_t> sat(block * ncols), ex(stats ? block * ncols : 0);
  std::vector<std::int64_t> sat64, ex64;
  simd::PairSumCounts counts;
  counts.max_pair = st.max_pair;
  counts.min_pair = st.min_pair;
  simd::PairSumArgs args;
  args.n = ncols;
  args.lda = args.ldb = kp;
  args.saturated = sat.data();
  args.exact = stats ? ex.data() : nullptr;
  args.ldc = ncols;
  for (std::int64_t r0 = 0; r0 < rows; r0 += static_cast<std::int64_t>(block)) {
    const std::size_t nb = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(block), rows - r0));
    for (std::size_t i = 0; i < nb; ++i) fill(r0 + static_cast<std::int64_t>(i), a.data() + i * kp);
    args.m = nb;
    const bool chunked = kp > kChunk;
    if (chunked) {
      sat64.assign(nb * ncols, 0);
      ex64.assign(stats ? nb * ncols : 0, 0);
    }
    std::size_t k0 = 0;
    do {  // once for K = 0: the sums are 0
      args.k = std::min(kChunk, kp - k0);
      args.a = a.data() + k0;
      args.bt = bt + k0;
      g.pair_sums(args, counts);
      if (chunked)
        for (std::size_t i = 0; i < nb * ncols; ++i) {
          sat64[i] += sat[i];
          if (stats) ex64[i] += ex[i];
        }
      k0 += kChunk;
    } while (k0 < kp);
    for (std::size_t i = 0; i < nb; ++i)
      for (std::size_t c = 0; c < ncols; ++c) {
        const std::size_t j = i * ncols + c;
        const std::int64_t s = chunked ? sat64[j] : sat[j];
        const std::int64_t e = stats ? (chunked ? ex64[j] : ex[j]) : s;
        const std::int64_t err = s > e ? s - e : e - s;
        st.affected_outputs += err != 0;
        st.max_error = std::max(st.max_error, err);
        report(r0 + static_cast<std::int64_t>(i), static_cast<std::int64_t>(c), e, s);
      }
  }
  st.outputs += rows * cols;
  st.pairs += rows * cols * ((K + 1) / 2);
  st.saturated_pairs += counts.saturated_pairs;
  st.max_pair = counts.max_pair;
  st.min_pair = counts.min_pair;
}

}  // namespace detail

// Conv: x (N x C x spatial, uint8), w (M x C/group x kernel, int8), geometry g. Calls
// on_output(index, channel, exact, saturated) for every accumulator: index into the output
// (N x M x out, row-major), channel its output channel; exact and saturated are the raw sums of
// x * w, zero points not subtracted (ONNX Runtime subtracts x_zero_point * sum(w) exactly
// afterwards, so their difference is the error). Depthwise: pair_sums false, no calls. The sums
// run on the pair-sum kernel of `kernels` (default: the active SIMD target).
template <class Fail, class F>
PairSumStats ort_conv_pair_sums(const ops::WindowGeometry& g, std::int64_t group, const graph::Tensor& x,
                                std::int32_t x_zero_point, const graph::Tensor& w, const Fail& fail, F&& on_output,
                                PairSumDetail mode = PairSumDetail::statistics,
                                const simd::Kernels* kernels = nullptr) {
  PairSumStats st;
  detail::expect_dtype(x, graph::DType::uint8, fail, "input x");
  detail::expect_dtype(w, graph::DType::int8, fail, "weight");
  // The geometry and group come from the caller: a mismatch with the tensors would read out of
  // bounds, and a zero point past uint8 would wrap into the padding.
  if (x_zero_point < 0 || x_zero_point > 255)
    fail("input x zero point ", x_zero_point, " is outside uint8's [0, 255]");
  if (group < 1 || x.rank() < 3 || w.rank() != x.rank() || w.dim(0) % group != 0 ||
      w.dim(1) * group != x.dim(1) || x.size() != x.dim(0) * x.dim(1) * g.in_size() ||
      w.size() != w.dim(0) * w.dim(1) * g.kernel_size())
    fail("input ", x.shape().to_string(), ", weight ", w.shape().to_string(), " and group ", group,
         " do not match the convolution (input N x C x spatial of ", g.in_size(), " values, weight M x C/group x ",
         g.kernel_size(), " kernel values, C and M multiples of the group)");
  const std::uint8_t* a = x.data<std::uint8_t>();
  const std::int8_t* b = w.data<std::int8_t>();
  const std::int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0), Cg = C / group, Mg = M / group;
  st.reduction = Cg * g.kernel_size();
  if (Cg == 1 && Mg == 1) return st;  // ONNX Runtime's depthwise kernel: int32 sums
  st.pair_sums = true;
  const simd::GemmKernels& gk = simd::gemm_kernels(kernels);
  const std::int64_t K = st.reduction, taps = g.kernel_size(), out_size = g.out_size();
  const std::size_t kp = detail::padded_reduction(gk, K);
  const std::uint8_t zx = static_cast<std::uint8_t>(x_zero_point);
  // each output channel's weights channels-last (kernel position, channel of the group), padded
  std::vector<std::int8_t> bt(static_cast<std::size_t>(M) * kp, 0);
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t c = 0; c < Cg; ++c)
      for (std::int64_t t = 0; t < taps; ++t)
        bt[static_cast<std::size_t>(m) * kp + static_cast<std::size_t>(t * Cg + c)] = b[(m * Cg + c) * taps + t];
  const std::int64_t plane = g.in_size();  // one input channel
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t gi = 0; gi < group; ++gi) {
      const std::uint8_t* xg = a + (n * C + gi * Cg) * plane;  // the group's first channel
      const auto fill = [&](std::int64_t o, std::uint8_t* dst) {
        const std::int64_t ow = o % g.out[2], oh = o / g.out[2] % g.out[1], od = o / (g.out[2] * g.out[1]);
        for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd)
          for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh)
            for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw, dst += Cg) {
              const std::int64_t id = od * g.stride[0] + kd * g.dilation[0] - g.pad_begin[0];
              const std::int64_t ih = oh * g.stride[1] + kh * g.dilation[1] - g.pad_begin[1];
              const std::int64_t iw = ow * g.stride[2] + kw * g.dilation[2] - g.pad_begin[2];
              if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2]) {
                const std::uint8_t* src = xg + (id * g.in[1] + ih) * g.in[2] + iw;
                for (std::int64_t c = 0; c < Cg; ++c) dst[c] = src[c * plane];
              } else {
                for (std::int64_t c = 0; c < Cg; ++c) dst[c] = zx;  // padding holds the zero point
              }
            }
      };
      detail::pair_sum_pass(gk, out_size, Mg, K, kp, bt.data() + static_cast<std::size_t>(gi * Mg) * kp, mode, st, fill,
                            [&](std::int64_t o, std::int64_t mg, std::int64_t e, std::int64_t s) {
                              const std::int64_t m = gi * Mg + mg;
                              on_output((n * M + m) * out_size + o, m, e, s);
                            });
    }
  return st;
}

// MatMul / Gemm: x [..., K] (transposed: x [K, rows]) times w [K, cols] (transposed: [cols, K]);
// index = row * cols + column, channel = the column.
template <class Fail, class F>
PairSumStats ort_gemm_pair_sums(const graph::Tensor& x, bool trans_a, const graph::Tensor& w, bool trans_b,
                                const Fail& fail, F&& on_output, PairSumDetail mode = PairSumDetail::statistics,
                                const simd::Kernels* kernels = nullptr) {
  PairSumStats st;
  detail::expect_dtype(x, graph::DType::uint8, fail, "input x");
  detail::expect_dtype(w, graph::DType::int8, fail, "weight");
  if (w.rank() != 2 || x.rank() < 1 || (trans_a && x.rank() != 2))
    fail("input ", x.shape().to_string(), ", weight ", w.shape().to_string(), "; expected a 2-D weight",
         trans_a ? " and a 2-D input" : "");
  const std::int64_t K = trans_b ? w.dim(1) : w.dim(0), cols = trans_b ? w.dim(0) : w.dim(1);
  const std::int64_t ak = trans_a ? x.dim(0) : x.dim(x.rank() - 1);
  if (ak != K)
    fail("input ", x.shape().to_string(), " reduces over ", ak, " values but weight ", w.shape().to_string(), " over ",
         K);
  const std::int64_t rows = x.size() / std::max<std::int64_t>(K, 1);
  st.reduction = K;
  st.pair_sums = true;
  const simd::GemmKernels& gk = simd::gemm_kernels(kernels);
  const std::size_t kp = detail::padded_reduction(gk, K);
  const std::uint8_t* a = x.data<std::uint8_t>();
  const std::int8_t* b = w.data<std::int8_t>();
  std::vector<std::int8_t> bt(static_cast<std::size_t>(cols) * kp, 0);  // cols x kp: each column's weights
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t c = 0; c < cols; ++c)
      bt[static_cast<std::size_t>(c) * kp + static_cast<std::size_t>(k)] = b[trans_b ? c * K + k : k * cols + c];
  const auto fill = [&](std::int64_t r, std::uint8_t* dst) {
    if (trans_a)
      for (std::int64_t k = 0; k < K; ++k) dst[k] = a[k * rows + r];
    else
      for (std::int64_t k = 0; k < K; ++k) dst[k] = a[r * K + k];
  };
  detail::pair_sum_pass(gk, rows, cols, K, kp, bt.data(), mode, st, fill,
                        [&](std::int64_t r, std::int64_t c, std::int64_t e, std::int64_t s) {
                          on_output(r * cols + c, c, e, s);
                        });
  return st;
}

}  // namespace integer
}  // namespace quantkit
