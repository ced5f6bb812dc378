// Option parsing, .npy data files, outputs and the progress bar shared by the subcommands.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "quantkit/io/npy.hpp"

namespace quantkit {
namespace cli {

namespace fs = std::filesystem;

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t lo, std::int64_t hi) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    usage_fail(option, " '", text, "': not an integer; expected an integer in [", lo, ", ", hi, "]");
  if (v < lo || v > hi) usage_fail(option, " ", v, ": expected an integer in [", lo, ", ", hi, "]");
  return v;
}

double parse_double(const std::string& option, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v))
    usage_fail(option, " '", text, "': not a number; expected a finite number");
  return v;
}

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::size_t start = 0;
    while (start <= item.size()) {
      const std::size_t comma = item.find(',', start);
      const std::string part = item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!part.empty()) out.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

ObserverSpec parse_observer(const std::string& option, const std::string& text) {
  ObserverSpec s;
  s.text = text;
  const std::size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const bool has_arg = colon != std::string::npos;
  const std::string arg = has_arg ? text.substr(colon + 1) : std::string();
  auto no_arg = [&] {
    if (has_arg) usage_fail(option, " '", text, "': observer '", kind, "' takes no parameter");
  };
  if (kind == "minmax") {
    no_arg();
    s.kind = ObserverKind::minmax;
  } else if (kind == "moving-average") {
    s.kind = ObserverKind::moving_average;
    if (has_arg) {
      s.averaging_constant = parse_double(option, arg);
      if (!(s.averaging_constant > 0 && s.averaging_constant <= 1))
        usage_fail(option, " '", text, "': averaging constant ", arg, "; expected a value in (0, 1] (default 0.01)");
    }
  } else if (kind == "percentile") {
    s.kind = ObserverKind::percentile;
    if (!has_arg) usage_fail(option, " '", text, "': expected percentile:P with P in (0, 100], e.g. percentile:99.99");
    s.percent = parse_double(option, arg);
    if (!(s.percent > 0 && s.percent <= 100))
      usage_fail(option, " '", text, "': percentile ", arg, "; expected P in (0, 100], e.g. percentile:99.99");
  } else if (kind == "histogram") {
    no_arg();
    s.kind = ObserverKind::histogram;
  } else if (kind == "mse") {
    no_arg();
    s.kind = ObserverKind::mse;
  } else if (kind == "kl") {
    no_arg();
    s.kind = ObserverKind::kl;
  } else if (kind == "auto") {
    no_arg();
    s.kind = ObserverKind::automatic;
  } else if (kind == "mix") {
    no_arg();
    s.kind = ObserverKind::mix;
  } else {
    usage_fail(option, " '", text,
               "': unknown observer; expected minmax, moving-average[:C], percentile:P, histogram, mse, kl, auto or mix");
  }
  return s;
}

ScaleKind parse_scale(const std::string& option, const std::string& text) {
  if (text == "float") return ScaleKind::float_multiplier;
  if (text == "pow2") return ScaleKind::pow2;
  if (text == "fixed-point") return ScaleKind::fixed_point;
  if (text == "single-shift") return ScaleKind::single_shift;
  if (text == "double-shift") return ScaleKind::double_shift;
  usage_fail(option, " '", text,
             "': unknown requantization scheme; expected float, pow2, fixed-point, single-shift or double-shift");
}

const char* to_string(ScaleKind s) {
  switch (s) {
    case ScaleKind::float_multiplier: return "float";
    case ScaleKind::pow2: return "pow2";
    case ScaleKind::fixed_point: return "fixed-point";
    case ScaleKind::single_shift: return "single-shift";
    case ScaleKind::double_shift: return "double-shift";
  }
  return "?";
}

Mode parse_mode(const std::string& option, const std::string& text) {
  if (text == "float") return Mode::float_;
  if (text == "fake") return Mode::fake;
  if (text == "int") return Mode::integer;
  usage_fail(option, " '", text, "': unknown mode; expected float, fake or int");
}

