// DType: the element types a graph value or an executor tensor can have.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "quantkit/error.hpp"

namespace quantkit {
namespace graph {

// boolean is stored one byte per element (0 or 1), like ONNX's BOOL; it appears only where
// an op defines a mask output (Dropout) and is never quantized. int16/uint16 are 16-bit
// quantized values (A16 activations, W16 weights).
enum class DType : std::uint8_t { undefined, float32, int8, uint8, int32, int64, boolean, int16, uint16 };

inline const char* to_string(DType t) {
  switch (t) {
    case DType::undefined: return "undefined";
    case DType::float32: return "float32";
    case DType::int8: return "int8";
    case DType::uint8: return "uint8";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::boolean: return "bool";
    case DType::int16: return "int16";
    case DType::uint16: return "uint16";
  }
  return "?";
}

inline std::size_t size_of(DType t) {
  switch (t) {
    case DType::float32: case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::int8: case DType::uint8: case DType::boolean: return 1;
    case DType::int16: case DType::uint16: return 2;
    case DType::undefined: return 0;
  }
  return 0;
}

inline bool is_integer(DType t) {
  return t == DType::int8 || t == DType::uint8 || t == DType::int16 || t == DType::uint16 || t == DType::int32 ||
         t == DType::int64;
}

template <class T>
struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::float32; };
template <> struct dtype_of<std::int8_t> { static constexpr DType value = DType::int8; };
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::uint8; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::int32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::int64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };
template <> struct dtype_of<std::int16_t> { static constexpr DType value = DType::int16; };
template <> struct dtype_of<std::uint16_t> { static constexpr DType value = DType::uint16; };
template <class T>
inline constexpr DType dtype_of_v = dtype_of<std::remove_const_t<T>>::value;

// Calls f(T{}) with T the C++ type of `t` (bool for boolean). `what` names the tensor in the
// error for undefined.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f, const std::string& what = {}) {
  switch (t) {
    case DType::float32: return f(float{});
    case DType::int8: return f(std::int8_t{});
    case DType::uint8: return f(std::uint8_t{});
    case DType::int32: return f(std::int32_t{});
    case DType::int64: return f(std::int64_t{});
    case DType::boolean: return f(bool{});
    case DType::int16: return f(std::int16_t{});
    case DType::uint16: return f(std::uint16_t{});
    case DType::undefined: break;
  }
  detail::fail(detail::describe_tensor(what), ": element type is undefined; expected float32, "
               "int8, uint8, int16, uint16, int32, int64 or bool");
}

}  // namespace graph
}  // namespace quantkit
