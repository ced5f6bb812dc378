// Conventions: the exact arithmetic a peer uses to turn a (min, max) range into
// (scale, zero point). They agree on the idea and differ in precision, rounding of the zero
// point and degenerate cases — which is what makes results bit-different. Formulas and the
// peer source each follows are in compute_qparams() (quantkit/params.hpp).
#pragma once

#include "quantkit/policy/category.hpp"

namespace quantkit {

enum class ConventionKind { pytorch, onnxruntime, onnx, tflite };

inline const char* to_string(ConventionKind c) {
  switch (c) {
    case ConventionKind::pytorch: return "pytorch";
    case ConventionKind::onnxruntime: return "onnxruntime";
    case ConventionKind::onnx: return "onnx";
    case ConventionKind::tflite: return "tflite";
  }
  return "?";
}

// torch.ao.quantization observers' _calculate_qparams: float32 arithmetic, scale >= float32
// epsilon, zero point qmin - round_half_even(min / scale) clamped.
struct PyTorchConvention {
  using category = quantkit::category::convention;
  static constexpr ConventionKind kind = ConventionKind::pytorch;
};
// onnxruntime.quantization.quant_utils.compute_scale_zp: float64 scale rounded to float32,
// scale below FLT_MIN gives (1, 0), zero point round_half_even(qmin - min / scale).
struct OnnxRuntimeConvention {
  using category = quantkit::category::convention;
  static constexpr ConventionKind kind = ConventionKind::onnxruntime;
};
// ONNX DynamicQuantizeLinear generalised to any format: float32, max == min gives (1, 0),
// zero point round_half_even(saturate(qmin - min / scale)).
struct OnnxConvention {
  using category = quantkit::category::convention;
  static constexpr ConventionKind kind = ConventionKind::onnx;
};
// TFLite ChooseQuantizationParams: float64, zero point nudged from the end with the smaller
// error, rounded half away from zero; the point range {0} gives (1, 0) (TFLite: scale 0,
// which cannot quantize — documented deviation).
struct TFLiteConvention {
  using category = quantkit::category::convention;
  static constexpr ConventionKind kind = ConventionKind::tflite;
};

}  // namespace quantkit
