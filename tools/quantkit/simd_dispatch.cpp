// The SIMD kernels of the quantkit tool, chosen at run time for the CPU (Highway dynamic
// dispatch; AVX-512 VNNI int8 GEMM where available): compiled once here, used by every other
// translation unit through quantkit::simd (see quantkit/simd/dispatch.hpp). Split in three .cpp
// files that compile in parallel (implementation.hpp: a split implementation):
// simd_dispatch_avx3.cpp the AVX-512 targets, simd_dispatch_avx2.cpp AVX2, this one the rest and
// the dispatch table.
#include "simd_dispatch_targets.hpp"
#define QUANTKIT_SIMD_IMPLEMENTATION
#define QUANTKIT_SIMD_IMPLEMENTATION_TARGETS (~(HWY_AVX3_DL | HWY_AVX3 | HWY_AVX2))
#include <quantkit/simd/implementation.hpp>
