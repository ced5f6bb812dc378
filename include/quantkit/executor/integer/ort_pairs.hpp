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
// (running a model as ONNX Runtime does there).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/ops/conv.hpp"
#include "quantkit/graph/tensor.hpp"

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

namespace detail {

constexpr std::int32_t kInt16Max = 32767, kInt16Min = -32768;

// One accumulator: a (K raw uint8 values) . w (K int8 values).
template <class F>
void pair_dot(const std::int32_t* a, const std::int32_t* w, std::int64_t k, PairSumStats& st, std::int64_t index,
              std::int64_t channel, F& on_output) {
  std::int64_t exact = 0, saturated = 0;
  for (std::int64_t j = 0; j < k; j += 2) {
    std::int32_t p = a[j] * w[j];
    if (j + 1 < k) p += a[j + 1] * w[j + 1];  // an odd K's last pair holds a zero
    st.max_pair = std::max(st.max_pair, p);
    st.min_pair = std::min(st.min_pair, p);
    exact += p;
    const std::int32_t s = std::min(std::max(p, kInt16Min), kInt16Max);
    st.saturated_pairs += s != p;
    saturated += s;
  }
  st.pairs += (k + 1) / 2;
  st.outputs += 1;
  const std::int64_t err = saturated > exact ? saturated - exact : exact - saturated;
  st.affected_outputs += err != 0;
  st.max_error = std::max(st.max_error, err);
  on_output(index, channel, exact, saturated);
}

template <class Fail>
std::vector<std::int32_t> int_values(const graph::Tensor& t, graph::DType want, const Fail& fail, const char* what) {
  if (t.dtype() != want) fail(what, " has element type ", graph::to_string(t.dtype()), "; expected ", graph::to_string(want));
  std::vector<std::int32_t> out(static_cast<std::size_t>(t.size()));
  for (std::int64_t i = 0; i < t.size(); ++i)
    out[static_cast<std::size_t>(i)] = want == graph::DType::uint8 ? t.data<std::uint8_t>()[i] : t.data<std::int8_t>()[i];
  return out;
}

}  // namespace detail

// Conv: x (N x C x spatial, uint8), w (M x C/group x kernel, int8), geometry g. Calls
// on_output(index, channel, exact, saturated) for every accumulator: index into the output
// (N x M x out, row-major), channel its output channel; exact and saturated are the raw sums of
// x * w, zero points not subtracted (ONNX Runtime subtracts x_zero_point * sum(w) exactly
// afterwards, so their difference is the error). Depthwise: pair_sums false, no calls.
template <class Fail, class F>
PairSumStats ort_conv_pair_sums(const ops::WindowGeometry& g, std::int64_t group, const graph::Tensor& x,
                                std::int32_t x_zero_point, const graph::Tensor& w, const Fail& fail, F&& on_output) {
  PairSumStats st;
  const auto a = detail::int_values(x, graph::DType::uint8, fail, "input x");
  const auto b = detail::int_values(w, graph::DType::int8, fail, "weight");
  const std::int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0), Cg = C / group, Mg = M / group;
  st.reduction = Cg * g.kernel_size();
  if (Cg == 1 && Mg == 1) return st;  // ONNX Runtime's depthwise kernel: int32 sums
  st.pair_sums = true;
  const std::int64_t K = st.reduction, taps = g.kernel_size(), out_size = g.out_size();
  // each output channel's weights in channels-last order (kernel position, channel)
  std::vector<std::int32_t> wk(static_cast<std::size_t>(K * M));
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t c = 0; c < Cg; ++c)
      for (std::int64_t t = 0; t < taps; ++t)
        wk[static_cast<std::size_t>(m * K + t * Cg + c)] = b[static_cast<std::size_t>((m * Cg + c) * taps + t)];
  std::vector<std::int32_t> patch(static_cast<std::size_t>(K));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t gi = 0; gi < group; ++gi)
      for (std::int64_t od = 0; od < g.out[0]; ++od)
        for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
          for (std::int64_t ow = 0; ow < g.out[2]; ++ow) {
            std::int64_t k = 0;
            for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd)
              for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh)
                for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                  const std::int64_t id = od * g.stride[0] + kd * g.dilation[0] - g.pad_begin[0];
                  const std::int64_t ih = oh * g.stride[1] + kh * g.dilation[1] - g.pad_begin[1];
                  const std::int64_t iw = ow * g.stride[2] + kw * g.dilation[2] - g.pad_begin[2];
                  const bool inside = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2];
                  for (std::int64_t c = 0; c < Cg; ++c, ++k)
                    patch[static_cast<std::size_t>(k)] =
                        inside ? a[static_cast<std::size_t>((((n * C + gi * Cg + c) * g.in[0] + id) * g.in[1] + ih) *
                                                                g.in[2] + iw)]
                               : x_zero_point;
                }
            const std::int64_t o = (od * g.out[1] + oh) * g.out[2] + ow;
            for (std::int64_t mg = 0; mg < Mg; ++mg) {
              const std::int64_t m = gi * Mg + mg;
              detail::pair_dot(patch.data(), wk.data() + m * K, K, st, (n * M + m) * out_size + o, m, on_output);
            }
          }
  return st;
}

// MatMul / Gemm: x [..., K] (transposed: x [K, rows]) times w [K, cols] (transposed: [cols, K]);
// index = row * cols + column, channel = the column.
template <class Fail, class F>
PairSumStats ort_gemm_pair_sums(const graph::Tensor& x, bool trans_a, const graph::Tensor& w, bool trans_b,
                                const Fail& fail, F&& on_output) {
  PairSumStats st;
  const auto a = detail::int_values(x, graph::DType::uint8, fail, "input x");
  const auto b = detail::int_values(w, graph::DType::int8, fail, "weight");
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
  std::vector<std::int32_t> wk(static_cast<std::size_t>(K * cols));  // cols x K: each column's weights
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t c = 0; c < cols; ++c)
      wk[static_cast<std::size_t>(c * K + k)] = b[static_cast<std::size_t>(trans_b ? c * K + k : k * cols + c)];
  std::vector<std::int32_t> row(static_cast<std::size_t>(K));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < K; ++k)
      row[static_cast<std::size_t>(k)] = a[static_cast<std::size_t>(trans_a ? k * rows + r : r * K + k)];
    for (std::int64_t c = 0; c < cols; ++c)
      detail::pair_dot(row.data(), wk.data() + c * K, K, st, r * cols + c, c, on_output);
  }
  return st;
}

}  // namespace integer
}  // namespace quantkit
