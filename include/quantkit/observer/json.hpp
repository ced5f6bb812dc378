// JSON for observer state (needs nlohmann/json; opt-in — the core headers do not include it).
// Calibration can run sharded across processes or machines: each shard observes its batches,
// writes observer_to_json(observer), and one process reduces them with merge_observer_json()
// before deriving
// parameters. Floats are written exactly (float32 -> JSON number -> float32 round-trips), counts
// as integers, so a reduced observer equals the one that saw every batch (exactly for min-max and
// the histogram-based kinds, see each observer's merge()).
//
//   {"format": "quantkit-observer", "version": 1, "kind": "kl",
//    "config": {"name": "conv1.out", "granularity": {"kind": "per_channel", "axis": 1},
//               "nonfinite": "reject"},
//    "options": {...}, "state": [one entry per slot, null where nothing was observed]}
//
// observer_from_json<Observer>() checks the kind, the options that must agree and every slot's state,
// and throws quantkit::Error naming what is wrong (loading a "kl" state into a percentile
// observer, a 2048-bin state into a 4096-bin observer, a histogram whose grid does not match its
// range, ...).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "quantkit/error.hpp"
#include "quantkit/observer/distribution.hpp"
#include "quantkit/observer/grid_histogram.hpp"
#include "quantkit/observer/histogram.hpp"
#include "quantkit/observer/minmax.hpp"
#include "quantkit/observer/moving_average.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/observer/range_method.hpp"

