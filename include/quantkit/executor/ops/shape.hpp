// Shape and data-movement ops: Pad (constant/reflect/edge), Flatten, Reshape, Squeeze,
// Unsqueeze, Transpose, Concat, Constant. Element-type generic (they move bytes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "quantkit/executor/ops/common.hpp"

namespace quantkit {
namespace ops {

namespace detail {
// Axes of an op: the attribute before `input_since_opset`, then the optional input `index`.
inline std::vector<std::int64_t> axes_of(const OpContext& ctx, std::int64_t input_since_opset,
                                         std::size_t index, bool* given = nullptr) {
  if (ctx.opset() < input_since_opset) {
    if (given) *given = ctx.node().has_attr("axes");
    return ctx.node().attr_ints("axes");
  }
  if (given) *given = ctx.has_input(index);
  return ctx.has_input(index) ? input_ints(ctx, index) : std::vector<std::int64_t>{};
}
}  // namespace detail

inline void op_flatten(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int r = x.rank();
  std::int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < -r || axis > r)
    ctx.fail("axis ", axis, " is out of range for rank ", r, "; expected a value in [", -r, ", ", r, "]");
  if (axis < 0) axis += r;
  const int a = static_cast<int>(axis);
  ctx.set_output(0, x.reshaped(Dims{product(x.shape(), 0, a), product(x.shape(), a, r)}));
}

inline void op_reshape(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<std::int64_t> req =
      ctx.opset() < 5 ? ctx.node().attr_ints("shape") : input_ints(ctx, 1);
  const bool allowzero = ctx.node().attr_int("allowzero", 0) != 0;
  std::vector<std::int64_t> out(req.size());
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < req.size(); ++i) {
    std::int64_t d = req[i];
    if (d == 0 && !allowzero) {
      if (static_cast<int>(i) >= x.rank())
        ctx.fail("shape ", "entry ", i, " is 0 (copy) but the input ", x.shape().to_string(), " has no dimension ", i);
      d = x.dim(static_cast<int>(i));
    }
    if (d == -1) {
      if (infer >= 0) ctx.fail("shape has more than one -1; expected at most one inferred dimension");
      infer = static_cast<int>(i);
      out[i] = 1;
      continue;
    }
    if (d < 0) ctx.fail("shape entry ", i, " is ", d, "; expected >= -1");
    out[i] = d;
    if (d != 0 && known > std::numeric_limits<std::int64_t>::max() / d)
      ctx.fail("shape entries multiply past 2^63 at entry ", i, " (", d, "); expected a shape of ", x.size(), " elements");
    known *= d;
  }
  if (infer >= 0) {
    if (known == 0 || x.size() % known != 0)
      ctx.fail("cannot infer the -1 dimension: ", x.size(), " elements of ", x.shape().to_string(),
               " do not divide by ", known);
    out[static_cast<std::size_t>(infer)] = x.size() / known;
  }
  const Dims shape = dims_of(ctx, out);
  if (shape.product() != x.size())
    ctx.fail("cannot reshape ", x.shape().to_string(), " (", x.size(), " elements) to ", shape.to_string(),
             "; expected the same number of elements");
  ctx.set_output(0, x.reshaped(shape));
}

inline void op_squeeze(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int r = x.rank();
  const auto axes = detail::axes_of(ctx, 13, 1);
  std::vector<bool> drop(static_cast<std::size_t>(r), false);
  if (axes.empty()) {
    for (int i = 0; i < r; ++i) drop[static_cast<std::size_t>(i)] = x.dim(i) == 1;
  } else {
    for (auto a : axes) {
      const int k = normalize_axis(ctx, a, r, "axes entry");
      if (x.dim(k) != 1) ctx.fail("cannot squeeze dimension ", k, " of ", x.shape().to_string(), ": extent is not 1");
      drop[static_cast<std::size_t>(k)] = true;
    }
  }
  std::vector<std::int64_t> out;
  for (int i = 0; i < r; ++i)
    if (!drop[static_cast<std::size_t>(i)]) out.push_back(x.dim(i));
  ctx.set_output(0, x.reshaped(dims_of(ctx, out)));
}

