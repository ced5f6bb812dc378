// The integers a quantized initializer (weight or bias) is stored as, and the float values
// they dequantize to: the one computation the fake-quant mode, the QDQ exporter and the
// integer mode all share, so their weights agree bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/graph/tensor.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ref/quantize.hpp"

namespace quantkit {
namespace ptq {

// q = clamp(R(x / s) + z) with the tensor's rounding (weights) or half-to-even (bias), as
// int32 in the tensor's row-major order; the stored integers (AdaRound's weights, or a weight's
// or bias's read from a QDQ file) when it has them. A bias whose value would not fit int32 is an error naming it (the planner keeps such
// biases float).
inline std::vector<std::int32_t> quantize_initializer(const graph::Tensor& t, const TensorQuant& q,
                                                      const std::string& name) {
  if (t.dtype() != graph::DType::float32)
    quantkit::detail::fail(quantkit::detail::describe_tensor(name), ": element type ", graph::to_string(t.dtype()),
                 "; expected float32 to quantize");
  std::vector<std::int32_t> out(static_cast<std::size_t>(t.size()));
  const View<const float> in(t.data<float>(), t.shape(), name);
  const View<std::int32_t> o(out.data(), t.shape(), name);
  if (!q.integers.empty()) {  // chosen by AdaRound, or read from a QDQ file (ptq::import_qdq)
    if (q.integers.size() != out.size())
      quantkit::detail::fail(quantkit::detail::describe_tensor(name), ": ", q.integers.size(),
                             " stored integers for shape ", t.shape().to_string(), "; expected ", out.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      if (q.integers[i] < q.params.range.qmin || q.integers[i] > q.params.range.qmax)
        quantkit::detail::fail(quantkit::detail::describe_tensor(name), ": stored integer ", q.integers[i], " at index ", i,
                               " is outside [", q.params.range.qmin, ", ", q.params.range.qmax, "]");
    return q.integers;
  }
  if (q.role == TensorRole::bias) {
    q.params.validate(name);
    const ParamLayout layout(t.shape(), q.params.granularity, name);
    layout.expect_count(static_cast<std::int64_t>(q.params.size()), name);
    std::int64_t i = 0;
    for_each_index(in, [&](std::int64_t off, const Dims& idx) {
      const auto c = static_cast<std::size_t>(layout.index(idx));
      const double v = static_cast<double>(RoundHalfEven{}(in.data()[off] / q.params.scale[c]));
      if (!(std::fabs(v) <= static_cast<double>(std::numeric_limits<std::int32_t>::max())))
        quantkit::detail::fail(quantkit::detail::describe_tensor(name), ": bias value ", in.data()[off], " at index ", i,
                     " is ", v, " steps of ", q.params.scale[c], "; expected it to fit int32");
      out[static_cast<std::size_t>(i++)] = static_cast<std::int32_t>(v);
    });
    return out;
  }
  visit_rounding(q.rounding, [&](auto rounding) { ref::quantize(in, q.params, o, rounding); });
  return out;
}

// How the bias of a node with quantized input `in` and weight `w` is stored: int32, scale
// s_in * s_w[c] (float32 product, as ONNX Runtime), zero point 0.
inline TensorQuant bias_quant(const TensorQuant& in, const TensorQuant& w, const std::string& node,
                              const std::string& input, const std::string& weight) {
  TensorQuant t;
  t.role = TensorRole::bias;
  t.format = TensorFormat{32, true};
  t.symmetry = SymmetryKind::symmetric;
  t.node = node;
  t.input = input;
  t.weight = weight;
  t.params.range = IntRange{std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
  t.params.granularity = w.params.size() == 1 ? Granularity::per_tensor() : Granularity::per_channel(0);
  t.params.scale.clear();
  for (float sw : w.params.scale) t.params.scale.push_back(in.params.scale[0] * sw);
  t.params.zero_point.assign(t.params.scale.size(), 0);
  return t;
}

// The float tensor the stored integers dequantize to: (q - z) * s.
inline graph::Tensor dequantized_initializer(const graph::Tensor& t, const TensorQuant& q,
                                             const std::string& name) {
  const std::vector<std::int32_t> ints = quantize_initializer(t, q, name);
  graph::Tensor out(graph::DType::float32, t.shape(), name);
  ref::dequantize(View<const std::int32_t>(ints.data(), t.shape(), name), q.params, out.view<float>());
  return out;
}

}  // namespace ptq
}  // namespace quantkit
