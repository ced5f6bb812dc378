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
// of the data's type.
//
// Fast paths. IntConv with weight zero points 0 runs depthwise convolutions plane by plane and
// the others as one GEMM per group, C^T = W [Mg x KK] * windows [KK x N P], the windows written
// straight into the int8 GEMM kernels' packed-B layout (NCHW out, no transpose); the input zero
// point times the weight sums is folded into the bias (the data fed as uint8: int8 is read XOR
// 0x80 with zero point z + 128). IntMatMul takes one more input, [9] the weights packed once
// by IntegerMode::prepare (simd::PackedB::to_bytes, for uint8 A; only when the weight zero
// points are 0), and folds z'_a * colsum(B) into the bias the same way. IntConv takes up to two
// more, made once by IntegerMode::prepare for 8-bit activations and weight zero points 0: [9]
// the weight rows' sums (int32 [M]) and [10] for channel groups of 4 and windows larger than
// 1 x 1 the weights in (kernel row, kernel column, channel) order ([M, K]); without them the
// op computes both per call (17 % of the demo CNN's integer time at batch 1). The same integers
// as the general path; scratch buffers belong to the calling thread and are kept (no
// allocation per call for them once warm).
//
// Numeric guards (int32 accumulators; "detected" = checked before the kernel runs, an Error
// naming the layer; "by construction" = the bound holds for every input of the op's types):
//   IntConv, IntMatMul  detected: K products (x - xz)(w - wz) plus the bias. |x - xz| <= 255
//              (8-bit data, any zero point), |w - wz| <= 128 for int8 weights with zero point 0
//              (255 otherwise), so K * 255 * 128 + max|bias| <= 2^31 - 1, i.e. K <= 65793 with
//              no bias (K = C/group * kernel size; K <= 33025 for weights with zero points).
//              check_accumulator() refuses larger K. The fast paths feed the data as uint8 and
//              fold zx * colsum(W) into the bias with wrapping (mod 2^32) arithmetic: exact
//              whenever the true sum fits int32, which the same bound guarantees.
//   IntAveragePool / IntGlobalAveragePool  detected: raw sums of up to 255 per tap (and
//              zp * count) over a window (the whole D x H x W plane for the global op), so
//              windows of more than (2^31 - 1) / 255 = 8421504 elements are refused.
//   IntAdd     by construction: (x - z) << 20 <= 255 * 2^20 < 2^28, two of them < 2^29.
//   IntRequantize, IntMaxPool, IntFlatten, IntReshape, IntConcat  by construction: one
//              (x - z) <= 255 per output, no sum.
// Requantization multipliers outside a scheme's representable range (<= 0, NaN, > 1 for the
// shift schemes, ...) are rejected by Scheme::make when the integer graph is built, naming the
// layer (quantkit/policy/requantization.hpp); nothing is wrapped or clamped silently.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
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
  switch (t) {
    case DType::int8: return {-128, 127};
    case DType::int16: return {-32768, 32767};
    case DType::uint16: return {0, 65535};
    default: return {0, 255};
  }
}

// Activations are 8-bit (int8/uint8, every fast path) or 16-bit (int16/uint16: A16, general
// paths); weights are 8-bit.
inline bool is_activation_type(DType t) {
  return t == DType::int8 || t == DType::uint8 || t == DType::int16 || t == DType::uint16;
}
inline bool is_16bit(DType t) { return t == DType::int16 || t == DType::uint16; }

// IntAdd scales both inputs' (x - zp) by 2^shift before their multipliers (TFLite: 20 for
// 8-bit); 16-bit differences (up to 65535) take 14 so that the product stays below 2^30.
inline int add_left_shift(DType a, DType b) { return is_16bit(a) || is_16bit(b) ? 14 : 20; }

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
  if (!is_activation_type(z.dtype()))
    ctx.fail(what, " zero point has element type ", graph::to_string(z.dtype()), "; expected int8, uint8, int16 or uint16");
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

// y = requantized acc, in y's element type (an activation type).
template <class Scheme>
void requantize_into(const View<const std::int32_t>& acc, const RequantParams<Scheme>& p, Tensor& y,
                     const std::string& layer) {
  switch (y.dtype()) {
    case DType::int8: simd::requantize(acc, p, y.view<std::int8_t>(), layer); break;
    case DType::int16: simd::requantize(acc, p, y.view<std::int16_t>(), layer); break;
    case DType::uint16: simd::requantize(acc, p, y.view<std::uint16_t>(), layer); break;
    default: simd::requantize(acc, p, y.view<std::uint8_t>(), layer); break;
  }
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
  requantize_into(View<const std::int32_t>(acc.data(), shape), p, y, layer_of(ctx));
  return y;
}

// A buffer of n T's owned by the calling thread (slot: one per concurrent use), grown when
// needed and kept.
template <class T, int kSlot>
T* scratch(std::size_t n) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// x (int8/uint8) rescaled from `in` to `out` parameters with the clamp: exact when the
// parameters are equal (only the clamp applies), the scheme's multiplier in/out otherwise.
// Computed for the 256 possible inputs once, then looked up.
template <class Scheme>
std::array<std::int32_t, 256> requantize_table(const Affine& in, const Affine& out, IntRange clamp,
                                               const std::string& layer);

template <class F>
void visit_int8(const OpContext& ctx, DType t, F&& f, const char* what) {
  if (t == DType::int8) f(std::int8_t{});
  else if (t == DType::uint8) f(std::uint8_t{});
  else ctx.fail(what, " has element type ", graph::to_string(t), "; expected int8 or uint8");
}

// Activations: int8, uint8, int16 or uint16.
template <class F>
void visit_activation(const OpContext& ctx, DType t, F&& f, const char* what) {
  if (t == DType::int8) f(std::int8_t{});
  else if (t == DType::uint8) f(std::uint8_t{});
  else if (t == DType::int16) f(std::int16_t{});
  else if (t == DType::uint16) f(std::uint16_t{});
  else ctx.fail(what, " has element type ", graph::to_string(t), "; expected int8, uint8, int16 or uint16");
}

// One value of that table (any input type): x -> clamp(Scheme(x - in.zp) + out.zp).
template <class Scheme>
struct Rescaler {
  Rescaler(const Affine& in, const Affine& out, IntRange clamp, const std::string& layer)
      : in_(in), out_(out), clamp_(clamp), exact_(in.scale == out.scale) {
    if (!exact_) k_ = Scheme::make(static_cast<double>(in.scale) / static_cast<double>(out.scale), layer);
  }
  std::int32_t operator()(std::int32_t x) const {
    const std::int32_t v = x - in_.zero_point;
    return exact_ ? std::min(std::max(v + out_.zero_point, clamp_.qmin), clamp_.qmax)
                  : ref::requantize_value<Scheme>(v, 0, k_, out_.zero_point, clamp_.qmin, clamp_.qmax);
  }
  Affine in_, out_;
  IntRange clamp_;
  bool exact_;
  typename Scheme::Constants k_{};
};

template <class Scheme>
Tensor rescale(const OpContext& ctx, const Tensor& x, const Affine& in, const Affine& out, IntRange clamp) {
  if (is_16bit(in.type) || is_16bit(out.type)) {  // 16-bit values: computed per element
    const Rescaler<Scheme> r(in, out, clamp, layer_of(ctx));
    Tensor y(out.type, x.shape());
    visit_activation(ctx, out.type, [&](auto tag) {
      using TO = decltype(tag);
      TO* py = y.data<TO>();
      for (std::int64_t i = 0; i < x.size(); ++i) py[i] = static_cast<TO>(r(static_cast<std::int32_t>(x.as_int64(i))));
    }, "output");
    return y;
  }
  const auto values = requantize_table<Scheme>(in, out, clamp, layer_of(ctx));
  std::array<std::uint8_t, 256> table{};  // the output's bytes
  for (std::size_t i = 0; i < 256; ++i) table[i] = static_cast<std::uint8_t>(values[i]);
  Tensor y(out.type, x.shape());
  const auto* px = static_cast<const std::uint8_t*>(x.raw());
  auto* py = static_cast<std::uint8_t*>(y.raw());
  const std::int64_t n = x.size();  // (a local: the byte stores may alias anything else)
  for (std::int64_t i = 0; i < n; ++i) py[i] = table[px[i]];
  return y;
}

