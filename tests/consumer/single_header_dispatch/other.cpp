// A second translation unit that includes only the core single header: it must pick up the
// runtime dispatch compiled into main.cpp (a weak reference resolved at link time).
#include <quantkit/quantkit.hpp>

const char* other_tu_active_target() {
  return quantkit::simd::dynamic_dispatch() ? quantkit::simd::active_kernels().name : "static";
}
