// What the A/B harnesses (short_rows_ab.cpp, requant_rows_ab.cpp) share: the timing (best of
// 300 windows of 20 calls) and the output hash two builds must agree on.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstring>
#include <vector>

namespace ab {

// Gelem/s of call() over n elements: the best of 300 windows of 20 calls.
template <class F>
double best_gelems(F&& call, std::size_t n) {
  constexpr int kCalls = 20;
  double best = 1e30;
  for (int w = 0; w < 300; ++w) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < kCalls; ++c) call();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kCalls;
    if (s < best) best = s;
  }
  return static_cast<double>(n) / best * 1e-9;
}

// FNV-1a over the values' bytes.
template <class T>
unsigned long long hash_of(const std::vector<T>& v) {
  unsigned long long h = 1469598103934665603ull;
  for (const T& e : v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &e, sizeof(T));
    for (unsigned char c : b) h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

}  // namespace ab
