// The registry of every built-in op implementation (one register_* call per op family).
#pragma once

#include "quantkit/executor/ops/contrib_quantized.hpp"
#include "quantkit/executor/ops/conv.hpp"
#include "quantkit/executor/ops/elementwise.hpp"
#include "quantkit/executor/ops/gemm.hpp"
#include "quantkit/executor/ops/pool.hpp"
#include "quantkit/executor/ops/quantized.hpp"
#include "quantkit/executor/ops/reduce.hpp"
#include "quantkit/executor/ops/shape.hpp"
#include "quantkit/executor/registry.hpp"

namespace quantkit {

inline OpRegistry make_builtin_registry() {
  OpRegistry r;
  ops::register_elementwise_ops(r);
  ops::register_conv_ops(r);
  ops::register_pool_ops(r);
  ops::register_gemm_ops(r);
  ops::register_shape_ops(r);
  ops::register_reduce_ops(r);
  ops::register_quantized_ops(r);
  ops::register_contrib_quantized_ops(r);  // com.microsoft QGemm, QLinearAdd, ...
  return r;
}

// The shared built-in registry (built once, read-only afterwards).
inline const OpRegistry& builtin_ops() {
  static const OpRegistry registry = make_builtin_registry();
  return registry;
}

}  // namespace quantkit
