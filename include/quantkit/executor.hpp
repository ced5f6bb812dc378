// quantkit executor umbrella: graph IR, op registry and implementations, Executor, graph passes.
// Needs Eigen 3 (GEMM, im2col convolution); not part of the core umbrella quantkit.hpp.
#pragma once

#include "quantkit/executor/builtin_ops.hpp"
#include "quantkit/executor/executor.hpp"
#include "quantkit/executor/passes/fold_batchnorm.hpp"
#include "quantkit/executor/passes/infer_shapes.hpp"
#include "quantkit/executor/registry.hpp"
#include "quantkit/graph/attribute.hpp"
#include "quantkit/graph/dtype.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/graph/tensor.hpp"
