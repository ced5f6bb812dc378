// Convolution: window geometry (shared with pooling), im2col + matrix_product (float:
// quantkit::simd::gemm_f32), a direct depthwise loop with the same sums, the float Conv op.
// 1-D, 2-D and 3-D; groups (depthwise), strides, pads, auto_pad, dilations.
// ConvInteger and QLinearConv (ops/quantized.hpp) use conv_core<std::int32_t>.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "quantkit/executor/ops/common.hpp"
#include "quantkit/executor/ops/float_loops.hpp"
#include "quantkit/ref/no_contract.hpp"
#include "quantkit/simd/api.hpp"

namespace quantkit {
namespace ops {

inline constexpr int max_spatial = 3;

// Sliding-window geometry of Conv/ConvInteger/QLinearConv/MaxPool/AveragePool, as ONNX
// defines it (opset <= 17). Spatial dimensions are padded to 3 with unit extents in front, so
// the kernels loop over exactly three.
struct WindowGeometry {
  int spatial = 0;  // real number of spatial dimensions (1..3)
  std::array<std::int64_t, max_spatial> in{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1},
      dilation{1, 1, 1}, pad_begin{0, 0, 0}, pad_end{0, 0, 0}, out{1, 1, 1};

  std::int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  std::int64_t in_size() const { return in[0] * in[1] * in[2]; }
  std::int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

// x_shape: N x C x spatial...; kernel: the window extents (from the weights or kernel_shape).
// ceil_mode applies to pooling only.
inline WindowGeometry window_geometry(const OpContext& ctx, const Dims& x_shape,
                                      const std::vector<std::int64_t>& kernel, bool ceil_mode = false) {
  const auto& node = ctx.node();
  const int s = x_shape.rank - 2;
  if (s < 1 || s > max_spatial)
    ctx.fail("input shape ", x_shape.to_string(), " has ", s, " spatial dimensions; expected 1 to ",
             max_spatial, " (input N x C x D1 [x D2 [x D3]])");
  if (static_cast<int>(kernel.size()) != s)
    ctx.fail("kernel has ", kernel.size(), " dimensions for ", s, " spatial dimensions of input ",
             x_shape.to_string());
  const auto strides = node.attr_ints("strides", std::vector<std::int64_t>(s, 1));
  const auto dilations = node.attr_ints("dilations", std::vector<std::int64_t>(s, 1));
  auto pads = node.attr_ints("pads", std::vector<std::int64_t>(2 * s, 0));
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (static_cast<int>(strides.size()) != s) ctx.fail("attribute 'strides' has ", strides.size(), " values; expected ", s);
  if (static_cast<int>(dilations.size()) != s) ctx.fail("attribute 'dilations' has ", dilations.size(), " values; expected ", s);
  if (static_cast<int>(pads.size()) != 2 * s) ctx.fail("attribute 'pads' has ", pads.size(), " values; expected ", 2 * s);
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    ctx.fail("attribute 'auto_pad' is '", auto_pad, "'; expected NOTSET, VALID, SAME_UPPER or SAME_LOWER");

  WindowGeometry g;
  g.spatial = s;
  const int off = max_spatial - s;
  for (int i = 0; i < s; ++i) {
    const int k = off + i;
    g.in[k] = x_shape[2 + i];
    g.kernel[k] = kernel[i];
    g.stride[k] = strides[i];
    g.dilation[k] = dilations[i];
    if (kernel[i] < 1) ctx.fail("kernel extent ", kernel[i], " in spatial dimension ", i, "; expected >= 1");
    if (strides[i] < 1) ctx.fail("stride ", strides[i], " in spatial dimension ", i, "; expected >= 1");
    if (dilations[i] < 1) ctx.fail("dilation ", dilations[i], " in spatial dimension ", i, "; expected >= 1");
    const std::int64_t eff = (kernel[i] - 1) * dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const std::int64_t out = (g.in[k] + strides[i] - 1) / strides[i];
      const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * strides[i] + eff - g.in[k]);
      const std::int64_t small = total / 2, large = total - small;
      g.pad_begin[k] = auto_pad == "SAME_UPPER" ? small : large;
      g.pad_end[k] = auto_pad == "SAME_UPPER" ? large : small;
      g.out[k] = out;
      continue;
    }
    if (auto_pad == "VALID") {
      g.pad_begin[k] = g.pad_end[k] = 0;
    } else {
      g.pad_begin[k] = pads[i];
      g.pad_end[k] = pads[s + i];
      if (pads[i] < 0 || pads[s + i] < 0) ctx.fail("negative pads ", pads[i], ", ", pads[s + i], "; expected >= 0");
    }
    const std::int64_t span = g.in[k] + g.pad_begin[k] + g.pad_end[k] - eff;
    if (span < 0)
      ctx.fail("window of extent ", eff, " (kernel ", kernel[i], ", dilation ", dilations[i],
               ") is larger than the padded input extent ", g.in[k] + g.pad_begin[k] + g.pad_end[k],
               " in spatial dimension ", i);
    std::int64_t out = (ceil_mode ? (span + strides[i] - 1) / strides[i] : span / strides[i]) + 1;
    // A window that would start in the end padding is dropped (PyTorch/ONNX ceil_mode rule).
    if (ceil_mode && (out - 1) * strides[i] >= g.in[k] + g.pad_begin[k]) --out;
    g.out[k] = out;
  }
  return g;
}

namespace detail {

// d[0, n) = s[0, n) for rows that do not overlap: short rows (small images) as 16-byte moves
// (the last one overlapping the one before), long ones as one memcpy.
template <class T>
inline void copy_row(const T* s, T* d, std::int64_t n) {
  static_assert(16 % sizeof(T) == 0, "copy_row moves 16-byte blocks of whole elements");
  constexpr std::int64_t step = static_cast<std::int64_t>(16 / sizeof(T));
  if (n >= 16 * step) {
    std::memcpy(d, s, static_cast<std::size_t>(n) * sizeof(T));
  } else if (n >= step) {
    std::int64_t i = 0;
    for (; i + step < n; i += step) std::memcpy(d + i, s + i, 16);
    std::memcpy(d + n - step, s + n - step, 16);
  } else {
    for (std::int64_t i = 0; i < n; ++i) d[i] = s[i];
  }
}

}  // namespace detail

// Column matrix (C*K rows, P columns, rows ld apart: P by default) of one image x (C x in) with
// `pad` outside the input. Each channel is copied into a plane with its padding around it (unless
// there is none: then x is that plane), so every tap's output rows are plain copies (stride 1)
// or strided gathers, with no bounds check: the geometry's outputs (window_geometry, without
// ceil_mode) keep every window inside the padded plane.
template <class T>
void im2col(const T* x, std::int64_t channels, const WindowGeometry& g, T pad, T* col, std::int64_t ld = -1) {
  const std::int64_t P = g.out_size(), in_size = g.in_size();
  if (ld < 0) ld = P;
  const std::int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const std::int64_t PD = ID + g.pad_begin[0] + g.pad_end[0], PH = IH + g.pad_begin[1] + g.pad_end[1],
                     PW = IW + g.pad_begin[2] + g.pad_end[2];
  const std::int64_t SD = g.stride[0], SH = g.stride[1], SW = g.stride[2];
  const bool padded = PD * PH * PW != in_size;
  // the padded plane: on the stack for small images; its border is written once
  T small[1024];
  std::vector<T> large;
  T* plane = small;
  if (padded) {
    const std::int64_t n = PD * PH * PW;
    if (n > static_cast<std::int64_t>(sizeof small / sizeof(T))) {
      large.assign(static_cast<std::size_t>(n), pad);
      plane = large.data();
    } else {
      std::fill(plane, plane + n, pad);
    }
  }
  // SW == 1, SH == 1 and output rows as wide as the plane's (a kernel one wide, no W padding):
  // a tap's rows of one depth are one copy
  const bool rows_as_block = SW == 1 && SH == 1 && OW == PW;
  const auto make_plane = [&](std::int64_t c) -> const T* {
    const T* src = x + c * in_size;
    if (!padded) return src;
    for (std::int64_t d = 0; d < ID; ++d)
      for (std::int64_t h = 0; h < IH; ++h)
        detail::copy_row(src + (d * IH + h) * IW,
                         plane + ((d + g.pad_begin[0]) * PH + h + g.pad_begin[1]) * PW + g.pad_begin[2], IW);
    return plane;
  };
  // Short rows (small images, stride 1 across): every channel makes the same copies, so their
  // offsets are listed once and each channel's copies are a flat loop of OW-value moves (the
  // nested tap and row loops cost more than a 16-byte copy).
  const std::int64_t K = g.kernel_size(), copies = K * OD * OH;
  if (SW == 1 && !rows_as_block && OW * static_cast<std::int64_t>(sizeof(T)) <= 64 && copies <= 256) {
    std::int64_t src_at[256], dst_at[256];
    std::int64_t i = 0;
    for (std::int64_t kd = 0, r = 0; kd < g.kernel[0]; ++kd)
      for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh)
        for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw, ++r)
          for (std::int64_t od = 0; od < OD; ++od)
            for (std::int64_t oh = 0; oh < OH; ++oh, ++i) {
              src_at[i] = ((kd * g.dilation[0] + od * SD) * PH + kh * g.dilation[1] + oh * SH) * PW + kw * g.dilation[2];
              dst_at[i] = r * ld + (od * OH + oh) * OW;
            }
    const auto copy_all = [&](auto fixed_bytes) {
      constexpr std::size_t bytes = decltype(fixed_bytes)::value;
      for (std::int64_t c = 0; c < channels; ++c) {
        const T* src = make_plane(c);
        T* dst = col + c * K * ld;
        for (std::int64_t j = 0; j < copies; ++j) {
          if constexpr (bytes == 0) {
            detail::copy_row(src + src_at[j], dst + dst_at[j], OW);
          } else {
            std::memcpy(dst + dst_at[j], src + src_at[j], bytes);
          }
        }
      }
    };
    switch (OW * static_cast<std::int64_t>(sizeof(T))) {
      case 8: return copy_all(std::integral_constant<std::size_t, 8>{});
      case 16: return copy_all(std::integral_constant<std::size_t, 16>{});
      case 32: return copy_all(std::integral_constant<std::size_t, 32>{});
      default: return copy_all(std::integral_constant<std::size_t, 0>{});
    }
  }
  std::int64_t row = 0;
  for (std::int64_t c = 0; c < channels; ++c) {
    const T* src = make_plane(c);
    for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd)
      for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh)
        for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw, ++row) {
          const T* tap = src + (kd * g.dilation[0] * PH + kh * g.dilation[1]) * PW + kw * g.dilation[2];
          T* dst = col + row * ld;
          for (std::int64_t od = 0; od < OD; ++od) {
            const T* s_d = tap + od * SD * PH * PW;
            T* d_d = dst + od * OH * OW;
            if (rows_as_block) {
              detail::copy_row(s_d, d_d, OH * OW);
              continue;
            }
            for (std::int64_t oh = 0; oh < OH; ++oh) {
              const T* s = s_d + oh * SH * PW;
              T* d = d_d + oh * OW;
              if (SW == 1) {
                detail::copy_row(s, d, OW);
              } else {
                for (std::int64_t ow = 0; ow < OW; ++ow) d[ow] = s[ow * SW];
              }
            }
          }
        }
  }
}

