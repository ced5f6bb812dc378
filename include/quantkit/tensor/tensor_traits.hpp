// tensor_traits: the one customization point through which quantkit reads and writes users'
// tensors. Specialize it for your type (see examples/custom_tensor.cpp):
//
//   template <> struct quantkit::tensor_traits<MyTensor> {
//     using value_type = float;                       // const float for read-only types
//     static constexpr int rank = 2;                  // or quantkit::dynamic_rank
//     static value_type* data(MyTensor& t);           // may take const MyTensor& instead
//     static quantkit::Dims shape(const MyTensor& t);
//     static quantkit::Dims strides(const MyTensor& t);  // in elements; optional: row-major
//   };
#pragma once

#include <type_traits>
#include <utility>

#include "quantkit/tensor/view.hpp"

namespace quantkit {

template <class T, class Enable = void>
struct tensor_traits;  // undefined: a type without a specialization is not a tensor

template <class T, int R>
struct tensor_traits<View<T, R>> {
  using value_type = T;
  static constexpr int rank = R;
  static T* data(const View<T, R>& v) { return v.data(); }
  static Dims shape(const View<T, R>& v) { return v.shape(); }
  static Dims strides(const View<T, R>& v) { return v.strides(); }
  static std::string name(const View<T, R>& v) { return v.name(); }
};

namespace detail {
template <class T, class = void>
struct has_traits : std::false_type {};
template <class T>
struct has_traits<T, std::void_t<typename tensor_traits<T>::value_type,
                                 decltype(tensor_traits<T>::rank),
                                 decltype(tensor_traits<T>::data(std::declval<T&>())),
                                 decltype(tensor_traits<T>::shape(std::declval<const T&>()))>>
    : std::true_type {};

template <class Tr, class T, class = void>
struct has_strides : std::false_type {};
template <class Tr, class T>
struct has_strides<Tr, T, std::void_t<decltype(Tr::strides(std::declval<const T&>()))>>
    : std::true_type {};

template <class Tr, class T, class = void>
struct has_name : std::false_type {};
template <class Tr, class T>
struct has_name<Tr, T, std::void_t<decltype(Tr::name(std::declval<const T&>()))>>
    : std::true_type {};
}  // namespace detail

template <class T>
inline constexpr bool is_tensor_v = detail::has_traits<std::remove_cv_t<std::remove_reference_t<T>>>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
template <class T>
concept Tensor = is_tensor_v<T>;
#endif

template <class T>
using tensor_value_t = typename tensor_traits<std::remove_cv_t<std::remove_reference_t<T>>>::value_type;

// Any adapted tensor -> View. A const tensor gives a view of const elements.
template <class T>
auto make_view(T&& t) {
  using Bare = std::remove_cv_t<std::remove_reference_t<T>>;
  static_assert(is_tensor_v<Bare>,
                "quantkit: this type is not an adapted tensor; specialize quantkit::tensor_traits "
                "for it (see tensor/tensor_traits.hpp) or wrap it with quantkit::with_shape()");
  using Tr = tensor_traits<Bare>;
  using Elem = std::remove_pointer_t<decltype(Tr::data(t))>;
  using V = std::conditional_t<std::is_const_v<std::remove_reference_t<T>>, const Elem, Elem>;
  Dims shape = Tr::shape(t);
  Dims strides;
  if constexpr (detail::has_strides<Tr, Bare>::value)
    strides = Tr::strides(t);
  else
    strides = contiguous_strides(shape);
  std::string name;
  if constexpr (detail::has_name<Tr, Bare>::value) name = Tr::name(t);
  return View<V, Tr::rank>(Tr::data(t), shape, strides, std::move(name));
}

}  // namespace quantkit
