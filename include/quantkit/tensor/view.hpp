// View: a non-owning strided view of a tensor — pointer, extents, element strides, a name.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "quantkit/error.hpp"

namespace quantkit {

inline constexpr int dynamic_rank = -1;
inline constexpr int max_rank = 8;

// Extents or strides of up to max_rank dimensions.
struct Dims {
  std::array<std::int64_t, max_rank> value{};
  int rank = 0;

  Dims() = default;
  Dims(std::initializer_list<std::int64_t> list) {
    if (list.size() > static_cast<std::size_t>(max_rank))
      detail::fail("shape has ", list.size(), " dimensions; expected at most ", max_rank);
    for (auto v : list) value[static_cast<std::size_t>(rank++)] = v;
  }
  template <class It>
  static Dims from(It first, It last) {
    Dims d;
    for (; first != last; ++first) {
      if (d.rank == max_rank) detail::fail("shape has more than ", max_rank, " dimensions");
      d.value[static_cast<std::size_t>(d.rank++)] = static_cast<std::int64_t>(*first);
    }
    return d;
  }
  std::int64_t operator[](int i) const { return value[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) { return value[static_cast<std::size_t>(i)]; }
  std::int64_t product() const {
    std::int64_t p = 1;
    for (int i = 0; i < rank; ++i) p *= value[static_cast<std::size_t>(i)];
    return p;
  }
  friend bool operator==(const Dims& a, const Dims& b) {
    if (a.rank != b.rank) return false;
    for (int i = 0; i < a.rank; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  friend bool operator!=(const Dims& a, const Dims& b) { return !(a == b); }
  // Compares with a list without building a Dims: GCC 12 at -O3 warns (falsely) that a temporary
  // Dims{...}'s unused tail may be read uninitialized.
  bool equals(std::initializer_list<std::int64_t> list) const {
    if (list.size() != static_cast<std::size_t>(rank)) return false;
    std::size_t i = 0;
    for (auto v : list)
      if (value[i++] != v) return false;
    return true;
  }
  std::string to_string() const {
    std::string s = "[";
    for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(value[static_cast<std::size_t>(i)]);
    return s + "]";
  }
};

// Row-major (C order) strides for a shape.
inline Dims contiguous_strides(const Dims& shape) {
  Dims s;
  s.rank = shape.rank;
  std::int64_t step = 1;
  for (int i = shape.rank - 1; i >= 0; --i) {
    s[i] = step;
    step *= shape[i];
  }
  return s;
}

// T may be const. Rank is static (0..max_rank) or dynamic_rank; it only serves static checks,
// the extents are always stored.
template <class T, int Rank = dynamic_rank>
class View {
  static_assert(Rank == dynamic_rank || (Rank >= 0 && Rank <= max_rank),
                "View<T, Rank>: Rank must be 0..8 or quantkit::dynamic_rank");

 public:
  using value_type = T;
  static constexpr int static_rank = Rank;

  View() = default;
  View(T* data, Dims shape, std::string name = {})
      : View(data, shape, contiguous_strides(shape), std::move(name)) {}
  View(T* data, Dims shape, Dims strides, std::string name = {})
      : data_(data), shape_(shape), strides_(strides), name_(std::move(name)) {
    if (Rank != dynamic_rank && shape.rank != Rank)
      detail::fail(detail::describe_tensor(name_), ": shape ", shape.to_string(), " has rank ",
                   shape.rank, "; expected rank ", Rank);
    if (strides.rank != shape.rank)
      detail::fail(detail::describe_tensor(name_), ": ", strides.rank, " strides for rank ",
                   shape.rank, "; expected one stride per dimension");
    for (int i = 0; i < shape.rank; ++i)
      if (shape[i] < 0)
        detail::fail(detail::describe_tensor(name_), ": extent ", shape[i], " in dimension ", i,
                     "; expected >= 0");
    if (data == nullptr && shape.product() != 0)
      detail::fail(detail::describe_tensor(name_), ": null data pointer for shape ",
                   shape.to_string(), "; expected storage for ", shape.product(), " elements");
  }
  // A non-const view converts to a const one; a static rank converts to a dynamic one.
  template <class U, int R,
            class = std::enable_if_t<std::is_convertible_v<U*, T*> &&
                                     (Rank == dynamic_rank || R == Rank)>>
  View(const View<U, R>& other)  // NOLINT(google-explicit-constructor)
      : data_(other.data()), shape_(other.shape()), strides_(other.strides()), name_(other.name()) {}

  T* data() const { return data_; }
  const Dims& shape() const { return shape_; }
  const Dims& strides() const { return strides_; }
  int rank() const { return shape_.rank; }
  std::int64_t extent(int i) const { return shape_[i]; }
  std::int64_t size() const { return shape_.product(); }
  const std::string& name() const { return name_; }
  View& named(std::string n) & {
    name_ = std::move(n);
    return *this;
  }
  View named(std::string n) && {
    name_ = std::move(n);
    return std::move(*this);
  }

  // Row-major with no gaps: the fast paths need this.
  bool is_contiguous() const {
    std::int64_t step = 1;
    for (int i = rank() - 1; i >= 0; --i) {
      if (shape_[i] != 1 && strides_[i] != step) return false;
      step *= shape_[i];
    }
    return true;
  }

 private:
  T* data_ = nullptr;
  Dims shape_{};
  Dims strides_{};
  std::string name_;
};

// Visits every element of a view in row-major order of its shape, calling f(offset, index)
// with the element offset (in elements, strides applied) and the multi-index.
template <class T, int R, class F>
void for_each_index(const View<T, R>& v, F&& f) {
  const int rank = v.rank();
  const std::int64_t n = v.size();
  if (n == 0) return;
  Dims idx;
  idx.rank = rank;
  std::int64_t offset = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    f(offset, static_cast<const Dims&>(idx));
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < v.extent(d)) {
        offset += v.strides()[d];
        break;
      }
      offset -= v.strides()[d] * (v.extent(d) - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace quantkit
