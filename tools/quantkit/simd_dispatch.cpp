// The SIMD kernels of the quantkit tool, chosen at run time for the CPU (Highway dynamic
// dispatch; AVX-512 VNNI int8 GEMM where available): compiled once here, used by every other
// translation unit through quantkit::simd (see quantkit/simd/dispatch.hpp).
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif
#define QUANTKIT_SIMD_IMPLEMENTATION
#include <quantkit/simd/implementation.hpp>
