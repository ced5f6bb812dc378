// bench_kernels: quantkit's quantize / dequantize / fake-quantize / requantize kernels against
//   - the same operation as a plain loop, autovectorized (-O3 -march=native) and built for
//     baseline x86-64 (-O3 -march=x86-64): bench_kernels/plain_*.cpp;
//   - memcpy of the same number of bytes moved (read + written), the memory roofline;
//   - the op's own loads and stores with no arithmetic (bench_kernels/floor_native.cpp), the
//     most any kernel of the op reaches at that size;
//   - quantkit's scalar reference (correctness ground truth, shown for scale only).
// ONNX Runtime and PyTorch are timed by tools/bench/*.{js,py} on the same sizes and merged by
// tools/bench/render.py; tools/bench/run_all.sh runs everything.
//
// Benchmark names: <op>/<variant>/<granularity>/<impl>/<elements>, e.g.
//   quantize/half_even/per_tensor/simd/65536       (x / s, ties to even; ".mul": x * (1/s))
//   requantize/fixed_point/per_channel/plain_native/16777216
//   memcpy/5B/-/memcpy/4096                        (memcpy moving 5 bytes per element)
//   floor/quantize/-/floor_native/4096             (the op's loads and stores, no arithmetic)
// Every row carries the counters size (elements) and bpe (bytes moved per element), and
// items_per_second / bytes_per_second. CPU time is measured (the machine is shared: time spent
// descheduled is not the kernel's); the peer scripts measure CPU time too.
//
// Before anything is timed every impl's output is compared with quantkit::ref on a small case
// with ties, NaN, +-Inf and saturating values; a mismatch turns that benchmark into an error
// row (it is never timed), so a ratio always compares equal work.
//
// Extra flags (before Google Benchmark's own):
//   --qk_sizes=4096,65536,...        sizes of the sweep (default 4K..16M, x4 steps)
//   --qk_matrix_sizes=65536,16777216 sizes of the variant x granularity matrix (every single
//                                    target too at sizes <= 1M elements)
//   --qk_no_matrix                   only the sweep
//   --qk_requant_layers=L            the "simd" requantize rows cycle through L layers'
//                                    biases (random signs), as interleaved layers see them
//   --qk_requant_positive_biases     those layers' biases all >= 0 (no sign to mispredict)
//   --qk_channel_len=L               per-channel rows of L values (n / L rows) instead of 64
//                                    rows: e.g. 49 with --qk_sizes=3136,12544,50176
//   --qk_channels_last=C             per-channel cases [n / C, C] with the channels on axis 1
//                                    (GEMM outputs, NHWC); no plain loop for them
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench_kernels/cases.hpp"
#include "bench_kernels/floor.hpp"
#include "bench_kernels/plain.hpp"
#include "quantkit/params.hpp"
#include "quantkit/policy/requantization.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/ref/quantize.hpp"
#include "quantkit/ref/requantize.hpp"
#include "quantkit/simd/abi.hpp"
#include "quantkit/tensor/view.hpp"

namespace qk = quantkit;

namespace qk_bench {

const char* to_string(Op op) {
  switch (op) {
    case Op::quantize: return "quantize";
    case Op::dequantize: return "dequantize";
    case Op::fake_quantize: return "fake_quantize";
    case Op::requantize: return "requantize";
    case Op::quantize_i16: return "quantize_i16";
  }
  return "?";
}
const char* to_string(Gran g) {
  switch (g) {
    case Gran::per_tensor: return "per_tensor";
    case Gran::per_channel: return "per_channel";
    case Gran::per_group: return "per_group32";
  }
  return "?";
}
const char* to_string(Round r) {
  switch (r) {
    case Round::half_even: return "half_even";
    case Round::half_away: return "half_away";
    case Round::half_up: return "half_up";
    case Round::floor: return "floor";
    case Round::toward_zero: return "toward_zero";
    default: return "?";
  }
}
const char* to_string(Requant s) {
  switch (s) {
    case Requant::float_half_even: return "float";
    case Requant::fixed_point: return "fixed_point";
    case Requant::fixed_point_single: return "fixed_point_single";
    case Requant::pow2_half_away: return "pow2";
    case Requant::single_shift: return "single_shift";
    case Requant::double_shift: return "double_shift";
    default: return "?";
  }
}

std::string Case::variant() const {
  switch (op) {
    case Op::quantize:
    case Op::quantize_i16:
    case Op::fake_quantize: return std::string(to_string(round)) + (multiply ? ".mul" : "");
    case Op::dequantize: return "linear";
    case Op::requantize: return std::string(to_string(requant)) + (bias ? ".bias" : "");
  }
  return "?";
}
std::size_t Case::param_count() const {
  switch (gran) {
    case Gran::per_tensor: return 1;
    case Gran::per_channel: return axis == 1 ? row_len : rows;
    case Gran::per_group: return rows * ((row_len + kBlock - 1) / kBlock);
  }
  return 1;
}
std::size_t Case::in_bytes() const {
  return op == Op::dequantize ? 1 : 4;  // float or int32 in, int8 in for dequantize
}
std::size_t Case::out_bytes() const {
  if (op == Op::quantize_i16) return 2;
  return (op == Op::dequantize || op == Op::fake_quantize) ? 4 : 1;
}

namespace {

// ---- shapes, parameters, data -----------------------------------------------------------

void set_shape(Case& c, std::size_t n) {
  c.n = n;
  switch (c.gran) {
    case Gran::per_tensor: c.rows = 1; c.row_len = n; break;
    case Gran::per_channel:
      if (channels_last() != 0) {  // [n / C, C], channels on axis 1; whole rows only
        c.axis = 1;
        c.row_len = channels_last();
        c.rows = n / c.row_len;
        if (c.rows * c.row_len != n) c.row_len = 0;
      } else if (channel_len() != 0) {  // rows of that length, whole rows only
        c.rows = n / channel_len();
        c.row_len = c.rows * channel_len() == n ? channel_len() : 0;
      } else {
        c.rows = kChannels;
        c.row_len = n / kChannels;
      }
      break;
    case Gran::per_group:
      c.row_len = std::min(n, kRowLenMax);
      c.rows = n / c.row_len;
      break;
  }
}

CaseParams make_params(const Case& c) {
  CaseParams p;
  const bool wide = c.op == Op::quantize_i16;
  if (wide) {
    p.qmin = -32768;
    p.qmax = 32767;
  }
  const std::size_t count = c.param_count();
  for (std::size_t i = 0; i < count; ++i) {
    // Per tensor: [-1, 1] onto [-127, 127] (int16: [-32767, 32767]) + zero point 2; channels
    // and groups vary.
    const float spread = count == 1 ? 1.0f : 0.5f + static_cast<float>(i % 97) / 97.0f;
    p.scale.push_back(spread / (wide ? 32767.0f : 127.0f));
    p.zero_point.push_back(count == 1 ? 2 : static_cast<std::int32_t>(i % 5) - 2);
    p.multiplier.push_back(0.0061 * (count == 1 ? 1.0 : 1.0 + static_cast<double>(i % 64) / 64.0));
    if (count > 1 || c.bias) p.bias.push_back(static_cast<std::int32_t>((i * 37) % 200) - 100);
  }
  p.out_zero_point = 3;
  return p;
}

template <class T>
struct AlignedDelete {
  void operator()(T* p) const { std::free(p); }
};
template <class T>
using Buffer = std::unique_ptr<T[], AlignedDelete<T>>;
template <class T>
Buffer<T> allocate(std::size_t n) {
  const std::size_t bytes = ((n * sizeof(T) + 63) / 64) * 64;
  return Buffer<T>(static_cast<T*>(std::aligned_alloc(64, bytes)));
}

// The data every case reads and writes: the first n elements of each buffer.
struct Arena {
  std::size_t capacity = 0;
  Buffer<float> x, y;
  Buffer<std::int8_t> q_in, q_out;
  Buffer<std::int16_t> q16_out;
  Buffer<std::int32_t> acc;