inline bool is_pointwise(const WindowGeometry& g) {
  for (int k = 0; k < max_spatial; ++k)
    if (g.kernel[k] != 1 || g.stride[k] != 1 || g.pad_begin[k] != 0 || g.pad_end[k] != 0)
      return false;
  return true;
}

// Checks X (N x C x ...) against W (M x C/group x k...) and returns the geometry.
inline WindowGeometry conv_geometry(const OpContext& ctx, const Dims& x, const Dims& w, std::int64_t group) {
  if (w.rank != x.rank)
    ctx.fail("weight shape ", w.to_string(), " has rank ", w.rank, "; expected the input's rank ", x.rank,
             " (input ", x.to_string(), ")");
  if (group < 1) ctx.fail("attribute 'group' is ", group, "; expected >= 1");
  if (x[1] != w[1] * group)
    ctx.fail("input has ", x[1], " channels but weight ", w.to_string(), " with group ", group,
             " expects ", w[1] * group);
  if (w[0] % group != 0)
    ctx.fail("weight has ", w[0], " output channels; expected a multiple of group ", group);
  std::vector<std::int64_t> kernel(w.value.begin() + 2, w.value.begin() + w.rank);
  const auto ks = ctx.node().attr_ints("kernel_shape", kernel);
  if (ks != kernel)
    ctx.fail("attribute 'kernel_shape' does not match the weight shape ", w.to_string());
  return window_geometry(ctx, x, kernel);
}

