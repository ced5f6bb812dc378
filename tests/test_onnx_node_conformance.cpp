// ONNX conformance: every case in Debian's libonnx-testdata (node/test_*, plus the
// pytorch-converted, pytorch-operator and simple folders) whose ops the executor supports is
// loaded with quantkit::onnx::load and run with Executor<FloatMode>; every output of every
// test_data_set_* must match (float: |got - want| <= 1e-5 + 1e-3 |want|; integers exact).
// Cases named after a supported op that use ops, attributes or element types outside the
// supported set are listed as skipped with the reason; nothing else is skipped.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <dirent.h>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <quantkit/executor.hpp>
#include <quantkit/onnx.hpp>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_onnx_node_conformance {

namespace qk = quantkit;
using qk::graph::DType;
using qk::graph::Tensor;

namespace {

std::vector<std::string> list_dir(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.compare(0, prefix.size(), prefix) == 0) out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "" when equal, else what differs.
std::string compare(const Tensor& got, const Tensor& want) {
  std::ostringstream why;
  if (got.dtype() != want.dtype()) {
    why << "element type " << qk::graph::to_string(got.dtype()) << ", expected " << qk::graph::to_string(want.dtype());
    return why.str();
  }
  if (got.shape() != want.shape()) {
    why << "shape " << got.shape().to_string() << ", expected " << want.shape().to_string();
    return why.str();
  }
  std::int64_t bad = 0, first = -1;
  double worst = 0.0;
  for (std::int64_t i = 0; i < got.size(); ++i) {
    if (got.dtype() == DType::float32) {
      const float g = got.data<float>()[i], w = want.data<float>()[i];
      if (std::isnan(g) && std::isnan(w)) continue;
      const double err = std::fabs(static_cast<double>(g) - static_cast<double>(w));
      if (!(err <= 1e-5 + 1e-3 * std::fabs(static_cast<double>(w))) && !(g == w)) {
        ++bad;
        if (first < 0) first = i;
        worst = std::max(worst, err);
      }
    } else if (got.as_int64(i) != want.as_int64(i)) {
      ++bad;
      if (first < 0) first = i;
    }
  }
  if (bad == 0) return {};
  why << bad << " of " << got.size() << " elements differ, first at " << first << ": got "
      << got.as_double(first) << ", expected " << want.as_double(first);
  if (got.dtype() == DType::float32) why << " (max abs error " << worst << ")";
  return why.str();
}

struct Outcome {
  enum Kind { passed, failed, skipped } kind = passed;
  std::string reason;
};

int own_inferred = 0, own_unknown = 0;  // outputs quantkit's own shape inference found / left open

bool is_unsupported(const std::string& message) {
  return message.find("not supported") != std::string::npos ||
         message.find("unsupported") != std::string::npos;
}

Outcome run_case(const std::string& dir) {
  qk::graph::Graph g;
  try {
    g = qk::onnx::load(dir + "/model.onnx");
  } catch (const qk::Error& e) {
    return {is_unsupported(e.what()) ? Outcome::skipped : Outcome::failed, e.what()};
  }
  std::unique_ptr<qk::Executor<>> run;
  try {
    run = std::make_unique<qk::Executor<>>(g);
  } catch (const qk::Error& e) {
    return {is_unsupported(e.what()) ? Outcome::skipped : Outcome::failed, e.what()};
  }
  const auto sets = list_dir(dir, "test_data_set_");
  if (sets.empty()) return {Outcome::failed, "no test_data_set_* folder"};
  for (const auto& set : sets) {
    const std::string sd = dir + "/" + set;
    std::map<std::string, Tensor> inputs;
    try {
      for (std::size_t i = 0;; ++i) {
        const std::string f = sd + "/input_" + std::to_string(i) + ".pb";
        if (!exists(f)) break;
        if (i >= g.inputs.size()) return {Outcome::failed, set + ": more input files than graph inputs"};
        inputs[g.inputs[i].name] = qk::onnx::load_tensor(f);
      }
      const auto outputs = run->run(inputs);
      for (std::size_t i = 0; i < g.outputs.size(); ++i) {
        const std::string f = sd + "/output_" + std::to_string(i) + ".pb";
        if (!exists(f)) continue;
        const Tensor want = qk::onnx::load_tensor(f);
        const std::string why = compare(outputs.at(g.outputs[i].name), want);
        if (!why.empty()) return {Outcome::failed, set + " output '" + g.outputs[i].name + "': " + why};
      }
    } catch (const qk::Error& e) {
      return {is_unsupported(e.what()) ? Outcome::skipped : Outcome::failed, set + ": " + e.what()};
    }
  }
  // quantkit's own shape inference (passes::infer_shapes, used without libonnx) must agree
  // with the shapes the data has and with libonnx's inferred intermediate shapes.
  try {
    qk::onnx::LoadOptions o;
    o.infer_shapes = false;
    auto own = qk::onnx::load(dir + "/model.onnx", o);
    for (auto& out : own.outputs) out.has_shape = false, out.dims.clear(), out.dim_params.clear();
    qk::passes::infer_shapes(own);
    std::map<std::string, Tensor> inputs;
    const std::string sd = dir + "/" + sets.front();
    for (std::size_t i = 0; i < g.inputs.size() && exists(sd + "/input_" + std::to_string(i) + ".pb"); ++i)
      inputs[g.inputs[i].name] = qk::onnx::load_tensor(sd + "/input_" + std::to_string(i) + ".pb");
    const auto outputs = run->run(inputs);
    for (const auto& out : own.outputs) {
      const Tensor& t = outputs.at(out.name);
      if (!out.has_shape) {  // unknown (e.g. a shape given as a runtime input) is fine; wrong is not
        ++own_unknown;
        continue;
      }
      ++own_inferred;
      bool same = out.dims.size() == static_cast<std::size_t>(t.rank());
      for (std::size_t d = 0; same && d < out.dims.size(); ++d) same = out.dims[d] == t.dim(static_cast<int>(d));
      if (!same || out.dtype != t.dtype())
        return {Outcome::failed, "own shape inference: output '" + out.name + "' inferred " + out.shape_string() +
                                     ", the data has " + t.shape().to_string()};
    }
    for (const auto& kv : g.value_info) {  // libonnx's
      auto it = own.value_info.find(kv.first);
      if (it == own.value_info.end() || !kv.second.fully_known()) continue;
      if (it->second.dims != kv.second.dims)
        return {Outcome::failed, "own shape inference: '" + kv.first + "' inferred " + it->second.shape_string() +
                                     ", libonnx " + kv.second.shape_string()};
    }
  } catch (const qk::Error& e) {
    return {Outcome::failed, std::string("own shape inference: ") + e.what()};
  }
  return {};
}

// The op types a model uses (read without the support check, so unsupported ones show).
std::set<std::string> model_ops(const std::string& dir, std::string& error) {
  std::set<std::string> ops;
  try {
    qk::onnx::LoadOptions o;
    o.infer_shapes = false;
    const auto g = qk::onnx::load(dir + "/model.onnx", o);
    for (const auto& n : g.nodes) ops.insert(n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type);
  } catch (const qk::Error& e) {
    error = e.what();
  }
  return ops;
}

}  // namespace

