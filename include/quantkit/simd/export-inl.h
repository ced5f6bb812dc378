// Per-target part of quantkit/simd/implementation.hpp (its HWY_TARGET_INCLUDE): a plain
// function per target returning that target's kernel table, for HWY_EXPORT. Not for
// direct use.

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

inline const Kernels* GetKernelTable() { return GetKernelsT<0>(); }

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_EXPORT_INL_H_ toggle
