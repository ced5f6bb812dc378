// Per-target kernel: out[i] = table[in[i]] over bytes — a 256-entry table, such as an integer
// requantization the executor folds into the op before it. AVX-512 VBMI (AVX3_DL): two
// 128-entry byte permutes and a select by the top bit per 64 bytes, masked loads/stores for the
// tail. Other vector targets: the 16 rows of 16 entries, each a byte shuffle by the low nibble
// kept where the high nibble matches. SCALAR: the plain loop. `in` may equal `out`.

#if defined(QUANTKIT_SIMD_LOOKUP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QUANTKIT_SIMD_LOOKUP_INL_H_
#undef QUANTKIT_SIMD_LOOKUP_INL_H_
#else
#define QUANTKIT_SIMD_LOOKUP_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <hwy/highway.h>

#include "quantkit/simd/abi.hpp"
#include "quantkit/simd/common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace quantkit {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// One vector of bytes through the 16 rows of the table.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V LookupByRows(D d, const std::uint8_t* HWY_RESTRICT table, V v) {
  const V low = hn::And(v, hn::Set(d, std::uint8_t{0x0F}));
  const V high = hn::ShiftRight<4>(v);
  V r = hn::Zero(d);
  for (int h = 0; h < 16; ++h) {
    const V row = hn::LoadDup128(d, table + 16 * h);
    r = hn::IfThenElse(hn::Eq(high, hn::Set(d, static_cast<std::uint8_t>(h))),
                       hn::TableLookupBytes(row, low), r);
  }
  return r;
}
#endif

template <int kUnused = 0>
inline void LookupBytes(const std::uint8_t* table, const std::uint8_t* in, std::uint8_t* out,
                        std::size_t n) {
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX3_DL
  const __m512i t0 = _mm512_loadu_si512(table);
  const __m512i t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128);
  const __m512i t3 = _mm512_loadu_si512(table + 192);
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i v = _mm512_loadu_si512(in + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);  // entries 0..127 (index bits 0-6)
    const __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);  // entries 128..255
    _mm512_storeu_si512(out + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
  if (i < n) {
    const __mmask64 m = (std::uint64_t{1} << (n - i)) - 1;  // n - i < 64
    const __m512i v = _mm512_maskz_loadu_epi8(m, in + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
    const __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_mask_storeu_epi8(out + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
#elif HWY_TARGET == HWY_SCALAR
  for (std::size_t i = 0; i < n; ++i) out[i] = table[in[i]];
#else
  const hn::ScalableTag<std::uint8_t> d;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(LookupByRows(d, table, hn::LoadU(d, in + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN std::uint8_t buf[kMaxLanes<std::uint8_t>] = {};
    std::memcpy(buf, in + i, n - i);
    hn::Store(LookupByRows(d, table, hn::Load(d, buf)), d, buf);
    std::memcpy(out + i, buf, n - i);
  }
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace quantkit
HWY_AFTER_NAMESPACE();

#endif  // QUANTKIT_SIMD_LOOKUP_INL_H_ toggle
