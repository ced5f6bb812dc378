// Standalone C++ export (N2D2's "CPP export" for embedded targets): a quantized model ->
// one self-contained C++17 header holding the integer weights, biases and requantization
// constants and an integer-only infer().
//
//   quantkit::cpp_export::Options opt;
//   opt.name_space = "digits";
//   opt.runtime = quantkit::cpp_export::Runtime::standalone;   // or quantkit (the default)
//   quantkit::cpp_export::write(qdq_graph, "digits.hpp", opt);  // IntegerMode's default scheme
//   quantkit::cpp_export::write<quantkit::SingleShift>(qdq_graph, "digits_shift.hpp", opt);
//
// The input is a QDQ graph (as quantkit::onnx::load reads the file save_qdq writes; for a
// ptq::QuantizedModel use quantkit::onnx::qdq_graph(qm)). IntegerModeT<Scheme> converts it —
// the exporter writes the graph that mode runs, so the header's integers equal the integer
// executor's bit for bit — and every compute node must become integer: anything left float is
// an error naming the node and why. What remains around the integer ops must be one
// QuantizeLinear per graph input and one DequantizeLinear per graph output, both per tensor.
//
// The generated header (namespace `name_space`):
//   struct Workspace;                       the activations, reused by lifetime (one arena)
//   void infer(const in_t* input..., out_t* output..., Workspace& ws);   integers only
//   void infer(const in_t* input..., out_t* output...);                  a static Workspace
//   <input>_size/_scale/_zero_point/_type, quantize_<input>(const float*, in_t*)
//   <output>_size/_scale/_zero_point/_type, dequantize_<output>(const out_t*, float*)
// Shapes are fixed at export (Options::input_shapes; default: the declared ones, batch 1).
// Runtime::quantkit requantizes with quantkit's own reference (quantkit/ref/requantize.hpp;
// the header needs quantkit's include folder and nothing else); Runtime::standalone writes
// the scheme's integer arithmetic into the header (only the standard library). Schemes:
// FixedPointDoubleRounding (gemmlowp, default), FixedPointSingleRounding, SingleShift,
// DoubleShift.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/executor/integer/layers.hpp"
#include "quantkit/executor/integer/mode.hpp"
#include "quantkit/io/atomic_file.hpp"
#include "quantkit/policy/requantization.hpp"

namespace quantkit {
namespace cpp_export {

enum class Runtime { quantkit, standalone };

struct Options {
  std::string name_space = "model";  // the C++ namespace of the generated code
  Runtime runtime = Runtime::quantkit;
  std::map<std::string, std::vector<std::int64_t>> input_shapes;  // default: declared, batch 1
  std::string source;                // named in the header comment (default: the graph's file)
};

// A graph input (quantized by infer()'s caller) or output (written by infer()).
struct Port {
  std::string name;        // the graph's value name
  std::string identifier;  // the C++ parameter name
  graph::DType type = graph::DType::uint8;
  Dims shape;
  float scale = 1.0f;
  std::int32_t zero_point = 0;
};

struct Report {
  std::vector<Port> inputs, outputs;
  std::vector<std::string> layers;  // "name: IntConv", in execution order
  std::size_t parameter_bytes = 0;  // weights, biases, requantization constants
  std::size_t workspace_bytes = 0;  // the activation arena
};

namespace detail {

// What the generated code needs to know about a requantization scheme.
template <class Scheme>
struct SchemeCode {
  static_assert(sizeof(Scheme) == 0,
                "cpp_export supports FixedPointDoubleRounding, FixedPointSingleRounding, SingleShift and DoubleShift");
};

inline const char* kSaturate = R"(inline std::int32_t saturate_to_int32(std::int64_t v) {
  return v > INT32_MAX ? INT32_MAX : (v < INT32_MIN ? INT32_MIN : static_cast<std::int32_t>(v));
}
)";

template <>
struct SchemeCode<FixedPointDoubleRounding> {
  static constexpr const char* name = "fixed-point multiplier, gemmlowp double rounding";
  static constexpr const char* quantkit_type = "quantkit::FixedPointDoubleRounding";
  static std::string constants(const ref::QuantizedMultiplier& k) {
    return "{" + std::to_string(k.multiplier) + ", " + std::to_string(k.shift) + "}";
  }
  static std::string standalone() {
    return R"(// acc * multiplier * 2^(shift - 31): gemmlowp SaturatingRoundingDoublingHighMul, then
// RoundingDivideByPOT (ties away from zero).
struct Requant {
  std::int32_t multiplier;
  int shift;  // > 0: left shift
};
inline std::int32_t high_mul(std::int32_t a, std::int32_t b) {
  if (a == b && a == INT32_MIN) return INT32_MAX;
  const std::int64_t ab = static_cast<std::int64_t>(a) * b;
  const std::int64_t nudge = ab >= 0 ? (std::int64_t{1} << 30) : (1 - (std::int64_t{1} << 30));
  return static_cast<std::int32_t>((ab + nudge) / (std::int64_t{1} << 31));
}
inline std::int32_t divide_by_pot(std::int32_t x, int exponent) {
  const std::int64_t mask = (std::int64_t{1} << exponent) - 1;
  const std::int64_t remainder = static_cast<std::int64_t>(x) & mask;
  const std::int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return static_cast<std::int32_t>((static_cast<std::int64_t>(x) >> exponent) + (remainder > threshold ? 1 : 0));
}
inline std::int32_t apply(std::int32_t x, const Requant& k) {
  const int left = k.shift > 0 ? k.shift : 0, right = k.shift > 0 ? 0 : -k.shift;
  const std::int64_t shifted = static_cast<std::int64_t>(x) * (std::int64_t{1} << left);
  if (shifted != static_cast<std::int32_t>(shifted)) return x < 0 ? INT32_MIN : INT32_MAX;
  return divide_by_pot(high_mul(static_cast<std::int32_t>(shifted), k.multiplier), right);
}
)";
  }
};

