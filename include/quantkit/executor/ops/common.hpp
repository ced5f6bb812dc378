// Helpers shared by the op families: axes, integer lists from inputs, broadcasting, dtype
// dispatch, Eigen maps, the matrix product.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "quantkit/executor/registry.hpp"
#include "quantkit/graph/tensor.hpp"
#include "quantkit/simd/gemm_f32.hpp"

namespace quantkit {
namespace ops {

using graph::DType;
using graph::Tensor;

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatrixMap = Eigen::Map<RowMatrix<T>>;
template <class T>
using ConstMatrixMap = Eigen::Map<const RowMatrix<T>>;

// C (M x N, row-major, leading dimension N) = op(A) * op(B), A stored M x K (K x M when ta)
// and B K x N (N x K when tb), row-major and dense. float goes through quantkit::simd::gemm_f32
// (products and sums rounded in a fixed order: the same outputs on every machine and target);
// the exact integer paths (int32) through Eigen.
template <class T>
void matrix_product(std::int64_t M, std::int64_t N, std::int64_t K, const T* a, bool ta, const T* b, bool tb, T* c) {
  if constexpr (std::is_same<T, float>::value) {
    simd::gemm_f32(static_cast<std::size_t>(M), static_cast<std::size_t>(N), static_cast<std::size_t>(K), a,
                   static_cast<std::size_t>(ta ? M : K), ta, b, static_cast<std::size_t>(tb ? K : N), tb, c,
                   static_cast<std::size_t>(N));
  } else {
    ConstMatrixMap<T> A(a, ta ? K : M, ta ? M : K);
    ConstMatrixMap<T> B(b, tb ? N : K, tb ? K : N);
    MatrixMap<T> C(c, M, N);
    if (ta && tb) C.noalias() = A.transpose() * B.transpose();
    else if (ta) C.noalias() = A.transpose() * B;
    else if (tb) C.noalias() = A * B.transpose();
    else C.noalias() = A * B;
  }
}

// axis in [-rank, rank) -> [0, rank); `what` names the attribute/input in the error.
inline int normalize_axis(const OpContext& ctx, std::int64_t axis, int rank, const char* what = "axis") {
  if (axis < -rank || axis >= std::max(rank, 1))
    ctx.fail(what, " ", axis, " is out of range for rank ", rank, "; expected a value in [", -rank,
             ", ", std::max(rank, 1) - 1, "]");
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// All elements of an integer input (int32 or int64) as int64.
inline std::vector<std::int64_t> input_ints(const OpContext& ctx, std::size_t i) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DType::int64 && t.dtype() != DType::int32)
    ctx.fail("input ", i, " ('", ctx.input_name(i), "') has element type ", graph::to_string(t.dtype()),
             "; expected int64");
  std::vector<std::int64_t> v(static_cast<std::size_t>(t.size()));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = t.as_int64(static_cast<std::int64_t>(k));
  return v;
}

inline Dims dims_of(const OpContext& ctx, const std::vector<std::int64_t>& v) {
  if (v.size() > static_cast<std::size_t>(max_rank))
    ctx.fail("result has rank ", v.size(), "; expected at most ", max_rank);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] < 0) ctx.fail("result extent ", v[i], " in dimension ", i, "; expected >= 0");
  return Dims::from(v.begin(), v.end());
}

// Numpy (multidirectional) broadcast of two shapes.
inline Dims broadcast_shapes(const OpContext& ctx, const Dims& a, const Dims& b) {
  Dims out;
  out.rank = std::max(a.rank, b.rank);
  for (int i = 0; i < out.rank; ++i) {
    const int ia = a.rank - out.rank + i, ib = b.rank - out.rank + i;
    const std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      ctx.fail("shapes ", a.to_string(), " and ", b.to_string(), " cannot be broadcast (dimension ",
               i, ": ", da, " vs ", db, "); expected equal extents or 1");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Element strides of `in` aligned to `out` (0 along broadcast dimensions).
inline Dims broadcast_strides(const Dims& in, const Dims& out) {
  const Dims s = contiguous_strides(in);
  Dims r;
  r.rank = out.rank;
  for (int i = 0; i < out.rank; ++i) {
    const int k = in.rank - out.rank + i;
    r[i] = (k < 0 || in[k] == 1) ? 0 : s[k];
  }
  return r;
}

// Calls f(out_index, offset_a, offset_b) for every element of `out` in row-major order.
template <class F>
void for_each_broadcast(const Dims& out, const Dims& sa, const Dims& sb, F&& f) {
  const std::int64_t n = out.product();
  if (n == 0) return;
  if (out.rank == 0) {
    f(0, 0, 0);
    return;
  }
  const int last = out.rank - 1;
  const std::int64_t inner = out[last], ia = sa[last], ib = sb[last];
  Dims idx;
  idx.rank = out.rank;
  std::int64_t oa = 0, ob = 0;
  for (std::int64_t base = 0; base < n; base += inner) {
    for (std::int64_t j = 0; j < inner; ++j) f(base + j, oa + j * ia, ob + j * ib);
    for (int d = last - 1; d >= 0; --d) {
      if (++idx[d] < out[d]) {
        oa += sa[d];
        ob += sb[d];
        break;
      }
      oa -= sa[d] * (out[d] - 1);
      ob -= sb[d] * (out[d] - 1);
      idx[d] = 0;
    }
  }
}

// Copies `in` broadcast to `out_shape` (unidirectional: in must broadcast to out_shape).
template <class T>
std::vector<T> broadcast_to(const OpContext& ctx, const Tensor& in, const Dims& out_shape) {
  const Dims b = broadcast_shapes(ctx, in.shape(), out_shape);
  if (b != out_shape)
    ctx.fail("shape ", in.shape().to_string(), " does not broadcast to ", out_shape.to_string());
  std::vector<T> out(static_cast<std::size_t>(out_shape.product()));
  const T* src = in.data<T>();
  const Dims s = broadcast_strides(in.shape(), out_shape);
  for_each_broadcast(out_shape, s, s, [&](std::int64_t o, std::int64_t a, std::int64_t) {
    out[static_cast<std::size_t>(o)] = src[a];
  });
  return out;
}

// Dispatches on the element type of an op's input: f(T{}) for T among the listed types.
template <class... Ts, class F>
void dispatch(const OpContext& ctx, DType t, F&& f, const char* what = "input") {
  bool done = false;
  ((!done && graph::dtype_of_v<Ts> == t ? (f(Ts{}), done = true) : false), ...);
  if (!done) {
    std::string list;
    ((list += (list.empty() ? "" : ", ") + std::string(graph::to_string(graph::dtype_of_v<Ts>))), ...);
    ctx.fail(what, " has element type ", graph::to_string(t), "; expected one of ", list);
  }
}

inline std::int64_t product(const Dims& d, int begin, int end) {
  std::int64_t p = 1;
  for (int i = begin; i < end; ++i) p *= d[i];
  return p;
}

}  // namespace ops
}  // namespace quantkit
