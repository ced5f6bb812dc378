// The quantkit command-line tool: what the subcommands share. Kept light (no executor, no
// ONNX headers) so each subcommand's translation unit compiles on its own; the heavy parts
// live in calibrate_model.cpp (GraphCalibrator over every observer), execute.cpp (the three
// executor modes, six requantization schemes) and model_io.cpp (ONNX reading).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "quantkit/error.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/io/npy.hpp"
#include "quantkit/observer/observer.hpp"
#include "quantkit/ptq/config.hpp"

namespace CLI {
class App;
}

namespace quantkit {
namespace cli {

using TensorMap = std::map<std::string, graph::Tensor>;
using Json = nlohmann::ordered_json;

// A bad command line (exit status 2); quantkit::Error is a bad input file or model (exit 1).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
template <class... Parts>
[[noreturn]] void usage_fail(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  throw UsageError(out.str());
}

// ---------------------------------------------------------------------------------------------
// Subcommands (one translation unit each): add the subcommand and its callback to `app`.
void add_quantize(CLI::App& app);
void add_run(CLI::App& app);
void add_eval(CLI::App& app);
void add_calibrate(CLI::App& app);
void add_compare(CLI::App& app);
void add_info(CLI::App& app);
void add_export_cpp(CLI::App& app);
void add_debug(CLI::App& app);

// The self-contained HTML page of `quantkit debug runall` from its JSON report (debug_report.cpp).
std::string render_debug_report(const Json& report);

// ---------------------------------------------------------------------------------------------
// Option values (common.cpp). Each parser names the option and the value in its error.
std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t lo, std::int64_t hi);
double parse_double(const std::string& option, const std::string& text);  // finite
std::vector<std::string> split_list(const std::vector<std::string>& items);  // "a,b" "c" -> a b c

enum class ObserverKind { minmax, moving_average, percentile, histogram, mse, kl, automatic, mix };
struct ObserverSpec {
  ObserverKind kind = ObserverKind::minmax;
  double percent = 99.99;          // percentile:P, P in (0, 100]
  double averaging_constant = 0.01;  // moving-average[:C], C in (0, 1]
  std::string text;                // as given
};
// minmax | moving-average[:C] | percentile:P | histogram | mse | kl | auto | mix (whole models only:
// KL, and max or percentile 99.995 for the nodes sensitive to it; calibrate_model)
ObserverSpec parse_observer(const std::string& option, const std::string& text);

enum class ScaleKind { float_multiplier, pow2, fixed_point, single_shift, double_shift };
// float | pow2 | fixed-point | single-shift | double-shift
ScaleKind parse_scale(const std::string& option, const std::string& text);
const char* to_string(ScaleKind s);

enum class Mode { float_, fake, integer };
Mode parse_mode(const std::string& option, const std::string& text);
const char* to_string(Mode m);

// ---------------------------------------------------------------------------------------------
// The quantize options, shared by quantize (always) and run/eval/compare (--mode fake|int on
// a float model: calibrate in memory exactly as quantize would).
struct QuantOptions {
  std::vector<std::string> calib;  // CALIB.npy (single-input model) or NAME=CALIB.npy
  std::string weight_bits = "8";
  std::string act_bits = "8";
  std::string weight_granularity = "per-channel";
  std::string observer = "minmax";
  bool symmetric_activations = false;
  bool reduce_range = false;  // PtqConfig::reduce_range (weights)
  std::string rounding = "half-even";
  std::vector<std::string> keep_float;
  std::vector<std::string> int16;
  std::string batch = "64";
  bool progress = false;
  // Accuracy remedies (PtqConfig): cross-layer equalization, bias correction, AdaRound
  // ("" = off; a flag without a value means AdaRoundOptions::default_iterations).
  bool cle = false;
  bool bias_correction = false;
  std::string adaround;
};
// Adds --calib, --weight-bits, ... to `cmd`.
void add_quant_options(CLI::App* cmd, QuantOptions& o);
// The options add_quant_options adds that choose the quantization (not --calib, --batch, --progress).
const std::vector<std::string>& quantization_option_names();
// True when any quantize option was given (so calibration is asked for).
bool quant_options_given(const CLI::App* cmd);
// The PtqConfig the options describe, checked against the model (node names).
ptq::PtqConfig make_config(const QuantOptions& o, const graph::Graph& model);

// --mode, --scale and the quantize options of run/eval/compare, and the Runner they describe:
// a float model with --calib is calibrated in memory first (fake: the fake-quant executor mode;
// int: converted to QDQ and run by the integer mode).
struct ExecOptions {
  std::string mode = "float";
  std::string scale = "fixed-point";
  bool ort_no_vnni = false;  // --mode int: ONNX Runtime's int16 pair sums (x86-64 without VNNI)
  QuantOptions quant;
};
void add_exec_options(CLI::App* cmd, ExecOptions& o, const std::string& default_mode);
class Runner;
Runner make_runner(const CLI::App* cmd, const graph::Graph& model, const ExecOptions& o);
// Fails (usage) when an output path's folder does not exist or is not writable, before any work.
void check_writable(const std::string& option, const std::string& path);

// The ranges one observer picks for one tensor (calibrate_model.cpp, where the observers are
// compiled once): batches of `batch` rows along axis 0; `methods` (per slot) for the observers
// that choose a method (percentile, kl, mse, auto).
struct TensorCalibration {
  std::vector<Range> ranges;
  std::vector<std::string> methods;
};
TensorCalibration observe_tensor(const graph::Tensor& t, const ObserverSpec& spec, Granularity granularity,
                                 const QuantTarget& target, std::int64_t batch);

// Loads the calibration data, runs the calibrator with the chosen observer (progress bar on
// stderr when it is a terminal or with --progress) and returns the calibrated model
// (calibrate_model.cpp).
ptq::QuantizedModel calibrate_model(const graph::Graph& model, const QuantOptions& o, std::int64_t* samples = nullptr);
// The samples the accuracy measurements of --observer mix and --auto-mixed use: the first
// `mix_samples` rows of the calibration data.
inline constexpr std::int64_t mix_samples = 64;

// quantize --auto-mixed TARGET (analysis::auto_mixed_precision): nodes raised to int16, then
// float, worst first, until the output cosine on the first mix_samples calibration samples
// reaches TARGET.
struct AutoMixedStep {
  std::string node;
  std::string action;  // "int16" or "float"
  double cosine = 0;
};
struct AutoMixedReport {
  double target = 0, initial_cosine = 0, final_cosine = 0;
  bool reached = false;
  std::int64_t samples = 0;
  std::vector<AutoMixedStep> steps;
  std::vector<std::string> int16_nodes, keep_float;
};
ptq::QuantizedModel calibrate_auto_mixed(const graph::Graph& model, const QuantOptions& o, double target,
                                         AutoMixedReport& report, std::int64_t* samples = nullptr);

// ---------------------------------------------------------------------------------------------
// Data files (common.cpp): .npy as float32, int8, uint8, int16, uint16, int32 or int64, C order.
graph::Tensor read_npy(const std::string& path);
// The graph element type of a .npy dtype; an error naming `file` for float64.
graph::DType graph_dtype_of(npy::DType t, const std::string& file);
// "X.npy" (the model's single input) or "NAME=X.npy"; element types and shapes are checked
// against the model's declared inputs (errors name the option, the file and the input).
TensorMap read_inputs(const std::string& option, const std::vector<std::string>& specs, const graph::Graph& model);
// -o Y.npy (single output), -o NAME=Y.npy (repeatable), -o DIR/ (every output as DIR/NAME.npy).
// Returns {output name, file} in the order written.
std::vector<std::pair<std::string, std::string>> write_outputs(const std::string& option,
                                                               const std::vector<std::string>& specs,
                                                               const TensorMap& outputs,
                                                               const std::vector<std::string>& output_order);
void write_npy(const std::string& path, const graph::Tensor& t);
// The first `rows` rows starting at `start` of a tensor (batching along axis 0).
graph::Tensor slice_rows(const graph::Tensor& t, std::int64_t start, std::int64_t rows);

// ---------------------------------------------------------------------------------------------
// Models (model_io.cpp).
// Reads an ONNX model for execution. Beyond onnx::load: 4-bit initializers (int4/uint4, opset
// 21) are unpacked to int8/uint8 (the same values; DequantizeLinear is unchanged) and blocked
// DequantizeLinear of an initializer (per-group weights) is folded into a float initializer,
// so every QDQ model `quantkit quantize` writes runs (16-bit tensors as they are).
graph::Graph read_model(const std::string& path);
// Already quantized: QuantizeLinear/DequantizeLinear (QDQ) or QLinear*/*Integer ops.
bool is_quantized(const graph::Graph& g);
// Serializes a calibrated model as QDQ ONNX and reads it back as read_model would (for the
// integer mode on a float model calibrated in memory).
graph::Graph qdq_graph(const ptq::QuantizedModel& qm);
// onnx::save_qdq (atomic write, libonnx's checker where it knows the opset), summarized.
struct QdqSummary {
  std::int64_t opset = 0;
  std::size_t activation_pairs = 0;
  std::size_t quantized_initializers = 0;
  bool checked = false;
  std::string check_note;
};
QdqSummary write_qdq(const ptq::QuantizedModel& qm, const std::string& path);
// onnx::save_qoperator (QLinearConv/QLinearMatMul/com.microsoft QLinear* ops), summarized.
struct QOperatorSummary {
  std::int64_t opset = 0;
  bool checked = false;
  std::string check_note;
  std::size_t qoperator_nodes = 0, quantize_nodes = 0, dequantize_nodes = 0, requantize_nodes = 0;
  std::map<std::string, std::size_t> ops;  // op type -> count
  std::vector<std::pair<std::string, std::string>> float_nodes;  // node, why it stays float
};
QOperatorSummary write_qoperator(const ptq::QuantizedModel& qm, const std::string& path);

// What the integer mode did with one compute node (quantkit::IntegerNodeInfo).
struct NodeReport {
  std::string node;
  std::string op;
  bool integer = false;
  std::string detail;  // the integer op, or why it stayed float
};

// ---------------------------------------------------------------------------------------------
// Execution (execute.cpp): float, fake-quant or integer-only.
//   float:  the model as written (a QDQ model computes its QuantizeLinear/DequantizeLinear).
//   fake:   a QDQ model runs as float ops (its Q/DQ pairs are the fake quantization); a float
//           model needs calibration (`qm`): the fake-quant executor mode (what the QDQ file
//           quantize would write computes).
//   int:    IntegerModeT<scheme> on the QDQ graph (a float model: calibrated, then converted).
class Runner {
 public:
  // ort_no_vnni: the integer mode sums uint8 x int8 pairs in int16 as ONNX Runtime does on x86-64 without VNNI.
  Runner(const graph::Graph& model, const ptq::QuantizedModel* qm, Mode mode, ScaleKind scale, bool ort_no_vnni = false);
  ~Runner();
  Runner(Runner&&) noexcept;
  TensorMap run(const TensorMap& inputs, bool keep_intermediates = false) const;
  const graph::Graph& graph() const;  // the graph executed (after the mode's rewriting)
  Mode mode() const;
  // Integer mode: what happened to every compute node.
  const std::vector<NodeReport>& integer_report() const;
  std::string describe() const;  // "float", "fake-quant (QDQ model)", "integer (fixed-point)"

