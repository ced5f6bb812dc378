// Contiguous buffers (std::vector, std::array, std::span, raw pointers) given a shape.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>
#if __has_include(<span>) && __cplusplus >= 202002L
#include <span>
#endif

#include "quantkit/tensor/view.hpp"

namespace quantkit {

// A row-major view of `count` elements at `data` with `shape`; the shape must cover exactly
// the buffer.
template <class T>
View<T> with_shape(T* data, std::int64_t count, Dims shape, std::string name = {}) {
  if (shape.product() != count)
    detail::fail(detail::describe_tensor(name), ": shape ", shape.to_string(), " holds ",
                 shape.product(), " elements; the buffer has ", count);
  return View<T>(data, shape, contiguous_strides(shape), std::move(name));
}

template <class T, class A>
View<T> with_shape(std::vector<T, A>& v, Dims shape, std::string name = {}) {
  return with_shape(v.data(), static_cast<std::int64_t>(v.size()), shape, std::move(name));
}
template <class T, class A>
View<const T> with_shape(const std::vector<T, A>& v, Dims shape, std::string name = {}) {
  return with_shape(v.data(), static_cast<std::int64_t>(v.size()), shape, std::move(name));
}
// A flat vector is a rank-1 tensor.
template <class T, class A>
View<T> as_tensor(std::vector<T, A>& v, std::string name = {}) {
  return with_shape(v, Dims{static_cast<std::int64_t>(v.size())}, std::move(name));
}
template <class T, class A>
View<const T> as_tensor(const std::vector<T, A>& v, std::string name = {}) {
  return with_shape(v, Dims{static_cast<std::int64_t>(v.size())}, std::move(name));
}

#if defined(__cpp_lib_span) && __cpp_lib_span >= 202002L
template <class T, std::size_t E>
View<T> with_shape(std::span<T, E> s, Dims shape, std::string name = {}) {
  return with_shape(s.data(), static_cast<std::int64_t>(s.size()), shape, std::move(name));
}
#endif

}  // namespace quantkit
