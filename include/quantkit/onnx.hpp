// quantkit ONNX adapter umbrella (needs QUANTKIT_WITH_ONNX: link quantkit::onnx).
// Not part of the core umbrella quantkit.hpp. The QDQ export (quantkit/onnx/export_qdq.hpp)
// also needs the executor (Eigen) and is included separately.
#pragma once

#include "quantkit/onnx/load.hpp"
#include "quantkit/onnx/save.hpp"
