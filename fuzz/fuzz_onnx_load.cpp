// libFuzzer harness: ONNX model bytes -> quantkit::onnx::load_bytes (protobuf parsing, the
// graph IR, validation, libonnx shape inference). Every input must end in a Graph or a
// quantkit::Error; anything else (a crash, a sanitizer report, another exception, an
// allocation over -malloc_limit_mb) is a finding.
#include <cstddef>
#include <cstdint>

#include "quantkit/onnx/load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    quantkit::graph::Graph g = quantkit::onnx::load_bytes(data, size, "fuzz.onnx");
    (void)g.topological_order();
  } catch (const quantkit::Error&) {
  }
  return 0;
}
