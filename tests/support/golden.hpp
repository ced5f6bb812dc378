// Test-only helpers for the golden-vector tests: loading tests/golden/*.json (written by
// tools/golden/*.py) and comparing floats bit for bit.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#ifndef QUANTKIT_TEST_DIR
#error "QUANTKIT_TEST_DIR (absolute path of tests/) must be defined by the build"
#endif

namespace quantkit_test {

// Parses QUANTKIT_TEST_DIR "/golden/<name>"; throws std::runtime_error naming the file.
inline nlohmann::json load_golden(const std::string& name) {
  const std::string path = std::string(QUANTKIT_TEST_DIR) + "/golden/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": cannot open (regenerate with tools/golden/*.py)");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": not valid JSON: " + e.what());
  }
}

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Every float in the golden files is a float32 value written exactly; parsing it as a double
// and narrowing is exact.
inline float as_f32(const nlohmann::json& j) { return static_cast<float>(j.get<double>()); }

inline std::vector<float> f32_vector(const nlohmann::json& j) {
  std::vector<float> v;
  v.reserve(j.size());
  for (const auto& e : j) v.push_back(as_f32(e));
  return v;
}

template <class T>
std::vector<T> int_vector(const nlohmann::json& j) {
  std::vector<T> v;
  v.reserve(j.size());
  for (const auto& e : j) {
    const auto w = e.get<std::int64_t>();
    if (w < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
        w > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
      throw std::runtime_error("golden value " + std::to_string(w) +
                               " does not fit the integer type the test reads it as");
    v.push_back(static_cast<T>(w));
  }
  return v;
}

// "%.9g (0x%08x)" — a float and its bits, for failure messages.
inline std::string show(float f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(f),
                static_cast<unsigned>(float_bits(f)));
  return buf;
}

}  // namespace quantkit_test
