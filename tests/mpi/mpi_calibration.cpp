// Sharded calibration over MPI (quantkit/calibration/mpi.hpp), run by ctest under
// `mpirun -n N` for N = 1, 2, 4 (tests/mpi/CMakeLists.txt). Every rank generates the same data
// set (24 batches of two tensors), takes its shard in a shuffled assignment and observes it in
// reverse order; the highest rank takes no batch at all when N > 2. Rank 0 then compares the
// reduced state with one Calibration that saw every batch in order:
//   min-max, percentile / kl (grid histograms) and Profile: identical ranges and QuantParams;
//   the PyTorch HistogramObserver: count conserved, cumulative counts within the documented
//     re-binning bound (observer/histogram.hpp);
//   the reduction: ceil(log2 N) rounds, the root receives ceil(log2 N) messages.
// Then the error paths: a rank whose shard holds a NaN (NonFiniteKind::reject), and agree()
// on a failure of one rank, throw the same Error on every rank naming the failing rank.
// Exit status 0 when every check passes on every rank.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "quantkit/calibration/mpi.hpp"
#include "quantkit/observer/histogram.hpp"
#include "quantkit/observer/kl.hpp"
#include "quantkit/observer/minmax.hpp"
#include "quantkit/observer/percentile.hpp"
#include "quantkit/tensor/span.hpp"

namespace qk = quantkit;

