// quantkit::simd int8 GEMM: int32 accumulators of int8/uint8 matrix products, bit-identical to
// quantkit::ref::gemm_s32 on every Highway target (AVX-512 VNNI on AVX3_DL, widening
// multiply-add elsewhere).
//
//   C[m][n] = sum_k (A[m][k] - za[m]) * (B[k][n] - zb[n])        (int32, modulo 2^32)
//
//   // one call (B packed on the fly):
//   simd::gemm_s32(M, N, K, a, lda, b, ldb, c, ldc);
//   // B reused (weights): pack once for the signedness of A, then multiply many A's:
//   simd::PackedB pb = simd::pack_b(b, K, N, ldb, /*a_signed=*/false);
//   simd::gemm_s32(M, a, lda, pb, c, ldc, simd::GemmZeroPoints{...});
//
//   // B prepared once and kept as bytes (e.g. in a graph initializer), used without a copy:
//   std::vector<std::uint8_t> blob = pb.to_bytes();
//   simd::gemm_s32(M, a, lda, simd::PackedBView::from_bytes(blob.data(), blob.size()), c, ldc);
//
// The kernels are those of `kernels` when given (e.g. *simd::kernels_for(HWY_AVX2)), else
// simd::active_kernels() (runtime dispatch when quantkit/simd/implementation.hpp is linked,
// else this translation unit's static target). A PackedB remembers the kernels that packed it
// and is multiplied with those.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/ref/gemm.hpp"
#include "quantkit/simd/dispatch.hpp"
#include "quantkit/simd/gemm_abi.hpp"

namespace quantkit {
namespace simd {

// The GEMM kernels of a kernel table (default: the active one).
inline const GemmKernels& gemm_kernels(const Kernels* kernels = nullptr) {
  const Kernels& k = kernels ? *kernels : active_kernels();
  if (!k.gemm) quantkit::detail::fail("simd: the kernels of target ", k.name, " have no int8 GEMM");
  return *k.gemm;
}

// Zero points: a scalar or one per row of A (za) / one per column of B (zb); nullptr = 0.
struct GemmZeroPoints {
  const std::int32_t* a = nullptr;
  std::size_t a_count = 1;
  const std::int32_t* b = nullptr;
  std::size_t b_count = 1;
};

// A packed B seen without owning it: what the multiplication reads (PackedB::view(), or
// PackedBView::from_bytes over PackedB::to_bytes()).
struct PackedBView {
  std::size_t k = 0, n = 0;
  bool b_signed = true, a_signed = false, flip = false;
  const GemmKernels* kernels = nullptr;
  const std::int32_t* column_sums = nullptr;  // n values (of B before any flip), may be unaligned
  const std::uint8_t* data = nullptr;         // kernels->packed_size(k, n) bytes (+ 64 slack)
  bool empty() const { return kernels == nullptr; }

  // Reads the bytes of PackedB::to_bytes() (same process: the packing target must be one of
  // this program's kernels); errors name `what`.
  static PackedBView from_bytes(const void* bytes, std::size_t size, const std::string& what = "packed B");
};

namespace detail {
// PackedB::to_bytes layout: header, column sums, packed data (each part 64-byte aligned).
struct PackedBHeader {
  char magic[8];
  std::uint64_t k, n, data_bytes;
  std::int64_t target;
  std::uint8_t b_signed, a_signed, flip, reserved[5];
};
inline constexpr char kPackedBMagic[8] = {'q', 'k', 'p', 'a', 'c', 'k', 'b', '1'};
inline constexpr std::size_t align64(std::size_t v) { return (v + 63) / 64 * 64; }
}  // namespace detail

// B (K x N, int8 or uint8) packed for one target's kernels and one signedness of A.
class PackedB {
 public:
  PackedB() = default;
  std::size_t k() const { return k_; }
  std::size_t n() const { return n_; }
  bool b_signed() const { return b_signed_; }
  bool a_signed() const { return a_signed_; }
  bool flipped() const { return flip_; }
  const GemmKernels& kernels() const { return *kernels_; }
  const std::vector<std::int32_t>& column_sums() const { return col_sums_; }
  const std::uint8_t* data() const { return data_.data(); }
  bool empty() const { return kernels_ == nullptr; }

  PackedBView view() const {
    PackedBView v;
    v.k = k_;
    v.n = n_;
    v.b_signed = b_signed_;
    v.a_signed = a_signed_;
    v.flip = flip_;
    v.kernels = kernels_;
    v.column_sums = col_sums_.data();
    v.data = data_.data();
    return v;
  }

