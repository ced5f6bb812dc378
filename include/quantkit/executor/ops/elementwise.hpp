// Elementwise ops: Add Sub Mul Div (numpy broadcasting), Relu Clip LeakyRelu Sigmoid Tanh,
// Identity Dropout (inference: the identity, mask all true).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "quantkit/executor/ops/common.hpp"
#include "quantkit/executor/ops/float_loops.hpp"

namespace quantkit {
namespace ops {

namespace detail {

enum class BinaryKind { add, sub, mul, div };

template <BinaryKind K, class T>
T binary_apply(const OpContext& ctx, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (K) {
      case BinaryKind::add: return a + b;
      case BinaryKind::sub: return a - b;
      case BinaryKind::mul: return a * b;
      case BinaryKind::div: return a / b;
    }
  } else {
    // Integers wrap like numpy's fixed-width arithmetic; division truncates toward zero.
    using W = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
    const W x = static_cast<W>(a), y = static_cast<W>(b);
    switch (K) {
      case BinaryKind::add: return static_cast<T>(static_cast<std::uint64_t>(x) + static_cast<std::uint64_t>(y));
      case BinaryKind::sub: return static_cast<T>(static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y));
      case BinaryKind::mul: return static_cast<T>(static_cast<std::uint64_t>(x) * static_cast<std::uint64_t>(y));
      case BinaryKind::div:
        if (y == 0) ctx.fail("integer division by zero");
        if constexpr (std::is_signed_v<T>)
          if (x == std::numeric_limits<W>::min() && y == -1) return static_cast<T>(x);
        return static_cast<T>(x / y);
    }
  }
  return T{};
}

template <BinaryKind K>
void binary_op(OpContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype())
    ctx.fail("inputs have element types ", graph::to_string(a.dtype()), " and ",
             graph::to_string(b.dtype()), "; expected the same type");
  const Dims out = broadcast_shapes(ctx, a.shape(), b.shape());
  dispatch<float, std::int8_t, std::uint8_t, std::int32_t, std::int64_t>(ctx, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = Tensor::uninitialized(graph::dtype_of_v<T>, out);  // every element written below
    T* py = y.data<T>();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    if (a.shape() == b.shape()) {
      if constexpr (std::is_same<T, float>::value)
        zip_floats(pa, pb, py, y.size(), [&](float u, float v) { return binary_apply<K, float>(ctx, u, v); });
      else
        for (std::int64_t i = 0, n = y.size(); i < n; ++i) py[i] = binary_apply<K, T>(ctx, pa[i], pb[i]);
    } else {
      for_each_broadcast(out, broadcast_strides(a.shape(), out), broadcast_strides(b.shape(), out),
                         [&](std::int64_t o, std::int64_t ia, std::int64_t ib) {
                           py[o] = binary_apply<K, T>(ctx, pa[ia], pb[ib]);
                         });
    }
    ctx.set_output(0, std::move(y));
  });
}

// Applies f elementwise to a float input.
template <class F>
void unary_float(OpContext& ctx, F&& f) {
  const Tensor& x = ctx.input(0, DType::float32);
  Tensor y = Tensor::uninitialized(DType::float32, x.shape());  // every element written below
  map_floats(x.data<float>(), y.data<float>(), x.size(), f);
  ctx.set_output(0, std::move(y));
}

}  // namespace detail

inline void op_add(OpContext& ctx) { detail::binary_op<detail::BinaryKind::add>(ctx); }
inline void op_sub(OpContext& ctx) { detail::binary_op<detail::BinaryKind::sub>(ctx); }
inline void op_mul(OpContext& ctx) { detail::binary_op<detail::BinaryKind::mul>(ctx); }
inline void op_div(OpContext& ctx) { detail::binary_op<detail::BinaryKind::div>(ctx); }

inline void op_relu(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<float, std::int8_t, std::int32_t, std::int64_t>(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = Tensor::uninitialized(x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* py = y.data<T>();
    if constexpr (std::is_same<T, float>::value) {
      // v < 0 ? +0 : v, as ONNX Runtime and PyTorch compute it: NaN and -0 pass through.
      // Without a branch per element (GCC -O2 branches on the sign: a mispredict for every
      // other activation, 39 % of a float CNN's time): negative values' bits are masked off.
      detail::map_floats(px, py, x.size(), [](float v) {
        std::uint32_t b;
        std::memcpy(&b, &v, 4);
        b &= 0u - static_cast<std::uint32_t>(!(v < 0.0f));
        std::memcpy(&v, &b, 4);
        return v;
      });
    } else {
      for (std::int64_t i = 0, n = x.size(); i < n; ++i) py[i] = px[i] < T(0) ? T(0) : px[i];
    }
    ctx.set_output(0, std::move(y));
  });
}