// Numeric guard of IntConv / IntMatMul (see the top of this file): sum_k (x - xz)(w - wz) + bias
// must fit int32 for every possible input of these types; refuses K that could overflow.
struct AccumulatorBound {
  std::int64_t dx, dw, b, max_k;  // |x - zx|, |w - zw|, |bias| at most; the longest safe K
};
inline AccumulatorBound accumulator_bound(DType x_type, DType w_type, const std::vector<std::int32_t>& wz,
                                          const std::vector<std::int32_t>& bias) {
  AccumulatorBound r{is_16bit(x_type) ? 65535 : 255, 128, 0, 0};
  const IntRange wr = range_of(w_type);
  for (std::int32_t z : wz)
    if (z != 0 || w_type == DType::uint8)
      r.dw = std::max<std::int64_t>(r.dw, std::max<std::int64_t>(wr.qmax - std::int64_t{z}, std::int64_t{z} - wr.qmin));
  for (std::int32_t v : bias) r.b = std::max<std::int64_t>(r.b, v < 0 ? -std::int64_t{v} : std::int64_t{v});
  r.max_k = (std::int64_t{std::numeric_limits<std::int32_t>::max()} - r.b) / (r.dx * r.dw);
  return r;
}

inline void check_accumulator(const OpContext& ctx, std::int64_t K, DType w_type, const std::vector<std::int32_t>& wz,
                              const std::vector<std::int32_t>& bias, DType x_type = DType::uint8) {
  const AccumulatorBound bound = accumulator_bound(x_type, w_type, wz, bias);
  const std::int64_t dx = bound.dx, dw = bound.dw, b = bound.b, max_k = bound.max_k;
  if (K > max_k)
    ctx.fail("int32 accumulator could overflow: ", K, " products of |x - zx| <= ", dx, " and |w - zw| <= ", dw,
             " plus |bias| <= ", b, " reach ", static_cast<double>(K) * static_cast<double>(dx * dw) + static_cast<double>(b),
             "; expected a reduction length K <= ", max_k, " (2^31 - 1 in total)");
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

// C[m][n] = sum_k (A[m][k] - za[m or 0]) (B[k][n] - zb[n or 0]) for 16-bit operands (the int8
// GEMM kernels take bytes): int32 sums, modulo 2^32 as the kernels' (the callers' guards keep
// them exact).
template <class TA, class TB>
void gemm_wide(std::size_t M, std::size_t N, std::size_t K, const TA* a, std::size_t lda, const TB* b, std::size_t ldb,
               const std::int32_t* za, std::size_t za_count, const std::int32_t* zb, std::size_t zb_count,
               std::int32_t* c, std::size_t ldc) {
  std::vector<std::uint32_t> row(N);
  for (std::size_t m = 0; m < M; ++m) {
    std::fill(row.begin(), row.end(), 0u);
    const std::int32_t am = za[za_count == 1 ? 0 : m];
    for (std::size_t k = 0; k < K; ++k) {
      const auto av = static_cast<std::uint32_t>(std::int32_t{a[m * lda + k]} - am);
      const TB* bk = b + k * ldb;
      for (std::size_t n = 0; n < N; ++n)
        row[n] += av * static_cast<std::uint32_t>(std::int32_t{bk[n]} - zb[zb_count == 1 ? 0 : n]);
    }
    for (std::size_t n = 0; n < N; ++n) c[m * ldc + n] = static_cast<std::int32_t>(row[n]);
  }
}

}  // namespace detail

// ------------------------------------------------------------------ prepared fast paths
namespace detail {

// The data as uint8 for the GEMM: int8 is XORed with 0x80 (value + 128), so (x - z) stays
// (x' - (z + 128)).
inline std::uint8_t to_unsigned_mask(DType t) { return t == DType::int8 ? 0x80 : 0x00; }

// The geometry of a convolution as 2-D planes (depth extents 1) whose kernel rows are
// contiguous (no dilation along the width): the fast paths below.
inline bool planar(const ops::WindowGeometry& g) {
  return g.in[0] == 1 && g.kernel[0] == 1 && g.out[0] == 1 && g.dilation[2] == 1;
}

// Cg channel planes of one image, padded with the zero point (XOR mask applied to all):
// pp[c][(h + pad_top) * wp + w + pad_left] = x[c][h][w]. wp, hp: the padded extents (enough
// for every window, plus `slack` bytes after the last plane).
struct PaddedPlanes {
  std::int64_t hp = 0, wp = 0;
  std::uint8_t* data = nullptr;
};
// The padded extents (no data yet).
inline PaddedPlanes padded_extents(const ops::WindowGeometry& g) {
  PaddedPlanes pp;
  pp.hp = std::max(g.pad_begin[1] + g.in[1], (g.out[1] - 1) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1] + 1);
  pp.wp = std::max(g.pad_begin[2] + g.in[2], (g.out[2] - 1) * g.stride[2] + g.kernel[2]);
  return pp;
}
inline PaddedPlanes pad_planes(const std::uint8_t* x, std::int64_t Cg, const ops::WindowGeometry& g, std::uint8_t pad,
                               std::uint8_t mask, std::size_t slack) {
  PaddedPlanes pp = padded_extents(g);
  const std::size_t plane = static_cast<std::size_t>(pp.hp * pp.wp);
  pp.data = scratch<std::uint8_t, 4>(static_cast<std::size_t>(Cg) * plane + slack);
  std::memset(pp.data, pad ^ mask, static_cast<std::size_t>(Cg) * plane + slack);
  const std::int64_t H = g.in[1], W = g.in[2], top = g.pad_begin[1], left = g.pad_begin[2], wp = pp.wp;
  for (std::int64_t c = 0; c < Cg; ++c)
    for (std::int64_t h = 0; h < H; ++h) {
      const std::uint8_t* src = x + (c * H + h) * W;
      std::uint8_t* dst = pp.data + static_cast<std::size_t>(c) * plane + (h + top) * wp + left;
      for (std::int64_t w = 0; w < W; ++w) dst[w] = static_cast<std::uint8_t>(src[w] ^ mask);
    }
  return pp;
}

// The packed B (see simd/gemm_abi.hpp) is filled a run of columns at a time: the columns of one
// run share a panel, so column c of 4-deep k group gk is the word at
// packed + j * k4 * panel + (gk * panel + c) * 4, and consecutive columns are consecutive words.
struct PanelRun {
  std::uint8_t* dst;  // the run's first word in group 0
  std::int64_t len;   // columns
};
inline PanelRun panel_run(std::uint8_t* packed, std::int64_t col, std::int64_t len, std::int64_t panel, std::int64_t k4) {
  const std::int64_t j = col / panel, c = col % panel;
  return {packed + (j * k4 * panel + c * 4), std::min(len, panel - c)};
}

// dst word i = bytes s0[i s], s1[i s], s2[i s], s3[i s] ^ mask: 4 k rows into 4-byte columns.
inline void interleave4(const std::uint8_t* const* s, std::int64_t step, std::int64_t n, std::uint32_t mask,
                        std::uint8_t* dst) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "packed B words are composed little-endian");
  const std::uint8_t *s0 = s[0], *s1 = s[1], *s2 = s[2], *s3 = s[3];
  if (step == 1) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint32_t v = (std::uint32_t{s0[i]} | std::uint32_t{s1[i]} << 8 | std::uint32_t{s2[i]} << 16 |
                               std::uint32_t{s3[i]} << 24) ^ mask;
      std::memcpy(dst + i * 4, &v, 4);
    }
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t o = i * step;
    const std::uint32_t v = (std::uint32_t{s0[o]} | std::uint32_t{s1[o]} << 8 | std::uint32_t{s2[o]} << 16 |
                             std::uint32_t{s3[o]} << 24) ^ mask;
    std::memcpy(dst + i * 4, &v, 4);
  }
}

// 1x1 windows (stride 1, no padding) of one image: the 4-deep k groups of a position are 4
// consecutive channels at that position (zeros past Cg).
inline void pack_pointwise(const std::uint8_t* x, std::int64_t Cg, std::int64_t P, std::int64_t col0, std::size_t panel,
                           std::int64_t k4, std::uint8_t mask, std::uint8_t* packed) {
  const auto upanel = static_cast<std::int64_t>(panel);
  std::uint8_t* zeros = scratch<std::uint8_t, 6>(static_cast<std::size_t>(P));
  std::memset(zeros, 0, static_cast<std::size_t>(P));
  for (std::int64_t gk = 0; gk < k4 / 4; ++gk) {
    std::uint32_t word_mask = 0;  // the real channels' bytes only: the K padding stays 0
    for (std::int64_t r = 0; r < 4; ++r)
      if (gk * 4 + r < Cg) word_mask |= std::uint32_t{mask} << (8 * r);
    for (std::int64_t p = 0; p < P;) {
      const PanelRun run = panel_run(packed, col0 + p, P - p, upanel, k4);
      const std::uint8_t* s[4];
      for (std::int64_t r = 0; r < 4; ++r) s[r] = gk * 4 + r < Cg ? x + (gk * 4 + r) * P + p : zeros;
      interleave4(s, 1, run.len, word_mask, run.dst + gk * upanel * 4);
      p += run.len;
    }
  }
}

