// IntConv and IntMatMul as ONNX Runtime's default session computes them on x86-64 CPUs without
// AVX-VNNI (IntegerModeOptions::ort_pair_saturation): with uint8 activations and int8 weights of
// zero point 0, each pair of products is summed in int16 with saturation
// (quantkit/executor/integer/ort_pairs.hpp) before the int32 accumulation; the zero-point term
// and the bias are exact, and the requantization is the mode's. Everything ONNX Runtime computes
// exactly there stays the exact op: depthwise Conv, int8 activations, uint8 weights or weight
// zero points, 16-bit data. The pair sums run on the SIMD pair-sum kernel without statistics
// (GemmKernels::pair_sums; VPMADDUBSW on x86, as ONNX Runtime).
#pragma once

#include <cstdint>
#include <vector>

#include "quantkit/executor/integer/ops.hpp"
#include "quantkit/executor/integer/ort_pairs.hpp"

namespace quantkit {
namespace integer {

namespace detail {
// The weights' row sums (Conv: per output channel; MatMul: per column), for z_x * sum(w).
inline std::vector<std::int64_t> weight_sums(const Tensor& w, bool columns) {
  const std::int64_t rows = w.dim(0), per = rows ? w.size() / rows : 0;
  std::vector<std::int64_t> out(static_cast<std::size_t>(columns ? per : rows), 0);
  const std::int8_t* p = w.data<std::int8_t>();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < per; ++k) out[static_cast<std::size_t>(columns ? k : r)] += p[r * per + k];
  return out;
}

inline bool all_zero(const std::vector<std::int32_t>& v) {
  for (std::int32_t z : v)
    if (z != 0) return false;
  return true;
}
}  // namespace detail

template <class Scheme>
void op_int_conv_ort_pairs(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  if (x.dtype() != DType::uint8 || w.dtype() != DType::int8 || w.rank() < 3) return op_int_conv<Scheme>(ctx);
  const detail::Affine xa = detail::affine(ctx, 1, 2, "input");
  const detail::Affine ya = detail::affine(ctx, 6, 7, "output");
  detail::expect_type(ctx, x, xa.type, "input");
  const std::int64_t group = ctx.node().attr_int("group", 1);
  const ops::WindowGeometry g = ops::conv_geometry(ctx, x.shape(), w.shape(), group);
  const std::int64_t M = w.dim(0);
  const auto wz = detail::weight_zero_points(ctx, 5, w, M);
  if (!detail::all_zero(wz) || (x.dim(1) / group == 1 && M / group == 1)) return op_int_conv<Scheme>(ctx);
  const auto ws = detail::weight_scales(ctx, 4, M);
  const auto bias = detail::bias_of(ctx, 8, M);
  detail::check_accumulator(ctx, x.dim(1) / group * g.kernel_size(), w.dtype(), wz, bias, x.dtype());
  const Dims out_shape = ops::conv_output_shape(x.shape(), M, g);
  const auto sums = detail::weight_sums(w, false);
  const std::int64_t zx = xa.zero_point;
  std::vector<std::int32_t> acc(static_cast<std::size_t>(out_shape.product()));
  const auto fail = [&ctx](auto&&... parts) { ctx.fail(std::forward<decltype(parts)>(parts)...); };
  ort_conv_pair_sums(g, group, x, xa.zero_point, w, fail,
                     [&](std::int64_t i, std::int64_t m, std::int64_t, std::int64_t saturated) {
                       acc[static_cast<std::size_t>(i)] =
                           static_cast<std::int32_t>(saturated - zx * sums[static_cast<std::size_t>(m)]);
                     },
                     PairSumDetail::saturated_only);
  detail::set_conv_output<Scheme>(ctx, acc, out_shape, xa, ya, ws, bias);
}

template <class Scheme>
void op_int_matmul_ort_pairs(OpContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  if (a.dtype() != DType::uint8 || b.dtype() != DType::int8 || b.rank() != 2) return op_int_matmul<Scheme>(ctx);
  const detail::Affine aa = detail::affine(ctx, 1, 2, "input a");
  const detail::Affine ya = detail::affine(ctx, 6, 7, "output");
  detail::expect_type(ctx, a, aa.type, "input a");
  const std::int64_t K = b.dim(0), N = b.dim(1);
  const auto bz = detail::weight_zero_points(ctx, 5, b, N);
  if (!detail::all_zero(bz)) return op_int_matmul<Scheme>(ctx);
  if (a.rank() < 1 || a.dim(a.rank() - 1) != K)
    ctx.fail("input shape ", a.shape().to_string(), " does not match weight ", b.shape().to_string(), "; expected [..., ",
             K, "]");
  const auto bs = detail::weight_scales(ctx, 4, N);
  const auto bias = detail::bias_of(ctx, 8, N);
  detail::check_accumulator(ctx, K, b.dtype(), bz, bias, a.dtype());
  Dims out_shape = a.shape();
  out_shape[a.rank() - 1] = N;
  const auto sums = detail::weight_sums(b, true);
  const std::int64_t za = aa.zero_point;
  std::vector<std::int32_t> acc(static_cast<std::size_t>(out_shape.product()));
  const auto fail = [&ctx](auto&&... parts) { ctx.fail(std::forward<decltype(parts)>(parts)...); };
  ort_gemm_pair_sums(a, false, b, false, fail, [&](std::int64_t i, std::int64_t n, std::int64_t, std::int64_t saturated) {
    acc[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(saturated - za * sums[static_cast<std::size_t>(n)]);
  }, PairSumDetail::saturated_only);
  detail::set_matmul_output<Scheme>(ctx, acc, out_shape, aa, ya, bs, bias);
}

// Replaces IntConv and IntMatMul of register_integer_ops<Scheme> with the emulations.
template <class Scheme>
void register_ort_pair_ops(OpRegistry& r) {
  const std::vector<std::string> conv = {"auto_pad", "dilations", "group",  "kernel_shape", "pads",
                                         "strides",  "clamp",     "then_lut", "then_type"};
  r.add("IntConv", with_folded_table<op_int_conv_ort_pairs<Scheme>>, conv, {}, kDomain);
  r.add("IntMatMul", with_folded_table<op_int_matmul_ort_pairs<Scheme>>, {"clamp", "then_lut", "then_type"}, {},
        kDomain);
}

}  // namespace integer
}  // namespace quantkit
