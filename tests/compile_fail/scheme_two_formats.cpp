// expect: two formats given
#include <quantkit/quantkit.hpp>
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
using S = quantkit::Scheme<quantkit::Int<8>, quantkit::UInt<8>>;
#else
using S = quantkit::Scheme<quantkit::UInt<8>>;
#endif
int main() { return S::range().qmax > 0 ? 0 : 1; }