// The windows of the output positions of one image (channel planes padded by pad_planes),
// written as columns `col0`... of the packed B in (channel, kernel row, kernel column) k order,
// zeros past KK: per output row and panel run, each 4-deep k group interleaves 4 tap rows.
inline void pack_windows(const PaddedPlanes& pp, std::int64_t Cg, const ops::WindowGeometry& g, std::int64_t col0,
                         std::size_t panel, std::int64_t k4, std::uint8_t* packed) {
  const std::int64_t kh_n = g.kernel[1], kw_n = g.kernel[2], plane = pp.hp * pp.wp, KK = Cg * kh_n * kw_n;
  const std::int64_t sh = g.stride[1], sw = g.stride[2], dh = g.dilation[1], wp = pp.wp, OW = g.out[2];
  const auto upanel = static_cast<std::int64_t>(panel);
  // Per k: the tap's offset in the padded planes, or -1 past KK (a zero row).
  std::int64_t* offset = scratch<std::int64_t, 7>(static_cast<std::size_t>(k4));
  for (std::int64_t k = 0; k < k4; ++k) {
    const std::int64_t c = k / (kh_n * kw_n), kh = k / kw_n % kh_n, kw = k % kw_n;
    offset[k] = k < KK ? c * plane + kh * dh * wp + kw : -1;
  }
  std::uint8_t* zeros = scratch<std::uint8_t, 6>(static_cast<std::size_t>(OW * sw));
  std::memset(zeros, 0, static_cast<std::size_t>(OW * sw));
  for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
    for (std::int64_t ow = 0; ow < OW;) {
      const PanelRun run = panel_run(packed, col0 + oh * OW + ow, OW - ow, upanel, k4);
      const std::uint8_t* base = pp.data + oh * sh * wp + ow * sw;
      for (std::int64_t gk = 0; gk < k4 / 4; ++gk) {
        const std::uint8_t* s[4];
        for (std::int64_t r = 0; r < 4; ++r) s[r] = offset[gk * 4 + r] < 0 ? zeros : base + offset[gk * 4 + r];
        interleave4(s, sw, run.len, 0, run.dst + gk * upanel * 4);
      }
      ow += run.len;
    }
}

// Cg (a multiple of 4) channels of one image, padded with the zero point and stored
// position-major: out[((h + pad_top) wp + w + pad_left) Cg + c] = x[c][h][w] ^ mask.
inline PaddedPlanes pad_positions(const std::uint8_t* x, std::int64_t Cg, const ops::WindowGeometry& g,
                                  std::uint8_t pad, std::uint8_t mask) {
  PaddedPlanes pp = padded_extents(g);
  const auto bytes = static_cast<std::size_t>(pp.hp * pp.wp * Cg);
  pp.data = scratch<std::uint8_t, 4>(bytes);
  std::memset(pp.data, pad ^ mask, bytes);
  const std::int64_t H = g.in[1], W = g.in[2], HW = H * W, top = g.pad_begin[1], left = g.pad_begin[2];
  for (std::int64_t h = 0; h < H; ++h)
    for (std::int64_t w = 0; w < W; ++w) {
      std::uint8_t* dst = pp.data + ((h + top) * pp.wp + w + left) * Cg;
      const std::uint8_t* src = x + h * W + w;
      for (std::int64_t c = 0; c < Cg; ++c) dst[c] = static_cast<std::uint8_t>(src[c * HW] ^ mask);
    }
  return pp;
}

// The windows of one image from pad_positions, in (kernel row, kernel column, channel) k order
// (KK = k4): a window row is kw_n Cg contiguous bytes, i.e. consecutive k groups.
inline void pack_windows_positions(const PaddedPlanes& pp, std::int64_t Cg, const ops::WindowGeometry& g,
                                   std::int64_t col0, std::size_t panel, std::int64_t k4, std::uint8_t* packed) {
  const std::int64_t kh_n = g.kernel[1], words = g.kernel[2] * Cg / 4;
  const std::int64_t sh = g.stride[1], sw = g.stride[2], dh = g.dilation[1], wp = pp.wp, OW = g.out[2];
  const auto upanel = static_cast<std::int64_t>(panel);
  const std::int64_t group_step = upanel * 4;
  for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
    for (std::int64_t ow = 0; ow < OW;) {
      const PanelRun run = panel_run(packed, col0 + oh * OW + ow, OW - ow, upanel, k4);
      for (std::int64_t i = 0; i < run.len; ++i) {
        const std::uint8_t* src = pp.data + ((oh * sh) * wp + (ow + i) * sw) * Cg;
        std::uint8_t* dst = run.dst + i * 4;
        for (std::int64_t kh = 0; kh < kh_n; ++kh, src += dh * wp * Cg)
          for (std::int64_t q = 0; q < words; ++q, dst += group_step) std::memcpy(dst, src + q * 4, 4);
      }
      ow += run.len;
    }
}

// Depthwise, planar, stride 1: the C planes of an image padded once, then per plane all taps
// over the padded width at once (simd::depthwise_rows; the columns past the output width are
// computed and dropped).
template <class TW>
void depthwise_planar(const std::uint8_t* x, std::int64_t N, std::int64_t C, const TW* w, const ops::WindowGeometry& g,
                      std::uint8_t pad, std::uint8_t mask, std::int32_t* acc) {
  const std::int64_t ks = g.kernel_size(), OH = g.out[1], OW = g.out[2], P = OH * OW;
  const std::int64_t in_size = g.in_size();
  std::int32_t* wk = scratch<std::int32_t, 8>(static_cast<std::size_t>(C * ks));
  for (std::int64_t i = 0; i < C * ks; ++i) wk[i] = w[i];
  const PaddedPlanes extents = padded_extents(g);
  const std::int64_t wide = OH * extents.wp, plane = extents.hp * extents.wp;
  std::int64_t* offset = scratch<std::int64_t, 7>(static_cast<std::size_t>(ks));
  for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh)
    for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw) offset[kh * g.kernel[2] + kw] = kh * g.dilation[1] * extents.wp + kw;
  std::int32_t* sum = scratch<std::int32_t, 5>(static_cast<std::size_t>(wide));
  for (std::int64_t n = 0; n < N; ++n) {
    const PaddedPlanes pp = pad_planes(x + n * C * in_size, C, g, pad, mask, static_cast<std::size_t>(g.kernel[2]));
    for (std::int64_t c = 0; c < C; ++c) {
      simd::depthwise_rows(pp.data + c * plane, static_cast<std::size_t>(wide), wk + c * ks, offset,
                           static_cast<std::size_t>(ks), sum);
      std::int32_t* out = acc + (n * C + c) * P;
      for (std::int64_t oh = 0; oh < OH; ++oh) std::memcpy(out + oh * OW, sum + oh * extents.wp, static_cast<std::size_t>(OW) * 4);
    }
  }
}

// Depthwise (one input and one output channel per group): acc[n, c, p] = sum_k w[c, k] x'[...],
// the window values gathered per plane (im2col of one channel), then a vectorizable sum.
template <class TW>
void depthwise_accumulate(const std::uint8_t* x, std::int64_t N, std::int64_t C, const TW* w,
                          const ops::WindowGeometry& g, std::uint8_t pad, std::uint8_t mask, std::int32_t* acc) {
  const std::int64_t P = g.out_size(), in_size = g.in_size(), ks = g.kernel_size();
  std::uint8_t* col = scratch<std::uint8_t, 1>(static_cast<std::size_t>(ks * P));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c) {
      ops::im2col(x + (n * C + c) * in_size, 1, g, pad, col);
      std::int32_t* out = acc + (n * C + c) * P;
      std::fill(out, out + P, 0);
      for (std::int64_t k = 0; k < ks; ++k) {
        const std::int32_t wk = w[c * ks + k];
        const std::uint8_t* src = col + k * P;
        for (std::int64_t p = 0; p < P; ++p) out[p] += wk * static_cast<std::int32_t>(src[p] ^ mask);
      }
    }
}


// sum_k w[k] of one weight row, modulo 2^32 (the folded bias's arithmetic; exact within the
// accumulator guard).
template <class TW>
std::int32_t weight_row_sum(const TW* w, std::int64_t K) {
  std::uint32_t sum = 0;
  for (std::int64_t k = 0; k < K; ++k) sum += static_cast<std::uint32_t>(std::int32_t{w[k]});
  return static_cast<std::int32_t>(sum);
}

