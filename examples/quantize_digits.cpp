// quantize_digits: quantize a real classifier (logistic regression trained on scikit-learn's
// digits, examples/data/) with several schemes, and say honestly what each one costs:
// weight SQNR and test accuracy, plus an integer-only W8A8 run (uint8 inputs, int8 per-channel
// weights, int32 bias and accumulators, fixed-point requantization to int8 logits).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <quantkit/io/npy.hpp>
#include <quantkit/quantkit.hpp>

namespace qk = quantkit;

namespace {
struct Data {
  std::vector<float> w, b, calib, x;
  std::vector<std::int64_t> y;
  int classes = 0, features = 0, n_calib = 0, n = 0;
};

Data load(const std::string& dir) {
  Data d;
  auto w = qk::npy::load(dir + "/digits_weight.npy");
  auto c = qk::npy::load(dir + "/digits_calib.npy");
  auto x = qk::npy::load(dir + "/digits_test_x.npy");
  d.w = w.as<float>("digits_weight");
  d.b = qk::npy::load(dir + "/digits_bias.npy").as<float>("digits_bias");
  d.calib = c.as<float>("digits_calib");
  d.x = x.as<float>("digits_test_x");
  d.y = qk::npy::load(dir + "/digits_test_y.npy").as<std::int64_t>("digits_test_y");
  d.classes = static_cast<int>(w.shape[0]);
  d.features = static_cast<int>(w.shape[1]);
  d.n_calib = static_cast<int>(c.shape[0]);
  d.n = static_cast<int>(x.shape[0]);
  return d;
}

// Test accuracy of argmax(x W^T + b) with the given (possibly fake-quantized) weights.
double accuracy(const Data& d, const std::vector<float>& w) {
  int correct = 0;
  for (int i = 0; i < d.n; ++i) {
    int best = 0;
    float best_v = -INFINITY;
    for (int c = 0; c < d.classes; ++c) {
      float v = d.b[static_cast<std::size_t>(c)];
      for (int k = 0; k < d.features; ++k)
        v += d.x[static_cast<std::size_t>(i * d.features + k)] * w[static_cast<std::size_t>(c * d.features + k)];
      if (v > best_v) best_v = v, best = c;
    }
    correct += best == d.y[static_cast<std::size_t>(i)];
  }
  return 100.0 * correct / d.n;
}

double sqnr_db(const std::vector<float>& ref, const std::vector<float>& q) {
  double s = 0, e = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) s += double(ref[i]) * ref[i], e += double(ref[i] - q[i]) * (ref[i] - q[i]);
  return e == 0 ? INFINITY : 10.0 * std::log10(s / e);
}

template <class Scheme>
void weight_only(const Data& d, const char* label, double float_acc) {
  qk::Quantizer<Scheme> q("digits_weight");
  const auto w = qk::with_shape(d.w, {d.classes, d.features});
  q.observe(w);
  std::vector<float> fq(d.w.size());
  q.fake_quantize(w, qk::with_shape(fq, {d.classes, d.features}));
  const double acc = accuracy(d, fq);
  std::printf("  %-34s %8.2f %9.2f %+8.2f\n", label, sqnr_db(d.w, fq), acc, acc - float_acc);
}