inline void op_unsqueeze(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto axes = detail::axes_of(ctx, 13, 1);
  if (axes.empty()) ctx.fail("no axes given; expected at least one axis to insert");
  const int r = x.rank() + static_cast<int>(axes.size());
  if (r > max_rank) ctx.fail("result rank ", r, "; expected at most ", max_rank);
  std::vector<bool> inserted(static_cast<std::size_t>(r), false);
  for (auto a : axes) {
    const int k = normalize_axis(ctx, a, r, "axes entry");
    if (inserted[static_cast<std::size_t>(k)]) ctx.fail("axis ", a, " is given twice; expected distinct axes");
    inserted[static_cast<std::size_t>(k)] = true;
  }
  std::vector<std::int64_t> out;
  int src = 0;
  for (int i = 0; i < r; ++i) out.push_back(inserted[static_cast<std::size_t>(i)] ? 1 : x.dim(src++));
  ctx.set_output(0, x.reshaped(dims_of(ctx, out)));
}

inline void op_transpose(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int r = x.rank();
  std::vector<std::int64_t> def(static_cast<std::size_t>(r));
  for (int i = 0; i < r; ++i) def[static_cast<std::size_t>(i)] = r - 1 - i;
  const auto perm = ctx.node().attr_ints("perm", def);
  if (static_cast<int>(perm.size()) != r)
    ctx.fail("attribute 'perm' has ", perm.size(), " entries; expected ", r, " (the input's rank)");
  std::vector<bool> seen(static_cast<std::size_t>(r), false);
  Dims out, in_strides = contiguous_strides(x.shape()), src_strides;
  out.rank = src_strides.rank = r;
  for (int i = 0; i < r; ++i) {
    const auto p = perm[static_cast<std::size_t>(i)];
    if (p < 0 || p >= r || seen[static_cast<std::size_t>(p)])
      ctx.fail("attribute 'perm' is not a permutation of 0..", r - 1);
    seen[static_cast<std::size_t>(p)] = true;
    out[i] = x.dim(static_cast<int>(p));
    src_strides[i] = in_strides[static_cast<int>(p)];
  }
  Tensor y(x.dtype(), out);
  const std::size_t es = graph::size_of(x.dtype());
  const auto* src = static_cast<const unsigned char*>(x.raw());
  auto* dst = static_cast<unsigned char*>(y.raw());
  for_each_broadcast(out, src_strides, src_strides, [&](std::int64_t o, std::int64_t i, std::int64_t) {
    std::memcpy(dst + static_cast<std::size_t>(o) * es, src + static_cast<std::size_t>(i) * es, es);
  });
  ctx.set_output(0, std::move(y));
}

inline void op_concat(OpContext& ctx) {
  // Concat-1 defaulted the axis to 1; from opset 4 it is required.
  if (!ctx.node().has_attr("axis") && ctx.opset() >= 4) ctx.fail("attribute 'axis' is missing; expected one");
  const Tensor& first = ctx.input(0);
  const int r = first.rank();
  const int axis = normalize_axis(ctx, ctx.node().attr_int("axis", 1), r);
  Dims out = first.shape();
  out[axis] = 0;
  for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    if (t.dtype() != first.dtype())
      ctx.fail("input ", i, " has element type ", graph::to_string(t.dtype()), "; expected ", graph::to_string(first.dtype()));
    if (t.rank() != r) ctx.fail("input ", i, " has shape ", t.shape().to_string(), "; expected rank ", r);
    for (int d = 0; d < r; ++d)
      if (d != axis && t.dim(d) != first.dim(d))
        ctx.fail("input ", i, " has shape ", t.shape().to_string(), "; expected ", first.shape().to_string(),
                 " except along axis ", axis);
    out[axis] += t.dim(axis);
  }
  Tensor y(first.dtype(), out);
  const std::size_t es = graph::size_of(first.dtype());
  const std::int64_t outer = product(out, 0, axis), inner = product(out, axis + 1, r);
  auto* dst = static_cast<unsigned char*>(y.raw());
  std::int64_t offset = 0;  // along the axis
  for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    const std::size_t chunk = static_cast<std::size_t>(t.dim(axis) * inner) * es;
    const auto* src = static_cast<const unsigned char*>(t.raw());
    for (std::int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<std::size_t>((o * out[axis] + offset) * inner) * es,
                  src + static_cast<std::size_t>(o) * chunk, chunk);
    offset += t.dim(axis);
  }
  ctx.set_output(0, std::move(y));
}

inline void op_constant(OpContext& ctx) {
  const auto& node = ctx.node();
  if (const Tensor* t = node.attr_tensor("value")) return ctx.set_output(0, *t);
  if (node.has_attr("value_float")) return ctx.set_output(0, Tensor::scalar(node.attr_float("value_float", 0.0f)));
  if (node.has_attr("value_int")) return ctx.set_output(0, Tensor::scalar<std::int64_t>(node.attr_int("value_int", 0)));
  if (node.has_attr("value_floats")) {
    const auto v = node.attr_floats("value_floats");
    return ctx.set_output(0, Tensor::from_vector(Dims{static_cast<std::int64_t>(v.size())}, v));
  }
  if (node.has_attr("value_ints")) {
    const auto v = node.attr_ints("value_ints");
    return ctx.set_output(0, Tensor::from_vector(Dims{static_cast<std::int64_t>(v.size())}, v));
  }
  ctx.fail("has no 'value', 'value_float(s)' or 'value_int(s)' attribute (sparse and string constants "
           "are not supported)");
}

