// AutoObserver: tries several calibration methods — by default max, max-percentile 0.99995 and
// KL, or any list given in RangeMethod::automatic(metric, candidates) — and keeps, per slot, the
// one whose fake-quantized data is most similar to the data (cosine by default, or MSE, SQNR),
// as Horizon's calibration_type "default" does. Similarity is computed on the streaming
// histogram (data uniform within bins), so no batch has to be kept. explain() reports the
// choice and every candidate's cosine, MSE and SQNR. See distribution.hpp for streaming,
// merging and degenerate input.
#pragma once

#include "quantkit/observer/distribution.hpp"

namespace quantkit {
namespace observer_tags {
struct automatic {
  static constexpr const char* name = "auto";
  static RangeMethod default_method() { return RangeMethod::automatic(); }
};
}  // namespace observer_tags

using AutoObserver = DistributionObserver<observer_tags::automatic>;

}  // namespace quantkit
