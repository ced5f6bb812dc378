// AdaRound (Nagel et al. 2020, "Up or Down? Adaptive Rounding for Post-Training
// Quantization"): for each quantized Conv/Gemm/MatMul weight, in graph order, choose per
// element whether to round down or up so the layer reproduces its float output on the
// calibration data, instead of rounding to nearest.
//
//   qk::ptq::AdaRoundOptions opt;
//   opt.iterations = 2000;
//   qk::ptq::AdaRoundReport r = qk::ptq::adaround(qm, batches, opt, progress);
//
// Per layer (per group for grouped/depthwise Conv), with the weight as a matrix W (output
// channels x inputs), per-element scale s and zero point z, and V a free matrix:
//   h(V)  = clamp(sigmoid(V) * (zeta - gamma) + gamma, 0, 1),  zeta = 1.1, gamma = -0.1
//   W~(V) = s * (clamp(floor(W / s) + h(V) + z, qmin, qmax) - z)
//   E(W~) = mean over columns of || W x_float + b - W~ x_quant - b_q ||^2   (x: im2col columns
//           or rows of the layer's input in the float model and in the quantized model with
//           the layers before it already rounded: the "asymmetric" reconstruction of the
//           paper; b_q the stored (int32) bias)
//   loss  = E(W~) / E(W_nearest) + lambda * mean(1 - |2 h(V) - 1|^beta)
// E is evaluated exactly from the Gram matrices and sums of the inputs (accumulated once per
// layer, Eigen), so an iteration costs one (rows x K) * (K x K) product whatever the data size.
// V starts where h(V) = frac(W / s) (W~ = W), Adam minimizes the loss for `iterations` steps;
// the regularizer is off for the first `warmup` share of them, then beta decays linearly from
// beta_start to beta_end. The result is rounded hard (up where V >= 0). A group whose learned
// rounding reconstructs worse than round-to-nearest on the calibration data keeps
// round-to-nearest, so AdaRound never makes a layer's reconstruction error worse.
// The chosen integers are stored in TensorQuant::integers (fake-quant, QDQ export and the
// integer mode use them); the float weights and every scale stay as they were.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "quantkit/error.hpp"
#include "quantkit/executor/executor.hpp"
#include "quantkit/executor/ops/conv.hpp"
#include "quantkit/graph/graph.hpp"
#include "quantkit/param_layout.hpp"
#include "quantkit/ptq/config.hpp"
#include "quantkit/ptq/layer_data.hpp"
#include "quantkit/ptq/weights.hpp"

