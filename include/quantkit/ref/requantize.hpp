// Scalar reference requantization: int32 accumulators (+ optional int32 bias) rescaled by a
// scale scheme, offset by the output zero point, clamped to the output range (which is also
// how a fused ReLU/ReLU6/clip is expressed).
//   out = clamp(Scheme::apply(sat32(acc + bias[c]), k[c]) + zp, clamp_min, clamp_max)
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/policy/format.hpp"
#include "quantkit/policy/requantization.hpp"
#include "quantkit/ref/fixed_point.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {

template <class Scheme>
struct RequantParams {
  using constants_type = typename Scheme::Constants;
  std::vector<constants_type> constants;  // 1 (per tensor) or one per channel
  std::vector<std::int32_t> bias;         // empty, or one per channel
  std::int32_t output_zero_point = 0;
  std::int32_t clamp_min = -128;
  std::int32_t clamp_max = 127;
  int channel_axis = -1;                  // axis of the accumulator the channels run along

  // From real multipliers (s_in * s_w[c] / s_out); throws naming `layer` when one cannot be
  // expressed by the scheme. The clamp defaults to the output format's range.
  static RequantParams make(const std::vector<double>& multipliers, IntRange out_range,
                            std::int32_t output_zero_point, const std::string& layer = {}) {
    if (multipliers.empty()) quantkit::detail::fail("layer '", layer, "': no requantization multipliers");
    RequantParams p;
    p.constants.reserve(multipliers.size());
    for (double m : multipliers) p.constants.push_back(Scheme::make(m, layer));
    p.output_zero_point = output_zero_point;
    p.clamp_min = out_range.qmin;
    p.clamp_max = out_range.qmax;
    return p;
  }
};

namespace ref {

template <class Scheme>
inline std::int32_t requantize_value(std::int32_t acc, std::int32_t bias,
                                     const typename Scheme::Constants& k, std::int32_t zp,
                                     std::int32_t lo, std::int32_t hi) {
  const std::int32_t v = saturate_to_int32(std::int64_t{acc} + bias);
  const std::int64_t r = std::int64_t{Scheme::apply(v, k)} + zp;
  return static_cast<std::int32_t>(std::min<std::int64_t>(std::max<std::int64_t>(r, lo), hi));
}

// The checks of requantize that need no data: the clamp range, the constants' shifts, the
// constants' and biases' counts against the channels of `shape`. Returns the channels' layout.
template <class Scheme>
ParamLayout check_requantize(const Dims& shape, const RequantParams<Scheme>& p, const std::string& layer = {}) {
  if (p.clamp_min > p.clamp_max)
    quantkit::detail::fail("layer '", layer, "': clamp range [", p.clamp_min, ", ", p.clamp_max,
                 "] is empty; expected min <= max");
  // Hand-built or loaded constants: shifts outside the scheme's int64 arithmetic are refused.
  quantkit::detail::check_requant_constants<Scheme>(p.constants, [&] { return "layer '" + layer + "': "; });
  const bool per_channel = p.constants.size() > 1 || p.bias.size() > 1;
  const Granularity g =
      per_channel ? Granularity::per_channel(p.channel_axis) : Granularity::per_tensor();
  ParamLayout layout(shape, g, layer);
  const std::int64_t channels = layout.count();
  if (p.constants.size() != 1 && static_cast<std::int64_t>(p.constants.size()) != channels)
    quantkit::detail::fail("layer '", layer, "': ", p.constants.size(), " multipliers for ", channels,
                 " channels; expected 1 or ", channels);
  if (!p.bias.empty() && static_cast<std::int64_t>(p.bias.size()) != channels)
    quantkit::detail::fail("layer '", layer, "': ", p.bias.size(), " biases for ", channels,
                 " channels; expected ", channels);
  return layout;
}

template <class Scheme, class Acc, class Out, int RI, int RO>
void requantize(const View<Acc, RI>& acc, const RequantParams<Scheme>& p,
                const View<Out, RO>& out, const std::string& layer = {}) {
  static_assert(std::is_same_v<std::remove_const_t<Acc>, std::int32_t>,
                "ref::requantize: accumulators must be std::int32_t");
  if (acc.shape() != out.shape())
    quantkit::detail::fail("layer '", layer, "': requantize output shape ", out.shape().to_string(),
                 "; expected the accumulator shape ", acc.shape().to_string());
  const ParamLayout layout = check_requantize(acc.shape(), p, layer);
  const Dims& so = out.strides();
  for_each_index(acc, [&](std::int64_t off, const Dims& idx) {
    const auto c = static_cast<std::size_t>(layout.index(idx));
    const auto& k = p.constants.size() == 1 ? p.constants[0] : p.constants[c];
    const std::int32_t b = p.bias.empty() ? 0 : p.bias[c];
    std::int64_t out_off = 0;
    for (int d = 0; d < idx.rank; ++d) out_off += idx[d] * so[d];
    out.data()[out_off] = static_cast<Out>(
        requantize_value<Scheme>(acc.data()[off], b, k, p.output_zero_point, p.clamp_min, p.clamp_max));
  });
}

}  // namespace ref
}  // namespace quantkit
