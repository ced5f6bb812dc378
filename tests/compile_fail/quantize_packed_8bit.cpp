// expect: only 2- and 4-bit formats pack into bytes
#include <quantkit/quantkit.hpp>
#include <vector>
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
using S = quantkit::Scheme<quantkit::Int<8>>;
#else
using S = quantkit::Scheme<quantkit::Int<4>>;
#endif
int main() {
  quantkit::Quantizer<S> q;
  q.set_range(-1.0f, 1.0f);
  std::vector<float> x(4, 0.5f);
  return q.quantize_packed(quantkit::as_tensor(x)).empty() ? 1 : 0;
}
