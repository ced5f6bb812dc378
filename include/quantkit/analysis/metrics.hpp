// Similarity metrics between a reference tensor x (float model) and an actual tensor y
// (quantized model), over whole tensors or per channel along any axis — what a layer-wise
// comparison prints for every value. Accumulated in double; needs only quantkit::View.
//
//   const auto s = qk::analysis::similarity(x_view, y_view);        // s.cosine, s.sqnr_db, ...
//   const auto c = qk::analysis::similarity_per_channel(x, y, 1);   // one Similarity per channel
//
// Definitions (n elements, d = x - y):
//   cosine     sum(x*y) / (|x| |y|); 1 when both are all zero, 0 when exactly one is
//   mse        sum(d^2) / n
//   mre        mean relative error: (1/n) sum |d_i| / max(|x_i|, t), t = 1e-3 * max|x|.
//              The guard t keeps elements near zero (e.g. the zeros after a ReLU, which pick
//              up quantization noise) from dominating: an element smaller than 0.1 % of the
//              tensor's largest magnitude is measured relative to that floor. Scale-free:
//              mre(k x, k y) = mre(x, y). All-zero x: 0 when y is all zero too, else +inf.
//   sqnr       20 log10(|x| / |d|) dB (Euclidean norms): +inf when x == y, -inf when x is all
//              zero and y is not
//   chebyshev  max |d_i|
// An empty tensor compares as equal (cosine 1, sqnr +inf, the rest 0).
// Errors (quantkit::Error) name both tensors: different shapes, NaN or Inf in either (with the
// index), an axis outside the rank.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace analysis {

enum class Metric { cosine, mse, mre, sqnr, chebyshev };

inline const char* to_string(Metric m) {
  switch (m) {
    case Metric::cosine: return "cosine";
    case Metric::mse: return "mse";
    case Metric::mre: return "mre";
    case Metric::sqnr: return "sqnr";
    case Metric::chebyshev: return "chebyshev";
  }
  return "?";
}

inline std::vector<Metric> all_metrics() {
  return {Metric::cosine, Metric::mse, Metric::mre, Metric::sqnr, Metric::chebyshev};
}

// "cosine", "mse", "mre", "sqnr", "chebyshev"; `what` names the option in the error.
inline Metric parse_metric(const std::string& name, const std::string& what = "metric") {
  for (Metric m : all_metrics())
    if (name == to_string(m)) return m;
  quantkit::detail::fail(what, ": unknown metric '", name, "'; expected cosine, mse, mre, sqnr or chebyshev");
}

// True for the metrics where larger means closer (cosine, sqnr).
inline bool higher_is_better(Metric m) { return m == Metric::cosine || m == Metric::sqnr; }

struct Similarity {
  double cosine = 1.0;
  double mse = 0.0;
  double mre = 0.0;
  double sqnr_db = std::numeric_limits<double>::infinity();
  double chebyshev = 0.0;
  std::int64_t count = 0;  // elements compared

  double get(Metric m) const {
    switch (m) {
      case Metric::cosine: return cosine;
      case Metric::mse: return mse;
      case Metric::mre: return mre;
      case Metric::sqnr: return sqnr_db;
      case Metric::chebyshev: return chebyshev;
    }
    return 0.0;
  }
};

namespace detail {

// Running sums of one slot (the whole tensor or one channel).
struct SimilaritySums {
  double xx = 0, yy = 0, xy = 0, dd = 0, max_abs_d = 0, max_abs_x = 0, rel = 0;
  std::int64_t n = 0;

