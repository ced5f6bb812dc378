// Part of the tests' SIMD implementation (simd_dispatch.cpp): the AVX-512 targets' kernels.
#include "simd_dispatch_targets.hpp"
#define QUANTKIT_SIMD_IMPLEMENTATION_PART
#define QUANTKIT_SIMD_IMPLEMENTATION_TARGETS (HWY_AVX3_DL | HWY_AVX3)
#include <quantkit/simd/implementation.hpp>
