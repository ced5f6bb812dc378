// The test programs' quantkit SIMD implementation, compiled once and linked into every unit
// test but test_simd_static: every Highway target the compiler can build (also below the
// build's baseline, and AVX3_DL), chosen at run time, so the tests run the kernels users get
// from quantkit::dispatch and test_simd_kernels can loop over every target.
#ifndef HWY_COMPILE_ALL_ATTAINABLE
#define HWY_COMPILE_ALL_ATTAINABLE
#endif
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif
#define QUANTKIT_SIMD_IMPLEMENTATION
#include <quantkit/simd/implementation.hpp>
