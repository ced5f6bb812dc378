// int8 GEMM kernels (quantkit/simd/gemm.hpp), dynamic dispatch: every compiled Highway target
// the CPU supports (AVX3_DL with AVX-512 VNNI included) must equal quantkit::ref::gemm_s32 bit
// for bit: u8 x s8, s8 x s8, s8 x u8, u8 x u8; zero points per tensor / row / column;
// sizes 0, 1, one vector +-1, large; unaligned pointers and leading dimensions; int32
// wrap-around.
#include <quantkit/simd/simd.hpp>  // implementation: tests/support/simd_dispatch.cpp

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <hwy/targets.h>

#include <quantkit/ref/gemm.hpp>
#include <quantkit/simd/gemm.hpp>

#include "support/sanitized.hpp"

namespace qks = quantkit::simd;

namespace {

template <class T>
std::vector<T> random_bytes(std::size_t n, std::mt19937& rng, bool extremes = false) {
  std::uniform_int_distribution<int> dist(std::is_signed<T>::value ? -128 : 0, std::is_signed<T>::value ? 127 : 255);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(extremes ? (dist(rng) & 1 ? (std::is_signed<T>::value ? -128 : 255)
                                                               : (std::is_signed<T>::value ? 127 : 0))
                                                 : dist(rng));
  return v;
}

struct Case {
  std::size_t M, N, K;
  std::size_t pad_a, pad_b, pad_c;  // extra leading-dimension elements
  std::size_t offset;               // misalignment of every pointer (elements)
};

// Runs one case for one target and compares with the reference; returns the number of
// differing elements (and reports the first).
template <class TA, class TB>
std::size_t run_case(const qks::Kernels& k, const Case& cs, std::mt19937& rng, bool extremes, int zp_mode) {
  const std::size_t lda = cs.K + cs.pad_a, ldb = cs.N + cs.pad_b, ldc = cs.N + cs.pad_c;
  auto abuf = random_bytes<TA>(cs.M * lda + cs.offset + 1, rng, extremes);
  auto bbuf = random_bytes<TB>(cs.K * ldb + cs.offset + 1, rng, extremes);
  const TA* a = abuf.data() + cs.offset;
  const TB* b = bbuf.data() + cs.offset;
  std::vector<std::int32_t> za, zb;
  qks::GemmZeroPoints zp;
  std::uniform_int_distribution<int> zd(-128, 255);
  if (zp_mode == 1) {  // per tensor
    za = {zd(rng)};
    zb = {zd(rng)};
  } else if (zp_mode == 2) {  // per row / per column
    for (std::size_t m = 0; m < cs.M; ++m) za.push_back(zd(rng));
    for (std::size_t n = 0; n < cs.N; ++n) zb.push_back(zd(rng));
  }
  if (zp_mode != 0) {
    zp.a = za.empty() ? nullptr : za.data();
    zp.a_count = za.size() == 0 ? 1 : za.size();
    zp.b = zb.empty() ? nullptr : zb.data();
    zp.b_count = zb.size() == 0 ? 1 : zb.size();
    if (cs.M == 0) zp.a = nullptr;
    if (cs.N == 0) zp.b = nullptr;
  }
  std::vector<std::int32_t> want(cs.M * ldc + cs.offset + 1, 0x5A5A5A5A), got = want;
  quantkit::ref::gemm_s32(cs.M, cs.N, cs.K, a, lda, b, ldb, want.data() + cs.offset, ldc, zp.a, zp.a_count, zp.b,
                          zp.b_count);
  qks::gemm_s32(cs.M, cs.N, cs.K, a, lda, b, ldb, got.data() + cs.offset, ldc, zp, &k);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i]) {
      if (bad == 0) {
        const std::size_t e = i - cs.offset;
        const std::size_t row = e / ldc, col = e % ldc;
        const std::string where = std::string(k.name) + " M" + std::to_string(cs.M) + " N" + std::to_string(cs.N) +
                                  " K" + std::to_string(cs.K) + " at [" + std::to_string(row) + "," +
                                  std::to_string(col) + "] got " + std::to_string(got[i]) + " want " +
                                  std::to_string(want[i]);
        FAIL_CHECK(where);
      }
      ++bad;
    }
  return bad;
}

