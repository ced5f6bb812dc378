// quantkit calibrate X.npy --observer OBS --bits B [--signed] [--symmetric] [--axis A]: the
// range, scale(s) and zero point(s) one observer picks for one tensor.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "quantkit/params.hpp"

namespace quantkit {
namespace cli {

namespace {

struct CalibrateArgs {
  std::string file;
  std::string observer = "minmax";
  std::string bits = "8";
  bool is_signed = false;
  bool symmetric = false;
  std::string axis;
  std::string convention = "pytorch";
  std::string batch;
  bool json = false;
};

ConventionKind parse_convention(const std::string& s) {
  if (s == "pytorch") return ConventionKind::pytorch;
  if (s == "onnxruntime") return ConventionKind::onnxruntime;
  if (s == "onnx") return ConventionKind::onnx;
  if (s == "tflite") return ConventionKind::tflite;
  usage_fail("--convention '", s, "': expected pytorch, onnxruntime, onnx or tflite");
}

void run_calibrate(const CalibrateArgs& a) {
  const ObserverSpec spec = parse_observer("--observer", a.observer);
  const auto bits = static_cast<int>(parse_int("--bits", a.bits, 2, 16));
  const ConventionKind convention = parse_convention(a.convention);
  const graph::Tensor t = read_npy(a.file);
  if (t.dtype() != graph::DType::float32)
    quantkit::detail::fail("file '", a.file, "': dtype ", graph::to_string(t.dtype()),
                           "; expected float32 (the observers calibrate float data)");
  Granularity granularity = Granularity::per_tensor();
  int axis = 0;
  if (!a.axis.empty()) {
    if (t.rank() == 0) usage_fail("--axis ", a.axis, ": file '", a.file, "' holds a scalar; expected no --axis");
    axis = static_cast<int>(parse_int("--axis", a.axis, -t.rank(), t.rank() - 1));
    if (axis < 0) axis += t.rank();
    granularity = Granularity::per_channel(axis);
  }
  const std::int64_t rows = t.rank() > 0 ? t.dim(0) : 1;
  const std::int64_t batch = a.batch.empty() ? rows : parse_int("--batch", a.batch, 1, std::int64_t{1} << 40);
  if (!a.batch.empty() && !a.axis.empty() && axis == 0)
    usage_fail("--batch ", a.batch, " splits axis 0, the channel axis of --axis ", a.axis,
               "; expected another axis or no --batch");
  if (t.size() == 0) quantkit::detail::fail("file '", a.file, "': shape ", t.shape().to_string(), " has no values; expected at least one");

  QuantTarget target;
  target.range = a.is_signed ? IntRange{-(1 << (bits - 1)), (1 << (bits - 1)) - 1} : IntRange{0, (1 << bits) - 1};
  target.symmetry = a.symmetric ? SymmetryKind::symmetric : SymmetryKind::affine;
  target.convention = convention;
  target.rounding = RoundingMode::half_even;

  graph::Tensor data = t;
  data.set_name(a.file);
  const TensorCalibration cal = observe_tensor(data, spec, granularity, target, batch);
  const std::vector<Range>& ranges = cal.ranges;
  const std::vector<std::string>& methods = cal.methods;
  const QuantParams p = compute_qparams(ranges, granularity, target.range, target.symmetry, convention, a.file);

  const std::string fmt_name = fmt::format("{}{}", a.is_signed ? "int" : "uint", bits);
  if (a.json) {
    Json j;
    j["file"] = a.file;
    j["shape"] = graph::to_vector(t.shape());
    j["observer"] = spec.text;
    j["format"] = fmt_name;
    j["bits"] = bits;
    j["signed"] = a.is_signed;
    j["symmetric"] = a.symmetric;
    j["convention"] = quantkit::to_string(convention);
    j["qmin"] = p.range.qmin;
    j["qmax"] = p.range.qmax;
    j["granularity"] = a.axis.empty() ? "per-tensor" : "per-channel";
    if (!a.axis.empty()) j["axis"] = axis;
    Json params = Json::array();
    for (std::size_t i = 0; i < p.size(); ++i) {
      Json e = {{"index", i}, {"min", ranges[i].min}, {"max", ranges[i].max}, {"scale", p.scale[i]},
                {"zero_point", p.zero_point[i]}};
      if (i < methods.size()) e["method"] = methods[i];
      params.push_back(e);
    }
    j["params"] = params;
    print_json(j);
    return;
  }
  fmt::print("'{}' {} float32: observer {}, {} [{}, {}] {}, {}, {} convention\n", a.file, t.shape().to_string(),
             spec.text, fmt_name, p.range.qmin, p.range.qmax, a.symmetric ? "symmetric" : "affine",
             a.axis.empty() ? std::string("per tensor") : fmt::format("per channel along axis {}", axis),
             quantkit::to_string(convention));
  fmt::print("  {:>7}  {:>14}  {:>14}  {:>15}  {:>10}{}\n", a.axis.empty() ? "" : "channel", "min", "max", "scale",
             "zero point", methods.empty() ? "" : "  method");
  for (std::size_t i = 0; i < p.size(); ++i)
    fmt::print("  {:>7}  {:>14.9g}  {:>14.9g}  {:>15.9g}  {:>10}{}\n", a.axis.empty() ? std::string() : std::to_string(i),
               ranges[i].min, ranges[i].max, p.scale[i], p.zero_point[i],
               i < methods.size() ? "  " + methods[i] : std::string());
}

}  // namespace

void add_calibrate(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "print the range, scale(s) and zero point(s) an observer picks for one float32 .npy tensor");
  cmd->add_option("data", args->file, "the tensor (float32 .npy)")->required()->type_name("X.npy");
  cmd->add_option("--observer", args->observer,
                  "minmax, moving-average[:C], percentile:P, histogram, mse, kl or auto (see quantkit quantize --help)")
      ->type_name("OBS")
      ->capture_default_str();
  cmd->add_option("--bits", args->bits, "integer bits, 2..16")->type_name("B")->capture_default_str();
  cmd->add_flag("--signed", args->is_signed, "signed integers (int8 [-128, 127]) instead of unsigned");
  cmd->add_flag("--symmetric", args->symmetric, "symmetric range (PyTorch: scale = max|x| / ((qmax - qmin) / 2))");
  cmd->add_option("--axis", args->axis, "per-channel parameters along this axis (default: per tensor)")
      ->type_name("A");
  cmd->add_option("--convention", args->convention, "(min, max) -> (scale, zero point): pytorch, onnxruntime, onnx or tflite")
      ->type_name("C")
      ->capture_default_str();
  cmd->add_option("--batch", args->batch, "observe the data in batches of N rows along axis 0 (default: one batch)")
      ->type_name("N");
  cmd->add_flag("--json", args->json, "print the parameters as JSON");
  cmd->callback([args] { run_calibrate(*args); });
}

}  // namespace cli
}  // namespace quantkit
