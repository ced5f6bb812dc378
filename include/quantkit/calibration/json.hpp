// Calibration state and profiles as JSON files (needs nlohmann/json; opt-in).
//
//   calibration_to_json(cal) / calibration_from_json<Observer>(j): every tensor's observer
//     {"format": "quantkit-calibration", "version": 1, "kind": "<observer kind>",
//      "tensors": {"<name>": <observer JSON, see quantkit/observer/json.hpp>, ...}}
//   save_profile(profile, path) / load_profile(path, graph_hash):
//     {"format": "quantkit-profile", "version": 1, "graph_hash": "...", "bins": 4096,
//      "tensors": {...statistics observers...}}
//     load_profile() fails unless the profile was recorded from the graph with that hash;
//     load_profile_unchecked() is for tools that only inspect profiles.
// Files are written atomically (quantkit/io/atomic_file.hpp: a temporary file in the same folder,
// renamed into place when complete).
#pragma once

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "quantkit/calibration/calibration.hpp"
#include "quantkit/calibration/profile.hpp"
#include "quantkit/error.hpp"
#include "quantkit/io/atomic_file.hpp"
#include "quantkit/observer/json.hpp"

namespace quantkit {

template <class Observer>
nlohmann::json calibration_to_json(const Calibration<Observer>& cal) {
  nlohmann::json j;
  j["format"] = "quantkit-calibration";
  j["version"] = 1;
  j["kind"] = Observer::kind_name;
  nlohmann::json t = nlohmann::json::object();
  for (const auto& [name, obs] : cal.observers()) t[name] = observer_to_json(obs);
  j["tensors"] = t;
  return j;
}

// Observers restored from JSON; `into` (optional) receives them, merged with what it holds.
template <class Observer>
void calibration_from_json(const nlohmann::json& j, Calibration<Observer>& into) {
  const std::string where = "calibration JSON";
  if (json_io::format_of(j) != "quantkit-calibration")
    detail::fail(where, ": not quantkit calibration state (expected \"format\": \"quantkit-calibration\")");
  if (json_io::version_of(j) != 1)
    detail::fail(where, ": version ", json_io::version_of(j), "; this quantkit reads version 1");
  const auto kind = json_io::get<std::string>(j, "kind", where);
  if (kind != Observer::kind_name)
    detail::fail(where, ": holds \"", kind, "\" observers; expected \"", Observer::kind_name, "\"");
  for (const auto& [name, oj] : json_io::at(j, "tensors", where).items())
    into.insert(name, observer_from_json<Observer>(oj));
}
template <class Observer>
Calibration<Observer> calibration_from_json(const nlohmann::json& j) {
  Calibration<Observer> cal;
  calibration_from_json(j, cal);
  return cal;
}

inline nlohmann::json profile_to_json(const Profile& p) {
  nlohmann::json j = calibration_to_json(p.calibration());
  j["format"] = "quantkit-profile";
  j["graph_hash"] = p.graph_hash();
  j["bins"] = p.bins();
  return j;
}

inline Profile profile_from_json(const nlohmann::json& j, const std::string& where = "profile JSON") {
  if (json_io::format_of(j) != "quantkit-profile")
    detail::fail(where, ": not a quantkit profile (expected \"format\": \"quantkit-profile\")");
  Profile p(json_io::get<std::string>(j, "graph_hash", where), json_io::get<int>(j, "bins", where));
  nlohmann::json c = j;
  c["format"] = "quantkit-calibration";
  calibration_from_json(c, p.calibration());
  for (const auto& n : p.names())
    if (p.statistics(n).options().bins != p.bins())
      detail::fail(where, ": tensor '", n, "' has ", p.statistics(n).options().bins,
                   " histogram bins; the profile says ", p.bins());
  return p;
}

namespace detail {
inline void write_file_atomically(const std::string& path, const std::string& text) {
  io::write_file_atomically(path, text);
}
inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open '", path, "'; expected a readable file");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    fail("'", path, "' is not valid JSON: ", e.what());
  }
}
}  // namespace detail

inline void save_profile(const Profile& p, const std::string& path) {
  detail::write_file_atomically(path, profile_to_json(p).dump() + "\n");
}

inline Profile load_profile_unchecked(const std::string& path) {
  return profile_from_json(detail::read_json_file(path), "profile '" + path + "'");
}

// The profile at `path`, which must have been recorded from the graph with hash `graph_hash`.
inline Profile load_profile(const std::string& path, const std::string& graph_hash) {
  Profile p = load_profile_unchecked(path);
  p.expect_graph(graph_hash, "profile '" + path + "'");
  return p;
}

template <class Observer>
void save_calibration(const Calibration<Observer>& cal, const std::string& path) {
  detail::write_file_atomically(path, calibration_to_json(cal).dump() + "\n");
}
template <class Observer>
Calibration<Observer> load_calibration(const std::string& path) {
  return calibration_from_json<Observer>(detail::read_json_file(path));
}

}  // namespace quantkit