template <>
struct SchemeCode<FixedPointSingleRounding> {
  static constexpr const char* name = "fixed-point multiplier, TFLite single rounding";
  static constexpr const char* quantkit_type = "quantkit::FixedPointSingleRounding";
  static std::string constants(const ref::QuantizedMultiplier& k) {
    return "{" + std::to_string(k.multiplier) + ", " + std::to_string(k.shift) + "}";
  }
  static std::string standalone() {
    return std::string(kSaturate) + R"(// (acc * multiplier + 2^(30 - shift)) >> (31 - shift)
struct Requant {
  std::int32_t multiplier;
  int shift;
};
inline std::int32_t apply(std::int32_t x, const Requant& k) {
  const int total = 31 - k.shift;
  return saturate_to_int32((static_cast<std::int64_t>(x) * k.multiplier + (std::int64_t{1} << (total - 1))) >> total);
}
)";
  }
};

template <>
struct SchemeCode<SingleShift> {
  static constexpr const char* name = "single right shift (N2D2 SINGLE_SHIFT)";
  static constexpr const char* quantkit_type = "quantkit::SingleShift";
  static std::string constants(const ShiftScale& k) { return "{" + std::to_string(k.shift) + "}"; }
  static std::string standalone() {
    return R"(// acc >> shift (floor)
struct Requant {
  int shift;
};
inline std::int32_t apply(std::int32_t x, const Requant& k) {
  return static_cast<std::int32_t>(static_cast<std::int64_t>(x) >> k.shift);
}
)";
  }
};

template <>
struct SchemeCode<DoubleShift> {
  static constexpr const char* name = "two right shifts (N2D2 DOUBLE_SHIFT)";
  static constexpr const char* quantkit_type = "quantkit::DoubleShift";
  static std::string constants(const DoubleShift::Constants& k) {
    return "{" + std::to_string(k.shift1) + ", " + std::to_string(k.shift2) + "}";
  }
  static std::string standalone() {
    return std::string(kSaturate) + R"(// (acc + (acc << shift1) + 2^(shift2 - 1)) >> shift2
struct Requant {
  int shift1;
  int shift2;
};
inline std::int32_t apply(std::int32_t x, const Requant& k) {
  const std::int64_t a = x;
  return saturate_to_int32((a + a * (std::int64_t{1} << k.shift1) + (std::int64_t{1} << (k.shift2 - 1))) >> k.shift2);
}
)";
  }
};

// The kernels every generated header holds (after Requant/apply/requantize): the integer ops
// of quantkit/executor/integer/ops.hpp, written for one fixed shape each.
inline const char* kKernels = R"(struct Window {  // three spatial dimensions, unit extents in front
  std::int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad[3], pad_end[3];
};

template <class TX, class TY>
inline TY rescale_value(TX x, std::int32_t xz, bool exact, const Requant& k, std::int32_t yz, std::int32_t lo,
                        std::int32_t hi) {
  const std::int32_t acc = static_cast<std::int32_t>(x) - xz;
  if (exact) {
    const std::int32_t v = acc + yz;
    return static_cast<TY>(v < lo ? lo : (v > hi ? hi : v));
  }
  return static_cast<TY>(requantize(acc, 0, k, yz, lo, hi));
}

template <class TX, class TY>
inline void rescale(const TX* x, std::int64_t n, std::int32_t xz, bool exact, const Requant& k, std::int32_t yz,
                    std::int32_t lo, std::int32_t hi, TY* y) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = rescale_value<TX, TY>(x[i], xz, exact, k, yz, lo, hi);
}

template <class TX, class TW, class TY>
inline void conv(const TX* x, std::int32_t xz, const TW* w, const std::int32_t* wz, bool wz_per_map,
                 const std::int32_t* bias, const Requant* k, bool k_per_map, std::int32_t yz, std::int32_t lo,
                 std::int32_t hi, std::int64_t batch, std::int64_t channels, std::int64_t maps, std::int64_t group,
                 const Window& g, TY* y) {
  const std::int64_t cg = channels / group, mg = maps / group;
  const std::int64_t kk = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const std::int64_t in_size = g.in[0] * g.in[1] * g.in[2], out_size = g.out[0] * g.out[1] * g.out[2];
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t m = 0; m < maps; ++m) {
      const TX* xg = x + (n * channels + (m / mg) * cg) * in_size;
      const TW* wm = w + m * cg * kk;
      const std::int64_t zw = wz[wz_per_map ? m : 0];
      const Requant& km = k[k_per_map ? m : 0];
      const std::int32_t b = bias ? bias[m] : 0;
      TY* ym = y + (n * maps + m) * out_size;
      std::int64_t o = 0;
      for (std::int64_t od = 0; od < g.out[0]; ++od)
        for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
          for (std::int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
            std::uint32_t sum = 0;  // modulo 2^32, as int32 accumulation
            for (std::int64_t c = 0; c < cg; ++c) {
              const TX* xc = xg + c * in_size;
              const TW* wc = wm + c * kk;
              for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd) {
                const std::int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
                if (id < 0 || id >= g.in[0]) continue;
                for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh) {
                  const std::int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
                  if (ih < 0 || ih >= g.in[1]) continue;
                  for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                    const std::int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
                    if (iw < 0 || iw >= g.in[2]) continue;
                    const std::int64_t wv = wc[(kd * g.kernel[1] + kh) * g.kernel[2] + kw];
                    const std::int64_t xv = xc[(id * g.in[1] + ih) * g.in[2] + iw];
                    sum += static_cast<std::uint32_t>((wv - zw) * (xv - xz));
                  }
                }
              }
            }
            ym[o] = static_cast<TY>(requantize(static_cast<std::int32_t>(sum), b, km, yz, lo, hi));
          }
    }
}

