// What every observer is given (ObserverConfig) and asked for (QuantTarget).
//
// An observer is a policy type (category::observer) constructible from an ObserverConfig with
//   template <class T, int R> void observe(const View<const T, R>&);  // one batch
//   std::vector<Range> ranges(const QuantTarget&) const;              // one per param
//   void merge(const Self&);   bool empty() const;   void reset();
// Observers stream: their memory is bounded by their state, never by the data seen.
#pragma once

#include <string>

#include "quantkit/policy/category.hpp"
#include "quantkit/params.hpp"
#include "quantkit/policy/convention.hpp"
#include "quantkit/policy/granularity.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/policy/scale_application.hpp"
#include "quantkit/policy/symmetry.hpp"

namespace quantkit {

struct ObserverConfig {
  Granularity granularity = Granularity::per_tensor();
  NonFiniteKind nonfinite = NonFiniteKind::reject;
  std::string name;  // the tensor's name, for error messages
};

// The quantization the ranges are for: observers that search a clipping range (MSE, KL,
// histogram) need the format and rounding; min-max ignores them.
struct QuantTarget {
  IntRange range{};
  SymmetryKind symmetry = SymmetryKind::affine;
  ConventionKind convention = ConventionKind::pytorch;
  RoundingMode rounding = RoundingMode::half_even;
  ScaleApplicationKind application = ScaleApplicationKind::divide;
};

}  // namespace quantkit
