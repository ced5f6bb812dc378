// A systematic sweep over libonnx 1.12's shape inference, through quantkit::onnx::load_bytes:
// for every operator schema of the ONNX and ONNX-ML domains (every version), a one-node model
// whose input 0 has rank 0..4 and the other inputs rank 0..4 (all the same), and, when the op has
// an "axis" or "axes" attribute, each value in -5..4; each once with the inputs given straight
// to the node (the loader's checks before inference see their ranks) and once through Identity
// nodes (only the checks inside inference do). Every case must end in a Graph or a
// quantkit::Error. QUANTKIT_SWEEP_FORK=1 runs each case in a forked child and lists all crashes.
//
// fuzz/fuzz_onnx_load found libonnx's unchecked ranks one at a time, by chance (Gemm, the
// convolutions, GRU, LayerNormalization); this finds the whole class in seconds. The loader's
// checks (quantkit/onnx/load.hpp, libonnx_rank_problem) were completed from it: without the
// checks inside inference, 165 cases crash (QUANTKIT_SWEEP_FORK=1 with libonnx's own registry
// swapped in).
// Ranks only: crashes that need particular dims or constant input values stay the fuzzer's.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "quantkit/onnx/load.hpp"

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_onnx_libonnx_sweep {

namespace {

int data_type_of(const std::string& type_string) {
  static const std::map<std::string, int> types = {
      {"tensor(float)", 1},   {"tensor(uint8)", 2},   {"tensor(int8)", 3},    {"tensor(uint16)", 4},
      {"tensor(int16)", 5},   {"tensor(int32)", 6},   {"tensor(int64)", 7},   {"tensor(bool)", 9},
      {"tensor(float16)", 10}, {"tensor(double)", 11}, {"tensor(uint32)", 12}, {"tensor(uint64)", 13}};
  auto it = types.find(type_string);
  return it != types.end() ? it->second : 0;
}

// The element type for a formal parameter: float when allowed, else the first tensor type
// allowed; 0 when none is (sequences, maps, strings only).
int element_type(const ::onnx::OpSchema& s, const std::string& type_str) {
  if (int t = data_type_of(type_str)) return t;
  for (const auto& c : s.typeConstraintParams()) {
    if (c.type_param_str != type_str) continue;
    int first = 0;
    for (const auto& allowed : c.allowed_type_strs) {
      const int t = data_type_of(allowed);
      if (t == 1) return 1;
      if (first == 0) first = t;
    }
    return first;
  }
  return 0;
}

struct Case {
  const ::onnx::OpSchema* schema;
  std::vector<int> ranks;       // per node input
  std::string axis_name;        // "" / "axis" / "axes"
  int axis = 0;
  bool via_identity = false;    // inputs through Identity nodes: their ranks known only in inference
  std::string describe() const {
    std::string r = (schema->domain().empty() ? "" : schema->domain() + ".") + schema->Name() + "-" +
                    std::to_string(schema->SinceVersion()) + " ranks [";
    for (std::size_t i = 0; i < ranks.size(); ++i) r += (i ? "," : "") + std::to_string(ranks[i]);
    r += "]";
    if (!axis_name.empty()) r += " " + axis_name + "=" + std::to_string(axis);
    if (via_identity) r += " via Identity";
    return r;
  }
};

// The one-node model of a case; false when the schema cannot be expressed with tensor inputs.
bool build(const Case& c, ::onnx::ModelProto& m) {
  const ::onnx::OpSchema& s = *c.schema;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(s.domain().empty() ? s.SinceVersion() : 17);
  if (!s.domain().empty()) {
    auto* ml = m.add_opset_import();
    ml->set_domain(s.domain());
    ml->set_version(s.SinceVersion());
  }
  auto* g = m.mutable_graph();
  g->set_name("sweep");
  ::onnx::NodeProto node;
  auto* n = &node;
  n->set_op_type(s.Name());
  n->set_name("n");
  n->set_domain(s.domain());
  std::size_t k = 0;
  for (const auto& p : s.inputs()) {
    const int copies = p.GetOption() == ::onnx::OpSchema::Variadic ? 2 : 1;
    const int t = element_type(s, p.GetTypeStr());
    if (t == 0) return false;
    for (int j = 0; j < copies; ++j, ++k) {
      if (k >= c.ranks.size()) return false;
      const std::string name = "i" + std::to_string(k);
      auto* in = g->add_input();
      in->set_name(name);
      in->mutable_type()->mutable_tensor_type()->set_elem_type(t);
      auto* shape = in->mutable_type()->mutable_tensor_type()->mutable_shape();
      for (int d = 0; d < c.ranks[k]; ++d) shape->add_dim()->set_dim_value(2);
      if (c.via_identity) {
        auto* id = g->add_node();
        id->set_op_type("Identity");
        id->set_name("id" + std::to_string(k));
        id->add_input(name);
        id->add_output(name + "_id");
        n->add_input(name + "_id");
      } else {
        n->add_input(name);
      }
    }
  }
  int o = 0;
  for (const auto& p : s.outputs()) {
    const int t = element_type(s, p.GetTypeStr());
    if (t == 0) return false;
    const std::string name = "o" + std::to_string(o++);
    n->add_output(name);
    if (o == 1) {
      auto* out = g->add_output();
      out->set_name(name);
      out->mutable_type()->mutable_tensor_type()->set_elem_type(t);
    }
  }
  for (const auto& kv : s.attributes()) {
    const auto& a = kv.second;
    const bool swept = kv.first == c.axis_name;
    if (!a.required && !swept) continue;
    auto* pa = n->add_attribute();
    pa->set_name(kv.first);
    pa->set_type(a.type);
    switch (a.type) {
      case ::onnx::AttributeProto::INT: pa->set_i(swept ? c.axis : 1); break;
      case ::onnx::AttributeProto::INTS: pa->add_ints(swept ? c.axis : 1); break;
      case ::onnx::AttributeProto::FLOAT: pa->set_f(1.0f); break;
      case ::onnx::AttributeProto::FLOATS: pa->add_floats(1.0f); break;
      case ::onnx::AttributeProto::STRING: pa->set_s("a"); break;
      case ::onnx::AttributeProto::STRINGS: pa->add_strings("a"); break;
      case ::onnx::AttributeProto::TENSOR: {
        auto* t = pa->mutable_t();
        t->set_data_type(1);
        t->add_float_data(1.0f);
        break;
      }
      default: return false;  // graphs are refused by the loader before inference
    }
  }
  *g->add_node() = node;
  return true;
}

}  // namespace

TEST_CASE("libonnx shape inference sweep: every schema, ranks 0..4, axes -5..4: a Graph or a quantkit::Error") {
  std::vector<Case> cases;
  const std::vector<::onnx::OpSchema> schemas = ::onnx::OpSchemaRegistry::get_all_schemas_with_history();
  for (const auto& s : schemas) {
    if (!(s.domain().empty() || s.domain() == "ai.onnx.ml") || s.Deprecated()) continue;
    std::size_t n_inputs = 0;
    for (const auto& p : s.inputs()) n_inputs += p.GetOption() == ::onnx::OpSchema::Variadic ? 2 : 1;
    std::vector<std::string> axis_names = {""};
    for (const char* a : {"axis", "axes"})
      if (s.attributes().count(a)) axis_names.push_back(a);
    // Input 0 of rank r0, the others of rank r1.
    for (int r0 = 0; r0 <= 4; ++r0)
      for (int r1 = 0; r1 <= 4; ++r1) {
        if (n_inputs < 2 && r1 > 0) continue;
        std::vector<int> ranks(n_inputs, r1);
        if (!ranks.empty()) ranks[0] = r0;
        for (const auto& an : axis_names)
          for (int axis = an.empty() ? 0 : -5; axis <= (an.empty() ? 0 : 4); ++axis)
            for (const bool via : {false, true}) cases.push_back({&s, ranks, an, axis, via});
      }
  }
  // In process by default (a fork per case costs 6 minutes under ASan): a crash ends the test
  // (doctest does not name the case then). QUANTKIT_SWEEP_FORK=1 runs each case in a forked
  // child instead and lists every case that crashes.
  const bool fork_each = std::getenv("QUANTKIT_SWEEP_FORK") != nullptr;
  int findings = 0, built = 0, loaded = 0;
  for (const auto& c : cases) {
    ::onnx::ModelProto m;
    if (!build(c, m)) continue;
    ++built;
    const std::string bytes = m.SerializeAsString();
    // 0: a Graph, 3: a quantkit::Error, 4: another exception.
    auto load = [&bytes] {
      try {
        quantkit::onnx::load_bytes(bytes.data(), bytes.size(), "sweep.onnx");
        return 0;
      } catch (const quantkit::Error&) {
        return 3;
      } catch (...) {
        return 4;
      }
    };
    if (!fork_each) {
      INFO(c.describe());
      const int r = load();
      CHECK(r != 4);
      loaded += r == 0;
      findings += r == 4;
      continue;
    }
    std::fflush(stdout);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) dup2(devnull, 2);
      _exit(load());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3)) {
      loaded += WEXITSTATUS(status) == 0;
      continue;
    }
    ++findings;
    FAIL_CHECK(c.describe() << ": " << (WIFSIGNALED(status) ? "signal " : "exit ")
                            << (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)));
  }
  MESSAGE(built << " cases built, " << loaded << " loaded, " << built - loaded - findings
                << " ended in a quantkit::Error, " << findings << " findings");
  CHECK(findings == 0);
  // The sweep reaches inference: most cases load, and the cases the checks refuse are there too
  // (38140 / 28249 / 9891 with Debian 12's libonnx 1.12).
  CHECK(built > 30000);
  CHECK(loaded > built / 2);
  CHECK(built - loaded > 5000);
}

}  // namespace test_onnx_libonnx_sweep
