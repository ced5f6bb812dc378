// Which kernels run: the static target's (always available, header-only, no libhwy) or the
// best target of the CPU, chosen at run time, when quantkit/simd/implementation.hpp is
// compiled into the program (it needs -lhwy).
//
//   Static dispatch (default): kernels for HWY_STATIC_TARGET, the best target the compiler
//     flags of this translation unit allow (-march=native -DHWY_WANT_AVX3_DL: AVX3/AVX3_DL;
//     -march=haswell -maes: AVX2; plain x86-64: SCALAR with GCC 12, EMU128 with Clang).
//   Dynamic dispatch: one .cpp of the program does
//       #define QUANTKIT_SIMD_IMPLEMENTATION
//       #include <quantkit/simd/implementation.hpp>
//     and the program links libhwy. With GCC/Clang on ELF platforms every other translation
//     unit picks it up automatically (a weak reference); define QUANTKIT_SIMD_DYNAMIC in every
//     translation unit to make the reference strong (a link error if the implementation is
//     missing, and needed when it lives in a static library), or QUANTKIT_SIMD_STATIC to
//     ignore it. Both modes give bit-identical results.
//
// In static mode, compile every translation unit that uses quantkit with the same target
// flags (Highway's rule for inline code). With QUANTKIT_SIMD_DYNAMIC no translation unit but
// the implementation compiles kernels: the static target's are not instantiated (most of a
// header-only user's compile time: 51 s -> 14 s for examples/readme_example.cpp, GCC -O2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <hwy/highway.h>

#include "quantkit/simd/abi.hpp"
#include "quantkit/simd/kernels-inl.h"

#if defined(QUANTKIT_SIMD_DYNAMIC) && defined(QUANTKIT_SIMD_STATIC)
#error "quantkit: define at most one of QUANTKIT_SIMD_DYNAMIC and QUANTKIT_SIMD_STATIC"
#endif

#if defined(QUANTKIT_SIMD_DYNAMIC)
#define QUANTKIT_SIMD_DYNAMIC_REF 2  // strong reference to the implementation
#define QUANTKIT_SIMD_DYNAMIC_DECL
#elif !defined(QUANTKIT_SIMD_STATIC) && (defined(__GNUC__) || defined(__clang__)) && \
    defined(__ELF__)
#define QUANTKIT_SIMD_DYNAMIC_REF 1  // weak reference: used when linked in
#define QUANTKIT_SIMD_DYNAMIC_DECL __attribute__((weak))
#else
#define QUANTKIT_SIMD_DYNAMIC_REF 0  // static dispatch only
#endif

namespace quantkit {
namespace simd {
namespace detail {
#if QUANTKIT_SIMD_DYNAMIC_REF
// Defined by quantkit/simd/implementation.hpp, in the namespace of its ABI version (abi.hpp:
// an implementation of another layout is another symbol).
inline namespace QUANTKIT_SIMD_ABI_NAMESPACE {
QUANTKIT_SIMD_DYNAMIC_DECL const Kernels* dynamic_kernels() noexcept;
QUANTKIT_SIMD_DYNAMIC_DECL const Kernels* dynamic_kernels_for(std::int64_t target) noexcept;
QUANTKIT_SIMD_DYNAMIC_DECL std::size_t dynamic_available(const Kernels** out,
                                                         std::size_t capacity) noexcept;
}  // namespace QUANTKIT_SIMD_ABI_NAMESPACE
#endif

inline bool dynamic_linked() noexcept {
#if QUANTKIT_SIMD_DYNAMIC_REF == 2
  return true;
#elif QUANTKIT_SIMD_DYNAMIC_REF == 1
  const Kernels* (*f)() noexcept = &dynamic_kernels;
  return f != nullptr;
#else
  return false;
#endif
}
}  // namespace detail

// The kernels of this translation unit's static target (header-only, no libhwy needed).
template <int kUnused = 0>
const Kernels& static_kernels() {
  return *HWY_STATIC_DISPATCH(GetKernelsT)<kUnused>();
}

// True when the kernels are chosen at run time (the implementation is linked in).
inline bool dynamic_dispatch() noexcept { return detail::dynamic_linked(); }

// The kernels every quantkit::simd function uses by default: the CPU's best compiled target
// under dynamic dispatch (honouring hwy::SetSupportedTargetsForTest / hwy::DisableTargets),
// else the static target.
template <int kUnused = 0>
const Kernels& active_kernels() {
#if QUANTKIT_SIMD_DYNAMIC_REF == 2
  return *detail::dynamic_kernels();
#else
#if QUANTKIT_SIMD_DYNAMIC_REF
  if (detail::dynamic_linked()) return *detail::dynamic_kernels();
#endif
  return static_kernels<kUnused>();
#endif
}

// The kernels of one target (HWY_AVX3, HWY_AVX2, HWY_SSE4, HWY_SCALAR, ...), or nullptr when
// that target was not compiled or the CPU does not support it. Without dynamic dispatch only
// the static target exists.
template <int kUnused = 0>
const Kernels* kernels_for(std::int64_t target) {
#if QUANTKIT_SIMD_DYNAMIC_REF == 2
  return detail::dynamic_kernels_for(target);
#else
#if QUANTKIT_SIMD_DYNAMIC_REF
  if (detail::dynamic_linked()) return detail::dynamic_kernels_for(target);
#endif
  return target == HWY_STATIC_TARGET ? &static_kernels<kUnused>() : nullptr;
#endif
}

// Every compiled target the CPU supports, best first.
template <int kUnused = 0>
std::vector<const Kernels*> available_kernels() {
#if QUANTKIT_SIMD_DYNAMIC_REF
  if (detail::dynamic_linked()) {
    const Kernels* list[64];
    const std::size_t n = detail::dynamic_available(list, 64);
    return std::vector<const Kernels*>(list, list + n);
  }
#endif
#if QUANTKIT_SIMD_DYNAMIC_REF != 2
  return {&static_kernels<kUnused>()};
#else
  return {};  // not reached: dynamic_linked() is true
#endif
}

}  // namespace simd
}  // namespace quantkit
