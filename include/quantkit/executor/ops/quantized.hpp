// Quantized ops: QuantizeLinear, DequantizeLinear (per-tensor and per-axis, through the SIMD
// kernels, bit-identical to quantkit::ref: round half to even, x / scale),
// DynamicQuantizeLinear, and the integer ops MatMulInteger, ConvInteger (exact int32
// accumulation), QLinearMatMul, QLinearConv (int32 accumulation, then requantization with a
// float multiplier s_a * s_b / s_y computed in float32, applied to the accumulator in float32
// and rounded half to even, as ONNX Runtime's MLAS does).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "quantkit/executor/ops/common.hpp"
#include "quantkit/executor/ops/conv.hpp"
#include "quantkit/executor/ops/gemm.hpp"
#include "quantkit/params.hpp"
#include "quantkit/policy/requantization.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/ref/quantize.hpp"
#include "quantkit/ref/requantize.hpp"
#include "quantkit/simd/simd.hpp"

namespace quantkit {
namespace ops {

namespace detail {

inline IntRange range_of(DType t) {
  switch (t) {
    case DType::int8: return {-128, 127};
    case DType::uint8: return {0, 255};
    case DType::int16: return {-32768, 32767};
    case DType::uint16: return {0, 65535};
    case DType::int32: return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    default: return {0, 0};
  }
}

// Scales and zero points of a QuantizeLinear/DequantizeLinear: scalar (per-tensor) or 1-D along
// `axis` of a tensor of shape `data`.
inline QuantParams linear_params(const OpContext& ctx, const Dims& data, const Tensor& scale,
                                 const Tensor* zero_point, DType qtype) {
  const auto& node = ctx.node();
  if (scale.dtype() != DType::float32)
    ctx.fail("scale '", scale.name(), "' has element type ", graph::to_string(scale.dtype()), "; expected float32");
  if (scale.rank() > 1)
    ctx.fail("scale '", scale.name(), "' has shape ", scale.shape().to_string(), "; expected a scalar or a 1-D tensor");
  if (zero_point && (zero_point->shape() != scale.shape() && zero_point->size() != scale.size()))
    ctx.fail("zero point '", zero_point->name(), "' has shape ", zero_point->shape().to_string(),
             "; expected the scale's shape ", scale.shape().to_string());
  if (zero_point && zero_point->dtype() != qtype)
    ctx.fail("zero point '", zero_point->name(), "' has element type ", graph::to_string(zero_point->dtype()),
             "; expected ", graph::to_string(qtype));
  QuantParams p;
  p.range = range_of(qtype);
  const std::size_t n = static_cast<std::size_t>(scale.size());
  p.scale.assign(scale.data<float>(), scale.data<float>() + n);
  p.zero_point.assign(n, 0);
  if (zero_point)
    for (std::size_t i = 0; i < n; ++i)
      p.zero_point[i] = static_cast<std::int32_t>(zero_point->as_int64(static_cast<std::int64_t>(i)));
  if (scale.rank() == 1 && !(n == 1 && data.rank == 0)) {
    const int axis = normalize_axis(ctx, node.attr_int("axis", 1), data.rank);
    if (static_cast<std::int64_t>(n) != data[axis]) {
      if (n != 1)
        ctx.fail("scale '", scale.name(), "' has ", n, " values for axis ", axis, " of extent ", data[axis],
                 " (data ", data.to_string(), "); expected one per index along the axis");
    } else {
      p.granularity = Granularity::per_channel(axis);
    }
  }
  return p;
}

// The zero point of an integer op's input: scalar, or one per entry along a dimension.
inline std::vector<std::int32_t> zero_points(const OpContext& ctx, std::size_t index, DType data_type,
                                             std::int64_t per_entry, const char* what) {
  const Tensor* z = ctx.optional_input(index);
  if (!z) return {0};
  if (z->dtype() != data_type)
    ctx.fail(what, " zero point has element type ", graph::to_string(z->dtype()), "; expected ",
             graph::to_string(data_type), " (the data's type)");
  if (z->size() != 1 && z->size() != per_entry)
    ctx.fail(what, " zero point has shape ", z->shape().to_string(), "; expected a scalar or ", per_entry, " values");
  std::vector<std::int32_t> v(static_cast<std::size_t>(z->size()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(z->as_int64(static_cast<std::int64_t>(i)));
  return v;
}

inline float scalar_scale(const OpContext& ctx, std::size_t index, const char* what) {
  const Tensor& s = ctx.input(index, DType::float32);
  if (s.size() != 1) ctx.fail(what, " scale has shape ", s.shape().to_string(), "; expected a scalar");
  const float v = s.data<float>()[0];
  if (!(v > 0.0f) || !std::isfinite(v)) ctx.fail(what, " scale is ", v, "; expected a finite value > 0");
  return v;
}

inline std::vector<float> channel_scales(const OpContext& ctx, std::size_t index, std::int64_t channels, const char* what) {
  const Tensor& s = ctx.input(index, DType::float32);
  if (s.size() != 1 && s.size() != channels)
    ctx.fail(what, " scale has shape ", s.shape().to_string(), "; expected a scalar or ", channels, " values");
  std::vector<float> v(s.data<float>(), s.data<float>() + s.size());
  for (float f : v)
    if (!(f > 0.0f) || !std::isfinite(f)) ctx.fail(what, " scale is ", f, "; expected a finite value > 0");
  return v;
}

inline void expect_int8(const OpContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DType::int8 && t.dtype() != DType::uint8)
    ctx.fail(what, " has element type ", graph::to_string(t.dtype()), "; expected int8 or uint8");
}

// t - zp[i(index)] widened to int32; `channel_of(i)` picks the zero point of element i.
template <class F>
std::vector<std::int32_t> widen(const Tensor& t, const std::vector<std::int32_t>& zp, F&& channel_of) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(t.size()));
  graph::visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<std::int32_t>(p[i]) -
               zp[zp.size() == 1 ? 0 : static_cast<std::size_t>(channel_of(static_cast<std::int64_t>(i)))];
  });
  return out;
}

