// Part of bench_kernels' SIMD implementation (kernels_dispatch.cpp): the AVX-512 targets' kernels.
#if __has_include("quantkit/simd/implementation.hpp")  // (as kernels_dispatch.cpp)
#define QUANTKIT_SIMD_IMPLEMENTATION_PART
#define QUANTKIT_SIMD_IMPLEMENTATION_TARGETS (HWY_AVX3_DL | HWY_AVX3)
#include "quantkit/simd/implementation.hpp"
#endif