// Weights [M, Cg, ks] (bytes) as [M, ks, Cg]: the k order of windows packed by position.
inline void reorder_conv_weights(const std::uint8_t* w, std::int64_t M, std::int64_t Cg, std::int64_t ks,
                                 std::uint8_t* out) {
  const std::int64_t KK = Cg * ks;
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t c = 0; c < Cg; ++c)
      for (std::int64_t t = 0; t < ks; ++t) out[m * KK + t * Cg + c] = w[m * KK + c * ks + t];
}

// IntConv's output from its int32 accumulators (N x M x out): requantized per output channel
// (multiplier s_x * s_w[m] / s_y, bias[m]), clamped (a fused Relu/Clip).
template <class Scheme>
void set_conv_output(OpContext& ctx, const std::vector<std::int32_t>& acc, const Dims& out_shape, const Affine& xa,
                     const Affine& ya, const std::vector<float>& ws, const std::vector<std::int32_t>& bias) {
  const std::int64_t M = out_shape[1];
  std::vector<double> m;
  for (float s : ws) m.push_back(multiplier<Scheme>(xa.scale, s, ya.scale));
  if (m.size() == 1 && M > 1 && !bias.empty()) m.assign(static_cast<std::size_t>(M), m[0]);
  ctx.set_output(0, requantize<Scheme>(ctx, acc, out_shape, m.size() > 1 || !bias.empty() ? 1 : -1, m, bias, ya.type,
                                       ya.zero_point, clamp_of(ctx, ya.type)));
}
// IntMatMul's output from its accumulators ([..., N]): per column (or per tensor).
template <class Scheme>
void set_matmul_output(OpContext& ctx, const std::vector<std::int32_t>& acc, const Dims& out_shape, const Affine& aa,
                       const Affine& ya, const std::vector<float>& bs, const std::vector<std::int32_t>& bias) {
  const std::int64_t N = out_shape[out_shape.rank - 1];
  std::vector<double> m;
  for (float s : bs) m.push_back(multiplier<Scheme>(aa.scale, s, ya.scale));
  if (m.size() == 1 && N > 1 && !bias.empty()) m.assign(static_cast<std::size_t>(N), m[0]);
  ctx.set_output(0, requantize<Scheme>(ctx, acc, out_shape, m.size() > 1 ? out_shape.rank - 1 : -1, m, bias, ya.type,
                                       ya.zero_point, clamp_of(ctx, ya.type)));
}
}  // namespace detail

// IntConv when every weight zero point is 0. Depthwise: accumulated per plane. Otherwise, per
// group, C^T = W_g [Mg x KK] * windows [KK x N P] on the int8 GEMM kernels: the windows are
// written straight into the kernels' packed-B layout, the weights are the A side, and each
// output channel's accumulators come out as one row (NCHW, no transpose). The activations are
// fed as uint8 (int8 XOR 0x80) against int8 weights, or as int8 against uint8 weights where the
// kernels need mixed signs; (x - z_x) w = x' w - z'_x w, so z'_x sum_k w[m][k] is folded into the
// bias. Returns false (the caller takes the general path) for 3-D windows or kernel dilation
// along the width.
namespace detail {
template <class Scheme>
bool int_conv_fast(OpContext& ctx, const detail::Affine& xa, const detail::Affine& ya, const std::vector<float>& ws,
                   const std::vector<std::int32_t>& bias) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  if (is_16bit(x.dtype()) || is_16bit(ya.type)) return false;  // 16-bit: the general path
  const std::int64_t group = ctx.node().attr_int("group", 1);
  const ops::WindowGeometry g = ops::conv_geometry(ctx, x.shape(), w.shape(), group);
  if (!detail::planar(g)) return false;
  const std::int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0);
  const std::int64_t Cg = C / group, Mg = M / group, KK = Cg * g.kernel_size(), P = g.out_size(), in_size = g.in_size();
  const Dims out_shape = ops::conv_output_shape(x.shape(), M, g);
  const simd::GemmKernels& kernels = simd::gemm_kernels();
  const bool w_signed = w.dtype() == DType::int8;
  // Depthwise convolutions are accumulated here, with unsigned activations (no GEMM).
  const bool depthwise = Cg == 1 && Mg == 1;
  // The activations' signedness in the GEMM: the other one than the weights' where the kernels
  // need mixed signs, else unsigned.
  const bool x_signed_in_gemm = !depthwise && kernels.needs_mixed_signs && !w_signed;
  const std::uint8_t mask = static_cast<std::uint8_t>((x.dtype() == DType::int8) != x_signed_in_gemm ? 0x80 : 0x00);
  // z'_x: the zero point as the GEMM sees it.
  const std::int32_t zx = xa.zero_point + (x.dtype() == DType::int8 && !x_signed_in_gemm ? 128 : 0) -
                          (x.dtype() == DType::uint8 && x_signed_in_gemm ? 128 : 0);
  const auto pad = static_cast<std::uint8_t>(xa.zero_point);  // the zero point's bits in x's type
  const auto* px = static_cast<const std::uint8_t*>(x.raw());
  // Prepared by IntegerMode::prepare (inputs 9 and 10, see add_prepared_conv_weights): the weight
  // rows' sums, and the weights in (kernel row, kernel column, channel) order.
  const Tensor* sums = ctx.optional_input(9);
  const Tensor* reordered_in = ctx.optional_input(10);
  if (sums && (sums->dtype() != DType::int32 || !sums->shape().equals({M})))
    ctx.fail("prepared weight sums are ", graph::to_string(sums->dtype()), " ", sums->shape().to_string(),
             "; expected int32 [", M, "]");
  if (reordered_in && (reordered_in->dtype() != w.dtype() || !reordered_in->shape().equals({M, KK})))
    ctx.fail("prepared reordered weights are ", graph::to_string(reordered_in->dtype()), " ",
             reordered_in->shape().to_string(), "; expected ", graph::to_string(w.dtype()), " [", M, ", ", KK, "]");
  std::vector<std::int32_t> folded(static_cast<std::size_t>(M));
  visit_int8(ctx, w.dtype(), [&](auto tag) {
    using TW = decltype(tag);
    const TW* pw = w.data<TW>();
    const std::int32_t* ps = sums ? sums->data<std::int32_t>() : nullptr;
    for (std::int64_t m = 0; m < M; ++m) {
      const auto sum = static_cast<std::uint32_t>(ps ? ps[m] : weight_row_sum(pw + m * KK, KK));
      const std::uint32_t b = bias.empty() ? 0u : static_cast<std::uint32_t>(bias[static_cast<std::size_t>(m)]);
      folded[static_cast<std::size_t>(m)] = static_cast<std::int32_t>(b - static_cast<std::uint32_t>(zx) * sum);
    }
  }, "weight");
  std::vector<double> mult;
  for (std::int64_t m = 0; m < M; ++m)
    mult.push_back(multiplier<Scheme>(xa.scale, ws[ws.size() == 1 ? 0 : static_cast<std::size_t>(m)], ya.scale));
  auto params = RequantParams<Scheme>::make(mult, range_of(ya.type), ya.zero_point, layer_of(ctx));
  const IntRange clamp = clamp_of(ctx, ya.type);
  params.clamp_min = clamp.qmin;
  params.clamp_max = clamp.qmax;
  Tensor y(ya.type, out_shape);
  // acc viewed as [channels, images, P] -> y from image block `image_offset` (= n0 M), channels c0...
  auto requantize_view = [&](const View<const std::int32_t>& acc, std::int64_t image_offset, std::int64_t c0,
                             std::int64_t channels, const Dims& out_dims, const Dims& out_strides) {
    RequantParams<Scheme> p = params;  // this group's channels
    p.constants.assign(params.constants.begin() + c0, params.constants.begin() + c0 + channels);
    p.bias.assign(folded.begin() + c0, folded.begin() + c0 + channels);
    p.channel_axis = 0;
    auto* base = static_cast<std::uint8_t*>(y.raw()) + (image_offset + c0) * P;
    if (ya.type == DType::int8)
      simd::requantize(acc, p, View<std::int8_t>(reinterpret_cast<std::int8_t*>(base), out_dims, out_strides), layer_of(ctx));
    else
      simd::requantize(acc, p, View<std::uint8_t>(base, out_dims, out_strides), layer_of(ctx));
  };

  // Images are processed in chunks whose int32 accumulators (~128 KiB) stay in cache until
  // requantized.
  const std::int64_t chunk =
      std::max<std::int64_t>(1, std::int64_t{32768} / std::max<std::int64_t>((depthwise ? M : Mg) * P, 1));
  if (depthwise) {
    std::int32_t* acc = scratch<std::int32_t, 0>(static_cast<std::size_t>(chunk * M * P));
    for (std::int64_t n0 = 0; n0 < N; n0 += chunk) {
      const std::int64_t nc = std::min(chunk, N - n0);
      visit_int8(ctx, w.dtype(), [&](auto tag) {
        using TW = decltype(tag);
        const std::uint8_t* xc = px + n0 * C * in_size;
        if (g.stride[1] == 1 && g.stride[2] == 1)
          depthwise_planar<TW>(xc, nc, C, w.data<TW>(), g, pad, mask, acc);
        else
          depthwise_accumulate<TW>(xc, nc, C, w.data<TW>(), g, pad, mask, acc);
      }, "weight");
      // acc [nc, M, P] as [M, nc, P]
      requantize_view(View<const std::int32_t>(acc, Dims{M, nc, P}, Dims{P, M * P, 1}), n0 * M, 0, M,
                      Dims{M, nc, P}, Dims{P, M * P, 1});
    }
    ctx.set_output(0, std::move(y));
    return true;
  }

  const std::size_t panel = kernels.panel;
  const std::int64_t k4 = (KK + 3) / 4 * 4, cols = chunk * P;
  const std::int64_t panels = (cols + static_cast<std::int64_t>(panel) - 1) / static_cast<std::int64_t>(panel);
  std::uint8_t* packed = scratch<std::uint8_t, 2>(static_cast<std::size_t>(panels * k4) * panel + 64);
  std::int32_t* acc = scratch<std::int32_t, 0>(static_cast<std::size_t>(Mg * cols));
  const bool pointwise = ops::is_pointwise(g);
  // Whole 4-deep k groups of channels: windows packed from position-major planes, whole words
  // at a time, with the weights' k reordered to (kernel row, kernel column, channel).
  const bool by_position = !pointwise && Cg % 4 == 0;
  const auto* weights = static_cast<const std::uint8_t*>(w.raw());
  if (by_position && g.kernel_size() > 1) {  // (1 x 1 windows: the order is the same)
    if (reordered_in) {
      weights = static_cast<const std::uint8_t*>(reordered_in->raw());
    } else {
      std::uint8_t* reordered = scratch<std::uint8_t, 3>(static_cast<std::size_t>(M * KK));
      reorder_conv_weights(weights, M, Cg, g.kernel_size(), reordered);
      weights = reordered;
    }
  }
  for (std::int64_t gi = 0; gi < group; ++gi)
    for (std::int64_t n0 = 0; n0 < N; n0 += chunk) {
      const std::int64_t nc = std::min(chunk, N - n0), nc_cols = nc * P;
      for (std::int64_t n = 0; n < nc; ++n) {
        const std::uint8_t* img = px + ((n0 + n) * C + gi * Cg) * in_size;
        if (pointwise) {
          pack_pointwise(img, Cg, P, n * P, panel, k4, mask, packed);
        } else if (by_position) {
          pack_windows_positions(pad_positions(img, Cg, g, pad, mask), Cg, g, n * P, panel, k4, packed);
        } else {
          pack_windows(pad_planes(img, Cg, g, pad, mask, 0), Cg, g, n * P, panel, k4, packed);
        }
      }
      simd::GemmArgs args;
      args.m = static_cast<std::size_t>(Mg);
      args.n = static_cast<std::size_t>(nc_cols);
      args.k = static_cast<std::size_t>(KK);
      args.a = weights + gi * Mg * KK;
      args.lda = static_cast<std::size_t>(KK);
      args.a_signed = w_signed;
      args.packed_b = packed;
      args.packed_signed = x_signed_in_gemm;
      args.c = acc;
      args.ldc = static_cast<std::size_t>(nc_cols);
      kernels.gemm(args);
      // acc [Mg, nc, P] -> y[n0 + n, gi Mg + m, p]
      requantize_view(View<const std::int32_t>(acc, Dims{Mg, nc, P}), n0 * M, gi * Mg, Mg, Dims{Mg, nc, P},
                      Dims{P, M * P, 1});
    }
  ctx.set_output(0, std::move(y));
  return true;
}
}  // namespace detail