// out[0, n) += bias[m] (no bias: nothing), while the plane is in cache.
inline void add_bias(float* out, std::int64_t n, const float* bias, std::int64_t m) {
  if (!bias) return;
  const float bm = bias[m];
  detail::update_floats(out, n, [bm](float v) { return v + bm; });
}

// Small images (float): the columns of several images side by side, one product per group for
// all of them (at least kConvColumns columns where the batch has them, the column matrix within
// kConvColumnFloats unless one image needs more), then each image's rows copied into place.
// Every output is the same sum as image by image (gemm_f32's sums do not depend on the other
// columns); a product of 8 x 8 images alone is mostly per-call work.
constexpr std::int64_t kConvColumns = 1024;
constexpr std::int64_t kConvColumnFloats = std::int64_t{1} << 22;  // 16 MB

// A row stride (floats) for matrices of `width` columns whose rows are written or read a few
// values at a time: a whole number of 64-byte lines, and an odd number of them, so consecutive
// rows fall in different cache sets. Rows 4 KiB apart (1024 columns) all map to one L1 set,
// where im2col's 144 rows of an image compete for its 12 ways (a few % of that convolution).
inline std::int64_t unaliased_stride(std::int64_t width) {
  std::int64_t lines = (width + 15) / 16;
  if (lines % 2 == 0) ++lines;
  return lines * 16;
}

