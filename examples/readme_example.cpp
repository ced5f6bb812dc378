#include <quantkit/quantkit.hpp>
#include <quantkit/tensor/eigen.hpp>
#include <cstdio>
namespace qk = quantkit;

int main() {
  Eigen::MatrixXf w = Eigen::MatrixXf::Random(64, 256);  // rows = output channels
  // A scheme is a bundle of policies, in any order; every slot has a default.
  using W8 = qk::Scheme<qk::Int<8>, qk::PerChannel<0>, qk::SymmetricRestricted>;
  qk::Quantizer<W8> wq("fc1.weight");
  wq.observe(w);                                   // min-max observer by default
  Eigen::Matrix<std::int8_t, -1, -1> w8(64, 256);
  wq.quantize(w, w8);                              // bit-identical to qk::ref::quantize
  Eigen::MatrixXf back(64, 256);
  wq.dequantize(w8, back);
  std::printf("scale[0] %.6f, max |error| %.6f\n", wq.params().scale[0],
              (back - w).cwiseAbs().maxCoeff());
  // One word changes the scheme: 4-bit, blocks of 32 along the input axis, packed.
  qk::Quantizer<qk::Scheme<qk::Int<4>, qk::PerGroup<1, 32>, qk::Symmetric>> w4("fc1.weight");
  w4.observe(w);
  std::printf("int4: %zu scales, %zu bytes\n", w4.params().size(), w4.quantize_packed(w).size());
}
