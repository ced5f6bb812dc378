// MseObserver: the clipping range that minimises the quantization MSE of the observed data
// under the target's format, rounding, symmetry and convention (AXera's MSE_CLIPPING, N2D2's
// MSE clipping), from a streaming histogram. See methods/mse.hpp for the search and
// distribution.hpp for streaming, merging and degenerate input.
#pragma once

#include "quantkit/observer/distribution.hpp"

namespace quantkit {
namespace observer_tags {
struct mse {
  static constexpr const char* name = "mse";
  static RangeMethod default_method() { return RangeMethod::mse(); }
};
}  // namespace observer_tags

using MseObserver = DistributionObserver<observer_tags::mse>;

}  // namespace quantkit
