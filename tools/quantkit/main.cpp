// quantkit — post-training quantization of ONNX models from the command line.
//
//   quantkit quantize | run | eval | calibrate | compare | info | export-cpp | debug   (quantkit SUBCOMMAND --help)
//
// Exit status: 0 success; 1 a bad input (model, data file, output path): one line on stderr
// naming the file/node/tensor, what was found and what was expected; 2 a bad command line
// (unknown option, bad value), also one line.
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli.hpp"
#include "quantkit/version.hpp"

namespace {

std::string one_line(std::string s) {
  const std::string prefix = "quantkit: ";
  if (s.compare(0, prefix.size(), prefix) == 0) s = s.substr(prefix.size());
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string command_of(const CLI::App& app) {
  std::string name = "quantkit";
  for (const CLI::App* sub : app.get_subcommands()) name += " " + sub->get_name();
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  namespace qc = quantkit::cli;
  CLI::App app("quantkit: post-training quantization of ONNX models (calibrate, write QDQ ONNX, run in float, "
               "fake-quant or integer-only, compare layer by layer)",
               "quantkit");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::to_string(QUANTKIT_VERSION_MAJOR) + "." +
                                        std::to_string(QUANTKIT_VERSION_MINOR) + "." +
                                        std::to_string(QUANTKIT_VERSION_PATCH));
  qc::add_quantize(app);
  qc::add_run(app);
  qc::add_eval(app);
  qc::add_calibrate(app);
  qc::add_compare(app);
  qc::add_info(app);
  qc::add_export_cpp(app);
  qc::add_debug(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string cmd = command_of(app);
    std::cerr << cmd << ": error: " << one_line(e.what()) << " (see " << cmd << " --help)\n";
    return 2;
  } catch (const qc::UsageError& e) {
    std::cerr << command_of(app) << ": error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << command_of(app) << ": error: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
