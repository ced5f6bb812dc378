// Bit-exactness checks of quantkit::simd against quantkit::ref, for one kernel table (one
// Highway target). Shared by test_simd_kernels.cpp (dynamic dispatch, every compiled target)
// and test_simd_static.cpp (static dispatch, header-only).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <quantkit/quantkit.hpp>
#include <quantkit/simd/simd.hpp>

#include "support/sanitized.hpp"

namespace simd_test {
// For its lifetime, a kernel setting (stream_threshold_storage, stream_prefetch_storage) is
// `bytes`.
class ScopedBytes {
 public:
  ScopedBytes(std::size_t& setting, std::size_t bytes) : setting_(setting), saved_(setting) { setting_ = bytes; }
  ~ScopedBytes() { setting_ = saved_; }
  ScopedBytes(const ScopedBytes&) = delete;
  ScopedBytes& operator=(const ScopedBytes&) = delete;

 private:
  std::size_t& setting_;
  std::size_t saved_;
};

// For its lifetime, under the sanitizers (-O0), the non-temporal store threshold is 1 MiB: the
// streaming code runs on ~200K elements instead of millions (minutes per target). Otherwise the
// real threshold.
class SanitizedStreamThreshold {
 public:
  SanitizedStreamThreshold() : saved_(quantkit::simd::detail::stream_threshold_storage()) {
    if (QK_TEST_SANITIZED)
      quantkit::simd::detail::stream_threshold_storage() = std::min<std::size_t>(saved_, std::size_t{1} << 20);
  }
  ~SanitizedStreamThreshold() { quantkit::simd::detail::stream_threshold_storage() = saved_; }
  SanitizedStreamThreshold(const SanitizedStreamThreshold&) = delete;
  SanitizedStreamThreshold& operator=(const SanitizedStreamThreshold&) = delete;

 private:
  std::size_t saved_;
};
}  // namespace simd_test

namespace qk = quantkit;
namespace qks = quantkit::simd;

namespace simd_test {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A type as a value, for generic lambdas over output types.
template <class T>
struct TypeTag {
  using type = T;
};

constexpr std::int32_t kI32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kI32Max = std::numeric_limits<std::int32_t>::max();

inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Element-wise equality; floats compare by bit pattern (so -0.0 != +0.0 and NaN == NaN).
template <class T>
bool same(T a, T b) {
  if constexpr (std::is_same<T, float>::value)
    return bits_of(a) == bits_of(b);
  else
    return a == b;
}

// First index where the buffers differ, or -1.
template <class T>
long first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return static_cast<long>(i);
  return -1;
}

template <class T>
std::string show(T v) {
  if constexpr (std::is_same<T, float>::value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(v), bits_of(v));
    return buf;
  } else {
    return std::to_string(static_cast<long long>(v));
  }
}

#define QK_CHECK_SAME(got, want, input)                                                    \
  do {                                                                                     \
    const long qk_at = simd_test::first_difference(got, want);                             \
    if (qk_at >= 0) {                                                                      \
      const auto qk_i = static_cast<std::size_t>(qk_at);                                   \
      FAIL_CHECK("differs at " << qk_at << " of " << (want).size() << ": got "             \
                               << simd_test::show((got)[qk_i]) << ", want "                \
                               << simd_test::show((want)[qk_i]) << ", input "              \
                               << simd_test::show((input)[qk_i]));                         \
    }                                                                                      \
  } while (0)

// Values around every rounding decision: exact ties k + 0.5 (also beyond the int16 range,
// for saturation), their float neighbours, 0.49999997, +-0, the 2^23 boundary, huge values,
// denormals, NaN and infinities. Multiplied by a power-of-two scale they stay exact.
inline std::vector<float> tricky_values() {
  std::vector<float> t;
  for (int k = -300; k <= 300; ++k) {
    const float tie = static_cast<float>(k) + 0.5f;
    t.push_back(tie);
    t.push_back(std::nextafter(tie, kInf));
    t.push_back(std::nextafter(tie, -kInf));
    t.push_back(static_cast<float>(k));
  }
  for (float v : {0.49999997f, -0.49999997f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 0.0f, -0.0f,
                  8388607.5f, -8388607.5f, 8388608.0f, 8388609.0f, 16777216.0f, -16777218.0f,
                  4194303.5f, 127.5f, -128.5f, 255.5f, 256.5f, -0.5f, 32767.5f, -32768.5f,
                  32768.5f, 65535.5f, 65536.5f, -65536.5f, 1e9f, -1e9f, 2147483648.0f,
                  -2147483904.0f, 3.0e38f, -3.0e38f, std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max(), 1e-40f, -1e-40f, 1e-45f,
                  std::numeric_limits<float>::min(), kInf, -kInf,
                  std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()})
    t.push_back(v);
  return t;
}

// Inputs for quantize: tricky values times `scale` interleaved with random ones.
inline std::vector<float> quantize_inputs(std::size_t n, float scale, std::uint32_t seed) {
  static const std::vector<float> tricky = tricky_values();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> wide(-200.0f, 200.0f);
  std::uniform_int_distribution<std::size_t> pick(0, tricky.size() - 1);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (rng() % 3) {
      case 0: x[i] = tricky[pick(rng)] * scale; break;
      case 1: x[i] = wide(rng) * scale; break;
      default: x[i] = std::round(wide(rng)) * scale + 0.5f * scale; break;  // ties
    }
  }
  return x;
}

inline std::vector<std::size_t> test_lengths() {
  std::vector<std::size_t> lengths = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 1031};
  return lengths;
}

template <class Q>
qk::IntRange range_of() {
  return qk::IntRange{static_cast<std::int32_t>(std::numeric_limits<Q>::min()),
                      static_cast<std::int32_t>(std::numeric_limits<Q>::max())};
}

// The rounding policies, as the reference takes them.
template <class F>
void for_each_deterministic_rounding(F&& f) {
  f(qk::RoundHalfEven{});
  f(qk::RoundHalfAway{});
  f(qk::RoundHalfUp{});
  f(qk::RoundFloor{});
  f(qk::RoundTowardZero{});
}

inline const char* app_name(qk::ScaleApplicationKind a) {
  return a == qk::ScaleApplicationKind::divide ? "divide" : "multiply";
}

// ---------------------------------------------------------------- quantize / fake / dequantize

// Per tensor, contiguous buffers at an offset of `offset` elements (unaligned), every length.
template <class Q, class Rounding>
void check_quantize_per_tensor(const qks::Kernels* k, const Rounding& round,
                               qk::ScaleApplicationKind app, float scale, std::int32_t zp,
                               qk::IntRange range) {
  qk::QuantParams p;
  p.scale = {scale};
  p.zero_point = {zp};
  p.range = range;
  std::uint32_t seed = 1;
  for (std::size_t n : test_lengths()) {
    for (std::size_t offset : {0u, 1u, 3u}) {
      const std::vector<float> data = quantize_inputs(n + offset, scale, seed++);
      const qk::View<const float> x(data.data() + offset, qk::Dims{static_cast<std::int64_t>(n)});
      std::vector<Q> want(n + offset), got(n + offset);
      qk::ref::quantize(x, p, qk::View<Q>(want.data() + offset, x.shape()), round, app);
      qks::quantize(x, p, qk::View<Q>(got.data() + offset, x.shape()), round, app, k);
      CAPTURE(n);
      CAPTURE(offset);
      QK_CHECK_SAME(got, want, data);
      // fake-quantize
      std::vector<float> fwant(n + offset), fgot(n + offset);
      qk::ref::fake_quantize(x, p, qk::View<float>(fwant.data() + offset, x.shape()), round, app);
      qks::fake_quantize(x, p, qk::View<float>(fgot.data() + offset, x.shape()), round, app, k);
      QK_CHECK_SAME(fgot, fwant, data);
    }
  }
}

template <class Q>
void check_dequantize_per_tensor(const qks::Kernels* k, float scale, std::int32_t zp) {
  qk::QuantParams p;
  p.scale = {scale};
  p.zero_point = {zp};
  p.range = range_of<Q>();
  std::mt19937 rng(7);
  for (std::size_t n : test_lengths()) {
    for (std::size_t offset : {0u, 1u}) {
      std::vector<Q> q(n + offset);
      for (auto& v : q) {
        const std::int64_t lo = std::is_same<Q, std::int32_t>::value ? -1000000 : std::numeric_limits<Q>::min();
        const std::int64_t hi = std::is_same<Q, std::int32_t>::value ? 1000000 : std::numeric_limits<Q>::max();
        v = static_cast<Q>(lo + static_cast<std::int64_t>(rng() % static_cast<std::uint32_t>(hi - lo + 1)));
      }
      if (n > 0) q[offset] = std::numeric_limits<Q>::min();
      if (n > 1) q[offset + n - 1] = std::numeric_limits<Q>::max();
      const qk::View<const Q> qv(q.data() + offset, qk::Dims{static_cast<std::int64_t>(n)});
      std::vector<float> want(n + offset), got(n + offset);
      qk::ref::dequantize(qv, p, qk::View<float>(want.data() + offset, qv.shape()));
      qks::dequantize(qv, p, qk::View<float>(got.data() + offset, qv.shape()), k);
      CAPTURE(n);
      QK_CHECK_SAME(got, want, q);
      std::vector<float> raw(n);
      qks::dequantize(q.data() + offset, n, scale, zp, raw.data(), k);
      for (std::size_t i = 0; i < n; ++i) CHECK(bits_of(raw[i]) == bits_of(want[offset + i]));
    }
  }
  // q - zp is exact even where it leaves int32 (int32 inputs with a nonzero zero point).
  const std::vector<Q> edge = {std::numeric_limits<Q>::min(), std::numeric_limits<Q>::max()};
  std::vector<float> got(2);
  qks::dequantize(qk::View<const Q>(edge.data(), qk::Dims{2}), p, qk::View<float>(got.data(), qk::Dims{2}), k);
  for (int i = 0; i < 2; ++i) {
    const double exact = (static_cast<double>(edge[i]) - zp) * static_cast<double>(scale);
    CHECK(std::fabs(static_cast<double>(got[i]) - exact) <= std::fabs(exact) * 1e-6);
  }
}

// A tensor of `shape` stored in a buffer with a layout: 0 contiguous, 1 every other element
// (strided rows), 2 dimensions stored in reverse order (transposed), 3 reversed + step 3.
struct Strided {
  qk::Dims shape, strides;
  std::size_t storage = 0;
};
inline Strided make_layout(const qk::Dims& shape, int layout) {
  Strided s;
  s.shape = shape;
  s.strides.rank = shape.rank;
  std::int64_t step = layout == 1 ? 2 : (layout == 3 ? 3 : 1);
  std::int64_t n = 1;
  if (layout == 2 || layout == 3) {
    for (int d = 0; d < shape.rank; ++d) {
      s.strides[d] = step;
      step *= shape[d];
    }
  } else {
    for (int d = shape.rank - 1; d >= 0; --d) {
      s.strides[d] = step;
      step *= shape[d];
    }
  }
  n = step;
  s.storage = static_cast<std::size_t>(n > 0 ? n : 1);
  return s;
}

inline qk::QuantParams random_params(const qk::Dims& shape, qk::Granularity g, qk::IntRange range,
                                     std::uint32_t seed, bool pow2_scales) {
  const qk::ParamLayout layout(shape, g);
  const auto count = static_cast<std::size_t>(layout.count());
  qk::QuantParams p;
  p.granularity = g;
  p.range = range;
  p.scale.resize(count);
  p.zero_point.resize(count);
  std::mt19937 rng(seed);
  for (std::size_t i = 0; i < count; ++i) {
    p.scale[i] = pow2_scales ? std::ldexp(1.0f, static_cast<int>(rng() % 6) - 4)
                             : 0.003f + static_cast<float>(rng() % 1000) * 0.0007f;
    const std::int64_t span = std::int64_t{range.qmax} - range.qmin + 1;
    p.zero_point[i] = static_cast<std::int32_t>(range.qmin + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span)));
  }
  return p;
}