  // The packed matrix as one byte string (header, column sums, data) for PackedBView::from_bytes.
  std::vector<std::uint8_t> to_bytes() const {
    if (empty()) quantkit::detail::fail("simd::PackedB::to_bytes: B is not packed");
    detail::PackedBHeader h{};
    std::memcpy(h.magic, detail::kPackedBMagic, 8);
    h.k = k_;
    h.n = n_;
    h.data_bytes = data_.size();
    h.target = kernels_->target;
    h.b_signed = b_signed_;
    h.a_signed = a_signed_;
    h.flip = flip_;
    const std::size_t sums_at = detail::align64(sizeof h), data_at = sums_at + detail::align64(n_ * 4);
    std::vector<std::uint8_t> out(data_at + data_.size(), 0);
    std::memcpy(out.data(), &h, sizeof h);
    if (n_) std::memcpy(out.data() + sums_at, col_sums_.data(), n_ * 4);
    if (!data_.empty()) std::memcpy(out.data() + data_at, data_.data(), data_.size());
    return out;
  }

  template <class TB>
  static PackedB pack(const TB* b, std::size_t K, std::size_t N, std::size_t ldb, bool a_signed,
                      const GemmKernels& kernels) {
    static_assert(std::is_same<TB, std::int8_t>::value || std::is_same<TB, std::uint8_t>::value,
                  "simd::pack_b: B must be int8 or uint8");
    PackedB p;
    p.k_ = K;
    p.n_ = N;
    p.b_signed_ = std::is_signed<TB>::value;
    p.a_signed_ = a_signed;
    p.flip_ = kernels.needs_mixed_signs && a_signed == p.b_signed_;
    p.kernels_ = &kernels;
    p.data_.assign(kernels.packed_size(K, N) + 64, 0);  // + slack for full-vector loads
    p.col_sums_.assign(N, 0);
    std::vector<std::uint32_t> sums(N, 0);
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t n = 0; n < N; ++n) sums[n] += static_cast<std::uint32_t>(std::int32_t{b[k * ldb + n]});
    for (std::size_t n = 0; n < N; ++n) p.col_sums_[n] = static_cast<std::int32_t>(sums[n]);
    GemmPackArgs args;
    args.k = K;
    args.n = N;
    args.b = b;
    args.ldb = ldb;
    args.b_signed = p.b_signed_;
    args.flip = p.flip_;
    args.packed = p.data_.data();
    if (K > 0 && N > 0) kernels.pack_b(args);
    return p;
  }