  struct Impl;  // defined in execute.cpp

 private:
  std::unique_ptr<Impl> impl_;
};
Json integer_report_json(const std::vector<NodeReport>& report);
// Text lines: "integer mode (fixed-point): 9 of 11 compute nodes in integers" and the others;
// `brief_scale_reasons`: "a multiplier the scheme cannot express" without the details (printed
// in quantize's requantization table).
std::vector<std::string> integer_report_lines(const std::vector<NodeReport>& report, ScaleKind scale,
                                              bool brief_scale_reasons = false);

// What --scale means for a QDQ file: for every layer the integer mode would requantize, the
// multipliers s_in * s_w / s_out (s_in / s_out, Add's three) expressed in the scheme: the
// relative error of the approximation, or why the scheme cannot express one.
struct LayerScale {
  std::string node;
  std::string op;
  std::size_t multipliers = 0;
  double min_multiplier = 0, max_multiplier = 0;
  double max_relative_error = 0;  // |approximation - m| / m, worst multiplier of the layer
  std::string error;              // non-empty: the scheme cannot express a multiplier
};
std::vector<LayerScale> check_scale(const ptq::QuantizedModel& qm, ScaleKind scale);

// ---------------------------------------------------------------------------------------------
// Output helpers (common.cpp).
// A progress bar on stderr ("\r[#####.....] 5/9 label"), drawn only when enabled.
class Progress {
 public:
  Progress(std::string label, bool enabled);
  ~Progress();
  void update(std::size_t done, std::size_t total);

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
};
bool stderr_is_terminal();
void print_json(const Json& j);
// "1.23e-05", "inf", "0.999998": compact numbers for tables.
std::string format_number(double v, int significant = 6);
// JSON number, or the strings "inf"/"-inf"/"nan" (JSON has no infinities).
Json json_number(double v);

}  // namespace cli
}  // namespace quantkit