// Any granularity, strided input and output layouts.
template <class Q, class Rounding>
void check_quantize_view(const qks::Kernels* k, const qk::Dims& shape, qk::Granularity g,
                         int in_layout, int out_layout, const Rounding& round,
                         qk::ScaleApplicationKind app, bool pow2_scales) {
  const qk::IntRange range = range_of<Q>();
  const qk::QuantParams p = random_params(shape, g, range, 11, pow2_scales);
  const Strided si = make_layout(shape, in_layout), so = make_layout(shape, out_layout);
  const std::vector<float> data = quantize_inputs(si.storage, pow2_scales ? 0.25f : 0.01f, 5);
  const qk::View<const float> x(data.data(), si.shape, si.strides);
  std::vector<Q> want(so.storage), got(so.storage);
  qk::ref::quantize(x, p, qk::View<Q>(want.data(), so.shape, so.strides), round, app);
  qks::quantize(x, p, qk::View<Q>(got.data(), so.shape, so.strides), round, app, k);
  CAPTURE(shape.to_string());
  CAPTURE(g.to_string());
  CAPTURE(in_layout);
  CAPTURE(out_layout);
  QK_CHECK_SAME(got, want, data);
  std::vector<float> fwant(so.storage), fgot(so.storage);
  qk::ref::fake_quantize(x, p, qk::View<float>(fwant.data(), so.shape, so.strides), round, app);
  qks::fake_quantize(x, p, qk::View<float>(fgot.data(), so.shape, so.strides), round, app, k);
  QK_CHECK_SAME(fgot, fwant, data);
  // dequantize the (strided) codes back, into the input's layout
  const qk::View<const Q> qv(want.data(), so.shape, so.strides);
  std::vector<float> dwant(si.storage), dgot(si.storage);
  qk::ref::dequantize(qv, p, qk::View<float>(dwant.data(), si.shape, si.strides));
  qks::dequantize(qv, p, qk::View<float>(dgot.data(), si.shape, si.strides), k);
  QK_CHECK_SAME(dgot, dwant, data);
}

inline std::vector<std::pair<qk::Dims, qk::Granularity>> granularity_cases() {
  using G = qk::Granularity;
  return {
      {qk::Dims{}, G::per_tensor()},
      {qk::Dims{37}, G::per_tensor()},
      {qk::Dims{5, 67}, G::per_tensor()},
      {qk::Dims{37}, G::per_channel(0)},
      {qk::Dims{16, 67}, G::per_channel(0)},
      {qk::Dims{16, 67}, G::per_channel(1)},
      {qk::Dims{16, 67}, G::per_channel(-1)},
      {qk::Dims{3, 5, 33}, G::per_channel(1)},
      {qk::Dims{2, 7, 3, 5}, G::per_channel(1)},
      {qk::Dims{2, 7, 3, 5}, G::per_channel(3)},
      {qk::Dims{4, 1, 19}, G::per_channel(2)},
      {qk::Dims{1, 9, 1}, G::per_channel(1)},
      {qk::Dims{64, 40}, G::per_group(0, 16)},
      {qk::Dims{64, 40}, G::per_group(1, 16)},
      {qk::Dims{70, 40}, G::per_group(0, 32)},   // last block shorter
      {qk::Dims{6, 100}, G::per_group(1, 32)},
      {qk::Dims{6, 100}, G::per_group(-1, 7)},
      {qk::Dims{4, 200}, G::per_group(1, 128)},  // whole 4-vector blocks, then a shorter block
      {qk::Dims{3, 300}, G::per_channel(0)},     // rows of several 4-vector blocks and a tail
      {qk::Dims{64, 64}, G::per_channel(0)},     // short rows in one call: whole blocks, no tail
      {qk::Dims{9, 21}, G::per_channel(0)},      // short rows in one call: tails only
      {qk::Dims{9, 32}, G::per_channel(0)},      // rows of two AVX-512 vectors, in pairs, one left
      {qk::Dims{4, 96}, G::per_group(1, 32)},    // blocks of two AVX-512 vectors: a pair and one
      {qk::Dims{5, 48}, G::per_group(1, 8)},     // blocks of two SSE4 vectors, in pairs
      {qk::Dims{3, 10, 9}, G::per_group(1, 4)},
      {qk::Dims{3, 10, 9}, G::per_group(2, 1)},
      {qk::Dims{0, 5}, G::per_channel(1)},
  };
}

// ---------------------------------------------------------------- stochastic rounding

// Same generator state on both sides: equal codes and the same number of draws.
template <class Q>
void check_stochastic(const qks::Kernels* k, const qk::Dims& shape, qk::Granularity g, int in_layout,
                      qk::ScaleApplicationKind app) {
  const qk::IntRange range = range_of<Q>();
  const qk::QuantParams p = random_params(shape, g, range, 3, false);
  const Strided si = make_layout(shape, in_layout);
  const std::vector<float> data = quantize_inputs(si.storage, 0.01f, 9);
  const qk::View<const float> x(data.data(), si.shape, si.strides);
  std::mt19937 g_ref(1234), g_simd(1234);
  const qk::RoundStochastic<std::mt19937> r_ref(g_ref), r_simd(g_simd);
  const auto n = static_cast<std::size_t>(x.size());
  std::vector<Q> want(n), got(n);
  qk::ref::quantize(x, p, qk::View<Q>(want.data(), shape), r_ref, app);
  qks::quantize(x, p, qk::View<Q>(got.data(), shape), r_simd, app, k);
  CAPTURE(shape.to_string());
  CAPTURE(g.to_string());
  QK_CHECK_SAME(got, want, data);
  CHECK(g_ref() == g_simd());  // the same number of draws
  std::vector<float> fwant(n), fgot(n);
  qk::ref::fake_quantize(x, p, qk::View<float>(fwant.data(), shape), r_ref, app);
  qks::fake_quantize(x, p, qk::View<float>(fgot.data(), shape), r_simd, app, k);
  QK_CHECK_SAME(fgot, fwant, data);
  CHECK(g_ref() == g_simd());
}

// ---------------------------------------------------------------- packed

template <class Rounding>
void check_packed(const qks::Kernels* k, int bits, bool is_signed, std::size_t n,
                  qk::Granularity g, const Rounding& round) {
  const qk::IntRange range = is_signed ? qk::IntRange{-(1 << (bits - 1)), (1 << (bits - 1)) - 1}
                                       : qk::IntRange{0, (1 << bits) - 1};
  const qk::Dims shape = g.kind == qk::GranularityKind::per_tensor
                             ? qk::Dims{static_cast<std::int64_t>(n)}
                             : qk::Dims{3, static_cast<std::int64_t>(n)};
  const qk::QuantParams p = random_params(shape, g, range, 17, false);
  const auto total = static_cast<std::size_t>(shape.product());
  const std::vector<float> data = quantize_inputs(total, 0.05f, 21);
  const qk::View<const float> x(data.data(), shape);
  std::vector<std::int32_t> values(total);
  qk::ref::quantize(x, p, qk::View<std::int32_t>(values.data(), shape), round);
  std::vector<std::uint8_t> want(qk::packed_size(total, bits)), got(want.size(), 0xAB);
  qk::ref::pack(values.data(), total, bits, want.data(), want.size());
  qks::quantize_packed(x, p, bits, got.data(), got.size(), round, qk::ScaleApplicationKind::divide, k);
  CAPTURE(bits);
  CAPTURE(is_signed);
  CAPTURE(total);
  QK_CHECK_SAME(got, want, want);
  // unpack + dequantize
  std::vector<float> dwant(total), dgot(total);
  std::vector<std::int32_t> unpacked(total);
  qk::ref::unpack(want.data(), total, bits, is_signed, unpacked.data());
  qk::ref::dequantize(qk::View<const std::int32_t>(unpacked.data(), shape), p,
                      qk::View<float>(dwant.data(), shape));
  qks::dequantize_packed(want.data(), want.size(), bits, is_signed, p,
                         qk::View<float>(dgot.data(), shape), k);
  QK_CHECK_SAME(dgot, dwant, dwant);
}

// ---------------------------------------------------------------- requantize

inline std::vector<std::int32_t> accumulators(std::size_t n, std::uint32_t seed) {
  std::vector<std::int32_t> special = {kI32Min, kI32Min + 1, -(1 << 30), -(1 << 30) - 1, -65536,
                                       -32769, -256, -129, -128, -3, -2, -1, 0, 1, 2, 3, 127,
                                       128, 255, 256, 32767, 65536, (1 << 30) - 1, 1 << 30,
                                       kI32Max - 1, kI32Max};
  for (int s = 1; s <= 31; ++s) {  // ties of every shift: k * 2^s + 2^(s-1)
    const std::int64_t half = std::int64_t{1} << (s - 1);
    for (std::int64_t k : {-3, -2, -1, 0, 1, 2, 3}) {
      const std::int64_t v = k * (std::int64_t{1} << s) + half;
      if (v >= kI32Min && v <= kI32Max) special.push_back(static_cast<std::int32_t>(v));
    }
  }
  std::mt19937 rng(seed);
  std::vector<std::int32_t> acc(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (rng() % 4) {
      case 0: acc[i] = special[rng() % special.size()]; break;
      case 1: acc[i] = static_cast<std::int32_t>(rng()); break;
      case 2: acc[i] = static_cast<std::int32_t>(rng() % 200001) - 100000; break;
      default: acc[i] = static_cast<std::int32_t>(rng() % 2001) - 1000; break;
    }
  }
  return acc;
}

template <class Scheme, class Out>
void check_requantize_case(const qks::Kernels* k, const qk::Dims& shape, int channel_axis,
                           qk::RequantParams<Scheme> p) {
  p.channel_axis = channel_axis;
  const auto n = static_cast<std::size_t>(shape.product());
  const std::vector<std::int32_t> acc = accumulators(n, static_cast<std::uint32_t>(n) + 5);
  const qk::View<const std::int32_t> a(acc.data(), shape);
  std::vector<Out> want(n), got(n);
  qk::ref::requantize(a, p, qk::View<Out>(want.data(), shape), "layer");
  qks::requantize(a, p, qk::View<Out>(got.data(), shape), "layer", k);
  CAPTURE(shape.to_string());
  CAPTURE(channel_axis);
  CAPTURE(p.clamp_min);
  CAPTURE(p.clamp_max);
  QK_CHECK_SAME(got, want, acc);
  // the same layer prepared once: contiguous views (the prepared plan), then an output with
  // every stride doubled (a plan per call)
  const qks::PreparedRequantize<Scheme, Out> prepared(p, shape, "layer", k);
  std::fill(got.begin(), got.end(), Out{0x5a});
  prepared(a, qk::View<Out>(got.data(), shape));
  QK_CHECK_SAME(got, want, acc);
  qk::Dims strides = qk::contiguous_strides(shape);
  for (int d = 0; d < strides.rank; ++d) strides[d] *= 2;
  std::vector<Out> wide(2 * n + 1, Out{0x5a});
  prepared(a, qk::View<Out>(wide.data(), shape, strides));
  for (std::size_t i = 0; i < n; ++i) got[i] = wide[2 * i];
  QK_CHECK_SAME(got, want, acc);
  std::size_t touched = 0;  // elements between the strided outputs written
  for (std::size_t i = 0; i < n; ++i) touched += wide[2 * i + 1] != Out{0x5a};
  CHECK(touched == 0);
}