namespace detail {
// IntMatMul's per-column requantization on the packed path: the scheme's constants of
// s_a * s_b[n] / s_y, and the bias with z'_a colsum(B) folded in (z'_a: A's zero point as uint8).
template <class Scheme>
std::vector<typename Scheme::Constants> matmul_constants(float as, const float* bs, std::size_t bs_count, float ys,
                                                         std::int64_t N, const std::string& layer) {
  std::vector<double> m;
  m.reserve(static_cast<std::size_t>(N));
  for (std::int64_t n = 0; n < N; ++n) m.push_back(multiplier<Scheme>(as, bs[bs_count == 1 ? 0 : n], ys));
  return RequantParams<Scheme>::make(m, IntRange{}, 0, layer).constants;
}

inline std::vector<std::int32_t> fold_matmul_bias(const std::vector<std::int32_t>& bias, std::int32_t za,
                                                  const std::int32_t* column_sums, std::int64_t N) {
  std::vector<std::int32_t> folded(static_cast<std::size_t>(N));
  for (std::int64_t n = 0; n < N; ++n) {  // modulo 2^32, as the accumulators
    const std::uint32_t bv = bias.empty() ? 0u : static_cast<std::uint32_t>(bias[static_cast<std::size_t>(n)]);
    folded[static_cast<std::size_t>(n)] =
        static_cast<std::int32_t>(bv - static_cast<std::uint32_t>(za) * static_cast<std::uint32_t>(column_sums[n]));
  }
  return folded;
}

// A uint8 A's zero point as the packed path reads it (int8 A: x XOR 0x80, zero point + 128).
inline std::int32_t unsigned_zero_point(const Affine& a) { return a.zero_point + (a.type == DType::int8 ? 128 : 0); }
}  // namespace detail

// IntMatMul's requantization derived once from constant inputs (OpRegistry::set_prepare), for
// the packed path: [0] the constants per column (RequantParams::constants as bytes), [1] the
// folded bias (int32 [N]). Recomputing them per call (a multiplier and its fixed-point split per
// column) was about a quarter of a batch-1 call of a 1024 x 1024 layer. Inputs the op would
// refuse give no prepared values: the run reports them, as without prepare.
template <class Scheme>
std::vector<Tensor> prepare_int_matmul(const graph::Node& node, const std::vector<const Tensor*>& c) {
  using K = typename Scheme::Constants;
  static_assert(std::is_trivially_copyable<K>::value, "a scheme's constants are kept as bytes");
  const auto at = [&](std::size_t i) { return i < c.size() ? c[i] : nullptr; };
  const Tensor *as = at(1), *az = at(2), *b = at(3), *bs = at(4), *ys = at(6), *yz = at(7), *bias = at(8),
               *packed = at(9);
  if (!as || !az || !b || !bs || !ys || !yz || !packed) return {};
  if (node.inputs.size() > 8 && !node.inputs[8].empty() && !bias) return {};  // a fed bias
  try {
    const auto scalar = [](const Tensor* t) { return t->dtype() == DType::float32 && t->size() == 1; };
    if (!scalar(as) || !scalar(ys) || az->size() != 1 || b->rank() != 2 || bs->dtype() != DType::float32) return {};
    if ((az->dtype() != DType::int8 && az->dtype() != DType::uint8) || packed->dtype() != DType::uint8) return {};
    const std::int64_t K_ = b->dim(0), N = b->dim(1);
    if (bs->size() != 1 && bs->size() != N) return {};
    if (bias && (bias->dtype() != DType::int32 || bias->size() != N)) return {};
    const simd::PackedBView pb = simd::PackedBView::from_bytes(packed->raw(), packed->nbytes(), node.name);
    if (static_cast<std::int64_t>(pb.k) != K_ || static_cast<std::int64_t>(pb.n) != N || pb.a_signed) return {};
    detail::Affine aa;
    aa.scale = as->data<float>()[0];
    aa.zero_point = static_cast<std::int32_t>(az->as_int64(0));
    aa.type = az->dtype();
    const float s_y = ys->data<float>()[0];
    if (!(aa.scale > 0.0f) || !std::isfinite(aa.scale) || !(s_y > 0.0f) || !std::isfinite(s_y)) return {};
    for (std::int64_t i = 0; i < bs->size(); ++i)
      if (!(bs->data<float>()[i] > 0.0f) || !std::isfinite(bs->data<float>()[i])) return {};
    const auto k = detail::matmul_constants<Scheme>(aa.scale, bs->data<float>(), static_cast<std::size_t>(bs->size()),
                                                    s_y, N, node.name);
    const auto folded = detail::fold_matmul_bias(bias ? bias->to_vector<std::int32_t>() : std::vector<std::int32_t>{},
                                                 detail::unsigned_zero_point(aa), pb.column_sums, N);
    std::vector<Tensor> r;
    r.emplace_back(DType::uint8, Dims{static_cast<std::int64_t>(k.size() * sizeof(K))});
    std::memcpy(r.back().raw(), k.data(), k.size() * sizeof(K));
    r.emplace_back(DType::int32, Dims{N});
    std::memcpy(r.back().raw(), folded.data(), folded.size() * sizeof(std::int32_t));
    return r;
  } catch (const Error&) {
    return {};
  }
}

