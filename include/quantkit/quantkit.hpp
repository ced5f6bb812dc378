// quantkit — header-only post-training quantization. Umbrella header for the core
// (policies, parameters, tensor views, scalar reference, observers, quantizer).
// Optional parts are included on their own: quantkit/tensor/eigen.hpp (needs Eigen).
#pragma once

#include "quantkit/error.hpp"
#include "quantkit/observer/minmax.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/params.hpp"
#include "quantkit/policy/category.hpp"
#include "quantkit/policy/convention.hpp"
#include "quantkit/policy/format.hpp"
#include "quantkit/policy/granularity.hpp"
#include "quantkit/policy/requantization.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/policy/scale_application.hpp"
#include "quantkit/policy/symmetry.hpp"
#include "quantkit/quantizer.hpp"
#include "quantkit/ref/fixed_point.hpp"
#include "quantkit/ref/pack.hpp"
#include "quantkit/ref/quantize.hpp"
#include "quantkit/ref/requantize.hpp"
#include "quantkit/scheme.hpp"
#include "quantkit/tensor/span.hpp"
#include "quantkit/tensor/tensor_traits.hpp"
#include "quantkit/tensor/view.hpp"
#include "quantkit/version.hpp"
