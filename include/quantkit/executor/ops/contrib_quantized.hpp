// ONNX Runtime's quantized contrib ops (domain com.microsoft, opset 1), computed as ONNX
// Runtime 1.30's CPU kernels compute them (MLAS on x86-64 with AVX2), so that a QOperator
// model (quantkit/onnx/export_qoperator.hpp) runs the same in quantkit as in ONNX Runtime:
//
//   QGemm(A, a_scale, a_zp, B, b_scale, b_zp, [C int32], [y_scale, y_zp])   transA, transB, alpha
//       acc = C + sum_k (A - a_zp)(B - b_zp[n]) (int32); m[n] = alpha * a_scale * b_scale[n]
//       (/ y_scale) in float32; quantized: saturate(round_half_even(float(acc) * m[n]) + y_zp),
//       float output (no y_scale): float(acc) * m[n].                                 exact
//   QLinearAdd(A, As, Az, B, Bs, Bz, Cs, Cz)    (MlasQLinearAddKernelAvx2) r_a = As / Cs,
//       r_b = Bs / Cs, f = Cz - (r_a Az + r_b Bz); C = saturate(round_half_even(
//       fma(a, r_a, fma(b, r_b, f)))); an input that is one value over a broadcast span is
//       folded into f first (f + x r_x).                                 float32, see below
//   QLinearMul(...)                             (MlasQLinearMul, SSE2) round_half_even(
//       float((a - Az)(b - Bz)) * (As * Bs / Cs) + Cz), saturated.                      exact
//   QLinearLeakyRelu(X, Xs, Xz, Ys, Yz) alpha / QLinearSigmoid(X, Xs, Xz, Ys, Yz)
//       a 256-entry table: Q_y(f(Xs * (x - Xz))) with QuantizeLinear's rounding (x / s, half
//       even); f = leaky relu (v >= 0 ? v : alpha v), or MLAS's logistic polynomial (Eigen's
//       rational approximation, input clamped to [-18, 18], FMA3 evaluation).
//   QLinearGlobalAveragePool(X, Xs, Xz, Ys, Yz)  sum - Xz n (int32), times
//       Xs / (Ys * float(n)) in float32, rounded half to even, + Yz.                    exact
//   QLinearAveragePool(X, Xs, Xz, Ys, Yz)        dequantized in float32, summed in float32
//       row by row, divided by the count (kernel size with count_include_pad), quantized as
//       round_half_even(avg / Ys + Yz); windows whose kernel covers the whole unpadded image
//       use QLinearGlobalAveragePool's integer path, as ONNX Runtime does.
//   QLinearConcat(Ys, Yz, X0, X0s, X0z, X1, ...) axis: each input through the table
//       Q_y(Xs * (x - Xz)) (a copy where its parameters equal the output's).            exact
//
// "exact": the same integers as ONNX Runtime for every input. QLinearAdd and QLinearSigmoid
// follow the float32 operation order of ONNX Runtime's AVX2/FMA3 kernels; a compiler that
// contracts differently could move a result that lands on a rounding tie by one step (the
// tests compare with onnxruntime-node). channels_last = 1 (the NHWC forms ONNX Runtime's
// layout optimizer makes) is not supported: an error names the node.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "quantkit/executor/ops/common.hpp"
#include "quantkit/executor/ops/conv.hpp"
#include "quantkit/executor/ops/gemm.hpp"
#include "quantkit/executor/ops/pool.hpp"
#include "quantkit/executor/ops/quantized.hpp"
#include "quantkit/executor/ops/shape.hpp"
#include "quantkit/executor/registry.hpp"
#include "quantkit/ref/requantize.hpp"

