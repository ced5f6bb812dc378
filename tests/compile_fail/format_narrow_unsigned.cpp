// expect: narrow range is defined for signed formats only
#include <quantkit/quantkit.hpp>
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
using F = quantkit::IntFormat<8, false, true>;
#else
using F = quantkit::IntFormat<8, true, true>;
#endif
int main() { return F::qmax > 0 ? 0 : 1; }
