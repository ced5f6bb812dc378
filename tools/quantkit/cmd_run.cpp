// quantkit run MODEL.onnx --input X.npy -o Y.npy [--mode float|fake|int]: run a model on .npy
// inputs and write its outputs as .npy.
// quantkit eval MODEL.onnx --input X.npy --labels Y.npy [--mode ...]: top-1 accuracy.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"

namespace quantkit {
namespace cli {

namespace {

Json tensor_json(const std::string& name, const std::string& file, const graph::Tensor& t) {
  return {{"name", name}, {"file", file}, {"dtype", graph::to_string(t.dtype())}, {"shape", graph::to_vector(t.shape())}};
}

void print_integer_report(const Runner& r, const ExecOptions& o, Json* j) {
  if (r.mode() != Mode::integer) return;
  if (j) {
    (*j)["integer_mode"] = integer_report_json(r.integer_report());
    return;
  }
  for (const auto& line : integer_report_lines(r.integer_report(), parse_scale("--scale", o.scale)))
    fmt::print("  {}\n", line);
}

// ---------------------------------------------------------------------------------------------
struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  bool json = false;
  ExecOptions exec;
};

void run_run(const CLI::App* cmd, const RunArgs& a) {
  const graph::Graph model = read_model(a.model);
  const TensorMap inputs = read_inputs("--input", a.inputs, model);
  for (const auto& spec : a.outputs)
    if (!spec.empty() && spec.back() != '/' && spec.find('=') == std::string::npos) check_writable("-o", spec);
  const Runner runner = make_runner(cmd, model, a.exec);
  const TensorMap out = runner.run(inputs);
  std::vector<std::string> order;
  for (const auto& o : model.outputs) order.push_back(o.name);
  const auto written = write_outputs("-o", a.outputs, out, order);
  if (a.json) {
    Json j;
    j["model"] = a.model;
    j["mode"] = to_string(runner.mode());
    j["description"] = runner.describe();
    Json in = Json::array(), outs = Json::array();
    for (const auto& kv : inputs) in.push_back(tensor_json(kv.first, "", kv.second));
    for (const auto& w : written) outs.push_back(tensor_json(w.first, w.second, out.at(w.first)));
    j["inputs"] = in;
    j["outputs"] = outs;
    print_integer_report(runner, a.exec, &j);
    print_json(j);
    return;
  }
  fmt::print("ran '{}': {}\n", a.model, runner.describe());
  for (const auto& kv : inputs)
    fmt::print("  input  {} {} {}\n", kv.first, graph::to_string(kv.second.dtype()), kv.second.shape().to_string());
  for (const auto& w : written) {
    const graph::Tensor& t = out.at(w.first);
    fmt::print("  output {} {} {} -> {}\n", w.first, graph::to_string(t.dtype()), t.shape().to_string(), w.second);
  }
  print_integer_report(runner, a.exec, nullptr);
}

// ---------------------------------------------------------------------------------------------
struct EvalArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string labels;
  std::string output;
  std::string eval_batch = "256";
  bool json = false;
  ExecOptions exec;
};

void run_eval(const CLI::App* cmd, const EvalArgs& a) {
  const graph::Graph model = read_model(a.model);
  const TensorMap inputs = read_inputs("--input", a.inputs, model);
  const std::int64_t batch = parse_int("--eval-batch", a.eval_batch, 1, std::int64_t{1} << 40);
  std::string output = a.output;
  if (output.empty()) output = model.outputs.at(0).name;
  if (!model.is_output(output)) {
    std::string names;
    for (const auto& o : model.outputs) names += (names.empty() ? "'" : ", '") + o.name + "'";
    usage_fail("--output ", output, ": model '", a.model, "' has no output of that name; expected one of ", names);
  }
  const graph::Tensor labels_t = read_npy(a.labels);
  if (labels_t.dtype() == graph::DType::float32)
    quantkit::detail::fail("--labels: file '", a.labels, "' holds float32; expected integer class indices "
                           "(int64, int32, uint8 or int8)");
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < labels_t.size(); ++i) labels.push_back(labels_t.as_int64(i));
  const std::int64_t n = inputs.begin()->second.rank() > 0 ? inputs.begin()->second.dim(0) : 1;
  const bool label_shape_ok = (labels_t.rank() == 1 || (labels_t.rank() == 2 && labels_t.dim(1) == 1)) &&
                              labels_t.rank() >= 1 && labels_t.dim(0) == n;
  if (!label_shape_ok)
    quantkit::detail::fail("--labels: file '", a.labels, "' has shape ", labels_t.shape().to_string(), "; expected [",
                           n, "] (one class index per input sample)");
  for (const auto& kv : inputs)
    if (kv.second.rank() < 1 || kv.second.dim(0) != n)
      quantkit::detail::fail("--input: input '", kv.first, "' has shape ", kv.second.shape().to_string(),
                             "; expected ", n, " samples along the first axis like the other inputs");