inline void conv_images_together(const float* x, const Dims& xs, const float* w, const Dims& ws, std::int64_t group,
                                 const WindowGeometry& g, float pad, float* y, const float* bias) {
  const std::int64_t N = xs[0], C = xs[1], M = ws[0];
  const std::int64_t Cg = C / group, Mg = M / group, K = g.kernel_size(), P = g.out_size();
  const std::int64_t in_size = g.in_size(), KK = Cg * K;
  const bool pointwise = is_pointwise(g);
  const std::int64_t chunk =
      std::max<std::int64_t>(1, std::min({N, (kConvColumns + P - 1) / P, KK > 0 ? kConvColumnFloats / (KK * P) : N}));
  const std::int64_t ld = unaliased_stride(chunk * P);  // of the columns and the product
  // not zero-filled: every value the product reads is written first (columns [0, W) of each row)
  const std::unique_ptr<float[]> col(new float[static_cast<std::size_t>(KK * ld)]);
  const std::unique_ptr<float[]> out(new float[static_cast<std::size_t>(Mg * ld)]);
  for (std::int64_t n0 = 0; n0 < N; n0 += chunk) {
    const std::int64_t nb = std::min(chunk, N - n0), W = nb * P;
    for (std::int64_t gi = 0; gi < group; ++gi) {
      for (std::int64_t j = 0; j < nb && KK > 0; ++j) {  // (no input channels: no columns)
        const float* xg = x + ((n0 + j) * C + gi * Cg) * in_size;
        if (pointwise) {  // the input planes are the columns (in_size == P)
          for (std::int64_t c = 0; c < Cg; ++c)
            detail::copy_row(xg + c * in_size, col.get() + c * ld + j * P, P);
        } else {
          im2col(xg, Cg, g, pad, col.get() + j * P, ld);
        }
      }
      simd::gemm_f32(static_cast<std::size_t>(Mg), static_cast<std::size_t>(W), static_cast<std::size_t>(KK),
                     w + gi * Mg * KK, static_cast<std::size_t>(KK), false, col.get(), static_cast<std::size_t>(ld),
                     false, out.get(), static_cast<std::size_t>(ld));
      for (std::int64_t j = 0; j < nb; ++j)
        for (std::int64_t m = 0; m < Mg; ++m) {
          const float* src = out.get() + m * ld + j * P;
          float* dst = y + ((n0 + j) * M + gi * Mg + m) * P;
          if (bias) {
            const float bm = bias[gi * Mg + m];
            detail::map_floats(src, dst, P, [bm](float v) { return v + bm; });
          } else {
            detail::copy_row(src, dst, P);
          }
        }
    }
  }
}