using QLinearScheme = FloatMultiplier<RoundHalfEven>;

// out = saturate(round_half_even(acc * m[c]) + zp) for accumulators laid out [outer, C, inner]
// (conv) or [rows, C] (matmul, inner = 1).
inline Tensor requantize_output(const OpContext& ctx, const std::vector<std::int32_t>& acc, const Dims& shape,
                                const std::vector<double>& multipliers, std::int64_t channels,
                                std::int64_t inner, std::size_t zp_index) {
  const Tensor& zt = ctx.input(zp_index);
  expect_int8(ctx, zt, "output zero point");
  if (zt.size() != 1) ctx.fail("output zero point has shape ", zt.shape().to_string(), "; expected a scalar");
  const IntRange r = range_of(zt.dtype());
  const auto zp = static_cast<std::int32_t>(zt.as_int64(0));
  const std::string layer = ctx.node().name.empty() ? ctx.node().outputs.at(0) : ctx.node().name;
  std::vector<QLinearScheme::Constants> k;
  for (double m : multipliers) k.push_back(QLinearScheme::make(m, layer));
  Tensor y(zt.dtype(), shape);
  graph::visit_dtype(zt.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    for (std::size_t i = 0; i < acc.size(); ++i) {
      const std::size_t c = k.size() == 1 ? 0 : static_cast<std::size_t>((static_cast<std::int64_t>(i) / inner) % channels);
      py[i] = static_cast<T>(ref::requantize_value<QLinearScheme>(acc[i], 0, k[c], zp, r.qmin, r.qmax));
    }
  });
  return y;
}

}  // namespace detail

