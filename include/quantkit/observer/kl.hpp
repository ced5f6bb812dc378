// KlObserver: TensorRT's entropy calibration (KL divergence between the 2048-bin |x| histogram
// and its 128-level quantization, outliers folded into the edge bin) from a streaming
// histogram. See range_method.hpp for the algorithm and distribution.hpp for streaming,
// merging and degenerate input.
#pragma once

#include "quantkit/observer/distribution.hpp"

namespace quantkit {
namespace observer_tags {
struct kl {
  static constexpr const char* name = "kl";
  static RangeMethod default_method() { return RangeMethod::kl(); }
};
}  // namespace observer_tags

using KlObserver = DistributionObserver<observer_tags::kl>;
using EntropyObserver = KlObserver;

}  // namespace quantkit