  Similarity finish() const {
    Similarity s;
    s.count = n;
    if (n == 0) return s;
    const double inf = std::numeric_limits<double>::infinity();
    if (xx == 0.0 && yy == 0.0) s.cosine = 1.0;
    else if (xx == 0.0 || yy == 0.0) s.cosine = 0.0;
    else s.cosine = std::clamp(xy / std::sqrt(xx * yy), -1.0, 1.0);  // exactly 1 for x == y: sqrt(a*a) == a
    s.mse = dd / static_cast<double>(n);
    if (max_abs_x == 0.0) s.mre = dd == 0.0 ? 0.0 : inf;
    else s.mre = rel / static_cast<double>(n);
    if (dd == 0.0) s.sqnr_db = inf;
    else if (xx == 0.0) s.sqnr_db = -inf;
    else s.sqnr_db = 10.0 * std::log10(xx / dd);
    s.chebyshev = max_abs_d;
    return s;
  }
};

inline std::string describe_pair(const std::string& x, const std::string& y) {
  return quantkit::detail::describe_tensor(x) + " vs " + quantkit::detail::describe_tensor(y);
}

inline std::string index_string(const Dims& idx) {
  std::string s = "[";
  for (int i = 0; i < idx.rank; ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + "]";
}

// slots == 1: whole tensor; otherwise one slot per index along `axis`.
template <class T, int R, class U, int S>
std::vector<Similarity> similarity_slots(const View<T, R>& x, const View<U, S>& y, int axis, bool per_channel) {
  static_assert(std::is_arithmetic_v<std::remove_const_t<T>> && std::is_arithmetic_v<std::remove_const_t<U>>,
                "quantkit::analysis: metrics compare tensors of arithmetic element types");
  const std::string pair = describe_pair(x.name(), y.name());
  if (x.shape() != y.shape())
    quantkit::detail::fail(pair, ": shapes ", x.shape().to_string(), " and ", y.shape().to_string(),
                           " differ; expected the same shape");
  if (per_channel) {
    if (x.rank() == 0)
      quantkit::detail::fail(pair, ": per-channel metrics of a scalar; expected a tensor of rank >= 1");
    if (axis < -x.rank() || axis >= x.rank())
      quantkit::detail::fail(pair, ": channel axis ", axis, " for shape ", x.shape().to_string(),
                             "; expected an axis in [", -x.rank(), ", ", x.rank() - 1, "]");
    if (axis < 0) axis += x.rank();
  }
  const std::size_t slots = per_channel ? static_cast<std::size_t>(x.extent(axis)) : 1;
  std::vector<SimilaritySums> sums(slots);
  auto offset_y = [&](const Dims& idx) {
    std::int64_t o = 0;
    for (int d = 0; d < idx.rank; ++d) o += idx[d] * y.strides()[d];
    return o;
  };
  auto slot_of = [&](const Dims& idx) { return per_channel ? static_cast<std::size_t>(idx[axis]) : 0; };
  for_each_index(x, [&](std::int64_t ox, const Dims& idx) {
    const double a = static_cast<double>(x.data()[ox]);
    const double b = static_cast<double>(y.data()[offset_y(idx)]);
    if (!std::isfinite(a) || !std::isfinite(b)) {
      const bool in_x = !std::isfinite(a);
      quantkit::detail::fail(pair, ": found ", in_x ? a : b, " at index ", index_string(idx), " of ",
                             quantkit::detail::describe_tensor(in_x ? x.name() : y.name()),
                             "; expected finite values");
    }
    SimilaritySums& s = sums[slot_of(idx)];
    const double d = a - b;
    s.xx += a * a;
    s.yy += b * b;
    s.xy += a * b;
    s.dd += d * d;
    s.max_abs_d = std::max(s.max_abs_d, std::fabs(d));
    s.max_abs_x = std::max(s.max_abs_x, std::fabs(a));
    ++s.n;
  });
  // Second pass: the relative error needs each slot's max |x| for its guard.
  for_each_index(x, [&](std::int64_t ox, const Dims& idx) {
    SimilaritySums& s = sums[slot_of(idx)];
    if (s.max_abs_x == 0.0) return;
    const double a = static_cast<double>(x.data()[ox]);
    const double b = static_cast<double>(y.data()[offset_y(idx)]);
    s.rel += std::fabs(a - b) / std::max(std::fabs(a), 1e-3 * s.max_abs_x);
  });
  std::vector<Similarity> out;
  out.reserve(slots);
  for (const auto& s : sums) out.push_back(s.finish());
  return out;
}

}  // namespace detail

// Every metric over the whole tensors (x: reference, y: actual).
template <class T, int R, class U, int S>
Similarity similarity(const View<T, R>& x, const View<U, S>& y) {
  return detail::similarity_slots(x, y, 0, false).front();
}

// Every metric per index along `axis` (negative counts from the end).
template <class T, int R, class U, int S>
std::vector<Similarity> similarity_per_channel(const View<T, R>& x, const View<U, S>& y, int axis) {
  return detail::similarity_slots(x, y, axis, true);
}

// Single metrics, for readability at call sites.
template <class T, int R, class U, int S>
double cosine_similarity(const View<T, R>& x, const View<U, S>& y) { return similarity(x, y).cosine; }
template <class T, int R, class U, int S>
double mean_squared_error(const View<T, R>& x, const View<U, S>& y) { return similarity(x, y).mse; }
template <class T, int R, class U, int S>
double mean_relative_error(const View<T, R>& x, const View<U, S>& y) { return similarity(x, y).mre; }
template <class T, int R, class U, int S>
double sqnr_db(const View<T, R>& x, const View<U, S>& y) { return similarity(x, y).sqnr_db; }
template <class T, int R, class U, int S>
double chebyshev_distance(const View<T, R>& x, const View<U, S>& y) { return similarity(x, y).chebyshev; }

}  // namespace analysis
}  // namespace quantkit