// IntMatMul with prepared weights (input 9: packed for uint8 A, weight zero points 0): a
// [..., K] (int8 read XOR 0x80) x B [K, N]; z'_a colsum(B) folded into the bias.
template <class Scheme>
void int_matmul_prepared(OpContext& ctx, const detail::Affine& aa, const detail::Affine& ya,
                         const std::vector<float>& bs, const std::vector<std::int32_t>& bias) {
  using K_t = typename Scheme::Constants;
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const Tensor& packed = ctx.input(9, DType::uint8);
  const std::int64_t K = b.dim(0), N = b.dim(1), M = K == 0 ? 0 : a.size() / K;
  const simd::PackedBView pb = simd::PackedBView::from_bytes(packed.raw(), packed.nbytes(),
                                                             detail::layer_of(ctx) + " packed weights");
  if (static_cast<std::int64_t>(pb.k) != K || static_cast<std::int64_t>(pb.n) != N || pb.a_signed)
    ctx.fail("prepared weights are ", pb.k, " x ", pb.n, " for ", pb.a_signed ? "int8" : "uint8", " A; expected ", K,
             " x ", N, " for uint8 A");
  const auto* pa = static_cast<const std::uint8_t*>(a.raw());
  if (a.dtype() == DType::int8) {  // as uint8: x XOR 0x80
    const std::int64_t n = a.size();
    std::uint8_t* u = detail::scratch<std::uint8_t, 2>(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) u[i] = static_cast<std::uint8_t>(pa[i] ^ 0x80);
    pa = u;
  }
  std::int32_t* acc = detail::scratch<std::int32_t, 0>(static_cast<std::size_t>(M * N));
  simd::gemm_s32(static_cast<std::size_t>(M), pa, static_cast<std::size_t>(K), pb, acc, static_cast<std::size_t>(N));
  Dims out_shape = a.shape();
  out_shape[a.rank() - 1] = N;
  RequantParams<Scheme> p;
  const std::vector<Tensor>* prep = ctx.prepared();
  if (prep && prep->size() == 2 && (*prep)[0].nbytes() == static_cast<std::size_t>(N) * sizeof(K_t) &&
      (*prep)[1].size() == N) {
    p.constants.resize(static_cast<std::size_t>(N));  // bytes: no alignment assumed
    std::memcpy(static_cast<void*>(p.constants.data()), (*prep)[0].raw(), (*prep)[0].nbytes());
    p.bias = (*prep)[1].to_vector<std::int32_t>();
  } else {
    p.constants = detail::matmul_constants<Scheme>(aa.scale, bs.data(), bs.size(), ya.scale, N, detail::layer_of(ctx));
    p.bias = detail::fold_matmul_bias(bias, detail::unsigned_zero_point(aa), pb.column_sums, N);
  }
  p.output_zero_point = ya.zero_point;
  const IntRange clamp = detail::clamp_of(ctx, ya.type);
  p.clamp_min = clamp.qmin;
  p.clamp_max = clamp.qmax;
  p.channel_axis = out_shape.rank - 1;
  Tensor y(ya.type, out_shape);
  detail::requantize_into(View<const std::int32_t>(acc, out_shape), p, y, detail::layer_of(ctx));
  ctx.set_output(0, std::move(y));
}

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
  detail::check_accumulator(ctx, KK, w.dtype(), wz, bias, x.dtype());
  if (std::all_of(wz.begin(), wz.end(), [](std::int32_t z) { return z == 0; }) &&
      detail::int_conv_fast<Scheme>(ctx, xa, ya, ws, bias))
    return;
  const Dims out_shape = ops::conv_output_shape(x.shape(), M, g);
  std::vector<std::int32_t> acc(static_cast<std::size_t>(out_shape.product()));
  const bool pointwise = ops::is_pointwise(g);
  detail::visit_activation(ctx, x.dtype(), [&](auto xtag) {
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
          if constexpr (sizeof(TX) == 1)
            simd::gemm_s32(static_cast<std::size_t>(Mg), static_cast<std::size_t>(P), static_cast<std::size_t>(KK),
                           w.data<TW>() + gi * Mg * KK, static_cast<std::size_t>(KK), cp, static_cast<std::size_t>(P),
                           acc.data() + (n * M + gi * Mg) * P, static_cast<std::size_t>(P), zp);
          else
            detail::gemm_wide(static_cast<std::size_t>(Mg), static_cast<std::size_t>(P), static_cast<std::size_t>(KK),
                              w.data<TW>() + gi * Mg * KK, static_cast<std::size_t>(KK), cp, static_cast<std::size_t>(P),
                              zp.a, zp.a_count, &xz, 1, acc.data() + (n * M + gi * Mg) * P, static_cast<std::size_t>(P));
        }
    }, "weight");
  }, "input");
  detail::set_conv_output<Scheme>(ctx, acc, out_shape, xa, ya, ws, bias);
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
  detail::check_accumulator(ctx, K, b.dtype(), bz, bias, a.dtype());
  if (ctx.has_input(9) && !detail::is_16bit(a.dtype()) && !detail::is_16bit(ya.type)) {
    int_matmul_prepared<Scheme>(ctx, aa, ya, bs, bias);
    return;
  }
  Dims out_shape = a.shape();
  out_shape[a.rank() - 1] = N;
  std::vector<std::int32_t> acc(static_cast<std::size_t>(M * N));
  detail::visit_activation(ctx, a.dtype(), [&](auto atag) {
    using TA = decltype(atag);
    detail::visit_int8(ctx, b.dtype(), [&](auto btag) {
      using TB = decltype(btag);
      simd::GemmZeroPoints zp;
      zp.a = &aa.zero_point;
      zp.b = bz.data();
      zp.b_count = bz.size();
      if constexpr (sizeof(TA) == 1)
        simd::gemm_s32(static_cast<std::size_t>(M), static_cast<std::size_t>(N), static_cast<std::size_t>(K),
                       a.data<TA>(), static_cast<std::size_t>(K), b.data<TB>(), static_cast<std::size_t>(N),
                       acc.data(), static_cast<std::size_t>(N), zp);
      else
        detail::gemm_wide(static_cast<std::size_t>(M), static_cast<std::size_t>(N), static_cast<std::size_t>(K),
                          a.data<TA>(), static_cast<std::size_t>(K), b.data<TB>(), static_cast<std::size_t>(N),
                          &aa.zero_point, 1, bz.data(), bz.size(), acc.data(), static_cast<std::size_t>(N));
    }, "weight");
  }, "input a");
  detail::set_matmul_output<Scheme>(ctx, acc, out_shape, aa, ya, bs, bias);
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
  const int kLeftShift = detail::add_left_shift(aa.type, ba.type);
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
namespace detail {

using ops::detail::tiled_windows;
using ops::detail::window_range;
using ops::detail::WindowRange;

// Reduces tiled windows over `planes` planes: out[plane, oh, ow] = f over the window, f
// combining an accumulator Acc with values T (max: Acc = T, sum: Acc = int32), starting from
// `init`, its identity.
template <class T, class Acc, class F>
void reduce_tiled(const T* x, std::int64_t planes, const ops::WindowGeometry& g, Acc init, F f, Acc* out) {
  const std::int64_t KH = g.kernel[1], KW = g.kernel[2], W = g.in[2], OW = g.out[2];
  const std::int64_t rows = planes * g.out[1];
  if (KH == 2 && KW == 2) {  // the common case, without the line buffer's loops per row
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* a = x + r * 2 * W;
      const T* b = a + W;
      Acc* o = out + r * OW;
      for (std::int64_t ow = 0; ow < OW; ++ow)
        o[ow] = f(f(f(f(init, a[2 * ow]), a[2 * ow + 1]), b[2 * ow]), b[2 * ow + 1]);
    }
    return;
  }
  Acc* line = scratch<Acc, 7>(static_cast<std::size_t>(W));
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* src = x + r * KH * W;
    for (std::int64_t w = 0; w < W; ++w) line[w] = f(init, src[w]);
    for (std::int64_t kh = 1; kh < KH; ++kh)
      for (std::int64_t w = 0; w < W; ++w) line[w] = f(line[w], src[kh * W + w]);
    Acc* o = out + r * OW;
    for (std::int64_t ow = 0; ow < OW; ++ow) {
      Acc v = line[ow * KW];
      for (std::int64_t kw = 1; kw < KW; ++kw) v = f(v, line[ow * KW + kw]);
      o[ow] = v;
    }
  }
}

