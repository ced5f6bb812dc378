// expect: the tensor's rank has no such axis
// PerChannel<2> on a rank-2 Eigen matrix: the axis is checked against the static rank.
#include <quantkit/quantkit.hpp>
#include <quantkit/tensor/eigen.hpp>
#ifndef QUANTKIT_COMPILE_FAIL_CONTROL
using S = quantkit::Scheme<quantkit::Int<8>, quantkit::PerChannel<2>>;
#else
using S = quantkit::Scheme<quantkit::Int<8>, quantkit::PerChannel<1>>;
#endif
int main() {
  Eigen::MatrixXf w = Eigen::MatrixXf::Ones(2, 3);
  quantkit::Quantizer<S> q("w");
  q.observe(w);
  return q.params().size() > 0 ? 0 : 1;
}
