// The single-header distribution with runtime dispatch: this translation unit is the program's
// SIMD implementation (quantkit_simd_implementation.hpp, then the core single header), built
// with -Isingle_include only and linked with libhwy. Every compiled target the CPU runs must
// quantize a case with ties, saturation and non-finite values exactly as the scalar reference.
#define QUANTKIT_SIMD_IMPLEMENTATION
#include <quantkit/quantkit_simd_implementation.hpp>
#include <quantkit/quantkit.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <cstring>
#include <vector>

const char* other_tu_active_target();  // other.cpp

int main() {
  namespace qks = quantkit::simd;
  if (!qks::dynamic_dispatch()) {
    std::fprintf(stderr, "single header: runtime dispatch is not linked in\n");
    return 1;
  }
  std::vector<float> x;
  for (int i = -300; i <= 300; ++i) x.push_back(0.25f * static_cast<float>(i));  // .25/.5/.75
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  const float scale = 0.5f;
  const std::int32_t zero_point = 3;

  std::vector<std::int8_t> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    want[i] = static_cast<std::int8_t>(quantkit::ref::quantize_value(
        x[i], scale, quantkit::ScaleApplicationKind::divide, zero_point, quantkit::IntRange{-128, 127},
        quantkit::RoundHalfEven{}));
  const std::vector<const qks::Kernels*> targets = qks::available_kernels();
  for (const qks::Kernels* k : targets) {
    std::vector<std::int8_t> got(x.size());
    qks::quantize(x.data(), x.size(), scale, zero_point, got.data(), k);
    for (std::size_t i = 0; i < x.size(); ++i)
      if (got[i] != want[i]) {
        std::fprintf(stderr, "single header, target %s: x[%zu] = %g gave %d, reference %d\n",
                     k->name, i, double(x[i]), int(got[i]), int(want[i]));
        return 1;
      }
    std::printf("%s ", k->name);
  }
  if (std::strcmp(other_tu_active_target(), qks::active_kernels().name) != 0) {
    std::fprintf(stderr, "single header: another translation unit runs %s, this one %s\n",
                 other_tu_active_target(), qks::active_kernels().name);
    return 1;
  }
  std::printf("\nquantkit %s single header, runtime dispatch: %zu targets agree with the reference "
              "(best: %s)\n", quantkit::version, targets.size(), qks::active_kernels().name);
  return 0;
}
