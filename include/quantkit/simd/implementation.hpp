// quantkit SIMD runtime dispatch: the implementation. Compile it into exactly ONE .cpp of the
// program and link libhwy (-lhwy, CMake: quantkit::dispatch or hwy::hwy):
//
//     #define QUANTKIT_SIMD_IMPLEMENTATION
//     #include <quantkit/simd/implementation.hpp>   // first quantkit/Highway include here
//
// It compiles every kernel once per Highway target (HWY_TARGETS: AVX3_DL with
// -DHWY_WANT_AVX3_DL, AVX3, AVX2, SSE4, SSSE3, and the SCALAR/EMU128 fallback on x86) and
// picks the CPU's best at run time (HWY_DYNAMIC_DISPATCH), for every translation unit of the
// program (see quantkit/simd/dispatch.hpp). Define HWY_COMPILE_ALL_ATTAINABLE before it to
// also compile the targets below the build's baseline (e.g. to compare them with -march=native).
//
// Split over several .cpp files (they compile in parallel; one holds everything otherwise): each
// part names the targets it compiles, and the one with QUANTKIT_SIMD_IMPLEMENTATION also holds
// the dispatch table, e.g.
//
//     // simd_avx3.cpp: the AVX-512 targets' kernels
//     #define QUANTKIT_SIMD_IMPLEMENTATION_PART
//     #define QUANTKIT_SIMD_IMPLEMENTATION_TARGETS (HWY_AVX3 | HWY_AVX3_DL)
//     #include <quantkit/simd/implementation.hpp>
//
//     // simd.cpp: every other target's kernels and the dispatch table
//     #define QUANTKIT_SIMD_IMPLEMENTATION
//     #define QUANTKIT_SIMD_IMPLEMENTATION_TARGETS (~(HWY_AVX3 | HWY_AVX3_DL))
//     #include <quantkit/simd/implementation.hpp>
//
// Every part is compiled with the same flags and Highway macros (HWY_TARGETS must be the same in
// all), and the masks together cover every target exactly once: a target no part compiles is
// an undefined reference to quantkit::simd::N_<TARGET>::GetKernelTable() at link time, one that
// two parts compile a multiple definition. The masks are expressions of Highway's target bits
// (HWY_AVX3_DL, HWY_AVX3, HWY_AVX2, HWY_SSE4, HWY_SSSE3, HWY_EMU128, HWY_SCALAR, ...),
// evaluated after Highway's headers; bits of targets this build does not compile are ignored.
#pragma once

#if defined(QUANTKIT_SIMD_IMPLEMENTATION) && defined(QUANTKIT_SIMD_IMPLEMENTATION_PART)
#error "quantkit/simd/implementation.hpp: define QUANTKIT_SIMD_IMPLEMENTATION in one .cpp of the implementation and QUANTKIT_SIMD_IMPLEMENTATION_PART in the others, not both in one"
#endif
#if !defined(QUANTKIT_SIMD_IMPLEMENTATION) && !defined(QUANTKIT_SIMD_IMPLEMENTATION_PART)
#error "quantkit/simd/implementation.hpp: #define QUANTKIT_SIMD_IMPLEMENTATION in the one .cpp that includes it (or QUANTKIT_SIMD_IMPLEMENTATION_PART in the further parts of a split implementation)"
#endif
#if defined(QUANTKIT_SIMD_IMPLEMENTATION_PART) && !defined(QUANTKIT_SIMD_IMPLEMENTATION_TARGETS)
#error "quantkit/simd/implementation.hpp: a QUANTKIT_SIMD_IMPLEMENTATION_PART compiles the targets QUANTKIT_SIMD_IMPLEMENTATION_TARGETS names: define it, e.g. (HWY_AVX3 | HWY_AVX3_DL), and leave those targets out of the other parts' masks"
#endif
#ifdef QUANTKIT_SIMD_STATIC
#error "quantkit/simd/implementation.hpp: QUANTKIT_SIMD_STATIC is defined; the implementation is for dynamic dispatch"
#endif
#ifdef HWY_TARGET_TOGGLE
#error "quantkit/simd/implementation.hpp: include it at file scope, not from a per-target header"
#endif

#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quantkit/simd/export-inl.h"
#include <hwy/foreach_target.h>  // must come before highway.h

#include <hwy/highway.h>

#include "quantkit/simd/export-inl.h"
#include "quantkit/simd/simd.hpp"

#if HWY_ONCE && defined(QUANTKIT_SIMD_IMPLEMENTATION)
namespace quantkit {
namespace simd {

HWY_EXPORT(GetKernelTable);

namespace detail {
inline namespace QUANTKIT_SIMD_ABI_NAMESPACE {  // (as dispatch.hpp declares them)

const Kernels* dynamic_kernels() noexcept { return HWY_DYNAMIC_DISPATCH(GetKernelTable)(); }

// The table entry of exactly that target: calling any other entry to ask for its target would
// run its code (an AVX-512 target's table is built with AVX-512 stores: SIGILL on AVX2 CPUs).
// Highway's table: entry 0 chooses, then one entry per dynamic target (ChosenTarget's bit
// order), then the fallback (SCALAR or EMU128).
const Kernels* dynamic_kernels_for(std::int64_t target) noexcept {
  if (target == 0 || (target & (target - 1)) != 0) return nullptr;  // one target bit
  if ((hwy::SupportedTargets() & HWY_TARGETS & target) == 0) return nullptr;
  const std::int64_t chosen =
      (target & (HWY_SCALAR | HWY_EMU128)) != 0 ? HWY_CHOSEN_TARGET_MASK_SCALAR : HWY_CHOSEN_TARGET_SHIFT(target);
  if (chosen == 0) return nullptr;
  const std::size_t index = hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<std::uint64_t>(chosen));
  constexpr std::size_t entries = sizeof(HWY_DISPATCH_TABLE(GetKernelTable)) / sizeof(HWY_DISPATCH_TABLE(GetKernelTable)[0]);
  if (index == 0 || index >= entries || HWY_DISPATCH_TABLE(GetKernelTable)[index] == nullptr) return nullptr;
  const Kernels* k = HWY_DISPATCH_TABLE(GetKernelTable)[index]();
  return k->target == target ? k : nullptr;
}

std::size_t dynamic_available(const Kernels** out, std::size_t capacity) noexcept {
  std::size_t n = 0;
  for (std::int64_t targets = hwy::SupportedTargets() & HWY_TARGETS; targets != 0 && n < capacity;
       targets &= targets - 1) {
    const std::int64_t target = targets & -targets;  // best remaining first
    if (const Kernels* k = dynamic_kernels_for(target)) out[n++] = k;
  }
  return n;
}

}  // namespace QUANTKIT_SIMD_ABI_NAMESPACE
}  // namespace detail
}  // namespace simd
}  // namespace quantkit
#endif  // HWY_ONCE