namespace quantkit {
namespace ptq {

struct AdaRoundLayer {
  std::string node, weight;
  std::int64_t rows = 0, inputs = 0, groups = 1;  // the weight as groups x (rows/groups x inputs)
  int iterations = 0;
  double nearest_error = 0;   // E with round-to-nearest (mean squared L2 output error per column)
  double adaround_error = 0;  // E with the stored rounding (<= nearest_error)
  double changed = 0;         // share of the integers that differ from round-to-nearest
  std::int64_t groups_kept_nearest = 0;  // groups where learned rounding was not better
};

struct AdaRoundReport {
  std::vector<AdaRoundLayer> layers;
  std::vector<std::string> notes;  // layers not rounded, and why
};

namespace detail {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The weight of a layer as `groups` matrices of (rows / groups) x inputs: flat tensor index of
// element (row m, input k) of the whole matrix.
struct WeightMatrix {
  std::int64_t rows = 0, inputs = 0, groups = 1;
  bool column_major = false;  // Gemm without transB, MatMul: the tensor is inputs x rows
  std::int64_t index(std::int64_t m, std::int64_t k) const { return column_major ? k * rows + m : m * inputs + k; }
};

// Gram matrices of one group's inputs: sums of x_f x_f^T, x_f x_q^T, x_q x_q^T and of x_f,
// x_q over columns.
struct Grams {
  MatrixD ff, fq, qq;
  Eigen::VectorXd sf, sq;
  double columns = 0;
  explicit Grams(std::int64_t k = 0)
      : ff(MatrixD::Zero(k, k)), fq(MatrixD::Zero(k, k)), qq(MatrixD::Zero(k, k)), sf(Eigen::VectorXd::Zero(k)),
        sq(Eigen::VectorXd::Zero(k)) {}
  void add(const MatrixD& xf, const MatrixD& xq) {  // columns are samples
    ff.noalias() += xf * xf.transpose();
    fq.noalias() += xf * xq.transpose();
    qq.noalias() += xq * xq.transpose();
    sf += xf.rowwise().sum();
    sq += xq.rowwise().sum();
    columns += static_cast<double>(xf.cols());
  }
};

// E(Wt) = mean over columns of || W x_f + b - Wt x_q - b_q ||^2, with d = b - b_q per row (the
// stored bias's rounding; 0 when the bias stays float):
// sum over rows of w Gff w' - 2 w Gfq wt' + wt Gqq wt' + 2 d (w sf - wt sq) + columns d^2.
inline double reconstruction_error(const MatrixD& w, const MatrixD& wt, const Eigen::VectorXd& d, const Grams& g) {
  if (!(g.columns > 0)) return 0.0;
  const double e = (w * g.ff).cwiseProduct(w).sum() - 2.0 * (w * g.fq).cwiseProduct(wt).sum() +
                   (wt * g.qq).cwiseProduct(wt).sum() + 2.0 * d.dot(w * g.sf - wt * g.sq) + g.columns * d.squaredNorm();
  return std::max(0.0, e / g.columns);
}

inline double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// One group: returns the chosen integers (row-major rows x inputs). `nearest` holds the
// round-to-nearest integers; `base` = floor(w / s); s, z per element; [lo, hi] the range.
struct GroupProblem {
  MatrixD w, s, z, base, nearest;
  Eigen::VectorXd bias_error;  // b - b_q per row
  double lo = 0, hi = 0;
};

inline MatrixD dequantize(const MatrixD& q, const GroupProblem& p) { return p.s.cwiseProduct(q - p.z); }

template <class OnStep>
MatrixD learn_rounding(const GroupProblem& p, const Grams& g, const AdaRoundOptions& opt, OnStep&& on_step,
                       double& nearest_error, double& learned_error, bool& kept_nearest) {
  constexpr double zeta = 1.1, gamma = -0.1;
  const std::int64_t rows = p.w.rows(), cols = p.w.cols();
  nearest_error = reconstruction_error(p.w, dequantize(p.nearest, p), p.bias_error, g);
  kept_nearest = true;
  learned_error = nearest_error;
  if (!(nearest_error > 0.0)) return p.nearest;  // nothing to gain (exact, or no data)

  // V with h(V) = frac(w / s).
  MatrixD v(rows, cols);
  const MatrixD frac = p.w.cwiseQuotient(p.s) - p.base;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const double h = std::min(std::max(frac(i, j), 1e-6), 1.0 - 1e-6);
      const double sg = (h - gamma) / (zeta - gamma);
      v(i, j) = std::log(sg / (1.0 - sg));
    }
  MatrixD m1 = MatrixD::Zero(rows, cols), m2 = MatrixD::Zero(rows, cols);
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const double n = static_cast<double>(rows * cols);
  const int T = opt.iterations;
  const double warm = opt.warmup * T;
  MatrixD h(rows, cols), dh(rows, cols), q(rows, cols), mask(rows, cols), grad(rows, cols);
  // The fixed part of dE/dWt (times -columns / 2): W Gfq + d sq'.
  const MatrixD target = p.w * g.fq + p.bias_error * g.sq.transpose();
  // The product of every iteration in float (twice the SIMD width); the errors that decide
  // between learned and nearest rounding are computed in double.
  using MatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const MatrixF qq = g.qq.cast<float>();
  MatrixF wtf(rows, cols);
  double p1 = 1.0, p2 = 1.0;  // b1^t, b2^t
  for (int t = 0; t < T; ++t) {
    double lambda = 0.0, beta = opt.beta_start;
    if (t >= warm) {
      const double rel = T - warm > 0 ? (t - warm) / (T - warm) : 1.0;
      beta = opt.beta_end + (opt.beta_start - opt.beta_end) * std::max(0.0, 1.0 - rel);
      lambda = opt.regularization;
    }
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const double sg = sigmoid(v(i, j));
        const double raw = sg * (zeta - gamma) + gamma;
        h(i, j) = std::min(std::max(raw, 0.0), 1.0);
        dh(i, j) = (raw > 0.0 && raw < 1.0) ? sg * (1.0 - sg) * (zeta - gamma) : 0.0;
        const double qs = p.base(i, j) + h(i, j) + p.z(i, j);
        mask(i, j) = (qs >= p.lo && qs <= p.hi) ? 1.0 : 0.0;
        q(i, j) = std::min(std::max(qs, p.lo), p.hi);
      }
    wtf = dequantize(q, p).cast<float>();
    // dE/dWt = 2 (Wt Gqq - W Gfq - d sq') / columns, normalized by E(nearest).
    const MatrixD dwt = (2.0 / (g.columns * nearest_error)) * ((wtf * qq).cast<double>() - target);
    grad = dwt.cwiseProduct(p.s).cwiseProduct(mask).cwiseProduct(dh);
    if (lambda > 0.0)
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
          const double u = 2.0 * h(i, j) - 1.0;
          const double a = std::fabs(u);
          const double dreg = a > 0.0 ? -beta * std::pow(a, beta - 1.0) * (u > 0 ? 2.0 : -2.0) : 0.0;
          grad(i, j) += lambda / n * dreg * dh(i, j);
        }
    p1 *= b1;
    p2 *= b2;
    m1 = b1 * m1 + (1.0 - b1) * grad;
    m2 = b2 * m2 + (1.0 - b2) * grad.cwiseProduct(grad);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j)
        v(i, j) -= opt.learning_rate * (m1(i, j) / (1.0 - p1)) / (std::sqrt(m2(i, j) / (1.0 - p2)) + eps);
    on_step(t + 1);
  }
  MatrixD hard(rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      hard(i, j) = std::min(std::max(p.base(i, j) + (v(i, j) >= 0.0 ? 1.0 : 0.0) + p.z(i, j), p.lo), p.hi);
  const double e = reconstruction_error(p.w, dequantize(hard, p), p.bias_error, g);
  if (e < nearest_error) {
    kept_nearest = false;
    learned_error = e;
    return hard;
  }
  return p.nearest;
}

}  // namespace detail

