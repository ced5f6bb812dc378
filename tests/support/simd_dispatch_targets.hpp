// The Highway targets of the tests' SIMD implementation, the same in each of its parts (a
// split implementation needs the same HWY_TARGETS in every part): every target the compiler
// can build, also below the build's baseline, and AVX3_DL.
#pragma once
#ifndef HWY_COMPILE_ALL_ATTAINABLE
#define HWY_COMPILE_ALL_ATTAINABLE
#endif
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif

// Under the sanitizers (-O0) no test runs SSSE3's kernels (they skip it: its loads and stores
// are SSE4's), so it is not compiled there either.
#include "sanitized.hpp"
#if QK_TEST_SANITIZED && !defined(HWY_DISABLED_TARGETS)
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
