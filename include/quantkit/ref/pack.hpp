// Packing 2- and 4-bit values into bytes: element i goes to byte i / (8 / bits), at bit
// (i % (8 / bits)) * bits — low bits first, as ONNX stores INT4/UINT4 (and INT2/UINT2).
// Odd lengths leave the unused high bits of the last byte zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "quantkit/error.hpp"

namespace quantkit {

constexpr std::size_t packed_size(std::size_t count, int bits) {
  const std::size_t per_byte = static_cast<std::size_t>(8 / bits);
  return (count + per_byte - 1) / per_byte;
}

namespace ref {

// Values must already lie in the format's range; only the low `bits` bits are stored.
template <class Int>
void pack(const Int* values, std::size_t count, int bits, std::uint8_t* out, std::size_t out_size,
          const std::string& tensor_name = {}) {
  if (bits != 2 && bits != 4)
    detail::fail(detail::describe_tensor(tensor_name), ": cannot pack ", bits,
                 "-bit values; expected 2 or 4 bits");
  if (out_size < packed_size(count, bits))
    detail::fail(detail::describe_tensor(tensor_name), ": packed output has ", out_size,
                 " bytes; expected ", packed_size(count, bits), " for ", count, " values");
  const int per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t b = 0; b < packed_size(count, bits); ++b) out[b] = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const unsigned v = static_cast<unsigned>(static_cast<int>(values[i])) & mask;
    out[i / static_cast<std::size_t>(per_byte)] |=
        static_cast<std::uint8_t>(v << ((i % static_cast<std::size_t>(per_byte)) * static_cast<unsigned>(bits)));
  }
}

// Sign-extends when `is_signed`.
template <class Int>
void unpack(const std::uint8_t* packed, std::size_t count, int bits, bool is_signed, Int* out,
            const std::string& tensor_name = {}) {
  if (bits != 2 && bits != 4)
    detail::fail(detail::describe_tensor(tensor_name), ": cannot unpack ", bits,
                 "-bit values; expected 2 or 4 bits");
  const std::size_t per_byte = static_cast<std::size_t>(8 / bits);
  const unsigned mask = (1u << bits) - 1u;
  for (std::size_t i = 0; i < count; ++i) {
    const unsigned v = (packed[i / per_byte] >> ((i % per_byte) * static_cast<unsigned>(bits))) & mask;
    int s = static_cast<int>(v);
    if (is_signed && (v & (1u << (bits - 1)))) s -= (1 << bits);
    out[i] = static_cast<Int>(s);
  }
}

}  // namespace ref
}  // namespace quantkit