namespace quantkit {
namespace json_io {

using json = nlohmann::json;

inline const json& at(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    detail::fail(where, ": missing \"", key, "\"; expected it in the observer JSON");
  return j.at(key);
}
// A JSON value as an integer of type T: an integer number inside T's range (nlohmann's own
// get<int>() converts 1e300 or -1 to int / unsigned with undefined behaviour).
template <class T>
T integer_from(const json& v, const std::string& what) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "integer_from: integer types only");
  bool ok = false;
  T out{};
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    ok = u <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    out = static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if constexpr (std::is_signed_v<T>)
      ok = i >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
           i <= static_cast<std::int64_t>(std::numeric_limits<T>::max());
    else
      ok = i >= 0 && static_cast<std::uint64_t>(i) <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    out = static_cast<T>(i);
  }
  if (!ok) {
    std::string text = v.dump();
    if (text.size() > 40) text = text.substr(0, 40) + "...";
    detail::fail(what, " is ", text, "; expected an integer in [", +std::numeric_limits<T>::min(), ", ",
                 +std::numeric_limits<T>::max(), "]");
  }
  return out;
}
template <class T>
T get(const json& j, const char* key, const std::string& where) {
  const json& v = at(j, key, where);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return integer_from<T>(v, where + ": \"" + key + "\"");
  } else if constexpr (std::is_same_v<T, std::vector<std::uint64_t>>) {
    if (!v.is_array()) detail::fail(where, ": \"", key, "\" is a ", v.type_name(), "; expected an array of counts");
    std::vector<std::uint64_t> out;
    out.reserve(v.size());
    for (const auto& e : v) out.push_back(integer_from<std::uint64_t>(e, where + ": an entry of \"" + key + "\""));
    return out;
  } else {
    try {
      return v.get<T>();
    } catch (const nlohmann::json::exception& e) {
      detail::fail(where, ": \"", key, "\" has the wrong type (", e.what(), ")");
    }
  }
}
// The "format" string and "version" integer of a document ("" and 0 when missing or of another
// type), without exceptions other than quantkit::Error.
inline std::string format_of(const json& j) {
  if (!j.is_object()) return {};
  auto it = j.find("format");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
inline std::int64_t version_of(const json& j) {
  if (!j.is_object()) return 0;
  auto it = j.find("version");
  return it != j.end() && it->is_number_integer() && !it->is_number_unsigned() ? it->get<std::int64_t>()
         : it != j.end() && it->is_number_unsigned() && it->get<std::uint64_t>() < (1u << 30)
             ? static_cast<std::int64_t>(it->get<std::uint64_t>())
             : 0;
}

// --- small types -------------------------------------------------------------------------

inline json range_to_json(const Range& r) {
  if (r.empty()) return nullptr;
  return json{{"min", r.min}, {"max", r.max}};
}
inline Range range_from_json(const json& j, const std::string& where) {
  if (j.is_null()) return Range{};
  Range r{static_cast<float>(get<double>(j, "min", where)), static_cast<float>(get<double>(j, "max", where))};
  if (!(r.min <= r.max))
    detail::fail(where, ": range [", r.min, ", ", r.max, "]; expected min <= max");
  return r;
}

inline json granularity_to_json(const Granularity& g) {
  switch (g.kind) {
    case GranularityKind::per_tensor: return json{{"kind", "per_tensor"}};
    case GranularityKind::per_channel: return json{{"kind", "per_channel"}, {"axis", g.axis}};
    case GranularityKind::per_group:
      return json{{"kind", "per_group"}, {"axis", g.axis}, {"block_size", g.block_size}};
  }
  return nullptr;
}
inline Granularity granularity_from_json(const json& j, const std::string& where) {
  const auto kind = get<std::string>(j, "kind", where);
  if (kind == "per_tensor") return Granularity::per_tensor();
  if (kind == "per_channel") return Granularity::per_channel(get<int>(j, "axis", where));
  if (kind == "per_group")
    return Granularity::per_group(get<int>(j, "axis", where), get<std::int64_t>(j, "block_size", where));
  detail::fail(where, ": granularity kind \"", kind, "\"; expected per_tensor, per_channel or per_group");
}

inline json config_to_json(const ObserverConfig& c) {
  return json{{"name", c.name},
              {"granularity", granularity_to_json(c.granularity)},
              {"nonfinite", c.nonfinite == NonFiniteKind::reject ? "reject" : "ignore"}};
}
inline ObserverConfig config_from_json(const json& j, const std::string& where) {
  ObserverConfig c;
  c.name = get<std::string>(j, "name", where);
  c.granularity = granularity_from_json(at(j, "granularity", where), where);
  const auto nf = get<std::string>(j, "nonfinite", where);
  if (nf != "reject" && nf != "ignore")
    detail::fail(where, ": nonfinite \"", nf, "\"; expected reject or ignore");
  c.nonfinite = nf == "reject" ? NonFiniteKind::reject : NonFiniteKind::ignore;
  return c;
}

template <class E>
E enum_from(const std::string& s, std::initializer_list<E> all, const std::string& where,
            const char* what) {
  for (E e : all)
    if (s == to_string(e)) return e;
  detail::fail(where, ": ", what, " \"", s, "\" is not known");
}

inline json method_to_json(const RangeMethod& m) {
  json j{{"kind", to_string(m.kind)}};
  switch (m.kind) {
    case MethodKind::percentile:
      j["percentile"] = m.percentile;
      j["side"] = to_string(m.side);
      break;
    case MethodKind::kl:
      j["bins"] = m.kl_bins;
      j["start_bin"] = m.kl_start_bin;
      j["levels"] = m.kl_levels;
      j["zero_bin_fix"] = m.kl_zero_bin_fix;
      break;
    case MethodKind::automatic: {
      j["metric"] = to_string(m.metric);
      json c = json::array();
      for (const auto& x : m.candidates) c.push_back(method_to_json(x));
      j["candidates"] = c;
      break;
    }
    default: break;
  }
  return j;
}
inline RangeMethod method_from_json(const json& j, const std::string& where) {
  RangeMethod m;
  m.kind = enum_from(get<std::string>(j, "kind", where),
                     {MethodKind::minmax, MethodKind::percentile, MethodKind::kl, MethodKind::mse,
                      MethodKind::l2, MethodKind::automatic},
                     where, "method");
  switch (m.kind) {
    case MethodKind::percentile:
      m.percentile = get<double>(j, "percentile", where);
      m.side = enum_from(get<std::string>(j, "side", where),
                         {PercentileSide::by_target, PercentileSide::abs, PercentileSide::two_sided},
                         where, "percentile side");
      break;
    case MethodKind::kl:
      m.kl_bins = get<int>(j, "bins", where);
      m.kl_start_bin = get<int>(j, "start_bin", where);
      m.kl_levels = get<int>(j, "levels", where);
      m.kl_zero_bin_fix = get<bool>(j, "zero_bin_fix", where);
      break;
    case MethodKind::automatic:
      m.metric = enum_from(get<std::string>(j, "metric", where),
                           {SimilarityMetric::cosine, SimilarityMetric::mse, SimilarityMetric::sqnr},
                           where, "metric");
      for (const auto& c : at(j, "candidates", where)) m.candidates.push_back(method_from_json(c, where));
      break;
    default: break;
  }
  m.validate(where);
  return m;
}

// --- per-kind options and slot state ---------------------------------------------------------

inline json options_to_json(const MinMaxObserver&) { return json::object(); }
inline MinMaxObserver::Options options_from_json(const json&, const std::string&, MinMaxObserver*) { return {}; }

inline json options_to_json(const MovingAverageMinMaxObserver& o) {
  return json{{"averaging_constant", o.options().averaging_constant}};
}
inline MovingAverageOptions options_from_json(const json& j, const std::string& where, MovingAverageMinMaxObserver*) {
  MovingAverageOptions o;
  o.averaging_constant = get<double>(j, "averaging_constant", where);
  return o;
}

inline json options_to_json(const HistogramObserver& o) {
  return json{{"bins", o.options().bins}, {"upsample_rate", o.options().upsample_rate},
              {"torch_1_13", o.options().torch_1_13}};
}
inline HistogramOptions options_from_json(const json& j, const std::string& where, HistogramObserver*) {
  HistogramOptions o;
  o.bins = get<int>(j, "bins", where);
  o.upsample_rate = get<int>(j, "upsample_rate", where);
  o.torch_1_13 = get<bool>(j, "torch_1_13", where);
  return o;
}

template <class Tag>
json options_to_json(const DistributionObserver<Tag>& o) {
  return json{{"bins", o.options().bins}, {"method", method_to_json(o.options().method)}};
}
template <class Tag>
DistributionOptions<Tag> options_from_json(const json& j, const std::string& where, DistributionObserver<Tag>*) {
  DistributionOptions<Tag> o;
  o.bins = get<int>(j, "bins", where);
  o.method = method_from_json(at(j, "method", where), where);
  return o;
}

inline json slot_to_json(const Range& r) { return range_to_json(r); }
inline Range slot_from_json(const json& j, const std::string& where, const Range*) {
  return range_from_json(j, where);
}

inline json slot_to_json(const MovingAverageMinMaxObserver::Slot& s) {
  if (s.batches == 0) return nullptr;
  return json{{"average", range_to_json(s.average)}, {"first", range_to_json(s.first)}, {"batches", s.batches}};
}
inline MovingAverageMinMaxObserver::Slot slot_from_json(const json& j, const std::string& where,
                                                        const MovingAverageMinMaxObserver::Slot*) {
  MovingAverageMinMaxObserver::Slot s;
  if (j.is_null()) return s;
  s.average = range_from_json(at(j, "average", where), where);
  s.first = range_from_json(at(j, "first", where), where);
  s.batches = get<std::int64_t>(j, "batches", where);
  if (s.batches <= 0 || s.average.empty() || s.first.empty())
    detail::fail(where, ": moving-average slot with ", s.batches, " batches; expected >= 1 and both ranges");
  return s;
}

inline json slot_to_json(const HistogramObserver::Slot& s) {
  if (!s.observed()) return nullptr;
  return json{{"min", s.min}, {"max", s.max}, {"histogram", s.histogram}};
}
inline HistogramObserver::Slot slot_from_json(const json& j, const std::string& where,
                                              const HistogramObserver::Slot*) {
  HistogramObserver::Slot s;
  if (j.is_null()) return s;
  s.min = static_cast<float>(get<double>(j, "min", where));
  s.max = static_cast<float>(get<double>(j, "max", where));
  for (const auto& c : at(j, "histogram", where)) {
    if (!c.is_number()) detail::fail(where, ": a \"histogram\" entry is ", c.type_name(), "; expected a number");
    s.histogram.push_back(static_cast<float>(c.get<double>()));
  }
  return s;
}

// Grid histograms: the non-empty stretch of counts, from bin "first".
inline json slot_to_json(const GridHistogram& h) {
  if (h.empty()) return nullptr;
  const auto& c = h.counts();
  std::size_t a = 0, b = c.size();
  while (a < b && c[a] == 0) ++a;
  while (b > a && c[b - 1] == 0) --b;
  return json{{"min", h.min()},
              {"max", h.max()},
              {"total", h.total()},
              {"exponent", h.exponent()},
              {"base", h.base()},
              {"first", a},
              {"counts", std::vector<std::uint64_t>(c.begin() + static_cast<std::ptrdiff_t>(a),
                                                    c.begin() + static_cast<std::ptrdiff_t>(b))}};
}
inline GridHistogram grid_from_json(const json& j, int bins, const std::string& where) {
  GridHistogram h(bins);
  if (j.is_null()) return h;
  const auto first = get<std::size_t>(j, "first", where);
  const auto stretch = get<std::vector<std::uint64_t>>(j, "counts", where);
  if (first + stretch.size() > static_cast<std::size_t>(bins))
    detail::fail(where, ": histogram counts from bin ", first, " (", stretch.size(),
                 " of them) do not fit ", bins, " bins");
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(bins), 0);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < stretch.size(); ++i) {
    counts[first + i] = stretch[i];
    total += stretch[i];
  }
  if (total != get<std::uint64_t>(j, "total", where))
    detail::fail(where, ": histogram counts add up to ", total, "; its \"total\" says ",
                 get<std::uint64_t>(j, "total", where));
  h.restore(get<int>(j, "exponent", where), get<std::int64_t>(j, "base", where),
            static_cast<float>(get<double>(j, "min", where)),
            static_cast<float>(get<double>(j, "max", where)), std::move(counts));
  return h;
}