// Per tensor and per channel (constant runs: axis 0; per-element vectors: last axis), with and
// without bias, with the output range or a fused ReLU / narrow clamp.
template <class Scheme, class Out>
void check_requantize_scheme(const qks::Kernels* k, const std::vector<typename Scheme::Constants>& constants) {
  const qk::IntRange out = range_of<Out>();
  std::mt19937 rng(99);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16},
                        std::size_t{17}, std::size_t{33}, std::size_t{1000}}) {
    for (const auto& c : constants) {
      qk::RequantParams<Scheme> p;
      p.constants = {c};
      p.output_zero_point = out.qmin < 0 ? 3 : 100;
      p.clamp_min = out.qmin;
      p.clamp_max = out.qmax;
      check_requantize_case<Scheme, Out>(k, qk::Dims{static_cast<std::int64_t>(n)}, -1, p);
      p.clamp_min = p.output_zero_point;  // ReLU
      p.clamp_max = std::min(out.qmax, p.output_zero_point + 60);
      check_requantize_case<Scheme, Out>(k, qk::Dims{static_cast<std::int64_t>(n)}, -1, p);
    }
  }
  // per channel: constants cycle through the list, random biases (some saturating)
  for (const qk::Dims& shape : {qk::Dims{7, 37}, qk::Dims{37, 7}, qk::Dims{3, 19, 5}, qk::Dims{2, 64}}) {
    for (int axis : {0, -1, 1}) {
      if (axis == 1 && shape.rank < 3) continue;
      const int a = axis < 0 ? axis + shape.rank : axis;
      const auto channels = static_cast<std::size_t>(shape[a]);
      for (int with_bias = 0; with_bias < 2; ++with_bias) {
        qk::RequantParams<Scheme> p;
        for (std::size_t c = 0; c < channels; ++c) p.constants.push_back(constants[c % constants.size()]);
        if (with_bias) {
          for (std::size_t c = 0; c < channels; ++c) {
            const std::uint32_t r = rng();
            p.bias.push_back(r % 5 == 0 ? (r % 2 ? kI32Max : kI32Min)
                                        : static_cast<std::int32_t>(r % 20001) - 10000);
          }
        }
        p.output_zero_point = out.qmin < 0 ? -5 : 17;
        p.clamp_min = out.qmin;
        p.clamp_max = out.qmax;
        check_requantize_case<Scheme, Out>(k, shape, axis, p);
      }
    }
  }
}

template <class Scheme>
std::vector<typename Scheme::Constants> made_constants(std::initializer_list<double> ms) {
  std::vector<typename Scheme::Constants> c;
  for (double m : ms) c.push_back(Scheme::make(m, "layer"));
  return c;
}

// Whether the kernels take constant c at all: a call with one they do not (single rounding's
// shift -32, T = 63; the double shift's shift2 past 31) runs the reference for every channel.
template <class Scheme>
bool kernels_cover(const typename Scheme::Constants& c) {
  if constexpr (std::is_same<Scheme, qk::FixedPointDoubleRounding>::value) return c.shift >= -31 && c.shift <= 31;
  if constexpr (std::is_same<Scheme, qk::FixedPointSingleRounding>::value) return c.shift >= -31 && c.shift <= 30;
  if constexpr (std::is_same<Scheme, qk::DoubleShift>::value)
    return c.shift1 >= 0 && c.shift1 <= 31 && c.shift2 >= 1 && c.shift2 <= 31;
  (void)c;
  return true;
}
// The constants of `listed` the kernels cover (kernels_cover), at least two of them.
template <class Scheme>
std::vector<typename Scheme::Constants> covered_constants(const std::vector<typename Scheme::Constants>& listed) {
  std::vector<typename Scheme::Constants> covered;
  for (const auto& c : listed)
    if (kernels_cover<Scheme>(c)) covered.push_back(c);
  REQUIRE(covered.size() >= 2);
  return covered;
}

// Fixed point (double rounding) around the kernels' per-run fast path (no left shift, right
// shift >= 1, q != INT32_MIN, |q| + 2^(right-1) <= INT32_MAX: bias folded into the 64-bit
// nudge, rounding by add-and-shift) and just past its limits: biases near INT32_MIN/MAX with
// accumulators at the extremes (the saturating bias add), q at and next to the bound, negative
// q, q == INT32_MIN with x == INT32_MIN (SRDHM saturation), right shifts 0 and 31, left shifts.
// Zero point 0 with the full int32 range leaves nothing to the clamp.
// Single rounding (TFLite; Scheme FixedPointSingleRounding, its own constants): the fast path
// for total right shifts T = 31 - shift of 31..62 (the zero point and bias folded into the
// nudge, no saturation), around its bounds (T = 30 and 63; |q| + 2^(T-32) + zp 2^(T-31) at and
// one past INT32_MAX, zp 2^(T-31) - |q| at and one past INT32_MIN, for the zero points 9 and -7).
template <class Out, class Scheme = qk::FixedPointDoubleRounding>
void check_requantize_fixed_edges(const qks::Kernels* k) {
  using QM = qk::ref::QuantizedMultiplier;
  const std::vector<QM> constants =
      std::is_same<Scheme, qk::FixedPointDoubleRounding>::value
          ? std::vector<QM>{QM{1 << 30, -1}, QM{kI32Max - 1, -1}, QM{kI32Max, -1}, QM{kI32Max - 64, -7},
                            QM{kI32Max - 63, -7}, QM{-(1 << 30) - 12345, -5}, QM{kI32Min + 1, -2}, QM{kI32Min, -4},
                            QM{kI32Min, 0}, QM{1518500250, -31}, QM{kI32Max, -31}, QM{1 << 30, 0}, QM{1234567, 3},
                            QM{987654321, -9}, QM{-1, -1}, QM{0, -3}, QM{1 << 30, 31}}
          : std::vector<QM>{QM{1 << 30, 0}, QM{kI32Max, 0}, QM{kI32Max - 1, -1}, QM{kI32Max - 64, -7},
                            QM{kI32Max - 63, -7}, QM{kI32Max - 1216, -7}, QM{kI32Max - 1215, -7},
                            QM{kI32Max - 895, -7}, QM{kI32Max - 894, -7}, QM{-(1 << 30) - 12345, -5},
                            QM{kI32Min + 1, -2}, QM{kI32Min, -4}, QM{1518500250, -31}, QM{kI32Max, -31},
                            QM{1 << 30, -32}, QM{kI32Max, -32}, QM{1 << 30, 1}, QM{1234567, 3},
                            QM{987654321, -9}, QM{-1, -1}, QM{0, -3}, QM{1 << 30, 30}};
  const std::vector<std::int32_t> biases = {0, 1, -1, kI32Max, kI32Min, kI32Max - 3, kI32Min + 3,
                                            1 << 30, -(1 << 30), 123456789, -987654};
  // (the many-channel calls: one constant the kernels do not cover sends a call to the reference)
  const std::vector<QM> covered = covered_constants<Scheme>(constants);
  const qk::IntRange out = range_of<Out>();
  std::vector<std::int32_t> acc = accumulators(1000, 77);
  const std::int32_t edges[] = {kI32Min, kI32Min + 1, kI32Min + 2, kI32Min + 3, kI32Min + 4,
                                kI32Max, kI32Max - 1, kI32Max - 2, kI32Max - 3, kI32Max - 4,
                                -1, 0, 1, -(1 << 30), 1 << 30};
  for (std::size_t i = 0; i < acc.size(); i += 3) acc[i] = edges[(i / 3) % (sizeof(edges) / sizeof(edges[0]))];
  // the kernels' result of p over input (shape) equals the reference's
  const auto check = [k](const qk::RequantParams<Scheme>& p, const qk::Dims& shape,
                         const std::vector<std::int32_t>& input) {
    const qk::View<const std::int32_t> a(input.data(), shape);
    std::vector<Out> want(input.size()), got(input.size());
    qk::ref::requantize(a, p, qk::View<Out>(want.data(), shape), "layer");
    qks::requantize(a, p, qk::View<Out>(got.data(), shape), "layer", k);
    CAPTURE(shape.to_string());
    CAPTURE(p.constants[0].multiplier);
    CAPTURE(p.constants[0].shift);
    CAPTURE(p.bias[0]);
    CAPTURE(p.output_zero_point);
    CAPTURE(p.clamp_min);
    QK_CHECK_SAME(got, want, input);
    CHECK(got == want);  // counted
  };
  for (int zp_case = 0; zp_case < 2; ++zp_case) {
    for (int relu = 0; relu < 2; ++relu) {
      // two constant rows of 500 (axis 0): one constant pair per call, every bias (under the
      // sanitizers, -O0: every bias with zero point 0 and no ReLU, a third of them otherwise)
      for (std::size_t c = 0; c < constants.size(); ++c) {
        for (std::size_t b = 0; b < biases.size(); ++b) {
          if (QK_TEST_SANITIZED && (zp_case != 0 || relu != 0) && (b + c) % 3 != 0) continue;
          qk::RequantParams<Scheme> p;
          p.constants = {constants[c], constants[(c + 1) % constants.size()]};
          p.bias = {biases[b], biases[(b + 3) % biases.size()]};
          p.output_zero_point = zp_case == 0 ? 0 : (out.qmin < 0 ? -7 : 9);
          p.clamp_min = relu ? p.output_zero_point : out.qmin;
          p.clamp_max = out.qmax;
          p.channel_axis = 0;
          check(p, qk::Dims{2, 500}, acc);
        }
      }
      // many channels (the rows kernels' 64-row groups decide the fast path on vectors):
      // neighbouring channels cycle through every constant pair and bias
      for (const qk::Dims& shape : {qk::Dims{130, 64}, qk::Dims{2, 70, 64}}) {
        // (under the sanitizers, -O0: the first shape, with the zero point 0 and no ReLU or both)
        if (QK_TEST_SANITIZED && (shape.rank == 3 || zp_case != relu)) continue;
        const int axis = shape.rank - 2;
        const auto channels = static_cast<std::size_t>(shape[axis]);
        qk::RequantParams<Scheme> p;
        for (std::size_t c = 0; c < channels; ++c) {
          p.constants.push_back(covered[(c + static_cast<std::size_t>(zp_case)) % covered.size()]);
          p.bias.push_back(biases[(c * 7 + static_cast<std::size_t>(relu)) % biases.size()]);
        }
        p.output_zero_point = zp_case == 0 ? 0 : (out.qmin < 0 ? -7 : 9);
        p.clamp_min = relu ? p.output_zero_point : out.qmin;
        p.clamp_max = out.qmax;
        p.channel_axis = axis;
        std::vector<std::int32_t> big(static_cast<std::size_t>(shape.product()));
        for (std::size_t i = 0; i < big.size(); ++i) big[i] = acc[i % acc.size()];
        check(p, shape, big);
      }
      // per tensor: one constant pair and one bias for all 1000 (the run's side of the bias
      // clamp picked once per call), a quarter of the pairs under the sanitizers
      for (std::size_t c = 0; c < constants.size(); ++c) {
        for (std::size_t b = 0; b < biases.size(); ++b) {
          if (QK_TEST_SANITIZED && (b + c + zp_case + relu) % 4 != 0) continue;
          qk::RequantParams<Scheme> p;
          p.constants.assign(1, constants[c]);  // (= {x}: a bogus -Wnonnull of GCC 12 at -O3)
          p.bias.assign(1, biases[b]);
          p.output_zero_point = zp_case == 0 ? 0 : (out.qmin < 0 ? -7 : 9);
          p.clamp_min = relu ? p.output_zero_point : out.qmin;
          p.clamp_max = out.qmax;
          check(p, qk::Dims{static_cast<std::int64_t>(acc.size())}, acc);
        }
      }
    }
  }
}

