// quantkit export-cpp QUANT.onnx -o model.hpp: the QDQ model as one self-contained C++17 header
// with an integer-only infer() (N2D2's "CPP export"; quantkit/export/cpp.hpp). The header's
// integers equal `quantkit run --mode int --scale S` bit for bit.
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "quantkit/export/cpp.hpp"

namespace quantkit {
namespace cli {

namespace {

struct ExportArgs {
  std::string input;
  std::string output;
  std::string scale = "fixed-point";
  std::string name_space = "model";
  bool standalone = false;
  std::vector<std::string> shapes;  // NAME=1x1x8x8 or 1x1x8x8 (single input)
  bool json = false;
};

RequantScheme parse_export_scale(const std::string& text) {
  if (text == "fixed-point") return RequantScheme::fixed_point;
  if (text == "fixed-point-single") return RequantScheme::fixed_point_single;
  if (text == "single-shift") return RequantScheme::single_shift;
  if (text == "double-shift") return RequantScheme::double_shift;
  usage_fail("--scale '", text,
             "': expected fixed-point, fixed-point-single, single-shift or double-shift (integer-only schemes)");
}

std::vector<std::int64_t> parse_shape(const std::string& option, const std::string& text) {
  std::vector<std::int64_t> dims;
  std::size_t start = 0;
  while (true) {
    const std::size_t x = text.find('x', start);
    dims.push_back(parse_int(option, text.substr(start, x == std::string::npos ? std::string::npos : x - start), 1,
                             std::int64_t{1} << 31));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return dims;
}

std::string shape_option_text(const Dims& d) {
  std::string s;
  for (int i = 0; i < d.rank; ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

void run_export(const ExportArgs& a) {
  const RequantScheme scheme = parse_export_scale(a.scale);
  check_writable("-o", a.output);
  const graph::Graph model = read_model(a.input);
  cpp_export::Options opt;
  opt.name_space = a.name_space;
  opt.runtime = a.standalone ? cpp_export::Runtime::standalone : cpp_export::Runtime::quantkit;
  opt.source = a.input;
  for (const auto& spec : a.shapes) {
    const std::size_t eq = spec.find('=');
    std::string name;
    if (eq == std::string::npos) {
      if (model.inputs.size() != 1)
        usage_fail("--input-shape '", spec, "': the model has ", model.inputs.size(),
                   " inputs; expected NAME=DIMS (e.g. input=1x1x8x8)");
      name = model.inputs[0].name;
    } else {
      name = spec.substr(0, eq);
    }
    bool known = false;
    for (const auto& in : model.inputs) known = known || in.name == name;
    if (!known) usage_fail("--input-shape '", spec, "': the model has no input '", name, "'");
    opt.input_shapes[name] = parse_shape("--input-shape", eq == std::string::npos ? spec : spec.substr(eq + 1));
  }
  const cpp_export::Report rep = cpp_export::write(model, a.output, scheme, opt);

  if (a.json) {
    auto ports = [](const std::vector<cpp_export::Port>& ps) {
      Json j = Json::array();
      for (const auto& p : ps)
        j.push_back({{"name", p.name},
                     {"identifier", p.identifier},
                     {"type", graph::to_string(p.type)},
                     {"shape", shape_option_text(p.shape)},
                     {"scale", p.scale},
                     {"zero_point", p.zero_point}});
      return j;
    };
    Json j;
    j["input"] = a.input;
    j["output"] = a.output;
    j["scale"] = a.scale;
    j["namespace"] = a.name_space;
    j["runtime"] = a.standalone ? "standalone" : "quantkit";
    j["inputs"] = ports(rep.inputs);
    j["outputs"] = ports(rep.outputs);
    j["layers"] = rep.layers;
    j["parameter_bytes"] = rep.parameter_bytes;
    j["workspace_bytes"] = rep.workspace_bytes;
    print_json(j);
    return;
  }
  fmt::print("exported '{}' -> '{}' (namespace {}, {} requantization, {} runtime)\n", a.input, a.output,
             a.name_space, a.scale, a.standalone ? "standard-library-only" : "quantkit");
  fmt::print("  {} integer layers; {} bytes of parameters, {} bytes of workspace\n", rep.layers.size(),
             rep.parameter_bytes, rep.workspace_bytes);
  for (const auto& p : rep.inputs)
    fmt::print("  input  {} -> {}[{}] {} (scale {}, zero point {}; quantize_{}())\n", p.name, p.identifier,
               shape_option_text(p.shape), graph::to_string(p.type), format_number(p.scale), p.zero_point, p.identifier);
  for (const auto& p : rep.outputs)
    fmt::print("  output {} -> {}[{}] {} (scale {}, zero point {}; dequantize_{}())\n", p.name, p.identifier,
               shape_option_text(p.shape), graph::to_string(p.type), format_number(p.scale), p.zero_point, p.identifier);
}

}  // namespace

void add_export_cpp(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "export-cpp", "write a QDQ model as a self-contained C++ header with an integer-only infer() (N2D2-style)");
  cmd->add_option("model", args->input, "the QDQ model (quantkit quantize writes one)")->required()->type_name("QUANT.onnx");
  cmd->add_option("-o,--output", args->output, "the header to write (atomically)")->required()->type_name("MODEL.hpp");
  cmd->add_option("--scale", args->scale,
                  "requantization: fixed-point (gemmlowp), fixed-point-single (TFLite), single-shift or "
                  "double-shift (N2D2); the header equals quantkit run --mode int --scale S")
      ->type_name("S")
      ->capture_default_str();
  cmd->add_option("--namespace", args->name_space, "the C++ namespace of the generated code")
      ->type_name("NS")
      ->capture_default_str();
  cmd->add_flag("--standalone", args->standalone,
                "only the standard library (the requantization arithmetic written into the header); default: "
                "the header includes quantkit's reference requantization");
  cmd->add_option("--input-shape", args->shapes,
                  "fixed input shape, DIMS (single input) or NAME=DIMS, e.g. 1x1x8x8 (default: the declared "
                  "shape with batch 1)")
      ->type_name("SHAPE")
      ->allow_extra_args(false);
  cmd->add_flag("--json", args->json, "print the summary as JSON");
  cmd->callback([args] { run_export(*args); });
}

}  // namespace cli
}  // namespace quantkit