// a [rows x depth] * b [depth x cols] (b: the weight, transposed for Gemm with transB).
template <class TA, class TB, class TY>
inline void matmul(const TA* a, std::int32_t az, const TB* b, const std::int32_t* bz, bool bz_per_column,
                   const std::int32_t* bias, const Requant* k, bool k_per_column, std::int32_t yz, std::int32_t lo,
                   std::int32_t hi, std::int64_t rows, std::int64_t depth, std::int64_t cols, TY* y) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::int64_t zb = bz[bz_per_column ? j : 0];
      std::uint32_t sum = 0;
      for (std::int64_t d = 0; d < depth; ++d)
        sum += static_cast<std::uint32_t>((static_cast<std::int64_t>(a[i * depth + d]) - az) *
                                          (static_cast<std::int64_t>(b[d * cols + j]) - zb));
      y[i * cols + j] = static_cast<TY>(
          requantize(static_cast<std::int32_t>(sum), bias ? bias[j] : 0, k[k_per_column ? j : 0], yz, lo, hi));
    }
}

// TFLite's Add: both inputs shifted left by 20 and rescaled to 2 max(s_a, s_b), added,
// rescaled to the output. Broadcast with element strides sa, sb (0 along broadcast axes).
template <class TA, class TB, class TY>
inline void add(const TA* a, std::int32_t az, const Requant& ka, const TB* b, std::int32_t bz, const Requant& kb,
                const Requant& ko, std::int32_t yz, std::int32_t lo, std::int32_t hi, int rank,
                const std::int64_t* shape, const std::int64_t* sa, const std::int64_t* sb, TY* y) {
  std::int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= shape[d];
  for (std::int64_t o = 0; o < total; ++o) {
    std::int64_t rest = o, ia = 0, ib = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const std::int64_t i = rest % shape[d];
      rest /= shape[d];
      ia += i * sa[d];
      ib += i * sb[d];
    }
    const std::int32_t av = apply((static_cast<std::int32_t>(a[ia]) - az) * (1 << 20), ka);
    const std::int32_t bv = apply((static_cast<std::int32_t>(b[ib]) - bz) * (1 << 20), kb);
    y[o] = static_cast<TY>(requantize(av + bv, 0, ko, yz, lo, hi));
  }
}

template <class TX, class TY>
inline void max_pool(const TX* x, std::int64_t planes, const Window& g, std::int32_t xz, bool exact, const Requant& k,
                     std::int32_t yz, std::int32_t lo, std::int32_t hi, TY* y) {
  const std::int64_t in_size = g.in[0] * g.in[1] * g.in[2];
  std::int64_t o = 0;
  for (std::int64_t p = 0; p < planes; ++p) {
    const TX* src = x + p * in_size;
    for (std::int64_t od = 0; od < g.out[0]; ++od)
      for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
        for (std::int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          TX best = std::numeric_limits<TX>::lowest();  // stays so for a window outside the input
          bool found = false;
          for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd) {
            const std::int64_t d = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
            if (d < 0 || d >= g.in[0]) continue;
            for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh) {
              const std::int64_t h = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
              if (h < 0 || h >= g.in[1]) continue;
              for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                const std::int64_t w = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
                if (w < 0 || w >= g.in[2]) continue;
                const TX v = src[(d * g.in[1] + h) * g.in[2] + w];
                if (!found || v > best) best = v;
                found = true;
              }
            }
          }
          y[o] = rescale_value<TX, TY>(best, xz, exact, k, yz, lo, hi);
        }
  }
}

// Sum of (x - xz) over each window, rescaled by s_x / (s_y * count): k[count].
template <class TX, class TY>
inline void average_pool(const TX* x, std::int64_t planes, const Window& g, bool include_pad, std::int32_t xz,
                         const Requant* k, std::int32_t yz, std::int32_t lo, std::int32_t hi, TY* y) {
  const std::int64_t in_size = g.in[0] * g.in[1] * g.in[2];
  std::int64_t o = 0;
  for (std::int64_t p = 0; p < planes; ++p) {
    const TX* src = x + p * in_size;
    for (std::int64_t od = 0; od < g.out[0]; ++od)
      for (std::int64_t oh = 0; oh < g.out[1]; ++oh)
        for (std::int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          std::int64_t sum = 0, inside = 0, padded = 0;
          for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd) {
            const std::int64_t d = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
            if (d >= g.in[0] + g.pad_end[0]) continue;
            const bool din = d >= 0 && d < g.in[0];
            for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh) {
              const std::int64_t h = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
              if (h >= g.in[1] + g.pad_end[1]) continue;
              const bool hin = h >= 0 && h < g.in[1];
              for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                const std::int64_t w = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
                if (w >= g.in[2] + g.pad_end[2]) continue;
                ++padded;
                if (din && hin && w >= 0 && w < g.in[2]) {
                  sum += static_cast<std::int64_t>(src[(d * g.in[1] + h) * g.in[2] + w]) - xz;
                  ++inside;
                }
              }
            }
          }
          y[o] = static_cast<TY>(requantize(static_cast<std::int32_t>(sum), 0, k[include_pad ? padded : inside], yz, lo, hi));
        }
  }
}

// One input of a Concat: `outer` chunks of `chunk` values, written at `offset` of each output
// chunk of `out_chunk` values, rescaled to the output.
template <class TX, class TY>
inline void concat_part(const TX* x, std::int64_t outer, std::int64_t chunk, std::int64_t out_chunk,
                        std::int64_t offset, std::int32_t xz, bool exact, const Requant& k, std::int32_t yz,
                        std::int32_t lo, std::int32_t hi, TY* y) {
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < chunk; ++j)
      y[o * out_chunk + offset + j] = rescale_value<TX, TY>(x[o * chunk + j], xz, exact, k, yz, lo, hi);
}
)";

inline const char* type_name(graph::DType t) {
  switch (t) {
    case graph::DType::int8: return "std::int8_t";
    case graph::DType::uint8: return "std::uint8_t";
    case graph::DType::int32: return "std::int32_t";
    default: break;
  }
  return "?";
}

inline std::string float_literal(float v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", static_cast<double>(v));
  std::string s = b;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s + "f";
}

