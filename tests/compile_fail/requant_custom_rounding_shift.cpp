// expect: PowerOfTwo<Rounding> needs a rounding policy with an exact integer shift_right
#include <quantkit/quantkit.hpp>
#include <cmath>
struct MyRounding {
  using category = quantkit::category::rounding;
  float operator()(float t) const { return std::floor(t); }
};
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
using R = quantkit::PowerOfTwo<MyRounding>;
#else
using R = quantkit::PowerOfTwo<quantkit::RoundFloor>;
#endif
int main() { return R::apply(8, R::make(0.5)) == 4 ? 0 : 1; }