template <class Obs>
std::vector<json> state_to_json(const Obs& o) {
  std::vector<json> out;
  for (const auto& s : o.state()) out.push_back(slot_to_json(s));
  return out;
}

}  // namespace json_io

// The observer's configuration, options and state.
template <class Observer>
nlohmann::json observer_to_json(const Observer& obs) {
  nlohmann::json j;
  j["format"] = "quantkit-observer";
  j["version"] = 1;
  j["kind"] = Observer::kind_name;
  j["config"] = json_io::config_to_json(obs.config());
  j["options"] = json_io::options_to_json(obs);
  j["state"] = json_io::state_to_json(obs);
  return j;
}

// An observer of type Observer restored from observer_to_json()'s output.
template <class Observer>
Observer observer_from_json(const nlohmann::json& j) {
  const std::string where = "observer JSON";
  if (json_io::format_of(j) != "quantkit-observer")
    detail::fail(where, ": not a quantkit observer (expected \"format\": \"quantkit-observer\")");
  if (json_io::version_of(j) != 1)
    detail::fail(where, ": version ", json_io::version_of(j), "; this quantkit reads version 1");
  const auto kind = json_io::get<std::string>(j, "kind", where);
  ObserverConfig config = json_io::config_from_json(json_io::at(j, "config", where), where);
  const std::string w = detail::describe_tensor(config.name) + " (" + where + ")";
  if (kind != Observer::kind_name)
    detail::fail(w, ": state of a \"", kind, "\" observer cannot be loaded into a \"",
                 Observer::kind_name, "\" observer; expected kind \"", Observer::kind_name, "\"");
  auto options = json_io::options_from_json(json_io::at(j, "options", w), w, static_cast<Observer*>(nullptr));
  Observer obs(config, options);
  typename Observer::State state;
  using Slot = typename Observer::State::value_type;
  for (const auto& s : json_io::at(j, "state", w)) {
    if constexpr (std::is_same_v<Slot, GridHistogram>)
      state.push_back(json_io::grid_from_json(s, obs.options().bins, w));
    else
      state.push_back(json_io::slot_from_json(s, w, static_cast<const Slot*>(nullptr)));
  }
  obs.restore(std::move(state));
  return obs;
}

// Reduces a shard: obs.merge(observer_from_json<Observer>(j)).
template <class Observer>
void merge_observer_json(Observer& obs, const nlohmann::json& j) {
  obs.merge(observer_from_json<Observer>(j));
}

}  // namespace quantkit
