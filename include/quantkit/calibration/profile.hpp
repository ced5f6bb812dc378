// Profile: the raw calibration statistics of a model — per tensor, per slot, the exact range,
// count and a mergeable grid histogram (StatisticsObserver) — tagged with a hash of the graph
// they came from. Parameters for any observer method, bit width, symmetry or convention are
// derived from it without running the model again (Glow's profiles, with the schema kept out
// of the profile). Saved and loaded with quantkit/calibration/json.hpp; loading it for another
// graph is an error.
//
//   qk::Profile prof(qk::GraphHash().add("model.onnx bytes or node list").hex());
//   for (...) prof.observe("relu1", activations);
//   auto p8  = prof.params("relu1", qk::RangeMethod::kl(), int8_symmetric);
//   auto p4  = prof.params("relu1", qk::RangeMethod::mse(), int4_affine);
//
// Methods that depend on batch order or on PyTorch's own binning (moving average, the
// HistogramObserver) cannot be derived from a profile; "l2" runs PyTorch's search on the
// profile's histogram instead.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/calibration/calibration.hpp"
#include "quantkit/error.hpp"
#include "quantkit/observer/distribution.hpp"
#include "quantkit/observer/range_method.hpp"
#include "quantkit/params.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {

// FNV-1a 64-bit over what identifies a graph (node names, op types, tensor names and shapes,
// or the model's bytes), in the order added. Integers are added as 8 little-endian bytes,
// strings with their length first, so ("ab", "c") and ("a", "bc") differ.
class GraphHash {
 public:
  GraphHash& add_bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001b3ull;
    }
    return *this;
  }
  GraphHash& add(std::int64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xffu);
    return add_bytes(b, 8);
  }
  GraphHash& add(const std::string& s) {
    add(static_cast<std::int64_t>(s.size()));
    return add_bytes(s.data(), s.size());
  }
  GraphHash& add(const char* s) { return add(std::string(s)); }
  GraphHash& add(const Dims& d) {
    add(static_cast<std::int64_t>(d.rank));
    for (int i = 0; i < d.rank; ++i) add(d[i]);
    return *this;
  }
  std::uint64_t value() const { return h_; }
  // "fnv1a64:0123456789abcdef"
  std::string hex() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ull;
};

class Profile {
 public:
  // `graph_hash` identifies the graph (GraphHash::hex() or the graph layer's own hash);
  // `bins` the histogram resolution of every slot.
  explicit Profile(std::string graph_hash = {}, int bins = 4096, ObserverConfig defaults = {})
      : graph_hash_(std::move(graph_hash)), bins_(bins), stats_(std::move(defaults), options_for(bins)) {
    if (bins < 2 || bins > (1 << 24))
      detail::fail("profile with ", bins, " histogram bins; expected 2 .. 2^24 bins");
  }

  const std::string& graph_hash() const { return graph_hash_; }
  int bins() const { return bins_; }

  // Fails unless this profile was recorded from the graph with hash `hash`.
  void expect_graph(const std::string& hash, const std::string& what = "profile") const {
    if (hash != graph_hash_)
      detail::fail(what, ": recorded from graph ", graph_hash_.empty() ? "(no hash)" : graph_hash_,
                   "; this graph is ", hash.empty() ? "(no hash)" : hash,
                   "; expected a profile of the same graph (calibrate this graph again)");
  }

  void configure(const std::string& name, Granularity g) { stats_.configure(name, g); }
  template <class T>
  void observe(const std::string& name, const T& batch) {
    stats_.observe(name, batch);
  }
  // Another shard of the same graph: exact (histograms merge exactly).
  void merge(const Profile& other) {
    other.expect_graph(graph_hash_, "profile shard");
    if (other.bins_ != bins_)
      detail::fail("profile shard: ", other.bins_, " histogram bins; this profile has ", bins_,
                   "; expected the same bin count");
    stats_.merge(other.stats_);
  }

  bool contains(const std::string& name) const { return stats_.contains(name); }
  std::vector<std::string> names() const { return stats_.names(); }
  const StatisticsObserver& statistics(const std::string& name) const { return stats_.observer(name); }
  const Calibration<StatisticsObserver>& calibration() const { return stats_; }
  Calibration<StatisticsObserver>& calibration() { return stats_; }

  std::vector<Range> ranges(const std::string& name, const RangeMethod& method,
                            const QuantTarget& target) const {
    return statistics(name).ranges(target, method);
  }
  std::vector<RangeChoice> explain(const std::string& name, const RangeMethod& method,
                                   const QuantTarget& target) const {
    return statistics(name).explain(target, method);
  }
  QuantParams params(const std::string& name, const RangeMethod& method, const QuantTarget& target) const {
    const StatisticsObserver& s = statistics(name);
    return compute_qparams(s.ranges(target, method), s.config().granularity, target.range,
                           target.symmetry, target.convention, name);
  }
  std::map<std::string, QuantParams> params(const RangeMethod& method, const QuantTarget& target) const {
    std::map<std::string, QuantParams> out;
    for (const auto& n : names()) out.emplace(n, params(n, method, target));
    return out;
  }

 private:
  static StatisticsObserver::Options options_for(int bins) {
    StatisticsObserver::Options o;
    o.bins = bins;
    return o;
  }

  std::string graph_hash_;
  int bins_;
  Calibration<StatisticsObserver> stats_;
};

}  // namespace quantkit