// Pad: opset < 11 takes 'pads' (or 'paddings') and 'value' attributes, later opsets the pads and
// the constant value as inputs (and, opset 18, optional axes). Negative pads crop.
inline void op_pad(OpContext& ctx) {
  const auto& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const int r = x.rank();
  const std::string mode = node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    ctx.fail("attribute 'mode' is '", mode, "'; expected constant, reflect or edge");
  std::vector<std::int64_t> pads;
  double value = 0.0;
  if (ctx.opset() < 11) {
    pads = node.has_attr("pads") ? node.attr_ints("pads") : node.attr_ints("paddings");
    value = node.attr_float("value", 0.0f);
  } else {
    pads = input_ints(ctx, 1);
    if (const Tensor* v = ctx.optional_input(2)) {
      if (v->dtype() != x.dtype() || v->size() != 1)
        ctx.fail("constant_value is ", graph::to_string(v->dtype()), " ", v->shape().to_string(),
                 "; expected a scalar of the input's type");
      value = v->as_double(0);
    }
    if (ctx.has_input(3)) {  // opset 18 axes: expand the pads to every dimension
      const auto axes = input_ints(ctx, 3);
      if (pads.size() != 2 * axes.size())
        ctx.fail("pads has ", pads.size(), " entries for ", axes.size(), " axes; expected ", 2 * axes.size());
      std::vector<std::int64_t> full(2 * static_cast<std::size_t>(r), 0);
      for (std::size_t i = 0; i < axes.size(); ++i) {
        const auto k = static_cast<std::size_t>(normalize_axis(ctx, axes[i], r, "axes entry"));
        full[k] = pads[i];
        full[k + static_cast<std::size_t>(r)] = pads[i + axes.size()];
      }
      pads = full;
    }
  }
  if (static_cast<int>(pads.size()) != 2 * r)
    ctx.fail("pads has ", pads.size(), " entries; expected ", 2 * r, " (2 x rank of ", x.shape().to_string(), ")");
  Dims out = x.shape();
  for (int i = 0; i < r; ++i) {
    out[i] = x.dim(i) + pads[static_cast<std::size_t>(i)] + pads[static_cast<std::size_t>(i + r)];
    if (out[i] < 0) ctx.fail("pads ", pads[static_cast<std::size_t>(i)], ", ", pads[static_cast<std::size_t>(i + r)],
                             " make dimension ", i, " negative");
    if (mode != "constant" && x.dim(i) == 0 && out[i] > 0)
      ctx.fail("mode '", mode, "' cannot pad the empty dimension ", i);
  }
  Tensor y(x.dtype(), out);
  graph::visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const T fill = static_cast<T>(value);
    const Dims xs = contiguous_strides(x.shape());
    for_each_index(y.view<T>(), [&](std::int64_t o, const Dims& idx) {
      std::int64_t src = 0;
      for (int d = 0; d < r; ++d) {
        std::int64_t i = idx[d] - pads[static_cast<std::size_t>(d)];
        const std::int64_t n = x.dim(d);
        if (i < 0 || i >= n) {
          if (mode == "constant") {
            py[o] = fill;
            return;
          }
          if (mode == "edge") {
            i = i < 0 ? 0 : n - 1;
          } else if (n == 1) {
            i = 0;
          } else {
            while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
          }
        }
        src += i * xs[d];
      }
      py[o] = px[src];
    });
  }, x.name());
  ctx.set_output(0, std::move(y));
}

inline void register_shape_ops(OpRegistry& r) {
  r.add("Flatten", op_flatten, {"axis"});
  r.add("Reshape", op_reshape, {"allowzero", "shape", "consumed_inputs"}, {1});
  r.add("Squeeze", op_squeeze, {"axes"}, {1});
  r.add("Unsqueeze", op_unsqueeze, {"axes"}, {1});
  r.add("Transpose", op_transpose, {"perm"});
  r.add("Concat", op_concat, {"axis"});
  r.add("Constant", op_constant, {"value", "value_float", "value_floats", "value_int", "value_ints"});
  r.add("Pad", op_pad, {"mode", "pads", "paddings", "value"}, {1, 3});
}

}  // namespace ops
}  // namespace quantkit
