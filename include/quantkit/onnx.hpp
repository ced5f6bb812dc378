// quantkit ONNX adapter umbrella (needs QUANTKIT_WITH_ONNX: link quantkit::onnx).
// Not part of the core umbrella quantkit.hpp.
#pragma once

#include "quantkit/onnx/load.hpp"
