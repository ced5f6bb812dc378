// quantize --calib-shards 'data/part-*.npy': calibration streamed from many .npy files (or one
// larger than memory) in batches with bounded memory, sharded over MPI ranks when the tool was
// built with MPI and started by mpirun (calibrate_shards.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"

namespace CLI {
class App;
}

namespace quantkit {
namespace cli {

struct ShardOptions {
  std::vector<std::string> patterns;  // --calib-shards GLOB (repeatable)
  std::string state;                  // --calib-state FILE.json: the reduced observer states
};
// Adds --calib-shards and --calib-state to `cmd`.
void add_shard_options(CLI::App* cmd, ShardOptions& o);

struct ShardRun {
  int ranks = 1;               // MPI ranks (1 without MPI)
  bool mpi = false;            // started by mpirun and built with MPI
  std::int64_t samples = 0;    // every rank's
  double seconds = 0;          // calibration (reading + executor + reduction) on rank 0
  int reduction_depth = 0;     // ceil(log2 ranks)
};

// Calibrates `model` (a single-input float model) on the data the patterns match: every rank
// observes its contiguous share of the samples, batch by batch (--batch rows read with pread),
// then the observer states are reduced to rank 0 (binomial tree of MPI messages). Returns the
// calibrated model on rank 0 and std::nullopt on the other ranks (they have nothing to write).
// An error on any rank is thrown on rank 0 (naming the rank; rank 0's exit status is the job's);
// the other ranks return std::nullopt without printing it again.
std::optional<ptq::QuantizedModel> calibrate_shards(const graph::Graph& model, const QuantOptions& o,
                                                    const ShardOptions& shards, ShardRun* run = nullptr);

}  // namespace cli
}  // namespace quantkit
