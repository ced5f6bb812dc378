// quantkit compare FLOAT.onnx QUANT.onnx --input X.npy [--metric ...]: the layer-wise table —
// every value both models compute, in the float model's order, with each metric
// (quantkit/analysis/compare.hpp: value matching, incl. ONNX Runtime's QDQ names).
#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "quantkit/analysis/compare.hpp"

namespace quantkit {
namespace cli {

namespace {

struct CompareArgs {
  std::string reference;
  std::string compared;
  std::vector<std::string> inputs;
  std::vector<std::string> metrics;
  std::string samples;
  bool json = false;
  ExecOptions exec;
};

std::string shape_text(const Dims& d) {
  std::string s = "[";
  for (int i = 0; i < d.rank; ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

std::string shorten(const std::string& s, std::size_t width) {
  if (s.size() <= width) return s;
  return "..." + s.substr(s.size() - (width - 3));
}

void run_compare(const CLI::App* cmd, const CompareArgs& a) {
  std::vector<analysis::Metric> metrics;
  for (const auto& m : split_list(a.metrics)) {
    try {
      metrics.push_back(analysis::parse_metric(m, "--metric"));
    } catch (const Error& e) {
      usage_fail(std::string(e.what()).substr(10));
    }
  }
  if (metrics.empty()) metrics = analysis::all_metrics();
  const graph::Graph reference = read_model(a.reference);
  const graph::Graph compared = read_model(a.compared);
  TensorMap inputs = read_inputs("--input", a.inputs, reference);
  for (const auto& i : compared.inputs)
    if (!inputs.count(i.name))
      quantkit::detail::fail("model '", a.compared, "' input '", i.name, "' is not an input of '", a.reference,
                             "'; expected two models with the same inputs");
  if (!a.samples.empty()) {
    const std::int64_t n = parse_int("--samples", a.samples, 1, std::int64_t{1} << 40);
    for (auto& kv : inputs)
      if (kv.second.rank() > 0 && kv.second.dim(0) > n) kv.second = slice_rows(kv.second, 0, n);
  }
  const Runner ref_run(reference, nullptr, Mode::float_, ScaleKind::fixed_point);
  const Runner cmp_run = make_runner(cmd, compared, a.exec);
  TensorMap va = ref_run.run(inputs, true), vb = cmp_run.run(inputs, true);
  for (const auto& kv : inputs) {
    va.emplace(kv.first, kv.second);
    vb.emplace(kv.first, kv.second);
  }
  const analysis::LayerComparison cmp = analysis::compare_values(ref_run.graph(), va, cmp_run.graph(), vb);
  const std::int64_t samples = inputs.begin()->second.rank() > 0 ? inputs.begin()->second.dim(0) : 1;

  if (a.json) {
    Json j;
    j["reference"] = a.reference;
    j["compared"] = a.compared;
    j["mode"] = to_string(cmp_run.mode());
    j["description"] = cmp_run.describe();
    j["samples"] = samples;
    Json ms = Json::array();
    for (auto m : metrics) ms.push_back(analysis::to_string(m));
    j["metrics"] = ms;
    Json rows = Json::array();
    for (std::size_t i = 0; i < cmp.rows.size(); ++i) {
      const auto& r = cmp.rows[i];
      Json row = {{"index", i},
                  {"value", r.value},
                  {"node", r.node},
                  {"op", r.op},
                  {"compared_value", r.actual_value},
                  {"match", analysis::to_string(r.match)},
                  {"shape", graph::to_vector(r.shape)}};
      if (r.error.empty())
        for (auto m : metrics) row[analysis::to_string(m)] = json_number(r.metrics.get(m));
      else
        row["error"] = r.error;
      rows.push_back(row);
    }
    j["rows"] = rows;
    j["unmatched"] = cmp.unmatched;
    if (cmp_run.mode() == Mode::integer) j["integer_mode"] = integer_report_json(cmp_run.integer_report());
    print_json(j);
    return;
  }
  fmt::print("layer-wise comparison on {} samples: '{}' (float) vs '{}', run as {}\n", samples, a.reference,
             a.compared, cmp_run.describe());
  std::size_t name_w = 5, op_w = 2, shape_w = 5;
  for (const auto& r : cmp.rows) {
    name_w = std::max(name_w, std::min<std::size_t>(r.value.size(), 40));
    op_w = std::max(op_w, r.op.size());
    shape_w = std::max(shape_w, shape_text(r.shape).size());
  }
  std::string header = fmt::format("  {:>3}  {:<{}}  {:<{}}  {:<{}}", "#", "value", name_w, "op", op_w, "shape", shape_w);
  for (auto m : metrics) header += fmt::format("  {:>11}", analysis::to_string(m));
  fmt::print("{}\n", header);
  for (std::size_t i = 0; i < cmp.rows.size(); ++i) {
    const auto& r = cmp.rows[i];
    std::string line = fmt::format("  {:>3}  {:<{}}  {:<{}}  {:<{}}", i, shorten(r.value, 40), name_w, r.op, op_w,
                                   shape_text(r.shape), shape_w);
    if (r.error.empty())
      for (auto m : metrics) {
        const double v = r.metrics.get(m);
        line += fmt::format("  {:>11}", m == analysis::Metric::cosine ? fmt::format("{:.7f}", v) : format_number(v, 6));
      }
    else
      line += "  " + r.error.substr(r.error.find(": ") + 2);
    fmt::print("{}\n", line);
  }
  if (!cmp.unmatched.empty()) {
    std::string names;
    for (std::size_t i = 0; i < cmp.unmatched.size() && i < 6; ++i) names += (i ? ", " : "") + cmp.unmatched[i];
    if (cmp.unmatched.size() > 6) names += ", ...";
    fmt::print("  {} float value(s) without a counterpart in '{}' (e.g. folded into another node): {}\n",
               cmp.unmatched.size(), a.compared, names);
  }
  const analysis::LayerRow* worst = nullptr;
  for (const auto& r : cmp.rows)
    if (r.error.empty() && (!worst || r.metrics.cosine < worst->metrics.cosine)) worst = &r;
  if (worst)
    fmt::print("  lowest cosine: {:.7f} at '{}' ({})\n", worst->metrics.cosine, worst->value, worst->op);
  if (cmp_run.mode() == Mode::integer)
    for (const auto& line : integer_report_lines(cmp_run.integer_report(), parse_scale("--scale", a.exec.scale)))
      fmt::print("  {}\n", line);
}

}  // namespace

void add_compare(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "layer-wise comparison of a float model and its quantized version on the same inputs");
  cmd->add_option("float", args->reference, "the float ONNX model (reference)")->required()->type_name("FLOAT.onnx");
  cmd->add_option("quantized", args->compared,
                  "the quantized model: a QDQ model (quantkit's, or ONNX Runtime's quantizer's), or the float "
                  "model again with --calib and the quantize options")
      ->required()
      ->type_name("QUANT.onnx");
  cmd->add_option("--input", args->inputs, "X.npy for a single-input model, NAME=X.npy per input (repeatable)")
      ->required()
      ->type_name("[NAME=]X.npy")
      ->allow_extra_args(false);
  cmd->add_option("--metric", args->metrics, "metrics to print: cosine, mse, mre, sqnr, chebyshev (default: all)")
      ->type_name("M,...")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--samples", args->samples, "compare on the first N samples only (every value is kept in memory)")
      ->type_name("N");
  add_exec_options(cmd, args->exec, "fake");
  cmd->get_option("--mode")->description(
      "how QUANT.onnx runs: fake (its Q/DQ pairs in float; a float model with --calib: calibrated in memory) or "
      "int (the integer mode: only the values it still computes in float, e.g. outputs, are compared)");
  cmd->add_flag("--json", args->json, "print the table as JSON");
  cmd->callback([cmd, args] { run_compare(cmd, *args); });
}

}  // namespace cli
}  // namespace quantkit