inline bool is_keyword(const std::string& s) {
  static const std::set<std::string> k = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "namespace", "new", "not",
      "nullptr", "operator", "or", "private", "protected", "public", "register", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try", "typedef", "typename",
      "union", "unsigned", "using", "virtual", "void", "volatile", "while", "xor", "detail", "infer", "Workspace",
      "std", "workspace", "arena"};
  return k.count(s) != 0;
}

// A C++ identifier made of `name` (letters, digits and single underscores), unique in `used`.
inline std::string identifier(const std::string& name, std::set<std::string>& used) {
  std::string s;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) s += c;
    else if (!s.empty() && s.back() != '_') s += '_';
  }
  while (!s.empty() && s.back() == '_') s.pop_back();
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) s = "v" + s;
  if (is_keyword(s)) s += "_";
  std::string u = s;
  for (int k = 2; used.count(u); ++k) u = s + "_" + std::to_string(k);
  used.insert(u);
  return u;
}

inline void check_namespace(const std::string& ns) {
  std::set<std::string> none;
  std::size_t start = 0;
  bool ok = !ns.empty();
  while (ok && start <= ns.size()) {
    const std::size_t end = std::min(ns.find("::", start), ns.size());
    const std::string part = ns.substr(start, end - start);
    std::set<std::string> fresh;
    ok = !part.empty() && identifier(part, fresh) == part;
    start = end + 2;
  }
  if (!ok)
    quantkit::detail::fail("cpp_export::Options: name_space '", ns,
                           "' is not a C++ namespace name; expected identifiers joined by ::, e.g. 'model' or 'app::net'");
}

// Integer list as a C++ initializer, 24 values a line.
template <class T>
std::string int_list(const std::vector<T>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i % 24 == 0 && v.size() > 24) s += "\n    ";
    s += std::to_string(static_cast<long long>(v[i]));
    if (i + 1 < v.size()) s += ",";
    if (v.size() <= 24 && i + 1 < v.size()) s += " ";
  }
  return s + "}";
}

template <class T>
std::string int_list3(const std::array<T, 3>& v) {
  return "{" + std::to_string(static_cast<long long>(v[0])) + ", " + std::to_string(static_cast<long long>(v[1])) +
         ", " + std::to_string(static_cast<long long>(v[2])) + "}";
}

inline std::string window_code(const ops::WindowGeometry& g) {
  return "{" + int_list3(g.in) + ", " + int_list3(g.out) + ", " + int_list3(g.kernel) + ", " + int_list3(g.stride) +
         ", " + int_list3(g.dilation) + ", " + int_list3(g.pad_begin) + ", " + int_list3(g.pad_end) + "}";
}

inline std::vector<std::int64_t> tensor_ints(const graph::Tensor& t) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(t.size()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = t.as_int64(static_cast<std::int64_t>(i));
  return v;
}

// Arena offsets: values live from their producer to their last reader; first fit, 16-byte
// aligned, no overlap between values alive at the same time (a node's inputs and outputs
// included).
struct Buffer {
  std::string value;
  std::size_t bytes = 0, offset = 0;
  std::size_t first = 0, last = 0;  // positions in execution order
};
inline std::size_t assign_offsets(std::vector<Buffer>& buffers) {
  std::size_t total = 0;
  std::vector<const Buffer*> placed;
  for (auto& b : buffers) {
    std::vector<std::pair<std::size_t, std::size_t>> busy;
    for (const Buffer* p : placed)
      if (!(p->last < b.first || b.last < p->first)) busy.emplace_back(p->offset, p->offset + p->bytes);
    std::sort(busy.begin(), busy.end());
    std::size_t at = 0;
    for (const auto& r : busy) {
      if (at + b.bytes <= r.first) break;
      at = std::max(at, (r.second + 15) / 16 * 16);
    }
    b.offset = at;
    total = std::max(total, at + b.bytes);
    placed.push_back(&b);
  }
  return total;
}

}  // namespace detail

