// libFuzzer harness: calibration-profile and calibration-state JSON (quantkit/calibration/json.hpp)
// as the CLI reads them: nlohmann parse (its parse errors are what read_json_file reports), then
// profile_from_json and calibration_from_json for the observer kinds the CLI uses.
#include <cstddef>
#include <cstdint>
#include <string>

#include "quantkit/calibration/json.hpp"
#include "quantkit/observer/histogram.hpp"
#include "quantkit/observer/kl.hpp"
#include "quantkit/observer/minmax.hpp"
#include "quantkit/observer/moving_average.hpp"
#include "quantkit/observer/mse.hpp"
#include "quantkit/observer/percentile.hpp"

namespace {
template <class Observer>
void try_calibration(const nlohmann::json& j) {
  try {
    quantkit::Calibration<Observer> cal = quantkit::calibration_from_json<Observer>(j);
    (void)quantkit::calibration_to_json(cal).dump();
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
  try {
    const quantkit::Profile p = quantkit::profile_from_json(j, "profile 'fuzz.json'");
    (void)quantkit::profile_to_json(p).dump();
  } catch (const quantkit::Error&) {
  }
  try_calibration<quantkit::MinMaxObserver>(j);
  try_calibration<quantkit::MovingAverageMinMaxObserver>(j);
  try_calibration<quantkit::HistogramObserver>(j);
  try_calibration<quantkit::PercentileObserver>(j);
  try_calibration<quantkit::MseObserver>(j);
  try_calibration<quantkit::KlObserver>(j);
  return 0;
}