namespace quantkit {
namespace ops {

inline constexpr const char* kMicrosoftDomain = "com.microsoft";

namespace contrib {

// One (scale, zero point) pair of an 8-bit tensor: scale a float32 scalar, zero point a
// scalar of the data's type (0 when the optional input is omitted).
struct QParam {
  float scale = 1.0f;
  std::int32_t zero_point = 0;
};

inline QParam qparam(const OpContext& ctx, std::size_t si, std::size_t zi, DType data, const char* what) {
  QParam p;
  p.scale = detail::scalar_scale(ctx, si, what);
  const auto z = detail::zero_points(ctx, zi, data, 1, what);
  if (z.size() != 1) ctx.fail(what, " zero point has ", z.size(), " values; expected a scalar");
  p.zero_point = z[0];
  return p;
}

// f(T{}) for T = int8_t or uint8_t (the element type `t`), else an error naming `what`.
template <class F>
void visit_int8(const OpContext& ctx, DType t, F&& f, const char* what = "input") {
  if (t == DType::int8) f(std::int8_t{});
  else if (t == DType::uint8) f(std::uint8_t{});
  else ctx.fail(what, " has element type ", graph::to_string(t), "; expected int8 or uint8");
}

inline void expect_same_type(const OpContext& ctx, const Tensor& t, DType type, const char* what) {
  if (t.dtype() != type)
    ctx.fail(what, " has element type ", graph::to_string(t.dtype()), "; expected ", graph::to_string(type),
             " (the type of the first input)");
}

// round_half_even(v), saturated to T: what _mm_cvtps_epi32 + saturating packs give.
template <class T>
T saturate_round(float v) {
  const float r = std::nearbyint(v);
  constexpr float lo = static_cast<float>(std::numeric_limits<T>::lowest());
  constexpr float hi = static_cast<float>(std::numeric_limits<T>::max());
  if (!(r >= lo)) return std::numeric_limits<T>::lowest();  // NaN too (cvtps gives INT_MIN)
  if (r > hi) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

// MlasQuantizeLinear: saturate(round_half_even(v / scale) + zero_point).
template <class T>
T quantize_linear(float v, float scale, std::int32_t zp) {
  constexpr float lo = static_cast<float>(std::numeric_limits<T>::lowest());
  constexpr float hi = static_cast<float>(std::numeric_limits<T>::max());
  float q = v / scale;
  q = std::max(q, lo - static_cast<float>(zp));  // maxps/minps: NaN becomes the bound
  q = std::min(q, hi - static_cast<float>(zp));
  return static_cast<T>(static_cast<std::int32_t>(std::nearbyint(q)) + zp);
}

// The 256-entry table of an elementwise function on T (indexed by the byte of x).
template <class T, class F>
std::array<T, 256> lookup_table(const QParam& x, const QParam& y, F&& f) {
  std::array<float, 256> in{}, out{};
  for (int i = 0; i < 256; ++i) {
    const T v = static_cast<T>(static_cast<std::uint8_t>(i));
    in[static_cast<std::size_t>(i)] = x.scale * static_cast<float>(static_cast<int>(v) - x.zero_point);
  }
  f(in.data(), out.data(), std::size_t{256});
  std::array<T, 256> table{};
  for (std::size_t i = 0; i < 256; ++i) table[i] = quantize_linear<T>(out[i], y.scale, y.zero_point);
  return table;
}

template <class T>
void apply_table(const Tensor& x, const std::array<T, 256>& table, Tensor& y) {
  const auto* px = static_cast<const std::uint8_t*>(x.raw());
  T* py = y.data<T>();
  const std::int64_t n = x.size();
  for (std::int64_t i = 0; i < n; ++i) py[i] = table[px[i]];
}

// MLAS's logistic function (logistic.cpp constants, FMA3 kernel order of operations).
inline void mlas_logistic(const float* in, float* out, std::size_t n) {
  constexpr float a9 = 4.37031012579801e-11f, a7 = 1.15627324459942e-07f, a5 = 6.08574864600143e-05f,
                  a3 = 8.51377133304701e-03f, a1 = 2.48287947061529e-01f;
  constexpr float b10 = 6.10247389755681e-13f, b8 = 5.76102136993427e-09f, b6 = 6.29106785017040e-06f,
                  b4 = 1.70198817374094e-03f, b2 = 1.16817656904453e-01f, b0 = 9.93151921023180e-01f;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = std::min(std::max(in[i], -18.0f), 18.0f);
    const float v2 = v * v;
    float p = std::fma(v2, a9, a7);
    p = std::fma(p, v2, a5);
    p = std::fma(p, v2, a3);
    p = std::fma(p, v2, a1);
    p = p * v;
    float q = std::fma(v2, b10, b8);
    q = std::fma(q, v2, b6);
    q = std::fma(q, v2, b4);
    q = std::fma(q, v2, b2);
    q = std::fma(q, v2, b0);
    out[i] = std::min(std::max(p / q + 0.5f, 0.0f), 1.0f);
  }
}

template <bool Sigmoid>
void op_qlinear_lookup(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  detail::expect_int8(ctx, x, "input X");
  const QParam xp = qparam(ctx, 1, 2, x.dtype(), "X");
  const QParam yp = qparam(ctx, 3, 4, x.dtype(), "Y");
  const float alpha = ctx.node().attr_float("alpha", 0.01f);
  Tensor y(x.dtype(), x.shape());
  visit_int8(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const auto table = lookup_table<T>(xp, yp, [&](const float* in, float* out, std::size_t n) {
      if constexpr (Sigmoid) {
        mlas_logistic(in, out, n);
      } else {
        for (std::size_t i = 0; i < n; ++i) out[i] = in[i] >= 0.0f ? in[i] : alpha * in[i];
      }
    });
    apply_table<T>(x, table, y);
  });
  ctx.set_output(0, std::move(y));
}


// ------------------------------------------------------------------ QLinearAdd / QLinearMul
// How ONNX Runtime's broadcast looper hands an input to MLAS: as one value for the whole
// span (`scalar`) or element by element. A span is a run of the innermost output dimension;
// an input broadcast along it is one value there.
inline bool broadcast_as_scalar(const Tensor& t, const Dims& in_strides, const Dims& out) {
  if (t.size() == 1) return true;
  for (int d = out.rank - 1; d >= 0; --d)
    if (out[d] > 1) return in_strides[d] == 0;
  return false;
}

template <bool Add>
void op_qlinear_binary(OpContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  detail::expect_int8(ctx, a, "input A");
  expect_same_type(ctx, b, a.dtype(), "input B");
  const QParam ap = qparam(ctx, 1, 2, a.dtype(), "A");
  const QParam bp = qparam(ctx, 4, 5, a.dtype(), "B");
  const QParam cp = qparam(ctx, 6, 7, a.dtype(), "C");
  const Dims out = broadcast_shapes(ctx, a.shape(), b.shape());
  const Dims sa = broadcast_strides(a.shape(), out), sb = broadcast_strides(b.shape(), out);
  const bool a_scalar = broadcast_as_scalar(a, sa, out);
  const bool b_scalar = !a_scalar && broadcast_as_scalar(b, sb, out);
  Tensor y(a.dtype(), out);
  visit_int8(ctx, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    if constexpr (Add) {
      const float ra = ap.scale / cp.scale, rb = bp.scale / cp.scale;
      const float fixed = static_cast<float>(cp.zero_point) -
                          (ra * static_cast<float>(ap.zero_point) + rb * static_cast<float>(bp.zero_point));
      for_each_broadcast(out, sa, sb, [&](std::int64_t o, std::int64_t ia, std::int64_t ib) {
        const float va = static_cast<float>(pa[ia]), vb = static_cast<float>(pb[ib]);
        float v;
        if (a_scalar) v = std::fma(vb, rb, fixed + va * ra);
        else if (b_scalar) v = std::fma(va, ra, fixed + vb * rb);
        else v = std::fma(va, ra, std::fma(vb, rb, fixed));
        py[o] = saturate_round<T>(v);
      });
    } else {
      const float ratio = ap.scale * bp.scale / cp.scale;
      const float zc = static_cast<float>(cp.zero_point);
      for_each_broadcast(out, sa, sb, [&](std::int64_t o, std::int64_t ia, std::int64_t ib) {
        const std::int32_t prod = (static_cast<std::int32_t>(pa[ia]) - ap.zero_point) *
                                  (static_cast<std::int32_t>(pb[ib]) - bp.zero_point);
        py[o] = saturate_round<T>(static_cast<float>(prod) * ratio + zc);
      });
    }
  });
  ctx.set_output(0, std::move(y));
}

// ------------------------------------------------------------------ QGemm
inline void op_qgemm(OpContext& ctx) {
  const auto& node = ctx.node();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  detail::expect_int8(ctx, a, "input A");
  detail::expect_int8(ctx, b, "input B");
  if (a.dtype() == DType::int8 && b.dtype() != DType::int8)
    ctx.fail("input B is ", graph::to_string(b.dtype()), " with int8 A; expected int8 (ONNX Runtime's QGemm "
             "takes uint8 x uint8/int8 or int8 x int8)");
  if (a.rank() != 2 || b.rank() != 2)
    ctx.fail("inputs of shapes ", a.shape().to_string(), " and ", b.shape().to_string(), "; expected matrices");
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f);
  const std::int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
  const std::int64_t N = tb ? b.dim(0) : b.dim(1), Kb = tb ? b.dim(1) : b.dim(0);
  if (K != Kb)
    ctx.fail("A ", a.shape().to_string(), (ta ? " (transposed)" : ""), " and B ", b.shape().to_string(),
             (tb ? " (transposed)" : ""), " do not chain: inner extents ", K, " and ", Kb);
  const float a_scale = detail::scalar_scale(ctx, 1, "a");
  const auto a_zp = detail::zero_points(ctx, 2, a.dtype(), 1, "a");
  if (a_zp.size() != 1) ctx.fail("a zero point has ", a_zp.size(), " values; expected a scalar");
  const auto b_scale = detail::channel_scales(ctx, 4, N, "b");
  const auto b_zp = detail::zero_points(ctx, 5, b.dtype(), N, "b");
  if (ctx.has_input(5) && ctx.input(5).size() != static_cast<std::int64_t>(b_scale.size()))
    ctx.fail("b zero point has ", ctx.input(5).size(), " values and b scale ", b_scale.size(),
             "; expected the same shape");
  const bool quantized_out = ctx.has_input(7);
  if (quantized_out != ctx.has_input(8))
    ctx.fail("y_scale and y_zero_point: one is given without the other; expected both (quantized output) or "
             "neither (float output)");

