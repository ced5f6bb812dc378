// Pooling: MaxPool (with optional Indices), AveragePool (count_include_pad), 1-D to 3-D with
// strides, pads, auto_pad, dilations and ceil_mode; GlobalAveragePool, GlobalMaxPool.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "quantkit/executor/ops/common.hpp"
#include "quantkit/executor/ops/conv.hpp"

namespace quantkit {
namespace ops {

namespace detail {

inline WindowGeometry pool_geometry(const OpContext& ctx, const Dims& x) {
  const auto& node = ctx.node();
  if (!node.has_attr("kernel_shape")) ctx.fail("attribute 'kernel_shape' is missing; expected one");
  const auto kernel = node.attr_ints("kernel_shape");
  return window_geometry(ctx, x, kernel, node.attr_int("ceil_mode", 0) != 0);
}

// Along one (padded-to-3) dimension, for every output index: the first window position, and
// the kernel taps [k0, k1) that land inside the input (and [p0, p1) inside the padded input,
// the end padding included, ceil-mode overhang excluded).
struct WindowRange {
  std::vector<std::int64_t> start, k0, k1, p0, p1;
};
inline WindowRange window_range(const WindowGeometry& g, int d) {
  WindowRange r;
  const std::int64_t in = g.in[d], dil = g.dilation[d], K = g.kernel[d];
  auto first_tap = [&](std::int64_t s, std::int64_t lo) {  // smallest k with s + k dil >= lo
    return s >= lo ? 0 : std::min(K, (lo - s + dil - 1) / dil);
  };
  auto end_tap = [&](std::int64_t s, std::int64_t hi) {  // one past the largest k with s + k dil < hi
    return s >= hi ? 0 : std::min(K, (hi - 1 - s) / dil + 1);
  };
  for (std::int64_t o = 0; o < g.out[d]; ++o) {
    const std::int64_t s = o * g.stride[d] - g.pad_begin[d];
    r.start.push_back(s);
    r.k0.push_back(first_tap(s, 0));
    r.k1.push_back(std::max(r.k0.back(), end_tap(s, in)));
    r.p0.push_back(first_tap(s, -g.pad_begin[d]));
    r.p1.push_back(std::max(r.p0.back(), end_tap(s, in + g.pad_end[d])));
  }
  return r;
}

// Taps of window (od, oh, ow) inside the input, or with include_pad inside the padded input
// (the end padding included, ceil-mode overhang excluded): AveragePool's divisor.
inline std::int64_t window_count(const WindowRange& rd, const WindowRange& rh, const WindowRange& rw, std::int64_t od,
                                 std::int64_t oh, std::int64_t ow, bool include_pad) {
  if (include_pad) return (rd.p1[od] - rd.p0[od]) * (rh.p1[oh] - rh.p0[oh]) * (rw.p1[ow] - rw.p0[ow]);
  return (rd.k1[od] - rd.k0[od]) * (rh.k1[oh] - rh.k0[oh]) * (rw.k1[ow] - rw.k0[ow]);
}

// Non-overlapping 2-D windows: stride = kernel, no padding or dilation, the image a multiple
// of the kernel (MaxPool/AveragePool 2x2 stride 2 on even sizes).
inline bool tiled_windows(const WindowGeometry& g) {
  if (g.in[0] != 1 || g.kernel[0] != 1) return false;
  for (int d = 1; d < 3; ++d)
    if (g.stride[d] != g.kernel[d] || g.dilation[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0 ||
        g.in[d] % g.kernel[d] != 0 || g.out[d] != g.in[d] / g.kernel[d])
      return false;
  return true;
}

// The maximum as MaxPool defines it here: the window's first tap (in d, h, w order), then any
// strictly greater one; so a NaN wins only as the first tap, and equal values keep the first.
template <class T>
T max_step(T best, T v) {
  return v > best ? v : best;
}

// 2x2 windows, stride 2, no padding: each output from its two rows (the common CNN pooling,
// without the general loop's per-window bookkeeping).
template <class T>
void max_pool_2x2(const T* x, std::int64_t rows, std::int64_t in_w, T* y) {
  const std::int64_t OW = in_w / 2;
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* a = x + r * 2 * in_w;
    const T* b = a + in_w;
    T* o = y + r * OW;
    for (std::int64_t ow = 0; ow < OW; ++ow)
      o[ow] = max_step(max_step(max_step(a[2 * ow], a[2 * ow + 1]), b[2 * ow]), b[2 * ow + 1]);
  }
}

}  // namespace detail

inline void op_max_pool(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const WindowGeometry g = detail::pool_geometry(ctx, x.shape());
  const std::int64_t storage_order = ctx.node().attr_int("storage_order", 0);
  const Dims out_shape = conv_output_shape(x.shape(), x.dim(1), g);
  dispatch<float, std::int8_t, std::uint8_t>(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = Tensor::uninitialized(x.dtype(), out_shape);  // every element written below
    const bool want_idx = ctx.wants_output(1);
    Tensor idx(DType::int64, want_idx ? out_shape : Dims{});
    const T* px = x.data<T>();
    T* py = y.data<T>();
    std::int64_t* pi = want_idx ? idx.data<std::int64_t>() : nullptr;
    const std::int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size();
    if (!pi && detail::tiled_windows(g) && g.kernel[1] == 2 && g.kernel[2] == 2) {
      detail::max_pool_2x2(px, planes * g.out[1], g.in[2], py);
    } else {
      const detail::WindowRange rd = detail::window_range(g, 0), rh = detail::window_range(g, 1),
                                rw = detail::window_range(g, 2);
      const std::int64_t H = g.in[1], W = g.in[2], dd = g.dilation[0], dh = g.dilation[1], dw = g.dilation[2];
      std::int64_t o = 0;
      for (std::int64_t pl = 0; pl < planes; ++pl) {
        const T* src = px + pl * in_size;
        for (std::int64_t od = 0; od < g.out[0]; ++od)
          for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
            for (std::int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
              // an empty window (all padding) gives the lowest value and index -1 in the plane
              T best = std::numeric_limits<T>::lowest();
              if constexpr (std::is_floating_point_v<T>) best = -std::numeric_limits<T>::infinity();
              std::int64_t best_at = -1;  // (d * H + h) * W + w of the best tap
              for (std::int64_t kd = rd.k0[od]; kd < rd.k1[od]; ++kd) {
                const std::int64_t d = rd.start[od] + kd * dd;
                for (std::int64_t kh = rh.k0[oh]; kh < rh.k1[oh]; ++kh) {
                  const std::int64_t row = (d * H + rh.start[oh] + kh * dh) * W + rw.start[ow];
                  for (std::int64_t kw = rw.k0[ow]; kw < rw.k1[ow]; ++kw) {
                    const T v = src[row + kw * dw];
                    if (best_at < 0 || v > best) {
                      best = v;
                      best_at = row + kw * dw;
                    }
                  }
                }
              }
              py[o] = best;
              if (pi) {
                std::int64_t at = best_at;
                if (storage_order != 0 && at >= 0) {  // column-major position of (d, h, w)
                  const std::int64_t d = at / (H * W), h = at / W % H, w = at % W;
                  at = (w * H + h) * g.in[0] + d;
                }
                pi[o] = pl * in_size + at;
              }
            }
      }
    }
    ctx.set_output(0, std::move(y));
    if (want_idx) ctx.set_output(1, std::move(idx));
  });
}

inline void op_average_pool(OpContext& ctx) {
  const Tensor& x = ctx.input(0, DType::float32);
  const WindowGeometry g = detail::pool_geometry(ctx, x.shape());
  const bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  Tensor y = Tensor::uninitialized(DType::float32, conv_output_shape(x.shape(), x.dim(1), g));  // all written
  const float* px = x.data<float>();
  float* py = y.data<float>();
  const std::int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size();
  // Sums in double, taps in d, h, w order; the count is the taps inside the input, or inside
  // the padded input with count_include_pad (ceil-mode overhang excluded either way).
  if (detail::tiled_windows(g) && g.kernel[1] == 2 && g.kernel[2] == 2) {
    const std::int64_t rows = planes * g.out[1], W = g.in[2], OW = g.out[2];
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* a = px + r * 2 * W;
      const float* b = a + W;
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        double sum = 0.0;
        sum += a[2 * ow];
        sum += a[2 * ow + 1];
        sum += b[2 * ow];
        sum += b[2 * ow + 1];
        py[r * OW + ow] = static_cast<float>(sum / 4.0);
      }
    }
    ctx.set_output(0, std::move(y));
    return;
  }
  const detail::WindowRange rd = detail::window_range(g, 0), rh = detail::window_range(g, 1),
                            rw = detail::window_range(g, 2);
  const std::int64_t H = g.in[1], W = g.in[2], dd = g.dilation[0], dh = g.dilation[1], dw = g.dilation[2];
  std::int64_t o = 0;
  for (std::int64_t pl = 0; pl < planes; ++pl) {
    const float* src = px + pl * in_size;
    for (std::int64_t od = 0; od < g.out[0]; ++od)
      for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
        for (std::int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          double sum = 0.0;
          for (std::int64_t kd = rd.k0[od]; kd < rd.k1[od]; ++kd) {
            const std::int64_t d = rd.start[od] + kd * dd;
            for (std::int64_t kh = rh.k0[oh]; kh < rh.k1[oh]; ++kh) {
              // (an offset, not a pointer: the window may start left of the plane)
              const std::int64_t row = (d * H + rh.start[oh] + kh * dh) * W + rw.start[ow];
              for (std::int64_t kw = rw.k0[ow]; kw < rw.k1[ow]; ++kw) sum += src[row + kw * dw];
            }
          }
          const std::int64_t count = detail::window_count(rd, rh, rw, od, oh, ow, include_pad);
          py[o] = count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
        }
  }
  ctx.set_output(0, std::move(y));
}

