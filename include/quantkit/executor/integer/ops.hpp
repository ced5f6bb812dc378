// Integer-only op implementations of IntegerMode (domain "quantkit.integer"), templated on the
// requantization scale scheme. Activations are int8/uint8 with one (scale, zero point) each,
// weights int8/uint8 per tensor or per output channel, accumulators int32 (the int8 GEMM of
// quantkit/simd/gemm.hpp), bias int32, and every rescaling goes through Scheme (quantkit/simd
// requantize, bit-identical to quantkit::ref::requantize); a fused Relu/Clip is the clamp.
//
//   IntConv    (x, xs, xz, w, ws, wz, ys, yz [, bias int32])  + Conv attributes, clamp
//   IntMatMul  (a, as, az, b [K x N], bs, bz, ys, yz [, bias int32]) + clamp
//   IntAdd     (a, as, az, b, bs, bz, ys, yz) + clamp          TFLite's scheme: both inputs
//              shifted left by 20, rescaled to 2 * max(as, bs), added, rescaled to ys
//   IntRequantize (x, xs, xz, ys, yz) + clamp                  Relu/Clip, scale changes
//   IntAveragePool / IntGlobalAveragePool (x, xs, xz, ys, yz)  sum of (x - xz) over the
//              window, rescaled by xs / (ys * count)
//   IntMaxPool / IntFlatten / IntReshape (x, [shape,] xs, xz, ys, yz): the built-in op on the
//              integers, then a requantization where the output parameters differ
//   IntConcat  (x0, s0, z0, x1, s1, z1, ..., ys, yz)           inputs requantized, then joined
// Scales are float32 scalars (ws, bs: scalar or one per output channel), zero points scalars
// of the data's type. The real multipliers are computed in float32 for FloatMultiplier
// (s_x * s_w / s_y as ONNX Runtime does, so FloatMultiplier<RoundHalfEven> reproduces
// QLinearConv/QLinearMatMul bit for bit) and in double for the other schemes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "quantkit/executor/ops/common.hpp"
#include "quantkit/executor/ops/conv.hpp"
#include "quantkit/executor/ops/gemm.hpp"
#include "quantkit/executor/ops/pool.hpp"
#include "quantkit/executor/ops/shape.hpp"
#include "quantkit/executor/registry.hpp"
#include "quantkit/policy/format.hpp"
#include "quantkit/policy/requantization.hpp"
#include "quantkit/ref/requantize.hpp"
#include "quantkit/simd/gemm.hpp"
#include "quantkit/simd/simd.hpp"

