// quantkit debug <verb> FLOAT.onnx --calib CALIB.npy [quantize options]: where the quantized
// model loses accuracy (quantkit/analysis/{sensitivity,partial,distribution}.hpp). The model is
// calibrated in memory as `quantize` would; every measurement runs the fake-quant executor mode
// on the first --samples samples (of --input, or of the calibration data) against the float model.
//   sensitivity   one node (or weight, or activation) quantized at a time, sorted worst first
//   acc-error     the error of every value along the graph for (partially) quantized models
//   distribution  histograms: a node's float vs quantized output and their error, or a weight /
//                 activation with the clipping range of its quantization parameters
//   channelwise   per-channel box statistics of a weight or activation
//   partial       the sensitive nodes, and the output when the first k of them stay float
//   runall        all of them into OUTDIR/report.html (self-contained) and OUTDIR/report.json
// --quantized Q.onnx takes the quantization from a QDQ file of the model (ptq::import_qdq) instead.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "quantkit/analysis/distribution.hpp"
#include "quantkit/analysis/ort_saturation.hpp"
#include "quantkit/analysis/partial.hpp"
#include "quantkit/analysis/sensitivity.hpp"
#include "quantkit/io/atomic_file.hpp"
#include "quantkit/ptq/import_qdq.hpp"

namespace quantkit {
namespace cli {

namespace qa = quantkit::analysis;

namespace {

struct DebugArgs {
  std::string model;
  std::string quantized;            // a QDQ file of `model` instead of calibrating it
  QuantOptions quant;
  std::vector<std::string> inputs;  // measurement samples (default: the calibration data)
  std::string samples = "64";
  std::string output;               // the value measured
  std::vector<std::string> metrics;
  bool json = false;
  // sensitivity
  std::string type = "node";
  std::vector<std::string> nodes;
  // acc-error
  std::vector<std::string> only;     // each occurrence: one partially quantized model
  std::vector<std::string> all_but;
  bool weight_only = false, activation_only = false, average = false;
  // distribution / channelwise
  std::string node, weight, activation;
  std::string bins = "64";
  std::string axis;
  // partial / runall
  std::string threshold = "0.999";
  std::string top = "5";
  std::string out_dir;
};

std::vector<qa::Metric> parse_metrics(const std::vector<std::string>& items) {
  std::vector<qa::Metric> out;
  for (const auto& m : split_list(items)) {
    try {
      out.push_back(qa::parse_metric(m, "--metric"));
    } catch (const Error& e) {
      usage_fail(std::string(e.what()).substr(10));
    }
  }
  if (out.empty()) out = qa::all_metrics();
  return out;
}

double parse_threshold(const std::string& text) {
  const double v = parse_double("--threshold", text);
  if (!(v > -1.0) || !(v <= 1.0)) usage_fail("--threshold '", text, "': expected a cosine in (-1, 1], e.g. 0.999");
  return v;
}

// The model, its calibration and the samples every verb measures on.
struct Context {
  graph::Graph model;
  std::unique_ptr<qa::DebugSession> session;
  std::int64_t calib_samples = 0;
  std::int64_t samples = 0;
  std::string scheme;