TEST_CASE("ONNX node conformance (libonnx-testdata)") {
  const std::string root = QUANTKIT_ONNX_TESTDATA_DIR;
  if (!exists(root + "/node")) {
    MESSAGE("ONNX test data not found in " << root << " (Debian package libonnx-testdata); skipped");
    return;
  }
  const auto& registry = qk::builtin_ops();
  std::set<std::string> prefixes;  // "conv" for Conv: cases named after a supported op
  for (const auto& op : registry.op_types()) prefixes.insert(lower(op));
  prefixes.insert("batchnorm");
  prefixes.insert("basic_conv");
  prefixes.insert("reduce_mean");
  prefixes.insert("globalaveragepool");
  prefixes.insert("constant_pad");
  prefixes.insert("edge_pad");
  prefixes.insert("reflect_pad");

  std::map<std::string, std::pair<int, int>> per_op;  // op -> passed, total
  std::vector<std::string> passed, failed, skipped;
  int node_passed = 0;
  for (const std::string folder : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    for (const auto& name : list_dir(root + "/" + folder, "test_")) {
      const std::string dir = root + "/" + folder + "/" + name;
      if (!exists(dir + "/model.onnx")) continue;
      std::string load_error;
      const auto ops = model_ops(dir, load_error);
      bool all_supported = load_error.empty();
      std::string missing;
      for (const auto& op : ops)
        if (!registry.supports("", op)) {
          all_supported = false;
          missing += (missing.empty() ? "" : ", ") + op;
        }
      const std::string stem = lower(name.substr(5));
      bool named_after_supported = false;
      for (const auto& p : prefixes)
        if (stem.compare(0, p.size(), p) == 0) named_after_supported = true;
      const std::string id = folder + "/" + name;
      if (!all_supported) {
        // Only cases of supported ops count as skipped; the rest are other ops' tests.
        if (folder == "node" && named_after_supported)
          skipped.push_back(id + "  [" + (missing.empty() ? load_error : "uses unsupported op(s): " + missing) + "]");
        continue;
      }
      std::string key;
      for (const auto& op : ops) key += (key.empty() ? "" : "+") + op;
      if (folder != "node") key = folder + ": " + key;
      const Outcome r = run_case(dir);
      if (r.kind == Outcome::skipped) {
        skipped.push_back(id + "  [" + r.reason + "]");
        continue;
      }
      auto& po = per_op[key];
      ++po.second;
      if (r.kind == Outcome::passed) {
        ++po.first;
        passed.push_back(id);
        if (folder == "node") ++node_passed;
      } else {
        failed.push_back(id + "  [" + r.reason + "]");
      }
    }
  }

  std::ostringstream report;
  report << "ONNX conformance per op (passed/total):\n";
  for (const auto& kv : per_op) report << "  " << kv.first << ": " << kv.second.first << "/" << kv.second.second << "\n";
  report << "passed cases:";
  for (const auto& p : passed) report << " " << p;
  report << "\nfailed cases:\n";
  for (const auto& f : failed) report << "  " << f << "\n";
  report << "skipped cases (ops, attributes or element types outside the supported set):\n";
  for (const auto& s : skipped) report << "  " << s << "\n";
  report << "own shape inference (passes::infer_shapes): " << own_inferred << " outputs inferred, all equal to the data's; "
         << own_unknown << " left unknown (shapes fed as runtime inputs)\n";
  report << "ONNX conformance summary: passed " << passed.size() << " (node " << node_passed
         << "), failed " << failed.size() << ", skipped " << skipped.size() << "\n";
  std::cout << report.str() << std::flush;
  CHECK(failed.empty());
  CHECK(node_passed >= 150);  // guards against silently running nothing
}

}  // namespace test_onnx_node_conformance
