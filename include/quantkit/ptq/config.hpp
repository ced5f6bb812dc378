// Post-training quantization of a whole graph: what to quantize and how (PtqConfig), and the
// result of calibrating a graph (QuantizedModel: the float graph plus QuantParams for every
// quantized tensor) that the fake-quant executor mode and the QDQ exporter both read.
//
//   qk::ptq::PtqConfig cfg;                        // W8A8: int8 per-channel symmetric weights,
//   cfg.weight_bits = 4;                           //   uint8 affine activations, half-even
//   cfg.weight_granularity = qk::ptq::WeightGranularity::per_group(32);
//   cfg.keep_float = {"/fc2/Gemm"};                // nodes left in float
//   cfg.int16_nodes = {"/conv1/Conv"};             // 16-bit activations around these nodes
//
// Where quantization happens (the QDQ placement ONNX Runtime's quantizer uses):
//   - a node is quantized when its op is in `quantize_ops` and it is not in `keep_float`;
//   - every float value a quantized node reads or writes (graph inputs included, initializers
//     excluded) is an *activation*: it gets one QuantizeLinear -> DequantizeLinear pair and
//     every consumer reads the dequantized value;
//   - the weight input of Conv (input 1), Gemm (B) and MatMul (B), when it is an initializer,
//     is a *weight*: stored quantized (per tensor, per output channel, or in blocks along the
//     input-channel axis) behind a DequantizeLinear;
//   - the bias of Conv (input 2) and Gemm (C, 1-D, alpha = beta = 1) is stored as int32 with
//     scale s_input * s_weight[c] and zero point 0 (what ONNX Runtime fuses into QLinearConv /
//     QGemm) when the input is quantized and the weights are per tensor or per output channel;
//     otherwise, or when a value would not fit in int32, it stays float (see notes);
//   - graph outputs written by a quantized node are quantized with their min-max range by
//     default (graph_outputs), never clipped by the activation observer;
//   - pass-through ops (MaxPool, Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Identity)
//     give their output the parameters of their input when share_passthrough_params is set.
// Activations are quantized as QuantizeLinear does (x / s, round half to even), since that is
// what the exported model computes; `weight_rounding` applies to the stored weights only.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/params.hpp"
#include "quantkit/policy/convention.hpp"
#include "quantkit/policy/format.hpp"
#include "quantkit/policy/granularity.hpp"
#include "quantkit/policy/rounding.hpp"
#include "quantkit/policy/symmetry.hpp"

namespace quantkit {
namespace ptq {

// An integer format chosen at run time: 2..16 bits, signed or not.
struct TensorFormat {
  int bits = 8;
  bool is_signed = true;

  IntRange range() const {
    if (is_signed) return IntRange{-(1 << (bits - 1)), (1 << (bits - 1)) - 1};
    return IntRange{0, (1 << bits) - 1};
  }
  // "int8", "uint4", ...
  std::string name() const { return (is_signed ? "int" : "uint") + std::to_string(bits); }
  friend bool operator==(const TensorFormat& a, const TensorFormat& b) {
    return a.bits == b.bits && a.is_signed == b.is_signed;
  }
  friend bool operator!=(const TensorFormat& a, const TensorFormat& b) { return !(a == b); }
};

// How weights are split into (scale, zero point) pairs; the axis follows from the op:
// per_channel is the output-channel axis (Conv: 0; Gemm: 0 with transB, else 1; MatMul: the
// last), per_group blocks of `group_size` along the input-channel axis (Conv: 1; Gemm: 1 with
// transB, else 0; MatMul: the second last).
struct WeightGranularity {
  GranularityKind kind = GranularityKind::per_channel;
  std::int64_t group_size = 0;

