// Configured<Observer, MakeOptions>: an observer whose options are fixed at compile time, so a
// non-default observer still plugs into a Scheme (which constructs observers from an
// ObserverConfig alone):
//
//   inline qk::PercentileObserver::Options p99999() {
//     qk::PercentileObserver::Options o;
//     o.method = qk::RangeMethod::max_percentile(0.99995);
//     return o;
//   }
//   using A8 = qk::Scheme<qk::UInt8, qk::Configured<qk::PercentileObserver, p99999>>;
#pragma once

#include <utility>

#include "quantkit/observer/observer.hpp"

namespace quantkit {

template <class Observer, typename Observer::Options (*MakeOptions)()>
class Configured : public Observer {
 public:
  using Options = typename Observer::Options;
  explicit Configured(ObserverConfig config = {}) : Observer(std::move(config), MakeOptions()) {}
  Configured(ObserverConfig config, Options options) : Observer(std::move(config), std::move(options)) {}
  void merge(const Configured& other) { Observer::merge(other); }
};

}  // namespace quantkit
