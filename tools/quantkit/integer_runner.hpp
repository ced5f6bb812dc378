// A Runner running IntegerModeT<Scheme>, for integer_modes.cpp and integer_shift_modes.cpp.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "quantkit/executor/integer/mode.hpp"
#include "runner_impl.hpp"

namespace quantkit {
namespace cli {

template <class Scheme>
std::unique_ptr<Runner::Impl> integer_runner(graph::Graph g, const IntegerModeOptions& options) {
  using M = IntegerModeT<Scheme>;
  auto impl = std::make_unique<ExecutorImpl<M>>(std::move(g), M{options});
  for (const auto& r : impl->executor.mode().report()) {
    std::string detail = r.detail;  // a scheme's error quoted inside: drop its "quantkit: "
    for (std::size_t k; (k = detail.find("quantkit: ")) != std::string::npos;) detail.erase(k, 10);
    impl->report.push_back({r.node, r.op_type, r.integer, detail});
  }
  return impl;
}

// integer_shift_modes.cpp: SingleShift and DoubleShift (N2D2).
std::unique_ptr<Runner::Impl> integer_runner_single_shift(graph::Graph g, const IntegerModeOptions& options);
std::unique_ptr<Runner::Impl> integer_runner_double_shift(graph::Graph g, const IntegerModeOptions& options);

}  // namespace cli
}  // namespace quantkit
