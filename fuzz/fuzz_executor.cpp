// libFuzzer harness: the executor on fuzzed small graphs. Model bytes that pass the loader with
// only the executor's ops (LoadOptions::supported) and declare small, fully known input shapes
// (<= 4096 elements each) are run in float mode on deterministic inputs. Every input must end in
// outputs or a quantkit::Error; an allocation over -malloc_limit_mb (e.g. an Expand to a huge
// shape) is a finding too.
#include <cstddef>
#include <cstdint>

// Static SIMD dispatch (the build's own target, no libhwy): one quick-to-compile translation unit.
#include "quantkit/executor.hpp"
#include "quantkit/onnx/load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace qk = quantkit;
  try {
    qk::onnx::LoadOptions opt;
    opt.max_tensor_elements = std::int64_t{1} << 20;
    opt.max_initializer_bytes = std::uint64_t{16} << 20;
    opt.max_nodes = 256;
    opt.supported = [](const std::string& d, const std::string& op) { return qk::builtin_ops().supports(d, op); };
    qk::graph::Graph g = qk::onnx::load_bytes(data, size, "fuzz.onnx", opt);
    qk::Executor<> ex(g);
    qk::Executor<>::TensorMap inputs;
    for (const auto& in : g.inputs) {
      if (!in.has_shape || in.dtype == qk::graph::DType::undefined) return 0;
      std::int64_t n = 1;
      for (auto d : in.dims) {
        if (d < 0 || d > 4096) return 0;
        n *= d;
        if (n > 4096) return 0;
      }
      qk::graph::Tensor t(in.dtype, qk::graph::make_dims(in.dims, in.name));
      qk::graph::visit_dtype(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        for (std::int64_t i = 0; i < n; ++i) t.data<T>()[i] = static_cast<T>(i % 7);
      });
      inputs.emplace(in.name, std::move(t));
    }
    (void)ex.run(inputs);
  } catch (const quantkit::Error&) {
  }
  return 0;
}
