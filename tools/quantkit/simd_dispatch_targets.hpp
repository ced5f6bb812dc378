// The Highway targets of the tool's SIMD implementation, the same in each of its parts (a split
// implementation needs the same HWY_TARGETS in every part): the build's attainable targets and
// AVX3_DL (AVX-512 VNNI int8 GEMM).
#pragma once
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif
