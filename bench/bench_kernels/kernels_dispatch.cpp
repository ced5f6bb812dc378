// quantkit's SIMD kernels with runtime dispatch: this is the one translation unit that
// compiles quantkit/simd/implementation.hpp (every Highway target; libhwy picks the CPU's
// best), at the build's baseline flags — what a portable binary ships.
//
// Rows: "simd" — quantkit::simd's public entry points with the default (dispatched) kernels:
// the raw-pointer functions per tensor (quantize, fake_quantize, dequantize) and per channel
// (quantize_per_channel, fake_quantize_per_channel, dequantize_per_channel on [c.rows, c.row_len],
// channels on c.axis), the View functions otherwise (per group, and requantize; same
// arguments as quantkit::ref); "simd:<TARGET>" — the same calls on
// one target's kernels (quantkit::simd::available_kernels(): every compiled target this CPU
// runs), for the variant matrix; "simd_prepared" — requantize through PreparedRequantize
// objects made once (dispatched kernels).
#if __has_include("quantkit/simd/implementation.hpp")
// The AVX-512 and AVX2 kernels compile in kernels_dispatch_avx3.cpp / _avx2.cpp, in parallel
// (a split implementation, quantkit/simd/implementation.hpp); this part the rest.
#define QUANTKIT_SIMD_IMPLEMENTATION
#define QUANTKIT_SIMD_IMPLEMENTATION_TARGETS (~(HWY_AVX3_DL | HWY_AVX3 | HWY_AVX2))
#include "quantkit/simd/implementation.hpp"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cases.hpp"
#include "quantkit/params.hpp"
#include "quantkit/policy/requantization.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/ref/requantize.hpp"
#include "quantkit/simd/simd.hpp"
#include "quantkit/tensor/view.hpp"

