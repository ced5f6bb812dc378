// The test programs' quantkit SIMD implementation, compiled once and linked into every unit
// test but test_simd_static: every Highway target the compiler can build (also below the
// build's baseline, and AVX3_DL), chosen at run time, so the tests run the kernels users get
// from quantkit::dispatch and test_simd_kernels can loop over every target.
//
// Split in three .cpp files that compile in parallel (implementation.hpp: a split
// implementation): simd_dispatch_avx3.cpp the AVX-512 targets, simd_dispatch_avx2.cpp AVX2,
// this one the rest (SSE4, SSSE3, the fallback) and the dispatch table.
#include "simd_dispatch_targets.hpp"
#define QUANTKIT_SIMD_IMPLEMENTATION
#define QUANTKIT_SIMD_IMPLEMENTATION_TARGETS (~(HWY_AVX3_DL | HWY_AVX3 | HWY_AVX2))
#include <quantkit/simd/implementation.hpp>
