// NumPy .npy reading and writing (format versions 1.0-3.0; little-endian float32, float64,
// int8, uint8, int16, uint16, int32, int64; C order). Every malformed file is an Error naming the file
// and what was found; declared sizes are checked against the file size before allocating.
// Writes go to a temporary file in the same folder, renamed into place when complete.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/io/atomic_file.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace npy {

enum class DType { f32, f64, i8, u8, i16, u16, i32, i64 };

inline const char* descr(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::i16: return "<i2";
    case DType::u16: return "<u2";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
  }
  return "?";
}
inline std::size_t item_size(DType t) {
  switch (t) {
    case DType::i8: case DType::u8: return 1;
    case DType::i16: case DType::u16: return 2;
    case DType::f32: case DType::i32: return 4;
    case DType::f64: case DType::i64: return 8;
  }
  return 0;
}

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<std::int8_t>() { return DType::i8; }
template <> constexpr DType dtype_of<std::uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<std::int16_t>() { return DType::i16; }
template <> constexpr DType dtype_of<std::uint16_t>() { return DType::u16; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::i64; }

struct Array {
  DType dtype = DType::f32;
  Dims shape;
  std::vector<unsigned char> bytes;  // C order, little-endian

  std::int64_t size() const { return shape.product(); }
  template <class T>
  std::vector<T> as(const std::string& what = {}) const {
    if (dtype_of<T>() != dtype)
      detail::fail(what.empty() ? std::string("array") : what, ": dtype ", descr(dtype), "; expected ",
                   descr(dtype_of<T>()));
    std::vector<T> out(static_cast<std::size_t>(size()));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
};

namespace detail {
// Finds "'key': value" in the header dict and returns the raw value text.
inline std::string header_value(const std::string& header, const std::string& key,
                                const std::string& file) {
  const auto k = header.find("'" + key + "'");
  if (k == std::string::npos) quantkit::detail::fail("file '", file, "': .npy header has no '", key, "'");
  auto v = header.find(':', k);
  if (v == std::string::npos) quantkit::detail::fail("file '", file, "': malformed .npy header");
  ++v;
  while (v < header.size() && header[v] == ' ') ++v;
  std::size_t end = v;
  if (v < header.size() && header[v] == '(') {
    end = header.find(')', v);
    if (end == std::string::npos) quantkit::detail::fail("file '", file, "': malformed shape in .npy header");
    return header.substr(v, end - v + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(v, end - v);
}
}  // namespace detail

inline Array parse(const std::vector<unsigned char>& data, const std::string& file) {
  using quantkit::detail::fail;
  static const unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (data.size() < 10 || std::memcmp(data.data(), magic, 6) != 0)
    fail("file '", file, "': not a .npy file (bad magic); expected \\x93NUMPY");
  const int major = data[6];
  std::size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = data[8] | (std::size_t{data[9]} << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) fail("file '", file, "': truncated .npy header");
    header_len = data[8] | (std::size_t{data[9]} << 8) | (std::size_t{data[10]} << 16) | (std::size_t{data[11]} << 24);
    offset = 12;
  } else {
    fail("file '", file, "': .npy format version ", major, "; expected 1, 2 or 3");
  }
  if (header_len > data.size() - offset) fail("file '", file, "': truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(data.data() + offset), header_len);
  const std::string d = detail::header_value(header, "descr", file);
  Array a;
  bool found = false;
  for (DType t : {DType::f32, DType::f64, DType::i8, DType::u8, DType::i16, DType::u16, DType::i32, DType::i64}) {
    const std::string s = descr(t);
    if (d == "'" + s + "'" || (s[0] == '|' && d == "'<" + s.substr(1) + "'")) {
      a.dtype = t;
      found = true;
    }
  }
  if (!found)
    fail("file '", file, "': dtype ", d, "; expected little-endian float32, float64, int8, uint8, int16, uint16, int32 or int64");
  if (detail::header_value(header, "fortran_order", file).find("False") == std::string::npos)
    fail("file '", file, "': Fortran-order array; expected C order (numpy.ascontiguousarray)");
  const std::string shape = detail::header_value(header, "shape", file);
  std::vector<std::int64_t> dims;
  std::size_t i = 1;
  while (i < shape.size()) {
    while (i < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
    if (i >= shape.size() || shape[i] == ')') break;
    std::int64_t v = 0;
    bool digit = false;
    while (i < shape.size() && shape[i] >= '0' && shape[i] <= '9') {
      if (v > (std::int64_t{1} << 50)) fail("file '", file, "': shape ", shape, " is too large");
      v = v * 10 + (shape[i++] - '0');
      digit = true;
    }
    if (!digit) fail("file '", file, "': malformed shape ", shape);
    dims.push_back(v);
  }
  if (dims.size() > static_cast<std::size_t>(max_rank))
    fail("file '", file, "': shape ", shape, " has ", dims.size(), " dimensions; expected at most ", max_rank);
  a.shape = Dims::from(dims.begin(), dims.end());
  const std::size_t payload = data.size() - offset - header_len;
  const std::size_t item = item_size(a.dtype);
  std::uint64_t count = 1;
  for (auto v : dims) {
    if (v != 0 && count > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(v))
      fail("file '", file, "': shape ", shape, " overflows");
    count *= static_cast<std::uint64_t>(v);
  }
  if (count * item != payload)
    fail("file '", file, "': shape ", shape, " needs ", count * item, " bytes of data; the file has ", payload);
  a.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(offset + header_len), data.end());
  return a;
}

inline Array load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) quantkit::detail::fail("file '", path, "': cannot open for reading");
  std::vector<unsigned char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse(data, path);
}

// Writes atomically (quantkit/io/atomic_file.hpp): a temporary file in the same folder, renamed
// into place when complete.
inline void save(const std::string& path, DType dtype, const Dims& shape, const void* values) {
  std::string shape_s = "(";
  for (int i = 0; i < shape.rank; ++i) shape_s += std::to_string(shape[i]) + (shape.rank == 1 || i + 1 < shape.rank ? "," : "");
  shape_s += ")";
  std::string header = std::string("{'descr': '") + descr(dtype) + "', 'fortran_order': False, 'shape': " + shape_s + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  const unsigned char pre[] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                               static_cast<unsigned char>(header.size() & 0xff),
                               static_cast<unsigned char>(header.size() >> 8)};
  std::int64_t count = 1;
  for (int i = 0; i < shape.rank; ++i) {
    if (shape[i] < 0 || (shape[i] != 0 && count > (std::int64_t{1} << 50) / shape[i]))
      quantkit::detail::fail("file '", path, "': cannot write shape ", shape.to_string(),
                             "; expected non-negative extents of at most 2^50 elements");
    count *= shape[i];
  }
  io::AtomicFile out(path);
  out.write(pre, sizeof pre);
  out.write(header);
  out.write(values, static_cast<std::size_t>(count) * item_size(dtype));
  out.commit();
}

template <class T>
void save(const std::string& path, const std::vector<T>& values, const Dims& shape) {
  if (shape.product() != static_cast<std::int64_t>(values.size()))
    quantkit::detail::fail("file '", path, "': shape ", shape.to_string(), " does not match ", values.size(), " values");
  save(path, dtype_of<T>(), shape, values.data());
}

}  // namespace npy
}  // namespace quantkit
