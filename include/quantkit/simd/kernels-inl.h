// Per-target entry: includes every kernel of this target and describes them in one table,
// quantkit::simd::HWY_NAMESPACE::GetKernelsT<0>(). A template, so a translation unit that
// includes quantkit but never calls a kernel instantiates nothing; the entry points it lists
// (Quantize, Requantize, ...) are templates (kUnused) for the same reason: as inline functions
// they named every kernel, which every translation unit instantiated in its front end.
//
// This is the header quantkit/simd/implementation.hpp re-includes once per target
// (HWY_TARGET_INCLUDE); quantkit/simd/dispatch.hpp includes it once, for the static target.

#if defined(QUANTKIT_SIMD_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QUANTKIT_SIMD_KERNELS_INL_H_
#undef QUANTKIT_SIMD_KERNELS_INL_H_
#else
#define QUANTKIT_SIMD_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include "quantkit/simd/abi.hpp"
#include "quantkit/simd/common-inl.h"
#include "quantkit/simd/gemm-inl.h"
#include "quantkit/simd/gemm_f32-inl.h"
#include "quantkit/simd/lookup-inl.h"
#include "quantkit/simd/quantize-inl.h"
#include "quantkit/simd/reduce-inl.h"
#include "quantkit/simd/requantize-inl.h"
#include "quantkit/simd/window-inl.h"

HWY_BEFORE_NAMESPACE();
namespace quantkit {
namespace simd {
namespace HWY_NAMESPACE {

template <int kUnused = 0>
const Kernels* GetKernelsT() {
  static const Kernels kernels = [] {
    Kernels k;
    k.target = HWY_TARGET;
    k.name = hwy::TargetName(HWY_TARGET);
    k.quantize = &Quantize<kUnused>;
    k.dequantize = &Dequantize<kUnused>;
    k.requantize = &Requantize<kUnused>;
    k.quantize_params = &QuantizeParams<kUnused>;
    k.requant_constants = &RequantConstants<kUnused>;
    k.pack = &Pack<kUnused>;
    k.unpack = &Unpack<kUnused>;
    k.minmax = &MinMax<kUnused>;
    k.absmax = &AbsMax<kUnused>;
    k.minmax_params = &MinMaxParams<kUnused>;
    k.histogram = &Histogram<kUnused>;
    k.grid_histogram = &GridHistogram<kUnused>;
    k.gemm = GetGemmKernelsT<0>();
    k.gemm_f32 = &GemmF32<0>;
    k.gemm_f32_pack_b = &GemmF32PackB<0>;
    k.gemm_f32_nr = &GemmF32PanelWidth<0>;
    k.lookup_bytes = &LookupBytes<kUnused>;
    k.max_pairs = &MaxPairs<kUnused>;
    k.depthwise_rows = &DepthwiseRows<kUnused>;
    k.depthwise_rows_f32 = &DepthwiseRowsF32<kUnused>;
    return k;
  }();
  return &kernels;
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_KERNELS_INL_H_ toggle