  static WeightGranularity per_tensor() { return {GranularityKind::per_tensor, 0}; }
  static WeightGranularity per_channel() { return {GranularityKind::per_channel, 0}; }
  static WeightGranularity per_group(std::int64_t n) { return {GranularityKind::per_group, n}; }
  std::string to_string() const {
    switch (kind) {
      case GranularityKind::per_tensor: return "per-tensor";
      case GranularityKind::per_channel: return "per-channel";
      case GranularityKind::per_group: return "per-group:" + std::to_string(group_size);
    }
    return "?";
  }
};

// Op types quantized by default.
inline std::set<std::string> default_quantize_ops() {
  return {"Conv",      "Gemm",        "MatMul",  "Add",     "Mul",       "Relu",
          "Clip",      "LeakyRelu",   "Sigmoid", "Tanh",    "MaxPool",   "AveragePool",
          "GlobalAveragePool", "Concat", "Flatten", "Reshape", "Transpose", "Squeeze",
          "Unsqueeze", "Identity"};
}
// Every op type the planner knows how to quantize (anything else in quantize_ops is an error).
inline const std::set<std::string>& quantizable_ops() {
  static const std::set<std::string> ops = {
      "Conv",    "Gemm",      "MatMul",    "Add",     "Sub",         "Mul",
      "Div",     "Relu",      "Clip",      "LeakyRelu", "Sigmoid",   "Tanh",
      "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Concat",
      "Flatten", "Reshape",   "Transpose", "Squeeze", "Unsqueeze",   "Identity",
      "Softmax", "ReduceMean", "Pad"};
  return ops;
}
// Ops whose output holds (a selection or rearrangement of) their input's values.
inline bool is_passthrough_op(const std::string& op) {
  return op == "MaxPool" || op == "GlobalMaxPool" || op == "Flatten" || op == "Reshape" ||
         op == "Transpose" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity";
}

// How graph outputs (logits, ...) produced by quantized nodes are quantized: with the min-max
// range (default: a clipping observer such as KL would saturate the largest logits, which
// decide the argmax), with the activation observer like every other value, or not at all.
enum class OutputCalibration { minmax, observer, keep_float };

// Cross-layer equalization (quantkit/ptq/equalize.hpp): applied to the float graph after
// BatchNormalization folding, before calibration.
struct EqualizationOptions {
  int max_passes = 100;               // passes over every pair
  double tolerance = 1e-3;            // stop when no scale of a pass differs from 1 by more
  std::vector<std::string> skip;      // node names (first output for unnamed nodes) left alone

  void validate() const {
    if (max_passes < 1 || max_passes > 10000)
      quantkit::detail::fail("EqualizationOptions: max_passes is ", max_passes, "; expected 1 to 10000");
    if (!(tolerance >= 0.0) || !(tolerance < 1.0))
      quantkit::detail::fail("EqualizationOptions: tolerance is ", tolerance, "; expected a value in [0, 1)");
  }
};

// AdaRound (quantkit/ptq/adaround.hpp, Nagel et al. 2020): per-layer learned rounding of the
// Conv/Gemm/MatMul weights on the calibration data. Off while iterations is 0.
struct AdaRoundOptions {
  static constexpr int default_iterations = 1000;  // what "on" means when no count is given
  int iterations = 0;            // Adam steps per layer (per group for grouped Conv); 0: off
  double learning_rate = 3e-2;   // Adam
  double regularization = 3.0;   // lambda of the rounding regularizer; the reconstruction term
                                 // is relative to round-to-nearest's error, so it starts near 1
  double beta_start = 20.0;      // annealed exponent of the regularizer
  double beta_end = 2.0;
  double warmup = 0.2;           // share of the iterations without the regularizer

  bool enabled() const { return iterations > 0; }
  void validate() const {
    if (iterations < 0 || iterations > 1000000)
      quantkit::detail::fail("AdaRoundOptions: iterations is ", iterations, "; expected 0 (off) to 1000000");
    if (!(learning_rate > 0.0) || !(learning_rate <= 1.0))
      quantkit::detail::fail("AdaRoundOptions: learning_rate is ", learning_rate, "; expected a value in (0, 1]");
    if (!(regularization >= 0.0) || !std::isfinite(regularization))
      quantkit::detail::fail("AdaRoundOptions: regularization is ", regularization, "; expected a finite value >= 0");
    if (!(beta_end > 0.0) || !(beta_start >= beta_end) || !std::isfinite(beta_start))
      quantkit::detail::fail("AdaRoundOptions: beta from ", beta_start, " to ", beta_end,
                             "; expected beta_start >= beta_end > 0");
    if (!(warmup >= 0.0) || !(warmup < 1.0))
      quantkit::detail::fail("AdaRoundOptions: warmup is ", warmup, "; expected a share in [0, 1)");
  }
};

struct PtqConfig {
  int activation_bits = 8;               // 8 or 16
  bool symmetric_activations = false;    // false: uint affine; true: int symmetric, zero point 0
  int weight_bits = 8;                   // 4, 8 or 16 (signed unless weight_signed is false)
  bool weight_signed = true;
  WeightGranularity weight_granularity = WeightGranularity::per_channel();
  SymmetryKind weight_symmetry = SymmetryKind::symmetric;
  RoundingMode weight_rounding = RoundingMode::half_even;   // stochastic/custom are rejected
  ConventionKind convention = ConventionKind::pytorch;     // (min, max) -> (scale, zero point)
  // Weights one bit short of their format (ONNX Runtime's reduce_range: int8 [-64, 64] with the
  // onnxruntime convention, [-64, 63] otherwise; int16 [-16384, 16384] / [-16384, 16383]). On
  // x86-64 without VNNI, ONNX Runtime's uint8 x int8 kernels add pairs of products in int16
  // (VPMADDUBSW) and saturate; with 7-bit weights a pair is at most 255 * 64 * 2 = 32640.
  bool reduce_range = false;
  std::set<std::string> quantize_ops = default_quantize_ops();
  std::vector<std::string> keep_float;    // node names (or first output names) left in float
  std::vector<std::string> int16_nodes;   // nodes with 16-bit activations around them
  int int16_weight_bits = 8;              // weight bits of the int16 nodes (8 or 16; A16W8 default)
  bool fold_batchnorm = true;             // fold BatchNormalization into Conv/Gemm first
  bool share_passthrough_params = true;
  bool quantize_bias = true;              // int32 bias where possible
  OutputCalibration graph_outputs = OutputCalibration::minmax;
  // Accuracy remedies. Cross-layer equalization runs on the float graph before calibration;
  // AdaRound, then bias correction, run in GraphCalibrator::finish(batches) (they need the
  // calibration data again).
  bool cross_layer_equalization = false;
  EqualizationOptions equalization;
  bool bias_correction = false;
  AdaRoundOptions adaround;