namespace {

int rank = 0, ranks = 1, failures = 0, checks = 0;

#define CHECK(cond, ...)                                                         \
  do {                                                                           \
    ++checks;                                                                    \
    if (!(cond)) {                                                               \
      ++failures;                                                                \
      std::fprintf(stderr, "rank %d: FAILED %s:%d: %s ", rank, __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                         \
      std::fprintf(stderr, "\n");                                                \
    }                                                                            \
  } while (0)

constexpr int kBatches = 24;
const qk::Dims kShape{4, 3, 5};  // per channel along axis 1

struct Batch {
  std::vector<float> a, b;
};

std::vector<Batch> make_data() {
  std::mt19937 rng(1234);
  std::vector<Batch> out(kBatches);
  for (int i = 0; i < kBatches; ++i) {
    // Batches of different scales and offsets, so that ranges grow from batch to batch (the
    // histogram observers re-bin) and the extremes sit in different shards.
    std::normal_distribution<float> na(0.3f * static_cast<float>(i % 5), 1.0f + 0.4f * static_cast<float>(i % 7));
    std::uniform_real_distribution<float> ub(-2.0f - static_cast<float>(i), 1.0f + 0.5f * static_cast<float>(i % 4));
    for (int k = 0; k < 60; ++k) out[static_cast<std::size_t>(i)].a.push_back(na(rng));
    for (int k = 0; k < 60; ++k) out[static_cast<std::size_t>(i)].b.push_back(std::max(0.0f, ub(rng)));
  }
  return out;
}

// Batch i goes to rank owner[i]: a fixed shuffle, the last rank left empty when ranks > 2.
std::vector<int> owners() {
  std::vector<int> idx(kBatches);
  for (int i = 0; i < kBatches; ++i) idx[static_cast<std::size_t>(i)] = i;
  std::mt19937 rng(99);
  std::shuffle(idx.begin(), idx.end(), rng);
  const int used = ranks > 2 ? ranks - 1 : ranks;
  std::vector<int> owner(kBatches);
  for (int k = 0; k < kBatches; ++k) owner[static_cast<std::size_t>(idx[static_cast<std::size_t>(k)])] = k % used;
  return owner;
}

template <class Cal>
void feed(Cal& cal, const Batch& b) {
  cal.observe("a", qk::with_shape(b.a, kShape));
  cal.observe("b", qk::with_shape(b.b, qk::Dims{60}));
}

template <class Observer>
qk::Calibration<Observer> configured(typename Observer::Options opt = {}) {
  qk::Calibration<Observer> cal(qk::ObserverConfig{}, opt);
  cal.configure("a", qk::Granularity::per_channel(1));
  return cal;
}

// This rank's shard (reverse order) into cal; the sequential reference on rank 0.
template <class Observer>
void shard_and_reference(const std::vector<Batch>& data, qk::Calibration<Observer>& mine,
                         qk::Calibration<Observer>& all) {
  const std::vector<int> owner = owners();
  for (int i = kBatches - 1; i >= 0; --i)
    if (owner[static_cast<std::size_t>(i)] == rank) feed(mine, data[static_cast<std::size_t>(i)]);
  for (const auto& b : data) feed(all, b);
}

qk::QuantTarget t8(qk::SymmetryKind s) {
  return qk::QuantTarget{s == qk::SymmetryKind::symmetric ? qk::IntRange{-128, 127} : qk::IntRange{0, 255}, s};
}

int expected_depth() {
  int d = 0;
  while ((1 << d) < ranks) ++d;
  return d;
}

// Exact kinds: the reduced observer gives the same ranges and parameters as the sequential one.
template <class Observer>
void exact_kind(const char* kind, const std::vector<Batch>& data, typename Observer::Options opt = {}) {
  auto mine = configured<Observer>(opt);
  auto all = configured<Observer>(opt);
  shard_and_reference(data, mine, all);
  const qk::mpi::ReduceStats st = qk::mpi::reduce(mine, MPI_COMM_WORLD);
  CHECK(st.depth == expected_depth(), "%s: depth %d", kind, st.depth);
  if (rank != 0) return;
  CHECK(st.received == expected_depth(), "%s: root received %d messages", kind, st.received);
  CHECK(mine.names() == all.names(), "%s: tensors differ", kind);
  for (const auto& name : all.names())
    for (auto sym : {qk::SymmetryKind::affine, qk::SymmetryKind::symmetric}) {
      const auto rm = mine.ranges(name, t8(sym)), rs = all.ranges(name, t8(sym));
      CHECK(rm == rs, "%s tensor %s: reduced ranges differ from one process", kind, name.c_str());
      const qk::QuantParams pm = mine.params(name, t8(sym)), ps = all.params(name, t8(sym));
      CHECK(pm.scale == ps.scale && pm.zero_point == ps.zero_point, "%s tensor %s: parameters differ", kind,
            name.c_str());
      for (std::size_t k = 0; k < rm.size() && k < rs.size(); ++k)
        CHECK(rm[k].min == rs[k].min && rm[k].max == rs[k].max, "%s %s slot %zu: [%.9g, %.9g] vs [%.9g, %.9g]",
              kind, name.c_str(), k, rm[k].min, rm[k].max, rs[k].min, rs[k].max);
    }
  // Real values: the min-max range of "b" is the data's own.
  if (std::string(kind) == "minmax") {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (const auto& b : data)
      for (float v : b.b) lo = std::min(lo, v), hi = std::max(hi, v);
    const auto r = mine.ranges("b", t8(qk::SymmetryKind::affine));
    CHECK(r.size() == 1 && r[0].min == lo && r[0].max == hi, "minmax b: [%g, %g], data [%g, %g]", r[0].min, r[0].max,
          lo, hi);
    CHECK(mine.ranges("a", t8(qk::SymmetryKind::affine)).size() == 3, "per-channel a: 3 channels");
  }
}

void profile_kind(const std::vector<Batch>& data) {
  qk::Profile mine("fnv1a64:test", 512), all("fnv1a64:test", 512);
  mine.configure("a", qk::Granularity::per_channel(1));
  all.configure("a", qk::Granularity::per_channel(1));
  const std::vector<int> owner = owners();
  for (int i = kBatches - 1; i >= 0; --i)
    if (owner[static_cast<std::size_t>(i)] == rank) feed(mine, data[static_cast<std::size_t>(i)]);
  for (const auto& b : data) feed(all, b);
  (void)qk::mpi::reduce(mine, MPI_COMM_WORLD);
  if (rank != 0) return;
  for (const auto& name : all.names()) {
    CHECK(mine.statistics(name).state() == all.statistics(name).state(), "profile %s: histograms differ", name.c_str());
    for (const auto& m : {qk::RangeMethod::kl(), qk::RangeMethod::mse(), qk::RangeMethod::percentile_of(0.999)}) {
      const qk::QuantParams pm = mine.params(name, m, t8(qk::SymmetryKind::symmetric));
      const qk::QuantParams ps = all.params(name, m, t8(qk::SymmetryKind::symmetric));
      CHECK(pm.scale == ps.scale && pm.zero_point == ps.zero_point, "profile %s: parameters differ", name.c_str());
    }
  }
}

// HistogramObserver: counts conserved; at every edge of the reduced histogram the cumulative
// count is within the count of two bins of the edge of the sequential one's (the documented bound).
void histogram_kind(const std::vector<Batch>& data) {
  auto mine = configured<qk::HistogramObserver>();
  auto all = configured<qk::HistogramObserver>();
  shard_and_reference(data, mine, all);
  (void)qk::mpi::reduce(mine, MPI_COMM_WORLD);
  if (rank != 0) return;
  int slots = 0;
  double worst = 0.0;
  for (const auto& name : all.names()) {
    const auto& sm = mine.observer(name).state();
    const auto& ss = all.observer(name).state();
    CHECK(sm.size() == ss.size(), "histogram %s: slots", name.c_str());
    for (std::size_t i = 0; i < sm.size() && i < ss.size(); ++i) {
      const auto& hm = sm[i];
      const auto& hs = ss[i];
      const std::size_t n = hs.histogram.size();
      double tm = 0, ts = 0;
      for (float v : hm.histogram) tm += v;
      for (float v : hs.histogram) ts += v;
      CHECK(std::fabs(tm - ts) <= 1e-3 * ts, "histogram %s slot %zu: count %g vs %g", name.c_str(), i, tm, ts);
      CHECK(hm.min == hs.min, "histogram %s slot %zu: min %g vs %g", name.c_str(), i, hm.min, hs.min);
      const double ws = (static_cast<double>(hs.max) - hs.min) / n, wm = (static_cast<double>(hm.max) - hm.min) / n;
      auto cdf_s = [&](double x) {
        double c = 0.0;
        for (std::size_t k = 0; k < n; ++k) {
          const double lo = hs.min + ws * k, hi = lo + ws;
          if (x >= hi) c += hs.histogram[k];
          else if (x > lo) c += hs.histogram[k] * (x - lo) / ws;
        }
        return c;
      };
      double cm = 0.0;
      for (std::size_t k = 0; k < n; ++k) {
        cm += hm.histogram[k];
        const double edge = hm.min + wm * (k + 1);
        const double window = cdf_s(edge + 2 * wm) - cdf_s(edge - 2 * wm);
        const double diff = std::fabs(cdf_s(edge) - cm);
        worst = std::max(worst, diff / std::max(window, 1.0));
        CHECK(diff <= window + 1e-3 * ts, "histogram %s slot %zu edge %zu: |cdf diff| %g > bound %g", name.c_str(), i,
              k, diff, window);
      }
      ++slots;
    }
  }
  CHECK(slots == 4, "histogram slots compared: %d", slots);
  std::printf("histogram over %d ranks: worst |cumulative difference| / count within 2 bins = %.3f\n", ranks, worst);
}

// Errors: a NaN in the last rank's shard; every rank sees the same Error naming it.
void error_paths() {
  qk::Calibration<qk::MinMaxObserver> cal;  // NonFiniteKind::reject by default
  std::string local;
  try {
    std::vector<float> x = {1.0f, 2.0f, 3.0f};
    if (rank == ranks - 1) x[1] = std::nanf("");
    cal.observe("act", qk::as_tensor(x));
  } catch (const qk::Error& e) {
    local = e.what();
  }
  CHECK((rank == ranks - 1) == !local.empty(), "only the last rank fails locally");
  std::string seen;
  try {
    (void)qk::mpi::reduce(cal, MPI_COMM_WORLD, 0, local);
  } catch (const qk::Error& e) {
    seen = e.what();
  }
  const std::string who = "rank " + std::to_string(ranks - 1) + ":";
  CHECK(seen.find(who) != std::string::npos && seen.find("act") != std::string::npos,
        "reduce error names the rank and tensor: '%s'", seen.c_str());

  std::string agreed;
  try {
    qk::mpi::agree(rank == ranks / 2 ? "file 'x.npy': truncated" : "", MPI_COMM_WORLD);
  } catch (const qk::Error& e) {
    agreed = e.what();
  }
  const std::string expect = "rank " + std::to_string(ranks / 2) + " of " + std::to_string(ranks) + ": file 'x.npy'";
  CHECK(agreed.find(expect) != std::string::npos, "agree: '%s'", agreed.c_str());
  bool fine = true;
  try {
    qk::mpi::agree("", MPI_COMM_WORLD);
  } catch (const qk::Error&) {
    fine = false;
  }
  CHECK(fine, "agree without errors throws nothing");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::vector<Batch> data = make_data();
  try {
    exact_kind<qk::MinMaxObserver>("minmax", data);
    qk::PercentileObserver::Options p;
    p.method = qk::RangeMethod::percentile_of(0.999);
    exact_kind<qk::PercentileObserver>("percentile", data, p);
    exact_kind<qk::KlObserver>("kl", data);
    profile_kind(data);
    histogram_kind(data);
    error_paths();
  } catch (const std::exception& e) {
    ++failures;
    std::fprintf(stderr, "rank %d: unexpected exception: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("mpi_calibration over %d ranks: %d checks on rank 0, %d failures on all ranks\n", ranks, checks, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
