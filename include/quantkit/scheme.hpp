// Scheme: a bundle of policies (PyTorch calls it a qconfig). Policies are given in any order;
// each fills the slot of its category and every slot has a default:
//   format Int8 · granularity PerTensor · symmetry Affine · rounding RoundHalfEven ·
//   scale application DivideByScale · convention PyTorchConvention · observer MinMaxObserver ·
//   non-finite RejectNonFinite
#pragma once

#include <type_traits>

#include "quantkit/observer/minmax.hpp"
#include "quantkit/params.hpp"
#include "quantkit/policy/category.hpp"
#include "quantkit/policy/convention.hpp"
#include "quantkit/policy/format.hpp"
#include "quantkit/policy/granularity.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/policy/scale_application.hpp"
#include "quantkit/policy/symmetry.hpp"

namespace quantkit {
namespace detail {

template <class T, class = void>
struct has_category : std::false_type {};
template <class T>
struct has_category<T, std::void_t<typename T::category>> : std::true_type {};

template <class T>
constexpr bool is_known_category() {
  if constexpr (has_category<T>::value) {
    using C = typename T::category;
    return std::is_same_v<C, category::format> || std::is_same_v<C, category::granularity> ||
           std::is_same_v<C, category::symmetry> || std::is_same_v<C, category::rounding> ||
           std::is_same_v<C, category::scale_application> ||
           std::is_same_v<C, category::convention> || std::is_same_v<C, category::observer> ||
           std::is_same_v<C, category::nonfinite>;
  } else {
    return false;
  }
}

template <class Category, class T>
constexpr int in_category() {
  if constexpr (has_category<T>::value)
    return std::is_same_v<typename T::category, Category> ? 1 : 0;
  else
    return 0;
}

template <class Category, class Default, class... Ps>
struct pick {
  using type = Default;
};
template <class Category, class Default, class P, class... Ps>
struct pick<Category, Default, P, Ps...> {
  using type = std::conditional_t<in_category<Category, P>() == 1, P,
                                  typename pick<Category, Default, Ps...>::type>;
};

template <class Category, class... Ps>
constexpr int count_in_category() {
  return (0 + ... + in_category<Category, Ps>());
}

}  // namespace detail

template <class... Policies>
struct Scheme {
  static_assert((detail::is_known_category<Policies>() && ...),
                "Scheme<...>: every argument must be a quantkit policy (a format like Int<8>, a "
                "granularity like PerChannel<0>, a symmetry, a rounding, a scale application, a "
                "convention, an observer or a non-finite policy); a custom policy needs "
                "`using category = quantkit::category::<slot>;`");
  static_assert(detail::count_in_category<category::format, Policies...>() <= 1,
                "Scheme<...>: two formats given; keep one (e.g. Int<8> or UInt<8>)");
  static_assert(detail::count_in_category<category::granularity, Policies...>() <= 1,
                "Scheme<...>: two granularities given; keep one of PerTensor, PerChannel, PerGroup");
  static_assert(detail::count_in_category<category::symmetry, Policies...>() <= 1,
                "Scheme<...>: two symmetries given; keep one of Affine, Symmetric, SymmetricRestricted");
  static_assert(detail::count_in_category<category::rounding, Policies...>() <= 1,
                "Scheme<...>: two rounding policies given; keep one");
  static_assert(detail::count_in_category<category::scale_application, Policies...>() <= 1,
                "Scheme<...>: both DivideByScale and MultiplyByReciprocal given; keep one");
  static_assert(detail::count_in_category<category::convention, Policies...>() <= 1,
                "Scheme<...>: two conventions given; keep one");
  static_assert(detail::count_in_category<category::observer, Policies...>() <= 1,
                "Scheme<...>: two observers given; keep one");
  static_assert(detail::count_in_category<category::nonfinite, Policies...>() <= 1,
                "Scheme<...>: both RejectNonFinite and IgnoreNonFinite given; keep one");

  using format = typename detail::pick<category::format, Int8, Policies...>::type;
  using granularity = typename detail::pick<category::granularity, PerTensor, Policies...>::type;
  using symmetry = typename detail::pick<category::symmetry, Affine, Policies...>::type;
  using rounding = typename detail::pick<category::rounding, RoundHalfEven, Policies...>::type;
  using scale_application =
      typename detail::pick<category::scale_application, DivideByScale, Policies...>::type;
  using convention = typename detail::pick<category::convention, PyTorchConvention, Policies...>::type;
  using observer = typename detail::pick<category::observer, MinMaxObserver, Policies...>::type;
  using nonfinite = typename detail::pick<category::nonfinite, RejectNonFinite, Policies...>::type;

  static_assert(!(symmetry::kind == SymmetryKind::symmetric_restricted && !format::is_signed),
                "Scheme<...>: SymmetricRestricted drops the most negative value of a signed format; "
                "with an unsigned format use Symmetric (or a signed format such as Int<8>)");
  static constexpr IntRange range() {
    return effective_range(IntRange::of<format>(), symmetry::kind);
  }
};

}  // namespace quantkit
