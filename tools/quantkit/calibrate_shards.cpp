// quantize --calib-shards: streamed (out-of-core) calibration, sharded over MPI ranks.
//
// Without MPI (the tool built without it, or not started by mpirun) it runs as one process over
// every sample. Under `mpirun -n N quantkit quantize ...` each rank reads its contiguous share
// of the samples (npy::Dataset::shard) batch by batch with pread — memory is one batch plus the
// executor's activations, whatever the data's size — and the observer states are reduced to
// rank 0 with quantkit::mpi::reduce_calibrator (a binomial tree of MPI_Send/MPI_Recv of CBOR
// states, ceil(log2 N) rounds). Rank 0 writes the model (and --calib-state); the others exit.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "observers.hpp"
#include "quantkit/calibration/json.hpp"
#include "quantkit/io/npy_stream.hpp"
#include "quantkit/ptq.hpp"
#include "shards.hpp"

#ifdef QUANTKIT_CLI_MPI
#include "quantkit/calibration/mpi.hpp"
#endif

namespace quantkit {
namespace cli {

void add_shard_options(CLI::App* cmd, ShardOptions& o) {
  cmd->add_option("--calib-shards", o.patterns,
                  "calibration data streamed from .npy files matching a glob (quote it: 'data/part-*.npy'; "
                  "repeatable): samples along the first axis, read --batch rows at a time (data larger than "
                  "memory is fine); under mpirun (quantkit built with MPI) every rank calibrates its share "
                  "and rank 0 writes the model. Instead of --calib; single-input models")
      ->type_name("GLOB")
      ->allow_extra_args(false);
  cmd->add_option("--calib-state", o.state,
                  "with --calib-shards: also write the (reduced) observer state of every activation as JSON "
                  "(quantkit-calibration format)")
      ->type_name("FILE.json");
}

namespace {

using Clock = std::chrono::steady_clock;

// "\rcalibrating [#####.....] 1280/2560 samples  3412 samples/s  ETA 0:03" on stderr.
class RateProgress {
 public:
  RateProgress(std::string label, bool enabled) : label_(std::move(label)), enabled_(enabled), start_(Clock::now()) {}
  ~RateProgress() {
    if (drawn_) std::fputc('\n', stderr);
  }
  void update(std::int64_t done, std::int64_t total) {
    if (!enabled_ || total <= 0) return;
    const auto now = Clock::now();
    if (done < total && drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = s > 0 ? static_cast<double>(done) / s : 0.0;
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
    constexpr std::int64_t width = 30;
    const std::int64_t fill = done * width / total;
    const auto eta_s = static_cast<long long>(std::llround(eta));
    std::fprintf(stderr, "\r%s [%s%s] %lld/%lld samples  %.0f samples/s  ETA %lld:%02lld ", label_.c_str(),
                 std::string(static_cast<std::size_t>(fill), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - fill), '.').c_str(), static_cast<long long>(done),
                 static_cast<long long>(total), rate, eta_s / 60, eta_s % 60);
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_, last_;
};

// The MPI world when the tool was built with MPI and started by an MPI launcher; finalized on
// scope exit.
struct World {
  int rank = 0;
  int ranks = 1;
  bool mpi = false;
#ifdef QUANTKIT_CLI_MPI
  bool initialized_here = false;
  World() {
    // A launcher sets these (Open MPI, PMIx, Hydra/MPICH/Intel MPI); a plain `quantkit quantize`
    // stays a single process without initializing MPI.
    const char* vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    bool launched = false;
    for (const char* v : vars) launched = launched || std::getenv(v) != nullptr;
    if (!launched) return;
    int already = 0;
    MPI_Initialized(&already);
    if (!already) {
      mpi::detail::check(MPI_Init(nullptr, nullptr), "MPI_Init");
      initialized_here = true;
    }
    mpi = true;
    rank = mpi::detail::comm_rank(MPI_COMM_WORLD);
    ranks = mpi::detail::comm_size(MPI_COMM_WORLD);
  }
  ~World() { finalize(); }
  void finalize() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (initialized_here && !finalized) MPI_Finalize();
  }
  // Every rank's verdict on a step each ran alone.
  void agree(const std::string& error) const {
    if (mpi) mpi::agree(error, MPI_COMM_WORLD);
    else if (!error.empty()) quantkit::detail::fail(error);
  }
#else
  World() {
    // Without MPI every process of `mpirun -n N` would calibrate everything and write the model.
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
      const char* n = std::getenv(v);
      if (n && std::string(n) != "1")
        usage_fail("--calib-shards: started by an MPI launcher (", v, "=", n,
                   ") but this quantkit was built without MPI; expected a build with MPI (CMake finds "
                   "libopenmpi-dev) or a single process");
    }
  }
  void finalize() {}
  void agree(const std::string& error) const {
    if (!error.empty()) quantkit::detail::fail(error);
  }
#endif
  World(const World&) = delete;
  World& operator=(const World&) = delete;
};

std::string what_of(const std::exception& e) {
  std::string s = e.what();
  if (s.compare(0, 10, "quantkit: ") == 0) s = s.substr(10);
  return s;
}

std::optional<ptq::QuantizedModel> run_shards(World& world, const graph::Graph& model, const QuantOptions& o,
                                              const ShardOptions& shards, ShardRun* run) {
  // Steps every rank runs identically (the options, the model, every file's header): the same
  // error on every rank, agreed on so that no rank waits for another.
  ptq::PtqConfig cfg;
  ObserverSpec spec;
  std::int64_t batch = 0;
  npy::Dataset data;
  std::string input;
  std::string error;
  try {
    cfg = make_config(o, model);
    spec = parse_observer("--observer", o.observer);
    batch = parse_int("--batch", o.batch, 1, std::int64_t{1} << 40);
    if (cfg.adaround.enabled() || cfg.bias_correction)
      usage_fail(cfg.adaround.enabled() ? "--adaround" : "--bias-correction",
                 " needs the calibration data in memory again; expected --calib FILE.npy (not --calib-shards)");
    if (model.inputs.size() != 1)
      usage_fail("--calib-shards: model '", model.source, "' has ", model.inputs.size(),
                 " inputs; expected a single-input model (use --calib NAME=FILE.npy for several inputs)");
    input = model.inputs[0].name;
    data = npy::Dataset::open(shards.patterns);
    const graph::DType dt = graph_dtype_of(data.dtype(), data.files().front().file);
    const graph::ValueInfo& decl = *model.find_value(input);
    if (decl.dtype != graph::DType::undefined && decl.dtype != dt)
      quantkit::detail::fail("--calib-shards: file '", data.files().front().file, "' holds ", graph::to_string(dt),
                             "; model '", model.source, "' input '", input, "' expects ", graph::to_string(decl.dtype));
    if (decl.has_shape) {
      const Dims s = data.sample_shape();
      bool ok = static_cast<std::size_t>(s.rank) + 1 == decl.dims.size();
      for (int d = 0; ok && d < s.rank; ++d)
        ok = decl.dims[static_cast<std::size_t>(d) + 1] < 0 || decl.dims[static_cast<std::size_t>(d) + 1] == s[d];
      if (!ok)
        quantkit::detail::fail("--calib-shards: file '", data.files().front().file, "' has samples of shape ",
                               s.to_string(), "; model '", model.source, "' input '", input, "' expects ",
                               decl.shape_string(), " (samples along the first axis)");
    }
    if (data.rows() < 1)
      quantkit::detail::fail("--calib-shards: the ", data.files().size(),
                             " file(s) hold no sample; expected at least one sample along the first axis");
  } catch (const UsageError&) {
    throw;  // identical on every rank: each throws it, rank 0 prints it
  } catch (const std::exception& e) {
    error = what_of(e);
  }
  world.agree(error);

  // Rows dealt in pairs and no 1-row batch unless the whole shard is one row: kept from when
  // the float executor's Gemm/MatMul on a single row was Eigen's matrix-vector product (sums
  // that differed in the last bit); simd::gemm_f32 gives a row the same sums at any batch size.
  const std::pair<std::int64_t, std::int64_t> rows_of_rank = data.shard(world.rank, world.ranks, 2);
  const std::int64_t begin = rows_of_rank.first, end = rows_of_rank.second;  // (lambdas capture them)
  const Dims sample = data.sample_shape();
  const graph::DType dt = graph_dtype_of(data.dtype(), data.files().front().file);
  const auto t0 = Clock::now();
  RateProgress bar(world.mpi ? "calibrating (rank 0 of " + std::to_string(world.ranks) + ")" : "calibrating",
                   world.rank == 0 && (o.progress || stderr_is_terminal()));

  return with_observer(spec, [&](auto tag, auto options) -> std::optional<ptq::QuantizedModel> {
    using Observer = typename decltype(tag)::type;
    ptq::GraphCalibrator<Observer> cal(model, cfg, options);
    std::string local_error;
    try {
      std::int64_t start = begin;
      while (start < end) {
        std::int64_t rows = std::min(batch, end - start);
        if (batch > 1 && end - start - rows == 1) ++rows;  // no 1-row tail: it joins this batch
        Dims shape;
        shape.rank = sample.rank + 1;
        shape[0] = rows;
        for (int d = 0; d < sample.rank; ++d) shape[d + 1] = sample[d];
        graph::Tensor t(dt, shape, input);
        data.read_rows(start, rows, t.raw());
        cal.observe(ptq::TensorMap{{input, std::move(t)}});
        start += rows;
        bar.update(start - begin, end - begin);
      }
    } catch (const std::exception& e) {
      local_error = "rows [" + std::to_string(begin) + ", " + std::to_string(end) + "): " + what_of(e);
    }
    int depth = 0;
#ifdef QUANTKIT_CLI_MPI
    if (world.mpi) {
      depth = mpi::reduce_calibrator(cal, MPI_COMM_WORLD, 0, local_error).depth;
    } else if (!local_error.empty()) {
      quantkit::detail::fail(local_error);
    }
#else
    if (!local_error.empty()) quantkit::detail::fail(local_error);
#endif
    if (world.rank != 0) return std::nullopt;
    if (run) {
      run->ranks = world.ranks;
      run->mpi = world.mpi;
      run->samples = data.rows();
      run->seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      run->reduction_depth = depth;
    }
    if (!shards.state.empty()) save_calibration(cal.calibration(), shards.state);
    ptq::QuantizedModel qm = cal.finish();
    qm.observer = spec.text;
    return qm;
  });
}

}  // namespace

std::optional<ptq::QuantizedModel> calibrate_shards(const graph::Graph& model, const QuantOptions& o,
                                                    const ShardOptions& shards, ShardRun* run) {
  World world;
  try {
    std::optional<ptq::QuantizedModel> qm = run_shards(world, model, o, shards, run);
    if (qm && run)
      std::fprintf(stderr, "calibrated %lld samples on %d %s in %.3f s (%.0f samples/s)%s\n",
                   static_cast<long long>(run->samples), run->ranks, run->mpi ? "MPI ranks" : "process",
                   run->seconds, run->seconds > 0 ? static_cast<double>(run->samples) / run->seconds : 0.0,
                   run->mpi ? (", reduction depth " + std::to_string(run->reduction_depth)).c_str() : "");
    return qm;
  } catch (...) {
    // Every rank holds the same error: rank 0 reports it and exits with status 1 (the job's
    // status under mpirun); the others leave quietly with status 0, so that mpirun does not
    // abort the job before rank 0 has printed the error.
    if (world.rank == 0) throw;
  }
  return std::nullopt;
}

}  // namespace cli
}  // namespace quantkit
