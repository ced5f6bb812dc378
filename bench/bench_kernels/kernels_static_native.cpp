// quantkit's SIMD kernels with static dispatch for -march=native (placeholder).
#include "cases.hpp"
namespace qk_bench {
void add_simd_static_impls(std::vector<Impl>&) {}
}  // namespace qk_bench
