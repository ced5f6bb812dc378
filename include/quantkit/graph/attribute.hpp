// Node attributes: int, float, string, ints, floats, tensor (the ONNX kinds the supported ops use).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quantkit/graph/tensor.hpp"

namespace quantkit {
namespace graph {

enum class AttrKind { int_, float_, string, ints, floats, tensor };

inline const char* to_string(AttrKind k) {
  switch (k) {
    case AttrKind::int_: return "int";
    case AttrKind::float_: return "float";
    case AttrKind::string: return "string";
    case AttrKind::ints: return "ints";
    case AttrKind::floats: return "floats";
    case AttrKind::tensor: return "tensor";
  }
  return "?";
}

struct Attribute {
  AttrKind kind = AttrKind::int_;
  std::int64_t i = 0;
  float f = 0.0f;
  std::string s;
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
  std::shared_ptr<const Tensor> t;  // shared: attributes are copied with nodes

  static Attribute make_int(std::int64_t v) { Attribute a; a.kind = AttrKind::int_; a.i = v; return a; }
  static Attribute make_float(float v) { Attribute a; a.kind = AttrKind::float_; a.f = v; return a; }
  static Attribute make_string(std::string v) { Attribute a; a.kind = AttrKind::string; a.s = std::move(v); return a; }
  static Attribute make_ints(std::vector<std::int64_t> v) { Attribute a; a.kind = AttrKind::ints; a.ints = std::move(v); return a; }
  static Attribute make_floats(std::vector<float> v) { Attribute a; a.kind = AttrKind::floats; a.floats = std::move(v); return a; }
  static Attribute make_tensor(Tensor v) {
    Attribute a;
    a.kind = AttrKind::tensor;
    a.t = std::make_shared<const Tensor>(std::move(v));
    return a;
  }
};

}  // namespace graph
}  // namespace quantkit