// Depthwise float Conv (one input channel per group, 1-D or 2-D) without im2col and 1-row
// products: each output sums w * x over the window's taps in order from +0, as gemm_f32 does
// over the column matrix. The input plane is copied into a zero border once; a padding tap's
// w * 0 is a signed zero, which leaves any sum unchanged (the caller makes sure no weight is inf
// or NaN, where w * 0 is NaN). Products are rounded before the sum (no FMA contraction).
// Stride 1 across: simd::depthwise_rows_f32 (Highway, the CPU's widest vectors) over the
// padded width, all output rows in one call when the rows have stride 1 too (the columns past
// the output width are computed and dropped); other strides: the scalar loop.
inline void conv_depthwise(const float* x, const Dims& xs, const float* w, const Dims& ws, std::int64_t group,
                           const WindowGeometry& g, float* y, const float* bias) {
  const std::int64_t N = xs[0], M = ws[0], Mg = M / group, P = g.out_size(), in_size = g.in_size();
  const std::int64_t OH = g.out[1], OW = g.out[2], IH = g.in[1], IW = g.in[2], KH = g.kernel[1], KW = g.kernel[2];
  const std::int64_t SH = g.stride[1], SW = g.stride[2], DH = g.dilation[1], DW = g.dilation[2];
  const std::int64_t PW = IW + g.pad_begin[2] + g.pad_end[2], PH = IH + g.pad_begin[1] + g.pad_end[1];
  const std::int64_t taps = KH * KW;
  if (N == 0 || P == 0) return;
  std::vector<float> padded(static_cast<std::size_t>(PH * PW), 0.0f);  // the border stays zero
  std::vector<std::int64_t> offset(static_cast<std::size_t>(taps));
  for (std::int64_t kh = 0; kh < KH; ++kh)
    for (std::int64_t kw = 0; kw < KW; ++kw) offset[static_cast<std::size_t>(kh * KW + kw)] = kh * DH * PW + kw * DW;
  // stride 1 both ways: output row oh, column ow at oh * PW + ow of one span
  const std::int64_t span = SH == 1 ? (OH - 1) * PW + OW : OW;
  std::vector<float> sums(SW == 1 && SH == 1 && PW != OW ? static_cast<std::size_t>(span) : 0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < group; ++c) {
      const float* src = x + (n * group + c) * in_size;
      for (std::int64_t ih = 0; ih < IH; ++ih)
        detail::copy_row(src + ih * IW, padded.data() + (ih + g.pad_begin[1]) * PW + g.pad_begin[2], IW);
      for (std::int64_t m = c * Mg; m < (c + 1) * Mg; ++m) {
        const float* wm = w + m * taps;
        float* out = y + (n * M + m) * P;
        if (SW == 1 && SH == 1) {
          float* sum = PW == OW ? out : sums.data();
          simd::depthwise_rows_f32(padded.data(), static_cast<std::size_t>(span), wm, offset.data(),
                                   static_cast<std::size_t>(taps), sum);
          if (sum != out) {
            for (std::int64_t oh = 0; oh < OH; ++oh) detail::copy_row(sum + oh * PW, out + oh * OW, OW);
          }
          add_bias(out, P, bias, m);
          continue;
        }
        for (std::int64_t oh = 0; oh < OH; ++oh) {
          const float* rows = padded.data() + oh * SH * PW;  // the window's first row
          float* o = out + oh * OW;
          if (SW == 1) {
            simd::depthwise_rows_f32(rows, static_cast<std::size_t>(OW), wm, offset.data(),
                                     static_cast<std::size_t>(taps), o);
            continue;
          }
          for (std::int64_t ow = 0; ow < OW; ++ow) {
            float acc = 0.0f;
            for (std::int64_t t = 0; t < taps; ++t)
              acc = acc + quantkit::detail::no_contract(wm[t] * rows[offset[static_cast<std::size_t>(t)] + ow * SW]);
            o[ow] = acc;
          }
        }
        add_bias(out, P, bias, m);
      }
    }
}

