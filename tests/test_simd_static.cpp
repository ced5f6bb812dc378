// SIMD kernels, static dispatch (header-only, no libhwy): no quantkit/simd/implementation.hpp
// in this program, so every call runs this translation unit's static target. Compiled for
// HWY_SCALAR (HWY_COMPILE_ONLY_SCALAR), the fallback that plain x86-64 flags give with GCC —
// with Clang that is EMU128, which test_simd_kernels covers.
//
// The default calls (no kernels argument) instantiate only the variant each call site needs
// (QuantizeTyped & co.); calls given static_kernels() go through the full table.
#define HWY_COMPILE_ONLY_SCALAR
#include <doctest/doctest.h>

#include <cstdio>

#include "test_simd_common.hpp"

TEST_CASE("simd static: no runtime dispatch, one target: the static one") {
  CHECK_FALSE(qks::dynamic_dispatch());
  const auto all = qks::available_kernels();
  REQUIRE(all.size() == 1);
  CHECK(all[0]->target == HWY_STATIC_TARGET);
  CHECK(all[0]->target == HWY_SCALAR);
  CHECK(&qks::active_kernels() == all[0]);
  CHECK(qks::kernels_for(HWY_STATIC_TARGET) == all[0]);
  CHECK(qks::kernels_for(HWY_AVX2) == nullptr);
  std::printf("[simd static] target: %s\n", all[0]->name);
  MESSAGE("static target: " << std::string(all[0]->name));
}

TEST_CASE("simd static: quantize/fake-quantize/dequantize per tensor") {
  simd_test::check_quantize_everything(nullptr);
  simd_test::check_dequantize_per_tensor<std::int8_t>(nullptr, 0.1f, -3);
  simd_test::check_dequantize_per_tensor<std::uint16_t>(nullptr, 1e-5f, 32768);
  simd_test::check_dequantize_per_tensor<std::int32_t>(nullptr, 1e-7f, 0);
  simd_test::check_dequantize_per_tensor<std::int32_t>(nullptr, 2e-9f, 1830871372);
  // and through the static target's table
  simd_test::check_quantize_all_roundings<std::int8_t>(&qks::static_kernels(), 0.25f, 5);
}

TEST_CASE("simd static: per-channel/per-group views, stochastic, packed") {
  simd_test::check_views_everything(nullptr);
  simd_test::check_stochastic_everything(nullptr);
  simd_test::check_packed_everything(nullptr);
}

TEST_CASE("simd static: requantize every scheme") {
  simd_test::check_requantize_all<std::int8_t>(nullptr);
  simd_test::check_requantize_all<std::uint8_t>(nullptr);
  simd_test::check_requantize_all<std::int16_t>(&qks::static_kernels());
}

TEST_CASE("simd static: reductions") {
  simd_test::check_minmax(nullptr);
  simd_test::check_minmax_per_param(nullptr);
  simd_test::check_histogram(nullptr);
  simd_test::check_lookup_bytes(nullptr);
  simd_test::check_max_pairs(nullptr);
  simd_test::check_depthwise_rows(nullptr);
  simd_test::check_depthwise_rows_f32(nullptr);
  simd_test::check_histogram_blocked(nullptr);
  simd_test::check_minmax_blocked(nullptr);
  simd_test::check_grid_histogram(nullptr);
}

TEST_CASE("simd static: Quantizer uses the kernels") {
  using W8 = qk::Scheme<qk::Int<8>, qk::PerChannel<-1>, qk::Symmetric, qk::RoundHalfUp>;
  const qk::Dims shape{9, 50};
  const std::vector<float> w = simd_test::reduction_inputs(450, 3, false, false);
  const qk::View<const float> wv(w.data(), shape, "w");
  qk::Quantizer<W8> qz("w");
  qz.observe(wv);
  std::vector<std::int8_t> want(450), got(450);
  qk::ref::quantize(wv, qz.params(), qk::View<std::int8_t>(want.data(), shape), qk::RoundHalfUp{});
  qz.quantize(wv, qk::View<std::int8_t>(got.data(), shape));
  QK_CHECK_SAME(got, want, w);
}