inline void op_quantize_linear(OpContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const Tensor* zp = ctx.optional_input(2);
  const DType qtype = zp ? zp->dtype() : DType::uint8;
  if (qtype != DType::int8 && qtype != DType::uint8 && qtype != DType::int16 && qtype != DType::uint16)
    ctx.fail("zero point has element type ", graph::to_string(qtype), "; expected int8, uint8, int16 or uint16");
  Tensor xf;
  const Tensor* x = &x0;
  if (x0.dtype() == DType::int32) {  // opset 10-12 accept int32 input
    xf = Tensor(DType::float32, x0.shape(), x0.name());
    for (std::int64_t i = 0; i < x0.size(); ++i) xf.data<float>()[i] = static_cast<float>(x0.data<std::int32_t>()[i]);
    x = &xf;
  } else if (x0.dtype() != DType::float32) {
    ctx.fail("input has element type ", graph::to_string(x0.dtype()), "; expected float32 or int32");
  }
  const QuantParams p = detail::linear_params(ctx, x->shape(), ctx.input(1), zp, qtype);
  Tensor y = Tensor::uninitialized(qtype, x->shape());  // the kernel writes every element
  graph::visit_dtype(qtype, [&](auto tag) {
    using Q = decltype(tag);
    if constexpr (std::is_same_v<Q, std::int8_t> || std::is_same_v<Q, std::uint8_t> || std::is_same_v<Q, std::int16_t> ||
                  std::is_same_v<Q, std::uint16_t>)
      simd::quantize(x->view<float>(), p, y.view<Q>(), RoundHalfEven{}, ScaleApplicationKind::divide);
  });
  ctx.set_output(0, std::move(y));
}

inline void op_dequantize_linear(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::int8 && x.dtype() != DType::uint8 && x.dtype() != DType::int16 && x.dtype() != DType::uint16 &&
      x.dtype() != DType::int32)
    ctx.fail("input has element type ", graph::to_string(x.dtype()), "; expected int8, uint8, int16, uint16 or int32");
  const Tensor* zp = ctx.optional_input(2);
  const QuantParams p = detail::linear_params(ctx, x.shape(), ctx.input(1), zp, x.dtype());
  if (x.dtype() == DType::int32)
    for (auto z : p.zero_point)
      if (z != 0) ctx.fail("int32 input with zero point ", z, "; expected zero point 0");
  Tensor y = Tensor::uninitialized(DType::float32, x.shape());  // the kernel writes every element
  graph::visit_dtype(x.dtype(), [&](auto tag) {
    using Q = decltype(tag);
    if constexpr (std::is_same_v<Q, std::int8_t> || std::is_same_v<Q, std::uint8_t> || std::is_same_v<Q, std::int16_t> ||
                  std::is_same_v<Q, std::uint16_t> || std::is_same_v<Q, std::int32_t>)
      simd::dequantize(x.view<Q>(), p, y.view<float>());
  });
  ctx.set_output(0, std::move(y));
}

