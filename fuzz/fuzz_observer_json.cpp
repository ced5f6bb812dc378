// libFuzzer harness: observer-state JSON (quantkit/observer/json.hpp) into every observer kind,
// then what a reducer does with a restored shard: merge it into itself and derive a range.
#include <cstddef>
#include <cstdint>
#include <string>

#include "quantkit/observer/histogram.hpp"
#include "quantkit/observer/json.hpp"
#include "quantkit/observer/kl.hpp"
#include "quantkit/observer/minmax.hpp"
#include "quantkit/observer/moving_average.hpp"
#include "quantkit/observer/mse.hpp"
#include "quantkit/observer/percentile.hpp"

namespace {
template <class Observer>
void try_observer(const nlohmann::json& j) {
  try {
    Observer o = quantkit::observer_from_json<Observer>(j);
    const Observer copy = o;
    o.merge(copy);
    (void)o.ranges();
    (void)quantkit::observer_to_json(o).dump();
  } catch (const quantkit::Error&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  try_observer<quantkit::MinMaxObserver>(j);
  try_observer<quantkit::MovingAverageMinMaxObserver>(j);
  try_observer<quantkit::HistogramObserver>(j);
  try_observer<quantkit::PercentileObserver>(j);
  try_observer<quantkit::MseObserver>(j);
  try_observer<quantkit::KlObserver>(j);
  return 0;
}
