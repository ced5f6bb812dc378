// float GEMM kernels (quantkit/simd/gemm_f32.hpp), dynamic dispatch: every compiled Highway
// target the CPU supports must equal quantkit::ref::gemm_f32 bit for bit (products and sums
// each rounded, k in order): sizes 0, 1, tile and panel edges +-1, K past the packing blocks,
// both transposes, padded leading dimensions, unaligned pointers, infinities, NaN, signed
// zeros; C outside the product untouched; bad arguments named in the error.
#include <quantkit/simd/simd.hpp>  // implementation: tests/support/simd_dispatch.cpp

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <quantkit/error.hpp>
#include <quantkit/ref/gemm_f32.hpp>
#include <quantkit/simd/gemm_f32.hpp>

#include "support/sanitized.hpp"

namespace qks = quantkit::simd;

namespace {

struct Case {
  std::size_t M, N, K;
  bool ta, tb;
  std::size_t pad;     // extra elements in every leading dimension
  std::size_t offset;  // misalignment of every pointer (elements)
};

std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

// Same bits, or both NaN (payloads are the hardware's).
bool same(float a, float b) { return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b)); }

// Values with a spread of exponents, so products and sums round (and a fused multiply-add
// would differ); `special` mixes in infinities, NaN and signed zeros.
std::vector<float> values(std::size_t n, std::mt19937& rng, bool special) {
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-6, 6);
  std::uniform_int_distribution<int> pick(0, 99);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = std::ldexp(mant(rng), ex(rng));
    if (special) {
      const int p = pick(rng);
      if (p == 0) x = std::numeric_limits<float>::infinity();
      if (p == 1) x = -std::numeric_limits<float>::infinity();
      if (p == 2) x = std::numeric_limits<float>::quiet_NaN();
      if (p == 3) x = -0.0f;
      if (p == 4) x = 0.0f;
    }
  }
  return v;
}

// Runs one case on one target; returns the number of elements that differ from the reference
// (reporting the first), C's padding included (it must keep its sentinel).
// prepacked: B packed first (gemm_f32_pack_b) and multiplied with gemm_f32_prepacked.
std::size_t run_case(const qks::Kernels& k, const Case& cs, std::mt19937& rng, bool special, bool prepacked = false) {
  const std::size_t lda = (cs.ta ? cs.M : cs.K) + cs.pad;
  const std::size_t ldb = (cs.tb ? cs.K : cs.N) + cs.pad;
  const std::size_t ldc = cs.N + cs.pad;
  const std::size_t a_rows = cs.ta ? cs.K : cs.M, b_rows = cs.tb ? cs.N : cs.K;
  const auto abuf = values(a_rows * lda + cs.offset + 1, rng, special);
  const auto bbuf = values(b_rows * ldb + cs.offset + 1, rng, special);
  const float sentinel = -12345.0f;
  std::vector<float> cbuf(cs.M * ldc + cs.offset + 1, sentinel), rbuf = cbuf;
  const float* a = abuf.data() + cs.offset;
  const float* b = bbuf.data() + cs.offset;
  if (prepacked) {
    const std::size_t nr = qks::gemm_f32_panel_width(&k);
    std::vector<float> pb(qks::gemm_f32_packed_size(cs.K, cs.N, &k) + cs.offset, sentinel);
    qks::gemm_f32_pack_b(cs.K, cs.N, b, ldb, cs.tb, pb.data() + cs.offset, &k);
    qks::gemm_f32_prepacked(cs.M, cs.N, cs.K, a, lda, cs.ta, pb.data() + cs.offset, nr, cbuf.data() + cs.offset, ldc,
                            &k);
  } else {
    qks::gemm_f32(cs.M, cs.N, cs.K, a, lda, cs.ta, b, ldb, cs.tb, cbuf.data() + cs.offset, ldc, &k);
  }
  quantkit::ref::gemm_f32(cs.M, cs.N, cs.K, a, cs.ta ? 1 : static_cast<std::ptrdiff_t>(lda),
                          cs.ta ? static_cast<std::ptrdiff_t>(lda) : 1, b, cs.tb ? 1 : static_cast<std::ptrdiff_t>(ldb),
                          cs.tb ? static_cast<std::ptrdiff_t>(ldb) : 1, rbuf.data() + cs.offset, ldc);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < cbuf.size(); ++i) {
    if (same(cbuf[i], rbuf[i])) continue;
    if (bad++ == 0) {
      const std::size_t e = i < cs.offset ? 0 : i - cs.offset;
      std::printf("[gemm_f32%s] %s: %zu x %zu x %zu ta=%d tb=%d pad=%zu offset=%zu: C[%zu][%zu] = %a, reference %a\n",
                  prepacked ? " prepacked" : "", k.name, cs.M, cs.N, cs.K, cs.ta, cs.tb, cs.pad, cs.offset, e / ldc, e % ldc,
                  static_cast<double>(cbuf[i]), static_cast<double>(rbuf[i]));
    }
  }
  return bad;
}