// uint8, scale = (max(0, max x) - min(0, min x)) / 255, zp = saturate(round(0 - min / scale)).
inline void op_dynamic_quantize_linear(OpContext& ctx) {
  const Tensor& x = ctx.input(0, DType::float32);
  const float* px = x.data<float>();
  float lo = 0.0f, hi = 0.0f;
  for (std::int64_t i = 0; i < x.size(); ++i) {
    if (std::isnan(px[i])) ctx.fail("input '", x.name(), "' holds NaN at index ", i, "; expected finite values");
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  const IntRange r{0, 255};
  const float scale = (hi - lo) / 255.0f;
  Tensor y(DType::uint8, x.shape());
  std::int32_t zp = 0;
  if (scale > 0.0f && std::isfinite(scale)) {
    const float zf = RoundHalfEven{}(0.0f - lo / scale);
    zp = static_cast<std::int32_t>(std::min(std::max(zf, 0.0f), 255.0f));
    std::uint8_t* py = y.data<std::uint8_t>();
    for (std::int64_t i = 0; i < x.size(); ++i)
      py[i] = static_cast<std::uint8_t>(ref::quantize_value(px[i], scale, ScaleApplicationKind::divide, zp, r, RoundHalfEven{}));
  } else if (!std::isfinite(scale)) {
    ctx.fail("input range [", lo, ", ", hi, "] gives scale ", scale, "; expected a finite range");
  }
  ctx.set_output(0, std::move(y));
  ctx.set_output(1, Tensor::scalar(scale));
  ctx.set_output(2, Tensor::scalar(static_cast<std::uint8_t>(zp)));
}

namespace detail {
// Integer matmul core shared by MatMulInteger and QLinearMatMul: zero points subtracted
// (a: scalar or per row, b: scalar or per column), int32 accumulators.
inline std::vector<std::int32_t> integer_matmul(const OpContext& ctx, const Tensor& a, const Tensor& b,
                                                const std::vector<std::int32_t>& azp,
                                                const std::vector<std::int32_t>& bzp, MatMulShape& s) {
  s = matmul_shape(ctx, a.shape(), b.shape());
  const std::int64_t M = s.M, K = s.K, N = s.N;
  if (azp.size() != 1 && static_cast<std::int64_t>(azp.size()) != M)
    ctx.fail("A zero point has ", azp.size(), " values; expected 1 or ", M, " (one per row)");
  if (bzp.size() != 1 && static_cast<std::int64_t>(bzp.size()) != N)
    ctx.fail("B zero point has ", bzp.size(), " values; expected 1 or ", N, " (one per column)");
  const auto a32 = widen(a, azp, [&](std::int64_t i) { return (i / K) % M; });
  const auto b32 = widen(b, bzp, [&](std::int64_t i) { return i % N; });
  std::vector<std::int32_t> acc(static_cast<std::size_t>(s.out.product()));
  matmul_core<std::int32_t>(a32.data(), b32.data(), s, acc.data());
  return acc;
}
}  // namespace detail

inline void op_matmul_integer(OpContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  detail::expect_int8(ctx, a, "input A");
  detail::expect_int8(ctx, b, "input B");
  const Dims as = a.shape(), bs = b.shape();
  const std::int64_t M = as.rank >= 2 ? as[as.rank - 2] : 1, N = bs.rank >= 2 ? bs[bs.rank - 1] : 1;
  const auto azp = detail::zero_points(ctx, 2, a.dtype(), M, "A");
  const auto bzp = detail::zero_points(ctx, 3, b.dtype(), N, "B");
  MatMulShape s;
  auto acc = detail::integer_matmul(ctx, a, b, azp, bzp, s);
  Tensor y(DType::int32, s.out);
  std::copy(acc.begin(), acc.end(), y.data<std::int32_t>());
  ctx.set_output(0, std::move(y));
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp); b may be per column.
inline void op_qlinear_matmul(OpContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  detail::expect_int8(ctx, a, "input a");
  detail::expect_int8(ctx, b, "input b");
  const std::int64_t N = b.rank() >= 2 ? b.dim(b.rank() - 1) : 1;
  const float as = detail::scalar_scale(ctx, 1, "a");
  const auto bs = detail::channel_scales(ctx, 4, N, "b");
  const float ys = detail::scalar_scale(ctx, 6, "y");
  const auto azp = detail::zero_points(ctx, 2, a.dtype(), 1, "a");
  const auto bzp = detail::zero_points(ctx, 5, b.dtype(), N, "b");
  MatMulShape s;
  const auto acc = detail::integer_matmul(ctx, a, b, azp, bzp, s);
  std::vector<double> m;
  for (float v : bs) m.push_back(static_cast<double>(as * v / ys));  // in float, as ONNX Runtime
  ctx.set_output(0, detail::requantize_output(ctx, acc, s.out, m, N, 1, 7));
}

namespace detail {
// Integer convolution: zero points subtracted (x: scalar, w: scalar or per output channel),
// padding contributes 0, int32 accumulators laid out N x M x out.
inline std::vector<std::int32_t> integer_conv(const OpContext& ctx, const Tensor& x, const Tensor& w,
                                              const std::vector<std::int32_t>& xzp,
                                              const std::vector<std::int32_t>& wzp, Dims& out_shape,
                                              WindowGeometry& g) {
  const std::int64_t group = ctx.node().attr_int("group", 1);
  g = conv_geometry(ctx, x.shape(), w.shape(), group);
  const std::int64_t M = w.dim(0), per_m = w.size() / std::max<std::int64_t>(M, 1);
  if (xzp.size() != 1) ctx.fail("input zero point has ", xzp.size(), " values; expected a scalar");
  if (wzp.size() != 1 && static_cast<std::int64_t>(wzp.size()) != M)
    ctx.fail("weight zero point has ", wzp.size(), " values; expected 1 or ", M, " (one per output channel)");
  const auto x32 = widen(x, xzp, [](std::int64_t) { return 0; });
  const auto w32 = widen(w, wzp, [&](std::int64_t i) { return i / per_m; });
  out_shape = conv_output_shape(x.shape(), M, g);
  std::vector<std::int32_t> acc(static_cast<std::size_t>(out_shape.product()));
  conv_core<std::int32_t>(x32.data(), x.shape(), w32.data(), w.shape(), group, g, 0, acc.data());
  return acc;
}
}  // namespace detail

inline void op_conv_integer(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  detail::expect_int8(ctx, x, "input x");
  detail::expect_int8(ctx, w, "weight w");
  const auto xzp = detail::zero_points(ctx, 2, x.dtype(), 1, "x");
  const auto wzp = detail::zero_points(ctx, 3, w.dtype(), w.rank() ? w.dim(0) : 1, "w");
  Dims out;
  WindowGeometry g;
  const auto acc = detail::integer_conv(ctx, x, w, xzp, wzp, out, g);
  Tensor y(DType::int32, out);
  std::copy(acc.begin(), acc.end(), y.data<std::int32_t>());
  ctx.set_output(0, std::move(y));
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): w per output channel,
// B int32 added to the accumulators (saturating) before requantization.
inline void op_qlinear_conv(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  detail::expect_int8(ctx, x, "input x");
  detail::expect_int8(ctx, w, "weight w");
  if (w.rank() < 3) ctx.fail("weight shape ", w.shape().to_string(), "; expected M x C/group x k...");
  const std::int64_t M = w.dim(0);
  const float xs = detail::scalar_scale(ctx, 1, "x");
  const auto ws = detail::channel_scales(ctx, 4, M, "w");
  const float ys = detail::scalar_scale(ctx, 6, "y");
  const auto xzp = detail::zero_points(ctx, 2, x.dtype(), 1, "x");
  const auto wzp = detail::zero_points(ctx, 5, w.dtype(), M, "w");
  Dims out;
  WindowGeometry g;
  auto acc = detail::integer_conv(ctx, x, w, xzp, wzp, out, g);
  const std::int64_t P = g.out_size();
  if (const Tensor* b = ctx.optional_input(8)) {
    if (b->dtype() != DType::int32 || b->size() != M)
      ctx.fail("bias is ", graph::to_string(b->dtype()), " ", b->shape().to_string(), "; expected int32 [", M, "]");
    const std::int32_t* pb = b->data<std::int32_t>();
    for (std::size_t i = 0; i < acc.size(); ++i)
      acc[i] = ref::saturate_to_int32(std::int64_t{acc[i]} + pb[(static_cast<std::int64_t>(i) / P) % M]);
  }
  std::vector<double> m;
  for (float v : ws) m.push_back(static_cast<double>(xs * v / ys));  // in float, as ONNX Runtime
  ctx.set_output(0, detail::requantize_output(ctx, acc, out, m, M, P, 7));
}

inline void register_quantized_ops(OpRegistry& r) {
  r.add("QuantizeLinear", op_quantize_linear, {"axis", "saturate"});
  r.add("DequantizeLinear", op_dequantize_linear, {"axis"});
  r.add("DynamicQuantizeLinear", op_dynamic_quantize_linear, {});
  r.add("MatMulInteger", op_matmul_integer, {});
  r.add("ConvInteger", op_conv_integer, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  r.add("QLinearMatMul", op_qlinear_matmul, {});
  r.add("QLinearConv", op_qlinear_conv, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
}

}  // namespace ops
}  // namespace quantkit
