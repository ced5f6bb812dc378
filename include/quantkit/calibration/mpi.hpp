// Sharded calibration over MPI (optional: needs <mpi.h> and nlohmann/json; never included by
// quantkit.hpp, not part of the single header; CMake target quantkit::mpi when MPI is found).
//
// Every rank observes its own shard of the calibration data with the same graph and scheme;
// the observer states are then reduced to one rank by a binomial tree of point-to-point
// messages (MPI_Send/MPI_Recv of serialized states, never the data): in round k = 0, 1, ...
// the rank r with bit k set sends its state to r - 2^k and leaves; the rank r + 2^k (when it
// exists) is received by r, which merges it after its own. So the reduction takes
// ceil(log2 N) rounds, each rank sends at most one message, and the root ends up with
// "rank 0's batches, then rank 1's, ..., then rank N-1's" — the order matters only for the
// moving-average observer (ordered merge); min-max and the grid-histogram kinds (percentile,
// mse, kl, auto, StatisticsObserver/Profile) merge exactly in any order, the PyTorch
// HistogramObserver within its documented re-binning bound (observer/histogram.hpp).
//
//   MPI_Init(...);
//   qk::Calibration<qk::KlObserver> cal;
//   for (auto& batch : my_shard) cal.observe("x", batch);     // a rank may have no batch at all
//   qk::mpi::reduce(cal, MPI_COMM_WORLD);                      // rank 0: every rank's state
//   if (rank == 0) qk::save_calibration(cal, "calib.json");
//
// Errors: a rank whose shard failed (bad file, NaN under NonFiniteKind::reject, ...) passes
// its error up the tree instead of its state (so no rank waits forever); after the reduction
// every rank throws the same quantkit::Error, naming the lowest failing rank and its message.
// What grows with the number of ranks N: the root receives ceil(log2 N) states (one state per
// calibrated tensor per message), and no rank holds more than two states at once.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "quantkit/calibration/calibration.hpp"
#include "quantkit/calibration/json.hpp"
#include "quantkit/calibration/profile.hpp"
#include "quantkit/error.hpp"
#include "quantkit/observer/json.hpp"

namespace quantkit {
namespace mpi {

// What one reduction did on this rank.
struct ReduceStats {
  int rank = 0;
  int ranks = 1;
  int depth = 0;                  // ceil(log2 ranks): rounds of the tree
  int received = 0;               // messages this rank received (and merged)
  std::uint64_t bytes_sent = 0;   // serialized state sent to the parent (0 on the root)
  std::uint64_t bytes_received = 0;
};

namespace detail {

inline constexpr int tag_header = 0x5143;  // "QC": {status, size}
inline constexpr int tag_body = 0x5144;

inline void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, text, &n);
    quantkit::detail::fail("MPI: ", call, " failed: ", std::string(text, static_cast<std::size_t>(n)));
  }
}