// Per channel, short rows (the kernels' per-channel row loops): neighbouring channels
// alternate between constants the fast path takes and ones it does not (fixed point: a left
// shift, right shift 0, q == INT32_MIN, |q| + c past int32 with the zero point; float:
// multipliers from FLT_MAX, whose products pass int32, to subnormal), biases at the extremes
// and of both signs, row lengths around 1, N, 4 N and 8 N lanes of every target (N <= 16) and
// 0, the output range (no clamp) and a ReLU / narrow clamp, channels on the first, middle and
// last axis. Variant 3 gives every channel `fast`.
template <class Out, class Scheme>
void check_requantize_rows(const qks::Kernels* k, const std::vector<typename Scheme::Constants>& listed,
                           typename Scheme::Constants fast) {
  // (only those the kernels cover: one other would send every call to the reference)
  const std::vector<typename Scheme::Constants> constants = covered_constants<Scheme>(listed);
  const std::vector<std::int32_t> biases = {0, -100, kI32Max, 77, kI32Min, 1 << 30, -987654, kI32Max - 3, 5};
  const qk::IntRange out = range_of<Out>();
  std::vector<std::int32_t> acc = accumulators(9 * 2 * 200, 313);
  const std::int32_t edges[] = {kI32Min, kI32Min + 1, kI32Max, kI32Max - 1, -1, 0, 1, -(1 << 30), 1 << 30};
  for (std::size_t i = 0; i < acc.size(); i += 5) acc[i] = edges[(i / 5) % (sizeof(edges) / sizeof(edges[0]))];
  for (std::int64_t len : {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200}) {
    for (int layout = 0; layout < 3; ++layout) {
      // 9 channels: {9, len} axis 0, {2, 9, len} axis 1, {len, 9} axis 1 (per element)
      const qk::Dims shape = layout == 0 ? qk::Dims{9, len} : layout == 1 ? qk::Dims{2, 9, len} : qk::Dims{len, 9};
      const int axis = layout == 0 ? 0 : 1;
      for (int variant = 0; variant < 4; ++variant) {
        qk::RequantParams<Scheme> p;
        for (std::size_t c = 0; c < 9; ++c) {
          p.constants.push_back(constants[(c + static_cast<std::size_t>(variant)) % constants.size()]);
          p.bias.push_back(biases[(c + 2 * static_cast<std::size_t>(variant)) % biases.size()]);
        }
        if (variant == 3) p.constants.assign(9, fast);
        p.output_zero_point = variant % 2 == 0 ? 0 : (out.qmin < 0 ? 3 : 9);
        p.clamp_min = variant < 2 ? out.qmin : p.output_zero_point;  // ReLU
        p.clamp_max = variant < 2 ? out.qmax : std::min(out.qmax, p.output_zero_point + 50);
        p.channel_axis = axis;
        const auto m = static_cast<std::size_t>(shape.product());
        const qk::View<const std::int32_t> a(acc.data(), shape);
        std::vector<Out> want(m), got(m);
        qk::ref::requantize(a, p, qk::View<Out>(want.data(), shape), "layer");
        qks::requantize(a, p, qk::View<Out>(got.data(), shape), "layer", k);
        CAPTURE(shape.to_string());
        CAPTURE(axis);
        CAPTURE(variant);
        QK_CHECK_SAME(got, want, acc);
        CHECK(got == want);  // counted
      }
    }
  }
}

// Per channel, many rows shorter than a block or with a partial last block (NCHW 7 x 7 maps:
// rows of 49; 50; 196 = 3 blocks + 4 on AVX-512): the row kernels' 64-row groups make the
// fast path's constants on vectors (single rounding and the double shift too) and one tail
// per call serves every row. Constants cycle through those of `listed` the kernels cover (fast
// and not), biases of both signs and at the extremes, zero point 0 and not, ReLU or the whole
// range. Each call as `calls` says: rows by the sign of their bias (small calls), in order
// with both sides clamped where a group of 64 rows mixes signs (calls past
// rows_in_order_bytes, lowered to one byte), or past the stream threshold too, where rows of
// at least kStreamRowMinBytes of output (the shape of 1040-value rows, only then) take the
// general per-row loop with non-temporal stores (from each row's first aligned block) and
// shorter ones the row paths in order.
enum class RowCalls { by_side, in_order, stream };
template <class Out, class Scheme>
void check_requantize_many_rows(const qks::Kernels* k, const std::vector<typename Scheme::Constants>& listed,
                                RowCalls calls) {
  const bool stream = calls == RowCalls::stream;
  const ScopedBytes threshold(qks::detail::stream_threshold_storage(),
                              stream ? 1 : qks::detail::stream_threshold_storage());
  const ScopedBytes in_order(qks::detail::rows_in_order_storage(),
                             calls == RowCalls::by_side ? std::size_t{1} << 40 : 1);
  // only constants the kernels cover: one other would send every call to the reference
  const std::vector<typename Scheme::Constants> constants = covered_constants<Scheme>(listed);
  const std::vector<std::int32_t> biases = {0, -100, kI32Max, 77, kI32Min, 1 << 30, -987654, kI32Max - 3, 5, -(1 << 29), 4321};
  const qk::IntRange out = range_of<Out>();
  for (const qk::Dims& shape : {qk::Dims{130, 49}, qk::Dims{2, 70, 50}, qk::Dims{67, 196}, qk::Dims{5, 1040}}) {
    if (QK_TEST_SANITIZED && shape[shape.rank - 1] != 49) continue;  // (-O0: minutes per target)
    if (!stream && shape[shape.rank - 1] == 1040) continue;  // (long rows: covered elsewhere unless streaming)
    const int axis = shape.rank - 2;
    const auto channels = static_cast<std::size_t>(shape[axis]);
    const auto n = static_cast<std::size_t>(shape.product());
    std::vector<std::int32_t> acc = accumulators(n, static_cast<std::uint32_t>(n) + 11);
    const std::int32_t edges[] = {kI32Min, kI32Min + 1, kI32Max, kI32Max - 1, -1, 0, 1, -(1 << 30), 1 << 30};
    for (std::size_t i = 0; i < n; i += 7) acc[i] = edges[(i / 7) % (sizeof(edges) / sizeof(edges[0]))];
    for (int variant = 0; variant < 4; ++variant) {
      if (QK_TEST_SANITIZED && (variant == 0 || variant == 3)) continue;  // zero point -7 / 9 and ReLU: each once
      qk::RequantParams<Scheme> p;
      for (std::size_t c = 0; c < channels; ++c) {
        p.constants.push_back(constants[(c * 3 + static_cast<std::size_t>(variant)) % constants.size()]);
        p.bias.push_back(biases[(c + static_cast<std::size_t>(variant)) % biases.size()]);
      }
      p.output_zero_point = variant % 2 == 0 ? 0 : (out.qmin < 0 ? -7 : 9);
      p.clamp_min = variant < 2 ? out.qmin : p.output_zero_point;  // ReLU
      p.clamp_max = out.qmax;
      p.channel_axis = axis;
      const qk::View<const std::int32_t> a(acc.data(), shape);
      std::vector<Out> want(n), got(n);
      qk::ref::requantize(a, p, qk::View<Out>(want.data(), shape), "layer");
      qks::requantize(a, p, qk::View<Out>(got.data(), shape), "layer", k);
      CAPTURE(shape.to_string());
      CAPTURE(variant);
      QK_CHECK_SAME(got, want, acc);
      CHECK(got == want);  // counted
    }
  }
}

// Large enough to stream (non-temporal stores past stream_threshold_bytes, from the first
// aligned block of a misaligned output), per tensor with the whole output range (no clamp)
// and per channel with a ReLU clamp, for the fixed-point and float fast paths.
template <class Out, class Scheme = qk::FixedPointDoubleRounding>
void check_requantize_streaming(const qks::Kernels* k) {
  const SanitizedStreamThreshold threshold;
  // (the output is one element into its buffer: a failure names the input one index off)
  const std::size_t n = qks::stream_threshold_bytes() / (sizeof(std::int32_t) + sizeof(Out)) + 1237;
  const std::vector<std::int32_t> acc = accumulators(n, 4242);
  std::vector<Out> want(n + 1), got(n + 1);
  const qk::IntRange out = range_of<Out>();
  for (int per_channel = 0; per_channel < 2; ++per_channel) {
    qk::RequantParams<Scheme> p;
    p.constants = made_constants<Scheme>({0.0061});
    p.bias = {-12345};
    if (per_channel) {
      p.constants = made_constants<Scheme>({0.0061, 0.00123, 0.3});
      p.bias = {-12345, kI32Max - 5, 77};
    }
    p.output_zero_point = sizeof(Out) == 4 ? 0 : 3;  // int32: lo - zp must fit for the fast path
    p.clamp_min = per_channel ? p.output_zero_point : out.qmin;
    p.clamp_max = out.qmax;
    p.channel_axis = 0;
    const qk::Dims shape = per_channel ? qk::Dims{3, static_cast<std::int64_t>(n / 3)}
                                       : qk::Dims{static_cast<std::int64_t>(n)};
    const std::size_t m = static_cast<std::size_t>(shape.product());
    const qk::View<const std::int32_t> a(acc.data(), shape);
    qk::ref::requantize(a, p, qk::View<Out>(want.data() + 1, shape), "layer");  // misaligned
    qks::requantize(a, p, qk::View<Out>(got.data() + 1, shape), "layer", k);
    CAPTURE(per_channel);
    CAPTURE(m);
    QK_CHECK_SAME(got, want, acc);
    CHECK(got == want);  // counted
  }
}

// Float multipliers around the kernels' fast path (finite multiplier, lo - zp and hi - zp
// within 2^24: clamp to hi - zp before rounding, convert, max with lo - zp): products past
// the int32 range and to +-inf (m up to FLT_MAX), products far below one (ties at 1/2 and
// -1/2 included: m = 2^-k with accumulators 2^(k-1)), zero points at both ends of the output
// type (lo - zp down to -2 * 65535), clamps of one value; int32 outputs with a zero point
// put lo - zp past 2^24 (the generic path). Per tensor (blocks and tail) and per-channel rows.
template <class Out, class Round>
void check_requantize_float_edges(const qks::Kernels* k) {
  using Scheme = qk::FloatMultiplier<Round>;
  const qk::IntRange out = range_of<Out>();
  const std::vector<double> ms = {3.4028234663852886e38, 1e30, 65536.0, 1.0, 0.5, 0.25, 1.0 / 3.0,
                                  0x1p-20, 0x1p-31, 1e-30, 1e-44};
  std::vector<std::int32_t> zps = {static_cast<std::int32_t>(out.qmin), static_cast<std::int32_t>(out.qmax), 0};
  if (sizeof(Out) == 4) zps = {0, 1 << 25, -(1 << 25)};  // the last two: lo - zp or hi - zp past 2^24
  std::vector<std::int32_t> acc = accumulators(3 * 64 + 7, 77);
  for (std::int32_t s = 1; s <= 31; ++s) {  // +-2^(s-1): ties of m = 2^-s
    acc.push_back(static_cast<std::int32_t>(std::int64_t{1} << (s - 1)));
    acc.push_back(-static_cast<std::int32_t>(std::int64_t{1} << (s - 1)));
  }
  const auto n = static_cast<std::int64_t>(acc.size());
  for (double m : ms) {
    for (std::int32_t zp : zps) {
      for (int clamp = 0; clamp < 3; ++clamp) {
        qk::RequantParams<Scheme> p;
        p.constants = {Scheme::make(m, "layer")};
        p.output_zero_point = zp;
        p.clamp_min = out.qmin;
        p.clamp_max = out.qmax;
        if (clamp == 1) p.clamp_min = static_cast<std::int32_t>(std::max<std::int64_t>(out.qmin, std::min<std::int64_t>(zp, out.qmax)));  // ReLU
        if (clamp == 2) p.clamp_min = p.clamp_max = static_cast<std::int32_t>((out.qmin + out.qmax) / 2);  // one value
        for (int per_channel = 0; per_channel < 2; ++per_channel) {
          qk::Dims shape{n};
          if (per_channel) {  // rows of n / 3 (whole blocks and a tail), one with a saturating bias
            shape = qk::Dims{3, n / 3};
            p.constants = {Scheme::make(m, "layer"), Scheme::make(m * 0.75, "layer"), Scheme::make(1.0, "layer")};
            p.bias = {0, kI32Max - 3, -100};
            p.channel_axis = 0;
          }
          const auto len = static_cast<std::size_t>(shape.product());
          const qk::View<const std::int32_t> a(acc.data(), shape);
          std::vector<Out> want(len), got(len);
          qk::ref::requantize(a, p, qk::View<Out>(want.data(), shape), "layer");
          qks::requantize(a, p, qk::View<Out>(got.data(), shape), "layer", k);
          CAPTURE(m);
          CAPTURE(zp);
          CAPTURE(p.clamp_min);
          CAPTURE(p.clamp_max);
          CAPTURE(per_channel);
          QK_CHECK_SAME(got, want, acc);
          CHECK(got == want);  // counted
        }
      }
    }
  }
}