template <class F>
void for_each_target(F&& f) {
  const std::vector<const qks::Kernels*> all = qks::available_kernels();
  REQUIRE(!all.empty());
  std::string names;
  for (const qks::Kernels* k : all) {
    REQUIRE(static_cast<bool>(k->gemm_f32));
    // Under the sanitizers (-O0: two of that stage's minutes for six targets) not SSSE3, whose
    // kernel is SSE4's (same 128-bit loads, stores and arithmetic), nor AVX3_DL, AVX3's kernel
    // (gemm_f32-inl.h). The optimized builds test both bit for bit.
    if (QK_TEST_SANITIZED && (k->target == HWY_SSSE3 || k->target == HWY_AVX3_DL)) continue;
    names += names.empty() ? "" : " ";
    names += k->name;
    const char* name = k->name;
    CAPTURE(name);
    f(*k);
  }
  std::printf("[gemm_f32] targets: %s\n", names.c_str());
  std::fflush(stdout);
}

std::vector<Case> cases() {
  std::vector<Case> v;
  // Around every target's tile (rows 4/6/8, columns 2 x 4/8/16 lanes) and panel edges.
  const std::size_t ms[] = {1, 5, 6, 7, 8, 9, 13, 17};
  const std::size_t ns[] = {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65};
  const std::size_t ks[] = {1, 2, 31, 100};
  std::size_t t = 0;
  for (std::size_t m : ms)
    for (std::size_t n : ns)
      for (std::size_t kk : ks) {
        ++t;
        v.push_back(Case{m, n, kk, (t & 1) != 0, (t & 2) != 0, (t % 3) * 3, (t % 5 == 0) ? std::size_t{1} : std::size_t{0}});
      }
  return v;
}

}  // namespace

TEST_CASE("gemm_f32: every target has the kernel; SCALAR is among them") {
  bool scalar = false;
  for_each_target([&](const qks::Kernels& k) { scalar |= k.target == HWY_SCALAR || k.target == HWY_EMU128; });
  CHECK(scalar);
}

TEST_CASE("gemm_f32: equals the reference bit for bit on every target (tile edges, transposes, strides)") {
  for_each_target([](const qks::Kernels& k) {
    std::mt19937 rng(7);
    std::size_t bad = 0, n = 0;
    for (const Case& cs : cases()) {
      bad += run_case(k, cs, rng, false);
      ++n;
    }
    CHECK(n == 8 * 11 * 4);
    CHECK(bad == 0);
  });
}

