// Integer formats: bit width, signedness, narrow range, storage type.
#pragma once

#include <cstdint>
#include <type_traits>

#include "quantkit/policy/category.hpp"

namespace quantkit {
namespace detail {

template <int Bits, bool Signed>
struct default_storage {
  static_assert(Bits >= 2 && Bits <= 16,
                "Unimplemented: quantkit integer formats have 2..16 bits; "
                "use IntFormat<2..16> (int32 appears only as an accumulator)");
  using type = std::conditional_t<(Bits <= 8), std::conditional_t<Signed, std::int8_t, std::uint8_t>,
                                  std::conditional_t<Signed, std::int16_t, std::uint16_t>>;
};

}  // namespace detail

// Bits: 2..16. Signed: two's complement range, else [0, 2^Bits - 1].
// Narrow: symmetric signed range without the most negative value ([-127, 127] for 8 bits),
// as TFLite's int8 weights and ONNX Runtime's restricted symmetric ranges use.
// Storage: the integer type one unpacked value lives in; 2- and 4-bit values may also be
// packed into bytes (low bits first, ONNX order) by quantize_packed().
template <int Bits, bool Signed = true, bool Narrow = false,
          class Storage = typename detail::default_storage<Bits, Signed>::type>
struct IntFormat {
  static_assert(Bits >= 2 && Bits <= 16,
                "Unimplemented: quantkit integer formats have 2..16 bits; "
                "use IntFormat<2..16> (int32 appears only as an accumulator)");
  static_assert(std::is_integral_v<Storage> && !std::is_same_v<Storage, bool>,
                "IntFormat: Storage must be an integer type (e.g. std::int8_t)");
  static_assert(int(sizeof(Storage)) * 8 - (std::is_signed_v<Storage> ? 1 : 0) >=
                    Bits - (Signed ? 1 : 0),
                "IntFormat: the Storage type is too small for this bit width; "
                "use a wider Storage (std::int16_t for 9..16 bits) or fewer Bits");
  static_assert(Signed || !Narrow,
                "IntFormat: narrow range is defined for signed formats only "
                "(it drops -2^(Bits-1)); use Narrow = false with unsigned formats");
  static_assert(!Signed || std::is_signed_v<Storage>,
                "IntFormat: a signed format needs a signed Storage type");

  using category = quantkit::category::format;
  using storage_type = Storage;
  static constexpr int bits = Bits;
  static constexpr bool is_signed = Signed;
  static constexpr bool narrow = Narrow;
  static constexpr std::int32_t qmin =
      Signed ? -(std::int32_t{1} << (Bits - 1)) + (Narrow ? 1 : 0) : 0;
  static constexpr std::int32_t qmax =
      Signed ? (std::int32_t{1} << (Bits - 1)) - 1 : (std::int32_t{1} << Bits) - 1;
  // Sub-byte widths that divide 8 can be packed, values_per_byte to a byte.
  static constexpr bool packable = (Bits == 2 || Bits == 4);
  static constexpr int values_per_byte = packable ? 8 / Bits : 1;
};

template <int Bits, bool Narrow = false>
using Int = IntFormat<Bits, true, Narrow>;
template <int Bits>
using UInt = IntFormat<Bits, false, false>;

using Int8 = Int<8>;
using Int8Narrow = Int<8, true>;
using UInt8 = UInt<8>;
using Int16 = Int<16>;
using UInt16 = UInt<16>;
using Int4 = Int<4>;
using UInt4 = UInt<4>;
using Int2 = Int<2>;
using UInt2 = UInt<2>;

template <class T, class = void>
struct is_format : std::false_type {};
template <class T>
struct is_format<T, std::enable_if_t<std::is_same_v<typename T::category, category::format>>>
    : std::true_type {};

// Runtime description of an integer range, used where formats are chosen at run time (CLI,
// ONNX adapter) and by the reference functions.
struct IntRange {
  std::int32_t qmin = -128;
  std::int32_t qmax = 127;

  template <class Format>
  static constexpr IntRange of() {
    return IntRange{Format::qmin, Format::qmax};
  }
  constexpr std::int64_t levels() const { return std::int64_t{qmax} - qmin; }
};

}  // namespace quantkit