  void init(std::size_t n, bool specials) {
    capacity = n;
    x = allocate<float>(n);
    y = allocate<float>(n);
    q_in = allocate<std::int8_t>(n);
    q_out = allocate<std::int8_t>(n);
    q16_out = allocate<std::int16_t>(n);
    acc = allocate<std::int32_t>(n);
    std::mt19937 rng(20240611u);
    std::uniform_real_distribution<float> real(-1.1f, 1.1f);
    std::uniform_int_distribution<int> byte(-128, 127);
    std::uniform_int_distribution<std::int32_t> wide(-20000, 20000);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = real(rng);
      q_in[i] = static_cast<std::int8_t>(byte(rng));
      acc[i] = wide(rng);
    }
    std::memset(y.get(), 0, n * sizeof(float));
    std::memset(q_out.get(), 0, n);
    std::memset(q16_out.get(), 0, n * sizeof(std::int16_t));
    if (!specials) return;
    // Ties at several scales, non-finite values, saturating and extreme inputs.
    const float inf = std::numeric_limits<float>::infinity();
    const float specials_x[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.0f, -0.0f,
                                1e30f, -1e30f, 3e9f, -3e9f, 1.0f, -1.0f};
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 7 == 0) x[i] = (static_cast<float>(static_cast<int>(i % 301) - 150) + 0.5f) / 127.0f;
      if (i % 19 == 0) x[i] = (static_cast<float>(static_cast<int>(i % 60001) - 30000) + 0.5f) / 32767.0f;
      if (i % 13 == 0) x[i] = specials_x[(i / 13) % (sizeof(specials_x) / sizeof(float))];
      if (i % 11 == 0) acc[i] = static_cast<std::int32_t>((i % 257) * 64) - 8192 + 32;  // shift ties
      if (i % 17 == 0) acc[i] = (i / 17) % 2 ? std::numeric_limits<std::int32_t>::max()
                                             : std::numeric_limits<std::int32_t>::min();
    }
  }
};

Arena& bench_arena() {
  static Arena a;
  return a;
}
std::map<std::string, CaseParams>& bench_params() {
  static std::map<std::string, CaseParams> p;
  return p;
}

// Fills the buffers and parameters of a case over an arena.
Case bind(Case c, Arena& a, std::map<std::string, CaseParams>& param_cache) {
  const std::string key = std::string(c.op == Op::quantize_i16 ? "i16/" : "") + (c.bias ? "bias/" : "") +
                          to_string(c.gran) + "/" + std::to_string(c.rows) + "x" + std::to_string(c.row_len) +
                          "/axis" + std::to_string(c.axis);
  auto it = param_cache.find(key);
  if (it == param_cache.end()) it = param_cache.emplace(key, make_params(c)).first;
  c.params = &it->second;
  c.x = a.x.get();
  c.y = a.y.get();
  c.q_in = a.q_in.get();
  c.q_out = a.q_out.get();
  c.q16_out = a.q16_out.get();
  c.acc = a.acc.get();
  return c;
}

}  // namespace

// ---- the scalar reference (quantkit::ref) -------------------------------------------------

qk::Dims dims_of(const Case& c) {
  if (c.gran == Gran::per_tensor) return qk::Dims{static_cast<std::int64_t>(c.n)};
  return qk::Dims{static_cast<std::int64_t>(c.rows), static_cast<std::int64_t>(c.row_len)};
}

qk::QuantParams quant_params(const Case& c) {
  qk::QuantParams p;
  p.scale = c.params->scale;
  p.zero_point = c.params->zero_point;
  p.range = qk::IntRange{c.params->qmin, c.params->qmax};
  switch (c.gran) {
    case Gran::per_tensor: p.granularity = qk::Granularity::per_tensor(); break;
    case Gran::per_channel: p.granularity = qk::Granularity::per_channel(c.axis); break;
    case Gran::per_group:
      p.granularity = qk::Granularity::per_group(1, static_cast<std::int64_t>(kBlock));
      break;
  }
  return p;
}

qk::RoundingMode mode_of(Round r) {
  switch (r) {
    case Round::half_even: return qk::RoundingMode::half_even;
    case Round::half_away: return qk::RoundingMode::half_away;
    case Round::half_up: return qk::RoundingMode::half_up;
    case Round::floor: return qk::RoundingMode::floor;
    case Round::toward_zero: return qk::RoundingMode::toward_zero;
    default: return qk::RoundingMode::half_even;
  }
}

