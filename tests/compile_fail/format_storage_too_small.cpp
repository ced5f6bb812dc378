// expect: Storage type is too small
// A 12-bit format cannot live in int8 storage.
#include <quantkit/quantkit.hpp>
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
using F = quantkit::IntFormat<12, true, false, std::int8_t>;
#else
using F = quantkit::IntFormat<12, true, false, std::int16_t>;
#endif
int main() { return F::qmax > 0 ? 0 : 1; }