namespace quantkit {
namespace integer {

inline constexpr const char* kDomain = "quantkit.integer";

using graph::DType;
using graph::Tensor;

namespace detail {

inline IntRange range_of(DType t) {
  return t == DType::int8 ? IntRange{-128, 127} : IntRange{0, 255};
}

// The (scale, zero point) pair at inputs (si, zi), per tensor.
struct Affine {
  float scale = 1.0f;
  std::int32_t zero_point = 0;
  DType type = DType::uint8;
};

inline Affine affine(const OpContext& ctx, std::size_t si, std::size_t zi, const char* what) {
  const Tensor& s = ctx.input(si, DType::float32);
  const Tensor& z = ctx.input(zi);
  if (s.size() != 1 || z.size() != 1)
    ctx.fail(what, " scale/zero point have shapes ", s.shape().to_string(), "/", z.shape().to_string(),
             "; expected scalars (per-tensor activations)");
  if (z.dtype() != DType::int8 && z.dtype() != DType::uint8)
    ctx.fail(what, " zero point has element type ", graph::to_string(z.dtype()), "; expected int8 or uint8");
  Affine a;
  a.scale = s.data<float>()[0];
  if (!(a.scale > 0.0f) || !std::isfinite(a.scale)) ctx.fail(what, " scale is ", a.scale, "; expected a finite value > 0");
  a.zero_point = static_cast<std::int32_t>(z.as_int64(0));
  a.type = z.dtype();
  return a;
}

inline void expect_type(const OpContext& ctx, const Tensor& t, DType type, const char* what) {
  if (t.dtype() != type)
    ctx.fail(what, " '", t.name(), "' has element type ", graph::to_string(t.dtype()), "; expected ",
             graph::to_string(type), " (its zero point's type)");
}

// The fused clamp (attribute "clamp" = [lo, hi] in the output's integer domain) intersected
// with the output range.
inline IntRange clamp_of(const OpContext& ctx, DType out) {
  IntRange r = range_of(out);
  const auto c = ctx.node().attr_ints("clamp");
  if (!c.empty()) {
    if (c.size() != 2) ctx.fail("attribute 'clamp' has ", c.size(), " values; expected [lo, hi]");
    r.qmin = static_cast<std::int32_t>(std::max<std::int64_t>(r.qmin, c[0]));
    r.qmax = static_cast<std::int32_t>(std::min<std::int64_t>(r.qmax, c[1]));
    if (r.qmin > r.qmax) r.qmin = r.qmax;  // an empty interval pins the value (Clip(min > max))
  }
  return r;
}

// s_in * s_w / s_out as the scheme's multiplier: float32 arithmetic for the float scheme
// (ONNX Runtime's QLinear ops), double for the integer schemes (TFLite).
template <class Scheme>
double multiplier(float s_in, float s_w, float s_out) {
  if constexpr (Scheme::scheme == RequantScheme::float_multiplier)
    return static_cast<double>(s_in * s_w / s_out);
  else
    return static_cast<double>(s_in) * static_cast<double>(s_w) / static_cast<double>(s_out);
}

inline std::string layer_of(const OpContext& ctx) {
  return ctx.node().name.empty() ? ctx.node().outputs.at(0) : ctx.node().name;
}

// out = clamp(Scheme(acc + bias[c]) + zp) over acc laid out [outer, C, inner] (channel_axis
// given) or per tensor, into a new tensor of type `out_type`.
template <class Scheme>
Tensor requantize(const OpContext& ctx, const std::vector<std::int32_t>& acc, const Dims& shape, int channel_axis,
                  const std::vector<double>& m, std::vector<std::int32_t> bias, DType out_type,
                  std::int32_t zp, IntRange clamp) {
  auto p = RequantParams<Scheme>::make(m, range_of(out_type), zp, layer_of(ctx));
  p.bias = std::move(bias);
  p.clamp_min = clamp.qmin;
  p.clamp_max = clamp.qmax;
  p.channel_axis = channel_axis;
  Tensor y(out_type, shape);
  const View<const std::int32_t> av(acc.data(), shape);
  if (out_type == DType::int8)
    simd::requantize(av, p, y.view<std::int8_t>(), layer_of(ctx));
  else
    simd::requantize(av, p, y.view<std::uint8_t>(), layer_of(ctx));
  return y;
}

// x (int8/uint8) rescaled from `in` to `out` parameters with the clamp: exact when the
// parameters are equal (only the clamp applies), the scheme's multiplier in/out otherwise.
template <class Scheme>
Tensor rescale(const OpContext& ctx, const Tensor& x, const Affine& in, const Affine& out, IntRange clamp) {
  std::vector<std::int32_t> acc(static_cast<std::size_t>(x.size()));
  graph::visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = static_cast<std::int32_t>(px[i]) - in.zero_point;
  });
  if (in.scale == out.scale) {  // exact: shift the zero point, clamp
    Tensor y(out.type, x.shape());
    graph::visit_dtype(out.type, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::uint8_t>) {
        T* py = y.data<T>();
        for (std::size_t i = 0; i < acc.size(); ++i)
          py[i] = static_cast<T>(std::min(std::max(acc[i] + out.zero_point, clamp.qmin), clamp.qmax));
      }
    });
    return y;
  }
  const double m = static_cast<double>(in.scale) / static_cast<double>(out.scale);
  return requantize<Scheme>(ctx, acc, x.shape(), -1, {m}, {}, out.type, out.zero_point, clamp);
}

