// expect: QUANTKIT_SIMD_IMPLEMENTATION_PART in the others, not both in one
// One .cpp of a split SIMD implementation holds the dispatch table, the others are parts.
#define HWY_COMPILE_ONLY_STATIC  // one target to parse: the check is in front of Highway
#define QUANTKIT_SIMD_IMPLEMENTATION_PART
#define QUANTKIT_SIMD_IMPLEMENTATION_TARGETS 0  // (the control: a part of no target)
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
#define QUANTKIT_SIMD_IMPLEMENTATION
#endif
#include <quantkit/simd/implementation.hpp>
