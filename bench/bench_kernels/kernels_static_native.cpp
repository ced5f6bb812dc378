// quantkit's SIMD kernels with static dispatch: compiled for this translation unit's target
// (-march=native -DHWY_WANT_AVX3_DL: *_native.cpp in bench/CMakeLists.txt; AVX3_DL here), the
// way a header-only user without libhwy gets them. Row name: simd_static.
//
// Only the per-target kernel table is compiled here (quantkit::simd::HWY_NAMESPACE, a
// namespace no other translation unit of bench_kernels compiles); the public front end that
// prepares its arguments runs from kernels_dispatch.cpp. Instantiating quantkit::simd's
// inline templates here too would give the linker two copies built for different targets.
#include "cases.hpp"

#if __has_include("quantkit/simd/kernels-inl.h")
#include <hwy/highway.h>

#include "quantkit/simd/kernels-inl.h"

namespace qk_bench {

void add_simd_static_impls(std::vector<Impl>& impls) {
  const quantkit::simd::Kernels* k = quantkit::simd::HWY_NAMESPACE::GetKernelsT<0>();
  Impl impl;
  impl.name = "simd_static";
  impl.make = [k](const Case& c) { return simd_front_run(*k, c); };
  impls.push_back(impl);
}

}  // namespace qk_bench
#else
namespace qk_bench {
void add_simd_static_impls(std::vector<Impl>&) {}
}  // namespace qk_bench
#endif
