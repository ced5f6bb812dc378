// Per-target part of quantkit/simd/implementation.hpp (its HWY_TARGET_INCLUDE): a plain
// function per target returning that target's kernel table, for HWY_EXPORT. Not for
// direct use.
//
// It is defined (every kernel of the target compiled) only for the targets the translation
// unit's QUANTKIT_SIMD_IMPLEMENTATION_TARGETS names (all, when it is not defined), and only
// declared for the others, whose definitions another translation unit of the program compiles
// (implementation.hpp: the implementation split over several .cpp files). The kernels' headers
// are included for every target either way: their toggle guards must follow every pass of
// foreach_target.h, and parsing them instantiates nothing (every entry point is a template).

#if defined(QUANTKIT_SIMD_EXPORT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QUANTKIT_SIMD_EXPORT_INL_H_
#undef QUANTKIT_SIMD_EXPORT_INL_H_
#else
#define QUANTKIT_SIMD_EXPORT_INL_H_
#endif

#include <hwy/highway.h>

#include "quantkit/simd/kernels-inl.h"

HWY_BEFORE_NAMESPACE();
namespace quantkit {
namespace simd {
namespace HWY_NAMESPACE {

#if !defined(QUANTKIT_SIMD_IMPLEMENTATION_TARGETS) || ((QUANTKIT_SIMD_IMPLEMENTATION_TARGETS) & HWY_TARGET) != 0
const Kernels* GetKernelTable() { return GetKernelsT<0>(); }
#else
const Kernels* GetKernelTable();  // compiled in another .cpp of the implementation
#endif

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_EXPORT_INL_H_ toggle