template <class Out>
void check_requantize_all(const qks::Kernels* k) {
  const std::initializer_list<double> small = {0.5, 0.25, 1.0, 0.0123456, 0.75, 1e-6, 0.999999, 3e-10, 0.3};
  const std::initializer_list<double> large = {0.5, 1.0, 1.5, 2.0, 3.7, 100.0, 12345.678, 1e-5, 0.0009765625};
  check_requantize_scheme<qk::FloatMultiplier<qk::RoundHalfEven>, Out>(k, made_constants<qk::FloatMultiplier<qk::RoundHalfEven>>(large));
  check_requantize_scheme<qk::FloatMultiplier<qk::RoundHalfAway>, Out>(k, made_constants<qk::FloatMultiplier<qk::RoundHalfAway>>(large));
  check_requantize_scheme<qk::FloatMultiplier<qk::RoundHalfUp>, Out>(k, made_constants<qk::FloatMultiplier<qk::RoundHalfUp>>(large));
  check_requantize_scheme<qk::FloatMultiplier<qk::RoundFloor>, Out>(k, made_constants<qk::FloatMultiplier<qk::RoundFloor>>(large));
  check_requantize_scheme<qk::FloatMultiplier<qk::RoundTowardZero>, Out>(k, made_constants<qk::FloatMultiplier<qk::RoundTowardZero>>(large));
  // power of two: shifts 0..31 (0 and 31 included)
  std::vector<qk::ShiftScale> shifts;
  for (int s : {0, 1, 2, 3, 7, 8, 15, 16, 20, 30, 31}) shifts.push_back(qk::ShiftScale{s});
  check_requantize_scheme<qk::PowerOfTwo<qk::RoundHalfEven>, Out>(k, shifts);
  check_requantize_scheme<qk::PowerOfTwo<qk::RoundHalfAway>, Out>(k, shifts);
  check_requantize_scheme<qk::PowerOfTwo<qk::RoundHalfUp>, Out>(k, shifts);
  check_requantize_scheme<qk::PowerOfTwo<qk::RoundFloor>, Out>(k, shifts);
  check_requantize_scheme<qk::PowerOfTwo<qk::RoundTowardZero>, Out>(k, shifts);
  check_requantize_scheme<qk::SingleShift, Out>(k, shifts);
  // fixed point, including right shifts 0 and 31, left shifts (multipliers > 1) and INT32_MIN
  // multipliers (the SRDHM saturation case)
  std::vector<qk::ref::QuantizedMultiplier> fixed = made_constants<qk::FixedPointDoubleRounding>(large);
  for (auto m : made_constants<qk::FixedPointDoubleRounding>(small)) fixed.push_back(m);
  for (auto m : {qk::ref::QuantizedMultiplier{1 << 30, 0}, qk::ref::QuantizedMultiplier{1 << 30, -31},
                 qk::ref::QuantizedMultiplier{kI32Max, -31}, qk::ref::QuantizedMultiplier{kI32Max, 0},
                 qk::ref::QuantizedMultiplier{kI32Min, 0}, qk::ref::QuantizedMultiplier{kI32Min, -3},
                 qk::ref::QuantizedMultiplier{1518500250, 31}, qk::ref::QuantizedMultiplier{1 << 30, 30},
                 qk::ref::QuantizedMultiplier{0, 0}, qk::ref::QuantizedMultiplier{1234567, 5},
                 // a left shift of 32 is past the kernels: the call (every channel) takes the reference
                 qk::ref::QuantizedMultiplier{1 << 30, 32}})
    fixed.push_back(m);
  check_requantize_scheme<qk::FixedPointDoubleRounding, Out>(k, fixed);
  check_requantize_fixed_edges<Out>(k);
  check_requantize_fixed_edges<Out, qk::FixedPointSingleRounding>(k);
  {
    using QM = qk::ref::QuantizedMultiplier;
    check_requantize_rows<Out, qk::FixedPointDoubleRounding>(
        k,
        {QM{1518500250, -7}, QM{1234567, 3}, QM{1 << 30, -1}, QM{1 << 30, 0}, QM{kI32Max - 64, -7}, QM{kI32Min, -4},
         QM{-(1 << 30) - 12345, -5}, QM{kI32Max, -1}, QM{987654321, -31}},
        QM{1518500250, -7});
    // single rounding: T = 31 - shift of 31..62 on the fast path; 30 (shift 1), 63, negative q
    check_requantize_rows<Out, qk::FixedPointSingleRounding>(
        k,
        {QM{1518500250, -7}, QM{1234567, 3}, QM{1 << 30, 1}, QM{1 << 30, 0}, QM{kI32Max - 64, -7}, QM{kI32Min, -4},
         QM{-(1 << 30) - 12345, -5}, QM{kI32Max, -32}, QM{987654321, -31}},
        QM{1518500250, -7});
    const std::vector<qk::FloatScale> floats = {{0.0061f}, {3.4028235e38f}, {1.0f / 3.0f}, {0x1p-20f}, {1.0f},
                                                {1e-44f},  {65536.0f},      {0.5f},        {1e-3f}};
    check_requantize_rows<Out, qk::FloatMultiplier<qk::RoundHalfEven>>(k, floats, qk::FloatScale{0.0061f});
    check_requantize_rows<Out, qk::FloatMultiplier<qk::RoundFloor>>(k, floats, qk::FloatScale{0.0061f});
    for (const RowCalls calls : {RowCalls::by_side, RowCalls::in_order, RowCalls::stream}) {
      CAPTURE(static_cast<int>(calls));
      check_requantize_many_rows<Out, qk::FloatMultiplier<qk::RoundHalfEven>>(k, floats, calls);
      check_requantize_many_rows<Out, qk::FixedPointDoubleRounding>(
          k,
          {QM{1518500250, -7}, QM{1234567, 3}, QM{1 << 30, -1}, QM{1 << 30, 0}, QM{kI32Max - 64, -7}, QM{kI32Min, -4},
           QM{-(1 << 30) - 12345, -5}, QM{kI32Max, -1}, QM{987654321, -31}, QM{1 << 30, -30}},
          calls);
      if (calls == RowCalls::stream) continue;
      // single rounding around the fast path's bounds: T = 30, 31, 62 (63, shift -32, is past
      // the kernels and filtered out); q at and one past the zero point's bounds (-7 and 9, as
      // check_requantize_fixed_edges); negative q, INT32_MIN
      check_requantize_many_rows<Out, qk::FixedPointSingleRounding>(
          k,
          {QM{1 << 30, 0}, QM{kI32Max, 0}, QM{kI32Max - 1, -1}, QM{kI32Max - 64, -7}, QM{kI32Max - 63, -7},
           QM{kI32Max - 1216, -7}, QM{kI32Max - 1215, -7}, QM{kI32Max - 895, -7}, QM{kI32Max - 894, -7},
           QM{-(1 << 30) - 12345, -5}, QM{kI32Min + 1, -2}, QM{kI32Min, -4}, QM{1518500250, -31}, QM{kI32Max, -31},
           QM{1 << 30, -32}, QM{kI32Max, -32}, QM{1 << 30, 1}, QM{1234567, 3}, QM{987654321, -9}, QM{1 << 30, 30}},
          calls);
    }
  }
  if constexpr (std::is_same<Out, std::int8_t>::value || std::is_same<Out, std::int32_t>::value) {
    check_requantize_streaming<Out>(k);
    check_requantize_streaming<Out, qk::FixedPointSingleRounding>(k);
    check_requantize_streaming<Out, qk::FloatMultiplier<qk::RoundHalfEven>>(k);
  }
  check_requantize_float_edges<Out, qk::RoundHalfEven>(k);
  check_requantize_float_edges<Out, qk::RoundHalfAway>(k);
  check_requantize_float_edges<Out, qk::RoundFloor>(k);
  std::vector<qk::ref::QuantizedMultiplier> single = made_constants<qk::FixedPointSingleRounding>(large);
  for (auto m : made_constants<qk::FixedPointSingleRounding>(small)) single.push_back(m);
  for (auto m : {qk::ref::QuantizedMultiplier{1 << 30, -31}, qk::ref::QuantizedMultiplier{kI32Max, 30},
                 qk::ref::QuantizedMultiplier{kI32Max, -31}, qk::ref::QuantizedMultiplier{1 << 30, 0},
                 qk::ref::QuantizedMultiplier{kI32Min, 0}, qk::ref::QuantizedMultiplier{0, 0}})
    single.push_back(m);
  check_requantize_scheme<qk::FixedPointSingleRounding, Out>(k, single);
  std::vector<qk::DoubleShift::Constants> dbl = made_constants<qk::DoubleShift>({0.75, 0.5, 1.5, 0.3, 1e-3, 1e-9, 1.2});
  for (auto c : {qk::DoubleShift::Constants{1, 1}, qk::DoubleShift::Constants{31, 31},
                 qk::DoubleShift::Constants{30, 31}, qk::DoubleShift::Constants{1, 31},
                 qk::DoubleShift::Constants{5, 9},
                 // past 31 total shift: the kernels' single-rounding form with T = shift2
                 qk::DoubleShift::Constants{0, 40}, qk::DoubleShift::Constants{30, 62},
                 qk::DoubleShift::Constants{31, 40}, qk::DoubleShift::Constants{30, 32},
                 qk::DoubleShift::Constants{20, 45}})
    dbl.push_back(c);
  check_requantize_scheme<qk::DoubleShift, Out>(k, dbl);
  // short rows: multipliers below 1 (the kernels' single-rounding step, shift2 <= 31 and past
  // it) between ones that are not (shift1 >= shift2: (2^s1 + 1) 2^(31-s2) >= 2^31; shift1 31
  // with shift2 > 31)
  {
    using DS = qk::DoubleShift::Constants;
    check_requantize_rows<Out, qk::DoubleShift>(
        k, {DS{3, 9}, DS{9, 9}, DS{0, 1}, DS{1, 2}, DS{30, 31}, DS{31, 40}, DS{0, 62}, DS{31, 31}, DS{12, 33}},
        DS{3, 9});
    // many rows: shift1 0..31 against shift2 1..31 (q = (2^s1 + 1) 2^(31-s2) at and past 2^31;
    // the listed shift2 past 31 are past the kernels and filtered out)
    for (const RowCalls calls : {RowCalls::by_side, RowCalls::in_order}) {
      CAPTURE(static_cast<int>(calls));
      check_requantize_many_rows<Out, qk::DoubleShift>(
          k,
          {DS{3, 9}, DS{9, 9}, DS{0, 1}, DS{1, 2}, DS{30, 31}, DS{31, 40}, DS{0, 62}, DS{31, 31}, DS{12, 33},
           DS{30, 32}, DS{29, 31}, DS{20, 45}, DS{31, 62}, DS{0, 32}, DS{5, 6}, DS{16, 61}, DS{2, 31}},
          calls);
    }
  }
}

// ---------------------------------------------------------------- reductions

inline std::vector<float> reduction_inputs(std::size_t n, std::uint32_t seed, bool with_nonfinite,
                                           bool nonnegative) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-10.0f, 10.0f);
  std::vector<float> x(n);
  for (auto& v : x) {
    v = u(rng);
    if (nonnegative) v = v < 0 ? (rng() % 2 ? 0.0f : -0.0f) : v;  // ReLU-like: signed zeros
    if (with_nonfinite && rng() % 17 == 0) {
      const float specials[] = {kInf, -kInf, std::numeric_limits<float>::quiet_NaN()};
      v = specials[rng() % 3];
    }
  }
  return x;
}

inline void check_minmax(const qks::Kernels* k) {
  std::uint32_t seed = 40;
  std::vector<std::size_t> lengths = test_lengths();
  lengths.push_back(100003);
  for (std::size_t n : lengths) {
    for (int variant = 0; variant < 4; ++variant) {
      const std::vector<float> x = reduction_inputs(n, seed++, variant & 1, variant & 2);
      qk::Range want;
      std::size_t bad = 0;
      float absmax = 0.0f;
      for (float v : x) {
        if (!std::isfinite(v)) {
          ++bad;
          continue;
        }
        want.include(v);
        if (std::fabs(v) > absmax) absmax = std::fabs(v);
      }
      const qks::MinMaxResult got = qks::minmax(x.data(), n, k);
      CAPTURE(n);
      CAPTURE(variant);
      CHECK(bits_of(got.min) == bits_of(want.min));
      CHECK(bits_of(got.max) == bits_of(want.max));
      CHECK(got.nonfinite == bad);
      CHECK(got.finite == n - bad);
      const qks::AbsMaxResult a = qks::absmax(x.data(), n, k);
      CHECK(bits_of(a.absmax) == bits_of(absmax));
      CHECK(a.nonfinite == bad);
    }
  }
  // only zeros: the first zero's sign wins, as std::min/std::max keep it
  for (float first : {0.0f, -0.0f}) {
    std::vector<float> z(37, -first);
    z[5] = first;
    for (std::size_t i = 0; i < 5; ++i) z[i] = std::numeric_limits<float>::quiet_NaN();
    const qks::MinMaxResult got = qks::minmax(z.data(), z.size(), k);
    CHECK(bits_of(got.min) == bits_of(first));
    CHECK(bits_of(got.max) == bits_of(first));
  }
}