const char* to_string(Mode m) {
  switch (m) {
    case Mode::float_: return "float";
    case Mode::fake: return "fake";
    case Mode::integer: return "int";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
const std::vector<std::string>& quantization_option_names() {
  static const std::vector<std::string> names = {
      "--weight-bits", "--act-bits", "--weight-granularity", "--observer",  "--symmetric-activations", "--rounding",
      "--keep-float",  "--int16",    "--cle",                "--bias-correction", "--adaround",          "--reduce-range"};
  return names;
}

void add_quant_options(CLI::App* cmd, QuantOptions& o) {
  cmd->add_option("--calib", o.calib,
                  "calibration data: CALIB.npy for a single-input model, NAME=CALIB.npy per input (repeatable); "
                  "samples along the first axis")
      ->type_name("FILE")
      ->allow_extra_args(false);
  cmd->add_option("--weight-bits", o.weight_bits, "weight bits: 4, 8 or 16 (signed, symmetric)")
      ->type_name("BITS")
      ->capture_default_str();
  cmd->add_option("--act-bits", o.act_bits, "activation bits: 8 or 16")->type_name("BITS")->capture_default_str();
  cmd->add_option("--weight-granularity", o.weight_granularity,
                  "per-channel (Conv: axis 0, Gemm/MatMul: the output axis), per-tensor, or per-group:N "
                  "(blocks of N along the input-channel axis, opset 21)")
      ->type_name("G")
      ->capture_default_str();
  cmd->add_option("--observer", o.observer,
                  "activation observer: minmax, moving-average[:C] (C = 0.01), percentile:P (P in (0, 100], "
                  "e.g. 99.99), histogram (PyTorch L2 search), mse, kl (TensorRT entropy, zero-bin fix), "
                  "auto (best of max / percentile 99.995 / kl by cosine), mix (Horizon's: kl, then for each node whose "
                  "quantization alone drops the output cosine under 0.999, max or percentile 99.995 if better for "
                  "the whole model's output); weights always use min-max")
      ->type_name("OBS")
      ->capture_default_str();
  cmd->add_flag("--reduce-range", o.reduce_range,
                "weights one bit short: int8 [-64, 63] (int16 [-16384, 16383]), as ONNX Runtime's reduce_range; "
                "the model then runs exactly under ONNX Runtime on x86-64 CPUs without VNNI, whose "
                "uint8 x int8 kernels saturate int16 pair sums of full-range 8-bit weights");
  cmd->add_flag("--symmetric-activations", o.symmetric_activations,
                "int8/int16 symmetric activations (zero point 0) instead of uint8/uint16 affine");
  cmd->add_option("--rounding", o.rounding,
                  "weight rounding: half-even, half-away, half-up, floor or toward-zero (activations always "
                  "round half to even, as QuantizeLinear does)")
      ->type_name("R")
      ->capture_default_str();
  cmd->add_option("--keep-float", o.keep_float, "nodes left in float (comma-separated names; quantkit info lists them)")
      ->type_name("NODE,...")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--int16", o.int16, "nodes with 16-bit activations around them (A16W8)")
      ->type_name("NODE,...")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--batch", o.batch, "calibration batch size (samples per executor run)")
      ->type_name("N")
      ->capture_default_str();
  cmd->add_flag("--progress", o.progress, "draw the calibration progress bar even when stderr is not a terminal");
  cmd->add_flag("--cle", o.cle,
                "cross-layer equalization: balance the per-channel weight ranges of Conv/Gemm -> [Relu] -> "
                "Conv/Gemm pairs in the float model before calibrating (helps per-tensor weights)");
  cmd->add_flag("--bias-correction", o.bias_correction,
                "correct each layer's bias by the mean output shift quantization causes on the calibration data");
  cmd->add_flag("--adaround{" + std::to_string(ptq::AdaRoundOptions::default_iterations) + "}", o.adaround,
                "learn the weights' rounding per Conv/Gemm layer on the calibration data (AdaRound); "
                "--adaround=ITERS sets the Adam steps per layer (default " +
                    std::to_string(ptq::AdaRoundOptions::default_iterations) + ")")
      ->type_name("ITERS");
}

bool quant_options_given(const CLI::App* cmd) {
  for (const char* name : {"--calib", "--batch", "--progress"})
    if (cmd->count(name) > 0) return true;
  for (const auto& name : quantization_option_names())
    if (cmd->count(name) > 0) return true;
  return false;
}

static void check_nodes(const std::string& option, const std::vector<std::string>& names, const graph::Graph& g) {
  std::set<std::string> keys;
  for (const auto& n : g.nodes) keys.insert(ptq::node_key(n));
  for (const auto& name : names)
    if (!keys.count(name)) {
      std::string some;
      int shown = 0;
      for (const auto& n : g.nodes) {
        if (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear" || n.op_type == "Constant") continue;
        if (shown++ == 4) {
          some += ", ...";
          break;
        }
        some += (some.empty() ? "'" : ", '") + ptq::node_key(n) + "'";
      }
      usage_fail(option, ": node '", name, "' is not in model '", g.source, "'; expected a node name such as ", some,
                 " (quantkit info lists them)");
    }
}

ptq::PtqConfig make_config(const QuantOptions& o, const graph::Graph& model) {
  ptq::PtqConfig c;
  const std::int64_t wb = parse_int("--weight-bits", o.weight_bits, 1, 64);
  if (wb != 4 && wb != 8 && wb != 16) usage_fail("--weight-bits ", wb, ": expected 4, 8 or 16");
  c.weight_bits = static_cast<int>(wb);
  const std::int64_t ab = parse_int("--act-bits", o.act_bits, 1, 64);
  if (ab != 8 && ab != 16) usage_fail("--act-bits ", ab, ": expected 8 or 16");
  c.activation_bits = static_cast<int>(ab);
  c.symmetric_activations = o.symmetric_activations;
  const std::string& g = o.weight_granularity;
  if (g == "per-channel") {
    c.weight_granularity = ptq::WeightGranularity::per_channel();
  } else if (g == "per-tensor") {
    c.weight_granularity = ptq::WeightGranularity::per_tensor();
  } else if (g.compare(0, 10, "per-group:") == 0) {
    const std::string n = g.substr(10);
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(n, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != n.size() || v < 1)
      usage_fail("--weight-granularity '", g, "': group size '", n, "'; expected a positive integer (e.g. per-group:32)");
    c.weight_granularity = ptq::WeightGranularity::per_group(v);
  } else {
    usage_fail("--weight-granularity '", g, "': expected per-channel, per-tensor or per-group:N");
  }
  const std::string& r = o.rounding;
  if (r == "half-even") c.weight_rounding = RoundingMode::half_even;
  else if (r == "half-away") c.weight_rounding = RoundingMode::half_away;
  else if (r == "half-up") c.weight_rounding = RoundingMode::half_up;
  else if (r == "floor") c.weight_rounding = RoundingMode::floor;
  else if (r == "toward-zero") c.weight_rounding = RoundingMode::toward_zero;
  else usage_fail("--rounding '", r, "': expected half-even, half-away, half-up, floor or toward-zero");
  c.keep_float = split_list(o.keep_float);
  c.int16_nodes = split_list(o.int16);
  check_nodes("--keep-float", c.keep_float, model);
  check_nodes("--int16", c.int16_nodes, model);
  for (const auto& k : c.keep_float)
    for (const auto& w : c.int16_nodes)
      if (k == w) usage_fail("--keep-float and --int16 both name node '", k, "'; expected one of them");
  (void)parse_int("--batch", o.batch, 1, std::int64_t{1} << 40);
  (void)parse_observer("--observer", o.observer);
  c.reduce_range = o.reduce_range;
  if (c.reduce_range && c.weight_bits == 4)
    usage_fail("--reduce-range with --weight-bits 4: expected 8- or 16-bit weights (4-bit weights have no int16 pair "
               "sums to protect)");
  c.cross_layer_equalization = o.cle;
  c.bias_correction = o.bias_correction;
  if (!o.adaround.empty())
    c.adaround.iterations = static_cast<int>(parse_int("--adaround", o.adaround, 1, 1000000));
  c.validate();
  return c;
}

void add_exec_options(CLI::App* cmd, ExecOptions& o, const std::string& default_mode) {
  o.mode = default_mode;
  cmd->add_option("--mode", o.mode,
                  "float: the model as written; fake: fake-quant (a QDQ model's Q/DQ pairs in float, or a float "
                  "model calibrated in memory with --calib); int: integer-only (IntegerMode)")
      ->type_name("MODE")
      ->capture_default_str();
  cmd->add_option("--scale", o.scale,
                  "--mode int requantization: float (ONNX Runtime's QLinear ops), pow2, fixed-point (gemmlowp), "
                  "single-shift or double-shift (N2D2)")
      ->type_name("S")
      ->capture_default_str();
  cmd->add_flag("--ort-no-vnni", o.ort_no_vnni,
                "--mode int: sum uint8 x int8 products in int16-saturating pairs, as ONNX Runtime's default session "
                "does on x86-64 CPUs without AVX-VNNI (with --scale float: ONNX Runtime's outputs there)");
  add_quant_options(cmd, o.quant);
}

Runner make_runner(const CLI::App* cmd, const graph::Graph& model, const ExecOptions& o) {
  const Mode mode = parse_mode("--mode", o.mode);
  const ScaleKind scale = parse_scale("--scale", o.scale);
  if (cmd->count("--scale") && mode != Mode::integer)
    usage_fail("--scale ", o.scale, ": only --mode int requantizes; expected --mode int (the mode is ", o.mode, ")");
  if (o.ort_no_vnni && mode != Mode::integer)
    usage_fail("--ort-no-vnni: only the integer mode sums integer products; expected --mode int (the mode is ", o.mode,
               ")");
  std::unique_ptr<ptq::QuantizedModel> qm;
  if (quant_options_given(cmd)) {
    if (o.quant.calib.empty())
      usage_fail("the quantize options (--weight-bits, --observer, ...) calibrate a float model; expected --calib "
                 "CALIB.npy too");
    if (mode == Mode::float_)
      usage_fail("--calib: --mode float runs the model as written; expected --mode fake or --mode int to run it "
                 "calibrated");
    if (is_quantized(model))
      usage_fail("--calib: model '", model.source, "' is already quantized; expected a float model to calibrate "
                 "(or no --calib)");
    qm = std::make_unique<ptq::QuantizedModel>(calibrate_model(model, o.quant));
  }
  return Runner(model, qm.get(), mode, scale, o.ort_no_vnni);
}

void check_writable(const std::string& option, const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    quantkit::detail::fail(option, " ", path, ": folder '", dir.string(), "' does not exist; expected an existing folder");
  if (::access(dir.c_str(), W_OK) != 0)
    quantkit::detail::fail(option, " ", path, ": folder '", dir.string(), "' is not writable; expected a writable folder");
  if (fs::is_directory(p, ec))
    quantkit::detail::fail(option, " ", path, ": is a folder; expected a file name");
}

// ---------------------------------------------------------------------------------------------
graph::DType graph_dtype_of(npy::DType t, const std::string& file) {
  switch (t) {
    case npy::DType::f32: return graph::DType::float32;
    case npy::DType::i8: return graph::DType::int8;
    case npy::DType::u8: return graph::DType::uint8;
    case npy::DType::i16: return graph::DType::int16;
    case npy::DType::u16: return graph::DType::uint16;
    case npy::DType::i32: return graph::DType::int32;
    case npy::DType::i64: return graph::DType::int64;
    case npy::DType::f64: break;
  }
  quantkit::detail::fail("file '", file, "': dtype ", npy::descr(t),
                         "; expected float32, int8, uint8, int16, uint16, int32 or int64 (e.g. x.astype(numpy.float32))");
}

graph::Tensor read_npy(const std::string& path) {
  const npy::Array a = npy::load(path);
  const graph::DType t = graph_dtype_of(a.dtype, path);
  graph::Tensor out(t, a.shape, path);
  if (!a.bytes.empty()) std::memcpy(out.raw(), a.bytes.data(), a.bytes.size());
  return out;
}

static std::string input_names(const graph::Graph& g) {
  std::string s;
  for (const auto& i : g.inputs) s += (s.empty() ? "'" : ", '") + i.name + "'";
  return s;
}

TensorMap read_inputs(const std::string& option, const std::vector<std::string>& specs, const graph::Graph& model) {
  TensorMap out;
  for (const auto& spec : specs) {
    std::string name, file = spec;
    const std::size_t eq = spec.find('=');
    if (eq != std::string::npos && model.is_input(spec.substr(0, eq))) {
      name = spec.substr(0, eq);
      file = spec.substr(eq + 1);
    } else if (eq != std::string::npos && eq > 0 && !fs::exists(spec)) {
      usage_fail(option, " ", spec, ": model '", model.source, "' has no input '", spec.substr(0, eq),
                 "'; its inputs: ", input_names(model));
    } else if (model.inputs.size() == 1) {
      name = model.inputs[0].name;
    } else {
      usage_fail(option, " ", spec, ": model '", model.source, "' has ", model.inputs.size(), " inputs (",
                 input_names(model), "); expected NAME=FILE.npy naming one of them");
    }
    if (out.count(name)) usage_fail(option, " ", spec, ": input '", name, "' is given twice");
    graph::Tensor t = read_npy(file);
    const graph::ValueInfo& decl = *model.find_value(name);
    if (decl.dtype != graph::DType::undefined && decl.dtype != t.dtype())
      quantkit::detail::fail(option, " ", spec, ": file '", file, "' holds ", graph::to_string(t.dtype()), "; model '",
                             model.source, "' input '", name, "' expects ", graph::to_string(decl.dtype));
    if (decl.has_shape) {
      bool ok = static_cast<std::size_t>(t.rank()) == decl.dims.size();
      for (std::size_t d = 0; ok && d < decl.dims.size(); ++d)
        ok = decl.dims[d] < 0 || decl.dims[d] == t.dim(static_cast<int>(d));
      if (!ok)
        quantkit::detail::fail(option, " ", spec, ": file '", file, "' has shape ", t.shape().to_string(), "; model '",
                               model.source, "' input '", name, "' expects ", decl.shape_string());
    }
    t.set_name(name);
    out.emplace(name, std::move(t));
  }
  for (const auto& i : model.inputs)
    if (!out.count(i.name))
      usage_fail(option, ": model '", model.source, "' input '", i.name, "' is not given; expected ", option, " ",
                 model.inputs.size() == 1 ? std::string("FILE.npy") : i.name + "=FILE.npy");
  return out;
}

void write_npy(const std::string& path, const graph::Tensor& t) {
  switch (t.dtype()) {
    case graph::DType::float32: npy::save(path, npy::DType::f32, t.shape(), t.raw()); break;
    case graph::DType::int8: npy::save(path, npy::DType::i8, t.shape(), t.raw()); break;
    case graph::DType::uint8:
    case graph::DType::boolean: npy::save(path, npy::DType::u8, t.shape(), t.raw()); break;  // bool as 0/1
    case graph::DType::int16: npy::save(path, npy::DType::i16, t.shape(), t.raw()); break;
    case graph::DType::uint16: npy::save(path, npy::DType::u16, t.shape(), t.raw()); break;
    case graph::DType::int32: npy::save(path, npy::DType::i32, t.shape(), t.raw()); break;
    case graph::DType::int64: npy::save(path, npy::DType::i64, t.shape(), t.raw()); break;
    case graph::DType::undefined:
      quantkit::detail::fail("file '", path, "': output '", t.name(), "' has no value to write");
  }
}

// Output names as file names: characters outside [A-Za-z0-9._-] become '_' (as
// tools/ort/run_model.mjs does).
static std::string safe_file_name(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (s.empty() || s[0] == '.') s = "_" + s;
  return s;
}

std::vector<std::pair<std::string, std::string>> write_outputs(const std::string& option,
                                                               const std::vector<std::string>& specs,
                                                               const TensorMap& outputs,
                                                               const std::vector<std::string>& output_order) {
  std::vector<std::pair<std::string, std::string>> plan;
  auto names = [&] {
    std::string s;
    for (const auto& n : output_order) s += (s.empty() ? "'" : ", '") + n + "'";
    return s;
  };
  for (const auto& spec : specs) {
    const std::size_t eq = spec.find('=');
    if (eq != std::string::npos && outputs.count(spec.substr(0, eq))) {
      plan.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (eq != std::string::npos && eq > 0 && spec.find('/') > eq) {
      usage_fail(option, " ", spec, ": the model has no output '", spec.substr(0, eq), "'; its outputs: ", names());
    } else if (!spec.empty() && (spec.back() == '/' || fs::is_directory(spec))) {
      std::error_code ec;
      fs::create_directories(spec, ec);
      if (ec) quantkit::detail::fail(option, " ", spec, ": cannot create the folder: ", ec.message());
      std::set<std::string> used;
      for (const auto& n : output_order) {
        std::string base = safe_file_name(n);
        for (int k = 1; used.count(base); ++k) base = safe_file_name(n) + "_" + std::to_string(k);
        used.insert(base);
        plan.emplace_back(n, (fs::path(spec) / (base + ".npy")).string());
      }
    } else if (output_order.size() == 1) {
      plan.emplace_back(output_order[0], spec);
    } else {
      usage_fail(option, " ", spec, ": the model has ", output_order.size(), " outputs (", names(),
                 "); expected NAME=FILE.npy for each, or a folder (", option, " DIR/)");
    }
  }
  std::set<std::string> files;
  for (const auto& p : plan)
    if (!files.insert(p.second).second) usage_fail(option, ": file '", p.second, "' is written twice");
  for (const auto& p : plan) write_npy(p.second, outputs.at(p.first));
  return plan;
}

graph::Tensor slice_rows(const graph::Tensor& t, std::int64_t start, std::int64_t rows) {
  Dims shape = t.shape();
  if (shape.rank == 0 || (start == 0 && rows == shape[0])) return t;
  const std::size_t row_bytes = shape[0] == 0 ? 0 : t.nbytes() / static_cast<std::size_t>(shape[0]);
  shape[0] = rows;
  graph::Tensor out(t.dtype(), shape, t.name());
  std::memcpy(out.raw(), static_cast<const unsigned char*>(t.raw()) + static_cast<std::size_t>(start) * row_bytes,
              static_cast<std::size_t>(rows) * row_bytes);
  return out;
}

// ---------------------------------------------------------------------------------------------
bool stderr_is_terminal() { return ::isatty(2) == 1; }

Progress::Progress(std::string label, bool enabled) : label_(std::move(label)), enabled_(enabled) {}

Progress::~Progress() {
  if (drawn_) std::fputc('\n', stderr);
}

void Progress::update(std::size_t done, std::size_t total) {
  if (!enabled_ || total == 0) return;
  constexpr std::size_t width = 30;
  const std::size_t fill = done * width / total;
  std::fprintf(stderr, "\r%s [%s%s] %zu/%zu", label_.c_str(), std::string(fill, '#').c_str(),
               std::string(width - fill, '.').c_str(), done, total);
  std::fflush(stderr);
  drawn_ = true;
}

void print_json(const Json& j) { std::cout << j.dump(2) << "\n"; }

std::string format_number(double v, int significant) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}g}", v, significant);
}

Json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

}  // namespace cli
}  // namespace quantkit