namespace {

template <class Scheme>
Run ref_requantize(const Case& c) {
  const auto p = requant_params_of<Scheme>(c);
  const qk::View<const std::int32_t> in(c.acc, dims_of(c));
  const qk::View<std::int8_t> out(c.q_out, dims_of(c));
  return [in, out, p] { qk::ref::requantize(in, p, out); };
}

Run ref_make(const Case& c) {
  const auto app = c.multiply ? qk::ScaleApplicationKind::multiply_by_reciprocal
                              : qk::ScaleApplicationKind::divide;
  switch (c.op) {
    case Op::quantize: {
      const qk::View<const float> in(c.x, dims_of(c));
      const qk::View<std::int8_t> out(c.q_out, dims_of(c));
      const qk::QuantParams p = quant_params(c);
      return qk::visit_rounding(mode_of(c.round), [&](auto rounding) -> Run {
        return [in, out, p, rounding, app] { qk::ref::quantize(in, p, out, rounding, app); };
      });
    }
    case Op::quantize_i16: {
      const qk::View<const float> in(c.x, dims_of(c));
      const qk::View<std::int16_t> out(c.q16_out, dims_of(c));
      const qk::QuantParams p = quant_params(c);
      return qk::visit_rounding(mode_of(c.round), [&](auto rounding) -> Run {
        return [in, out, p, rounding, app] { qk::ref::quantize(in, p, out, rounding, app); };
      });
    }
    case Op::fake_quantize: {
      const qk::View<const float> in(c.x, dims_of(c));
      const qk::View<float> out(c.y, dims_of(c));
      const qk::QuantParams p = quant_params(c);
      return qk::visit_rounding(mode_of(c.round), [&](auto rounding) -> Run {
        return [in, out, p, rounding, app] { qk::ref::fake_quantize(in, p, out, rounding, app); };
      });
    }
    case Op::dequantize: {
      const qk::View<const std::int8_t> in(c.q_in, dims_of(c));
      const qk::View<float> out(c.y, dims_of(c));
      const qk::QuantParams p = quant_params(c);
      return [in, out, p] { qk::ref::dequantize(in, p, out); };
    }
    case Op::requantize:
      if (c.gran == Gran::per_group) return {};
      switch (c.requant) {
        case Requant::float_half_even: return ref_requantize<qk::FloatMultiplier<qk::RoundHalfEven>>(c);
        case Requant::fixed_point: return ref_requantize<qk::FixedPointDoubleRounding>(c);
        case Requant::fixed_point_single: return ref_requantize<qk::FixedPointSingleRounding>(c);
        case Requant::pow2_half_away: return ref_requantize<qk::PowerOfTwo<qk::RoundHalfAway>>(c);
        case Requant::single_shift: return ref_requantize<qk::SingleShift>(c);
        case Requant::double_shift: return ref_requantize<qk::DoubleShift>(c);
        default: return {};
      }
  }
  return {};
}

// ---- plain loops ----------------------------------------------------------------------------

// Parameter rows for the plain loops: per group, one row per block.
void plain_rows(const Case& c, std::size_t& rows, std::size_t& len) {
  if (c.gran == Gran::per_group) {
    rows = c.n / kBlock;
    len = kBlock;
  } else {
    rows = c.rows;
    len = c.row_len;
  }
}

PlainRq plain_constants(Requant s, double m, std::int32_t bias) {
  PlainRq k{};
  k.bias = bias;
  switch (s) {
    case Requant::float_half_even: k.multiplier = qk::FloatMultiplier<>::make(m).multiplier; break;
    case Requant::fixed_point: {
      const auto qm = qk::FixedPointDoubleRounding::make(m);
      k.fixed = qm.multiplier;
      k.shift = qm.shift;
      break;
    }
    case Requant::fixed_point_single: {
      const auto qm = qk::FixedPointSingleRounding::make(m);
      k.fixed = qm.multiplier;
      k.shift = qm.shift;
      break;
    }
    case Requant::pow2_half_away: k.shift = qk::PowerOfTwo<qk::RoundHalfAway>::make(m).shift; break;
    case Requant::single_shift: k.shift = qk::SingleShift::make(m).shift; break;
    case Requant::double_shift: {
      const auto d = qk::DoubleShift::make(m);
      k.shift1 = d.shift1;
      k.shift = d.shift2;
      break;
    }
    default: break;
  }
  return k;
}

Impl plain_impl(const PlainTable& t) {
  Impl impl;
  impl.name = t.name;
  impl.make = [&t](const Case& c) -> Run {
    // (Rows of one parameter set each: channels last, a set per column, is not one of them.)
    if (c.gran == Gran::per_channel && c.axis != 0) return {};
    std::size_t rows = 0, len = 0;
    plain_rows(c, rows, len);
    const CaseParams& cp = *c.params;
    if (c.op == Op::requantize) {
      if (c.gran == Gran::per_group) return {};
      std::vector<PlainRq> k;
      for (std::size_t r = 0; r < rows; ++r)
        k.push_back(plain_constants(c.requant, cp.multiplier[r], cp.bias.empty() ? 0 : cp.bias[r]));
      return [&t, c, rows, len, k, zp = cp.out_zero_point] {
        t.requantize(c.requant, c.acc, c.q_out, rows, len, k.data(), zp, -128, 127);
      };
    }
    std::vector<PlainQ> q;
    for (std::size_t r = 0; r < rows; ++r)
      q.push_back(PlainQ{cp.scale[r], qk::scale_factor(qk::ScaleApplicationKind::multiply_by_reciprocal, cp.scale[r]),
                         cp.zero_point[r], cp.qmin, cp.qmax});
    switch (c.op) {
      case Op::quantize:
        return [&t, c, rows, len, q] { t.quantize(c.round, c.multiply, c.x, c.q_out, rows, len, q.data()); };
      case Op::quantize_i16:
        return [&t, c, rows, len, q] { t.quantize_i16(c.round, c.multiply, c.x, c.q16_out, rows, len, q.data()); };
      case Op::fake_quantize:
        return [&t, c, rows, len, q] { t.fake_quantize(c.round, c.multiply, c.x, c.y, rows, len, q.data()); };
      case Op::dequantize:
        return [&t, c, rows, len, q] { t.dequantize(c.q_in, c.y, rows, len, q.data()); };
      default: return {};
    }
  };
  return impl;
}

// ---- correctness gate -----------------------------------------------------------------------

struct Checker {
  Arena arena;       // the impl writes here
  Arena ref_arena;   // the reference writes here (same inputs)
  std::map<std::string, CaseParams> params;
  std::map<std::string, std::string> verdicts;  // key -> "" (equal) or the first difference

