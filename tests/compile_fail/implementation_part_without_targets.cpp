// expect: a QUANTKIT_SIMD_IMPLEMENTATION_PART compiles the targets QUANTKIT_SIMD_IMPLEMENTATION_TARGETS names
// A part of a split SIMD implementation must say which targets it compiles.
#define HWY_COMPILE_ONLY_STATIC  // one target to parse: the check is in front of Highway
#define QUANTKIT_SIMD_IMPLEMENTATION_PART
#ifdef QUANTKIT_COMPILE_FAIL_CONTROL
#define QUANTKIT_SIMD_IMPLEMENTATION_TARGETS 0  // a part of no target: the headers, no kernel
#endif
#include <quantkit/simd/implementation.hpp>