TEST_CASE("gemm_f32: infinities, NaN and signed zeros as the reference") {
  for_each_target([](const qks::Kernels& k) {
    std::mt19937 rng(11);
    std::size_t bad = 0;
    for (const Case& cs : {Case{9, 33, 7, false, false, 0, 0}, Case{16, 64, 40, true, false, 2, 1},
                           Case{3, 5, 200, false, true, 1, 0}})
      bad += run_case(k, cs, rng, true);
    CHECK(bad == 0);
  });
  // The sum starts at +0: products that are all -0 give +0 (as the reference; -0 + -0 would be -0).
  const float a[2] = {-0.0f, 1.0f}, b[2] = {1.0f, -0.0f};
  for_each_target([&](const qks::Kernels& k) {
    float c = 1.0f;
    qks::gemm_f32(1, 1, 2, a, 2, false, b, 1, false, &c, 1, &k);
    CHECK(bits(c) == 0u);
  });
}

TEST_CASE("gemm_f32: large K and M cross the packing blocks; K = 0 gives zeros") {
  for_each_target([](const qks::Kernels& k) {
    std::mt19937 rng(3);
    std::size_t bad = 0;
    // K = 2100: B blocks of 62 columns or fewer (512 KB); M = 530 past the A block (4 MB: 496-498 rows).
    bad += run_case(k, Case{530, 70, 2100, false, false, 0, 0}, rng, false);
    bad += run_case(k, Case{21, 129, 2100, true, true, 1, 1}, rng, false);
    CHECK(bad == 0);
    std::vector<float> c(3 * 5, 7.0f);
    qks::gemm_f32(3, 4, 0, nullptr, 0, false, nullptr, 0, false, c.data(), 5, &k);
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 5; ++j) CHECK(c[i * 5 + j] == (j < 4 ? 0.0f : 7.0f));
  });
}

TEST_CASE("gemm_f32: products of one tile of rows (B read in place, or packed in chunks of k) equal the reference") {
  // M <= the tile's rows (4/6/8) with B as is or transposed take their own path: K across the
  // chunks of k (128 values on AVX-512, 256 on AVX2, 512 on SSE4 and the 4-lane targets), N
  // around the panel width, a partial last panel, padded and misaligned buffers.
  for_each_target([](const qks::Kernels& k) {
    std::mt19937 rng(5);
    const std::size_t ms[] = {1, 2, 4, 5, 6, 8};
    const std::size_t ns[] = {1, 15, 31, 32, 33, 64, 100};
    const std::size_t ks[] = {1, 3, 127, 128, 129, 255, 257, 511, 513, 1030};
    std::size_t bad = 0, n = 0, t = 0;
    for (std::size_t m : ms)
      for (std::size_t nn : ns)
        for (std::size_t kk : ks)
          for (bool tb : {false, true}) {
            ++t;
            bad += run_case(k, Case{m, nn, kk, (t & 1) != 0, tb, (t % 3) * 2, (t % 4 == 0) ? std::size_t{1} : std::size_t{0}},
                            rng, false);
            ++n;
          }
    CHECK(n == 6 * 7 * 10 * 2);
    CHECK(bad == 0);
    // infinities, NaN and signed zeros through the chunks
    bad = run_case(k, Case{3, 40, 300, false, true, 1, 1}, rng, true) + run_case(k, Case{2, 70, 300, true, false, 0, 0}, rng, true);
    CHECK(bad == 0);
  });
}

TEST_CASE("gemm_f32: products and sums are rounded separately (no fused multiply-add)") {
  // With a fused multiply-add some sums differ; the kernel must give the separately rounded
  // ones on every target, FMA hardware or not.
  std::mt19937 rng(5);
  const std::size_t M = 8, N = 32, K = 64;
  const auto a = values(M * K, rng, false);
  const auto b = values(K * N, rng, false);
  std::size_t differ_from_fma = 0;
  std::vector<float> fused(M * N);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      float s = 0.0f;
      for (std::size_t kk = 0; kk < K; ++kk) s = std::fma(a[i * K + kk], b[kk * N + j], s);
      fused[i * N + j] = s;
    }
  std::vector<float> ref(M * N);
  quantkit::ref::gemm_f32(M, N, K, a.data(), K, 1, b.data(), N, 1, ref.data(), N);
  for (std::size_t i = 0; i < M * N; ++i) differ_from_fma += bits(ref[i]) != bits(fused[i]);
  CHECK(differ_from_fma > 0);
  for_each_target([&](const qks::Kernels& k) {
    std::vector<float> c(M * N);
    qks::gemm_f32(M, N, K, a.data(), K, false, b.data(), N, false, c.data(), N, &k);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < M * N; ++i) bad += bits(c[i]) != bits(ref[i]);
    CHECK(bad == 0);
  });
}

