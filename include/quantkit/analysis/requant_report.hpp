// Shift-based scaling report: for a QDQ graph and a requantization scheme, every real rescale
// factor of the integer graph (s_in * s_w / s_out per output channel, and the others
// quantkit/executor/integer/layers.hpp lists), the scheme's approximation of it, the relative
// error, and the constants in N2D2's notation ("SINGLE_SHIFT: 2 ^ [- 14]"). A factor the scheme
// cannot express (a scale > 1 for the single/double shift and power-of-two schemes) is
// approximated with FixedPointDoubleRounding instead, as N2D2 falls back to a fixed-point
// multiplier there, and the row says so (fell_back + warning).
//
//   auto rows = quantkit::analysis::requant_report(qdq, quantkit::RequantScheme::single_shift);
//   std::fputs(quantkit::analysis::format_requant_report(rows).c_str(), stdout);
//
// The factors come from the graph IntegerModeT<FixedPointDoubleRounding> makes (it converts
// every multiplier up to 2^30), traced once on zero inputs (shapes: as trace() takes them).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/integer/layers.hpp"
#include "quantkit/policy/requantization.hpp"
#include "quantkit/policy/rounding.hpp"

namespace quantkit {
namespace analysis {

struct RequantRow {
  std::string node;          // the layer (the original node's name)
  std::string op;            // the integer op: IntConv, IntMatMul, IntAdd, ...
  std::string what;          // "channel 3", "per tensor", "input a", "window of 4", ...
  double real = 0;           // the real rescale factor
  double approximation = 0;  // what the scheme (or its fallback) applies
  double relative_error = 0; // |approximation - real| / real
  RequantScheme scheme = RequantScheme::fixed_point;  // the scheme that approximates it
  std::string constants;     // e.g. "2 ^ -14", "2 ^ -9 + 2 ^ -12", "1518500250 * 2 ^ -38"
  bool fell_back = false;    // the asked scheme cannot express it
  std::string warning;       // why, and what was used instead
};

namespace detail {

inline std::string pow2(int e) { return "2 ^ " + std::to_string(e); }

inline std::string constants_text(const FloatScale& c) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", static_cast<double>(c.multiplier));
  return b;
}
inline std::string constants_text(const ShiftScale& c) { return pow2(-c.shift); }
inline std::string constants_text(const ref::QuantizedMultiplier& c) {
  return std::to_string(c.multiplier) + " * " + pow2(c.shift - 31);
}
inline std::string constants_text(const DoubleShift::Constants& c) {
  return pow2(c.shift1 - c.shift2) + " + " + pow2(-c.shift2);
}

template <class S>
void approximate(RequantRow& r, const std::string& layer) {
  const auto k = S::make(r.real, layer);
  r.approximation = S::approximation(k);
  r.constants = constants_text(k);
  r.scheme = S::scheme;
  r.relative_error = std::fabs(r.approximation - r.real) / r.real;
}

// N2D2's name of a scheme.
inline const char* n2d2_name(RequantScheme s) {
  switch (s) {
    case RequantScheme::float_multiplier: return "FLOAT_MULT";
    case RequantScheme::power_of_two: return "POWER_OF_TWO";
    case RequantScheme::fixed_point: return "FIXED_MULT32";
    case RequantScheme::fixed_point_single: return "FIXED_MULT32 (single rounding)";
    case RequantScheme::single_shift: return "SINGLE_SHIFT";
    case RequantScheme::double_shift: return "DOUBLE_SHIFT";
  }
  return "?";
}

template <class F>
void visit_scheme(RequantScheme s, F&& f) {
  switch (s) {
    case RequantScheme::float_multiplier: f(FloatMultiplier<RoundHalfEven>{}); return;
    case RequantScheme::power_of_two: f(PowerOfTwo<RoundHalfAway>{}); return;
    case RequantScheme::fixed_point: f(FixedPointDoubleRounding{}); return;
    case RequantScheme::fixed_point_single: f(FixedPointSingleRounding{}); return;
    case RequantScheme::single_shift: f(SingleShift{}); return;
    case RequantScheme::double_shift: f(DoubleShift{}); return;
  }
  quantkit::detail::fail("requantization report: unknown scheme ", static_cast<int>(s));
}

}  // namespace detail

// One row per real rescale factor of every integer layer, in graph order. Compute nodes the
// integer mode leaves in float have no rows (quantkit::IntegerNodeInfo says why).
template <class Scheme>
std::vector<RequantRow> requant_report(const graph::Graph& qdq,
                                       const std::map<std::string, std::vector<std::int64_t>>& input_shapes = {}) {
  const integer::TracedGraph t = integer::trace<FixedPointDoubleRounding>(qdq, input_shapes);
  std::vector<RequantRow> rows;
  for (std::size_t idx : t.graph.topological_order()) {
    const graph::Node& n = t.graph.nodes[idx];
    for (const auto& m : integer::real_multipliers<Scheme>(t, n)) {
      RequantRow r;
      r.node = n.name.empty() ? n.outputs.at(0) : n.name;
      r.op = n.op_type;
      r.what = m.what;
      r.real = m.value;
      try {
        detail::approximate<Scheme>(r, r.node);
      } catch (const Error& e) {
        r.fell_back = true;
        char b[160];
        std::snprintf(b, sizeof b, "needs a scale of %.6g, which %s cannot express; fell back to %s", r.real,
                      detail::n2d2_name(Scheme::scheme), detail::n2d2_name(RequantScheme::fixed_point));
        r.warning = b;
        detail::approximate<FixedPointDoubleRounding>(r, r.node);
      }
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

// The same with the scheme chosen at run time (PowerOfTwo rounds half away from zero, the
// float multiplier half to even).
inline std::vector<RequantRow> requant_report(const graph::Graph& qdq, RequantScheme scheme,
                                              const std::map<std::string, std::vector<std::int64_t>>& input_shapes = {}) {
  std::vector<RequantRow> rows;
  detail::visit_scheme(scheme, [&](auto s) { rows = requant_report<decltype(s)>(qdq, input_shapes); });
  return rows;
}

// Text: per layer, the factors and N2D2-style constants ("SINGLE_SHIFT: 2 ^ [- 14 - 13]"),
// the largest relative error; then one warning line per factor that fell back.
inline std::string format_requant_report(const std::vector<RequantRow>& rows) {
  std::string out;
  char line[512];
  std::size_t i = 0;
  double worst = 0;
  std::size_t fallbacks = 0;
  while (i < rows.size()) {
    std::size_t j = i;
    while (j < rows.size() && rows[j].node == rows[i].node && rows[j].op == rows[i].op) ++j;
    double lo = rows[i].real, hi = rows[i].real, err = 0;
    std::map<RequantScheme, std::vector<std::string>> by_scheme;
    for (std::size_t k = i; k < j; ++k) {
      lo = std::min(lo, rows[k].real);
      hi = std::max(hi, rows[k].real);
      err = std::max(err, rows[k].relative_error);
      by_scheme[rows[k].scheme].push_back(rows[k].constants);
      fallbacks += rows[k].fell_back;
    }
    worst = std::max(worst, err);
    std::snprintf(line, sizeof line, "%s (%s, %zu factor%s): real %.6g", rows[i].node.c_str(), rows[i].op.c_str(), j - i,
                  j - i == 1 ? "" : "s", lo);
    out += line;
    if (hi != lo) {
      std::snprintf(line, sizeof line, "..%.6g", hi);
      out += line;
    }
    std::snprintf(line, sizeof line, ", max relative error %.3g%%\n", 100.0 * err);
    out += line;
    for (const auto& kv : by_scheme) {
      const bool shift = kv.first == RequantScheme::single_shift || kv.first == RequantScheme::power_of_two;
      std::string list;
      for (const auto& c : kv.second) {
        std::string v = c;
        if (shift) {
          v = c.substr(4);                                        // "2 ^ -14" -> "-14"
          if (!v.empty() && v[0] == '-') v = "- " + v.substr(1);  // N2D2 prints "- 14"
        }
        list += (list.empty() ? "" : shift ? " " : ", ") + v;
      }
      out += std::string("    ") + detail::n2d2_name(kv.first) + ": " + (shift ? "2 ^ [" + list + "]" : "[" + list + "]") +
             "\n";
    }
    i = j;
  }
  for (const auto& r : rows)
    if (r.fell_back) out += "  warning: " + r.node + " (" + r.what + "): " + r.warning + "\n";
  std::snprintf(line, sizeof line, "%zu factor(s), largest relative error %.3g%%, %zu fell back to %s\n", rows.size(),
                100.0 * worst, fallbacks, detail::n2d2_name(RequantScheme::fixed_point));
  out += line;
  return out;
}

}  // namespace analysis
}  // namespace quantkit
