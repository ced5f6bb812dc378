// The integer mode with N2D2's shift requantization schemes (see integer_modes.cpp for why it is
// a translation unit of its own).
#include "integer_runner.hpp"

namespace quantkit {
namespace cli {

std::unique_ptr<Runner::Impl> integer_runner_single_shift(graph::Graph g, const IntegerModeOptions& options) {
  return integer_runner<SingleShift>(std::move(g), options);
}

std::unique_ptr<Runner::Impl> integer_runner_double_shift(graph::Graph g, const IntegerModeOptions& options) {
  return integer_runner<DoubleShift>(std::move(g), options);
}

}  // namespace cli
}  // namespace quantkit
