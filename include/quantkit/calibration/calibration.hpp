// Calibration<Observer>: one observer per named tensor — what a model's activations are
// calibrated with. Feed batches by name, merge shards, then ask for each tensor's QuantParams.
//
//   qk::Calibration<qk::KlObserver> cal;                       // per-tensor by default
//   cal.configure("conv1.weight", qk::Granularity::per_channel(0));
//   for (auto& batch : data) { cal.observe("x", batch.x); cal.observe("conv1.out", out1); }
//   auto all = cal.params(qk::QuantTarget{qk::IntRange::of<qk::Int8>(), qk::SymmetryKind::symmetric});
//
// Each tensor's observer is created on its first batch from the defaults (granularity, non-finite
// policy, observer options) or from configure(). Errors name the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/params.hpp"
#include "quantkit/tensor/tensor_traits.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {

template <class Observer>
class Calibration {
 public:
  using observer_type = Observer;
  using Options = typename Observer::Options;

  // `defaults.name` is ignored: each observer is named after its tensor.
  explicit Calibration(ObserverConfig defaults = {}, Options options = {})
      : defaults_(std::move(defaults)), options_(std::move(options)) {}

  const ObserverConfig& defaults() const { return defaults_; }
  const Options& options() const { return options_; }

  // Granularity / non-finite policy (and options) for one tensor, before its first batch.
  void configure(const std::string& name, Granularity granularity) {
    ObserverConfig c = defaults_;
    c.granularity = granularity;
    configure(name, std::move(c), options_);
  }
  void configure(const std::string& name, ObserverConfig config, Options options) {
    if (observers_.count(name))
      detail::fail(detail::describe_tensor(name), ": already configured or observed; configure() "
                   "must come before the tensor's first batch");
    config.name = name;
    observers_.emplace(name, Observer(std::move(config), std::move(options)));
  }

  // One batch of tensor `name` (any adapted tensor: View, with_shape(...), Eigen, ...).
  template <class T>
  void observe(const std::string& name, const T& batch) {
    auto v = make_view(batch);
    using Elem = std::remove_const_t<typename decltype(v)::value_type>;
    if (v.name().empty()) v.named(name);
    get_or_create(name).observe(View<const Elem, decltype(v)::static_rank>(v));
  }

  // Adds another shard's observers (same observer kind and options per tensor; tensors only in
  // `other` are copied).
  void merge(const Calibration& other) {
    for (const auto& [name, obs] : other.observers_) {
      auto it = observers_.find(name);
      if (it == observers_.end())
        observers_.emplace(name, obs);
      else
        it->second.merge(obs);
    }
  }

  bool contains(const std::string& name) const { return observers_.count(name) != 0; }
  std::size_t size() const { return observers_.size(); }
  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const auto& kv : observers_) n.push_back(kv.first);
    return n;
  }
  const Observer& observer(const std::string& name) const {
    auto it = observers_.find(name);
    if (it == observers_.end()) fail_unknown(name);
    return it->second;
  }
  Observer& observer(const std::string& name) {
    auto it = observers_.find(name);
    if (it == observers_.end()) fail_unknown(name);
    return it->second;
  }
  // Adds an observer restored elsewhere (e.g. from JSON); merges if the tensor exists.
  void insert(const std::string& name, Observer obs) {
    auto it = observers_.find(name);
    if (it == observers_.end())
      observers_.emplace(name, std::move(obs));
    else
      it->second.merge(obs);
  }

  std::vector<Range> ranges(const std::string& name, const QuantTarget& target) const {
    return observer(name).ranges(target);
  }
  QuantParams params(const std::string& name, const QuantTarget& target) const {
    const Observer& o = observer(name);
    return compute_qparams(o.ranges(target), o.config().granularity, target.range, target.symmetry,
                           target.convention, name);
  }
  std::map<std::string, QuantParams> params(const QuantTarget& target) const {
    std::map<std::string, QuantParams> out;
    for (const auto& kv : observers_) out.emplace(kv.first, params(kv.first, target));
    return out;
  }

  const std::map<std::string, Observer>& observers() const { return observers_; }

 private:
  [[noreturn]] void fail_unknown(const std::string& name) const {
    detail::fail(detail::describe_tensor(name), ": not calibrated (", observers_.size(),
                 " tensors observed); expected a tensor that observe() saw");
  }
  Observer& get_or_create(const std::string& name) {
    auto it = observers_.find(name);
    if (it != observers_.end()) return it->second;
    ObserverConfig c = defaults_;
    c.name = name;
    return observers_.emplace(name, Observer(std::move(c), options_)).first->second;
  }

  ObserverConfig defaults_;
  Options options_;
  std::map<std::string, Observer> observers_;
};

}  // namespace quantkit