// Integer-only W8A8: every multiply-add in int32, one fixed-point requantization per channel.
double integer_w8a8(const Data& d) {
  qk::Quantizer<qk::Scheme<qk::UInt<8>>> xq("input");
  xq.observe(qk::with_shape(d.calib, {d.n_calib, d.features}));
  qk::Quantizer<qk::Scheme<qk::Int<8>, qk::PerChannel<0>, qk::SymmetricRestricted>> wq("digits_weight");
  wq.observe(qk::with_shape(d.w, {d.classes, d.features}));
  std::vector<std::int8_t> w8(d.w.size());
  wq.quantize(qk::with_shape(d.w, {d.classes, d.features}), qk::with_shape(w8, {d.classes, d.features}));
  // Output (logits) range from the float model on the calibration set.
  qk::Range logits;
  for (int i = 0; i < d.n_calib; ++i)
    for (int c = 0; c < d.classes; ++c) {
      float v = d.b[static_cast<std::size_t>(c)];
      for (int k = 0; k < d.features; ++k)
        v += d.calib[static_cast<std::size_t>(i * d.features + k)] * d.w[static_cast<std::size_t>(c * d.features + k)];
      logits.include(v);
    }
  qk::Quantizer<qk::Scheme<qk::Int<8>>> oq("logits");
  oq.set_range(logits.min, logits.max);
  const float sx = xq.params().scale[0], so = oq.params().scale[0];
  const std::int32_t zx = xq.params().zero_point[0];
  std::vector<double> multipliers;
  auto rp = qk::RequantParams<qk::FixedPointDoubleRounding>::make({1.0}, qk::IntRange{-128, 127}, oq.params().zero_point[0], "fc");
  rp.constants.clear();
  for (int c = 0; c < d.classes; ++c) {
    const double sw = wq.params().scale[static_cast<std::size_t>(c)];
    rp.constants.push_back(qk::FixedPointDoubleRounding::make(sx * sw / so, "fc"));
    rp.bias.push_back(static_cast<std::int32_t>(std::lround(d.b[static_cast<std::size_t>(c)] / (sx * sw))));
  }
  rp.channel_axis = 1;
  std::vector<std::uint8_t> x8(d.x.size());
  xq.quantize(qk::with_shape(d.x, {d.n, d.features}), qk::with_shape(x8, {d.n, d.features}));
  std::vector<std::int32_t> acc(static_cast<std::size_t>(d.n * d.classes));
  for (int i = 0; i < d.n; ++i)
    for (int c = 0; c < d.classes; ++c) {
      std::int32_t a = 0;
      for (int k = 0; k < d.features; ++k)
        a += (x8[static_cast<std::size_t>(i * d.features + k)] - zx) * w8[static_cast<std::size_t>(c * d.features + k)];
      acc[static_cast<std::size_t>(i * d.classes + c)] = a;
    }
  std::vector<std::int8_t> out(acc.size());
  qk::ref::requantize(qk::with_shape(acc, {d.n, d.classes}), rp, qk::with_shape(out, {d.n, d.classes}), "fc");
  int correct = 0;
  for (int i = 0; i < d.n; ++i) {
    int best = 0;
    for (int c = 1; c < d.classes; ++c)
      if (out[static_cast<std::size_t>(i * d.classes + c)] > out[static_cast<std::size_t>(i * d.classes + best)]) best = c;
    correct += best == d.y[static_cast<std::size_t>(i)];
  }
  return 100.0 * correct / d.n;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    const Data d = load(argc > 1 ? argv[1] : "data");
    const double float_acc = accuracy(d, d.w);
    std::printf("digits logistic regression: %d classes x %d features, %d test images\n", d.classes, d.features, d.n);
    std::printf("  %-34s %8s %9s %8s\n", "scheme (weights)", "SQNR dB", "acc %", "delta");
    std::printf("  %-34s %8s %9.2f %8s\n", "float32", "-", float_acc, "");
    weight_only<qk::Scheme<qk::Int<8>>>(d, "int8 per-tensor affine", float_acc);
    weight_only<qk::Scheme<qk::Int<8>, qk::PerChannel<0>, qk::SymmetricRestricted>>(d, "int8 per-channel symmetric", float_acc);
    weight_only<qk::Scheme<qk::Int<4>, qk::PerTensor, qk::Symmetric>>(d, "int4 per-tensor symmetric", float_acc);
    weight_only<qk::Scheme<qk::Int<4>, qk::PerChannel<0>, qk::Symmetric>>(d, "int4 per-channel symmetric", float_acc);
    weight_only<qk::Scheme<qk::Int<4>, qk::PerGroup<1, 16>, qk::Symmetric>>(d, "int4 per-group(16) symmetric", float_acc);
    weight_only<qk::Scheme<qk::Int<2>, qk::PerChannel<0>, qk::Symmetric>>(d, "int2 per-channel symmetric", float_acc);
    const double int_acc = integer_w8a8(d);
    std::printf("  %-34s %8s %9.2f %+8.2f\n", "integer-only W8A8 (fixed-point)", "-", int_acc, int_acc - float_acc);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