namespace qk_bench {

namespace qk = quantkit;
namespace qs = quantkit::simd;

namespace {

// The layers a requantize row cycles through (--qk_requant_layers; one without biases): layer
// 0's parameters are the case's (the check runs it), the others have the same constants and
// biases of random sign, as a network's interleaved layers, so that per-row branches on the
// bias see a sequence the predictor cannot learn from one call to the next (with many
// layers); --qk_requant_positive_biases: the same layers with biases >= 0, to tell the
// branches' cost from the parameters' cache misses.
template <class Scheme>
std::vector<qk::RequantParams<Scheme>> requant_layers_of(const Case& c) {
  const auto p = requant_params_of<Scheme>(c);
  const int layers = p.bias.empty() ? 1 : requant_layers();
  std::vector<qk::RequantParams<Scheme>> ps(static_cast<std::size_t>(layers), p);
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int32_t> bias(requant_positive_biases() ? 0 : -100, 100);
  for (std::size_t l = 1; l < ps.size(); ++l)
    for (std::int32_t& b : ps[l].bias) b = bias(rng);
  return ps;
}

// Calls `call(layer)` on the layers in turn.
template <class Layer, class Call>
Run cycle_layers(std::vector<Layer> layers, Call call) {
  auto ls = std::make_shared<const std::vector<Layer>>(std::move(layers));
  if (ls->size() == 1) return [ls, call] { call((*ls)[0]); };
  return [ls, call, i = std::size_t{0}]() mutable {
    call((*ls)[i]);
    i = i + 1 == ls->size() ? 0 : i + 1;
  };
}

template <class Scheme>
Run requantize_run(const qs::Kernels& k, const Case& c) {
  const qk::View<const std::int32_t> in(c.acc, dims_of(c));
  const qk::View<std::int8_t> out(c.q_out, dims_of(c));
  const qs::Kernels* kp = &k;
  return cycle_layers(requant_layers_of<Scheme>(c), [in, out, kp](const qk::RequantParams<Scheme>& p) {
    qs::requantize(in, p, out, std::string(), *kp);
  });
}

// "simd_prepared": the same layers as PreparedRequantize objects, made outside the timed loop
// (the parameters' checks and conversion done once, as TFLite's Prepare).
template <class Scheme>
Run requantize_prepared_run(const Case& c) {
  using Prepared = qs::PreparedRequantize<Scheme, std::int8_t>;
  std::vector<Prepared> prepared;
  for (const auto& p : requant_layers_of<Scheme>(c)) prepared.emplace_back(p, dims_of(c));
  const qk::View<const std::int32_t> in(c.acc, dims_of(c));
  const qk::View<std::int8_t> out(c.q_out, dims_of(c));
  return cycle_layers(std::move(prepared), [in, out](const Prepared& layer) { layer(in, out); });
}

Run simd_prepared_run(const Case& c) {
  if (c.op != Op::requantize || c.gran == Gran::per_group) return {};
  switch (c.requant) {
    case Requant::float_half_even: return requantize_prepared_run<qk::FloatMultiplier<qk::RoundHalfEven>>(c);
    case Requant::fixed_point: return requantize_prepared_run<qk::FixedPointDoubleRounding>(c);
    case Requant::fixed_point_single: return requantize_prepared_run<qk::FixedPointSingleRounding>(c);
    case Requant::pow2_half_away: return requantize_prepared_run<qk::PowerOfTwo<qk::RoundHalfAway>>(c);
    case Requant::single_shift: return requantize_prepared_run<qk::SingleShift>(c);
    case Requant::double_shift: return requantize_prepared_run<qk::DoubleShift>(c);
    default: return {};
  }
}

}  // namespace

Run simd_front_run(const qs::Kernels& k, const Case& c) {
  const qs::Kernels* kp = &k;
  const auto app = c.multiply ? qk::ScaleApplicationKind::multiply_by_reciprocal
                              : qk::ScaleApplicationKind::divide;
  const CaseParams& cp = *c.params;
  if (c.gran == Gran::per_tensor && c.op != Op::requantize) {
    const float s = cp.scale[0];
    const std::int32_t z = cp.zero_point[0];
    const std::size_t n = c.n;
    auto o = qs::QuantizeOptions{}.with_rounding(mode_of(c.round)).with_application(app);
    switch (c.op) {
      case Op::quantize:
        return [c, n, s, z, o, kp] { qs::quantize(c.x, n, s, z, o, c.q_out, *kp); };
      case Op::quantize_i16:
        o.with_range(qk::IntRange{cp.qmin, cp.qmax});
        return [c, n, s, z, o, kp] { qs::quantize(c.x, n, s, z, o, c.q16_out, *kp); };
      case Op::fake_quantize:
        o.with_range(qk::IntRange{cp.qmin, cp.qmax});
        return [c, n, s, z, o, kp] { qs::fake_quantize(c.x, n, s, z, o, c.y, *kp); };
      case Op::dequantize:
        return [c, n, s, z, kp] { qs::dequantize(c.q_in, n, s, z, c.y, *kp); };
      default: break;
    }
  }
  if (c.gran == Gran::per_channel && c.op != Op::requantize) {
    // a row-major [rows, row_len] matrix, channels on axis 0 (a channel per row) or 1 (per column)
    const std::size_t rows = c.rows, cols = c.row_len;
    const int axis = c.axis;
    const float* s = cp.scale.data();
    const std::int32_t* z = cp.zero_point.data();
    const auto o = qs::QuantizeOptions{}
                       .with_rounding(mode_of(c.round))
                       .with_application(app)
                       .with_range(qk::IntRange{cp.qmin, cp.qmax});
    switch (c.op) {
      case Op::quantize:
        return [c, rows, cols, axis, s, z, o, kp] {
          qs::quantize_per_channel(c.x, rows, cols, axis, s, z, o, c.q_out, *kp);
        };
      case Op::quantize_i16:
        return [c, rows, cols, axis, s, z, o, kp] {
          qs::quantize_per_channel(c.x, rows, cols, axis, s, z, o, c.q16_out, *kp);
        };
      case Op::fake_quantize:
        return [c, rows, cols, axis, s, z, o, kp] {
          qs::fake_quantize_per_channel(c.x, rows, cols, axis, s, z, o, c.y, *kp);
        };
      case Op::dequantize:
        return [c, rows, cols, axis, s, z, kp] {
          qs::dequantize_per_channel(c.q_in, rows, cols, axis, s, z, c.y, *kp);
        };
      default: break;
    }
  }
  switch (c.op) {
    case Op::quantize: {
      const qk::View<const float> in(c.x, dims_of(c));
      const qk::View<std::int8_t> out(c.q_out, dims_of(c));
      const qk::QuantParams p = quant_params(c);
      return qk::visit_rounding(mode_of(c.round), [&](auto rounding) -> Run {
        return [in, out, p, rounding, app, kp] { qs::quantize(in, p, out, rounding, app, *kp); };
      });
    }
    case Op::quantize_i16: {
      const qk::View<const float> in(c.x, dims_of(c));
      const qk::View<std::int16_t> out(c.q16_out, dims_of(c));
      const qk::QuantParams p = quant_params(c);
      return qk::visit_rounding(mode_of(c.round), [&](auto rounding) -> Run {
        return [in, out, p, rounding, app, kp] { qs::quantize(in, p, out, rounding, app, *kp); };
      });
    }
    case Op::fake_quantize: {
      const qk::View<const float> in(c.x, dims_of(c));
      const qk::View<float> out(c.y, dims_of(c));
      const qk::QuantParams p = quant_params(c);
      return qk::visit_rounding(mode_of(c.round), [&](auto rounding) -> Run {
        return [in, out, p, rounding, app, kp] { qs::fake_quantize(in, p, out, rounding, app, *kp); };
      });
    }
    case Op::dequantize: {
      const qk::View<const std::int8_t> in(c.q_in, dims_of(c));
      const qk::View<float> out(c.y, dims_of(c));
      const qk::QuantParams p = quant_params(c);
      return [in, out, p, kp] { qs::dequantize(in, p, out, *kp); };
    }
    case Op::requantize:
      if (c.gran == Gran::per_group) return {};
      switch (c.requant) {
        case Requant::float_half_even: return requantize_run<qk::FloatMultiplier<qk::RoundHalfEven>>(k, c);
        case Requant::fixed_point: return requantize_run<qk::FixedPointDoubleRounding>(k, c);
        case Requant::fixed_point_single: return requantize_run<qk::FixedPointSingleRounding>(k, c);
        case Requant::pow2_half_away: return requantize_run<qk::PowerOfTwo<qk::RoundHalfAway>>(k, c);
        case Requant::single_shift: return requantize_run<qk::SingleShift>(k, c);
        case Requant::double_shift: return requantize_run<qk::DoubleShift>(k, c);
        default: return {};
      }
  }
  return {};
}

void add_simd_impls(std::vector<Impl>& impls) {
  Impl best;
  best.name = "simd";
  best.make = [](const Case& c) { return simd_front_run(qs::active_kernels(), c); };
  impls.push_back(best);
  Impl prepared;
  prepared.name = "simd_prepared";
  prepared.make = simd_prepared_run;
  impls.push_back(prepared);
  for (const qs::Kernels* k : qs::available_kernels()) {
    Impl impl;
    impl.name = std::string("simd:") + k->name;
    impl.make = [k](const Case& c) { return simd_front_run(*k, c); };
    impl.sweep = false;  // one target at a time: the variant matrix only
    impls.push_back(impl);
  }
}

}  // namespace qk_bench
#else  // quantkit/simd not in this tree: plain loops, memcpy and the reference only
#include "cases.hpp"
namespace qk_bench {
void add_simd_impls(std::vector<Impl>&) {}
Run simd_front_run(const quantkit::simd::Kernels&, const Case&) { return {}; }
}  // namespace qk_bench
#endif
