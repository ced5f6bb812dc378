// quantkit quantize IN.onnx -o OUT.onnx --calib CALIB.npy [options]: calibrate a float model
// and write it as a QDQ ONNX model.
//
// --scale S says which integer requantization the model is meant for (the scheme `quantkit run
// --mode int --scale S` uses). A QDQ file stores float scales only, so S does not change the
// file: quantize reports, per layer the integer mode would requantize (Conv/Gemm/MatMul: one
// multiplier s_in * s_w[c] / s_out per output channel; Add: its three; Relu/pools/Concat/...
// with different input and output scales: s_in / s_out), the relative error of S's
// approximation of the multipliers, or that S cannot express one (that layer then stays float
// in the integer mode: power-of-two and shifts need multipliers <= 1, double-shift <= 1.5).
// For models with 8-bit activations it also reads the written file back and reports which
// compute nodes the integer mode runs in integers.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "shards.hpp"

namespace quantkit {
namespace cli {

namespace {

struct QuantizeArgs {
  std::string input;
  std::string output;
  std::string scale = "fixed-point";
  std::string format = "qdq";
  std::string auto_mixed;  // target output cosine; "" = off
  bool json = false;
  QuantOptions quant;
  ShardOptions shards;  // --calib-shards GLOB: streamed, MPI-sharded calibration (calibrate_shards.cpp)
};

std::string weight_format(const ptq::PtqConfig& c) {
  return fmt::format("{} {} {} ({}){}", ptq::TensorFormat{c.weight_bits, c.weight_signed}.name(),
                     c.weight_granularity.to_string(), quantkit::to_string(c.weight_symmetry),
                     quantkit::to_string(c.weight_rounding), c.reduce_range ? ", reduced range" : "");
}
std::string activation_format(const ptq::PtqConfig& c) {
  return fmt::format("{} {}", c.activation_format(c.activation_bits).name(),
                     c.symmetric_activations ? "symmetric" : "affine");
}

// --format qoperator: ONNX Runtime's integer operators; their requantization is ORT's float
// multiplier, so there is no --scale report and no integer-mode read-back.
void write_quantize_qoperator(const QuantizeArgs& a, const ptq::QuantizedModel& qm, std::int64_t samples) {
  const QOperatorSummary rep = write_qoperator(qm, a.output);
  const std::int64_t batch = parse_int("--batch", a.quant.batch, 1, std::int64_t{1} << 40);
  if (a.json) {
    Json j;
    j["input"] = a.input;
    j["output"] = a.output;
    j["format"] = "qoperator";
    j["observer"] = qm.observer;
    j["weights"] = weight_format(qm.config);
    j["activations"] = activation_format(qm.config);
    j["calibration_samples"] = samples;
    j["calibration_batch"] = batch;
    j["quantized_nodes"] = qm.quantized_nodes;
    j["nodes"] = qm.graph.nodes.size();
    j["opset"] = rep.opset;
    j["checked"] = rep.checked;
    j["check_note"] = rep.check_note;
    j["qoperator_nodes"] = rep.qoperator_nodes;
    j["quantize_nodes"] = rep.quantize_nodes;
    j["dequantize_nodes"] = rep.dequantize_nodes;
    j["requantize_nodes"] = rep.requantize_nodes;
    j["ops"] = rep.ops;
    Json fl = Json::array();
    for (const auto& f : rep.float_nodes) fl.push_back({{"node", f.first}, {"reason", f.second}});
    j["float_nodes"] = fl;
    j["notes"] = qm.notes;
    print_json(j);
    return;
  }
  fmt::print("quantized '{}' -> '{}' (QOperator)\n", a.input, a.output);
  fmt::print("  observer {} on {} calibration samples (batches of {}); weights {}; activations {}\n", qm.observer,
             samples, batch, weight_format(qm.config), activation_format(qm.config));
  std::string ops;
  for (const auto& kv : rep.ops) ops += (ops.empty() ? "" : ", ") + fmt::format("{} x{}", kv.first, kv.second);
  fmt::print("  opset {}, {} source nodes as integer ops, {} QuantizeLinear, {} DequantizeLinear; libonnx checker: {}\n",
             rep.opset, rep.qoperator_nodes, rep.quantize_nodes, rep.dequantize_nodes,
             rep.checked ? "passed" : rep.check_note);
  fmt::print("  ops: {}\n", ops);
  if (!rep.float_nodes.empty()) {
    fmt::print("  {} node(s) computed in float:\n", rep.float_nodes.size());
    for (const auto& f : rep.float_nodes) fmt::print("    {}: {}\n", f.first, f.second);
  }
  if (!qm.notes.empty()) {
    fmt::print("  notes:\n");
    for (const auto& n : qm.notes) fmt::print("    - {}\n", n);
  }
}

// What --auto-mixed changed: on stderr with --json (stdout holds the JSON summary), else stdout.
void print_auto_mixed(const AutoMixedReport& m, bool to_stderr) {
  std::FILE* f = to_stderr ? stderr : stdout;
  fmt::print(f, "auto mixed precision (target output cosine {} on {} calibration samples): {:.6f} -> {:.6f}, {}\n",
             m.target, m.samples, m.initial_cosine, m.final_cosine, m.reached ? "reached" : "NOT reached");
  for (const auto& s : m.steps) fmt::print(f, "  {:<6} {:<32} output cosine {:.6f}\n", s.action, s.node, s.cosine);
  if (!m.reached)
    fmt::print(f, "  the best configuration seen is written (int16: {}; float: {})\n",
               m.int16_nodes.empty() ? "none" : fmt::format("{}", fmt::join(m.int16_nodes, ",")),
               m.keep_float.empty() ? "none" : fmt::format("{}", fmt::join(m.keep_float, ",")));
}

void run_quantize(const CLI::App* cmd, const QuantizeArgs& a) {
  if (a.quant.calib.empty() && a.shards.patterns.empty()) usage_fail("--calib is required (or --calib-shards GLOB)");
  const ScaleKind scale = parse_scale("--scale", a.scale);
  if (a.format != "qdq" && a.format != "qoperator")
    usage_fail("--format '", a.format, "': expected qdq or qoperator");
  if (a.format == "qoperator" && cmd->count("--scale"))
    usage_fail("--scale ", a.scale, ": a QOperator model requantizes as ONNX Runtime does (float multiplier); "
               "expected --format qdq to report an integer scheme");
  check_writable("-o", a.output);
  const graph::Graph model = read_model(a.input);
  if (is_quantized(model))
    quantkit::detail::fail("model '", a.input, "' is already quantized (it has QuantizeLinear/DequantizeLinear or "
                           "QLinear ops); expected a float model");
  std::int64_t samples = 0;
  AutoMixedReport mixed;
  const bool auto_mixed = !a.auto_mixed.empty();
  if (auto_mixed) {
    mixed.target = parse_double("--auto-mixed", a.auto_mixed);
    if (!(mixed.target > -1.0) || !(mixed.target <= 1.0))
      usage_fail("--auto-mixed '", a.auto_mixed, "': expected a target output cosine in (-1, 1], e.g. 0.999");
  }
  std::optional<ptq::QuantizedModel> sharded;
  if (!a.shards.patterns.empty()) {
    if (!a.quant.calib.empty()) usage_fail("--calib and --calib-shards both given; expected one of them");
    if (auto_mixed)
      usage_fail("--auto-mixed with --calib-shards: auto mixed precision calibrates again per step; expected --calib");
    ShardRun run;
    sharded = calibrate_shards(model, a.quant, a.shards, &run);
    if (!sharded) return;  // an MPI rank other than 0: rank 0 writes the model
    samples = run.samples;
  } else if (!a.shards.state.empty()) {
    usage_fail("--calib-state ", a.shards.state, ": expected --calib-shards too");
  }
  const ptq::QuantizedModel qm = sharded    ? std::move(*sharded)
                                 : auto_mixed ? calibrate_auto_mixed(model, a.quant, mixed.target, mixed, &samples)
                                              : calibrate_model(model, a.quant, &samples);
  if (auto_mixed) print_auto_mixed(mixed, a.json);
  if (a.format == "qoperator") return write_quantize_qoperator(a, qm, samples);
  const QdqSummary rep = write_qdq(qm, a.output);
  const std::vector<LayerScale> layers = check_scale(qm, scale);

  // The integer mode on the written file (16-bit weights stay float).
  bool int_checked = false;
  std::string int_note;
  std::vector<NodeReport> int_report;
  try {
    const Runner r(read_model(a.output), nullptr, Mode::integer, scale);
    int_report = r.integer_report();
    int_checked = true;
  } catch (const Error& e) {
    int_note = e.what();
    if (int_note.compare(0, 10, "quantkit: ") == 0) int_note = int_note.substr(10);
  }

  std::size_t activations = 0, weights = 0, biases = 0;
  for (const auto& kv : qm.tensors) {
    activations += kv.second.role == ptq::TensorRole::activation;
    weights += kv.second.role == ptq::TensorRole::weight;
    biases += kv.second.role == ptq::TensorRole::bias;
  }
  std::size_t inexpressible = 0;
  const LayerScale* worst = nullptr;
  for (const auto& l : layers) {
    if (!l.error.empty()) ++inexpressible;
    else if (!worst || l.max_relative_error > worst->max_relative_error) worst = &l;
  }
  const std::int64_t batch = parse_int("--batch", a.quant.batch, 1, std::int64_t{1} << 40);

  if (a.json) {
    Json j;
    j["input"] = a.input;
    j["output"] = a.output;
    j["format"] = "qdq";
    j["observer"] = qm.observer;
    j["weights"] = weight_format(qm.config);
    j["activations"] = activation_format(qm.config);
    j["weight_bits"] = qm.config.weight_bits;
    j["activation_bits"] = qm.config.activation_bits;
    j["weight_granularity"] = qm.config.weight_granularity.to_string();
    j["symmetric_activations"] = qm.config.symmetric_activations;
    j["rounding"] = quantkit::to_string(qm.config.weight_rounding);
    j["keep_float"] = qm.config.keep_float;
    j["int16_nodes"] = qm.config.int16_nodes;
    if (auto_mixed) {
      Json steps = Json::array();
      for (const auto& st : mixed.steps) steps.push_back({{"node", st.node}, {"action", st.action}, {"cosine", st.cosine}});
      j["auto_mixed"] = {{"target", mixed.target},          {"samples", mixed.samples},
                         {"initial_cosine", mixed.initial_cosine}, {"final_cosine", mixed.final_cosine},
                         {"reached", mixed.reached},        {"steps", steps}};
    }
    j["calibration_samples"] = samples;
    j["calibration_batch"] = batch;
    j["quantized_nodes"] = qm.quantized_nodes;
    j["nodes"] = qm.graph.nodes.size();
    j["tensors"] = {{"activations", activations}, {"weights", weights}, {"biases", biases}};
    j["opset"] = rep.opset;
    j["qdq_pairs"] = rep.activation_pairs;
    j["quantized_initializers"] = rep.quantized_initializers;
    j["checked"] = rep.checked;
    j["check_note"] = rep.check_note;
    j["notes"] = qm.notes;
    Json ls = Json::array();
    for (const auto& l : layers)
      ls.push_back({{"node", l.node},
                    {"op", l.op},
                    {"multipliers", l.multipliers},
                    {"min_multiplier", l.min_multiplier},
                    {"max_multiplier", l.max_multiplier},
                    {"max_relative_error", l.error.empty() ? json_number(l.max_relative_error) : Json()},
                    {"error", l.error}});
    j["scale"] = {{"scheme", to_string(scale)}, {"inexpressible_layers", inexpressible}, {"layers", ls}};
    Json im = {{"checked", int_checked}};
    if (int_checked) {
      std::size_t n = 0;
      for (const auto& r : int_report) n += r.integer;
      im["integer_nodes"] = n;
      im["compute_nodes"] = int_report.size();
      im["nodes"] = integer_report_json(int_report);
    } else {
      im["note"] = int_note;
    }
    j["integer_mode"] = im;
    print_json(j);
    return;
  }
  fmt::print("quantized '{}' -> '{}'\n", a.input, a.output);
  fmt::print("  observer {} on {} calibration samples (batches of {}); weights {}; activations {}\n", qm.observer,
             samples, batch, weight_format(qm.config), activation_format(qm.config));
  fmt::print("  {} of {} nodes quantized; {} activations, {} weights, {} int32 biases\n", qm.quantized_nodes.size(),
             qm.graph.nodes.size(), activations, weights, biases);
  fmt::print("  opset {}, {} QuantizeLinear/DequantizeLinear pairs, {} quantized initializers; libonnx checker: {}\n",
             rep.opset, rep.activation_pairs, rep.quantized_initializers, rep.checked ? "passed" : rep.check_note);
  // Per layer when asked for (--scale given) or when a layer cannot be expressed; else one line.
  if (cmd->count("--scale") || inexpressible) {
    fmt::print("  requantization ({}), per layer (multiplier range, max relative error of the scheme):\n",
               to_string(scale));
    for (const auto& l : layers) {
      if (l.error.empty())
        fmt::print("    {:<28} {:<18} {:>3} x [{}, {}]  {}\n", l.node, l.op, l.multipliers,
                   format_number(l.min_multiplier, 4), format_number(l.max_multiplier, 4),
                   format_number(l.max_relative_error, 3));
      else
        fmt::print("    {:<28} {:<18} {:>3} x [{}, {}]  cannot express: {}\n", l.node, l.op, l.multipliers,
                   format_number(l.min_multiplier, 4), format_number(l.max_multiplier, 4), l.error);
    }
    if (inexpressible)
      fmt::print("  {} layer(s) stay float in --mode int --scale {} (a multiplier the scheme cannot express)\n",
                 inexpressible, to_string(scale));
  } else if (worst) {
    fmt::print("  requantization ({}): {} layers, every multiplier expressible, largest relative error {} ({})\n",
               to_string(scale), layers.size(), format_number(worst->max_relative_error, 3), worst->node);
  }
  if (int_checked) {
    const bool table = cmd->count("--scale") || inexpressible;
    for (const auto& line : integer_report_lines(int_report, scale, table)) fmt::print("  {}\n", line);
  } else {
    fmt::print("  integer mode: not checked: {}\n", int_note);
  }
  if (!qm.notes.empty()) {
    fmt::print("  notes:\n");
    for (const auto& n : qm.notes) fmt::print("    - {}\n", n);
  }
}

}  // namespace

void add_quantize(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* cmd = app.add_subcommand("quantize", "calibrate a float ONNX model and write it as a QDQ ONNX model");
  cmd->add_option("model", args->input, "the float ONNX model")->required()->type_name("IN.onnx");
  cmd->add_option("-o,--output", args->output, "the QDQ model to write (atomically)")->required()->type_name("OUT.onnx");
  add_quant_options(cmd, args->quant);
  add_shard_options(cmd, args->shards);  // --calib or --calib-shards (checked in run_quantize)
  cmd->add_option("--scale", args->scale,
                  "the integer requantization the model is meant for (quantkit run --mode int --scale S): float, "
                  "pow2, fixed-point, single-shift or double-shift; reported per layer, the "
                  "file is the same")
      ->type_name("S")
      ->capture_default_str();
  cmd->add_option("--format", args->format,
                  "qdq (QuantizeLinear/DequantizeLinear around float ops) or qoperator (QLinearConv, "
                  "QLinearMatMul and ONNX Runtime's com.microsoft QLinear ops)")
      ->type_name("F")
      ->capture_default_str();
  cmd->add_option("--auto-mixed", args->auto_mixed,
                  "raise the most sensitive nodes (quantkit debug sensitivity) to 16-bit activations, then to float, "
                  "until the output cosine on the first 64 calibration samples reaches COS (e.g. 0.999)")
      ->type_name("COS");
  cmd->add_flag("--json", args->json, "print the summary as JSON");
  cmd->callback([cmd, args] { run_quantize(cmd, *args); });
}

}  // namespace cli
}  // namespace quantkit