  TensorFormat activation_format(int bits) const { return {bits, symmetric_activations}; }
  SymmetryKind activation_symmetry() const {
    return symmetric_activations ? SymmetryKind::symmetric : SymmetryKind::affine;
  }

  // Errors name the option and the value.
  void validate() const {
    if (activation_bits != 8 && activation_bits != 16)
      quantkit::detail::fail("PtqConfig: activation_bits is ", activation_bits, "; expected 8 or 16");
    for (int b : {weight_bits, int16_weight_bits})
      if (b != 4 && b != 8 && b != 16)
        quantkit::detail::fail("PtqConfig: weight bits ", b, "; expected 4, 8 or 16");
    if (reduce_range && weight_bits == 4)
      quantkit::detail::fail("PtqConfig: reduce_range with 4-bit weights; expected 8- or 16-bit weights (it drops one "
                             "bit of 8-bit weights for ONNX Runtime's int16 pair sums; 4-bit weights have no such sums)");
    if (weight_granularity.kind == GranularityKind::per_group && weight_granularity.group_size < 1)
      quantkit::detail::fail("PtqConfig: per-group weight granularity with group size ",
                   weight_granularity.group_size, "; expected a positive group size (e.g. 32)");
    if (weight_rounding == RoundingMode::stochastic || weight_rounding == RoundingMode::custom)
      quantkit::detail::fail("PtqConfig: weight_rounding ", to_string(weight_rounding),
                   " cannot be chosen at run time; expected half-even, half-away, half-up, floor "
                   "or toward-zero");
    for (const auto& op : quantize_ops)
      if (!quantizable_ops().count(op)) {
        std::string known;
        for (const auto& k : quantizable_ops()) known += (known.empty() ? "" : ", ") + k;
        quantkit::detail::fail("PtqConfig: op '", op, "' in quantize_ops cannot be quantized; expected one of: ", known);
      }
    equalization.validate();
    adaround.validate();
  }
};

enum class TensorRole { activation, weight, bias };
inline const char* to_string(TensorRole r) {
  switch (r) {
    case TensorRole::activation: return "activation";
    case TensorRole::weight: return "weight";
    case TensorRole::bias: return "bias";
  }
  return "?";
}

// One quantized tensor: its format, parameters and who asked for it.
struct TensorQuant {
  TensorRole role = TensorRole::activation;
  TensorFormat format;
  SymmetryKind symmetry = SymmetryKind::affine;
  RoundingMode rounding = RoundingMode::half_even;
  QuantParams params;
  std::string node;         // the (first) quantized node reading or writing it
  std::string shared_from;  // pass-through: the value whose parameters these are ("" if own)
  std::string input;        // bias: the activation and weight whose scales multiply
  std::string weight;
  // Weights: the stored integers (row-major), chosen by AdaRound; they override `rounding`.
  // Empty: the weight is quantized with `rounding`.
  std::vector<std::int32_t> integers;
};

// A calibrated graph: the float graph the plan refers to (BatchNormalization folded where
// asked), the quantized nodes, and QuantParams for every quantized value.
struct QuantizedModel {
  graph::Graph graph;
  PtqConfig config;
  std::string observer;                        // the activation observer's name
  std::vector<std::string> quantized_nodes;    // node names (first output for unnamed nodes)
  std::map<std::string, TensorQuant> tensors;  // value name -> quantization
  std::vector<std::string> notes;              // decisions worth knowing (float biases, ...)

  const TensorQuant* find(const std::string& value) const {
    auto it = tensors.find(value);
    return it == tensors.end() ? nullptr : &it->second;
  }
  const TensorQuant& at(const std::string& value) const {
    const TensorQuant* t = find(value);
    if (!t) quantkit::detail::fail(quantkit::detail::describe_tensor(value), ": not quantized in this model");
    return *t;
  }
  bool is_quantized_node(const std::string& key) const {
    for (const auto& n : quantized_nodes)
      if (n == key) return true;
    return false;
  }
};

// The name used for a node in keep_float / int16_nodes / quantized_nodes.
inline std::string node_key(const graph::Node& n) {
  if (!n.name.empty()) return n.name;
  return n.outputs.empty() ? std::string() : n.outputs.front();
}

}  // namespace ptq
}  // namespace quantkit
