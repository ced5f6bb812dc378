// expect: construct the Quantizer with Quantizer\(name, rounding\)
#include <quantkit/quantkit.hpp>
#include <random>
using S = quantkit::Scheme<quantkit::Int<8>, quantkit::RoundStochastic<std::mt19937>>;
int main() {
  std::mt19937 gen(1);
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
  quantkit::Quantizer<S> q;
#else
  quantkit::Quantizer<S> q("x", quantkit::RoundStochastic<std::mt19937>(gen));
#endif
  q.set_range(-1.0f, 1.0f);
  return q.params().size() == 1 ? 0 : 1;
}
