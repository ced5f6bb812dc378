// A rounding policy the library does not ship — round half toward zero — plugged into a
// Scheme without editing quantkit. A policy needs a category and operator()(float).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <quantkit/quantkit.hpp>

namespace qk = quantkit;

struct RoundHalfTowardZero {
  using category = qk::category::rounding;
  float operator()(float t) const {
    const float f = std::trunc(t);
    return std::fabs(t - f) > 0.5f ? f + std::copysign(1.0f, t) : f;
  }
};

int main() {
  std::vector<float> x = {-1.25f, -0.75f, -0.25f, 0.25f, 0.75f, 1.25f};
  qk::Quantizer<qk::Scheme<qk::Int<8>, RoundHalfTowardZero>> mine("x");
  qk::Quantizer<qk::Scheme<qk::Int<8>, qk::RoundHalfEven>> onnx("x");
  qk::QuantParams p;
  p.scale = {0.5f};
  p.zero_point = {0};
  p.range = {-128, 127};
  mine.set_params(p);
  onnx.set_params(p);
  std::vector<std::int8_t> a(x.size()), b(x.size());
  mine.quantize(qk::as_tensor(x), qk::as_tensor(a));
  onnx.quantize(qk::as_tensor(x), qk::as_tensor(b));
  std::printf("%8s %18s %12s\n", "x/scale", "half-toward-zero", "half-even");
  int differ = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::printf("%8.2f %18d %12d\n", x[i] / 0.5f, a[i], b[i]);
    differ += a[i] != b[i];
  }
  // -2.5 -> -2 and 2.5 -> 2 agree; -1.5 -> -1 vs -2, 0.5 -> 0 vs 0, 1.5 -> 1 vs 2 ...
  const bool expected = a == std::vector<std::int8_t>{-2, -1, 0, 0, 1, 2} && differ == 2;
  std::printf("%s\n", expected ? "custom rounding: OK" : "custom rounding: UNEXPECTED");
  return expected ? 0 : 1;
}
