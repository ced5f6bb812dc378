// A layer's requantization prepared once and run per call, as TFLite's Prepare / Eval split:
// simd::requantize checks the parameters and converts the constants and biases into the
// kernels' form on every call (11-12 % of a 64-channel call of 4K accumulators on Zen 5);
// PreparedRequantize does that in its constructor, and a call only checks the views' shapes.
//
//   quantkit::simd::PreparedRequantize<quantkit::FixedPointDoubleRounding, std::int8_t> rq(params, shape, "conv1");
//   rq(acc_view, out_view);   // = simd::requantize(acc_view, params, out_view, "conv1")
//
// Same results and the same checks as simd::requantize (the parameters' errors at
// construction); calls whose views are not contiguous make their plan per call. A prepared
// object does not change after construction: threads may call one at the same time.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/ref/requantize.hpp"
#include "quantkit/simd/api.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace simd {

template <class Scheme, class Out>
class PreparedRequantize {
  static_assert(std::is_same<Out, std::remove_cv_t<Out>>::value,
                "PreparedRequantize<Scheme, Out>: Out is the output's element type, without const");

 public:
  // Throws what simd::requantize would throw for these parameters on accumulators of `shape`
  // (an empty clamp range, an undefined shift, constants or biases that do not match the
  // channels), naming `layer`.
  PreparedRequantize(RequantParams<Scheme> params, const Dims& shape, std::string layer = {},
                     const Kernels* kernels = nullptr)
      : p_(std::move(params)),
        shape_(shape),
        layer_(std::move(layer)),
        kernels_(kernels),
        layout_(ref::check_requantize(shape_, p_, layer_)) {
    if constexpr (detail::requant_supported<Scheme>() && detail::is_kernel_int_v<Out>) {
      // a clamp wider than the output type wraps there: the reference's result
      if (p_.clamp_min < std::numeric_limits<Out>::min() || p_.clamp_max > std::numeric_limits<Out>::max()) return;
      const auto count = static_cast<std::size_t>(layout_.count());
      std::int32_t* kp[7] = {};
      for (int s = 0; s < detail::requant_slots(Scheme::scheme); ++s) {
        k_[s].resize(count);
        kp[s] = k_[s].data();
      }
      // the float multipliers: only the float scheme's kernels read them
      if constexpr (Scheme::scheme == RequantScheme::float_multiplier) kf_.resize(count);
      if (!detail::kernel_requant_constants<Scheme>(p_, count, kp, kf_.data(), layer_, kernels_)) return;
      bias_ = p_.bias.empty() ? std::vector<std::int32_t>(count, 0) : p_.bias;
      const Dims strides = contiguous_strides(shape_);
      detail::make_plan(shape_, strides, strides, layout_, plan_);
      kernel_ = true;
    }
  }

  // out = requantized acc; acc and out must have the prepared shape.
  template <class Acc, int RI, int RO>
  void operator()(const View<Acc, RI>& acc, const View<Out, RO>& out) const {
    static_assert(std::is_same<std::remove_const_t<Acc>, std::int32_t>::value,
                  "PreparedRequantize: accumulators must be std::int32_t");
    if (acc.shape() != shape_)
      quantkit::detail::fail("layer '", layer_, "': requantize accumulator shape ", acc.shape().to_string(),
                             "; expected the prepared shape ", shape_.to_string());
    if (out.shape() != shape_)
      quantkit::detail::fail("layer '", layer_, "': requantize output shape ", out.shape().to_string(),
                             "; expected the prepared shape ", shape_.to_string());
    if (!kernel_) {
      ref::requantize(acc, p_, out, layer_);
      return;
    }
    const std::int32_t* kp[7];
    for (int s = 0; s < 7; ++s) kp[s] = k_[s].empty() ? nullptr : k_[s].data();
    const Dims strides = contiguous_strides(shape_);
    const bool contiguous = acc.strides() == strides && out.strides() == strides;
    detail::run_requantize_kernel<Scheme, Out>(acc, out, layout_, kp, kf_.data(), bias_.data(), p_,
                                               contiguous ? &plan_ : nullptr, kernels_);
  }

  const RequantParams<Scheme>& params() const { return p_; }
  const Dims& shape() const { return shape_; }
  const std::string& layer() const { return layer_; }
  // false when the calls run the scalar reference (a scheme or rounding the kernels do not
  // cover, a clamp wider than Out, a constant outside the kernels' range)
  bool runs_kernels() const { return kernel_; }

 private:
  RequantParams<Scheme> p_;
  Dims shape_;
  std::string layer_;
  const Kernels* kernels_;
  ParamLayout layout_;
  std::vector<std::int32_t> k_[7];
  std::vector<float> kf_;
  std::vector<std::int32_t> bias_;
  Plan plan_{};
  bool kernel_ = false;
};

}  // namespace simd
}  // namespace quantkit