template <class F>
void for_each_target(const char* what, F&& f) {
  const std::vector<const qks::Kernels*> all = qks::available_kernels();
  REQUIRE(!all.empty());
  std::string names;
  for (const qks::Kernels* k : all) {
    REQUIRE(k->gemm != nullptr);
    // Under the sanitizers (-O0) not SSSE3: its micro-kernel is SSE4's source (the widening
    // path), with the same 128-bit loads and stores; the optimized builds test it bit for bit.
    // AVX3_DL stays: its VNNI micro-kernel is its own.
    if (QK_TEST_SANITIZED && k->target == HWY_SSSE3) continue;
    names += names.empty() ? "" : " ";
    names += k->name;
    names += k->gemm->dot_product ? "(vnni)" : "";
    const char* name = k->name;
    CAPTURE(name);
    f(*k);
  }
  std::printf("[gemm] %-36s targets: %s\n", what, names.c_str());
  std::fflush(stdout);
}

std::vector<Case> sizes() {
  std::vector<Case> v;
  // Degenerate and tiny.
  for (std::size_t M : {0, 1, 2})
    for (std::size_t N : {0, 1, 3})
      for (std::size_t K : {0, 1, 3, 4, 5}) v.push_back({M, N, K, 0, 0, 0, 0});
  // Around every panel width (4, 8, 16, 32) and row block (1, 4, 8), +-1.
  for (std::size_t N : {7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65})
    for (std::size_t M : {3, 4, 5, 7, 8, 9, 17}) v.push_back({M, N, 13, 0, 0, 0, 0});
  for (std::size_t K : {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 63, 64, 65, 255, 256, 257})
    v.push_back({9, 33, K, 0, 0, 0, 0});
  // Unaligned pointers, padded leading dimensions.
  v.push_back({11, 37, 29, 3, 5, 7, 1});
  v.push_back({16, 32, 64, 1, 1, 1, 3});
  // Large: several row blocks and panels, K across the 1024-deep K block.
  v.push_back({67, 129, 1031, 0, 0, 0, 0});
  v.push_back({40, 96, 300, 0, 0, 0, 0});
  return v;
}

template <class TA, class TB>
void check_all(const char* what) {
  for_each_target(what, [&](const qks::Kernels& k) {
    std::mt19937 rng(1234);
    std::size_t bad = 0;
    for (const Case& cs : sizes())
      for (int zp_mode : {0, 1, 2}) bad += run_case<TA, TB>(k, cs, rng, false, zp_mode);
    // Extremes (-128/127, 0/255 only): the largest products and partial sums.
    for (const Case& cs : {Case{9, 33, 1000, 0, 0, 0, 0}, Case{8, 32, 4096, 0, 0, 0, 0}})
      bad += run_case<TA, TB>(k, cs, rng, true, 0);
    CHECK(bad == 0);
  });
}

}  // namespace

TEST_CASE("gemm: every target has int8 GEMM kernels, AVX3_DL uses VNNI") {
  const auto all = qks::available_kernels();
  REQUIRE(!all.empty());
  std::string list;
  for (const qks::Kernels* k : all) {
    REQUIRE(k->gemm != nullptr);
    CHECK(k->gemm->target == k->target);
    CHECK(k->gemm->panel >= 1);
    list += std::string(" ") + k->name + "(panel " + std::to_string(k->gemm->panel) +
            (k->gemm->dot_product ? ", vnni" : "") + ")";
    if (k->target == HWY_AVX3_DL) CHECK(k->gemm->dot_product);
    else CHECK(!k->gemm->dot_product);
  }
  std::printf("[gemm] targets:%s\n", list.c_str());
#if HWY_ARCH_X86
  const std::int64_t cpu = hwy::SupportedTargets();
  if (cpu & HWY_AVX3_DL) CHECK(qks::kernels_for(HWY_AVX3_DL) != nullptr);
#endif
}

TEST_CASE("gemm: u8 x s8 equals the reference on every target") { check_all<std::uint8_t, std::int8_t>("u8 x s8"); }
TEST_CASE("gemm: s8 x s8 equals the reference on every target") { check_all<std::int8_t, std::int8_t>("s8 x s8"); }
TEST_CASE("gemm: s8 x u8 equals the reference on every target") { check_all<std::int8_t, std::uint8_t>("s8 x u8"); }
TEST_CASE("gemm: u8 x u8 equals the reference on every target") { check_all<std::uint8_t, std::uint8_t>("u8 x u8"); }

