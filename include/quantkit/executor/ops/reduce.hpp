// Reductions and normalizations: ReduceMean, Softmax, BatchNormalization (the unfolded form;
// executor/passes/fold_batchnorm.hpp folds it into a preceding Conv/Gemm where it can).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "quantkit/executor/ops/common.hpp"
#include "quantkit/executor/ops/float_loops.hpp"

namespace quantkit {
namespace ops {

inline void op_reduce_mean(OpContext& ctx) {
  const auto& node = ctx.node();
  const Tensor& x = ctx.input(0, DType::float32);
  const int r = x.rank();
  std::vector<std::int64_t> axes;
  if (ctx.opset() < 18) axes = node.attr_ints("axes");
  else if (ctx.has_input(1)) axes = input_ints(ctx, 1);
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  if (axes.empty() && node.attr_int("noop_with_empty_axes", 0) != 0) return ctx.set_output(0, x);
  std::vector<bool> reduce(static_cast<std::size_t>(r), axes.empty());
  for (auto a : axes) reduce[static_cast<std::size_t>(normalize_axis(ctx, a, r, "axes entry"))] = true;
  Dims kept = x.shape();  // output shape with keepdims
  std::vector<std::int64_t> out;
  std::int64_t count = 1;
  for (int i = 0; i < r; ++i) {
    if (reduce[static_cast<std::size_t>(i)]) {
      count *= x.dim(i);
      kept[i] = 1;
      if (keepdims) out.push_back(1);
    } else {
      out.push_back(x.dim(i));
    }
  }
  std::vector<double> acc(static_cast<std::size_t>(kept.product()), 0.0);
  const Dims ks = broadcast_strides(kept, x.shape());
  const float* px = x.data<float>();
  for_each_broadcast(x.shape(), ks, ks, [&](std::int64_t i, std::int64_t k, std::int64_t) {
    acc[static_cast<std::size_t>(k)] += px[i];
  });
  Tensor y(DType::float32, dims_of(ctx, out));
  float* py = y.data<float>();
  for (std::size_t i = 0; i < acc.size(); ++i)
    py[i] = count > 0 ? static_cast<float>(acc[i] / static_cast<double>(count))
                      : std::numeric_limits<float>::quiet_NaN();
  ctx.set_output(0, std::move(y));
}

// Softmax: opset < 13 normalizes over the flattened dimensions [axis, rank) (axis default 1),
// opset >= 13 over the one axis (default -1).
inline void op_softmax(OpContext& ctx) {
  const Tensor& x = ctx.input(0, DType::float32);
  const int r = x.rank();
  const bool coerce = ctx.opset() < 13;
  const int axis = normalize_axis(ctx, ctx.node().attr_int("axis", coerce ? 1 : -1), r);
  const std::int64_t outer = product(x.shape(), 0, axis);
  const std::int64_t len = coerce ? product(x.shape(), axis, r) : x.dim(axis);
  const std::int64_t inner = coerce ? 1 : product(x.shape(), axis + 1, r);
  Tensor y = Tensor::uninitialized(DType::float32, x.shape());  // every element written below
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t in = 0; in < inner; ++in) {
      const float* s = px + o * len * inner + in;
      float* d = py + o * len * inner + in;
      float m = -std::numeric_limits<float>::infinity();
      for (std::int64_t k = 0; k < len; ++k) m = std::max(m, s[k * inner]);
      double sum = 0.0;
      for (std::int64_t k = 0; k < len; ++k) {
        const float e = std::exp(s[k * inner] - m);
        d[k * inner] = e;
        sum += e;
      }
      for (std::int64_t k = 0; k < len; ++k) d[k * inner] = static_cast<float>(d[k * inner] / sum);
    }
  ctx.set_output(0, std::move(y));
}

inline void op_batch_normalization(OpContext& ctx) {
  const auto& node = ctx.node();
  if (node.attr_int("training_mode", 0) != 0)
    ctx.fail("training_mode = 1 (batch statistics) is not supported; expected inference mode");
  if (ctx.opset() < 9 && node.attr_int("spatial", 1) == 0)
    ctx.fail("spatial = 0 (per-activation statistics) is not supported; expected spatial = 1");
  const Tensor& x = ctx.input(0, DType::float32);
  if (x.rank() < 2) ctx.fail("input shape ", x.shape().to_string(), "; expected N x C x ...");
  const std::int64_t C = x.dim(1);
  const char* names[] = {"", "scale", "B", "mean", "var"};
  const float* p[5] = {};
  for (std::size_t i = 1; i <= 4; ++i) {
    const Tensor& t = ctx.input(i, DType::float32);
    if (t.size() != C)
      ctx.fail("input '", names[i], "' has shape ", t.shape().to_string(), "; expected [", C, "]");
    p[i] = t.data<float>();
  }
  const float eps = node.attr_float("epsilon", 1e-5f);
  Tensor y = Tensor::uninitialized(DType::float32, x.shape());  // every element written below
  const std::int64_t N = x.dim(0), inner = product(x.shape(), 2, x.rank());
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (std::int64_t c = 0; c < C; ++c) {
    // (x - mean) / sqrt(var + eps) * scale + B, in this order (the ONNX reference's).
    const float sd = std::sqrt(p[4][c] + eps), mean = p[3][c], scale = p[1][c], b = p[2][c];
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int64_t base = (n * C + c) * inner;
      detail::map_floats(px + base, py + base, inner, [=](float v) { return (v - mean) / sd * scale + b; });
    }
  }
  ctx.set_output(0, std::move(y));
}

inline void register_reduce_ops(OpRegistry& r) {
  r.add("ReduceMean", op_reduce_mean, {"axes", "keepdims", "noop_with_empty_axes"}, {1});
  r.add("Softmax", op_softmax, {"axis"});
  r.add("BatchNormalization", op_batch_normalization, {"epsilon", "momentum", "training_mode", "spatial", "is_test", "consumed_inputs"});
}

}  // namespace ops
}  // namespace quantkit
