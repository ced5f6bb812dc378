// expect: with an unsigned format use Symmetric
#include <quantkit/quantkit.hpp>
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
using S = quantkit::Scheme<quantkit::UInt<8>, quantkit::SymmetricRestricted>;
#else
using S = quantkit::Scheme<quantkit::UInt<8>, quantkit::Symmetric>;
#endif
int main() { return S::range().qmax > 0 ? 0 : 1; }