inline AdaRoundReport adaround(QuantizedModel& qm, const std::vector<std::map<std::string, graph::Tensor>>& batches,
                               const AdaRoundOptions& opt, const RemedyCallback& progress = {}) {
  opt.validate();
  AdaRoundReport report;
  if (!opt.enabled()) return report;
  detail::check_batches(batches, "AdaRound");
  const Executor<FloatMode> float_run(qm.graph);
  const auto layers = detail::quantized_layers(qm);
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const detail::LayerRef& layer = layers[li];
    const graph::Node& node = qm.graph.nodes[layer.node];
    const std::string who = node.describe();
    if (detail::count_quantized_readers(qm, layer.weight) != 1) {
      report.notes.push_back(who + ": weight '" + layer.weight + "' is shared with another node; left round-to-nearest");
      continue;
    }
    const graph::Tensor& wt = qm.graph.initializers.at(layer.weight);
    TensorQuant& tq = qm.tensors.at(layer.weight);
    detail::WeightMatrix wm;
    std::int64_t group = 1;
    if (node.op_type == "Conv") {
      group = node.attr_int("group", 1);
      wm.rows = wt.dim(0);
      wm.inputs = wt.size() / std::max<std::int64_t>(wm.rows, 1);
      wm.groups = group;
    } else if (node.op_type == "Gemm") {
      if (node.attr_int("transA", 0) != 0 || wt.rank() != 2) {
        report.notes.push_back(who + ": Gemm with transA or a weight that is not a matrix; left round-to-nearest");
        continue;
      }
      const bool tb = node.attr_int("transB", 0) != 0;
      wm.rows = tb ? wt.dim(0) : wt.dim(1);
      wm.inputs = tb ? wt.dim(1) : wt.dim(0);
      wm.column_major = !tb;
    } else {  // MatMul
      if (wt.rank() != 2) {
        report.notes.push_back(who + ": MatMul weight of rank " + std::to_string(wt.rank()) + "; left round-to-nearest");
        continue;
      }
      wm.rows = wt.dim(1);
      wm.inputs = wt.dim(0);
      wm.column_major = true;
    }
    if (wm.groups < 1 || wm.rows % wm.groups != 0) node.fail("group ", wm.groups, " does not divide ", wm.rows, " output channels");
    const std::int64_t rg = wm.rows / wm.groups, kg = wm.inputs;

    // Gram matrices of every group's inputs over the calibration set.
    std::vector<detail::Grams> grams(static_cast<std::size_t>(wm.groups), detail::Grams(kg));
    detail::for_each_layer_input(float_run, qm, layer, batches, [&](std::size_t, const graph::Tensor& xf, const graph::Tensor& xq) {
      if (xf.shape() != xq.shape()) node.fail("float and quantized inputs differ in shape");
      if (node.op_type == "Conv") {
        OpContext ctx(node, qm.graph.opset, {&xf, &wt});
        const ops::WindowGeometry geo = ops::conv_geometry(ctx, xf.shape(), wt.shape(), group);
        const std::int64_t C = xf.dim(1), cg = C / group, P = geo.out_size();
        if (cg * geo.kernel_size() != kg) node.fail("input channels do not match the weight");
        std::vector<float> cf(static_cast<std::size_t>(kg * P)), cq(cf.size());
        for (std::int64_t n = 0; n < xf.dim(0); ++n)
          for (std::int64_t gi = 0; gi < group; ++gi) {
            const std::int64_t off = (n * C + gi * cg) * geo.in_size();
            ops::im2col(xf.data<float>() + off, cg, geo, 0.0f, cf.data());
            ops::im2col(xq.data<float>() + off, cg, geo, 0.0f, cq.data());
            using MapF = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
            grams[static_cast<std::size_t>(gi)].add(MapF(cf.data(), kg, P).cast<double>(), MapF(cq.data(), kg, P).cast<double>());
          }
      } else {
        if (xf.rank() < 1 || xf.dim(xf.rank() - 1) != kg)
          node.fail("input shape ", xf.shape().to_string(), "; expected [..., ", kg, "]");
        const std::int64_t r = xf.size() / kg;
        using MapF = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>>;
        grams[0].add(MapF(xf.data<float>(), kg, r).cast<double>(), MapF(xq.data<float>(), kg, r).cast<double>());
      }
    });

    // The rounding of the stored bias (a constant in the reconstruction), per output row.
    std::vector<double> bias_error(static_cast<std::size_t>(wm.rows), 0.0);
    if (node.op_type != "MatMul" && node.has_input(2) && node.attr_float("alpha", 1.0f) == 1.0f) {
      const std::string& b = node.inputs[2];
      const TensorQuant* bq = qm.find(b);
      const graph::Tensor& bt = qm.graph.initializers.at(b);
      if (bq && bq->role == TensorRole::bias && bt.size() == wm.rows) {
        const graph::Tensor deq = dequantized_initializer(bt, *bq, b);
        const double beta = node.attr_float("beta", 1.0f);
        for (std::size_t r = 0; r < bias_error.size(); ++r)
          bias_error[r] = beta * (static_cast<double>(bt.data<float>()[r]) - deq.data<float>()[r]);
      }
    }

    // Per-element scale and zero point; round-to-nearest integers.
    const std::vector<std::int32_t> nearest = quantize_initializer(wt, tq, layer.weight);
    std::vector<float> scale_of(static_cast<std::size_t>(wt.size()));
    std::vector<std::int32_t> zero_of(scale_of.size());
    {
      const ParamLayout layout(wt.shape(), tq.params.granularity, layer.weight);
      const View<const float> view(wt.data<float>(), wt.shape(), layer.weight);
      std::size_t i = 0;
      for_each_index(view, [&](std::int64_t, const Dims& idx) {
        const auto c = static_cast<std::size_t>(layout.index(idx));
        scale_of[i] = tq.params.scale[c];
        zero_of[i++] = tq.params.zero_point[c];
      });
    }
    AdaRoundLayer row;
    row.node = layer.key;
    row.weight = layer.weight;
    row.rows = wm.rows;
    row.inputs = kg;
    row.groups = wm.groups;
    row.iterations = opt.iterations;
    std::vector<std::int32_t> chosen = nearest;
    std::int64_t changed = 0;
    for (std::int64_t gi = 0; gi < wm.groups; ++gi) {
      detail::GroupProblem p;
      p.w.resize(rg, kg);
      p.s.resize(rg, kg);
      p.z.resize(rg, kg);
      p.base.resize(rg, kg);
      p.nearest.resize(rg, kg);
      p.bias_error.resize(rg);
      for (std::int64_t m = 0; m < rg; ++m) p.bias_error(m) = bias_error[static_cast<std::size_t>(gi * rg + m)];
      p.lo = tq.params.range.qmin;
      p.hi = tq.params.range.qmax;
      for (std::int64_t m = 0; m < rg; ++m)
        for (std::int64_t k = 0; k < kg; ++k) {
          const auto i = static_cast<std::size_t>(wm.index(gi * rg + m, k));
          p.w(m, k) = wt.data<float>()[i];
          p.s(m, k) = scale_of[i];
          p.z(m, k) = zero_of[i];
          p.base(m, k) = std::floor(p.w(m, k) / p.s(m, k));
          p.nearest(m, k) = nearest[i];
        }
      double ne = 0, le = 0;
      bool kept = false;
      const detail::MatrixD q = detail::learn_rounding(p, grams[static_cast<std::size_t>(gi)], opt, [&](int it) {
        if (!progress) return;
        const int every = std::max(1, opt.iterations / 100);
        if (it % every != 0 && it != opt.iterations) return;
        RemedyProgress pr;
        pr.stage = "adaround";
        pr.layer = layer.key;
        pr.layer_index = li;
        pr.layers = layers.size();
        pr.step = static_cast<std::size_t>(gi * opt.iterations + it);
        pr.steps = static_cast<std::size_t>(wm.groups * opt.iterations);
        progress(pr);
      }, ne, le, kept);
      row.nearest_error += ne;
      row.adaround_error += le;
      row.groups_kept_nearest += kept;
      for (std::int64_t m = 0; m < rg; ++m)
        for (std::int64_t k = 0; k < kg; ++k) {
          const auto i = static_cast<std::size_t>(wm.index(gi * rg + m, k));
          chosen[i] = static_cast<std::int32_t>(q(m, k));
          changed += chosen[i] != nearest[i];
        }
    }
    row.changed = static_cast<double>(changed) / static_cast<double>(std::max<std::int64_t>(wt.size(), 1));
    tq.integers = std::move(chosen);
    report.layers.push_back(row);
  }
  return report;
}

// The report as text, one line per layer.
inline std::string format(const AdaRoundReport& r) {
  std::string out = "AdaRound: " + std::to_string(r.layers.size()) + " layer(s)\n";
  char line[512];
  for (const auto& l : r.layers) {
    std::snprintf(line, sizeof line,
                  "  %s: %lld x %lld%s, %d iterations: reconstruction error %.4g -> %.4g (%.1f%% of nearest), "
                  "%.1f%% of the integers changed%s\n",
                  l.node.c_str(), static_cast<long long>(l.rows), static_cast<long long>(l.inputs),
                  l.groups > 1 ? (" in " + std::to_string(l.groups) + " groups").c_str() : "", l.iterations,
                  l.nearest_error, l.adaround_error,
                  l.nearest_error > 0 ? 100.0 * l.adaround_error / l.nearest_error : 100.0, 100.0 * l.changed,
                  l.groups_kept_nearest ? (", " + std::to_string(l.groups_kept_nearest) + " group(s) kept nearest").c_str()
                                        : "");
    out += line;
  }
  for (const auto& n : r.notes) out += "  " + n + "\n";
  return out;
}

}  // namespace ptq
}  // namespace quantkit
