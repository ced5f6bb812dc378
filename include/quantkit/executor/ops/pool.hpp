// Pooling: MaxPool (with optional Indices), AveragePool (count_include_pad), 1-D to 3-D with
// strides, pads, auto_pad, dilations and ceil_mode; GlobalAveragePool, GlobalMaxPool.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
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

// Calls f(out_offset, window...) for each output position of each (n, c) plane: the callback
// receives the ranges of the window in each of the 3 (padded) dimensions.
template <class F>
void for_each_window(const WindowGeometry& g, F&& f) {
  std::int64_t o = 0;
  for (std::int64_t od = 0; od < g.out[0]; ++od)
    for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
      for (std::int64_t ow = 0; ow < g.out[2]; ++ow, ++o)
        f(o, std::array<std::int64_t, 3>{od * g.stride[0] - g.pad_begin[0],
                                         oh * g.stride[1] - g.pad_begin[1],
                                         ow * g.stride[2] - g.pad_begin[2]});
}

}  // namespace detail

inline void op_max_pool(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const WindowGeometry g = detail::pool_geometry(ctx, x.shape());
  const std::int64_t storage_order = ctx.node().attr_int("storage_order", 0);
  const Dims out_shape = conv_output_shape(x.shape(), x.dim(1), g);
  dispatch<float, std::int8_t, std::uint8_t>(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), out_shape);
    const bool want_idx = ctx.wants_output(1);
    Tensor idx(DType::int64, want_idx ? out_shape : Dims{});
    const T* px = x.data<T>();
    T* py = y.data<T>();
    std::int64_t* pi = want_idx ? idx.data<std::int64_t>() : nullptr;
    const std::int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size(), P = g.out_size();
    for (std::int64_t pl = 0; pl < planes; ++pl) {
      const T* src = px + pl * in_size;
      detail::for_each_window(g, [&](std::int64_t o, const std::array<std::int64_t, 3>& start) {
        T best = std::numeric_limits<T>::lowest();
        if constexpr (std::is_floating_point_v<T>) best = -std::numeric_limits<T>::infinity();
        std::int64_t best_i = -1;
        for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd) {
          const std::int64_t d = start[0] + kd * g.dilation[0];
          if (d < 0 || d >= g.in[0]) continue;
          for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh) {
            const std::int64_t h = start[1] + kh * g.dilation[1];
            if (h < 0 || h >= g.in[1]) continue;
            for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw) {
              const std::int64_t w = start[2] + kw * g.dilation[2];
              if (w < 0 || w >= g.in[2]) continue;
              const T v = src[(d * g.in[1] + h) * g.in[2] + w];
              if (best_i < 0 || v > best) {
                best = v;
                best_i = storage_order == 0 ? (d * g.in[1] + h) * g.in[2] + w
                                            : (w * g.in[1] + h) * g.in[0] + d;
              }
            }
          }
        }
        py[pl * P + o] = best;
        if (pi) pi[pl * P + o] = pl * in_size + best_i;
      });
    }
    ctx.set_output(0, std::move(y));
    if (want_idx) ctx.set_output(1, std::move(idx));
  });
}

inline void op_average_pool(OpContext& ctx) {
  const Tensor& x = ctx.input(0, DType::float32);
  const WindowGeometry g = detail::pool_geometry(ctx, x.shape());
  const bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  Tensor y(DType::float32, conv_output_shape(x.shape(), x.dim(1), g));
  const float* px = x.data<float>();
  float* py = y.data<float>();
  const std::int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size(), P = g.out_size();
  for (std::int64_t pl = 0; pl < planes; ++pl) {
    const float* src = px + pl * in_size;
    detail::for_each_window(g, [&](std::int64_t o, const std::array<std::int64_t, 3>& start) {
      double sum = 0.0;
      std::int64_t inside = 0, padded = 0;
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
            ++padded;  // inside the padded input (ceil_mode overhang excluded)
            if (din && hin && w >= 0 && w < g.in[2]) {
              sum += src[(d * g.in[1] + h) * g.in[2] + w];
              ++inside;
            }
          }
        }
      }
      const std::int64_t count = include_pad ? padded : inside;
      py[pl * P + o] = count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
    });
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
  Tensor y(DType::float32, os);
  const std::int64_t planes = x.dim(0) * x.dim(1), n = product(x.shape(), 2, x.rank());
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
