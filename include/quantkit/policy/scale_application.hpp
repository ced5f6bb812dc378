// How the scale is applied when quantizing: x / scale (the ONNX QuantizeLinear spec, MLAS)
// or x * (1 / scale) with the float32 reciprocal (PyTorch, fbgemm). They differ in the last
// bit for some x, which moves ties: pick the one your peer uses.
#pragma once

#include <limits>

#include "quantkit/policy/category.hpp"

namespace quantkit {

enum class ScaleApplicationKind { divide, multiply_by_reciprocal };

struct DivideByScale {
  using category = quantkit::category::scale_application;
  static constexpr ScaleApplicationKind kind = ScaleApplicationKind::divide;
};

struct MultiplyByReciprocal {
  using category = quantkit::category::scale_application;
  static constexpr ScaleApplicationKind kind = ScaleApplicationKind::multiply_by_reciprocal;
};

// The factor kernels use: the scale itself (divide) or 1.0f / scale (multiply).
inline float scale_factor(ScaleApplicationKind kind, float scale) {
  return kind == ScaleApplicationKind::divide ? scale : 1.0f / scale;
}
// The smallest scale whose float reciprocal is finite: 2^-128 (1 + 2^-21), a denormal. Below
// it 1.0f / scale is +inf and x * inf is NaN for x = 0 (PyTorch then quantizes every value to
// qmin), so MultiplyByReciprocal rejects such scales; DivideByScale takes any finite scale > 0.
constexpr float kMinReciprocalScale = 0x1.000008p-128f;
inline bool reciprocal_finite(float scale) { return 1.0f / scale <= std::numeric_limits<float>::max(); }

inline float apply_scale(ScaleApplicationKind kind, float x, float factor) {
  return kind == ScaleApplicationKind::divide ? x / factor : x * factor;
}

}  // namespace quantkit
