// The observer a --observer spec names, as a type: with_observer(spec, f) calls
// f(ObserverTag<Observer>{}, options) (used by calibrate_model.cpp and cmd_calibrate.cpp).
#pragma once

#include "cli.hpp"
#include "quantkit/observer/auto.hpp"
#include "quantkit/observer/histogram.hpp"
#include "quantkit/observer/kl.hpp"
#include "quantkit/observer/minmax.hpp"
#include "quantkit/observer/moving_average.hpp"
#include "quantkit/observer/mse.hpp"
#include "quantkit/observer/percentile.hpp"

namespace quantkit {
namespace cli {

template <class Observer>
struct ObserverTag {
  using type = Observer;
};

// percentile:P is P % of |x| for symmetric targets, two-sided ((100 - P) / 2 % cut from each
// tail) for affine ones (PercentileObserver's default side); kl is TensorRT's entropy
// calibration with the zero-bin fix of NVIDIA's pytorch-quantization (the zero spike after a
// ReLU removed).
template <class F>
decltype(auto) with_observer(const ObserverSpec& s, F&& f) {
  switch (s.kind) {
    case ObserverKind::minmax: return f(ObserverTag<MinMaxObserver>{}, MinMaxObserver::Options{});
    case ObserverKind::moving_average: {
      MovingAverageMinMaxObserver::Options o;
      o.averaging_constant = s.averaging_constant;
      return f(ObserverTag<MovingAverageMinMaxObserver>{}, o);
    }
    case ObserverKind::percentile: {
      PercentileObserver::Options o;
      o.method = RangeMethod::percentile_of(s.percent / 100.0);
      return f(ObserverTag<PercentileObserver>{}, o);
    }
    case ObserverKind::histogram: return f(ObserverTag<HistogramObserver>{}, HistogramObserver::Options{});
    case ObserverKind::mse: return f(ObserverTag<MseObserver>{}, MseObserver::Options{});
    case ObserverKind::kl: {
      KlObserver::Options o;
      o.method.kl_zero_bin_fix = true;
      return f(ObserverTag<KlObserver>{}, o);
    }
    case ObserverKind::automatic: return f(ObserverTag<AutoObserver>{}, AutoObserver::Options{});
    case ObserverKind::mix:
      usage_fail("--observer mix chooses per node from the whole model's output; expected it with quantize, run, "
                 "eval, compare or debug (calibrate observes single tensors: use kl, minmax or percentile:P)");
  }
  return f(ObserverTag<MinMaxObserver>{}, MinMaxObserver::Options{});
}

}  // namespace cli
}  // namespace quantkit