  // A and B as [M, K] and [K, N], then the integer product with the zero points.
  auto transposed = [](const Tensor& t) {
    Tensor r(t.dtype(), Dims{t.dim(1), t.dim(0)});
    const auto* s = static_cast<const std::uint8_t*>(t.raw());
    auto* d = static_cast<std::uint8_t*>(r.raw());
    for (std::int64_t i = 0; i < t.dim(0); ++i)
      for (std::int64_t j = 0; j < t.dim(1); ++j) d[j * t.dim(0) + i] = s[i * t.dim(1) + j];
    return r;
  };
  const Tensor at = ta ? transposed(a) : Tensor();
  const Tensor bt = tb ? transposed(b) : Tensor();
  MatMulShape shape;
  std::vector<std::int32_t> acc = detail::integer_matmul(ctx, ta ? at : a, tb ? bt : b, a_zp, b_zp, shape);
  if (const Tensor* c = ctx.optional_input(6)) {
    if (c->dtype() != DType::int32) ctx.fail("input C has element type ", graph::to_string(c->dtype()), "; expected int32");
    const Dims target{M, N};
    if (broadcast_shapes(ctx, c->shape(), target) != target)
      ctx.fail("input C of shape ", c->shape().to_string(), " does not broadcast to [", M, ", ", N, "]");
    const Dims sc = broadcast_strides(c->shape(), target);
    const std::int32_t* pc = c->data<std::int32_t>();
    for_each_broadcast(target, sc, sc, [&](std::int64_t o, std::int64_t i, std::int64_t) {
      acc[static_cast<std::size_t>(o)] = static_cast<std::int32_t>(
          static_cast<std::uint32_t>(acc[static_cast<std::size_t>(o)]) + static_cast<std::uint32_t>(pc[i]));
    });
  }
  std::vector<float> scale(b_scale.size());
  const float y_scale = quantized_out ? detail::scalar_scale(ctx, 7, "y") : 1.0f;
  for (std::size_t i = 0; i < scale.size(); ++i) {
    scale[i] = alpha * a_scale * b_scale[i];
    if (quantized_out) scale[i] /= y_scale;
  }
  auto column_scale = [&](std::int64_t o) { return scale[scale.size() == 1 ? 0 : static_cast<std::size_t>(o % N)]; };
  if (!quantized_out) {
    Tensor y(DType::float32, Dims{M, N});
    float* py = y.data<float>();
    for (std::int64_t o = 0; o < M * N; ++o) py[o] = static_cast<float>(acc[static_cast<std::size_t>(o)]) * column_scale(o);
    ctx.set_output(0, std::move(y));
    return;
  }
  const Tensor& yz = ctx.input(8);
  if (yz.dtype() != a.dtype())
    ctx.fail("y zero point has element type ", graph::to_string(yz.dtype()), "; expected ",
             graph::to_string(a.dtype()), " (A's type)");
  if (yz.size() != 1) ctx.fail("y zero point has shape ", yz.shape().to_string(), "; expected a scalar");
  const auto zp = static_cast<std::int32_t>(yz.as_int64(0));
  Tensor y(a.dtype(), Dims{M, N});
  visit_int8(ctx, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    const IntRange r = detail::range_of(a.dtype());
    for (std::int64_t o = 0; o < M * N; ++o) {
      const detail::QLinearScheme::Constants k{column_scale(o)};
      py[o] = static_cast<T>(
          ref::requantize_value<detail::QLinearScheme>(acc[static_cast<std::size_t>(o)], 0, k, zp, r.qmin, r.qmax));
    }
  });
  ctx.set_output(0, std::move(y));
}