// The header's text. Errors name the node (and why it is not integer) or the option.
template <class Scheme = FixedPointDoubleRounding>
std::string generate(const graph::Graph& qdq, const Options& opt = {}, Report* report = nullptr) {
  using Code = detail::SchemeCode<Scheme>;
  using graph::DType;
  detail::check_namespace(opt.name_space);
  const integer::TracedGraph t = integer::trace<Scheme>(qdq, opt.input_shapes);
  const graph::Graph& g = t.graph;
  {
    std::string floats;
    for (const auto& r : t.report)
      if (!r.integer) floats += "\n  " + r.node + " (" + r.op_type + "): " + r.detail;
    if (!floats.empty())
      g.fail("cpp_export: these nodes would stay float, and infer() is integer-only:", floats,
             "\n(expected every compute node quantized with per-tensor int8/uint8 activations and a multiplier the "
             "scheme can express; see quantkit::analysis::requant_report for the scheme)");
  }
  // The generated code holds 8-bit activations: a 16-bit zero point marks 16-bit values.
  for (const auto& kv : g.initializers)
    if (kv.second.dtype() == DType::int16 || kv.second.dtype() == DType::uint16)
      g.fail("cpp_export: '", kv.first, "' is ", graph::to_string(kv.second.dtype()),
             ": 16-bit activations are not exported; expected int8/uint8 activations (run them with "
             "Executor<IntegerMode>, or quantize those nodes with 8 bits)");
  Report rep;
  std::set<std::string> used;
  std::map<std::string, std::string> pointer;  // integer value -> C++ expression of its buffer
  std::map<std::string, std::size_t> input_of_value;
  const auto consumers = g.consumers();
  const auto producers = g.producers();

  // Ports: graph input -> QuantizeLinear; DequantizeLinear -> graph output.
  auto per_tensor = [&](const graph::Node& n, Port& p) {
    const graph::Tensor* s = g.initializers.count(n.inputs.at(1)) ? &g.initializers.at(n.inputs[1]) : nullptr;
    const graph::Tensor* z = n.has_input(2) && g.initializers.count(n.inputs[2]) ? &g.initializers.at(n.inputs[2]) : nullptr;
    if (!s || s->size() != 1 || s->dtype() != DType::float32 || (n.has_input(2) && (!z || z->size() != 1)))
      n.fail("cpp_export: expected a per-tensor scale and zero point (initializers)");
    p.scale = s->data<float>()[0];
    p.zero_point = z ? static_cast<std::int32_t>(z->as_int64(0)) : 0;
    p.type = z ? z->dtype() : DType::uint8;
    if (p.type != DType::int8 && p.type != DType::uint8) n.fail("cpp_export: expected int8 or uint8 values");
  };
  std::set<std::size_t> port_nodes;
  for (const auto& in : g.inputs) {
    auto c = consumers.find(in.name);
    if (c == consumers.end() || c->second.size() != 1 || g.nodes[c->second[0]].op_type != "QuantizeLinear")
      g.fail("cpp_export: graph input '", in.name, "' is not read by exactly one QuantizeLinear; expected the "
             "quantized model's input to be quantized first (and read by nothing else)");
    const graph::Node& q = g.nodes[c->second[0]];
    Port p;
    p.name = in.name;
    p.identifier = detail::identifier(in.name, used);
    per_tensor(q, p);
    p.shape = t.input_shapes.at(in.name);
    pointer[q.outputs.at(0)] = p.identifier;
    port_nodes.insert(c->second[0]);
    rep.inputs.push_back(p);
  }
  std::set<std::string> output_values;
  for (const auto& out : g.outputs) {
    auto pr = producers.find(out.name);
    if (pr == producers.end() || g.nodes[pr->second].op_type != "DequantizeLinear")
      g.fail("cpp_export: graph output '", out.name, "' is not written by a DequantizeLinear; expected the quantized "
             "model's outputs to be dequantized integers");
    const graph::Node& d = g.nodes[pr->second];
    Port p;
    p.name = out.name;
    p.identifier = detail::identifier(out.name, used);
    per_tensor(d, p);
    const std::string& v = d.inputs.at(0);
    if (pointer.count(v) || !output_values.insert(v).second)
      d.fail("cpp_export: value '", v, "' is also a graph input or another output; expected distinct outputs");
    p.shape = t.value(v, d).shape();
    pointer[v] = p.identifier;
    port_nodes.insert(pr->second);
    rep.outputs.push_back(p);
  }

  // The integer nodes in execution order, and their buffers.
  std::vector<std::size_t> order;
  for (std::size_t idx : g.topological_order()) {
    if (port_nodes.count(idx)) continue;
    const graph::Node& n = g.nodes[idx];
    if (n.domain != integer::kDomain)
      n.fail("cpp_export: op ", n.op_type, " is left between the integer ops; expected only QuantizeLinear after the "
             "graph inputs and DequantizeLinear before the outputs");
    order.push_back(idx);
  }
  std::vector<detail::Buffer> buffers;
  std::map<std::string, std::size_t> buffer_of;
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    const graph::Node& n = g.nodes[order[pos]];
    for (const auto& in : n.inputs) {
      auto b = buffer_of.find(in);
      if (b != buffer_of.end()) buffers[b->second].last = pos;
    }
    const std::string& v = n.outputs.at(0);
    if (pointer.count(v)) continue;
    detail::Buffer b;
    b.value = v;
    b.bytes = t.value(v, n).nbytes();
    b.first = b.last = pos;
    buffer_of[v] = buffers.size();
    buffers.push_back(b);
  }
  rep.workspace_bytes = detail::assign_offsets(buffers);
  for (const auto& b : buffers) {
    const DType type = t.values.at(b.value).dtype();
    pointer[b.value] = "reinterpret_cast<" + std::string(detail::type_name(type)) + "*>(ws.arena + " +
                       std::to_string(b.offset) + ")";
  }
  auto ptr = [&](const std::string& v, const graph::Node& n) -> std::string {
    auto it = pointer.find(v);
    if (it == pointer.end()) n.fail("cpp_export: input '", v, "' has no buffer (not produced by an integer op)");
    return it->second;
  };

  // Per node: constants (namespace detail) and the call (infer()).
  std::string data, calls;
  auto add_data = [&](const std::string& decl, std::size_t bytes) {
    data += decl;
    rep.parameter_bytes += bytes;
  };
  auto requant_array = [&](const std::string& id, const std::vector<std::string>& ks) {
    std::string s = "inline constexpr Requant " + id + "[" + std::to_string(ks.size()) + "] = {";
    for (std::size_t i = 0; i < ks.size(); ++i) s += (i % 8 == 0 && ks.size() > 8 ? "\n    " : "") + ks[i] + (i + 1 < ks.size() ? ", " : "");
    add_data(s + "};\n", ks.size() * sizeof(typename Scheme::Constants));
  };
  auto make = [&](double m, const std::string& layer) { return Code::constants(Scheme::make(m, layer)); };
  const std::string zero_k = Code::constants(typename Scheme::Constants{});
  for (std::size_t idx : order) {
    const graph::Node& n = g.nodes[idx];
    const std::string layer = n.name.empty() ? n.outputs.at(0) : n.name;
    const std::string id = detail::identifier(layer, used);
    rep.layers.push_back(layer + ": " + n.op_type);
    OpContext ctx(n, g.opset, {});
    const graph::Tensor& y = t.value(n.outputs.at(0), n);
    const IntRange clamp = integer::detail::clamp_of(ctx, y.dtype());
    const std::string yz = std::to_string(t.initializer(n.inputs.at(n.op_type == "IntConcat" ? n.inputs.size() - 1 :
                                                                    (n.op_type == "IntConv" || n.op_type == "IntMatMul" ||
                                                                     n.op_type == "IntAdd") ? 7 :
                                                                    n.op_type == "IntReshape" ? 5 : 4), n).as_int64(0));
    const std::string tail = yz + ", " + std::to_string(clamp.qmin) + ", " + std::to_string(clamp.qmax);
    const auto ms = integer::real_multipliers<Scheme>(t, n);
    auto zp = [&](std::size_t i) { return std::to_string(t.initializer(n.inputs.at(i), n).as_int64(0)); };
    calls += "  // " + layer + ": " + n.op_type + " -> " + n.outputs[0] + " " + y.shape().to_string() + "\n";
    const std::string out = ptr(n.outputs[0], n);
    const std::string& op = n.op_type;
    if (op == "IntConv" || op == "IntMatMul") {
      const graph::Tensor& w = t.initializer(n.inputs.at(3), n);
      const graph::Tensor& wz = t.initializer(n.inputs.at(5), n);
      std::vector<std::string> ks;
      for (const auto& m : ms) ks.push_back(make(m.value, layer));
      add_data("inline constexpr " + std::string(detail::type_name(w.dtype())) + " w_" + id + "[" +
                   std::to_string(w.size()) + "] = " + detail::int_list(detail::tensor_ints(w)) + ";\n",
               w.nbytes());
      add_data("inline constexpr std::int32_t wz_" + id + "[" + std::to_string(wz.size()) + "] = " +
                   detail::int_list(detail::tensor_ints(wz)) + ";\n",
               static_cast<std::size_t>(wz.size()) * 4);
      requant_array("k_" + id, ks);
      std::string bias = "nullptr";
      if (n.has_input(8)) {
        const graph::Tensor& b = t.initializer(n.inputs[8], n);
        add_data("inline constexpr std::int32_t b_" + id + "[" + std::to_string(b.size()) + "] = " +
                     detail::int_list(detail::tensor_ints(b)) + ";\n",
                 b.nbytes());
        bias = "detail::b_" + id;
      }
      const std::string common = ptr(n.inputs[0], n) + ", " + zp(2) + ", detail::w_" + id + ", detail::wz_" + id + ", " +
                                 (wz.size() > 1 ? "true" : "false") + ", " + bias + ", detail::k_" + id + ", " +
                                 (ks.size() > 1 ? "true" : "false") + ", " + tail;
      if (op == "IntConv") {
        const graph::Tensor& x = t.value(n.inputs[0], n);
        OpContext gctx(n, g.opset, {&x, &w});
        const std::int64_t group = n.attr_int("group", 1);
        const ops::WindowGeometry geo = ops::conv_geometry(gctx, x.shape(), w.shape(), group);
        add_data("inline constexpr Window win_" + id + " = " + detail::window_code(geo) + ";\n", 21 * 8);
        calls += "  detail::conv(" + common + ", " + std::to_string(x.dim(0)) + ", " + std::to_string(x.dim(1)) + ", " +
                 std::to_string(w.dim(0)) + ", " + std::to_string(group) + ", detail::win_" + id + ", " + out + ");\n";
      } else {
        const graph::Tensor& a = t.value(n.inputs[0], n);
        const std::int64_t depth = w.dim(0), cols = w.dim(1);
        calls += "  detail::matmul(" + common + ", " + std::to_string(a.size() / std::max<std::int64_t>(depth, 1)) + ", " +
                 std::to_string(depth) + ", " + std::to_string(cols) + ", " + out + ");\n";
      }
    } else if (op == "IntAdd") {
      const graph::Tensor& a = t.value(n.inputs[0], n);
      const graph::Tensor& b = t.value(n.inputs[3], n);
      if (ms.size() != 3) n.fail("cpp_export: expected three multipliers");
      requant_array("k_" + id, {make(ms[0].value, layer), make(ms[1].value, layer), make(ms[2].value, layer)});
      const Dims os = y.shape();
      const Dims sa = ops::broadcast_strides(a.shape(), os), sb = ops::broadcast_strides(b.shape(), os);
      std::vector<std::int64_t> shape(os.value.begin(), os.value.begin() + os.rank), va(sa.value.begin(), sa.value.begin() + sa.rank),
          vb(sb.value.begin(), sb.value.begin() + sb.rank);
      if (shape.empty()) shape = va = vb = {1};
      if (va.empty()) va = {0};
      if (vb.empty()) vb = {0};
      const std::string r = std::to_string(shape.size());
      add_data("inline constexpr std::int64_t shape_" + id + "[" + r + "] = " + detail::int_list(shape) + ";\n" +
                   "inline constexpr std::int64_t sa_" + id + "[" + r + "] = " + detail::int_list(va) + ";\n" +
                   "inline constexpr std::int64_t sb_" + id + "[" + r + "] = " + detail::int_list(vb) + ";\n",
               shape.size() * 24);
      calls += "  detail::add(" + ptr(n.inputs[0], n) + ", " + zp(2) + ", detail::k_" + id + "[0], " + ptr(n.inputs[3], n) +
               ", " + zp(5) + ", detail::k_" + id + "[1], detail::k_" + id + "[2], " + tail + ", " + r + ", detail::shape_" +
               id + ", detail::sa_" + id + ", detail::sb_" + id + ", " + out + ");\n";
    } else if (op == "IntRequantize" || op == "IntFlatten" || op == "IntReshape" || op == "IntMaxPool") {
      const std::size_t q = op == "IntReshape" ? 2 : 1;
      const bool exact = ms.empty();
      requant_array("k_" + id, {exact ? zero_k : make(ms[0].value, layer)});
      const graph::Tensor& x = t.value(n.inputs[0], n);
      const std::string rescale = zp(q + 1) + ", " + (exact ? "true" : "false") + ", detail::k_" + id + "[0], " + tail;
      if (op == "IntMaxPool") {
        OpContext gctx(n, g.opset, {&x});
        const ops::WindowGeometry geo = ops::detail::pool_geometry(gctx, x.shape());
        add_data("inline constexpr Window win_" + id + " = " + detail::window_code(geo) + ";\n", 21 * 8);
        calls += "  detail::max_pool(" + ptr(n.inputs[0], n) + ", " + std::to_string(x.dim(0) * x.dim(1)) + ", detail::win_" +
                 id + ", " + rescale + ", " + out + ");\n";
      } else {
        calls += "  detail::rescale(" + ptr(n.inputs[0], n) + ", " + std::to_string(x.size()) + ", " + rescale + ", " + out +
                 ");\n";
      }
    } else if (op == "IntAveragePool" || op == "IntGlobalAveragePool") {
      const graph::Tensor& x = t.value(n.inputs[0], n);
      const ops::WindowGeometry geo = integer::detail::pool_window(t, n);
      std::vector<std::string> ks(static_cast<std::size_t>(geo.kernel_size() + 1), zero_k);
      for (const auto& m : ms) ks.at(static_cast<std::size_t>(m.index)) = make(m.value, layer);
      requant_array("k_" + id, ks);
      add_data("inline constexpr Window win_" + id + " = " + detail::window_code(geo) + ";\n", 21 * 8);
      const bool include_pad = op == "IntAveragePool" && n.attr_int("count_include_pad", 0) != 0;
      calls += "  detail::average_pool(" + ptr(n.inputs[0], n) + ", " + std::to_string(x.dim(0) * x.dim(1)) +
               ", detail::win_" + id + ", " + (include_pad ? "true" : "false") + ", " + zp(2) + ", detail::k_" + id + ", " +
               tail + ", " + out + ");\n";
    } else if (op == "IntConcat") {
      const int axis = ops::normalize_axis(ctx, n.attr_int("axis", 1), y.rank());
      const std::int64_t outer = ops::product(y.shape(), 0, axis), out_chunk = ops::product(y.shape(), axis, y.rank());
      const IntRange full = integer::detail::range_of(y.dtype());
      std::int64_t offset = 0;
      std::vector<std::string> ks;
      for (std::size_t i = 0; i + 2 < n.inputs.size(); i += 3) {
        const std::int64_t part = static_cast<std::int64_t>(i / 3);
        bool exact = true;
        for (const auto& m : ms)
          if (m.index == part) {
            ks.push_back(make(m.value, layer));
            exact = false;
          }
        if (exact) ks.push_back(zero_k);
        const graph::Tensor& x = t.value(n.inputs[i], n);
        const std::int64_t chunk = ops::product(x.shape(), axis, x.rank());
        calls += "  detail::concat_part(" + ptr(n.inputs[i], n) + ", " + std::to_string(outer) + ", " + std::to_string(chunk) +
                 ", " + std::to_string(out_chunk) + ", " + std::to_string(offset) + ", " + zp(i + 2) + ", " +
                 (exact ? "true" : "false") + ", detail::k_" + id + "[" + std::to_string(part) + "], " + yz + ", " +
                 std::to_string(full.qmin) + ", " + std::to_string(full.qmax) + ", " + out + ");\n";
        offset += chunk;
      }
      requant_array("k_" + id, ks);
    } else {
      n.fail("cpp_export: integer op ", op, " has no code generator");
    }
  }

  // The header.
  const bool standalone = opt.runtime == Runtime::standalone;
  std::string h;
  h += "// Generated by quantkit (quantkit::cpp_export) from " +
       (opt.source.empty() ? (qdq.source.empty() ? std::string("a QDQ graph") : "'" + qdq.source + "'") : opt.source) +
       ".\n// Integer-only inference; requantization: " + Code::name + ".\n// Runtime: " +
       (standalone ? "the C++17 standard library only." : "quantkit's reference headers (quantkit/ref/).") +
       " Do not edit: regenerate it.\n";
  for (const auto& p : rep.inputs)
    h += "// input  " + p.identifier + ": " + detail::type_name(p.type) + " " + p.shape.to_string() + " ('" + p.name + "')\n";
  for (const auto& p : rep.outputs)
    h += "// output " + p.identifier + ": " + detail::type_name(p.type) + " " + p.shape.to_string() + " ('" + p.name + "')\n";
  h += "#pragma once\n\n#include <cstddef>\n#include <cstdint>\n#include <limits>\n";
  if (standalone) h += "#include <cmath>\n";
  else h += "\n#include \"quantkit/ref/quantize.hpp\"\n#include \"quantkit/ref/requantize.hpp\"\n";
  h += "\nnamespace " + opt.name_space + " {\nnamespace detail {\n\n";
  if (standalone) {
    h += Code::standalone();
    h += R"(inline std::int32_t requantize(std::int32_t acc, std::int32_t bias, const Requant& k, std::int32_t zp,
                               std::int32_t lo, std::int32_t hi) {
  const std::int64_t s = static_cast<std::int64_t>(acc) + bias;
  const std::int32_t v = s > INT32_MAX ? INT32_MAX : (s < INT32_MIN ? INT32_MIN : static_cast<std::int32_t>(s));
  const std::int64_t r = static_cast<std::int64_t>(apply(v, k)) + zp;
  return static_cast<std::int32_t>(r < lo ? lo : (r > hi ? hi : r));
}
// ONNX QuantizeLinear: round_half_even(x / scale) + zero point, saturated; NaN -> zero point.
inline std::int32_t quantize_value(float x, float scale, std::int32_t zp, std::int32_t qmin, std::int32_t qmax) {
  if (std::isnan(x)) return zp;
  const float t = x / scale, f = std::floor(t), d = t - f;
  const float r = d > 0.5f ? f + 1.0f : (d < 0.5f ? f : (std::fmod(f, 2.0f) == 0.0f ? f : f + 1.0f));
  const double v = static_cast<double>(r) + zp;
  return static_cast<std::int32_t>(v < qmin ? qmin : (v > qmax ? qmax : v));
}
)";
  } else {
    h += "using Scheme = " + std::string(Code::quantkit_type) + ";\nusing Requant = Scheme::Constants;\n";
    h += R"(inline std::int32_t apply(std::int32_t acc, const Requant& k) { return Scheme::apply(acc, k); }
inline std::int32_t requantize(std::int32_t acc, std::int32_t bias, const Requant& k, std::int32_t zp,
                               std::int32_t lo, std::int32_t hi) {
  return quantkit::ref::requantize_value<Scheme>(acc, bias, k, zp, lo, hi);
}
inline std::int32_t quantize_value(float x, float scale, std::int32_t zp, std::int32_t qmin, std::int32_t qmax) {
  return quantkit::ref::quantize_value(x, scale, quantkit::ScaleApplicationKind::divide, zp,
                                       quantkit::IntRange{qmin, qmax}, quantkit::RoundHalfEven{});
}
)";
  }
  h += "\n";
  h += detail::kKernels;
  h += "\n// Weights, biases and requantization constants.\n" + data;
  h += "\n}  // namespace detail\n\n";
  for (const auto& p : rep.inputs) {
    const IntRange r = integer::detail::range_of(p.type);
    h += "inline constexpr std::size_t " + p.identifier + "_size = " + std::to_string(p.shape.product()) + ";  // " +
         p.shape.to_string() + "\ninline constexpr float " + p.identifier + "_scale = " + detail::float_literal(p.scale) +
         ";\ninline constexpr std::int32_t " + p.identifier + "_zero_point = " + std::to_string(p.zero_point) +
         ";\nusing " + p.identifier + "_type = " + detail::type_name(p.type) + ";\n";
    h += "// " + p.identifier + " as the model's QuantizeLinear computes it.\ninline void quantize_" + p.identifier +
         "(const float* x, " + p.identifier + "_type* q) {\n  for (std::size_t i = 0; i < " + p.identifier +
         "_size; ++i)\n    q[i] = static_cast<" + p.identifier + "_type>(detail::quantize_value(x[i], " + p.identifier +
         "_scale, " + p.identifier + "_zero_point, " + std::to_string(r.qmin) + ", " + std::to_string(r.qmax) + "));\n}\n\n";
  }
  for (const auto& p : rep.outputs) {
    h += "inline constexpr std::size_t " + p.identifier + "_size = " + std::to_string(p.shape.product()) + ";  // " +
         p.shape.to_string() + "\ninline constexpr float " + p.identifier + "_scale = " + detail::float_literal(p.scale) +
         ";\ninline constexpr std::int32_t " + p.identifier + "_zero_point = " + std::to_string(p.zero_point) +
         ";\nusing " + p.identifier + "_type = " + detail::type_name(p.type) + ";\n";
    h += "// " + p.identifier + " as the model's DequantizeLinear computes it.\ninline void dequantize_" + p.identifier +
         "(const " + p.identifier + "_type* q, float* y) {\n  for (std::size_t i = 0; i < " + p.identifier +
         "_size; ++i)\n    y[i] = static_cast<float>(static_cast<std::int32_t>(q[i]) - " + p.identifier +
         "_zero_point) * " + p.identifier + "_scale;\n}\n\n";
  }
  h += "// The activations, reused by lifetime.\nstruct Workspace {\n  alignas(16) unsigned char arena[" +
       std::to_string(std::max<std::size_t>(rep.workspace_bytes, 1)) + "];\n};\n\n";
  std::string params, args;
  for (const auto& p : rep.inputs) {
    params += "const " + p.identifier + "_type* " + p.identifier + ", ";
    args += p.identifier + ", ";
  }
  for (const auto& p : rep.outputs) {
    params += p.identifier + "_type* " + p.identifier + ", ";
    args += p.identifier + ", ";
  }
  h += "// Integer-only inference of one input" + std::string(rep.inputs.size() > 1 ? " set" : "") +
       " (shapes above).\ninline void infer(" + params + "Workspace& ws) {\n  (void)ws;\n" + calls + "}\n\n";
  h += "// The same with a static workspace (not reentrant).\ninline void infer(" + params.substr(0, params.size() - 2) +
       ") {\n  static Workspace ws;\n  infer(" + args + "ws);\n}\n\n}  // namespace " + opt.name_space + "\n";
  if (report) *report = rep;
  return h;
}

