// Symmetry: whether the zero point is free (affine) or fixed at the middle of the range.
#pragma once

#include "quantkit/policy/category.hpp"

namespace quantkit {

enum class SymmetryKind { affine, symmetric, symmetric_restricted };

inline const char* to_string(SymmetryKind s) {
  switch (s) {
    case SymmetryKind::affine: return "affine";
    case SymmetryKind::symmetric: return "symmetric";
    case SymmetryKind::symmetric_restricted: return "symmetric-restricted";
  }
  return "?";
}

// scale = (max - min) / (qmax - qmin), zero point chosen so that 0.0 is exact.
struct Affine {
  using category = quantkit::category::symmetry;
  static constexpr SymmetryKind kind = SymmetryKind::affine;
};

// PyTorch's symmetric: scale = max(|min|, |max|) / ((qmax - qmin) / 2) — 127.5 for int8 —
// over the full range; zero point 0 (signed) or the middle of the range (unsigned).
struct Symmetric {
  using category = quantkit::category::symmetry;
  static constexpr SymmetryKind kind = SymmetryKind::symmetric;
};

// ONNX Runtime / TFLite symmetric: signed formats lose their most negative value
// ([-127, 127] for int8) and scale = max(|min|, |max|) / qmax. Unsigned formats are unchanged
// (same as Symmetric).
struct SymmetricRestricted {
  using category = quantkit::category::symmetry;
  static constexpr SymmetryKind kind = SymmetryKind::symmetric_restricted;
};

}  // namespace quantkit
