// expect: formats have 2\.\.16 bits
#include <quantkit/quantkit.hpp>
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
using F = quantkit::Int<17>;
#else
using F = quantkit::Int<16>;
#endif
int main() { return F::qmax > 0 ? 0 : 1; }
