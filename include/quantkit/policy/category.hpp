// Policy categories: every policy type names the slot of a Scheme it fills.
#pragma once

namespace quantkit {
namespace category {
struct format {};
struct granularity {};
struct symmetry {};
struct rounding {};
struct scale_application {};
struct convention {};
struct observer {};
struct nonfinite {};
}  // namespace category
}  // namespace quantkit
