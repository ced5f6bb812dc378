// expect: BlockSize must be positive
#include <quantkit/quantkit.hpp>
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
using G = quantkit::PerGroup<1, 0>;
#else
using G = quantkit::PerGroup<1, 32>;
#endif
int main() { return G::axis == 1 ? 0 : 1; }