inline int comm_rank(MPI_Comm comm) {
  int r = 0;
  check(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
  return r;
}
inline int comm_size(MPI_Comm comm) {
  int n = 0;
  check(MPI_Comm_size(comm, &n), "MPI_Comm_size");
  return n;
}

// A message: status 0 = a serialized state, 1 = an error text (from the lowest failing rank).
struct Message {
  std::int64_t status = 0;
  std::vector<std::uint8_t> bytes;
};

// Bodies larger than INT_MAX bytes go in INT_MAX-sized pieces (MPI counts are int).
inline void send(const Message& m, int dest, MPI_Comm comm) {
  std::int64_t header[2] = {m.status, static_cast<std::int64_t>(m.bytes.size())};
  check(MPI_Send(header, 2, MPI_INT64_T, dest, tag_header, comm), "MPI_Send");
  const std::size_t chunk = static_cast<std::size_t>(std::numeric_limits<int>::max());
  for (std::size_t off = 0; off < m.bytes.size(); off += chunk) {
    const int n = static_cast<int>(std::min(chunk, m.bytes.size() - off));
    check(MPI_Send(m.bytes.data() + off, n, MPI_BYTE, dest, tag_body, comm), "MPI_Send");
  }
}
inline Message recv(int src, MPI_Comm comm) {
  std::int64_t header[2] = {0, 0};
  check(MPI_Recv(header, 2, MPI_INT64_T, src, tag_header, comm, MPI_STATUS_IGNORE), "MPI_Recv");
  if (header[1] < 0) quantkit::detail::fail("MPI: rank ", src, " announced a message of ", header[1], " bytes");
  Message m;
  m.status = header[0];
  m.bytes.resize(static_cast<std::size_t>(header[1]));
  const std::size_t chunk = static_cast<std::size_t>(std::numeric_limits<int>::max());
  for (std::size_t off = 0; off < m.bytes.size(); off += chunk) {
    const int n = static_cast<int>(std::min(chunk, m.bytes.size() - off));
    check(MPI_Recv(m.bytes.data() + off, n, MPI_BYTE, src, tag_body, comm, MPI_STATUS_IGNORE), "MPI_Recv");
  }
  return m;
}

inline Message error_message(const std::string& text) {
  Message m;
  m.status = 1;
  m.bytes.assign(text.begin(), text.end());
  return m;
}
inline std::string text_of(const Message& m) { return std::string(m.bytes.begin(), m.bytes.end()); }

// Rank 0's verdict to every rank: "" when the reduction succeeded, else the error text.
inline std::string broadcast_error(const std::string& error, int root, MPI_Comm comm) {
  std::int64_t n = static_cast<std::int64_t>(error.size());
  check(MPI_Bcast(&n, 1, MPI_INT64_T, root, comm), "MPI_Bcast");
  std::string out = error;
  out.resize(static_cast<std::size_t>(n));
  if (n > 0) check(MPI_Bcast(out.data(), static_cast<int>(n), MPI_CHAR, root, comm), "MPI_Bcast");
  return out;
}

}  // namespace detail

// The generic tree: `local` is this rank's serialized state (or `local_error`, non-empty when
// its shard failed); merge(bytes, from_rank) folds a child's state into this rank's (called in
// rank order, only while every state so far is good); serialize() gives this rank's state after
// the merges, to send to its parent. On the root, returns after every rank's state was merged;
// on every rank, throws the same Error if any rank failed.
inline ReduceStats tree_reduce(const std::function<std::vector<std::uint8_t>()>& serialize,
                               const std::function<void(const std::vector<std::uint8_t>&, int)>& merge,
                               std::string local_error, MPI_Comm comm, int root = 0) {
  ReduceStats st;
  st.rank = detail::comm_rank(comm);
  st.ranks = detail::comm_size(comm);
  if (root < 0 || root >= st.ranks)
    quantkit::detail::fail("MPI reduction: root rank ", root, "; expected a rank in [0, ", st.ranks - 1, "]");
  while ((1 << st.depth) < st.ranks) ++st.depth;
  const int rel = (st.rank - root + st.ranks) % st.ranks;  // this rank's position in the tree
  std::string error = local_error.empty() ? std::string() : "rank " + std::to_string(st.rank) + ": " + local_error;
  for (int step = 1; step < st.ranks; step <<= 1) {
    if (rel & step) {  // send to the parent and leave the tree
      const int parent = (rel - step + root) % st.ranks;
      detail::Message m;
      if (error.empty()) {
        try {
          m.bytes = serialize();
        } catch (const std::exception& e) {
          error = "rank " + std::to_string(st.rank) + ": " + e.what();
        }
      }
      if (!error.empty()) m = detail::error_message(error);
      st.bytes_sent = m.bytes.size();
      detail::send(m, parent, comm);
      break;
    }
    if (rel + step < st.ranks) {  // receive the subtree of ranks [rel + step, rel + 2 step)
      const int child = (rel + step + root) % st.ranks;
      const detail::Message m = detail::recv(child, comm);
      ++st.received;
      st.bytes_received += m.bytes.size();
      if (!error.empty()) continue;  // keep the lowest rank's error; still drain the children
      if (m.status != 0) {
        error = detail::text_of(m);
        continue;
      }
      try {
        merge(m.bytes, child);
      } catch (const std::exception& e) {
        error = "merging the state of rank " + std::to_string(child) + " into rank " + std::to_string(st.rank) +
                ": " + e.what();
      }
    }
  }
  const std::string verdict = detail::broadcast_error(st.rank == root ? error : std::string(), root, comm);
  if (!verdict.empty()) quantkit::detail::fail("sharded calibration over ", st.ranks, " MPI ranks failed: ", verdict);
  return st;
}

