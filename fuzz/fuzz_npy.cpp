// libFuzzer harness: .npy bytes -> quantkit::npy::parse, and the typed read the CLI does next.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quantkit/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<unsigned char> bytes(data, data + size);
  try {
    const quantkit::npy::Array a = quantkit::npy::parse(bytes, "fuzz.npy");
    if (a.dtype == quantkit::npy::DType::f32) (void)a.as<float>("fuzz.npy");
    if (a.dtype == quantkit::npy::DType::i64) (void)a.as<std::int64_t>("fuzz.npy");
  } catch (const quantkit::Error&) {
  }
  return 0;
}