// Writes the header atomically (nothing is left at `path` on error).
template <class Scheme = FixedPointDoubleRounding>
Report write(const graph::Graph& qdq, const std::string& path, const Options& opt = {}) {
  Report rep;
  std::string text;
  try {
    text = generate<Scheme>(qdq, opt, &rep);
  } catch (const Error& e) {
    const std::string what = e.what();
    quantkit::detail::fail("writing '", path, "': ", what.compare(0, 10, "quantkit: ") == 0 ? what.substr(10) : what);
  }
  io::write_file_atomically(path, text);
  return rep;
}

// The same with the scheme chosen at run time (a command line's --scheme): fixed_point,
// fixed_point_single, single_shift or double_shift; others are an error naming the scheme.
inline std::string generate(const graph::Graph& qdq, RequantScheme scheme, const Options& opt = {},
                            Report* report = nullptr) {
  switch (scheme) {
    case RequantScheme::fixed_point: return generate<FixedPointDoubleRounding>(qdq, opt, report);
    case RequantScheme::fixed_point_single: return generate<FixedPointSingleRounding>(qdq, opt, report);
    case RequantScheme::single_shift: return generate<SingleShift>(qdq, opt, report);
    case RequantScheme::double_shift: return generate<DoubleShift>(qdq, opt, report);
    default: break;
  }
  quantkit::detail::fail("cpp_export: requantization scheme '", to_string(scheme),
                         "' cannot be exported; expected fixed-point, fixed-point-single, single-shift or double-shift");
}
inline Report write(const graph::Graph& qdq, const std::string& path, RequantScheme scheme, const Options& opt = {}) {
  switch (scheme) {
    case RequantScheme::fixed_point: return write<FixedPointDoubleRounding>(qdq, path, opt);
    case RequantScheme::fixed_point_single: return write<FixedPointSingleRounding>(qdq, path, opt);
    case RequantScheme::single_shift: return write<SingleShift>(qdq, path, opt);
    case RequantScheme::double_shift: return write<DoubleShift>(qdq, path, opt);
    default: break;
  }
  quantkit::detail::fail("writing '", path, "': requantization scheme '", to_string(scheme),
                         "' cannot be exported; expected fixed-point, fixed-point-single, single-shift or double-shift");
}

}  // namespace cpp_export
}  // namespace quantkit
