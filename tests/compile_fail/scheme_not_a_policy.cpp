// expect: every argument must be a quantkit policy
#include <quantkit/quantkit.hpp>
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
using S = quantkit::Scheme<quantkit::Int<8>, float>;
#else
using S = quantkit::Scheme<quantkit::Int<8>>;
#endif
int main() { return S::range().qmax > 0 ? 0 : 1; }