inline bool all_finite(const float* v, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) return false;
  return true;
}

// y (N x M x out) = conv(x (N x C x in), w (M x C/group x kernel)) with `pad` outside x, then
// + bias[m] when given (float: each plane while it is in cache; the same sums as a pass after).
// T is float (reference path) or std::int32_t (exact integer path, no bias).
template <class T>
void conv_core(const T* x, const Dims& xs, const T* w, const Dims& ws, std::int64_t group,
               const WindowGeometry& g, T pad, T* y, const float* bias = nullptr) {
  const std::int64_t N = xs[0], C = xs[1], M = ws[0];
  const std::int64_t Cg = C / group, Mg = M / group, K = g.kernel_size(), P = g.out_size();
  const std::int64_t in_size = g.in_size();
  const bool pointwise = is_pointwise(g);
  if (N == 0 || P == 0) return;  // no outputs (an extent of 0 under SAME padding: out = 0)
  if constexpr (std::is_same<T, float>::value) {
    if (Cg == 1 && g.spatial <= 2 && pad == 0.0f && all_finite(w, M * K))
      return conv_depthwise(x, xs, w, ws, group, g, y, bias);
    if (N > 1 && P < kConvColumns) return conv_images_together(x, xs, w, ws, group, g, pad, y, bias);
  }
  std::vector<T> col(pointwise ? 0 : static_cast<std::size_t>(Cg * K * P));
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t gi = 0; gi < group; ++gi) {
      const T* xg = x + (n * C + gi * Cg) * in_size;
      const T* cp = xg;
      if (!pointwise) {
        im2col(xg, Cg, g, pad, col.data());
        cp = col.data();
      }
      matrix_product<T>(Mg, P, Cg * K, w + gi * Mg * Cg * K, false, cp, false, y + (n * M + gi * Mg) * P);
      if constexpr (std::is_same<T, float>::value)
        for (std::int64_t m = gi * Mg; m < (gi + 1) * Mg; ++m) add_bias(y + (n * M + m) * P, P, bias, m);
    }
  }
}

inline Dims conv_output_shape(const Dims& x, std::int64_t m, const WindowGeometry& g) {
  Dims out = x;
  out[1] = m;
  for (int i = 0; i < g.spatial; ++i) out[2 + i] = g.out[max_spatial - g.spatial + i];
  return out;
}

inline void op_conv(OpContext& ctx) {
  const Tensor& x = ctx.input(0, DType::float32);
  const Tensor& w = ctx.input(1, DType::float32);
  const std::int64_t group = ctx.node().attr_int("group", 1);
  const WindowGeometry g = conv_geometry(ctx, x.shape(), w.shape(), group);
  const std::int64_t M = w.dim(0);
  const float* bias = nullptr;
  if (const Tensor* b = ctx.optional_input(2)) {
    if (b->dtype() != DType::float32 || b->size() != M)
      ctx.fail("bias is ", graph::to_string(b->dtype()), " ", b->shape().to_string(), "; expected float32 [", M, "]");
    bias = b->data<float>();
  }
  // conv_core assigns every output (a product per group), so no zero fill
  Tensor y = Tensor::uninitialized(DType::float32, conv_output_shape(x.shape(), M, g));
  conv_core<float>(x.data<float>(), x.shape(), w.data<float>(), w.shape(), group, g, 0.0f,
                   y.data<float>(), bias);
  ctx.set_output(0, std::move(y));
}

inline void register_conv_ops(OpRegistry& r) { r.add("Conv", op_conv, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}); }

}  // namespace ops
}  // namespace quantkit