inline void check_minmax_per_param(const qks::Kernels* k) {
  for (const auto& c : granularity_cases()) {
    for (int layout = 0; layout < 3; ++layout) {
      const Strided s = make_layout(c.first, layout);
      std::vector<float> data = reduction_inputs(s.storage, 77, true, layout == 1);
      const qk::View<const float> x(data.data(), s.shape, s.strides);
      qk::MinMaxObserver obs(qk::ObserverConfig{c.second, qk::NonFiniteKind::ignore, "t"});
      const qk::ParamLayout pl(c.first, c.second);
      const auto count = static_cast<std::size_t>(pl.count());
      std::vector<float> mn(count, kInf), mx(count, -kInf);
      if (x.size() == 0) continue;
      obs.observe(x);
      obs.observe(x);  // twice: the running update merges
      std::size_t bad = qks::minmax_per_param(x, c.second, mn.data(), mx.data(), k);
      bad += qks::minmax_per_param(x, c.second, mn.data(), mx.data(), k);
      std::size_t want_bad = 0;
      qk::for_each_index(x, [&](std::int64_t off, const qk::Dims&) {
        if (!std::isfinite(x.data()[off])) ++want_bad;
      });
      CAPTURE(c.first.to_string());
      CAPTURE(c.second.to_string());
      CAPTURE(layout);
      CHECK(bad == 2 * want_bad);
      const auto& want = obs.state();
      REQUIRE(want.size() == count);
      for (std::size_t i = 0; i < count; ++i) {
        CHECK(bits_of(mn[i]) == bits_of(want[i].min));
        CHECK(bits_of(mx[i]) == bits_of(want[i].max));
      }
    }
  }
}

inline void check_histogram(const qks::Kernels* k) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{1000}, std::size_t{65537}}) {
    for (bool absolute : {false, true}) {
      for (std::size_t bins : {std::size_t{1}, std::size_t{7}, std::size_t{128}, std::size_t{2048}}) {
        std::vector<float> x = reduction_inputs(n, 5 + static_cast<std::uint32_t>(n), true, false);
        const float lo = absolute ? 0.0f : -7.5f, hi = absolute ? 8.25f : 6.0f;
        if (n > 3) {
          x[0] = lo;
          x[1] = hi;
          x[2] = std::nextafter(hi, -kInf);
        }
        std::vector<std::uint64_t> want(bins, 3), got(bins, 3);  // accumulates onto existing counts
        qks::HistogramResult wr;
        for (float v0 : x) {
          const float v = absolute ? std::fabs(v0) : v0;
          if (std::isnan(v)) {
            ++wr.nan;
          } else if (v < lo) {
            ++wr.below;
          } else if (v > hi) {
            ++wr.above;
          } else {
            auto b = static_cast<std::size_t>(((v - lo) * static_cast<float>(bins)) / (hi - lo));
            if (b > bins - 1) b = bins - 1;
            ++want[b];
          }
        }
        const qks::HistogramResult gr = qks::histogram(x.data(), n, lo, hi, bins, got.data(), absolute, k);
        CAPTURE(n);
        CAPTURE(bins);
        CAPTURE(absolute);
        CHECK(got == want);
        CHECK(gr.below == wr.below);
        CHECK(gr.above == wr.above);
        CHECK(gr.nan == wr.nan);
      }
    }
  }
}

// The scalar histogram the kernels must equal (counts accumulate onto `counts`).
inline qks::HistogramResult reference_histogram(const float* x, std::size_t n, float lo, float hi,
                                                std::size_t bins, std::uint64_t* counts, bool absolute) {
  qks::HistogramResult r;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = absolute ? std::fabs(x[i]) : x[i];
    if (std::isnan(v)) {
      ++r.nan;
    } else if (v < lo) {
      ++r.below;
    } else if (v > hi) {
      ++r.above;
    } else {
      // +inf where (v - lo) * bins overflows (the -1e38..1e38 ranges below): the last bin
      const float q = ((v - lo) * static_cast<float>(bins)) / (hi - lo);
      const std::size_t b = q >= static_cast<float>(bins) ? bins - 1 : static_cast<std::size_t>(q);
      ++counts[b];
    }
  }
  return r;
}

// The blocked histogram path (index blocks of 512, two uint16 sub-histograms flushed every
// 65536 values, a slot for quotients equal to `bins` and a trash slot) against the scalar
// loop: lengths around the block, the 8 * bins threshold and the chunk, unaligned starts,
// values on and next to every bin edge, NaN/+-Inf, hi itself, more than 65535 values in one
// bin, bins at the uint16 index limit.
inline void check_histogram_blocked(const qks::Kernels* k) {
  std::mt19937 rng(2024);
  auto run = [&](const std::vector<float>& buf, std::size_t offset, std::size_t n, float lo, float hi,
                 std::size_t bins, bool absolute) {
    std::vector<std::uint64_t> want(bins, 7), got(bins, 7);
    const qks::HistogramResult wr = reference_histogram(buf.data() + offset, n, lo, hi, bins, want.data(), absolute);
    const qks::HistogramResult gr = qks::histogram(buf.data() + offset, n, lo, hi, bins, got.data(), absolute, k);
    CAPTURE(n);
    CAPTURE(offset);
    CAPTURE(bins);
    CAPTURE(absolute);
    CAPTURE(lo);
    CAPTURE(hi);
    CHECK(got == want);
    CHECK(gr.below == wr.below);
    CHECK(gr.above == wr.above);
    CHECK(gr.nan == wr.nan);
    if (absolute) return;
    // the same counts and minmax()'s result from the fused pass
    std::vector<std::uint64_t> got2(bins, 7);
    qks::MinMaxResult mm;
    mm.min = 123.0f;  // overwritten
    const qks::HistogramResult gr2 =
        qks::histogram_minmax(buf.data() + offset, n, lo, hi, bins, got2.data(), &mm, k);
    const qks::MinMaxResult want_mm = qks::minmax(buf.data() + offset, n, k);
    qk::Range seq;  // the sequential std::min/std::max over the finite values
    for (std::size_t i = 0; i < n; ++i)
      if (std::isfinite(buf[offset + i])) seq.include(buf[offset + i]);
    CHECK(got2 == want);
    CHECK(gr2.below == wr.below);
    CHECK(gr2.above == wr.above);
    CHECK(gr2.nan == wr.nan);
    CHECK(bits_of(mm.min) == bits_of(seq.min));
    CHECK(bits_of(mm.max) == bits_of(seq.max));
    CHECK(bits_of(want_mm.min) == bits_of(seq.min));
    CHECK(mm.nonfinite == want_mm.nonfinite);
    CHECK(mm.finite == want_mm.finite);
  };
  // edges: v = lo + j * (hi - lo) / bins and its float neighbours, for every j
  for (std::size_t bins : {std::size_t{3}, std::size_t{100}, std::size_t{2048}}) {
    // The last four: extreme widths; with -1e38..1e38, (v - lo) * bins overflows to +inf for
    // most values (the last bin, as the scalar loop's clamp).
    for (const auto& range : {std::pair<float, float>{-7.5f, 6.0f}, std::pair<float, float>{0.1f, 0.7f},
                              std::pair<float, float>{-1e-3f, 3e4f}, std::pair<float, float>{0.0f, 1e30f},
                              std::pair<float, float>{0.0f, 1e-30f}, std::pair<float, float>{-1e38f, 1e38f},
                              std::pair<float, float>{0.0f, 1e-33f}}) {
      const float lo = range.first, hi = range.second;
      std::vector<float> edges;
      for (std::size_t j = 0; j <= bins; ++j) {
        const float e = lo + static_cast<float>(j) * ((hi - lo) / static_cast<float>(bins));
        const float e2 = lo + static_cast<float>(static_cast<double>(j) * (static_cast<double>(hi) - lo) /
                                                 static_cast<double>(bins));
        for (float v : {e, e2}) {
          edges.push_back(v);
          edges.push_back(std::nextafter(v, -kInf));
          edges.push_back(std::nextafter(v, kInf));
        }
      }
      edges.push_back(lo);
      edges.push_back(hi);
      edges.push_back(std::nextafter(lo, -kInf));
      edges.push_back(std::nextafter(hi, kInf));
      edges.push_back(std::numeric_limits<float>::quiet_NaN());
      edges.push_back(kInf);
      edges.push_back(-kInf);
      // repeat (shuffled) past 8 * bins and a few blocks, plus a tail
      std::vector<float> buf;
      while (buf.size() < 8 * bins + 3 * 512 + 37) {
        std::shuffle(edges.begin(), edges.end(), rng);
        buf.insert(buf.end(), edges.begin(), edges.end());
      }
      buf.push_back(0.0f);
      run(buf, 1, buf.size() - 1, lo, hi, bins, false);
      run(buf, 0, buf.size(), lo, hi, bins, false);
      if (lo <= 0.0f) run(buf, 0, buf.size(), 0.0f, hi, bins, true);
    }
  }
  // lengths around the block / threshold / chunk, random data with non-finite values
  const std::size_t bins = 64;
  const std::vector<float> data = reduction_inputs(3 * 65536 + 600, 99, true, false);
  for (std::size_t n : {std::size_t{511}, std::size_t{512}, std::size_t{513}, std::size_t{1023},
                        std::size_t{1024}, std::size_t{1025}, std::size_t{65535}, std::size_t{65536},
                        std::size_t{65537}, std::size_t{2 * 65536 + 511}, std::size_t{3 * 65536 + 513}})
    for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{3}})
      for (bool absolute : {false, true}) run(data, offset, n, absolute ? 0.0f : -5.0f, 5.0f, bins, absolute);
  // more than 65535 values of one bin per flush (uint16 counters), and all at hi (slot `bins`)
  for (float value : {0.25f, 1.0f, -3.0f}) {
    const std::vector<float> same(3 * 65536 + 5, value);
    run(same, 0, same.size(), -1.0f, 1.0f, 16, false);
    run(same, 1, same.size() - 1, -1.0f, 1.0f, 2048, true);
  }
  // zeros of both signs as the min or max (the fused min/max fixes the sign like minmax())
  {
    std::vector<float> z(5000);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (auto& v : z) v = u(rng);
    for (std::size_t i = 0; i < z.size(); i += 97) z[i] = (i / 97) % 2 ? 0.0f : -0.0f;
    run(z, 0, z.size(), -1.0f, 1.0f, 32, false);
    run(z, 3, z.size() - 3, -1.0f, 1.0f, 32, false);
    for (auto& v : z) v = -v;
    run(z, 0, z.size(), -1.0f, 1.0f, 32, false);
    z[4999] = std::numeric_limits<float>::quiet_NaN();
    z[700] = kInf;
    run(z, 1, z.size() - 1, -1.0f, 1.0f, 32, false);
    std::vector<float> nan(4000, std::numeric_limits<float>::quiet_NaN());
    run(nan, 0, nan.size(), -1.0f, 1.0f, 32, false);
  }
  // bins at the limit of the blocked path (bins + 2 <= 65536) and past it
  for (std::size_t b : {std::size_t{65534}, std::size_t{65535}}) {
    std::vector<float> big(8 * b + 100);
    std::uniform_real_distribution<float> u(-1.1f, 1.1f);
    for (auto& v : big) v = u(rng);
    run(big, 0, big.size(), -1.0f, 1.0f, b, false);
  }
}

// GridHistogram's scalar binning (quantkit::detail::kernels::grid_histogram's plain loops,
// skip_nonfinite or not) onto counts starting at 5.
inline std::vector<std::uint64_t> reference_grid_histogram(const float* x, std::size_t n, float inv_width,
                                                           std::int64_t base, std::size_t bins, bool skip) {
  std::vector<std::uint64_t> counts(bins, 5);
  bool& plain = qk::detail::kernels::plain_reductions_only();
  const bool saved = plain;
  plain = true;
  qk::detail::kernels::grid_histogram(x, static_cast<std::int64_t>(n), 1, inv_width, base,
                                      static_cast<std::int64_t>(bins), counts.data(), skip);
  plain = saved;
  return counts;
}

