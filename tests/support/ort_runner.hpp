// Test-only: ONNX Runtime (npm onnxruntime-node) through tools/ort/run_model.mjs, as the peer
// test cases run it.
//
//   if (!quantkit_test::ort::available()) { ...skip... }
//   const std::string used = quantkit_test::ort::run_model(model, {"input=" + npy}, out_dir, "all", "auto");
//   // outputs in out_dir/<name>.npy; used: "graph optimization all, x64 quant precision on"
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace quantkit_test {
namespace ort {

inline std::string repo_dir() { return std::string(QUANTKIT_TEST_DIR) + "/.."; }

// node and the onnxruntime-node module run_model.mjs loads ($QUANTKIT_ORT_NODE_MODULE instead,
// to test the skip).
inline bool available() {
  std::string module = repo_dir() + "/tools/ort/node_modules/onnxruntime-node";
  if (const char* env = std::getenv("QUANTKIT_ORT_NODE_MODULE")) module = env;
  struct stat st {};
  return stat(module.c_str(), &st) == 0 && std::system("node --version > /dev/null 2>&1") == 0;
}

// Runs `model` on `inputs` (NAME=FILE.npy each) with graph optimization `optimization` and
// --x64-quant-precision `precision` (on, off, auto: see run_model.mjs); the outputs land in
// out_dir, run_model.mjs's messages in out_dir + ".log". FAILs with that log on an error. Returns
// the settings run_model.mjs used: "graph optimization X, x64 quant precision Y".
inline std::string run_model(const std::string& model, const std::vector<std::string>& inputs, const std::string& out_dir,
                     const std::string& optimization, const std::string& precision) {
  std::string cmd = "node '" + repo_dir() + "/tools/ort/run_model.mjs' '" + model + "'";
  for (const auto& i : inputs) cmd += " --input '" + i + "'";
  cmd += " --output-dir '" + out_dir + "' --graph-optimization " + optimization + " --x64-quant-precision " + precision +
         " > '" + out_dir + ".log' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log(out_dir + ".log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  if (rc != 0) FAIL("ONNX Runtime failed on " << model << ":\n" << text);
  const std::size_t at = text.find("graph optimization ");
  return at == std::string::npos ? std::string("?") : text.substr(at, text.find(':', at) - at);
}

}  // namespace ort
}  // namespace quantkit_test
