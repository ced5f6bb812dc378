// A program that uses quantkit the way a downstream project would: the umbrella
// header, a Scheme, a Quantizer, and a std::vector wrapped by with_shape().
#include <quantkit/quantkit.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  using Scheme = quantkit::Scheme<quantkit::Int<8>>;
  quantkit::Quantizer<Scheme> q;
  q.set_range(-1.f, 1.f);

  const std::vector<float> x = {-1.f, -0.5f, 0.f, 0.25f, 0.3f, 1.f};
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<quantkit::Quantizer<Scheme>::storage_type> codes(x.size());
  std::vector<float> back(x.size());
  q.quantize(quantkit::with_shape(x, {n}), quantkit::with_shape(codes, {n}));
  q.dequantize(quantkit::with_shape(codes, {n}), quantkit::with_shape(back, {n}));

  const float scale = q.params().scale.at(0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(std::fabs(back[i] - x[i]) <= 0.5f * scale * 1.001f)) {
      std::fprintf(stderr, "x[%zu] = %g came back as %g (scale %g)\n", i, double(x[i]),
                   double(back[i]), double(scale));
      return 1;
    }
  }
  std::printf("quantkit %s consumer: %zu values, scale %g, ok\n", quantkit::version, x.size(),
              double(scale));
  return 0;
}
