// quantkit SIMD kernels (Google Highway): the umbrella header. Header-only (static dispatch
// for this translation unit's target) unless quantkit/simd/implementation.hpp is compiled
// into the program (runtime dispatch, -lhwy). See quantkit/simd/dispatch.hpp for the modes and
// quantkit/simd/api.hpp for the functions.
#pragma once

#include "quantkit/simd/abi.hpp"
#include "quantkit/simd/api.hpp"
#include "quantkit/simd/dispatch.hpp"
#include "quantkit/simd/prepared_requantize.hpp"