  const ptq::QuantizedModel& qm() const { return session->model(); }
};

std::string scheme_text(const QuantOptions& o) {
  std::string s = fmt::format("W{}A{}, {} weights, {} activations, observer {}", o.weight_bits, o.act_bits,
                              o.weight_granularity, o.symmetric_activations ? "symmetric" : "affine", o.observer);
  if (o.reduce_range) s += ", 7-bit weights (reduce range)";
  if (!o.keep_float.empty()) s += ", float: " + fmt::format("{}", fmt::join(split_list(o.keep_float), ","));
  if (!o.int16.empty()) s += ", int16: " + fmt::format("{}", fmt::join(split_list(o.int16), ","));
  return s;
}

Context make_context(const CLI::App* cmd, const DebugArgs& a) {
  Context c;
  const std::int64_t n = parse_int("--samples", a.samples, 1, std::int64_t{1} << 30);
  if (!a.quantized.empty()) {
    for (const auto& o : quantization_option_names())
      if (cmd->count(o))
        usage_fail(o, ": the quantization comes from --quantized '", a.quantized,
                   "'; expected no quantize options with it (only --calib or --input for the samples)");
    if (a.inputs.empty() && a.quant.calib.empty())
      usage_fail("--quantized: no samples to measure on; expected --input X.npy or --calib CALIB.npy");
  } else if (a.quant.calib.empty()) {
    usage_fail("--calib: no calibration data given; expected --calib CALIB.npy (or --quantized Q.onnx and --input)");
  }
  c.model = read_model(a.model);
  if (is_quantized(c.model))
    quantkit::detail::fail("model '", a.model, "' is already quantized; expected the float model (quantkit debug "
                           "calibrates it with --calib and the quantize options, or takes its QDQ file with --quantized)");
  ptq::QuantizedModel qm;
  if (!a.quantized.empty()) {
    const graph::Graph qdq = read_model(a.quantized);
    if (!is_quantized(qdq))
      quantkit::detail::fail("--quantized '", a.quantized, "' has no QuantizeLinear/DequantizeLinear; expected the QDQ "
                             "model of '", a.model, "'");
    qm = ptq::import_qdq(c.model, qdq);
  } else {
    qm = calibrate_model(c.model, a.quant, &c.calib_samples);
  }
  TensorMap inputs = a.inputs.empty() ? read_inputs("--calib", a.quant.calib, c.model) : read_inputs("--input", a.inputs, c.model);
  for (auto& kv : inputs)
    if (kv.second.rank() > 0 && kv.second.dim(0) > n) kv.second = slice_rows(kv.second, 0, n);
  c.samples = inputs.begin()->second.rank() > 0 ? inputs.begin()->second.dim(0) : 1;
  qa::DebugOptions opt;
  opt.output = a.output;
  c.session = std::make_unique<qa::DebugSession>(std::move(qm), std::move(inputs), opt);
  c.scheme = a.quantized.empty() ? scheme_text(a.quant) : "imported from the QDQ model '" + a.quantized + "'";
  return c;
}

Json similarity_json(const qa::Similarity& s) {
  Json j;
  for (auto m : qa::all_metrics()) j[qa::to_string(m)] = json_number(s.get(m));
  return j;
}

Json histogram_json(const qa::Histogram& h) {
  return Json{{"lo", h.lo}, {"hi", h.hi}, {"counts", h.counts}, {"total", h.total},
              {"min", h.min}, {"max", h.max}, {"max_abs", h.max_abs}};
}

Json header_json(const Context& c, const DebugArgs& a) {
  return Json{{"model", a.model},        {"scheme", c.scheme},     {"output", c.session->output()},
              {"samples", c.samples},    {"calibration_samples", c.calib_samples},
              {"quantized_nodes", c.qm().quantized_nodes.size()}};
}

// ---------------------------------------------------------------------------------------------
Json sensitivity_json(const qa::SensitivityResult& r) {
  Json j{{"type", qa::to_string(r.part)}, {"output", r.output}, {"full", similarity_json(r.full)}};
  Json ms = Json::array();
  for (auto m : r.metrics) ms.push_back(qa::to_string(m));
  j["metrics"] = ms;
  Json rows = Json::array();
  for (const auto& row : r.rows) {
    Json x{{"node", row.node}, {"op", row.op}};
    if (!row.tensor.empty()) x["tensor"] = row.tensor;
    x["metrics"] = similarity_json(row.metrics);
    rows.push_back(x);
  }
  j["rows"] = rows;
  return j;
}

qa::SensitivityResult measure_sensitivity(const Context& c, qa::QuantPart part, const std::vector<qa::Metric>& metrics,
                                          const std::vector<std::string>& nodes = {}) {
  qa::SensitivityOptions o;
  o.part = part;
  o.metrics = metrics;
  o.nodes = nodes;
  return c.session->sensitivity(o);
}

Json curve_json(const qa::ErrorCurve& c) {
  Json rows = Json::array();
  for (const auto& r : c.rows) {
    Json x{{"value", r.value}, {"node", r.node}, {"op", r.op}};
    if (r.error.empty()) x["metrics"] = similarity_json(r.metrics);
    else x["error"] = r.error;
    rows.push_back(x);
  }
  Json avg;
  for (auto m : qa::all_metrics()) {
    Json v = Json::array();
    for (double d : qa::running_mean(c, m)) v.push_back(json_number(d));
    avg[qa::to_string(m)] = v;
  }
  return Json{{"label", c.label}, {"rows", rows}, {"average", avg}};
}

Json acc_error_json(const Context& c, const DebugArgs& a) {
  const auto& qm = c.qm();
  Json curves = Json::array();
  bool any = false;
  for (const auto& spec : a.only) {
    const auto nodes = split_list({spec});
    curves.push_back(curve_json(c.session->error_curve(qa::restrict_to(qm, nodes, qa::QuantPart::node),
                                                       "only " + fmt::format("{}", fmt::join(nodes, ",")))));
    any = true;
  }
  for (const auto& spec : a.all_but) {
    const auto nodes = split_list({spec});
    curves.push_back(curve_json(c.session->error_curve(qa::keep_in_float(qm, nodes),
                                                       "all but " + fmt::format("{}", fmt::join(nodes, ",")))));
    any = true;
  }
  if (a.weight_only) {
    curves.push_back(curve_json(c.session->error_curve(qa::restrict_to(qm, qm.quantized_nodes, qa::QuantPart::weight),
                                                       "weight only")));
    any = true;
  }
  if (a.activation_only) {
    curves.push_back(curve_json(c.session->error_curve(
        qa::restrict_to(qm, qm.quantized_nodes, qa::QuantPart::activation), "activation only")));
    any = true;
  }
  if (!any) curves.push_back(curve_json(c.session->error_curve(qm, "fully quantized")));
  return Json{{"curves", curves}};
}

// The float values of `value` on the samples (any value the float graph computes or reads).
graph::Tensor float_value(const Context& c, const std::string& value) {
  const auto& g = c.qm().graph;
  auto init = g.initializers.find(value);
  if (init != g.initializers.end()) return init->second;
  auto in = c.session->inputs().find(value);
  if (in != c.session->inputs().end()) return in->second;
  if (!g.producers().count(value))
    quantkit::detail::fail("value '", value, "' is not computed by model '", g.source, "'; expected a node output, ",
                           "a graph input or an initializer (quantkit info lists them)");
  Executor<> ex(g);
  RunOptions opt;
  opt.outputs = {value};
  auto out = ex.run(c.session->inputs(), opt);
  return out.at(value);
}

const graph::Node& find_node(const graph::Graph& g, const std::string& key) {
  for (const auto& n : g.nodes)
    if (ptq::node_key(n) == key) return n;
  quantkit::detail::fail("--node '", key, "': no such node in model '", g.source,
                         "'; expected a node name (or first output of an unnamed node) quantkit info lists");
}

// Float vs quantized output of a node (the fully quantized model), and their difference.
Json node_distribution_json(const Context& c, const std::string& key, int bins) {
  const auto& g = c.qm().graph;
  const graph::Node& n = find_node(g, key);
  if (n.outputs.empty() || n.outputs[0].empty()) n.fail("has no output to show");
  const std::string v = n.outputs[0];
  RunOptions opt;
  opt.outputs = {v};
  const graph::Tensor x = Executor<>(g).run(c.session->inputs(), opt).at(v);
  const graph::Tensor y =
      Executor<ptq::FakeQuantMode>(g, ptq::FakeQuantMode(c.qm())).run(c.session->inputs(), opt).at(v);
  if (x.dtype() != graph::DType::float32) n.fail("output '", v, "' is not float32; expected a float value to show");
  std::vector<float> d(static_cast<std::size_t>(x.size()));
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = y.data<float>()[i] - x.data<float>()[i];
  const graph::Tensor diff = graph::Tensor::from_vector<float>(x.shape(), d, v + " (error)");
  // One range for both histograms: the union of the float and the quantized values.
  const qa::Histogram hx = qa::histogram(x.view<float>().named(v), 1), hy = qa::histogram(y.view<float>().named(v), 1);
  const double lo = std::min(hx.min, hy.min), hi = std::max(hx.max, hy.max);
  return Json{{"kind", "node"},
              {"node", key},
              {"op", n.op_type},
              {"value", v},
              {"float", histogram_json(qa::histogram(x.view<float>().named(v), bins, lo, hi))},
              {"quantized", histogram_json(qa::histogram(y.view<float>().named(v), bins, lo, hi))},
              {"error", histogram_json(qa::histogram(diff.view<float>().named(v + " (error)"), bins))},
              {"metrics", similarity_json(qa::similarity(x.view<float>().named(v), y.view<float>().named(v)))}};
}

// A weight or activation with the range its quantization keeps.
Json tensor_distribution_json(const Context& c, const std::string& tensor, bool weight, int bins) {
  const ptq::TensorQuant* q = c.qm().find(tensor);
  const bool right_role = q && (weight ? q->role == ptq::TensorRole::weight : q->role == ptq::TensorRole::activation);
  if (!right_role)
    quantkit::detail::fail(weight ? "--weight '" : "--activation '", tensor, "': not a quantized ",
                           weight ? "weight" : "activation", " of the model; expected one of the names `quantkit debug ",
                           "sensitivity --type ", weight ? "weight" : "activation", "` lists");
  const graph::Tensor t = float_value(c, tensor);
  const auto view = t.view<float>().named(tensor);
  const qa::ClippingRange clip = qa::clipping_range(*q);
  const qa::Histogram full = qa::histogram(view, 1);
  const double lo = std::min(full.min, clip.lo), hi = std::max(full.max, clip.hi);
  const qa::Histogram h = qa::histogram(view, bins, lo, hi);
  const std::int64_t clipped = qa::saturated_count(view, q->params);
  return Json{{"kind", weight ? "weight" : "activation"},
              {"tensor", tensor},
              {"node", q->node},
              {"format", q->format.name()},
              {"histogram", histogram_json(h)},
              {"clip", {{"lo", clip.lo}, {"hi", clip.hi}, {"narrow_lo", clip.narrow_lo}, {"narrow_hi", clip.narrow_hi},
                        {"channels", clip.channels}}},
              {"max_abs", full.max_abs},
              {"clipped", clipped},
              {"clipped_fraction", h.total ? static_cast<double>(clipped) / static_cast<double>(h.total) : 0.0}};
}

Json channelwise_json(const Context& c, const std::string& tensor, bool weight, int axis_given, bool has_axis) {
  const ptq::TensorQuant* q = c.qm().find(tensor);
  if (weight && (!q || q->role != ptq::TensorRole::weight))
    quantkit::detail::fail("--weight '", tensor, "': not a quantized weight of the model; expected one of the names ",
                           "`quantkit debug sensitivity --type weight` lists");
  const graph::Tensor t = float_value(c, tensor);
  if (t.dtype() != graph::DType::float32)
    quantkit::detail::fail("'", tensor, "' has element type ", graph::to_string(t.dtype()), "; expected float32");
  // Weights: the output-channel axis the quantizer uses; activations: axis 1 (NCHW channels).
  int axis = has_axis ? axis_given : (weight ? q->params.granularity.axis : (t.rank() > 1 ? 1 : 0));
  if (weight && !has_axis && q->params.granularity.kind != GranularityKind::per_channel) axis = 0;
  const auto stats = qa::channel_stats(t.view<float>().named(tensor), axis);
  Json ch = Json::array();
  std::vector<double> ranges;
  for (const auto& s : stats) {
    ch.push_back(Json{{"channel", s.channel}, {"count", s.count}, {"min", s.min}, {"q1", s.q1}, {"median", s.median},
                      {"q3", s.q3}, {"max", s.max}, {"mean", s.mean}, {"whisker_lo", s.whisker_lo},
                      {"whisker_hi", s.whisker_hi}, {"outliers", s.outliers}, {"extreme", s.extreme}});
    ranges.push_back(std::max(std::fabs(s.min), std::fabs(s.max)));
  }
  // How uneven the channels are: largest max|x| over the median channel's max|x| (a per-tensor
  // scale wastes log2(ratio) bits on the typical channel).
  std::vector<double> sorted = ranges;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
  const double ratio = median > 0 ? sorted.back() / median : 0.0;
  std::size_t widest = 0;
  for (std::size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i] > ranges[widest]) widest = i;
  return Json{{"kind", weight ? "weight" : "activation"}, {"tensor", tensor}, {"axis", axis},
              {"shape", graph::to_vector(t.shape())}, {"channels", ch}, {"range_ratio", json_number(ratio)},
              {"widest_channel", widest}};
}

Json partial_json(const qa::PartialResult& p) {
  Json sens = Json::array();
  for (const auto& r : p.sensitive) sens.push_back(Json{{"node", r.node}, {"op", r.op}, {"metrics", similarity_json(r.metrics)}});
  Json steps = Json::array();
  for (const auto& s : p.steps)
    steps.push_back(Json{{"k", s.float_nodes}, {"kept_float", s.kept_float}, {"metrics", similarity_json(s.metrics)}});
  return Json{{"threshold", p.threshold}, {"output", p.output}, {"full", similarity_json(p.full)},
              {"sensitive", sens}, {"steps", steps}};
}

// ONNX Runtime's int16 pair sums on x86-64 without VNNI (analysis/ort_saturation.hpp).
Json ort_saturation_json(const std::vector<qa::OrtSaturationRow>& rows) {
  Json out = Json::array();
  std::size_t checked = 0, saturating = 0;
  for (const auto& r : rows) {
    Json x{{"node", r.node}, {"op", r.op}, {"input", r.input}, {"weight", r.weight}, {"formats", r.formats},
           {"checked", r.checked}};
    if (!r.checked) {
      x["reason"] = r.reason;
    } else {
      ++checked;
      saturating += r.saturates();
      const auto& t = r.stats;
      x.update(Json{{"reduction", t.reduction}, {"outputs", t.outputs}, {"pairs", t.pairs},
                    {"saturated_pairs", t.saturated_pairs}, {"affected_outputs", t.affected_outputs},
                    {"max_pair", t.max_pair}, {"min_pair", t.min_pair}, {"max_accumulator_error", t.max_error},
                    {"max_error", json_number(r.max_real_error)}, {"max_error_steps", json_number(r.max_output_steps)}});
    }
    out.push_back(x);
  }
  return Json{{"rows", out}, {"checked", checked}, {"saturating", saturating}};
}

// What the saturation does to the measured output: the integer mode (float requantization, as
// ONNX Runtime) with and without its pair sums, against the float model on the same samples.
Json ort_effect_json(const Context& c) {
  const Runner exact(c.model, &c.qm(), Mode::integer, ScaleKind::float_multiplier, false);
  const Runner ort(c.model, &c.qm(), Mode::integer, ScaleKind::float_multiplier, true);
  const std::string& name = c.session->output();
  // intermediates kept only when the value measured is not a graph output (--output VALUE)
  const bool keep = std::none_of(c.model.outputs.begin(), c.model.outputs.end(),
                                 [&](const graph::ValueInfo& v) { return v.name == name; });
  const TensorMap ye = exact.run(c.session->inputs(), keep), yo = ort.run(c.session->inputs(), keep);
  const auto e = ye.find(name), o = yo.find(name);
  if (e == ye.end() || o == yo.end() || e->second.dtype() != graph::DType::float32 ||
      o->second.dtype() != graph::DType::float32)
    return Json{{"output", name}, {"error", "the integer mode does not compute '" + name + "' as a float value"}};
  const graph::Tensor& f = c.session->reference_output();
  const auto fv = f.view<float>().named(name + " (float)");
  const auto ev = e->second.view<float>().named(name + " (integer)");
  const auto ov = o->second.view<float>().named(name + " (integer, ONNX Runtime's pair sums)");
  Json j{{"output", name},
         {"integer_vs_float", similarity_json(qa::similarity(fv, ev))},
         {"ort_no_vnni_vs_float", similarity_json(qa::similarity(fv, ov))},
         {"ort_no_vnni_vs_integer", similarity_json(qa::similarity(ev, ov))}};
  // Classifier-like outputs (N x classes): how many samples keep their top class.
  if (f.rank() == 2 && f.dim(1) > 1) {
    const std::int64_t n = f.dim(0), k = f.dim(1);
    auto top = [k](const float* row) { return std::max_element(row, row + k) - row; };
    std::int64_t same = 0;
    for (std::int64_t i = 0; i < n; ++i)
      same += top(e->second.data<float>() + i * k) == top(o->second.data<float>() + i * k);
    j["argmax_same"] = same;
    j["argmax_samples"] = n;
  }
  return j;
}

Json ort_saturation_report(const Context& c, const std::vector<qa::OrtSaturationRow>& rows) {
  Json j = ort_saturation_json(rows);
  if (j["saturating"].get<std::size_t>() > 0) j["effect"] = ort_effect_json(c);
  return j;
}

void print_ort_effect(const Json& e) {
  if (e.contains("error")) {
    fmt::print("effect on the output: not measured ({})\n", e["error"].get<std::string>());
    return;
  }
  fmt::print("effect on '{}' (integer mode, float requantization): cosine to the float model {:.7f} exact, {:.7f} with "
             "ONNX Runtime's pair sums (cosine between the two {:.7f})",
             e["output"].get<std::string>(), e["integer_vs_float"]["cosine"].get<double>(),
             e["ort_no_vnni_vs_float"]["cosine"].get<double>(), e["ort_no_vnni_vs_integer"]["cosine"].get<double>());
  if (e.contains("argmax_same"))
    fmt::print("; the same top class on {} of {} samples", e["argmax_same"].get<std::int64_t>(),
               e["argmax_samples"].get<std::int64_t>());
  fmt::print("\n");
}

// ---------------------------------------------------------------------------------------------
// Text output.
std::string metric_cell(qa::Metric m, const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  const double d = v.get<double>();
  return m == qa::Metric::cosine ? fmt::format("{:.7f}", d) : format_number(d, 6);
}

void print_metric_header(std::string line, const std::vector<qa::Metric>& metrics) {
  for (auto m : metrics) line += fmt::format("  {:>11}", qa::to_string(m));
  fmt::print("{}\n", line);
}

std::string metric_cells(const Json& ms, const std::vector<qa::Metric>& metrics) {
  std::string s;
  for (auto m : metrics) s += fmt::format("  {:>11}", metric_cell(m, ms.at(qa::to_string(m))));
  return s;
}

void print_header(const Json& h) {
  fmt::print("model '{}' ({}), {} quantized nodes; measured: '{}' on {} samples\n", h["model"].get<std::string>(),
             h["scheme"].get<std::string>(), h["quantized_nodes"].get<std::size_t>(), h["output"].get<std::string>(),
             h["samples"].get<std::int64_t>());
}

void print_sensitivity(const Json& j, const std::vector<qa::Metric>& metrics) {
  fmt::print("sensitivity ({}): only one {} quantized at a time, worst first by {}\n", j["type"].get<std::string>(),
             j["type"].get<std::string>(), qa::to_string(metrics.front()));
  std::size_t w = 4;
  for (const auto& r : j["rows"])
    w = std::max(w, (r.contains("tensor") && j["type"] != "node" ? r["tensor"] : r["node"]).get<std::string>().size());
  w = std::min<std::size_t>(w, 48);
  print_metric_header(fmt::format("  {:>3}  {:<{}}  {:<12}", "#", j["type"] == "node" ? "node" : "tensor", w, "op"), metrics);
  std::size_t i = 0;
  for (const auto& r : j["rows"]) {
    const std::string name = (r.contains("tensor") && j["type"] != "node" ? r["tensor"] : r["node"]).get<std::string>();
    fmt::print("  {:>3}  {:<{}}  {:<12}{}\n", ++i, name, w, r["op"].get<std::string>(), metric_cells(r["metrics"], metrics));
  }
  fmt::print("  fully quantized:{}\n", metric_cells(j["full"], metrics));
}

void print_curves(const Json& j, const std::vector<qa::Metric>& metrics, bool average) {
  for (const auto& c : j["curves"]) {
    fmt::print("cumulative error, {}{}:\n", c["label"].get<std::string>(), average ? " (running mean of the first n values)" : "");
    std::size_t w = 5;
    for (const auto& r : c["rows"]) w = std::max(w, r["value"].get<std::string>().size());
    w = std::min<std::size_t>(w, 48);
    print_metric_header(fmt::format("  {:>3}  {:<{}}  {:<12}", "#", "value", w, "op"), metrics);
    std::size_t i = 0, k = 0;
    for (const auto& r : c["rows"]) {
      std::string cells;
      if (r.contains("error")) cells = "  " + r["error"].get<std::string>();
      else if (average) {
        for (auto m : metrics) cells += fmt::format("  {:>11}", metric_cell(m, c["average"][qa::to_string(m)][k]));
        ++k;
      } else cells = metric_cells(r["metrics"], metrics);
      fmt::print("  {:>3}  {:<{}}  {:<12}{}\n", i++, r["value"].get<std::string>(), w, r["op"].get<std::string>(), cells);
    }
  }
}

std::string histogram_text(const Json& h) {
  return fmt::format("{} values in [{}, {}], max |x| {}", h["total"].get<std::int64_t>(), format_number(h["min"].get<double>()),
                     format_number(h["max"].get<double>()), format_number(h["max_abs"].get<double>()));
}

void print_bars(const Json& h, std::size_t rows = 16) {
  // Text histogram: the bins merged into `rows` lines.
  const auto counts = h["counts"].get<std::vector<std::int64_t>>();
  const double lo = h["lo"].get<double>(), hi = h["hi"].get<double>();
  const std::size_t per = std::max<std::size_t>(1, (counts.size() + rows - 1) / rows);
  std::vector<std::int64_t> merged;
  for (std::size_t i = 0; i < counts.size(); i += per) {
    std::int64_t s = 0;
    for (std::size_t k = i; k < std::min(counts.size(), i + per); ++k) s += counts[k];
    merged.push_back(s);
  }
  const std::int64_t top = std::max<std::int64_t>(1, *std::max_element(merged.begin(), merged.end()));
  const double w = (hi - lo) / static_cast<double>(merged.size());
  for (std::size_t i = 0; i < merged.size(); ++i)
    fmt::print("    [{:>10}, {:>10})  {:<40} {}\n", format_number(lo + w * i, 4), format_number(lo + w * (i + 1), 4),
               std::string(static_cast<std::size_t>(40 * merged[i] / top), '#'), merged[i]);
}

void print_distribution(const Json& j) {
  if (j["kind"] == "node") {
    fmt::print("node '{}' ({}) output '{}': cosine {:.7f}, sqnr {} dB\n", j["node"].get<std::string>(),
               j["op"].get<std::string>(), j["value"].get<std::string>(), j["metrics"]["cosine"].get<double>(),
               metric_cell(qa::Metric::sqnr, j["metrics"]["sqnr"]));
    fmt::print("  float:     {}\n", histogram_text(j["float"]));
    print_bars(j["float"]);
    fmt::print("  quantized: {}\n", histogram_text(j["quantized"]));
    print_bars(j["quantized"]);
    fmt::print("  error (quantized - float): {}\n", histogram_text(j["error"]));
    print_bars(j["error"]);
    return;
  }
  const auto& clip = j["clip"];
  fmt::print("{} '{}' ({}, node '{}'): {}\n", j["kind"].get<std::string>(), j["tensor"].get<std::string>(),
             j["format"].get<std::string>(), j["node"].get<std::string>(), histogram_text(j["histogram"]));
  fmt::print("  kept by quantization: [{}, {}]{}; {} values ({:.4f} %) clipped\n", format_number(clip["lo"].get<double>()),
             format_number(clip["hi"].get<double>()),
             clip["channels"].get<std::int64_t>() > 1
                 ? fmt::format(" (widest of {} channels; narrowest [{}, {}])", clip["channels"].get<std::int64_t>(),
                               format_number(clip["narrow_lo"].get<double>()), format_number(clip["narrow_hi"].get<double>()))
                 : std::string(),
             j["clipped"].get<std::int64_t>(), 100.0 * j["clipped_fraction"].get<double>());
  print_bars(j["histogram"]);
}

void print_channelwise(const Json& j) {
  fmt::print("{} '{}' shape {}, channel axis {}: largest channel max|x| / median channel max|x| = {} (channel {})\n",
             j["kind"].get<std::string>(), j["tensor"].get<std::string>(), j["shape"].dump(), j["axis"].get<int>(),
             metric_cell(qa::Metric::mse, j["range_ratio"]), j["widest_channel"].get<std::size_t>());
  fmt::print("  {:>4}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>8}\n", "ch", "min", "q1", "median", "q3", "max",
             "mean", "outliers");
  for (const auto& c : j["channels"])
    fmt::print("  {:>4}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>8}\n", c["channel"].get<std::int64_t>(),
               format_number(c["min"].get<double>(), 4), format_number(c["q1"].get<double>(), 4),
               format_number(c["median"].get<double>(), 4), format_number(c["q3"].get<double>(), 4),
               format_number(c["max"].get<double>(), 4), format_number(c["mean"].get<double>(), 4),
               c["outliers"].get<std::int64_t>());
}

void print_partial(const Json& j) {
  const double t = j["threshold"].get<double>();
  fmt::print("fully quantized: output cosine {:.7f}\n", j["full"]["cosine"].get<double>());
  if (j["sensitive"].empty()) {
    fmt::print("no node's quantization alone brings the output cosine under {}\n", t);
    return;
  }
  fmt::print("sensitive nodes (only this node quantized: output cosine < {}), worst first:\n", t);
  for (const auto& r : j["sensitive"])
    fmt::print("  {:<40} {:<12} cosine {:.7f}\n", r["node"].get<std::string>(), r["op"].get<std::string>(),
               r["metrics"]["cosine"].get<double>());
  fmt::print("output when the first k sensitive nodes stay float:\n");
  for (const auto& s : j["steps"])
    fmt::print("  k = {:>2}  cosine {:.7f}  sqnr {:>8} dB  (float: {})\n", s["k"].get<std::size_t>(),
               s["metrics"]["cosine"].get<double>(), metric_cell(qa::Metric::sqnr, s["metrics"]["sqnr"]),
               fmt::format("{}", fmt::join(s["kept_float"].get<std::vector<std::string>>(), ", ")));
}

// ---------------------------------------------------------------------------------------------
std::string accuracy_conclusion(const Json& report) {
  const auto& part = report["partial"];
  const double t = part["threshold"].get<double>();
  const double full = part["full"]["cosine"].get<double>();
  std::string s = fmt::format("The fully quantized model's output cosine is {:.6f}. ", full);
  if (part["sensitive"].empty()) {
    s += fmt::format("No single node's quantization brings it under {}", t);
    s += full < t ? ": the loss is spread over the graph (try a clipping observer such as --observer kl or auto, "
                    "--cle, --bias-correction or 16-bit activations with --act-bits 16)."
                  : ", nor does the whole model's: nothing needs to stay float.";
    return s;
  }
  std::vector<std::string> names;
  for (const auto& r : part["sensitive"]) {
    if (names.size() == 3) break;
    names.push_back(fmt::format("{} ({:.6f})", r["node"].get<std::string>(), r["metrics"]["cosine"].get<double>()));
  }
  s += fmt::format("Most sensitive: {}. ", fmt::join(names, ", "));
  std::size_t k_needed = 0;
  for (const auto& st : part["steps"])
    if (st["metrics"]["cosine"].get<double>() >= t) {
      k_needed = st["k"].get<std::size_t>();
      break;
    }
  if (k_needed) {
    const auto kept = part["steps"][k_needed - 1]["kept_float"].get<std::vector<std::string>>();
    s += fmt::format("Leaving {} node(s) in float reaches cosine {:.6f} >= {}: quantkit quantize --keep-float {} "
                     "(or --int16 {} for 16-bit activations around them; --auto-mixed {} does this automatically).",
                     k_needed, part["steps"][k_needed - 1]["metrics"]["cosine"].get<double>(), t,
                     fmt::join(kept, ","), fmt::join(kept, ","), t);
  } else {
    const auto& last = part["steps"].back();
    s += fmt::format("Even with all {} sensitive nodes in float the cosine is {:.6f}: the loss is also spread over the "
                     "graph (see the cumulative error curve).",
                     last["k"].get<std::size_t>(), last["metrics"]["cosine"].get<double>());
  }
  // Weight outliers: suggest per-channel weights / CLE when a top weight's channels are uneven.
  for (const auto& ch : report["channelwise"])
    if (ch["kind"] == "weight" && ch["range_ratio"].is_number() && ch["range_ratio"].get<double>() > 8.0) {
      s += fmt::format(" Weight '{}' has uneven channels (largest/median max|x| = {:.1f}): per-channel weights or --cle "
                       "help.",
                       ch["tensor"].get<std::string>(), ch["range_ratio"].get<double>());
      break;
    }
  return s;
}

// The accuracy conclusion, and whether ONNX Runtime on CPUs without VNNI computes the model.
std::string conclusion(const Json& report) {
  std::string s = accuracy_conclusion(report);
  const Json& o = report["ort_saturation"];
  const std::size_t hit = o["saturating"].get<std::size_t>();
  if (hit) {
    std::vector<std::string> nodes;
    for (const auto& r : o["rows"])
      if (r["checked"].get<bool>() && r["saturated_pairs"].get<std::int64_t>() > 0) nodes.push_back(r["node"].get<std::string>());
    s += fmt::format(" ONNX Runtime on x86-64 CPUs without AVX-VNNI saturates int16 pair sums in {} of {} checked "
                     "nodes ({})", hit, o["checked"].get<std::size_t>(), fmt::join(nodes, ", "));
    const Json& e = o["effect"];
    if (e.contains("integer_vs_float"))
      s += fmt::format(" (output cosine {:.6f} there, {:.6f} exact)", e["ort_no_vnni_vs_float"]["cosine"].get<double>(),
                       e["integer_vs_float"]["cosine"].get<double>());
    s += ": quantize with --reduce-range for it (or set session.x64quantprecision=1).";
  }
  return s;
}

void run_verb(const CLI::App* cmd, const std::string& verb, const DebugArgs& a) {
  const auto metrics = parse_metrics(a.metrics);
  const int bins = static_cast<int>(parse_int("--bins", a.bins, 2, 4096));
  const bool has_axis = !a.axis.empty();
  const int axis = has_axis ? static_cast<int>(parse_int("--axis", a.axis, -8, 7)) : 0;
  const double threshold = parse_threshold(a.threshold);
  qa::QuantPart part = qa::QuantPart::node;
  try {
    part = qa::parse_quant_part(a.type, "--type");
  } catch (const Error& e) {
    usage_fail(std::string(e.what()).substr(10));
  }
  if (verb == "distribution" || verb == "channelwise") {
    const int given = !a.node.empty() + !a.weight.empty() + !a.activation.empty();
    if (given != 1)
      usage_fail(verb, ": expected exactly one of ", verb == "distribution" ? "--node, " : "", "--weight or --activation");
  }
  if (!a.out_dir.empty()) check_writable("-o", a.out_dir + "/report.json");
  const Context c = make_context(cmd, a);
  Json j = header_json(c, a);
  if (verb == "sensitivity") {
    j["sensitivity"] = sensitivity_json(measure_sensitivity(c, part, metrics, split_list(a.nodes)));
    if (a.json) return print_json(j);
    print_header(j);
    print_sensitivity(j["sensitivity"], metrics);
  } else if (verb == "acc-error") {
    j["acc_error"] = acc_error_json(c, a);
    if (a.json) return print_json(j);
    print_header(j);
    print_curves(j["acc_error"], metrics, a.average);
  } else if (verb == "distribution") {
    j["distribution"] = !a.node.empty() ? node_distribution_json(c, a.node, bins)
                                        : tensor_distribution_json(c, a.weight.empty() ? a.activation : a.weight,
                                                                   !a.weight.empty(), bins);
    if (a.json) return print_json(j);
    print_header(j);
    print_distribution(j["distribution"]);
  } else if (verb == "channelwise") {
    j["channelwise"] = channelwise_json(c, a.weight.empty() ? a.activation : a.weight, !a.weight.empty(), axis, has_axis);
    if (a.json) return print_json(j);
    print_header(j);
    print_channelwise(j["channelwise"]);
  } else if (verb == "ort-saturation") {
    const auto rows = qa::ort_saturation(c.qm(), c.session->inputs());
    j["ort_saturation"] = ort_saturation_report(c, rows);
    if (a.json) return print_json(j);
    print_header(j);
    fmt::print("{}", qa::format_ort_saturation(rows));
    if (j["ort_saturation"].contains("effect")) print_ort_effect(j["ort_saturation"]["effect"]);
  } else if (verb == "partial") {
    j["partial"] = partial_json(c.session->partial(threshold));
    if (a.json) return print_json(j);
    print_header(j);
    print_partial(j["partial"]);
  }
}

void run_all(const CLI::App* cmd, const DebugArgs& a) {
  const std::size_t top = static_cast<std::size_t>(parse_int("--top", a.top, 1, 100));
  const double threshold = parse_threshold(a.threshold);
  const int bins = static_cast<int>(parse_int("--bins", a.bins, 2, 4096));
  if (a.out_dir.empty()) usage_fail("-o: runall needs an output folder, e.g. -o debug_out");
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(a.out_dir, ec);
  if (ec || !fs::is_directory(a.out_dir))
    quantkit::detail::fail("-o '", a.out_dir, "': cannot create the folder (", ec.message(), "); expected a writable path");
  check_writable("-o", a.out_dir + "/report.json");
  const Context c = make_context(cmd, a);
  Json report = header_json(c, a);
  auto step = [](const char* what) { fmt::print(stderr, "debug runall: {}\n", what); };

  step("node sensitivity");
  const qa::SensitivityResult node_sensitivity = measure_sensitivity(c, qa::QuantPart::node, qa::all_metrics());
  report["sensitivity_node"] = sensitivity_json(node_sensitivity);
  step("weight sensitivity");
  report["sensitivity_weight"] = sensitivity_json(measure_sensitivity(c, qa::QuantPart::weight, qa::all_metrics()));
  step("activation sensitivity");
  report["sensitivity_activation"] =
      sensitivity_json(measure_sensitivity(c, qa::QuantPart::activation, qa::all_metrics()));

  step("cumulative error curves");
  DebugArgs curves = a;
  curves.only.clear();
  curves.all_but.clear();
  curves.weight_only = curves.activation_only = true;
  Json acc = acc_error_json(c, curves);
  acc["curves"].insert(acc["curves"].begin(), curve_json(c.session->error_curve(c.qm(), "fully quantized")));

  step("partial quantization");
  {
    const qa::PartialResult p = c.session->partial(threshold, node_sensitivity);  // measured above
    report["partial"] = partial_json(p);
    // The curve with the sensitive nodes left in float (the suggested fix), when there are any.
    if (!p.steps.empty()) {
      const auto& best = p.steps.back();
      acc["curves"].push_back(curve_json(c.session->error_curve(
          qa::keep_in_float(c.qm(), best.kept_float), fmt::format("all but {}", fmt::join(best.kept_float, ",")))));
    }
  }
  report["acc_error"] = acc;

  step("distributions and channel statistics");
  Json dists = Json::array(), chans = Json::array();
  std::size_t n = 0;
  for (const auto& r : report["sensitivity_weight"]["rows"]) {
    if (n++ == top) break;
    const std::string w = r["tensor"].get<std::string>();
    dists.push_back(tensor_distribution_json(c, w, true, bins));
    chans.push_back(channelwise_json(c, w, true, 0, false));
  }
  n = 0;
  for (const auto& r : report["sensitivity_activation"]["rows"]) {
    if (n++ == top) break;
    const std::string v = r["tensor"].get<std::string>();
    dists.push_back(tensor_distribution_json(c, v, false, bins));
    chans.push_back(channelwise_json(c, v, false, 0, false));
  }
  n = 0;
  for (const auto& r : report["sensitivity_node"]["rows"]) {
    if (n++ == top) break;
    dists.push_back(node_distribution_json(c, r["node"].get<std::string>(), bins));
  }
  report["distributions"] = dists;
  report["channelwise"] = chans;
  step("ONNX Runtime int16 pair sums (x86-64 without VNNI)");
  report["ort_saturation"] = ort_saturation_report(c, qa::ort_saturation(c.qm(), c.session->inputs()));
  report["conclusion"] = conclusion(report);

  const std::string json_path = a.out_dir + "/report.json", html_path = a.out_dir + "/report.html";
  io::write_file_atomically(json_path, report.dump(1) + "\n");
  io::write_file_atomically(html_path, render_debug_report(report));
  print_header(report);
  fmt::print("{}\n", report["conclusion"].get<std::string>());
  fmt::print("wrote {} and {}\n", html_path, json_path);
}

void add_common(CLI::App* cmd, DebugArgs& a) {
  cmd->add_option("float", a.model, "the float ONNX model")->required()->type_name("FLOAT.onnx");
  add_quant_options(cmd, a.quant);
  cmd->add_option("--quantized", a.quantized,
                  "take the quantization from this QDQ model of FLOAT.onnx (quantkit's or ONNX Runtime's) instead of "
                  "calibrating; the samples come from --input or --calib")
      ->type_name("Q.onnx");
  cmd->add_option("--input", a.inputs,
                  "samples to measure on: X.npy or NAME=X.npy per input (default: the calibration data)")
      ->type_name("[NAME=]X.npy")
      ->allow_extra_args(false);
  cmd->add_option("--samples", a.samples, "measure on the first N samples")->type_name("N")->capture_default_str();
  cmd->add_option("--output", a.output, "the value measured (default: the model's first output)")->type_name("VALUE");
}

}  // namespace

void add_debug(CLI::App& app) {
  auto a = std::make_shared<DebugArgs>();
  CLI::App* debug = app.add_subcommand(
      "debug", "accuracy debugging: which nodes lose accuracy when quantized, and what fixes it");
  debug->require_subcommand(1);

  auto metric_option = [a](CLI::App* cmd) {
    cmd->add_option("--metric", a->metrics, "metrics: cosine, mse, mre, sqnr, chebyshev (default: all; the first sorts)")
        ->type_name("M,...")
        ->delimiter(',')
        ->allow_extra_args(false);
  };
  auto json_flag = [a](CLI::App* cmd) { cmd->add_flag("--json", a->json, "print the result as JSON"); };

  CLI::App* sens = debug->add_subcommand("sensitivity", "quantize one node (or weight, or activation) at a time");
  add_common(sens, *a);
  sens->add_option("--type", a->type, "node (weights and activations), weight or activation")
      ->type_name("T")
      ->capture_default_str();
  sens->add_option("--nodes", a->nodes, "only these nodes (activation type: values or their producers)")
      ->type_name("NODE,...")
      ->delimiter(',')
      ->allow_extra_args(false);
  metric_option(sens);
  json_flag(sens);
  sens->callback([a, sens] { run_verb(sens, "sensitivity", *a); });

  CLI::App* acc = debug->add_subcommand("acc-error", "the error of every value along the graph");
  add_common(acc, *a);
  acc->add_option("--only", a->only, "a model with only these nodes quantized (repeatable: one model each)")
      ->type_name("NODE,...")
      ->allow_extra_args(false);
  acc->add_option("--all-but", a->all_but, "a model with every node but these quantized (repeatable)")
      ->type_name("NODE,...")
      ->allow_extra_args(false);
  acc->add_flag("--weight-only", a->weight_only, "a model with only the weights quantized");
  acc->add_flag("--activation-only", a->activation_only, "a model with only the activations quantized");
  acc->add_flag("--average", a->average, "print the running mean of the first n values' metrics");
  metric_option(acc);
  json_flag(acc);
  acc->callback([a, acc] { run_verb(acc, "acc-error", *a); });

  CLI::App* dist = debug->add_subcommand("distribution", "histograms of a node's output, a weight or an activation");
  add_common(dist, *a);
  dist->add_option("--node", a->node, "float vs quantized output of this node, and the error")->type_name("NODE");
  dist->add_option("--weight", a->weight, "a quantized weight, with the range its parameters keep")->type_name("W");
  dist->add_option("--activation", a->activation, "a quantized activation, with its clipping range")->type_name("A");
  dist->add_option("--bins", a->bins, "histogram bins")->type_name("N")->capture_default_str();
  json_flag(dist);
  dist->callback([a, dist] { run_verb(dist, "distribution", *a); });

  CLI::App* chan = debug->add_subcommand("channelwise", "per-channel box statistics of a weight or activation");
  add_common(chan, *a);
  chan->add_option("--weight", a->weight, "a quantized weight")->type_name("W");
  chan->add_option("--activation", a->activation, "an activation (any value the model computes)")->type_name("A");
  chan->add_option("--axis", a->axis, "channel axis (default: the weight's output-channel axis; activations: 1)")
      ->type_name("AXIS");
  json_flag(chan);
  chan->callback([a, chan] { run_verb(chan, "channelwise", *a); });

  CLI::App* part = debug->add_subcommand("partial", "sensitive nodes, and the output with the first k left in float");
  add_common(part, *a);
  part->add_option("--threshold", a->threshold, "output cosine under which a node is sensitive")
      ->type_name("COS")
      ->capture_default_str();
  json_flag(part);
  part->callback([a, part] { run_verb(part, "partial", *a); });

  CLI::App* ort = debug->add_subcommand(
      "ort-saturation", "where ONNX Runtime on x86-64 CPUs without VNNI saturates uint8 x int8 pair sums");
  add_common(ort, *a);
  json_flag(ort);
  ort->callback([a, ort] { run_verb(ort, "ort-saturation", *a); });

  CLI::App* all = debug->add_subcommand("runall", "everything, into OUTDIR/report.html and OUTDIR/report.json");
  add_common(all, *a);
  all->add_option("-o,--out", a->out_dir, "output folder (created)")->required()->type_name("OUTDIR");
  all->add_option("--threshold", a->threshold, "output cosine under which a node is sensitive")
      ->type_name("COS")
      ->capture_default_str();
  all->add_option("--top", a->top, "distributions and channel statistics of the N most sensitive weights, "
                                   "activations and nodes")
      ->type_name("N")
      ->capture_default_str();
  all->add_option("--bins", a->bins, "histogram bins")->type_name("N")->capture_default_str();
  all->callback([a, all] { run_all(all, *a); });
}

}  // namespace cli
}  // namespace quantkit
