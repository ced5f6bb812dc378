// Quantizer<Scheme>: observe tensors, derive parameters, quantize / dequantize /
// fake-quantize any adapted tensor. Every operation equals the scalar reference (ref::) bit
// for bit; SIMD kernels plug in behind the same calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/params.hpp"
#include "quantkit/ref/pack.hpp"
#include "quantkit/ref/quantize.hpp"
#include "quantkit/scheme.hpp"
#include "quantkit/simd/simd.hpp"
#include "quantkit/tensor/span.hpp"
#include "quantkit/tensor/tensor_traits.hpp"

namespace quantkit {

template <class S>
class Quantizer {
 public:
  using scheme = S;
  using format = typename S::format;
  using storage_type = typename format::storage_type;
  using granularity = typename S::granularity;
  using symmetry = typename S::symmetry;
  using rounding_type = typename S::rounding;
  using observer_type = typename S::observer;
  static constexpr ScaleApplicationKind application = S::scale_application::kind;

  // `name` appears in every error message about this tensor.
  explicit Quantizer(std::string name = {}) : Quantizer(std::move(name), make_default_rounding()) {}
  Quantizer(std::string name, rounding_type rounding)
      : name_(std::move(name)),
        rounding_(std::move(rounding)),
        observer_(ObserverConfig{granularity::value(), S::nonfinite::kind, name_}) {}

  const std::string& name() const { return name_; }
  const rounding_type& rounding() const { return rounding_; }
  observer_type& observer() { return observer_; }
  const observer_type& observer() const { return observer_; }

  // The quantization the observer's ranges are for.
  static QuantTarget target() {
    return QuantTarget{IntRange::of<format>(), symmetry::kind, S::convention::kind,
                       rounding_mode_of<rounding_type>::value, application};
  }

  // Feeds one batch to the observer; parameters are derived again on the next params().
  template <class T>
  void observe(const T& tensor) {
    auto v = checked_view(tensor);
    observer_.observe(View<const tensor_value_t<T>, decltype(v)::static_rank>(v));
    params_.reset();
  }

  // Parameters from the observed data (or those set by set_params/set_range).
  const QuantParams& params() const {
    if (!params_) {
      const auto ranges = observer_.ranges(target());
      params_ = compute_qparams(ranges, granularity::value(), IntRange::of<format>(), symmetry::kind,
                                S::convention::kind, name_);
    }
    return *params_;
  }
  void set_params(QuantParams p) {
    p.validate(name_);
    if (p.granularity != granularity::value())
      detail::fail(detail::describe_tensor(name_), ": parameters are ", p.granularity.to_string(),
                   "; this quantizer's scheme is ", granularity::value().to_string());
    params_ = std::move(p);
  }
  // Per-tensor (or the same range for every channel is not meaningful: use set_ranges).
  void set_range(float min, float max) { set_ranges({Range{min, max}}); }
  void set_ranges(const std::vector<Range>& ranges) {
    params_ = compute_qparams(ranges, granularity::value(), IntRange::of<format>(), symmetry::kind,
                              S::convention::kind, name_);
  }

  template <class In, class Out>
  void quantize(const In& x, Out&& q) const {
    auto in = const_float_view(x);
    auto out = checked_view(q);
    static_assert(std::is_same_v<std::remove_const_t<typename decltype(out)::value_type>, storage_type> ||
                      std::is_same_v<std::remove_const_t<typename decltype(out)::value_type>, std::int32_t>,
                  "Quantizer::quantize: the output element type must be the format's storage_type "
                  "(or std::int32_t)");
    // SIMD kernels for the built-in rounding policies; the scalar reference for user ones.
    simd::quantize(in, params(), out, rounding_, application);
  }

  template <class In, class Out>
  void dequantize(const In& q, Out&& x) const {
    auto in = checked_view(q);
    using Q = std::remove_const_t<typename decltype(in)::value_type>;
    auto out = checked_view(x);
    static_assert(std::is_same_v<typename decltype(out)::value_type, float>,
                  "Quantizer::dequantize: the output must be a mutable float tensor");
    simd::dequantize(View<const Q, decltype(in)::static_rank>(in), params(), out);
  }

  template <class In, class Out>
  void fake_quantize(const In& x, Out&& y) const {
    auto in = const_float_view(x);
    auto out = checked_view(y);
    static_assert(std::is_same_v<typename decltype(out)::value_type, float>,
                  "Quantizer::fake_quantize: the output must be a mutable float tensor");
    simd::fake_quantize(in, params(), out, rounding_, application);
  }

  // 2- and 4-bit formats: values packed low bits first, in row-major order of x's shape.
  template <class In>
  std::vector<std::uint8_t> quantize_packed(const In& x) const {
    static_assert(format::packable,
                  "Quantizer::quantize_packed: only 2- and 4-bit formats pack into bytes; use "
                  "quantize() for this format");
    auto in = const_float_view(x);
    std::vector<std::uint8_t> packed(packed_size(static_cast<std::size_t>(in.size()), format::bits));
    simd::quantize_packed(in, params(), format::bits, packed.data(), packed.size(), rounding_,
                          application);
    return packed;
  }

  template <class Out>
  void dequantize_packed(const std::vector<std::uint8_t>& packed, Out&& x) const {
    static_assert(format::packable,
                  "Quantizer::dequantize_packed: only 2- and 4-bit formats pack into bytes");
    auto out = checked_view(x);
    const auto n = static_cast<std::size_t>(out.size());
    if (packed.size() != packed_size(n, format::bits))
      detail::fail(detail::describe_tensor(name_), ": packed input has ", packed.size(),
                   " bytes; expected ", packed_size(n, format::bits), " for ", n, " values");
    std::vector<storage_type> values(n);
    ref::unpack(packed.data(), n, format::bits, format::is_signed, values.data(), name_);
    ref::dequantize(View<const storage_type>(values.data(), out.shape(), name_), params(), out);
  }

 private:
  static rounding_type make_default_rounding() {
    static_assert(std::is_default_constructible_v<rounding_type>,
                  "Quantizer: this rounding policy needs state (e.g. RoundStochastic's generator); "
                  "construct the Quantizer with Quantizer(name, rounding)");
    return rounding_type{};
  }

  template <class T>
  auto checked_view(T&& t) const {
    using Bare = std::remove_cv_t<std::remove_reference_t<T>>;
    static_assert(is_tensor_v<Bare>,
                  "Quantizer: argument is not an adapted tensor; pass a quantkit::View, wrap a "
                  "buffer with quantkit::with_shape(), include quantkit/tensor/eigen.hpp for Eigen "
                  "types, or specialize quantkit::tensor_traits");
    granularity::template check_rank<tensor_traits<Bare>::rank>();
    auto v = make_view(std::forward<T>(t));
    if (v.name().empty()) v.named(name_);
    return v;
  }
  template <class T>
  auto const_float_view(const T& x) const {
    auto v = checked_view(x);
    static_assert(std::is_same_v<std::remove_const_t<typename decltype(v)::value_type>, float>,
                  "Quantizer: the input must be a float tensor");
    return View<const float, decltype(v)::static_rank>(v);
  }

  std::string name_;
  rounding_type rounding_;
  observer_type observer_;
  mutable std::optional<QuantParams> params_;
};

}  // namespace quantkit