// MaxPool on int8/uint8 without the Indices output (the built-in op otherwise).
inline void max_pool_int8(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!is_activation_type(x.dtype()) || ctx.wants_output(1)) {
    ops::op_max_pool(ctx);
    return;
  }
  const ops::WindowGeometry g = ops::detail::pool_geometry(ctx, x.shape());
  const WindowRange rd = window_range(g, 0), rh = window_range(g, 1), rw = window_range(g, 2);
  Tensor y(x.dtype(), ops::conv_output_shape(x.shape(), x.dim(1), g));
  if (tiled_windows(g) && g.kernel[1] == 2 && g.kernel[2] == 2 && !is_16bit(x.dtype())) {
    // 2x2, stride 2: pairs of columns over the whole tensor (the width is even), then pairs of
    // rows, a row being one unit (the height is even).
    const auto columns = static_cast<std::size_t>(x.size() / 2);
    std::uint8_t* half = scratch<std::uint8_t, 8>(columns);
    const bool is_signed = x.dtype() == DType::int8;
    simd::max_pairs(static_cast<const std::uint8_t*>(x.raw()), columns, 1, is_signed, half);
    simd::max_pairs(half, static_cast<std::size_t>(x.dim(0) * x.dim(1) * g.out[1]), static_cast<std::size_t>(g.out[2]),
                    is_signed, static_cast<std::uint8_t*>(y.raw()));
    ctx.set_output(0, std::move(y));
    return;
  }
  if (tiled_windows(g)) {
    visit_activation(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      reduce_tiled<T, T>(x.data<T>(), x.dim(0) * x.dim(1), g, std::numeric_limits<T>::lowest(),
                         [](T a, T b) { return a < b ? b : a; }, y.data<T>());
    }, "input");
    ctx.set_output(0, std::move(y));
    return;
  }
  visit_activation(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    // Locals only in the loops: the byte stores may alias anything the compiler cannot see through.
    const std::int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size();
    const std::int64_t od_n = g.out[0], oh_n = g.out[1], ow_n = g.out[2], h_in = g.in[1], w_in = g.in[2];
    const std::int64_t dd = g.dilation[0], dh = g.dilation[1], dw = g.dilation[2];
    const std::int64_t *d_start = rd.start.data(), *d_k0 = rd.k0.data(), *d_k1 = rd.k1.data();
    const std::int64_t *h_start = rh.start.data(), *h_k0 = rh.k0.data(), *h_k1 = rh.k1.data();
    const std::int64_t *w_start = rw.start.data(), *w_k0 = rw.k0.data(), *w_k1 = rw.k1.data();
    for (std::int64_t pl = 0; pl < planes; ++pl) {
      const T* src = px + pl * in_size;
      for (std::int64_t od = 0; od < od_n; ++od)
        for (std::int64_t oh = 0; oh < oh_n; ++oh)
          for (std::int64_t ow = 0; ow < ow_n; ++ow) {
            T best = std::numeric_limits<T>::lowest();
            for (std::int64_t kd = d_k0[od]; kd < d_k1[od]; ++kd) {
              const std::int64_t d = d_start[od] + kd * dd;
              for (std::int64_t kh = h_k0[oh]; kh < h_k1[oh]; ++kh) {
                // (an offset, not a pointer: the window may start left of the plane)
                const std::int64_t row = (d * h_in + h_start[oh] + kh * dh) * w_in + w_start[ow];
                for (std::int64_t kw = w_k0[ow]; kw < w_k1[ow]; ++kw) best = std::max(best, src[row + kw * dw]);
              }
            }
            *py++ = best;
          }
    }
  }, "input");
  ctx.set_output(0, std::move(y));
}

}  // namespace detail

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
  // Numeric guard: raw sums (and zp * count) of up to 255 (65535 for 16 bits) per tap stay
  // within int32.
  const std::int64_t max_value = detail::is_16bit(x.dtype()) ? 65535 : 255;
  const std::int64_t max_window = std::numeric_limits<std::int32_t>::max() / max_value;
  if (g.kernel_size() > max_window)
    ctx.fail("int32 accumulator could overflow: a window of ", g.kernel_size(), " elements of up to ", max_value,
             " each; expected at most ", max_window, " elements per window");
  const Dims out_shape = ops::conv_output_shape(x.shape(), x.dim(1), g);
  if (out_shape.product() == 0) {  // an empty batch or maps of extent 0: no windows (count.front() below)
    ctx.set_output(0, Tensor(ya.type, out_shape));
    return;
  }
  const std::int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size(), P = g.out_size();
  const detail::WindowRange rd = detail::window_range(g, 0), rh = detail::window_range(g, 1),
                            rw = detail::window_range(g, 2);
  std::vector<std::int64_t> count(static_cast<std::size_t>(P)), inside(static_cast<std::size_t>(P));
  for (std::int64_t od = 0, o = 0; od < g.out[0]; ++od)
    for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
      for (std::int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
        inside[static_cast<std::size_t>(o)] = (rd.k1[od] - rd.k0[od]) * (rh.k1[oh] - rh.k0[oh]) * (rw.k1[ow] - rw.k0[ow]);
        count[static_cast<std::size_t>(o)] =
            include_pad ? (rd.p1[od] - rd.p0[od]) * (rh.p1[oh] - rh.p0[oh]) * (rw.p1[ow] - rw.p0[ow])
                        : inside[static_cast<std::size_t>(o)];
      }
  // Sums of (x - zero point) over the taps inside the input.
  std::int32_t* acc = detail::scratch<std::int32_t, 6>(static_cast<std::size_t>(planes * P));
  if (detail::tiled_windows(g)) {  // every window inside the image: one count
    detail::visit_activation(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      detail::reduce_tiled<T, std::int32_t>(x.data<T>(), planes, g, 0,
                                            [](std::int32_t a, std::int32_t b) { return a + b; }, acc);
      const std::int32_t zp_sum = xa.zero_point * static_cast<std::int32_t>(g.kernel_size());
      const std::int64_t n = planes * P;
      for (std::int64_t i = 0; i < n; ++i) acc[i] -= zp_sum;
    }, "input");
  } else detail::visit_activation(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const std::int64_t od_n = g.out[0], oh_n = g.out[1], ow_n = g.out[2], h_in = g.in[1], w_in = g.in[2];
    const std::int64_t dd = g.dilation[0], dh = g.dilation[1], dw = g.dilation[2];
    const std::int32_t zp = xa.zero_point;
    std::int32_t* out = acc;
    for (std::int64_t pl = 0; pl < planes; ++pl) {
      const T* src = px + pl * in_size;
      for (std::int64_t od = 0, o = 0; od < od_n; ++od)
        for (std::int64_t oh = 0; oh < oh_n; ++oh)
          for (std::int64_t ow = 0; ow < ow_n; ++ow, ++o) {
            std::int32_t sum = 0;
            for (std::int64_t kd = rd.k0[od]; kd < rd.k1[od]; ++kd) {
              const std::int64_t d = rd.start[od] + kd * dd;
              for (std::int64_t kh = rh.k0[oh]; kh < rh.k1[oh]; ++kh) {
                const std::int64_t row = (d * h_in + rh.start[oh] + kh * dh) * w_in + rw.start[ow];  // (an offset)
                for (std::int64_t kw = rw.k0[ow]; kw < rw.k1[ow]; ++kw) sum += src[row + kw * dw];
              }
            }
            *out++ = sum - zp * static_cast<std::int32_t>(inside[static_cast<std::size_t>(o)]);
          }
    }
  }, "input");
  // One multiplier per distinct window size, looked up per output position.
  const std::string layer = detail::layer_of(ctx);
  auto multiplier_for = [&](std::int64_t c) {
    return static_cast<double>(xa.scale) /
           (static_cast<double>(ya.scale) * static_cast<double>(std::max<std::int64_t>(c, 1)));
  };
  const IntRange clamp = detail::clamp_of(ctx, ya.type);
  Tensor y(ya.type, out_shape);
  if (std::all_of(count.begin(), count.end(), [&](std::int64_t c) { return c == count.front(); })) {
    auto p = RequantParams<Scheme>::make({multiplier_for(count.front())}, detail::range_of(ya.type), ya.zero_point, layer);
    p.clamp_min = clamp.qmin;
    p.clamp_max = clamp.qmax;
    detail::requantize_into(View<const std::int32_t>(acc, out_shape), p, y, layer);
    ctx.set_output(0, std::move(y));
    return;
  }
  std::vector<std::pair<std::int64_t, typename Scheme::Constants>> k;
  std::vector<std::size_t> which(static_cast<std::size_t>(P));
  for (std::int64_t o = 0; o < P; ++o) {
    const std::int64_t c = count[static_cast<std::size_t>(o)];
    auto it = std::find_if(k.begin(), k.end(), [&](const auto& e) { return e.first == c; });
    if (it == k.end()) {
      k.emplace_back(c, Scheme::make(multiplier_for(c), layer));
      it = k.end() - 1;
    }
    which[static_cast<std::size_t>(o)] = static_cast<std::size_t>(it - k.begin());
  }
  graph::visit_dtype(ya.type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int16_t> ||
                  std::is_same_v<T, std::uint16_t>) {
      T* py = y.data<T>();
      for (std::int64_t pl = 0; pl < planes; ++pl)
        for (std::int64_t o = 0; o < P; ++o)
          py[pl * P + o] = static_cast<T>(ref::requantize_value<Scheme>(acc[pl * P + o], 0,
                                                                        k[which[static_cast<std::size_t>(o)]].second,
                                                                        ya.zero_point, clamp.qmin, clamp.qmax));
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
  Tensor& y = inner.output(0);
  const IntRange clamp = detail::clamp_of(ctx, ya.type);
  if (xa.scale == ya.scale && xa.zero_point == ya.zero_point && xa.type == ya.type &&
      clamp.qmin == detail::range_of(ya.type).qmin && clamp.qmax == detail::range_of(ya.type).qmax) {
    ctx.set_output(0, std::move(y));
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

// ------------------------------------------------------------------ QuantizeLinear / DequantizeLinear
// Per tensor on float32 / int8 / uint8 through the SIMD kernels (bit-identical to the built-in
// reference ops, which take every other case and report the errors).
inline bool per_tensor_linear(const OpContext& ctx) {
  const Tensor& s = ctx.input(1);
  const Tensor* z = ctx.optional_input(2);
  if (s.dtype() != DType::float32 || s.size() != 1 || s.rank() > 1) return false;
  const float scale = s.data<float>()[0];
  if (!(scale > 0.0f) || !std::isfinite(scale)) return false;
  return !z || (z->size() == 1 && (z->dtype() == DType::int8 || z->dtype() == DType::uint8));
}

inline void op_quantize_linear_per_tensor(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor* z = ctx.optional_input(2);
  if (x.dtype() != DType::float32 || !per_tensor_linear(ctx) || ctx.node().attr_int("saturate", 1) != 1) {
    ops::op_quantize_linear(ctx);
    return;
  }
  const float scale = ctx.input(1).data<float>()[0];
  const std::int32_t zp = z ? static_cast<std::int32_t>(z->as_int64(0)) : 0;
  Tensor y(z ? z->dtype() : DType::uint8, x.shape());
  const auto n = static_cast<std::size_t>(x.size());
  if (y.dtype() == DType::int8) simd::quantize(x.data<float>(), n, scale, zp, y.data<std::int8_t>());
  else simd::quantize(x.data<float>(), n, scale, zp, y.data<std::uint8_t>());
  ctx.set_output(0, std::move(y));
}

inline void op_dequantize_linear_per_tensor(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor* z = ctx.optional_input(2);
  if ((x.dtype() != DType::int8 && x.dtype() != DType::uint8) || !per_tensor_linear(ctx) || (z && z->dtype() != x.dtype())) {
    ops::op_dequantize_linear(ctx);
    return;
  }
  const float scale = ctx.input(1).data<float>()[0];
  const std::int32_t zp = z ? static_cast<std::int32_t>(z->as_int64(0)) : 0;
  Tensor y(DType::float32, x.shape());
  const auto n = static_cast<std::size_t>(x.size());
  if (x.dtype() == DType::int8) simd::dequantize(x.data<std::int8_t>(), n, scale, zp, y.data<float>());
  else simd::dequantize(x.data<std::uint8_t>(), n, scale, zp, y.data<float>());
  ctx.set_output(0, std::move(y));
}

// ------------------------------------------------------------------ folded requantization
// The 256 outputs of an 8-bit requantization, x -> clamp(Scheme(x - in.zp, in.scale / out.scale)
// + out.zp), indexed by x's byte (exact when the scales are equal): what IntRequantize computes,
// and what IntegerMode folds into the op producing its input.
namespace detail {
template <class Scheme>
std::array<std::int32_t, 256> requantize_table(const Affine& in, const Affine& out, IntRange clamp,
                                               const std::string& layer) {
  const Rescaler<Scheme> r(in, out, clamp, layer);
  std::array<std::int32_t, 256> table{};
  for (int i = 0; i < 256; ++i)
    table[static_cast<std::size_t>(i)] = r(in.type == DType::int8 ? static_cast<std::int32_t>(static_cast<std::int8_t>(i)) : i);
  return table;
}
}  // namespace detail

// The op, then (attributes then_lut: 256 output values, then_type: 2 uint8 / 3 int8 as in
// ONNX) the table of a requantization folded into it: one pass over bytes still in cache, no
// separate node and tensor.
template <void (*Op)(OpContext&)>
void with_folded_table(OpContext& ctx) {
  Op(ctx);
  const graph::Attribute* a = ctx.node().find_attr("then_lut", graph::AttrKind::ints);
  if (!a) return;
  if (a->ints.size() != 256) ctx.fail("attribute 'then_lut' has ", a->ints.size(), " values; expected 256");
  const std::int64_t code = ctx.node().attr_int("then_type", 2);
  if (code != 2 && code != 3) ctx.fail("attribute 'then_type' is ", code, "; expected 2 (uint8) or 3 (int8)");
  std::array<std::uint8_t, 256> table{};
  for (std::size_t i = 0; i < 256; ++i) table[i] = static_cast<std::uint8_t>(a->ints[i]);
  Tensor& y = ctx.output(0);
  if (y.dtype() != DType::int8 && y.dtype() != DType::uint8)
    ctx.fail("output has element type ", graph::to_string(y.dtype()), "; expected int8 or uint8 before 'then_lut'");
  const DType type = code == 3 ? DType::int8 : DType::uint8;
  const std::int64_t n = y.size();
  const auto* src = static_cast<const std::uint8_t*>(y.raw());
  if (type == y.dtype()) {
    simd::lookup_bytes(table.data(), src, static_cast<std::uint8_t*>(y.raw()), static_cast<std::size_t>(n));
    return;
  }
  Tensor z(type, y.shape());
  simd::lookup_bytes(table.data(), src, static_cast<std::uint8_t*>(z.raw()), static_cast<std::size_t>(n));
  ctx.set_output(0, std::move(z));
}

// Registers the integer ops for Scheme (domain kDomain) into r.
template <class Scheme>
void register_integer_ops(OpRegistry& r) {
  auto add = [&](const char* op, OpFunction fn, std::vector<std::string> attributes, std::vector<std::size_t> shape_inputs) {
    attributes.push_back("then_lut");
    attributes.push_back("then_type");
    r.add(op, fn, std::move(attributes), std::move(shape_inputs), kDomain);
  };
  const std::vector<std::string> conv = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", "clamp"};
  add("IntConv", with_folded_table<op_int_conv<Scheme>>, conv, {});
  add("IntMatMul", with_folded_table<op_int_matmul<Scheme>>, {"clamp"}, {});
  r.set_prepare("IntMatMul", prepare_int_matmul<Scheme>, kDomain);
  add("IntAdd", with_folded_table<op_int_add<Scheme>>, {"clamp"}, {});
  add("IntRequantize", with_folded_table<op_int_requantize<Scheme>>, {"clamp"}, {});
  add("IntAveragePool", with_folded_table<op_int_average_pool<Scheme, false>>,
      {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides", "clamp"}, {});
  add("IntGlobalAveragePool", with_folded_table<op_int_average_pool<Scheme, true>>, {"clamp"}, {});
  add("IntMaxPool", with_folded_table<op_int_passthrough<Scheme, detail::max_pool_int8, 1>>,
      {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides", "clamp"}, {});
  add("IntFlatten", with_folded_table<op_int_passthrough<Scheme, ops::op_flatten, 1>>, {"axis", "clamp"}, {});
  add("IntReshape", with_folded_table<op_int_passthrough<Scheme, ops::op_reshape, 2>>, {"allowzero", "clamp"}, {1});
  add("IntConcat", with_folded_table<op_int_concat<Scheme>>, {"axis", "clamp"}, {});
  // The float <-> integer boundaries of the rewritten graph, through the SIMD kernels.
  r.add("QuantizeLinear", op_quantize_linear_per_tensor, {"axis", "saturate"});
  r.add("DequantizeLinear", op_dequantize_linear_per_tensor, {"axis"});
}

}  // namespace integer
}  // namespace quantkit
