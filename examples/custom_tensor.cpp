// Adapting a tensor type quantkit has never seen: one tensor_traits specialization.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <quantkit/quantkit.hpp>

namespace qk = quantkit;

struct Feature {                      // the user's type: NHWC activations, rows padded
  int n, h, w, c, row_pitch;          // row_pitch in floats
  std::vector<float> data;
};

template <>
struct quantkit::tensor_traits<Feature> {
  using value_type = float;
  static constexpr int rank = 4;
  static float* data(Feature& f) { return f.data.data(); }
  static const float* data(const Feature& f) { return f.data.data(); }
  static qk::Dims shape(const Feature& f) { return {f.n, f.h, f.w, f.c}; }
  static qk::Dims strides(const Feature& f) { return {f.h * f.row_pitch, f.row_pitch, f.c, 1}; }
};

int main() {
  Feature f{1, 2, 2, 3, 8, std::vector<float>(16, 1e9f)};  // padding holds garbage
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 2; ++x)
      for (int ch = 0; ch < 3; ++ch) f.data[static_cast<std::size_t>(y * 8 + x * 3 + ch)] = 0.1f * (ch + 1) * (x + 2 * y + 1);
  qk::Quantizer<qk::Scheme<qk::UInt<8>, qk::PerChannel<3>>> q("feature");  // per channel, NHWC
  q.observe(f);
  for (std::size_t ch = 0; ch < 3; ++ch)
    std::printf("channel %zu: scale %.6f zero point %d\n", ch, q.params().scale[ch], q.params().zero_point[ch]);
  const bool padding_ignored = q.params().scale[2] < 0.01f;  // 1.2 / 255, not 1e9 / 255
  std::printf("%s\n", padding_ignored ? "custom tensor: OK" : "custom tensor: padding was read");
  return padding_ignored ? 0 : 1;
}