// ------------------------------------------------------------------ pooling
inline void expect_channels_first(const OpContext& ctx) {
  if (ctx.node().attr_int("channels_last", 0) != 0)
    ctx.fail("attribute channels_last = 1 (NHWC) is not supported; expected 0 (NCHW, what quantkit writes)");
}

// MlasQLinearGlobalAveragePoolNchw over `planes` planes of `n` values each.
template <class T>
void global_average(const OpContext& ctx, const T* x, const QParam& xp, const QParam& yp, std::int64_t planes,
                    std::int64_t n, T* y) {
  if (n >= 0x1000000) ctx.fail("image size ", n, " is too large; expected fewer than 2^24 values per channel");
  if (n == 0 && planes > 0)
    ctx.fail("image size 0 (a spatial extent of 0); expected every spatial extent >= 1 (the average of no values)");
  const float scale = xp.scale / (yp.scale * static_cast<float>(n));
  if (!(scale >= 0x1.0p-32f) || !(scale < 256.0f))
    ctx.fail("x_scale / (y_scale * ", n, ") = ", scale, " is out of ONNX Runtime's computation range [2^-32, 256)");
  const IntRange r = detail::range_of(graph::dtype_of_v<T>);
  const detail::QLinearScheme::Constants k{scale};
  const std::int32_t bias = -xp.zero_point * static_cast<std::int32_t>(n);
  for (std::int64_t p = 0; p < planes; ++p) {
    std::int32_t sum = bias;
    for (std::int64_t i = 0; i < n; ++i) sum += static_cast<std::int32_t>(x[p * n + i]);
    y[p] = static_cast<T>(ref::requantize_value<detail::QLinearScheme>(sum, 0, k, yp.zero_point, r.qmin, r.qmax));
  }
}