TEST_CASE("gemm_f32_prepacked: B packed once gives the reference's products on every target") {
  std::mt19937 rng(29);
  for_each_target([&](const qks::Kernels& k) {
    REQUIRE(static_cast<bool>(k.gemm_f32_pack_b));
    std::size_t bad = 0;
    for (const Case& cs : cases()) bad += run_case(k, cs, rng, false, true);
    // one tile of rows or fewer (the path that streams an unpacked B), panel and block edges,
    // K past the packing blocks, special values
    for (std::size_t m : {1, 2, 4, 8})
      for (std::size_t n : {1, 31, 33, 100})
        for (std::size_t kk : {1, 9, 257}) bad += run_case(k, Case{m, n, kk, m == 2, n == 33, m % 3, n & 1}, rng, false, true);
    bad += run_case(k, Case{530, 70, 2100, false, false, 0, 0}, rng, false, true);
    bad += run_case(k, Case{21, 129, 2100, true, true, 1, 1}, rng, false, true);
    bad += run_case(k, Case{9, 33, 7, false, true, 0, 0}, rng, true, true);
    CHECK(bad == 0);
  });
}

TEST_CASE("gemm_f32_pack_b: panels of the kernels' width, k-major, zeros past N") {
  for_each_target([&](const qks::Kernels& k) {
    const std::size_t nr = qks::gemm_f32_panel_width(&k);
    CHECK((nr == 8 || nr == 16 || nr == 32));
    for (const bool tb : {false, true}) {
      const std::size_t K = 11, N = 2 * nr + 3, ldb = (tb ? K : N) + 2;
      std::vector<float> b((tb ? N : K) * ldb);
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) + 0.5f;
      const std::size_t size = qks::gemm_f32_packed_size(K, N, &k);
      CHECK(size == 3 * nr * K);
      std::vector<float> pb(size, -1.0f);
      qks::gemm_f32_pack_b(K, N, b.data(), ldb, tb, pb.data(), &k);
      std::size_t bad = 0;
      for (std::size_t p = 0; p < 3; ++p)
        for (std::size_t kk = 0; kk < K; ++kk)
          for (std::size_t c = 0; c < nr; ++c) {
            const std::size_t j = p * nr + c;
            const float want = j >= N ? 0.0f : tb ? b[j * ldb + kk] : b[kk * ldb + j];
            bad += bits(pb[(p * K + kk) * nr + c]) != bits(want);
          }
      CHECK(bad == 0);
    }
  });
}