  const Runner runner = make_runner(cmd, model, a.exec);
  std::int64_t correct = 0;
  for (std::int64_t start = 0; start < n; start += batch) {
    const std::int64_t rows = std::min(batch, n - start);
    TensorMap b;
    for (const auto& kv : inputs) b.emplace(kv.first, slice_rows(kv.second, start, rows));
    const TensorMap out = runner.run(b);
    const graph::Tensor& logits = out.at(output);
    if (logits.dtype() != graph::DType::float32 || logits.rank() < 2 || logits.dim(0) != rows)
      quantkit::detail::fail("model '", a.model, "' output '", output, "' is ", graph::to_string(logits.dtype()), " ",
                             logits.shape().to_string(), "; expected float32 scores [", rows, ", classes]");
    const std::int64_t classes = logits.size() / rows;
    const float* p = logits.data<float>();
    for (std::int64_t i = 0; i < rows; ++i) {
      const float* row = p + i * classes;
      const std::int64_t best = std::max_element(row, row + classes) - row;
      correct += best == labels[static_cast<std::size_t>(start + i)];
    }
  }
  const double accuracy = n > 0 ? 100.0 * static_cast<double>(correct) / static_cast<double>(n) : 0.0;
  if (a.json) {
    Json j;
    j["model"] = a.model;
    j["mode"] = to_string(runner.mode());
    j["description"] = runner.describe();
    j["output"] = output;
    j["samples"] = n;
    j["correct"] = correct;
    j["accuracy"] = accuracy;
    print_integer_report(runner, a.exec, &j);
    print_json(j);
    return;
  }
  fmt::print("top-1 accuracy {:.2f} % ({} of {}) of '{}' output '{}': {}\n", accuracy, correct, n, a.model, output,
             runner.describe());
  print_integer_report(runner, a.exec, nullptr);
}

}  // namespace

void add_run(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "run a model on .npy inputs and write its outputs as .npy");
  cmd->add_option("model", args->model, "the ONNX model (float or QDQ)")->required()->type_name("MODEL.onnx");
  cmd->add_option("--input", args->inputs, "X.npy for a single-input model, NAME=X.npy per input (repeatable)")
      ->required()
      ->type_name("[NAME=]X.npy")
      ->allow_extra_args(false);
  cmd->add_option("-o,--output", args->outputs,
                  "Y.npy (single-output model), NAME=Y.npy per output (repeatable), or DIR/ (every output as "
                  "DIR/NAME.npy)")
      ->required()
      ->type_name("[NAME=]Y.npy|DIR/")
      ->allow_extra_args(false);
  add_exec_options(cmd, args->exec, "float");
  cmd->add_flag("--json", args->json, "print what was run and written as JSON");
  cmd->callback([cmd, args] { run_run(cmd, *args); });
}

void add_eval(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "top-1 accuracy of a classifier on .npy inputs and labels");
  cmd->add_option("model", args->model, "the ONNX model (float or QDQ)")->required()->type_name("MODEL.onnx");
  cmd->add_option("--input", args->inputs, "X.npy for a single-input model, NAME=X.npy per input (repeatable)")
      ->required()
      ->type_name("[NAME=]X.npy")
      ->allow_extra_args(false);
  cmd->add_option("--labels", args->labels, "class indices [N] (int64, int32, uint8 or int8)")
      ->required()
      ->type_name("Y.npy");
  cmd->add_option("--output", args->output, "the scores output [N, classes] (default: the first output)")
      ->type_name("NAME");
  cmd->add_option("--eval-batch", args->eval_batch, "samples per executor run")->type_name("N")->capture_default_str();
  add_exec_options(cmd, args->exec, "float");
  cmd->add_flag("--json", args->json, "print the accuracy as JSON");
  cmd->callback([cmd, args] { run_eval(cmd, *args); });
}

}  // namespace cli
}  // namespace quantkit