// Weight zero points: scalar or one per output channel, as int32.
inline std::vector<std::int32_t> weight_zero_points(const OpContext& ctx, std::size_t zi, const Tensor& w,
                                                    std::int64_t channels) {
  const Tensor& z = ctx.input(zi);
  if (z.dtype() != w.dtype())
    ctx.fail("weight zero point has element type ", graph::to_string(z.dtype()), "; expected ",
             graph::to_string(w.dtype()));
  if (z.size() != 1 && z.size() != channels)
    ctx.fail("weight zero point has ", z.size(), " values; expected 1 or ", channels);
  std::vector<std::int32_t> v(static_cast<std::size_t>(z.size()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(z.as_int64(static_cast<std::int64_t>(i)));
  return v;
}

inline std::vector<float> weight_scales(const OpContext& ctx, std::size_t si, std::int64_t channels) {
  const Tensor& s = ctx.input(si, DType::float32);
  if (s.size() != 1 && s.size() != channels)
    ctx.fail("weight scale has ", s.size(), " values; expected 1 or ", channels);
  std::vector<float> v(s.data<float>(), s.data<float>() + s.size());
  for (float f : v)
    if (!(f > 0.0f) || !std::isfinite(f)) ctx.fail("weight scale is ", f, "; expected a finite value > 0");
  return v;
}

inline std::vector<std::int32_t> bias_of(const OpContext& ctx, std::size_t bi, std::int64_t channels) {
  const Tensor* b = ctx.optional_input(bi);
  if (!b) return {};
  if (b->dtype() != DType::int32 || b->size() != channels)
    ctx.fail("bias is ", graph::to_string(b->dtype()), " ", b->shape().to_string(), "; expected int32 [", channels, "]");
  return b->to_vector<std::int32_t>();
}

template <class F>
void visit_int8(const OpContext& ctx, DType t, F&& f, const char* what) {
  if (t == DType::int8) f(std::int8_t{});
  else if (t == DType::uint8) f(std::uint8_t{});
  else ctx.fail(what, " has element type ", graph::to_string(t), "; expected int8 or uint8");
}

}  // namespace detail

// ------------------------------------------------------------------ IntConv
template <class Scheme>
void op_int_conv(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  const detail::Affine xa = detail::affine(ctx, 1, 2, "input");
  const detail::Affine ya = detail::affine(ctx, 6, 7, "output");
  detail::expect_type(ctx, x, xa.type, "input");
  if (w.rank() < 3) ctx.fail("weight shape ", w.shape().to_string(), "; expected M x C/group x k...");
  const std::int64_t group = ctx.node().attr_int("group", 1);
  const ops::WindowGeometry g = ops::conv_geometry(ctx, x.shape(), w.shape(), group);
  const std::int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0);
  const std::int64_t Cg = C / group, Mg = M / group, KK = Cg * g.kernel_size(), P = g.out_size();
  const auto ws = detail::weight_scales(ctx, 4, M);
  const auto wz = detail::weight_zero_points(ctx, 5, w, M);
  const auto bias = detail::bias_of(ctx, 8, M);
  const Dims out_shape = ops::conv_output_shape(x.shape(), M, g);
  std::vector<std::int32_t> acc(static_cast<std::size_t>(out_shape.product()));
  const bool pointwise = ops::is_pointwise(g);
  detail::visit_int8(ctx, x.dtype(), [&](auto xtag) {
    using TX = decltype(xtag);
    detail::visit_int8(ctx, w.dtype(), [&](auto wtag) {
      using TW = decltype(wtag);
      std::vector<TX> col(pointwise ? 0 : static_cast<std::size_t>(KK * P));
      const TX pad = static_cast<TX>(xa.zero_point);
      const std::int32_t xz = xa.zero_point;
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t gi = 0; gi < group; ++gi) {
          const TX* xg = x.data<TX>() + (n * C + gi * Cg) * g.in_size();
          const TX* cp = xg;
          if (!pointwise) {
            ops::im2col(xg, Cg, g, pad, col.data());
            cp = col.data();
          }
          simd::GemmZeroPoints zp;
          zp.a = wz.size() == 1 ? wz.data() : wz.data() + gi * Mg;
          zp.a_count = wz.size() == 1 ? 1 : static_cast<std::size_t>(Mg);
          zp.b = &xz;
          simd::gemm_s32(static_cast<std::size_t>(Mg), static_cast<std::size_t>(P), static_cast<std::size_t>(KK),
                         w.data<TW>() + gi * Mg * KK, static_cast<std::size_t>(KK), cp, static_cast<std::size_t>(P),
                         acc.data() + (n * M + gi * Mg) * P, static_cast<std::size_t>(P), zp);
        }
    }, "weight");
  }, "input");
  std::vector<double> m;
  for (float s : ws) m.push_back(detail::multiplier<Scheme>(xa.scale, s, ya.scale));
  std::vector<std::int32_t> b = bias;
  if (m.size() == 1 && M > 1 && !b.empty()) m.assign(static_cast<std::size_t>(M), m[0]);
  ctx.set_output(0, detail::requantize<Scheme>(ctx, acc, out_shape, m.size() > 1 || !b.empty() ? 1 : -1, m,
                                               std::move(b), ya.type, ya.zero_point,
                                               detail::clamp_of(ctx, ya.type)));
}

