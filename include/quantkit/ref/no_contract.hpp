// A float the compiler must materialize: keeps it from fusing a multiply with a following add
// (FMA contraction changes float results; GCC contracts across statements by default in GNU
// mode). Used where a result is defined as rounded products and rounded sums.
#pragma once

namespace quantkit {
namespace detail {

// (An empty asm statement the value must pass through; volatile elsewhere.)
inline float no_contract(float v) {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
  __asm__ volatile("" : "+x"(v));
  return v;
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
  __asm__ volatile("" : "+w"(v));
  return v;
#else
  volatile float t = v;
  return t;
#endif
}

}  // namespace detail
}  // namespace quantkit
