// Eigen adapters: dense matrices/arrays, Maps and direct-access blocks (row- or column-major,
// any inner/outer stride) as rank-2 tensors; Eigen::Tensor and TensorMap as rank-N tensors.
// Include this header explicitly: the core does not depend on Eigen.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <type_traits>
#include <utility>
#if __has_include(<unsupported/Eigen/CXX11/Tensor>)
#include <unsupported/Eigen/CXX11/Tensor>
#define QUANTKIT_HAVE_EIGEN_TENSOR 1
#endif

#include "quantkit/tensor/tensor_traits.hpp"

namespace quantkit {
namespace detail {
template <class T>
constexpr bool is_eigen_direct_dense() {
  if constexpr (std::is_base_of_v<Eigen::DenseBase<T>, T>)
    return (int(Eigen::internal::traits<T>::Flags) & Eigen::DirectAccessBit) != 0;
  else
    return false;
}
}  // namespace detail

// Matrix, Array, Map, Ref and direct-access blocks: shape (rows, cols).
template <class T>
struct tensor_traits<T, std::enable_if_t<detail::is_eigen_direct_dense<T>()>> {
  using pointer = decltype(std::declval<T&>().data());
  using value_type = std::remove_pointer_t<pointer>;
  static constexpr int rank = 2;
  static pointer data(T& m) { return m.data(); }
  static auto data(const T& m) { return m.data(); }
  static Dims shape(const T& m) { return Dims{m.rows(), m.cols()}; }
  static Dims strides(const T& m) {
    const std::int64_t inner = m.innerStride(), outer = m.outerStride();
    return T::IsRowMajor ? Dims{outer, inner} : Dims{inner, outer};
  }
};

#ifdef QUANTKIT_HAVE_EIGEN_TENSOR
namespace detail {
template <class Tensor>
Dims eigen_tensor_shape(const Tensor& t) {
  Dims d;
  d.rank = static_cast<int>(Tensor::NumIndices);
  for (int i = 0; i < d.rank; ++i) d[i] = static_cast<std::int64_t>(t.dimension(i));
  return d;
}
template <class Tensor>
Dims eigen_tensor_strides(const Tensor& t) {
  const Dims shape = eigen_tensor_shape(t);
  if (int(Tensor::Layout) == int(Eigen::RowMajor)) return contiguous_strides(shape);
  Dims s;
  s.rank = shape.rank;
  std::int64_t step = 1;
  for (int i = 0; i < shape.rank; ++i) {
    s[i] = step;
    step *= shape[i];
  }
  return s;
}
}  // namespace detail

template <class Scalar, int N, int Options, class Index>
struct tensor_traits<Eigen::Tensor<Scalar, N, Options, Index>> {
  using T = Eigen::Tensor<Scalar, N, Options, Index>;
  using value_type = Scalar;
  static constexpr int rank = N;
  static Scalar* data(T& t) { return t.data(); }
  static const Scalar* data(const T& t) { return t.data(); }
  static Dims shape(const T& t) { return detail::eigen_tensor_shape(t); }
  static Dims strides(const T& t) { return detail::eigen_tensor_strides(t); }
};

template <class PlainTensor, int MapOptions, template <class> class MakePointer>
struct tensor_traits<Eigen::TensorMap<PlainTensor, MapOptions, MakePointer>> {
  using T = Eigen::TensorMap<PlainTensor, MapOptions, MakePointer>;
  using value_type = std::remove_pointer_t<decltype(std::declval<T&>().data())>;
  static constexpr int rank = static_cast<int>(T::NumIndices);
  static value_type* data(const T& t) { return t.data(); }
  static Dims shape(const T& t) { return detail::eigen_tensor_shape(t); }
  static Dims strides(const T& t) { return detail::eigen_tensor_strides(t); }
};
#endif

}  // namespace quantkit
