// quantkit post-training quantization of whole graphs: PtqConfig, make_plan, GraphCalibrator,
// QuantizedModel and the FakeQuantMode executor mode; the accuracy remedies cross-layer
// equalization, AdaRound and bias correction. Needs the executor (Eigen); the QDQ ONNX
// export is quantkit/onnx/export_qdq.hpp (QUANTKIT_WITH_ONNX).
#pragma once

#include "quantkit/ptq/adaround.hpp"
#include "quantkit/ptq/bias_correction.hpp"
#include "quantkit/ptq/calibrate.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/equalize.hpp"
#include "quantkit/ptq/fake_quant.hpp"
#include "quantkit/ptq/layer_data.hpp"
#include "quantkit/ptq/plan.hpp"
#include "quantkit/ptq/weights.hpp"
