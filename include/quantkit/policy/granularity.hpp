// Granularity: how many (scale, zero point) pairs a tensor gets, and along which axis.
#pragma once

#include <cstdint>
#include <string>

#include "quantkit/policy/category.hpp"

namespace quantkit {

enum class GranularityKind { per_tensor, per_channel, per_group };

// Runtime form, carried by QuantParams. axis may be negative (counted from the last axis).
struct Granularity {
  GranularityKind kind = GranularityKind::per_tensor;
  int axis = 0;
  std::int64_t block_size = 0;  // per_group only

  static constexpr Granularity per_tensor() { return {}; }
  static constexpr Granularity per_channel(int axis) {
    return {GranularityKind::per_channel, axis, 0};
  }
  static constexpr Granularity per_group(int axis, std::int64_t block_size) {
    return {GranularityKind::per_group, axis, block_size};
  }
  friend constexpr bool operator==(const Granularity& a, const Granularity& b) {
    return a.kind == b.kind && (a.kind == GranularityKind::per_tensor ||
                                (a.axis == b.axis && a.block_size == b.block_size));
  }
  friend constexpr bool operator!=(const Granularity& a, const Granularity& b) { return !(a == b); }
  std::string to_string() const {
    switch (kind) {
      case GranularityKind::per_tensor: return "per-tensor";
      case GranularityKind::per_channel: return "per-channel(axis " + std::to_string(axis) + ")";
      case GranularityKind::per_group:
        return "per-group(axis " + std::to_string(axis) + ", block " + std::to_string(block_size) +
               ")";
    }
    return "?";
  }
};

struct PerTensor {
  using category = quantkit::category::granularity;
  static constexpr Granularity value() { return Granularity::per_tensor(); }
  template <int Rank>
  static constexpr void check_rank() {}
};

// One (scale, zero point) per index along Axis; a negative Axis counts from the last axis.
template <int Axis>
struct PerChannel {
  using category = quantkit::category::granularity;
  static constexpr int axis = Axis;
  static constexpr Granularity value() { return Granularity::per_channel(Axis); }
  template <int Rank>
  static constexpr void check_rank() {
    static_assert(Rank < 0 || (Axis < Rank && Axis >= -Rank),
                  "PerChannel<Axis>: the tensor's rank has no such axis; "
                  "use an axis in [-rank, rank) (e.g. PerChannel<0> for output channels)");
  }
};

// One (scale, zero point) per block of BlockSize consecutive indices along Axis
// (ONNX opset-21 blocked quantization; the last block may be shorter).
template <int Axis, std::int64_t BlockSize>
struct PerGroup {
  static_assert(BlockSize > 0,
                "PerGroup<Axis, BlockSize>: BlockSize must be positive (e.g. 32, 64 or 128)");
  using category = quantkit::category::granularity;
  static constexpr int axis = Axis;
  static constexpr std::int64_t block_size = BlockSize;
  static constexpr Granularity value() { return Granularity::per_group(Axis, BlockSize); }
  template <int Rank>
  static constexpr void check_rank() {
    static_assert(Rank < 0 || (Axis < Rank && Axis >= -Rank),
                  "PerGroup<Axis, BlockSize>: the tensor's rank has no such axis; "
                  "use an axis in [-rank, rank)");
  }
};

}  // namespace quantkit