inline void op_leaky_relu(OpContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 0.01f);
  detail::unary_float(ctx, [alpha](float v) { return v >= 0.0f ? v : v * alpha; });
}

inline void op_sigmoid(OpContext& ctx) {
  detail::unary_float(ctx, [](float v) {
    if (v >= 0.0f) return 1.0f / (1.0f + std::exp(-v));
    const float e = std::exp(v);
    return e / (1.0f + e);
  });
}

inline void op_tanh(OpContext& ctx) {
  detail::unary_float(ctx, [](float v) { return std::tanh(v); });
}

// Clip: opset < 11 takes min/max attributes, later opsets optional scalar inputs.
inline void op_clip(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<float, std::int8_t, std::uint8_t, std::int32_t, std::int64_t>(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if (ctx.opset() < 11) {
      if constexpr (std::is_same_v<T, float>) {
        lo = ctx.node().attr_float("min", lo);
        hi = ctx.node().attr_float("max", hi);
      }
    } else {
      for (std::size_t i = 1; i <= 2; ++i) {
        const Tensor* b = ctx.optional_input(i);
        if (!b) continue;
        if (b->dtype() != x.dtype() || b->size() != 1)
          ctx.fail("input ", i, " ('", ctx.input_name(i), "') is ", graph::to_string(b->dtype()), " ",
                   b->shape().to_string(), "; expected a scalar of the input's type");
        (i == 1 ? lo : hi) = b->data<T>()[0];
      }
    }
    Tensor y = Tensor::uninitialized(x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const auto clip = [lo, hi](T v) {
      if (v < lo) v = lo;  // NaN passes through (comparisons are false), like numpy.clip
      if (v > hi) v = hi;
      return v;
    };
    if constexpr (std::is_same<T, float>::value) {
      detail::map_floats(px, py, x.size(), clip);
    } else {
      for (std::int64_t i = 0, n = x.size(); i < n; ++i) py[i] = clip(px[i]);
    }
    ctx.set_output(0, std::move(y));
  });
}

inline void op_identity(OpContext& ctx) { ctx.set_output(0, ctx.input(0)); }

// Dropout at inference: output = input; the optional mask is all true (bool from opset 10,
// the input's type before).
inline void op_dropout(OpContext& ctx) {
  const auto& node = ctx.node();
  if (ctx.opset() < 7 && node.attr_int("is_test", 0) == 0 && node.has_output(1))
    ctx.fail("training-mode Dropout (is_test = 0) is random; expected is_test = 1");
  if (const Tensor* training = ctx.optional_input(2)) {
    if (training->size() != 1 || training->dtype() != DType::boolean)
      ctx.fail("training_mode input is ", graph::to_string(training->dtype()), " ",
               training->shape().to_string(), "; expected a bool scalar");
    const Tensor* ratio = ctx.optional_input(1);
    const double r = ratio && ratio->size() == 1 && ratio->dtype() == DType::float32 ? ratio->as_double(0) : 0.5;
    if (training->data<bool>()[0] && r != 0.0)  // ratio 0 drops nothing: the identity
      ctx.fail("training_mode = true with ratio ", r, " (random dropout) is not supported; expected "
               "inference mode or ratio 0");
  }
  const Tensor& x = ctx.input(0);
  ctx.set_output(0, x);
  if (ctx.wants_output(1)) {
    const DType mt = ctx.opset() >= 10 ? DType::boolean : x.dtype();
    Tensor mask(mt, x.shape());
    graph::visit_dtype(mt, [&](auto tag) {
      using T = decltype(tag);
      T* p = mask.data<T>();
      for (std::int64_t i = 0, n = mask.size(); i < n; ++i) p[i] = static_cast<T>(1);
    });
    ctx.set_output(1, std::move(mask));
  }
}

inline void register_elementwise_ops(OpRegistry& r) {
  r.add("Add", op_add, {"broadcast", "consumed_inputs"});
  r.add("Sub", op_sub, {"broadcast", "consumed_inputs"});
  r.add("Mul", op_mul, {"broadcast", "consumed_inputs"});
  r.add("Div", op_div, {"broadcast", "consumed_inputs"});
  r.add("Relu", op_relu, {"consumed_inputs"});
  r.add("LeakyRelu", op_leaky_relu, {"alpha", "consumed_inputs"});
  r.add("Sigmoid", op_sigmoid, {"consumed_inputs"});
  r.add("Tanh", op_tanh, {"consumed_inputs"});
  r.add("Clip", op_clip, {"min", "max", "consumed_inputs"});
  r.add("Identity", op_identity, {});
  r.add("Dropout", op_dropout, {"ratio", "is_test", "seed", "consumed_inputs"});
}

}  // namespace ops
}  // namespace quantkit
