// ParamLayout: which (scale, zero point) each element of a tensor uses, for a granularity.
#pragma once

#include <cstdint>
#include <string>

#include "quantkit/error.hpp"
#include "quantkit/policy/granularity.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {

class ParamLayout {
 public:
  // Validates the granularity against the shape (axis within rank, block size > 0).
  ParamLayout(const Dims& shape, Granularity g, const std::string& tensor_name = {})
      : shape_(shape), granularity_(g) {
    if (g.kind == GranularityKind::per_tensor) {
      count_ = 1;
      return;
    }
    const int rank = shape.rank;
    if (g.axis < -rank || g.axis >= rank)
      detail::fail(detail::describe_tensor(tensor_name), ": ", g.to_string(), " on shape ",
                   shape.to_string(), "; expected an axis in [", -rank, ", ", rank, ")");
    axis_ = g.axis < 0 ? g.axis + rank : g.axis;
    if (g.kind == GranularityKind::per_channel) {
      block_ = 1;
      count_ = shape[axis_];
      return;
    }
    if (g.block_size <= 0)
      detail::fail(detail::describe_tensor(tensor_name), ": per-group block size ", g.block_size,
                   "; expected a positive block size");
    block_ = g.block_size;
    // Blocks in row-major order of the shape with the axis divided into blocks.
    Dims pshape = shape;
    pshape[axis_] = (shape[axis_] + block_ - 1) / block_;
    pstrides_ = contiguous_strides(pshape);
    count_ = pshape.product();
  }

  std::int64_t count() const { return count_; }
  GranularityKind kind() const { return granularity_.kind; }
  int axis() const { return axis_; }  // normalized (>= 0); 0 for per-tensor
  std::int64_t block_size() const { return block_; }
  const Dims& shape() const { return shape_; }

  std::int64_t index(const Dims& idx) const {
    switch (granularity_.kind) {
      case GranularityKind::per_tensor: return 0;
      case GranularityKind::per_channel: return idx[axis_];
      case GranularityKind::per_group: {
        std::int64_t p = 0;
        for (int d = 0; d < idx.rank; ++d)
          p += (d == axis_ ? idx[d] / block_ : idx[d]) * pstrides_[d];
        return p;
      }
    }
    return 0;
  }

  // Fails unless `n` parameters were given for this layout.
  void expect_count(std::int64_t n, const std::string& tensor_name) const {
    if (n != count_)
      detail::fail(detail::describe_tensor(tensor_name), ": ", granularity_.to_string(),
                   " on shape ", shape_.to_string(), " needs ", count_,
                   " scales/zero points; found ", n);
  }

 private:
  Dims shape_;
  Granularity granularity_;
  int axis_ = 0;
  std::int64_t block_ = 1;
  std::int64_t count_ = 1;
  Dims pstrides_;
};

}  // namespace quantkit
