// quantkit's SIMD kernels with runtime dispatch (placeholder until include/quantkit/simd/ lands).
#include "cases.hpp"
namespace qk_bench {
void add_simd_impls(std::vector<Impl>&) {}
}  // namespace qk_bench