// Serialized observer states: CBOR of calibration_to_json (floats as float64: exact).
template <class Observer>
std::vector<std::uint8_t> serialize(const Calibration<Observer>& cal) {
  return nlohmann::json::to_cbor(calibration_to_json(cal));
}
template <class Observer>
void merge_serialized(Calibration<Observer>& into, const std::vector<std::uint8_t>& bytes) {
  Calibration<Observer> other(into.defaults(), into.options());
  calibration_from_json(nlohmann::json::from_cbor(bytes), other);
  into.merge(other);
}

// Reduces every rank's Calibration into `cal` on `root` (collective: every rank of `comm`
// calls it). `local_error`: this rank's shard failed (its state is not sent).
template <class Observer>
ReduceStats reduce(Calibration<Observer>& cal, MPI_Comm comm, int root = 0, std::string local_error = {}) {
  return tree_reduce([&] { return serialize(cal); },
                     [&](const std::vector<std::uint8_t>& b, int) { merge_serialized(cal, b); },
                     std::move(local_error), comm, root);
}

// The same for a Profile (statistics of every tensor; shards must come from the same graph).
inline ReduceStats reduce(Profile& profile, MPI_Comm comm, int root = 0, std::string local_error = {}) {
  return tree_reduce([&] { return std::vector<std::uint8_t>(nlohmann::json::to_cbor(profile_to_json(profile))); },
                     [&](const std::vector<std::uint8_t>& b, int from) {
                       profile.merge(profile_from_json(nlohmann::json::from_cbor(b),
                                                       "profile of rank " + std::to_string(from)));
                     },
                     std::move(local_error), comm, root);
}

// A ptq::GraphCalibrator<Observer> (any type with calibration(), output_calibration(),
// batches() and merge(activations, outputs, batches); a template so that this header does not
// need the executor): activation observers, graph-output min-max observers and batch counts.
template <class GraphCalibratorT>
ReduceStats reduce_calibrator(GraphCalibratorT& cal, MPI_Comm comm, int root = 0, std::string local_error = {}) {
  using Observer = typename std::decay_t<decltype(cal.calibration())>::observer_type;
  using OutputObserver = typename std::decay_t<decltype(cal.output_calibration())>::observer_type;
  return tree_reduce(
      [&] {
        nlohmann::json j;
        j["activations"] = calibration_to_json(cal.calibration());
        j["outputs"] = calibration_to_json(cal.output_calibration());
        j["batches"] = static_cast<std::uint64_t>(cal.batches());
        return std::vector<std::uint8_t>(nlohmann::json::to_cbor(j));
      },
      [&](const std::vector<std::uint8_t>& b, int from) {
        const nlohmann::json j = nlohmann::json::from_cbor(b);
        const std::string where = "calibration state of rank " + std::to_string(from);
        Calibration<Observer> acts(cal.calibration().defaults(), cal.calibration().options());
        calibration_from_json(json_io::at(j, "activations", where), acts);
        Calibration<OutputObserver> outs(cal.output_calibration().defaults(), cal.output_calibration().options());
        calibration_from_json(json_io::at(j, "outputs", where), outs);
        cal.merge(acts, outs, static_cast<std::size_t>(json_io::get<std::uint64_t>(j, "batches", where)));
      },
      std::move(local_error), comm, root);
}

// Every rank's verdict on a step it ran alone (reading its shard's headers, ...): throws the
// same Error on every rank when any rank failed, naming the lowest failing rank.
inline void agree(const std::string& local_error, MPI_Comm comm) {
  const int rank = detail::comm_rank(comm);
  int failing = local_error.empty() ? std::numeric_limits<int>::max() : rank;
  int lowest = failing;
  detail::check(MPI_Allreduce(&failing, &lowest, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (lowest == std::numeric_limits<int>::max()) return;
  std::int64_t n = static_cast<std::int64_t>(local_error.size());
  detail::check(MPI_Bcast(&n, 1, MPI_INT64_T, lowest, comm), "MPI_Bcast");
  std::string text = local_error;
  text.resize(static_cast<std::size_t>(n));
  if (n > 0) detail::check(MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, lowest, comm), "MPI_Bcast");
  quantkit::detail::fail("rank ", lowest, " of ", detail::comm_size(comm), ": ", text);
}

}  // namespace mpi
}  // namespace quantkit
