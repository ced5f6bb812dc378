// graph::Tensor: the owning tensor the graph (initializers, constants) and the executor use:
// an element type, a shape and contiguous row-major bytes. Converts to quantkit::View for the
// reference functions and kernels, and is built from any View (so from any adapted user tensor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/graph/buffer_pool.hpp"
#include "quantkit/graph/dtype.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace detail {
// The allocator of tensor storage: resize() leaves new elements unset (default-initialization:
// what Tensor::uninitialized needs to skip the zero fill), and the bytes come from the thread's
// current graph::BufferPool when there is one (an Executor run), else operator new.
template <class T>
struct TensorStorageAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = TensorStorageAllocator<U>;
  };
  TensorStorageAllocator() = default;
  template <class U>
  TensorStorageAllocator(const TensorStorageAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T) - 16) throw std::bad_array_new_length();
    return static_cast<T*>(pool_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept { pool_release(p); }
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible<U>::value) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
}  // namespace detail

namespace graph {

// Number of elements of `shape`, failing (naming `what`) on negative extents or when the
// product exceeds `limit`.
inline std::int64_t checked_element_count(const Dims& shape, const std::string& what,
                                          std::int64_t limit = std::int64_t{1} << 40) {
  std::int64_t n = 1;
  for (int i = 0; i < shape.rank; ++i) {
    const std::int64_t e = shape[i];
    if (e < 0)
      detail::fail(what, ": extent ", e, " in dimension ", i, " of shape ", shape.to_string(),
                   "; expected >= 0");
    if (e != 0 && n > limit / e)
      detail::fail(what, ": shape ", shape.to_string(), " has more than ", limit,
                   " elements; expected a smaller tensor");
    n *= e;
  }
  return n;
}

template <class It>
Dims make_dims(It first, It last, const std::string& what) {
  const auto n = std::distance(first, last);
  if (n > max_rank) detail::fail(what, ": rank ", n, "; expected at most ", max_rank, " dimensions");
  return Dims::from(first, last);
}
inline Dims make_dims(const std::vector<std::int64_t>& v, const std::string& what = "shape") {
  return make_dims(v.begin(), v.end(), what);
}
inline std::vector<std::int64_t> to_vector(const Dims& d) {
  return std::vector<std::int64_t>(d.value.begin(), d.value.begin() + d.rank);
}


class Tensor {
 public:
  Tensor() = default;
  // Zero-filled.
  Tensor(DType dtype, const Dims& shape, std::string name = {}) : Tensor(dtype, shape, std::move(name), true) {}

  // Elements left unset: for outputs a kernel then writes in full (a large op output skips
  // a memset of its bytes). Reading an element before writing it is undefined.
  static Tensor uninitialized(DType dtype, const Dims& shape, std::string name = {}) {
    return Tensor(dtype, shape, std::move(name), false);
  }

  template <class T>
  static Tensor from_vector(const Dims& shape, const std::vector<T>& values, std::string name = {}) {
    Tensor t(dtype_of_v<T>, shape, std::move(name));
    if (static_cast<std::int64_t>(values.size()) != t.size())
      detail::fail(detail::describe_tensor(t.name_), ": ", values.size(), " values for shape ",
                   shape.to_string(), "; expected ", t.size());
    T* d = t.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) d[i] = values[i];
    return t;
  }
  template <class T>
  static Tensor scalar(T v, std::string name = {}) {
    return from_vector<T>(Dims{}, std::vector<T>{v}, std::move(name));
  }
  // Copies any view (strided or not) into a new contiguous tensor.
  template <class T, int R>
  static Tensor from_view(const View<T, R>& v) {
    using E = std::remove_const_t<T>;
    Tensor t(dtype_of_v<E>, v.shape(), v.name());
    E* out = t.data<E>();
    std::int64_t i = 0;
    for_each_index(v, [&](std::int64_t off, const Dims&) { out[i++] = v.data()[off]; });
    return t;
  }

  DType dtype() const { return dtype_; }
  const Dims& shape() const { return shape_; }
  int rank() const { return shape_.rank; }
  std::int64_t dim(int i) const { return shape_[i]; }
  std::int64_t size() const { return shape_.product(); }
  std::size_t nbytes() const { return nbytes_; }
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  bool empty() const { return dtype_ == DType::undefined; }

  void* raw() { return words_.data(); }
  const void* raw() const { return words_.data(); }

  template <class T>
  T* data() {
    check_type<T>();
    return reinterpret_cast<T*>(words_.data());
  }
  template <class T>
  const T* data() const {
    check_type<T>();
    return reinterpret_cast<const T*>(words_.data());
  }
  template <class T>
  View<T> view() {
    return View<T>(data<T>(), shape_, name_);
  }
  template <class T>
  View<const T> view() const {
    return View<const T>(data<T>(), shape_, name_);
  }
  template <class T>
  std::vector<T> to_vector() const {
    const T* d = data<T>();
    return std::vector<T>(d, d + size());
  }
  // Element i converted to double / int64 whatever the element type (for small parameter
  // tensors: scales, zero points, shapes, axes).
  double as_double(std::int64_t i) const {
    return visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      return static_cast<double>(data<T>()[i]);
    }, name_);
  }
  std::int64_t as_int64(std::int64_t i) const {
    return visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      return static_cast<std::int64_t>(data<T>()[i]);
    }, name_);
  }

  // Same bytes, new shape (same element count).
  Tensor reshaped(const Dims& shape) const {
    if (shape.product() != size())
      detail::fail(detail::describe_tensor(name_), ": cannot reshape ", shape_.to_string(), " to ",
                   shape.to_string(), "; expected the same number of elements");
    Tensor t = *this;
    t.shape_ = shape;
    return t;
  }

  friend bool operator==(const Tensor& a, const Tensor& b) {
    return a.dtype_ == b.dtype_ && a.shape_ == b.shape_ && a.nbytes_ == b.nbytes_ &&
           std::memcmp(a.raw(), b.raw(), a.nbytes_) == 0;
  }

 private:
  template <class T>
  void check_type() const {
    if (dtype_of_v<T> != dtype_)
      detail::fail(detail::describe_tensor(name_), ": element type is ", to_string(dtype_),
                   "; accessed as ", to_string(dtype_of_v<T>));
  }

  Tensor(DType dtype, const Dims& shape, std::string name, bool zero_fill)
      : dtype_(dtype), shape_(shape), name_(std::move(name)) {
    const std::int64_t n = checked_element_count(shape, detail::describe_tensor(name_));
    nbytes_ = static_cast<std::size_t>(n) * size_of(dtype);
    if (zero_fill)
      words_.assign((nbytes_ + 7) / 8, 0);  // 8-byte aligned
    else
      words_.resize((nbytes_ + 7) / 8);
  }

  DType dtype_ = DType::undefined;
  Dims shape_{};
  std::string name_;
  std::size_t nbytes_ = 0;
  std::vector<std::uint64_t, quantkit::detail::TensorStorageAllocator<std::uint64_t>> words_;
};

}  // namespace graph
}  // namespace quantkit