namespace detail {
template <bool Max>
void global_pool(OpContext& ctx) {
  const Tensor& x = ctx.input(0, DType::float32);
  if (x.rank() < 3) ctx.fail("input shape ", x.shape().to_string(), "; expected N x C x D1 ...");
  Dims os = x.shape();
  for (int i = 2; i < os.rank; ++i) os[i] = 1;
  const std::int64_t planes = x.dim(0) * x.dim(1), n = product(x.shape(), 2, x.rank());
  // the mean (max) of no values: ONNX Runtime refuses it too ("Only N can be zero")
  if (n == 0 && planes > 0)
    ctx.fail("input shape ", x.shape().to_string(), " has a spatial extent of 0; expected every spatial extent >= 1 ",
             "(a global pool of no values is undefined)");
  Tensor y = Tensor::uninitialized(DType::float32, os);  // one value per plane, below
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* s = px + p * n;
    if (Max) {
      float m = -std::numeric_limits<float>::infinity();
      for (std::int64_t i = 0; i < n; ++i) m = std::max(m, s[i]);
      py[p] = m;
    } else {
      double sum = 0.0;
      for (std::int64_t i = 0; i < n; ++i) sum += s[i];
      py[p] = static_cast<float>(sum / static_cast<double>(n));
    }
  }
  ctx.set_output(0, std::move(y));
}
}  // namespace detail

inline void op_global_average_pool(OpContext& ctx) { detail::global_pool<false>(ctx); }
inline void op_global_max_pool(OpContext& ctx) { detail::global_pool<true>(ctx); }

inline void register_pool_ops(OpRegistry& r) {
  r.add("MaxPool", op_max_pool, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
  r.add("AveragePool", op_average_pool, {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"});
  r.add("GlobalAveragePool", op_global_average_pool, {});
  r.add("GlobalMaxPool", op_global_max_pool, {});
}

}  // namespace ops
}  // namespace quantkit