// ------------------------------------------------------------------ IntMatMul
// a [..., M, K] x b [K, N] (a constant weight); bs, bz per tensor or per column.
template <class Scheme>
void op_int_matmul(OpContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const detail::Affine aa = detail::affine(ctx, 1, 2, "input a");
  const detail::Affine ya = detail::affine(ctx, 6, 7, "output");
  detail::expect_type(ctx, a, aa.type, "input a");
  if (b.rank() != 2) ctx.fail("weight shape ", b.shape().to_string(), "; expected K x N");
  if (a.rank() < 1 || a.dim(a.rank() - 1) != b.dim(0))
    ctx.fail("input shape ", a.shape().to_string(), " does not match weight ", b.shape().to_string(),
             "; expected [..., ", b.dim(0), "]");
  const std::int64_t K = b.dim(0), N = b.dim(1), M = K == 0 ? 0 : a.size() / std::max<std::int64_t>(K, 1);
  const auto bs = detail::weight_scales(ctx, 4, N);
  const auto bz = detail::weight_zero_points(ctx, 5, b, N);
  const auto bias = detail::bias_of(ctx, 8, N);
  Dims out_shape = a.shape();
  out_shape[a.rank() - 1] = N;
  std::vector<std::int32_t> acc(static_cast<std::size_t>(M * N));
  detail::visit_int8(ctx, a.dtype(), [&](auto atag) {
    using TA = decltype(atag);
    detail::visit_int8(ctx, b.dtype(), [&](auto btag) {
      using TB = decltype(btag);
      simd::GemmZeroPoints zp;
      zp.a = &aa.zero_point;
      zp.b = bz.data();
      zp.b_count = bz.size();
      simd::gemm_s32(static_cast<std::size_t>(M), static_cast<std::size_t>(N), static_cast<std::size_t>(K),
                     a.data<TA>(), static_cast<std::size_t>(K), b.data<TB>(), static_cast<std::size_t>(N),
                     acc.data(), static_cast<std::size_t>(N), zp);
    }, "weight");
  }, "input a");
  std::vector<double> m;
  for (float s : bs) m.push_back(detail::multiplier<Scheme>(aa.scale, s, ya.scale));
  if (m.size() == 1 && N > 1 && !bias.empty()) m.assign(static_cast<std::size_t>(N), m[0]);
  ctx.set_output(0, detail::requantize<Scheme>(ctx, acc, out_shape, m.size() > 1 ? out_shape.rank - 1 : -1, m,
                                               bias, ya.type, ya.zero_point, detail::clamp_of(ctx, ya.type)));
}

// ------------------------------------------------------------------ IntAdd
template <class Scheme>
void op_int_add(OpContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const detail::Affine aa = detail::affine(ctx, 1, 2, "input a");
  const detail::Affine ba = detail::affine(ctx, 4, 5, "input b");
  const detail::Affine ya = detail::affine(ctx, 6, 7, "output");
  detail::expect_type(ctx, a, aa.type, "input a");
  detail::expect_type(ctx, b, ba.type, "input b");
  constexpr int kLeftShift = 20;
  const std::string layer = detail::layer_of(ctx);
  const double twice_max = 2.0 * std::max(static_cast<double>(aa.scale), static_cast<double>(ba.scale));
  const auto ka = Scheme::make(static_cast<double>(aa.scale) / twice_max, layer);
  const auto kb = Scheme::make(static_cast<double>(ba.scale) / twice_max, layer);
  const double mo = twice_max / (static_cast<double>(std::int64_t{1} << kLeftShift) * static_cast<double>(ya.scale));
  const Dims out = ops::broadcast_shapes(ctx, a.shape(), b.shape());
  const Dims sa = ops::broadcast_strides(a.shape(), out), sb = ops::broadcast_strides(b.shape(), out);
  std::vector<std::int32_t> acc(static_cast<std::size_t>(out.product()));
  auto load = [](const Tensor& t, std::int64_t i) { return static_cast<std::int32_t>(t.as_int64(i)); };
  std::vector<std::int32_t> av(static_cast<std::size_t>(a.size())), bv(static_cast<std::size_t>(b.size()));
  for (std::size_t i = 0; i < av.size(); ++i)
    av[i] = Scheme::apply((load(a, static_cast<std::int64_t>(i)) - aa.zero_point) * (1 << kLeftShift), ka);
  for (std::size_t i = 0; i < bv.size(); ++i)
    bv[i] = Scheme::apply((load(b, static_cast<std::int64_t>(i)) - ba.zero_point) * (1 << kLeftShift), kb);
  ops::for_each_broadcast(out, sa, sb, [&](std::int64_t o, std::int64_t ia, std::int64_t ib) {
    acc[static_cast<std::size_t>(o)] = av[static_cast<std::size_t>(ia)] + bv[static_cast<std::size_t>(ib)];
  });
  ctx.set_output(0, detail::requantize<Scheme>(ctx, acc, out, -1, {mo}, {}, ya.type, ya.zero_point,
                                               detail::clamp_of(ctx, ya.type)));
}