// A grid: bins of width 2^exponent from base * 2^exponent.
struct GridCase {
  std::size_t bins;
  std::int64_t base;
  int exponent;
};

// n values on grid g, each in one of its bins as the observer guarantees: random ones, bin
// edges and their float neighbours, +-0, denormals, negative values whose product with
// 2^-exponent underflows to -0 (bin -1); NaN/+-Inf with `nonfinite`.
inline std::vector<float> grid_inputs(const GridCase& g, std::size_t n, std::uint32_t seed, bool nonfinite) {
  std::mt19937 rng(seed);
  const float inv = std::ldexp(1.0f, -g.exponent);
  const double w = std::ldexp(1.0, g.exponent);
  const double lo = static_cast<double>(g.base) * w;
  const double hi = static_cast<double>(g.base + static_cast<std::int64_t>(g.bins)) * w;
  std::uniform_real_distribution<double> u(lo, hi);
  std::uniform_int_distribution<std::int64_t> bin(0, static_cast<std::int64_t>(g.bins) - 1);
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float specials[] = {0.0f, -0.0f, tiny, -tiny, -3 * tiny, 1e-40f, -1e-40f,
                            std::numeric_limits<float>::min(), -std::numeric_limits<float>::min(),
                            -1e-30f, 1e-30f, -1e-20f};
  auto in_grid = [&](float v) {
    const std::int64_t j = qk::detail::kernels::grid_index(v, inv) - g.base;
    return std::isfinite(v) && j >= 0 && j < static_cast<std::int64_t>(g.bins);
  };
  std::vector<float> x;
  x.reserve(n);
  while (x.size() < n) {
    const int kind = static_cast<int>(rng() % 16);
    float v;
    if (nonfinite && kind == 0) {
      const float nf[] = {std::numeric_limits<float>::quiet_NaN(), kInf, -kInf};
      x.push_back(nf[rng() % 3]);
      continue;
    }
    if (kind <= 2) {
      v = specials[rng() % (sizeof specials / sizeof specials[0])];
    } else if (kind <= 7) {  // an edge or a neighbour
      const float e = static_cast<float>(static_cast<double>(g.base + bin(rng)) * w);
      const int side = static_cast<int>(rng() % 3);
      v = side == 0 ? e : std::nextafter(e, side == 1 ? -kInf : kInf);
    } else {
      v = static_cast<float>(u(rng));
    }
    if (in_grid(v)) x.push_back(v);
  }
  return x;
}

// simd::grid_histogram against the scalar loops: grids with few and many bins (2, 3 ... 65535
// through the uint16 sub-histograms; 65536, 70000 straight into the counts), negative bases,
// |v / w| near 2^30, huge and tiny widths (underflowing products); lengths around the vector
// width, the block, the 8 * bins threshold and the 64K flush; unaligned starts; with and
// without NaN/+-Inf (the skip_nonfinite loop; the plain loop too when there are none).
inline void check_grid_histogram(const qks::Kernels* k) {
  auto run = [&](const std::vector<float>& buf, std::size_t offset, std::size_t n, const GridCase& g) {
    const float inv = std::ldexp(1.0f, -g.exponent);
    const float* x = buf.data() + offset;
    std::size_t finite = 0;
    for (std::size_t i = 0; i < n; ++i) finite += std::isfinite(x[i]) ? 1 : 0;
    const std::vector<std::uint64_t> want = reference_grid_histogram(x, n, inv, g.base, g.bins, true);
    std::vector<std::uint64_t> got(g.bins, 5);
    const std::size_t counted = qks::grid_histogram(x, n, inv, g.base, g.bins, got.data(), k);
    CAPTURE(n);
    CAPTURE(offset);
    CAPTURE(g.bins);
    CAPTURE(g.base);
    CAPTURE(g.exponent);
    CHECK(counted == finite);
    const long at = first_difference(got, want);
    CHECK_MESSAGE(at < 0, "bin " << at << ": got " << (at < 0 ? 0 : got[static_cast<std::size_t>(at)])
                                 << ", want " << (at < 0 ? 0 : want[static_cast<std::size_t>(at)]));
    if (finite == n) CHECK(reference_grid_histogram(x, n, inv, g.base, g.bins, false) == want);
    // the same counts and minmax()'s result from the fused pass
    std::vector<std::uint64_t> got2(g.bins, 5);
    qks::MinMaxResult mm;
    mm.min = 123.0f;  // overwritten
    const std::size_t counted2 = qks::grid_histogram_minmax(x, n, inv, g.base, g.bins, got2.data(), &mm, k);
    qk::Range seq;  // the sequential std::min/std::max over the finite values
    for (std::size_t i = 0; i < n; ++i)
      if (std::isfinite(x[i])) seq.include(x[i]);
    CHECK(counted2 == finite);
    CHECK(got2 == got);
    CHECK(bits_of(mm.min) == bits_of(seq.min));
    CHECK(bits_of(mm.max) == bits_of(seq.max));
    CHECK(mm.nonfinite == n - finite);
    CHECK(mm.finite == finite);
  };
  const std::size_t lengths[] = {0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 511, 512, 513, 1025, 4100,
                                 65535, 65536, 65537, 2 * 65536 + 511};
  const GridCase small[] = {{2, -1, 20}, {3, -2, 0}, {2, 0, -3}, {64, -32, 100}, {64, -32, -100},
                            {1000, 5, 4}, {4096, -2100, -10}, {4096, (std::int64_t{1} << 30) - 4096, -5},
                            {4096, -(std::int64_t{1} << 30), 3}};
  std::uint32_t seed = 1;
  for (const GridCase& g : small) {
    // Under the sanitizers (-O0: the largest share of that stage's test time) the lengths past
    // the 64K flush run for a third of the grids (few, mid and many bins; all grids otherwise).
    const bool long_lengths = !QK_TEST_SANITIZED || (&g - small) % 3 == 0;
    for (bool nonfinite : {false, true}) {
      const std::vector<float> buf = grid_inputs(g, 2 * 65536 + 515, seed++, nonfinite);
      for (std::size_t n : lengths) {
        if (!(g.bins <= 64 || n == 0 || n == 17 || n >= 4100)) continue;
        if (n >= 65535 && !long_lengths) continue;
        // every start alignment up to 4100 values; past the 64K flush, one each (aligned or not)
        if (n >= 65535) {
          run(buf, n % 2 == 0 ? 0 : 3, n, g);
          continue;
        }
        for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) run(buf, offset, n, g);
      }
    }
  }
  // bins at the limit of the sub-histograms (bins + 1 <= 65536, past 8 * bins values) and past it
  for (const GridCase& g : {GridCase{65535, -30000, -3}, GridCase{65536, -40000, 2}, GridCase{70000, -35000, 1}}) {
    const std::vector<float> buf = grid_inputs(g, 8 * 65536 + 600, seed++, g.bins == 65535);
    run(buf, 0, buf.size(), g);
    run(buf, 1, 70001, g);
  }
  // more than 65535 values of one bin per flush (uint16 counters)
  for (float value : {-1e-30f, 0.0f, 1.5f}) {
    const std::vector<float> same(3 * 65536 + 5, value);
    run(same, 0, same.size(), GridCase{2, -1, 1});
    run(same, 1, same.size() - 1, GridCase{3, -1, 0});
  }
  // the front end's checks
  std::uint64_t counts[4] = {};
  const float x[2] = {0.5f, 1.5f};
  CHECK_THROWS_AS(qks::grid_histogram(x, 2, 3.0f, 0, 4, counts, k), qk::Error);
  CHECK_THROWS_AS(qks::grid_histogram(x, 2, 1.0f, 0, 0, counts, k), qk::Error);
  CHECK_THROWS_AS(qks::grid_histogram(x, 2, 1.0f, std::int64_t{1} << 31, 4, counts, k), qk::Error);
  CHECK_THROWS_AS(qks::grid_histogram(x, 2, 1.0f, -(std::int64_t{1} << 31), 4, counts, k), qk::Error);
  CHECK(qks::grid_histogram(x, 2, 1.0f, 0, 4, counts, k) == 2);
  CHECK((counts[0] == 1 && counts[1] == 1 && counts[2] == 0));
  qks::MinMaxResult mm;
  CHECK_THROWS_AS(qks::grid_histogram_minmax(x, 2, 3.0f, 0, 4, counts, &mm, k), qk::Error);
  CHECK_THROWS_AS(qks::grid_histogram_minmax(x, 2, 1.0f, 0, 4, counts, nullptr, k), qk::Error);
  CHECK(qks::grid_histogram_minmax(x, 2, 1.0f, 0, 4, counts, &mm, k) == 2);
  CHECK((counts[0] == 2 && counts[1] == 2 && counts[2] == 0));
  CHECK((mm.min == 0.5f && mm.max == 1.5f && mm.finite == 2 && mm.nonfinite == 0));
}

// The blocked min/max (blocks of 64 vectors on raw values, a block with NaN/Inf or an
// overflowing sum scanned again with the finite filter) against the sequential loop.
inline void check_minmax_blocked(const qks::Kernels* k) {
  std::mt19937 rng(7);
  auto check = [&](const std::vector<float>& buf, std::size_t offset, std::size_t n) {
    qk::Range want;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float v = buf[offset + i];
      if (!std::isfinite(v)) {
        ++bad;
        continue;
      }
      want.include(v);
    }
    const qks::MinMaxResult got = qks::minmax(buf.data() + offset, n, k);
    CAPTURE(n);
    CAPTURE(offset);
    CHECK(bits_of(got.min) == bits_of(want.min));
    CHECK(bits_of(got.max) == bits_of(want.max));
    CHECK(got.nonfinite == bad);
    CHECK(got.finite == n - bad);
  };
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (std::size_t n : {std::size_t{63}, std::size_t{64}, std::size_t{65}, std::size_t{255}, std::size_t{256},
                        std::size_t{257}, std::size_t{511}, std::size_t{512}, std::size_t{513}, std::size_t{1023},
                        std::size_t{1024}, std::size_t{1025}, std::size_t{4095}, std::size_t{4096},
                        std::size_t{4097}, std::size_t{10000}}) {
    std::vector<float> buf(n + 3);
    for (auto& v : buf) v = nd(rng);
    for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) check(buf, offset, n);
    // one special value at a time, at the start / middle / end of the run
    for (float special : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(), kInf,
                          -kInf, 3e38f, -3e38f, std::numeric_limits<float>::max()}) {
      for (std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
        std::vector<float> b2 = buf;
        b2[1 + at] = special;
        check(b2, 1, n);
      }
    }
    // finite values whose block sums overflow (the slow path without any non-finite value)
    std::vector<float> huge(n);
    for (std::size_t i = 0; i < n; ++i) huge[i] = (i % 3 == 0 ? -3e38f : 3.2e38f) * (1.0f - 1e-7f * static_cast<float>(i % 11));
    check(huge, 0, n);
    // zeros of both signs, in different blocks
    std::vector<float> z(n, 0.0f);
    for (std::size_t i = 0; i < n; ++i) z[i] = (rng() & 1) ? 0.0f : -0.0f;
    check(z, 0, n);
    z[n - 1] = 1.0f;
    check(z, 0, n);
    z[n / 2] = std::numeric_limits<float>::quiet_NaN();
    check(z, 0, n);
    // nothing finite
    std::vector<float> nan(n, std::numeric_limits<float>::quiet_NaN());
    nan[n / 3] = -kInf;
    check(nan, 0, n);
  }
}

// ---------------------------------------------------------------- everything, one target

template <class Q>
void check_quantize_all_roundings(const qks::Kernels* k, float scale, std::int32_t zp) {
  for (auto app : {qk::ScaleApplicationKind::divide, qk::ScaleApplicationKind::multiply_by_reciprocal}) {
    for_each_deterministic_rounding([&](const auto& round) {
      CAPTURE(app_name(app));
      CAPTURE(qk::to_string(std::remove_reference_t<decltype(round)>::mode));
      CAPTURE(scale);
      CAPTURE(zp);
      check_quantize_per_tensor<Q>(k, round, app, scale, zp, range_of<Q>());
    });
  }
}