inline void op_qlinear_global_average_pool(OpContext& ctx) {
  expect_channels_first(ctx);
  const Tensor& x = ctx.input(0);
  detail::expect_int8(ctx, x, "input X");
  if (x.rank() < 3) ctx.fail("input shape ", x.shape().to_string(), "; expected N x C x D1 ...");
  const QParam xp = qparam(ctx, 1, 2, x.dtype(), "x");
  const QParam yp = qparam(ctx, 3, 4, x.dtype(), "y");
  Dims os = x.shape();
  for (int i = 2; i < os.rank; ++i) os[i] = 1;
  Tensor y(x.dtype(), os);
  visit_int8(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    global_average<T>(ctx, x.data<T>(), xp, yp, x.dim(0) * x.dim(1), product(x.shape(), 2, x.rank()), y.data<T>());
  });
  ctx.set_output(0, std::move(y));
}

inline void op_qlinear_average_pool(OpContext& ctx) {
  expect_channels_first(ctx);
  const Tensor& x = ctx.input(0);
  detail::expect_int8(ctx, x, "input X");
  const QParam xp = qparam(ctx, 1, 2, x.dtype(), "x");
  const QParam yp = qparam(ctx, 3, 4, x.dtype(), "y");
  const WindowGeometry g = detail::pool_geometry(ctx, x.shape());
  for (int i = 0; i < max_spatial; ++i)
    if (g.dilation[i] != 1) ctx.fail("dilations are not supported by QLinearAveragePool; expected 1");
  const bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  const Dims out_shape = conv_output_shape(x.shape(), x.dim(1), g);
  Tensor y(x.dtype(), out_shape);
  const std::int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size(), P = g.out_size();
  bool global = true;  // the kernel covers the image and nothing is padded
  for (int i = 0; i < max_spatial; ++i)
    global = global && g.kernel[i] == g.in[i] && g.pad_begin[i] == 0 && g.pad_end[i] == 0;
  visit_int8(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    if (global) {
      global_average<T>(ctx, px, xp, yp, planes, in_size, py);
      return;
    }
    std::array<float, 256> dq{};
    for (int i = 0; i < 256; ++i)
      dq[static_cast<std::size_t>(i)] =
          xp.scale * static_cast<float>(static_cast<int>(static_cast<T>(static_cast<std::uint8_t>(i))) - xp.zero_point);
    const auto* bytes = static_cast<const std::uint8_t*>(x.raw());
    constexpr std::int32_t lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    const float zp = static_cast<float>(yp.zero_point);
    for (std::int64_t pl = 0; pl < planes; ++pl) {
      const std::uint8_t* src = bytes + pl * in_size;
      for (std::int64_t od = 0; od < g.out[0]; ++od) {
        const std::int64_t d0 = std::max<std::int64_t>(od * g.stride[0] - g.pad_begin[0], 0);
        const std::int64_t d1 = std::min(od * g.stride[0] - g.pad_begin[0] + g.kernel[0], g.in[0]);
        for (std::int64_t oh = 0; oh < g.out[1]; ++oh) {
          const std::int64_t h0 = std::max<std::int64_t>(oh * g.stride[1] - g.pad_begin[1], 0);
          const std::int64_t h1 = std::min(oh * g.stride[1] - g.pad_begin[1] + g.kernel[1], g.in[1]);
          for (std::int64_t ow = 0; ow < g.out[2]; ++ow) {
            const std::int64_t w0 = std::max<std::int64_t>(ow * g.stride[2] - g.pad_begin[2], 0);
            const std::int64_t w1 = std::min(ow * g.stride[2] - g.pad_begin[2] + g.kernel[2], g.in[2]);
            // ONNX Runtime's loop order: the outermost pooled dimension first.
            float sum = 0.0f;
            for (std::int64_t d = d0; d < d1; ++d)
              for (std::int64_t h = h0; h < h1; ++h)
                for (std::int64_t w = w0; w < w1; ++w) sum += dq[src[(d * g.in[1] + h) * g.in[2] + w]];
            const std::int64_t count = include_pad ? g.kernel_size() : (d1 - d0) * (h1 - h0) * (w1 - w0);
            sum /= static_cast<float>(count);
            const auto q = static_cast<std::int32_t>(std::nearbyint(sum / yp.scale + zp));
            py[pl * P + (od * g.out[1] + oh) * g.out[2] + ow] = static_cast<T>(std::max(lo, std::min(q, hi)));
          }
        }
      }
    }
  });
  ctx.set_output(0, std::move(y));
}