TEST_CASE("gemm: int32 wrap-around is the reference's (modulo 2^32)") {
  // 40000 products of -128 * -128 = 655,360,000 > 2^31 - 1: wraps identically.
  const std::size_t K = 40000;
  std::vector<std::int8_t> a(K, -128), b(K * 3, -128);
  for_each_target("wrap-around", [&](const qks::Kernels& k) {
    std::int32_t want[3], got[3];
    quantkit::ref::gemm_s32(1, 3, K, a.data(), K, b.data(), 3, want, 3);
    qks::gemm_s32(1, 3, K, a.data(), K, b.data(), 3, got, 3, {}, &k);
    for (int i = 0; i < 3; ++i) CHECK(got[i] == want[i]);
  });
}

TEST_CASE("gemm: a packed B is reused and checked") {
  std::mt19937 rng(7);
  const std::size_t M = 5, N = 19, K = 23;
  auto a = random_bytes<std::uint8_t>(M * K, rng);
  auto b = random_bytes<std::int8_t>(K * N, rng);
  for_each_target("packed reuse", [&](const qks::Kernels& k) {
    const qks::PackedB pb = qks::pack_b(b.data(), K, N, N, /*a_signed=*/false, &k);
    CHECK(pb.k() == K);
    CHECK(pb.n() == N);
    std::vector<std::int32_t> want(M * N), got(M * N);
    quantkit::ref::gemm_s32(M, N, K, a.data(), K, b.data(), N, want.data(), N);
    for (int rep = 0; rep < 2; ++rep) {
      qks::gemm_s32(M, a.data(), K, pb, got.data(), N);
      CHECK(got == want);
    }
    std::vector<std::int8_t> as(M * K, 1);
    CHECK_THROWS_AS(qks::gemm_s32(M, as.data(), K, pb, got.data(), N), quantkit::Error);
  });
}

// ---- Pair sums (ONNX Runtime's uint8 x int8 kernels on x86-64 without VNNI) ----

namespace {

struct PairCase {
  std::size_t M, N, K;   // K: the real reduction length (odd allowed)
  std::size_t pad;       // extra leading-dimension elements of A, Bt and C
  std::size_t offset;    // misalignment of every pointer (elements)
  bool extremes;         // 0/255 and -128/127 only: most pairs leave int16
};

// Runs one case (with and without statistics) on one target against the reference; returns
// the number of differences.
std::size_t run_pair_case(const qks::Kernels& k, const PairCase& cs, std::mt19937& rng,
                          std::int64_t* clamped_out = nullptr) {
  const qks::GemmKernels& g = *k.gemm;
  const std::size_t step = g.pair_step;
  const std::size_t kp = (cs.K + step - 1) / step * step;  // the kernel's K: zero padded
  const std::size_t lda = kp + cs.pad, ldb = kp + cs.pad, ldc = cs.N + cs.pad;
  std::vector<std::uint8_t> abuf(cs.M * lda + cs.offset + 1, 0);
  std::vector<std::int8_t> bbuf(cs.N * ldb + cs.offset + 1, 0);
  std::uint8_t* a = abuf.data() + cs.offset;
  std::int8_t* bt = bbuf.data() + cs.offset;
  std::uniform_int_distribution<int> ua(0, 255), sb(-128, 127), coin(0, 1);
  for (std::size_t m = 0; m < cs.M; ++m)
    for (std::size_t i = 0; i < cs.K; ++i)
      a[m * lda + i] = static_cast<std::uint8_t>(cs.extremes ? (coin(rng) ? 255 : 0) : ua(rng));
  for (std::size_t n = 0; n < cs.N; ++n)
    for (std::size_t i = 0; i < cs.K; ++i)
      bt[n * ldb + i] = static_cast<std::int8_t>(cs.extremes ? (coin(rng) ? 127 : -128) : sb(rng));
  const std::int32_t fill = 0x5A5A5A5A;
  std::vector<std::int32_t> want_sat(cs.M * ldc + cs.offset + 1, fill), want_ex = want_sat, got_sat = want_sat,
                                                                          got_ex = want_sat, got_sat2 = want_sat;
  std::int64_t want_clamped = 0;
  std::int32_t want_max = 0, want_min = 0;
  quantkit::ref::pair_sums_s16sat(cs.M, cs.N, cs.K, a, lda, bt, ldb, want_sat.data() + cs.offset,
                                  want_ex.data() + cs.offset, ldc, want_clamped, want_max, want_min);
  qks::PairSumArgs args;
  args.m = cs.M;
  args.n = cs.N;
  args.k = kp;
  args.a = a;
  args.lda = lda;
  args.bt = bt;
  args.ldb = ldb;
  args.saturated = got_sat.data() + cs.offset;
  args.exact = got_ex.data() + cs.offset;
  args.ldc = ldc;
  qks::PairSumCounts counts;
  g.pair_sums(args, counts);
  std::size_t bad = 0;
  const std::string where = std::string(k.name) + " M" + std::to_string(cs.M) + " N" + std::to_string(cs.N) + " K" +
                            std::to_string(cs.K);
  CAPTURE(where);
  for (std::size_t i = 0; i < want_sat.size(); ++i) {
    bad += got_sat[i] != want_sat[i];
    bad += got_ex[i] != want_ex[i];
  }
  CHECK(counts.saturated_pairs == want_clamped);
  CHECK(counts.max_pair == want_max);
  CHECK(counts.min_pair == want_min);
  bad += counts.saturated_pairs != want_clamped || counts.max_pair != want_max || counts.min_pair != want_min;
  // Without statistics: the same saturated sums, nothing else touched.
  args.saturated = got_sat2.data() + cs.offset;
  args.exact = nullptr;
  qks::PairSumCounts untouched;
  untouched.saturated_pairs = -7;
  g.pair_sums(args, untouched);
  for (std::size_t i = 0; i < want_sat.size(); ++i) bad += got_sat2[i] != want_sat[i];
  CHECK(untouched.saturated_pairs == -7);
  CHECK(untouched.max_pair == 0);
  if (bad) FAIL_CHECK(where << ": " << bad << " differences");
  if (clamped_out) *clamped_out += want_clamped;
  return bad;
}

}  // namespace