// ------------------------------------------------------------------ IntRequantize
template <class Scheme>
void op_int_requantize(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const detail::Affine xa = detail::affine(ctx, 1, 2, "input");
  const detail::Affine ya = detail::affine(ctx, 3, 4, "output");
  detail::expect_type(ctx, x, xa.type, "input");
  ctx.set_output(0, detail::rescale<Scheme>(ctx, x, xa, ya, detail::clamp_of(ctx, ya.type)));
}

// ------------------------------------------------------------------ pooling
template <class Scheme, bool Global>
void op_int_average_pool(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const detail::Affine xa = detail::affine(ctx, 1, 2, "input");
  const detail::Affine ya = detail::affine(ctx, 3, 4, "output");
  detail::expect_type(ctx, x, xa.type, "input");
  if (x.rank() < 3) ctx.fail("input shape ", x.shape().to_string(), "; expected N x C x D1 ...");
  ops::WindowGeometry g;
  bool include_pad = false;
  if constexpr (Global) {
    std::vector<std::int64_t> kernel(x.shape().value.begin() + 2, x.shape().value.begin() + x.rank());
    g = ops::window_geometry(ctx, x.shape(), kernel);
  } else {
    g = ops::detail::pool_geometry(ctx, x.shape());
    include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  }
  const Dims out_shape = ops::conv_output_shape(x.shape(), x.dim(1), g);
  const std::int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size(), P = g.out_size();
  std::vector<std::int32_t> acc(static_cast<std::size_t>(planes * P));
  std::vector<std::int64_t> count(static_cast<std::size_t>(P), 0);
  graph::visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    for (std::int64_t pl = 0; pl < planes; ++pl) {
      const T* src = px + pl * in_size;
      ops::detail::for_each_window(g, [&](std::int64_t o, const std::array<std::int64_t, 3>& start) {
        std::int64_t sum = 0, inside = 0, padded = 0;
        for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd) {
          const std::int64_t d = start[0] + kd * g.dilation[0];
          if (d >= g.in[0] + g.pad_end[0]) continue;
          const bool din = d >= 0 && d < g.in[0];
          for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh) {
            const std::int64_t h = start[1] + kh * g.dilation[1];
            if (h >= g.in[1] + g.pad_end[1]) continue;
            const bool hin = h >= 0 && h < g.in[1];
            for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw) {
              const std::int64_t w = start[2] + kw * g.dilation[2];
              if (w >= g.in[2] + g.pad_end[2]) continue;
              ++padded;
              if (din && hin && w >= 0 && w < g.in[2]) {
                sum += static_cast<std::int64_t>(src[(d * g.in[1] + h) * g.in[2] + w]) - xa.zero_point;
                ++inside;
              }
            }
          }
        }
        acc[static_cast<std::size_t>(pl * P + o)] = static_cast<std::int32_t>(sum);
        count[static_cast<std::size_t>(o)] = include_pad ? padded : inside;
      });
    }
  });
  // One multiplier per distinct window size.
  const std::string layer = detail::layer_of(ctx);
  std::map<std::int64_t, typename Scheme::Constants> k;
  const IntRange clamp = detail::clamp_of(ctx, ya.type);
  Tensor y(ya.type, out_shape);
  graph::visit_dtype(ya.type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::uint8_t>) {
      T* py = y.data<T>();
      for (std::int64_t pl = 0; pl < planes; ++pl)
        for (std::int64_t o = 0; o < P; ++o) {
          const std::int64_t c = count[static_cast<std::size_t>(o)];
          auto it = k.find(c);
          if (it == k.end())
            it = k.emplace(c, Scheme::make(static_cast<double>(xa.scale) /
                                               (static_cast<double>(ya.scale) * static_cast<double>(std::max<std::int64_t>(c, 1))),
                                           layer)).first;
          py[pl * P + o] = static_cast<T>(ref::requantize_value<Scheme>(acc[static_cast<std::size_t>(pl * P + o)], 0,
                                                                        it->second, ya.zero_point, clamp.qmin, clamp.qmax));
        }
    }
  });
  ctx.set_output(0, std::move(y));
}