  static std::string key(const Impl& impl, const Case& c) {
    return impl.name + "|" + to_string(c.op) + "|" + c.variant() + "|" + to_string(c.gran);
  }

  Case check_case(Case c) {
    switch (c.gran) {
      case Gran::per_tensor: c.n = 4099; c.rows = 1; c.row_len = 4099; break;
      case Gran::per_channel:
        if (c.axis == 1) {  // the bench's channel count, over enough rows for every row path
          c.row_len = channels_last();
          c.rows = std::max<std::size_t>(5, 4099 / c.row_len);
        } else {
          c.rows = kChannels;
          c.row_len = 67;
        }
        c.n = c.rows * c.row_len;
        break;
      case Gran::per_group: c.rows = 3; c.row_len = kBlock * 45; c.n = c.rows * c.row_len; break;
    }
    return c;
  }

  // "" when impl equals the reference on the check case (or does not support it).
  const std::string& verdict(const Impl& impl, const Case& bench_case) {
    const std::string k = key(impl, bench_case);
    auto it = verdicts.find(k);
    if (it != verdicts.end()) return it->second;
    const Case c = check_case(bench_case);
    if (arena.capacity < c.n) {
      const std::size_t n = std::max<std::size_t>(4480, c.n);
      arena.init(n, true);
      ref_arena.init(n, true);
    }
    const Case ci = bind(c, arena, params);
    const Case cr = bind(c, ref_arena, params);
    std::string result;
    Run run = impl.make(ci);
    Run ref = ref_make(cr);
    if (run && ref) {
      std::memset(arena.y.get(), 0x5a, c.n * sizeof(float));
      std::memset(arena.q_out.get(), 0x5a, c.n);
      std::memset(arena.q16_out.get(), 0x5a, c.n * sizeof(std::int16_t));
      impl.enter();
      run();
      impl.leave();
      ref();
      const bool float_out = c.op == Op::dequantize || c.op == Op::fake_quantize;
      const bool wide_out = c.op == Op::quantize_i16;
      for (std::size_t i = 0; i < c.n && result.empty(); ++i) {
        const bool same = float_out ? std::memcmp(&arena.y[i], &ref_arena.y[i], sizeof(float)) == 0
                          : wide_out ? arena.q16_out[i] == ref_arena.q16_out[i]
                                     : arena.q_out[i] == ref_arena.q_out[i];
        if (!same) {
          std::ostringstream os;
          os << "differs from quantkit::ref at element " << i << ": ";
          if (float_out) os << arena.y[i] << " vs " << ref_arena.y[i];
          else if (wide_out) os << arena.q16_out[i] << " vs " << ref_arena.q16_out[i];
          else os << int(arena.q_out[i]) << " vs " << int(ref_arena.q_out[i]);
          if (c.op == Op::requantize) os << " (acc " << arena.acc[i] << ")";
          else if (c.op != Op::dequantize) os << " (x " << arena.x[i] << ")";
          result = os.str();
        }
      }
    }
    if (!result.empty()) std::fprintf(stderr, "bench_kernels: %s: %s\n", k.c_str(), result.c_str());
    return verdicts.emplace(k, result).first->second;
  }
};

Checker& checker() {
  static Checker c;
  return c;
}

// ---- benchmarks -------------------------------------------------------------------------------

void set_counters(benchmark::State& st, std::size_t n, std::size_t bpe) {
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n));
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n * bpe));
  st.counters["size"] = static_cast<double>(n);
  st.counters["bpe"] = static_cast<double>(bpe);
}