// out[i] = table[in[i]]: every byte value, lengths around every vector width, unaligned,
// in place.
inline void check_lookup_bytes(const qks::Kernels* k) {
  std::mt19937 rng(11);
  std::uint8_t table[256];
  for (auto& t : table) t = static_cast<std::uint8_t>(rng());
  std::vector<std::size_t> lengths = test_lengths();
  for (std::size_t n : {127, 128, 129, 255, 256, 257, 4099}) lengths.push_back(n);
  for (std::size_t n : lengths) {
    for (std::size_t offset : {0u, 3u}) {
      std::vector<std::uint8_t> in(n + offset), got(n + offset, 0xAB), want(n + offset, 0xAB);
      for (std::size_t i = 0; i < n + offset; ++i) in[i] = static_cast<std::uint8_t>(i < 256 ? i : rng());
      for (std::size_t i = offset; i < n + offset; ++i) want[i] = table[in[i]];
      qks::lookup_bytes(table, in.data() + offset, got.data() + offset, n, k);
      CAPTURE(n);
      CAPTURE(offset);
      CHECK(got == want);  // including the bytes before and after: untouched
      std::vector<std::uint8_t> inplace = in;
      qks::lookup_bytes(table, inplace.data() + offset, inplace.data() + offset, n, k);
      for (std::size_t i = 0; i < offset; ++i) want[i] = in[i];
      CHECK(inplace == want);
    }
  }
}

// max_pairs: every unit size (the vector paths 1, 2, 4, 8 and wide units, the scalar tail),
// int8 and uint8 (the same bytes give different maxima), unaligned; bytes around untouched.
inline void check_max_pairs(const qks::Kernels* k) {
  std::mt19937 rng(12);
  for (std::size_t unit : {1u, 2u, 3u, 4u, 8u, 12u, 16u, 56u, 65u, 130u})
    for (std::size_t n_out : {0u, 1u, 5u, 31u, 64u, 257u})
      for (bool is_signed : {false, true}) {
        const std::size_t offset = 1;
        std::vector<std::uint8_t> in(2 * n_out * unit + offset), got(n_out * unit + 2 * offset, 0xAB);
        for (auto& v : in) v = static_cast<std::uint8_t>(rng());
        std::vector<std::uint8_t> want = got;
        for (std::size_t i = 0; i < n_out; ++i)
          for (std::size_t j = 0; j < unit; ++j) {
            const std::uint8_t a = in[offset + 2 * i * unit + j], b = in[offset + (2 * i + 1) * unit + j];
            const bool b_wins = is_signed ? static_cast<std::int8_t>(a) < static_cast<std::int8_t>(b) : a < b;
            want[offset + i * unit + j] = b_wins ? b : a;
          }
        qks::max_pairs(in.data() + offset, n_out, unit, is_signed, got.data() + offset, k);
        CAPTURE(unit);
        CAPTURE(n_out);
        CAPTURE(is_signed);
        CHECK(got == want);
      }
}

// depthwise_rows: 1 to 25 taps at arbitrary offsets, lengths around the vector widths, extreme
// weights whose sums wrap modulo 2^32 like the reference's.
inline void check_depthwise_rows(const qks::Kernels* k) {
  std::mt19937 rng(13);
  std::vector<std::size_t> lengths = test_lengths();
  for (std::size_t n : {80u, 95u, 129u}) lengths.push_back(n);
  for (std::size_t taps : {1u, 4u, 9u, 25u})
    for (std::size_t n : lengths)
      for (bool extreme : {false, true}) {
        std::vector<std::int64_t> offset(taps);
        std::vector<std::int32_t> w(taps);
        for (std::size_t t = 0; t < taps; ++t) {
          offset[t] = static_cast<std::int64_t>(rng() % 40);
          w[t] = extreme ? (t % 2 ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int32_t>::max())
                         : static_cast<std::int32_t>(rng() % 256) - 128;
        }
        std::vector<std::uint8_t> in(n + 41);
        for (auto& v : in) v = static_cast<std::uint8_t>(rng());
        std::vector<std::int32_t> want(n + 1, 7), got(n + 1, 7);
        for (std::size_t i = 0; i < n; ++i) {
          std::uint32_t s = 0;
          for (std::size_t t = 0; t < taps; ++t)
            s += static_cast<std::uint32_t>(w[t]) * in[static_cast<std::size_t>(offset[t]) + i];
          want[i] = static_cast<std::int32_t>(s);
        }
        qks::depthwise_rows(in.data(), n, w.data(), offset.data(), taps, got.data(), k);
        CAPTURE(taps);
        CAPTURE(n);
        CHECK(got == want);
      }
}

// depthwise_rows_f32: 1 to 25 taps at arbitrary offsets, lengths around the vector widths; the
// sums of rounded products in tap order from +0 (no FMA: a fused sum differs in the last bits
// for these values), +-0 products, and inf / NaN inputs that reach only some lanes.
inline void check_depthwise_rows_f32(const qks::Kernels* k) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<std::size_t> lengths = test_lengths();
  for (std::size_t n : {78u, 80u, 95u, 129u}) lengths.push_back(n);
  std::size_t fused_differs = 0;
  for (std::size_t taps : {1u, 4u, 9u, 25u})
    for (std::size_t n : lengths)
      for (int special = 0; special < 3; ++special) {
        std::vector<std::int64_t> offset(taps);
        std::vector<float> w(taps);
        for (std::size_t t = 0; t < taps; ++t) {
          offset[t] = static_cast<std::int64_t>(rng() % 40);
          w[t] = special == 1 && t % 3 == 0 ? -0.0f : u(rng);
        }
        std::vector<float> in(n + 41);
        for (auto& v : in) v = u(rng);
        if (special == 1)
          for (std::size_t i = 0; i < in.size(); i += 5) in[i] = 0.0f;
        if (special == 2 && n > 0) {
          in[rng() % in.size()] = std::numeric_limits<float>::infinity();
          in[rng() % in.size()] = std::nanf("");
        }
        std::vector<float> want(n + 1, 7.0f), got(n + 1, 7.0f);
        for (std::size_t i = 0; i < n; ++i) {
          float s = 0.0f;
          float fused = 0.0f;
          for (std::size_t t = 0; t < taps; ++t) {
            const float x = in[static_cast<std::size_t>(offset[t]) + i];
            s = s + qk::detail::no_contract(w[t] * x);
            fused = std::fma(w[t], x, fused);
          }
          want[i] = s;
          fused_differs += std::isfinite(s) && fused != s ? 1 : 0;
        }
        qks::depthwise_rows_f32(in.data(), n, w.data(), offset.data(), taps, got.data(), k);
        CAPTURE(taps);
        CAPTURE(n);
        CAPTURE(special);
        bool same = true;
        for (std::size_t i = 0; i <= n; ++i)
          same = same && (std::memcmp(&got[i], &want[i], sizeof(float)) == 0 || (std::isnan(got[i]) && std::isnan(want[i])));
        CHECK(same);
      }
  CHECK(fused_differs > 100);  // the values tell a fused sum from the defined one
}

inline void check_quantize_everything(const qks::Kernels* k) {
  for (float scale : {1.0f, 0.25f, 0.1f, 0.0173f, 2.0f}) {
    check_quantize_all_roundings<std::int8_t>(k, scale, 0);
    check_quantize_all_roundings<std::int8_t>(k, scale, -7);
    check_quantize_all_roundings<std::uint8_t>(k, scale, 128);
    check_quantize_all_roundings<std::int16_t>(k, scale, 3);
    check_quantize_all_roundings<std::uint16_t>(k, scale, 40000);
  }
  // narrow / restricted ranges and 4-bit ranges held in int8
  for_each_deterministic_rounding([&](const auto& round) {
    check_quantize_per_tensor<std::int8_t>(k, round, qk::ScaleApplicationKind::divide, 0.5f, 0, {-127, 127});
    check_quantize_per_tensor<std::int8_t>(k, round, qk::ScaleApplicationKind::divide, 0.5f, 2, {-8, 7});
    check_quantize_per_tensor<std::uint8_t>(k, round, qk::ScaleApplicationKind::multiply_by_reciprocal, 0.5f, 9, {0, 15});
    // ranges inside the type at both ends (the AVX-512 byte path clamps from below by saturation
    // and one byte max)
    check_quantize_per_tensor<std::uint8_t>(k, round, qk::ScaleApplicationKind::divide, 0.5f, 100, {10, 200});
    check_quantize_per_tensor<std::int8_t>(k, round, qk::ScaleApplicationKind::multiply_by_reciprocal, 0.5f, -20, {-100, 50});
    check_quantize_per_tensor<std::uint8_t>(k, round, qk::ScaleApplicationKind::divide, 0.125f, 255, {0, 255});
    check_quantize_per_tensor<std::int8_t>(k, round, qk::ScaleApplicationKind::divide, 0.125f, -128, {-128, 127});
    // 16-bit (A16): the narrow range, ranges inside the type with the zero point off-centre
    // (the block path clamps both ends in float before adding z and packing pairs)
    check_quantize_per_tensor<std::int16_t>(k, round, qk::ScaleApplicationKind::divide, 0.5f, 0, {-32767, 32767});
    check_quantize_per_tensor<std::int16_t>(k, round, qk::ScaleApplicationKind::multiply_by_reciprocal, 0.25f, -20, {-1000, 1000});
    check_quantize_per_tensor<std::uint16_t>(k, round, qk::ScaleApplicationKind::divide, 0.125f, 30000, {100, 60000});
    check_quantize_per_tensor<std::uint16_t>(k, round, qk::ScaleApplicationKind::divide, 0.5f, 65535, {0, 65535});
    check_quantize_per_tensor<std::int32_t>(k, round, qk::ScaleApplicationKind::divide, 0.25f, -5, {-1000000, 1000000});
    check_quantize_per_tensor<std::int32_t>(k, round, qk::ScaleApplicationKind::divide, 0.25f, 0, {-16777216, 16777216});
  });
}

inline void check_views_everything(const qks::Kernels* k) {
  for (const auto& c : granularity_cases()) {
    for (int in_layout = 0; in_layout < 4; ++in_layout) {
      for (int out_layout : {0, 1, 2}) {
        check_quantize_view<std::int8_t>(k, c.first, c.second, in_layout, out_layout,
                                         qk::RoundHalfEven{}, qk::ScaleApplicationKind::divide, true);
      }
      check_quantize_view<std::uint8_t>(k, c.first, c.second, in_layout, 0, qk::RoundHalfAway{},
                                        qk::ScaleApplicationKind::multiply_by_reciprocal, false);
      check_quantize_view<std::int16_t>(k, c.first, c.second, in_layout, 1, qk::RoundFloor{},
                                        qk::ScaleApplicationKind::divide, false);
      check_quantize_view<std::uint16_t>(k, c.first, c.second, in_layout, 0, qk::RoundHalfUp{},
                                         qk::ScaleApplicationKind::divide, true);
      check_quantize_view<std::int32_t>(k, c.first, c.second, in_layout, 2, qk::RoundTowardZero{},
                                        qk::ScaleApplicationKind::multiply_by_reciprocal, true);
    }
  }
}

inline void check_stochastic_everything(const qks::Kernels* k) {
  for (const auto& c : granularity_cases()) {
    for (int in_layout : {0, 1, 2}) {
      check_stochastic<std::int8_t>(k, c.first, c.second, in_layout, qk::ScaleApplicationKind::divide);
      check_stochastic<std::uint8_t>(k, c.first, c.second, in_layout,
                                     qk::ScaleApplicationKind::multiply_by_reciprocal);
    }
  }
  check_stochastic<std::int16_t>(k, qk::Dims{5000}, qk::Granularity::per_tensor(), 0,
                                 qk::ScaleApplicationKind::divide);
}

inline void check_packed_everything(const qks::Kernels* k) {
  for (int bits : {4, 2}) {
    for (bool is_signed : {true, false}) {
      for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5},
                            std::size_t{31}, std::size_t{64}, std::size_t{129}, std::size_t{1001},
                            std::size_t{9003}}) {
        check_packed(k, bits, is_signed, n, qk::Granularity::per_tensor(), qk::RoundHalfEven{});
        check_packed(k, bits, is_signed, n, qk::Granularity::per_channel(0), qk::RoundHalfAway{});
      }
    }
  }
}

}  // namespace simd_test