TEST_CASE("gemm_f32_prepacked: a B packed for another panel width, and bad arguments, are named") {
  const qks::Kernels& k = qks::active_kernels();
  const std::size_t nr = qks::gemm_f32_panel_width(&k);
  std::vector<float> a(12), b(12), c(12), pb(qks::gemm_f32_packed_size(2, 4, &k));
  CHECK_THROWS_WITH_AS(qks::gemm_f32_prepacked(3, 4, 2, a.data(), 2, false, pb.data(), nr / 2, c.data(), 4, &k),
                       ("quantkit: simd::gemm_f32_prepacked: B was packed in panels of " + std::to_string(nr / 2) +
                        " columns; the kernels of target " + k.name + " read panels of " + std::to_string(nr) +
                        " (pack B with these kernels)")
                           .c_str(),
                       quantkit::Error);
  CHECK_THROWS_WITH_AS(qks::gemm_f32_prepacked(3, 4, 2, a.data(), 2, false, nullptr, nr, c.data(), 4, &k),
                       "quantkit: simd::gemm_f32_prepacked: packed B is null with K = 2", quantkit::Error);
  CHECK_THROWS_WITH_AS(qks::gemm_f32_prepacked(3, 4, 2, a.data(), 1, false, pb.data(), nr, c.data(), 4, &k),
                       "quantkit: simd::gemm_f32_prepacked: lda 1 is less than the 2 values of a row of A",
                       quantkit::Error);
  CHECK_THROWS_WITH_AS(qks::gemm_f32_prepacked(3, 4, 2, a.data(), 2, false, pb.data(), nr, c.data(), 3, &k),
                       "quantkit: simd::gemm_f32_prepacked: ldc 3 is less than N = 4", quantkit::Error);
  CHECK_THROWS_WITH_AS(qks::gemm_f32_pack_b(2, 4, b.data(), 3, false, pb.data(), &k),
                       "quantkit: simd::gemm_f32_pack_b: ldb 3 is less than the 4 values of a row of B", quantkit::Error);
  CHECK_THROWS_WITH_AS(qks::gemm_f32_pack_b(2, 4, nullptr, 4, false, pb.data(), &k),
                       "quantkit: simd::gemm_f32_pack_b: B is null for a 2 x 4 B", quantkit::Error);
  // A packed B is the same for every target of one width (SSE4 and SCALAR: 8 columns).
  const std::vector<const qks::Kernels*> all = qks::available_kernels();
  for (const qks::Kernels* x : all)
    for (const qks::Kernels* y : all) {
      if (qks::gemm_f32_panel_width(x) != qks::gemm_f32_panel_width(y)) continue;
      std::vector<float> bb(7 * 19), px(qks::gemm_f32_packed_size(7, 19, x)), py(px.size());
      for (std::size_t i = 0; i < bb.size(); ++i) bb[i] = static_cast<float>(i);
      qks::gemm_f32_pack_b(7, 19, bb.data(), 19, false, px.data(), x);
      qks::gemm_f32_pack_b(7, 19, bb.data(), 19, false, py.data(), y);
      CHECK(px == py);
    }
}

TEST_CASE("gemm_f32: bad arguments are named") {
  std::vector<float> a(12), b(12), c(12);
  CHECK_THROWS_WITH_AS(qks::gemm_f32(3, 4, 2, a.data(), 2, false, b.data(), 4, false, c.data(), 3),
                       "quantkit: simd::gemm_f32: ldc 3 is less than N = 4", quantkit::Error);
  CHECK_THROWS_WITH_AS(qks::gemm_f32(3, 4, 2, a.data(), 1, false, b.data(), 4, false, c.data(), 4),
                       "quantkit: simd::gemm_f32: lda 1 is less than the 2 values of a row of A", quantkit::Error);
  CHECK_THROWS_WITH_AS(qks::gemm_f32(3, 4, 2, a.data(), 2, true, b.data(), 4, false, c.data(), 4),
                       "quantkit: simd::gemm_f32: lda 2 is less than the 3 values of a row of A (transposed)",
                       quantkit::Error);
  CHECK_THROWS_WITH_AS(qks::gemm_f32(3, 4, 2, a.data(), 2, false, b.data(), 1, true, c.data(), 4),
                       "quantkit: simd::gemm_f32: ldb 1 is less than the 2 values of a row of B (transposed)",
                       quantkit::Error);
  CHECK_THROWS_WITH_AS(qks::gemm_f32(3, 4, 2, nullptr, 2, false, b.data(), 4, false, c.data(), 4),
                       "quantkit: simd::gemm_f32: A is null with K = 2", quantkit::Error);
  CHECK_THROWS_WITH_AS(qks::gemm_f32(3, 4, 2, a.data(), 2, false, b.data(), 4, false, nullptr, 4),
                       "quantkit: simd::gemm_f32: C is null for a 3 x 4 product", quantkit::Error);
  // Nothing to compute: no checks, nothing written.
  CHECK_NOTHROW(qks::gemm_f32(0, 4, 2, nullptr, 0, false, nullptr, 0, false, nullptr, 0));
}
