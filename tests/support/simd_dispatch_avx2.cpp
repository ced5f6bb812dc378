// Part of the tests' SIMD implementation (simd_dispatch.cpp): the AVX2 target's kernels.
#include "simd_dispatch_targets.hpp"
#define QUANTKIT_SIMD_IMPLEMENTATION_PART
#define QUANTKIT_SIMD_IMPLEMENTATION_TARGETS HWY_AVX2
#include <quantkit/simd/implementation.hpp>
