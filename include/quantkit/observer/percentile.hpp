// PercentileObserver: clips at a percentile of the data, from a streaming histogram.
// Default: the 99.99th percentile (0.9999), of |x| for symmetric targets and two-sided
// ((1-p)/2 cut from each tail) for affine ones; RangeMethod::max_percentile(0.99995) is
// Horizon's max-percentile, RangeMethod::percentile_of(p, PercentileSide::two_sided) ONNX
// Runtime's. See distribution.hpp for streaming, merging and degenerate input.
#pragma once

#include "quantkit/observer/distribution.hpp"

namespace quantkit {
namespace observer_tags {
struct percentile {
  static constexpr const char* name = "percentile";
  static RangeMethod default_method() { return RangeMethod::percentile_of(0.9999); }
};
}  // namespace observer_tags

using PercentileObserver = DistributionObserver<observer_tags::percentile>;

}  // namespace quantkit
