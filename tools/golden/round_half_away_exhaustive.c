/* The half-away rounding of quantkit's SIMD kernels (include/quantkit/simd/common-inl.h,
 * RoundHalfAwayOp): copysign(trunc(|t| + pred(0.5)), t), the sequence GCC emits when it
 * vectorizes roundf. This program checks it against roundf (std::round, what quantkit::ref's
 * RoundHalfAway calls) on every one of the 2^32 float bit patterns except NaNs, bit for bit
 * (so the sign of zero too). The kernels run the same IEEE operations (an add rounding to
 * nearest even, an exact truncation, sign bit operations) on every Highway target.
 * Not part of the build (about a minute of one core):
 *   gcc -O2 -fno-builtin tools/golden/round_half_away_exhaustive.c -o /tmp/rha -lm && /tmp/rha
 * Result on 2026-11-26: 4278190082 non-NaN floats checked, 0 differ. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  const float pred_half = 0x1.fffffep-2f;
  if (pred_half != nextafterf(0.5f, 0.0f)) {
    puts("pred(0.5) is not 0x1.fffffep-2");
    return 1;
  }
  uint64_t checked = 0, differ = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; ++u) {
    const uint32_t bits = (uint32_t)u;
    float x;
    memcpy(&x, &bits, sizeof x);
    if (isnan(x)) continue;
    const float want = roundf(x);
    const float got = copysignf(truncf(fabsf(x) + pred_half), x);
    uint32_t bw, bg;
    memcpy(&bw, &want, sizeof bw);
    memcpy(&bg, &got, sizeof bg);
    ++checked;
    if (bw != bg) {
      if (differ < 5) printf("x = %a: roundf %a, kernel sequence %a\n", x, want, got);
      ++differ;
    }
  }
  printf("%llu non-NaN floats checked, %llu differ\n", (unsigned long long)checked, (unsigned long long)differ);
  return differ != 0;
}
