// Gemm and MatMul (numpy semantics: 1-D promotion, broadcast batch dimensions) on
// matrix_product (float: quantkit::simd::gemm_f32).
// MatMulInteger and QLinearMatMul (ops/quantized.hpp) use matmul_core<std::int32_t>.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "quantkit/executor/ops/common.hpp"
#include "quantkit/executor/ops/float_loops.hpp"

namespace quantkit {
namespace ops {

// Shapes of a numpy matmul: batch shape, M, K, N and the result shape.
struct MatMulShape {
  Dims batch;       // broadcast batch dimensions
  Dims a_batch, b_batch;
  std::int64_t M = 1, K = 1, N = 1;
  Dims out;
};

inline MatMulShape matmul_shape(const OpContext& ctx, const Dims& a, const Dims& b) {
  if (a.rank < 1 || b.rank < 1)
    ctx.fail("inputs of shapes ", a.to_string(), " and ", b.to_string(), "; expected rank >= 1");
  MatMulShape s;
  s.M = a.rank >= 2 ? a[a.rank - 2] : 1;
  s.K = a[a.rank - 1];
  const std::int64_t kb = b.rank >= 2 ? b[b.rank - 2] : b[0];
  s.N = b.rank >= 2 ? b[b.rank - 1] : 1;
  if (s.K != kb)
    ctx.fail("inner dimensions differ: A ", a.to_string(), " has K = ", s.K, ", B ", b.to_string(),
             " has K = ", kb, "; expected equal");
  s.a_batch.rank = std::max(0, a.rank - 2);
  for (int i = 0; i < s.a_batch.rank; ++i) s.a_batch[i] = a[i];
  s.b_batch.rank = std::max(0, b.rank - 2);
  for (int i = 0; i < s.b_batch.rank; ++i) s.b_batch[i] = b[i];
  s.batch = broadcast_shapes(ctx, s.a_batch, s.b_batch);
  std::vector<std::int64_t> out(s.batch.value.begin(), s.batch.value.begin() + s.batch.rank);
  if (a.rank >= 2) out.push_back(s.M);
  if (b.rank >= 2) out.push_back(s.N);
  s.out = dims_of(ctx, out);
  return s;
}

// out (batch x M x N) = a (batch_a x M x K) * b (batch_b x K x N), batches broadcast.
template <class T>
void matmul_core(const T* a, const T* b, const MatMulShape& s, T* out) {
  const Dims sa = broadcast_strides(s.a_batch, s.batch), sb = broadcast_strides(s.b_batch, s.batch);
  const std::int64_t am = s.M * s.K, bm = s.K * s.N, om = s.M * s.N;
  for_each_broadcast(s.batch, sa, sb, [&](std::int64_t o, std::int64_t ia, std::int64_t ib) {
    matrix_product<T>(s.M, s.N, s.K, a + ia * am, false, b + ib * bm, false, out + o * om);
  });
}

// A constant float B (an initializer: the layer's weights) packed once in the float GEMM's own
// layout (simd::gemm_f32_pack_b for the active kernels), as a tensor [panels, K, panel width]:
// every product then reads B as one sequential stream and packs nothing. The products are the
// same (bit for bit) as with B as given; a run on kernels of another panel width (targets
// changed after the Executor was built: hwy::DisableTargets) reads B as given.
inline std::vector<Tensor> pack_constant_b(const Tensor* b, bool tb) {
  if (!b || b->dtype() != DType::float32 || b->rank() != 2) return {};
  const std::int64_t N = tb ? b->dim(0) : b->dim(1), K = tb ? b->dim(1) : b->dim(0);
  if (N == 0 || K == 0) return {};
  const std::size_t nr = simd::gemm_f32_panel_width();
  const std::int64_t panels = (N + static_cast<std::int64_t>(nr) - 1) / static_cast<std::int64_t>(nr);
  Tensor t = Tensor::uninitialized(DType::float32, Dims{panels, K, static_cast<std::int64_t>(nr)});
  simd::gemm_f32_pack_b(static_cast<std::size_t>(K), static_cast<std::size_t>(N), b->data<float>(),
                        static_cast<std::size_t>(b->dim(1)), tb, t.data<float>());
  std::vector<Tensor> r;
  r.push_back(std::move(t));
  return r;
}

// The op's packed B (pack_constant_b) when this run can read it: prepared (the weight not fed),
// for this K and the active kernels' panel width.
inline const Tensor* packed_b(const OpContext& ctx, std::int64_t K) {
  const std::vector<Tensor>* p = ctx.prepared();
  if (!p || p->empty() || p->front().rank() != 3 || p->front().dim(1) != K) return nullptr;
  return static_cast<std::size_t>(p->front().dim(2)) == simd::gemm_f32_panel_width() ? &p->front() : nullptr;
}

inline void product_packed_b(std::int64_t M, std::int64_t N, std::int64_t K, const float* a, bool ta, const Tensor& pb,
                             float* c) {
  simd::gemm_f32_prepacked(static_cast<std::size_t>(M), static_cast<std::size_t>(N), static_cast<std::size_t>(K), a,
                           static_cast<std::size_t>(ta ? M : K), ta, pb.data<float>(),
                           static_cast<std::size_t>(pb.dim(2)), c, static_cast<std::size_t>(N));
}

inline std::vector<Tensor> prepare_gemm(const graph::Node& node, const std::vector<const Tensor*>& constants) {
  return pack_constant_b(constants.size() > 1 ? constants[1] : nullptr, node.attr_int("transB", 0) != 0);
}

// MatMul with a constant 2-D B (every batch of A multiplies the same B).
inline std::vector<Tensor> prepare_matmul(const graph::Node&, const std::vector<const Tensor*>& constants) {
  return pack_constant_b(constants.size() > 1 ? constants[1] : nullptr, false);
}

inline void op_matmul(OpContext& ctx) {
  const Tensor& a = ctx.input(0, DType::float32);
  const Tensor& b = ctx.input(1, DType::float32);
  const MatMulShape s = matmul_shape(ctx, a.shape(), b.shape());
  Tensor y = Tensor::uninitialized(DType::float32, s.out);  // assigned by the products (0 for K = 0)
  const Tensor* pb = b.rank() == 2 ? packed_b(ctx, s.K) : nullptr;
  if (pb)  // A's batches and rows as one product: each row's sums are its own
    product_packed_b(a.size() / s.K, s.N, s.K, a.data<float>(), false, *pb, y.data<float>());
  else
    matmul_core<float>(a.data<float>(), b.data<float>(), s, y.data<float>());
  ctx.set_output(0, std::move(y));
}

inline void op_gemm(OpContext& ctx) {
  const auto& node = ctx.node();
  const Tensor& a = ctx.input(0, DType::float32);
  const Tensor& b = ctx.input(1, DType::float32);
  if (a.rank() != 2 || b.rank() != 2)
    ctx.fail("inputs of shapes ", a.shape().to_string(), " and ", b.shape().to_string(), "; expected matrices");
  const bool ta = node.attr_int("transA", 0) != 0;
  const bool tb = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const std::int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
  const std::int64_t Kb = tb ? b.dim(1) : b.dim(0), N = tb ? b.dim(0) : b.dim(1);
  if (K != Kb)
    ctx.fail("inner dimensions differ: A ", a.shape().to_string(), (ta ? " (transposed)" : ""), " and B ",
             b.shape().to_string(), (tb ? " (transposed)" : ""), "; expected equal K");
  Tensor y = Tensor::uninitialized(DType::float32, Dims{M, N});  // assigned by the product (0 for K = 0)
  if (const Tensor* pb = packed_b(ctx, K))
    product_packed_b(M, N, K, a.data<float>(), ta, *pb, y.data<float>());
  else
    matrix_product<float>(M, N, K, a.data<float>(), ta, b.data<float>(), tb, y.data<float>());
  if (alpha != 1.0f)
    detail::update_floats(y.data<float>(), M * N, [alpha](float v) { return v * alpha; });
  if (const Tensor* c = ctx.optional_input(2)) {
    if (c->dtype() != DType::float32) ctx.fail("input C has element type ", graph::to_string(c->dtype()), "; expected float32");
    if (beta != 0.0f) {
      const std::vector<float> cb = broadcast_to<float>(ctx, *c, y.shape());
      detail::update_floats(y.data<float>(), cb.data(), static_cast<std::int64_t>(cb.size()),
                            [beta](float v, float c) { return v + beta * c; });
    }
  }
  ctx.set_output(0, std::move(y));
}

inline void register_gemm_ops(OpRegistry& r) {
  r.add("Gemm", op_gemm, {"alpha", "beta", "transA", "transB", "broadcast"});
  r.set_prepare("Gemm", prepare_gemm);
  r.add("MatMul", op_matmul, {});
  r.set_prepare("MatMul", prepare_matmul);
}

}  // namespace ops
}  // namespace quantkit
