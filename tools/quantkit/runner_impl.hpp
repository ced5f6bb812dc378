// Runner's implementation, shared by execute.cpp (float and fake-quant modes) and
// integer_modes.cpp (the integer mode with each requantization scheme, and --scale's report:
// the heaviest templates, in their own translation unit so the two compile in parallel).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "quantkit/executor/executor.hpp"

namespace quantkit {
namespace cli {

struct Runner::Impl {
  virtual ~Impl() = default;
  virtual TensorMap run(const TensorMap& inputs, const RunOptions& opt) const = 0;
  virtual const graph::Graph& graph() const = 0;
  Mode mode = Mode::float_;
  std::string description;
  std::vector<NodeReport> report;
};

template <class M>
struct ExecutorImpl final : Runner::Impl {
  ExecutorImpl(graph::Graph g, M m) : executor(std::move(g), std::move(m)) {}
  TensorMap run(const TensorMap& inputs, const RunOptions& opt) const override { return executor.run(inputs, opt); }
  const graph::Graph& graph() const override { return executor.graph(); }
  Executor<M> executor;
};

// The integer mode on a QDQ graph with the scheme `scale` names (integer_modes.cpp).
// ort_no_vnni: IntegerModeOptions::ort_pair_saturation.
std::unique_ptr<Runner::Impl> make_integer_runner(graph::Graph g, ScaleKind scale, bool ort_no_vnni);

}  // namespace cli
}  // namespace quantkit