void bm_case(benchmark::State& st, const Impl* impl, Case c) {
  const std::string& verdict = checker().verdict(*impl, c);
  if (!verdict.empty()) {
    st.SkipWithError(verdict.c_str());
    for (auto _ : st) {
    }
    return;
  }
  c = bind(c, bench_arena(), bench_params());
  Run run = impl->make(c);
  void* out = c.op == Op::quantize || c.op == Op::requantize ? static_cast<void*>(c.q_out)
              : c.op == Op::quantize_i16                     ? static_cast<void*>(c.q16_out)
                                                              : static_cast<void*>(c.y);
  impl->enter();
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  impl->leave();
  set_counters(st, c.n, c.in_bytes() + c.out_bytes());
}

// memcpy moving the same bytes as an n-element case with bpe bytes per element: bpe*n/2
// bytes read and as many written.
void bm_memcpy(benchmark::State& st, std::size_t n, std::size_t bpe) {
  Arena& a = bench_arena();
  const std::size_t bytes = bpe * n / 2;
  auto* dst = reinterpret_cast<unsigned char*>(a.y.get());
  const auto* src = reinterpret_cast<const unsigned char*>(a.x.get());
  for (auto _ : st) {
    std::memcpy(dst, src, bytes);
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  set_counters(st, n, bpe);
}

// The op's loads and stores with no arithmetic (bench_kernels/floor_native.cpp): the most any
// kernel of that op can reach at that size. Same buffers and bytes counted as the op's cases.
void bm_floor(benchmark::State& st, Op op, std::size_t n) {
  Arena& a = bench_arena();
  const FloorTable& f = floor_native();
  std::size_t bpe = 5;
  for (auto _ : st) {
    switch (op) {
      case Op::quantize: f.narrow_32_to_8(a.x.get(), a.q_out.get(), n); break;
      case Op::requantize: f.narrow_32_to_8(a.acc.get(), a.q_out.get(), n); break;
      case Op::dequantize: f.widen_8_to_32(a.q_in.get(), a.y.get(), n); break;
      case Op::fake_quantize: f.copy_32(a.x.get(), a.y.get(), n); break;
      case Op::quantize_i16: f.narrow_32_to_16(a.x.get(), a.q16_out.get(), n); break;
    }
    benchmark::DoNotOptimize(a.y.get());
    benchmark::DoNotOptimize(a.q_out.get());
    benchmark::DoNotOptimize(a.q16_out.get());
    benchmark::ClobberMemory();
  }
  if (op == Op::fake_quantize) bpe = 8;
  if (op == Op::quantize_i16) bpe = 6;
  set_counters(st, n, bpe);
}

std::vector<std::size_t> parse_sizes(const char* s) {
  std::vector<std::size_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(static_cast<std::size_t>(std::stoull(item)));
  return v;
}

std::vector<Case> variants_of(Op op, bool all) {
  std::vector<Case> v;
  Case c;
  c.op = op;
  if (op == Op::quantize || op == Op::quantize_i16 || op == Op::fake_quantize) {
    for (int r = 0; r < static_cast<int>(Round::count); ++r)
      for (bool mul : {false, true}) {
        c.round = static_cast<Round>(r);
        c.multiply = mul;
        if (all || c.round == Round::half_even) v.push_back(c);
      }
  } else if (op == Op::requantize) {
    for (int s = 0; s < static_cast<int>(Requant::count); ++s) {
      c.requant = static_cast<Requant>(s);
      if (all || c.requant == Requant::fixed_point || c.requant == Requant::float_half_even)
        v.push_back(c);
    }
    // The sweep's two schemes per tensor with a bias too (the per-channel cases have biases:
    // per channel / per tensor compares the same work with these).
    if (!all)
      for (Requant s : {Requant::fixed_point, Requant::float_half_even}) {
        c.requant = s;
        c.bias = true;
        v.push_back(c);
      }
  } else {
    v.push_back(c);
  }
  return v;
}

}  // namespace
}  // namespace qk_bench

