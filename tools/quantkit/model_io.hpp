// Reading ONNX models for the CLI: the raw ModelProto (quantkit info describes any model,
// 16-bit and 4-bit QDQ included) and the helpers model_io.cpp uses to make QDQ models runnable.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

namespace quantkit {
namespace cli {

// The model file as protobuf; errors name the file (missing, truncated, not ONNX).
::onnx::ModelProto read_proto(const std::string& path);

// ONNX element type names: "float32", "int4", "uint16", ...
const char* onnx_type_name(int type);

}  // namespace cli
}  // namespace quantkit