// ------------------------------------------------------------------ QLinearConcat
inline void op_qlinear_concat(OpContext& ctx) {
  const std::size_t n = ctx.num_inputs();
  if (n < 5 || (n - 2) % 3 != 0)
    ctx.fail(n, " inputs; expected Y_scale, Y_zero_point, then (tensor, scale, zero point) triples");
  if (!ctx.node().has_attr("axis")) ctx.fail("attribute 'axis' is missing; expected one");
  const Tensor& yz = ctx.input(1);
  detail::expect_int8(ctx, yz, "Y zero point");
  const DType type = yz.dtype();
  const QParam yp = qparam(ctx, 0, 1, type, "Y");
  std::vector<Tensor> parts;
  visit_int8(ctx, type, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 2; i < n; i += 3) {
      const Tensor& x = ctx.input(i);
      expect_same_type(ctx, x, type, "a concatenated input");
      const QParam xp = qparam(ctx, i + 1, i + 2, type, "input");
      if (xp.scale == yp.scale && xp.zero_point == yp.zero_point) {
        parts.push_back(x);
        continue;
      }
      const auto table = lookup_table<T>(xp, yp, [](const float* in, float* out, std::size_t k) {
        std::copy(in, in + k, out);
      });
      Tensor r(type, x.shape());
      apply_table<T>(x, table, r);
      parts.push_back(std::move(r));
    }
  });
  std::vector<const Tensor*> in;
  for (const auto& p : parts) in.push_back(&p);
  OpContext inner(ctx.node(), 13, in);  // Concat-13 semantics (axis required)
  op_concat(inner);
  ctx.set_output(0, std::move(inner.output(0)));
}

}  // namespace contrib

// Registers the com.microsoft quantized ops.
inline void register_contrib_quantized_ops(OpRegistry& r) {
  const char* ms = kMicrosoftDomain;
  r.add("QGemm", contrib::op_qgemm, {"transA", "transB", "alpha"}, {}, ms);
  r.add("QLinearAdd", contrib::op_qlinear_binary<true>, {}, {}, ms);
  r.add("QLinearMul", contrib::op_qlinear_binary<false>, {}, {}, ms);
  r.add("QLinearLeakyRelu", contrib::op_qlinear_lookup<false>, {"alpha"}, {}, ms);
  r.add("QLinearSigmoid", contrib::op_qlinear_lookup<true>, {}, {}, ms);
  r.add("QLinearGlobalAveragePool", contrib::op_qlinear_global_average_pool, {"channels_last"}, {}, ms);
  r.add("QLinearAveragePool", contrib::op_qlinear_average_pool,
        {"auto_pad", "ceil_mode", "channels_last", "count_include_pad", "kernel_shape", "pads", "strides"}, {}, ms);
  r.add("QLinearConcat", contrib::op_qlinear_concat, {"axis"}, {}, ms);
}

}  // namespace ops
}  // namespace quantkit