int main(int argc, char** argv) {
  using namespace qk_bench;
  std::vector<std::size_t> sizes{4096, 16384, 65536, 262144, 1048576, 4194304, 16777216};
  std::vector<std::size_t> matrix_sizes{65536, 16777216};
  bool matrix = true;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--qk_sizes=", 0) == 0) sizes = parse_sizes(argv[i] + 11);
    else if (a.rfind("--qk_matrix_sizes=", 0) == 0) matrix_sizes = parse_sizes(argv[i] + 18);
    else if (a == "--qk_no_matrix") matrix = false;
    else if (a.rfind("--qk_divider_bypass=", 0) == 0) {
      // A/B of the AVX-512 dividing blocks' shape on this CPU (the default comes from its vendor).
      const int v = std::atoi(argv[i] + 20);
      if (v != 2 && v != 3) {
        std::fprintf(stderr, "bench_kernels: --qk_divider_bypass takes 2 or 3, got '%s'\n", argv[i] + 20);
        return 2;
      }
      quantkit::simd::detail::divider_bypass_storage() = v;
    } else if (a.rfind("--qk_requant_layers=", 0) == 0) {
      const int v = std::atoi(argv[i] + 20);
      if (v < 1 || v > 4096) {
        std::fprintf(stderr, "bench_kernels: --qk_requant_layers takes 1..4096, got '%s'\n", argv[i] + 20);
        return 2;
      }
      qk_bench::requant_layers() = v;
    } else if (a.rfind("--qk_channel_len=", 0) == 0) {
      const int v = std::atoi(argv[i] + 17);
      if (v < 1 || v > (1 << 24)) {
        std::fprintf(stderr, "bench_kernels: --qk_channel_len takes 1..16777216, got '%s'\n", argv[i] + 17);
        return 2;
      }
      qk_bench::channel_len() = static_cast<std::size_t>(v);
    } else if (a.rfind("--qk_channels_last=", 0) == 0) {
      const int v = std::atoi(argv[i] + 19);
      if (v < 1 || v > (1 << 24)) {
        std::fprintf(stderr, "bench_kernels: --qk_channels_last takes 1..16777216, got '%s'\n", argv[i] + 19);
        return 2;
      }
      qk_bench::channels_last() = static_cast<std::size_t>(v);
    } else if (a == "--qk_requant_positive_biases") {
      qk_bench::requant_positive_biases() = true;
    } else if (a.rfind("--qk_stream_threshold=", 0) == 0) {
      // Calls moving more bytes than this store non-temporally (default: the last-level cache).
      const char* text = argv[i] + 22;
      char* end = nullptr;
      const unsigned long long bytes = std::strtoull(text, &end, 10);
      if (*text < '0' || *text > '9' || *end != '\0') {
        std::fprintf(stderr, "bench_kernels: --qk_stream_threshold takes a byte count, got '%s'\n", text);
        return 2;
      }
      quantkit::simd::detail::stream_threshold_storage() = static_cast<std::size_t>(bytes);
    } else if (a.rfind("--qk_stream_prefetch=", 0) == 0) {
      // How far ahead streaming calls prefetch their input on AVX2/SSE (0: off; default 512).
      const char* text = argv[i] + 21;
      char* end = nullptr;
      const unsigned long long bytes = std::strtoull(text, &end, 10);
      if (*text < '0' || *text > '9' || *end != '\0') {
        std::fprintf(stderr, "bench_kernels: --qk_stream_prefetch takes a byte count, got '%s'\n", text);
        return 2;
      }
      quantkit::simd::detail::stream_prefetch_storage() = static_cast<std::size_t>(bytes);
    } else {
      args.push_back(argv[i]);
    }
  }
  int bargc = static_cast<int>(args.size());
  benchmark::Initialize(&bargc, args.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, args.data())) return 1;

  std::size_t max_n = 0;
  for (auto n : sizes) max_n = std::max(max_n, n);
  if (matrix)
    for (auto n : matrix_sizes) max_n = std::max(max_n, n);
  bench_arena().init(max_n, false);

  static std::vector<Impl> impls;
  add_simd_impls(impls);
  add_simd_static_impls(impls);
  impls.push_back(plain_impl(plain_native()));
  impls.push_back(plain_impl(plain_baseline()));
  Impl ref;
  ref.name = "ref";
  ref.make = ref_make;
  impls.push_back(ref);

  std::set<std::string> registered;
  auto add = [&](const Impl& impl, Case c, std::size_t n) {
    set_shape(c, n);
    if (c.row_len == 0 || c.n % c.rows != 0) return;
    const std::string name = std::string(to_string(c.op)) + "/" + c.variant() + "/" +
                             to_string(c.gran) + "/" + impl.name + "/" + std::to_string(n);
    if (!registered.insert(name).second) return;
    // Cases an impl does not support are left out.
    if (!impl.make(bind(c, bench_arena(), bench_params()))) return;
    benchmark::RegisterBenchmark(name.c_str(), bm_case, &impl, c);
  };
  auto add_memcpy = [&](std::size_t n, std::size_t bpe) {
    const std::string name = "memcpy/" + std::to_string(bpe) + "B/-/memcpy/" + std::to_string(n);
    if (!registered.insert(name).second) return;
    benchmark::RegisterBenchmark(name.c_str(), bm_memcpy, n, bpe);
  };
  auto add_floor = [&](Op op, std::size_t n) {
    const std::string name = std::string("floor/") + to_string(op) + "/-/" + floor_native().name + "/" +
                             std::to_string(n);
    if (!registered.insert(name).second) return;
    benchmark::RegisterBenchmark(name.c_str(), bm_floor, op, n);
  };
  const Op ops[] = {Op::quantize, Op::dequantize, Op::fake_quantize, Op::requantize, Op::quantize_i16};
  const Gran grans[] = {Gran::per_tensor, Gran::per_channel, Gran::per_group};

  // The sweep: default variants, every granularity, every size; the reference per tensor only.
  for (Op op : ops)
    for (const Case& v : variants_of(op, false))
      for (Gran g : grans)
        for (std::size_t n : sizes) {
          if (g == Gran::per_tensor) {
            add_memcpy(n, op == Op::fake_quantize ? 8 : op == Op::quantize_i16 ? 6 : 5);
            add_floor(op, n);
          }
          for (const Impl& impl : impls) {
            if (!impl.sweep) continue;
            if (impl.name == "ref" && g != Gran::per_tensor) continue;
            if (v.bias && g != Gran::per_tensor) continue;  // (per channel has biases anyway)
            Case c = v;
            c.gran = g;
            add(impl, c, n);
          }
        }
  // The matrix: every variant x granularity x target at a cache-resident and a DRAM size.
  if (matrix)
    for (std::size_t n : matrix_sizes)
      for (Op op : ops)
        for (const Case& v : variants_of(op, true))
          for (Gran g : grans)
            for (const Impl& impl : impls) {
              if (impl.name == "ref") continue;
              // One target at a time only where the kernels, not memory, set the pace.
              if (!impl.sweep && n > (std::size_t{1} << 20)) continue;
              Case c = v;
              c.gran = g;
              add(impl, c, n);
            }

  benchmark::AddCustomContext("quantkit.sizes", std::to_string(sizes.size()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