TEST_CASE("pair sums: ONNX Runtime's int16 pairs equal ref::pair_sums_s16sat on every target") {
  for_each_target("pair sums", [&](const qks::Kernels& k) {
    REQUIRE(static_cast<bool>(k.gemm->pair_sums));
    const std::size_t step = k.gemm->pair_step;
    REQUIRE(step >= 2);
    REQUIRE(step % 2 == 0);
    std::mt19937 rng(2024);
    std::vector<PairCase> cases;
    for (std::size_t M : {0, 1, 3, 4, 5, 9})
      for (std::size_t N : {0, 1, 7})
        for (std::size_t K : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, step - 1, step,
                              step + 1, 2 * step + 3})
          cases.push_back({M, N, K, 0, 0, false});
    cases.push_back({13, 5, 301, 3, 1, false});
    cases.push_back({8, 16, 576, 0, 0, false});
    cases.push_back({6, 3, 1031, 1, 3, true});
    cases.push_back({4, 2, 4096, 0, 0, true});
    std::size_t bad = 0;
    std::int64_t clamped = 0;
    for (const PairCase& cs : cases) bad += run_pair_case(k, cs, rng, &clamped);
    CHECK(bad == 0);
    CHECK(clamped > 1000);  // the extreme cases saturate: the clamp is exercised
  });
}

TEST_CASE("pair sums: the pairs are adjacent elements, each clamped on its own") {
  // Two pairs: (255 * 127 + 255 * 127) = 64770 -> 32767 and (255 * -128 + 0) = -32640 (kept):
  // a pairing of elements 1 and 2 instead would give 255 * 127 - 255 * 128 = -255 (no clamp).
  for_each_target("pair layout", [&](const qks::Kernels& k) {
    const std::size_t kp = (4 + k.gemm->pair_step - 1) / k.gemm->pair_step * k.gemm->pair_step;
    std::vector<std::uint8_t> a(kp, 0);
    std::vector<std::int8_t> b(kp, 0);
    a[0] = a[1] = a[2] = 255;
    b[0] = b[1] = 127;
    b[2] = -128;
    std::int32_t sat = 0, ex = 0;
    qks::PairSumArgs args;
    args.m = args.n = 1;
    args.k = kp;
    args.a = a.data();
    args.bt = b.data();
    args.lda = args.ldb = kp;
    args.saturated = &sat;
    args.exact = &ex;
    args.ldc = 1;
    qks::PairSumCounts counts;
    k.gemm->pair_sums(args, counts);
    CHECK(sat == 32767 - 32640);
    CHECK(ex == 64770 - 32640);
    CHECK(counts.saturated_pairs == 1);
    CHECK(counts.max_pair == 64770);
    CHECK(counts.min_pair == -32640);
  });
}