 private:
  std::size_t k_ = 0, n_ = 0;
  bool b_signed_ = true, a_signed_ = false, flip_ = false;
  const GemmKernels* kernels_ = nullptr;
  std::vector<std::uint8_t> data_;
  std::vector<std::int32_t> col_sums_;
};

inline PackedBView PackedBView::from_bytes(const void* bytes, std::size_t size, const std::string& what) {
  detail::PackedBHeader h{};
  if (size < sizeof h) quantkit::detail::fail(what, ": ", size, " bytes; expected a packed B (PackedB::to_bytes)");
  std::memcpy(&h, bytes, sizeof h);
  if (std::memcmp(h.magic, detail::kPackedBMagic, 8) != 0)
    quantkit::detail::fail(what, ": not a packed B (PackedB::to_bytes): wrong header");
  // The active kernels' target first: kernels_for asks the CPU (cpuid, slow in a VM) each call.
  const Kernels& active = active_kernels();
  const Kernels* k = active.target == h.target ? &active : kernels_for(h.target);
  if (!k || !k->gemm)
    quantkit::detail::fail(what, ": packed for Highway target ", h.target, ", which this program does not run; "
                           "expected bytes packed in this process");
  const std::size_t sums_at = detail::align64(sizeof h), data_at = sums_at + detail::align64(h.n * 4);
  if (h.data_bytes < k->gemm->packed_size(h.k, h.n) || size != data_at + h.data_bytes)
    quantkit::detail::fail(what, ": ", size, " bytes do not hold a ", h.k, " x ", h.n, " packed B (truncated?)");
  PackedBView v;
  v.k = h.k;
  v.n = h.n;
  v.b_signed = h.b_signed != 0;
  v.a_signed = h.a_signed != 0;
  v.flip = h.flip != 0;
  v.kernels = k->gemm;
  v.column_sums = reinterpret_cast<const std::int32_t*>(static_cast<const std::uint8_t*>(bytes) + sums_at);
  v.data = static_cast<const std::uint8_t*>(bytes) + data_at;
  return v;
}

template <class TB>
PackedB pack_b(const TB* b, std::size_t K, std::size_t N, std::size_t ldb, bool a_signed,
               const Kernels* kernels = nullptr) {
  return PackedB::pack(b, K, N, ldb, a_signed, gemm_kernels(kernels));
}

// C (M x N) = (A - za) * (B - zb) with B packed (for A's signedness).
template <class TA>
void gemm_s32(std::size_t M, const TA* a, std::size_t lda, const PackedBView& b, std::int32_t* c,
              std::size_t ldc, const GemmZeroPoints& zp = {}) {
  static_assert(std::is_same<TA, std::int8_t>::value || std::is_same<TA, std::uint8_t>::value,
                "simd::gemm_s32: A must be int8 or uint8");
  if (b.empty()) quantkit::detail::fail("simd::gemm_s32: B is not packed");
  if (std::is_signed<TA>::value != b.a_signed)
    quantkit::detail::fail("simd::gemm_s32: B was packed for ", b.a_signed ? "int8" : "uint8",
                           " A; got ", std::is_signed<TA>::value ? "int8" : "uint8");
  if ((zp.a && zp.a_count != 1 && zp.a_count != M) || (zp.b && zp.b_count != 1 && zp.b_count != b.n))
    quantkit::detail::fail("simd::gemm_s32: ", zp.a_count, " A zero points for ", M, " rows, ",
                           zp.b_count, " B zero points for ", b.n, " columns; expected 1 or one each");
  const std::size_t N = b.n, K = b.k;
  if (M == 0 || N == 0) return;
  GemmArgs args;
  args.m = M;
  args.n = N;
  args.k = K;
  args.a = a;
  args.lda = lda;
  args.a_signed = std::is_signed<TA>::value;
  args.packed_b = b.data;
  args.packed_signed = b.b_signed != b.flip;
  args.c = c;
  args.ldc = ldc;
  b.kernels->gemm(args);

  // Corrections, all modulo 2^32: flip (B' = B +- 128), zero points.
  //   sum (a - za)(b - zb) = sum a b' + (flip - zb) rowsum(a) + za (K zb - colsum(b))
  std::uint32_t flip_term = 0;  // sum a b = sum a b' + flip_term * rowsum(a)
  if (b.flip) flip_term = b.b_signed ? static_cast<std::uint32_t>(-128) : 128u;
  const bool any_zb = zp.b != nullptr;
  const bool any_za = zp.a != nullptr;
  if (flip_term == 0 && !any_zb && !any_za) return;
  const bool zb_per_column = any_zb && zp.b_count != 1;
  const std::uint32_t uK = static_cast<std::uint32_t>(K);
  const std::uint32_t zb0 = any_zb && !zb_per_column ? static_cast<std::uint32_t>(zp.b[0]) : 0u;
  const std::int32_t* colsum = b.column_sums;
  for (std::size_t m = 0; m < M; ++m) {
    std::uint32_t rowsum = 0;
    if (flip_term != 0 || any_zb) {
      const TA* ar = a + m * lda;
      for (std::size_t k = 0; k < K; ++k) rowsum += static_cast<std::uint32_t>(std::int32_t{ar[k]});
    }
    const std::uint32_t za = any_za ? static_cast<std::uint32_t>(zp.a[zp.a_count == 1 ? 0 : m]) : 0u;
    std::int32_t* row = c + m * ldc;
    if (zb_per_column) {  // (simple loops, so that the compiler vectorizes them)
      const std::int32_t* zb = zp.b;
      for (std::size_t n = 0; n < N; ++n) {
        const std::uint32_t z = static_cast<std::uint32_t>(zb[n]);
        row[n] = static_cast<std::int32_t>(static_cast<std::uint32_t>(row[n]) + (flip_term - z) * rowsum +
                                           za * (uK * z - static_cast<std::uint32_t>(colsum[n])));
      }
    } else {
      const std::uint32_t base = (flip_term - zb0) * rowsum;
      const std::uint32_t kzb = uK * zb0;
      for (std::size_t n = 0; n < N; ++n)
        row[n] = static_cast<std::int32_t>(static_cast<std::uint32_t>(row[n]) + base +
                                           za * (kzb - static_cast<std::uint32_t>(colsum[n])));
    }
  }
}

template <class TA>
void gemm_s32(std::size_t M, const TA* a, std::size_t lda, const PackedB& b, std::int32_t* c,
              std::size_t ldc, const GemmZeroPoints& zp = {}) {
  gemm_s32(M, a, lda, b.view(), c, ldc, zp);
}

// One call: packs B with the given (or active) kernels, then multiplies.
template <class TA, class TB>
void gemm_s32(std::size_t M, std::size_t N, std::size_t K, const TA* a, std::size_t lda, const TB* b,
              std::size_t ldb, std::int32_t* c, std::size_t ldc, const GemmZeroPoints& zp = {},
              const Kernels* kernels = nullptr) {
  const PackedB pb = pack_b(b, K, N, ldb, std::is_signed<TA>::value, kernels);
  gemm_s32(M, a, lda, pb, c, ldc, zp);
}

}  // namespace simd
}  // namespace quantkit