// The built-in op (MaxPool, Flatten, Reshape) on the integers, then a requantization to the
// output parameters where they differ. Inputs: the op's own, then xs, xz, ys, yz.
template <class Scheme, void (*Inner)(OpContext&), std::size_t kInnerInputs>
void op_int_passthrough(OpContext& ctx) {
  if (ctx.num_inputs() != kInnerInputs + 4)
    ctx.fail(ctx.num_inputs(), " inputs; expected ", kInnerInputs + 4);
  const std::size_t q = kInnerInputs;
  const detail::Affine xa = detail::affine(ctx, q, q + 1, "input");
  const detail::Affine ya = detail::affine(ctx, q + 2, q + 3, "output");
  detail::expect_type(ctx, ctx.input(0), xa.type, "input");
  std::vector<const Tensor*> in;
  for (std::size_t i = 0; i < kInnerInputs; ++i) in.push_back(ctx.optional_input(i));
  OpContext inner(ctx.node(), ctx.opset(), in);
  Inner(inner);
  const Tensor& y = inner.output(0);
  const IntRange clamp = detail::clamp_of(ctx, ya.type);
  if (xa.scale == ya.scale && xa.zero_point == ya.zero_point && xa.type == ya.type &&
      clamp.qmin == detail::range_of(ya.type).qmin && clamp.qmax == detail::range_of(ya.type).qmax) {
    ctx.set_output(0, y);
    return;
  }
  ctx.set_output(0, detail::rescale<Scheme>(ctx, y, xa, ya, clamp));
}

// ------------------------------------------------------------------ IntConcat
template <class Scheme>
void op_int_concat(OpContext& ctx) {
  const std::size_t n = ctx.num_inputs();
  if (n < 5 || (n - 2) % 3 != 0) ctx.fail(n, " inputs; expected (x, scale, zero point) triples, then ys, yz");
  const detail::Affine ya = detail::affine(ctx, n - 2, n - 1, "output");
  const IntRange full = detail::range_of(ya.type);
  std::vector<Tensor> parts;
  for (std::size_t i = 0; i + 2 < n; i += 3) {
    const detail::Affine xa = detail::affine(ctx, i + 1, i + 2, "input");
    detail::expect_type(ctx, ctx.input(i), xa.type, "input");
    parts.push_back(detail::rescale<Scheme>(ctx, ctx.input(i), xa, ya, full));
  }
  std::vector<const Tensor*> in;
  for (const auto& p : parts) in.push_back(&p);
  OpContext inner(ctx.node(), ctx.opset(), in);
  ops::op_concat(inner);
  ctx.set_output(0, std::move(inner.output(0)));
}

// Registers the integer ops for Scheme (domain kDomain) into r.
template <class Scheme>
void register_integer_ops(OpRegistry& r) {
  const std::vector<std::string> conv = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", "clamp"};
  const std::vector<std::string> pool = {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides", "clamp"};
  r.add("IntConv", op_int_conv<Scheme>, conv, {}, kDomain);
  r.add("IntMatMul", op_int_matmul<Scheme>, {"clamp"}, {}, kDomain);
  r.add("IntAdd", op_int_add<Scheme>, {"clamp"}, {}, kDomain);
  r.add("IntRequantize", op_int_requantize<Scheme>, {"clamp"}, {}, kDomain);
  r.add("IntAveragePool", op_int_average_pool<Scheme, false>,
        {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides", "clamp"}, {},
        kDomain);
  r.add("IntGlobalAveragePool", op_int_average_pool<Scheme, true>, {"clamp"}, {}, kDomain);
  r.add("IntMaxPool", op_int_passthrough<Scheme, ops::op_max_pool, 1>,
        {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides", "clamp"}, {}, kDomain);
  r.add("IntFlatten", op_int_passthrough<Scheme, ops::op_flatten, 1>, {"axis", "clamp"}, {}, kDomain);
  r.add("IntReshape", op_int_passthrough<Scheme, ops::op_reshape, 2>, {"allowzero", "clamp"}, {1}, kDomain);
  r.add("IntConcat", op_int_concat<Scheme>, {"axis", "clamp"}, {}, kDomain);
}

}  // namespace integer
}  // namespace quantkit
