// Cross-check against ONNX Runtime (npm onnxruntime-node, when it is installed): random
// single-op models (Conv 1-3-D with groups/strides/dilations/pads/auto_pad, MaxPool and
// AveragePool with ceil_mode/count_include_pad, QLinearConv per-channel with bias,
// QLinearMatMul, QuantizeLinear at ties, DequantizeLinear per axis, Gemm, broadcasting MatMul
// and binary ops, Softmax, ReduceMean, Pad) are built with the protobuf API, run by the
// executor and by ONNX Runtime (through node), and compared: float within 1e-4 relative,
// integer outputs bit-exact. Known ONNX Runtime limitations (it rejects SAME padding when the
// kernel is smaller than the stride) are the only accepted differences.
//
// ONNX Runtime is looked up in $QUANTKIT_ORT_NODE_MODULE, then tools/ort/node_modules (installed
// by tools/ort/install.sh), then tools/bench/node_modules.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <quantkit/executor.hpp>
#include <quantkit/onnx.hpp>
#include <random>
#include <string>
#include <vector>

// Everything below in a namespace of this file's name: the unity build of the tests
// (QUANTKIT_TEST_UNITY_GROUPS) compiles several test files as one translation unit.
namespace test_onnx_load_ort_crosscheck {

namespace qk = quantkit;
using qk::graph::DType;
using qk::graph::Tensor;
using json = nlohmann::json;

namespace {

std::mt19937 rng(777);
int ri(int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); }
float rf(float a, float b) { return std::uniform_real_distribution<float>(a, b)(rng); }

void add_tensor(::onnx::TensorProto* t, const std::string& name, const Tensor& v) {
  t->set_name(name);
  t->set_data_type(qk::onnx::detail::dtype_to_onnx(v.dtype()));
  for (int i = 0; i < v.rank(); ++i) t->add_dims(v.dim(i));
  t->set_raw_data(std::string(static_cast<const char*>(v.raw()), v.nbytes()));
}
void vi(::onnx::ValueInfoProto* p, const std::string& n, DType t) {
  p->set_name(n);
  p->mutable_type()->mutable_tensor_type()->set_elem_type(qk::onnx::detail::dtype_to_onnx(t));
}
Tensor rand_f(qk::Dims s) {
  Tensor t(DType::float32, s);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = rf(-2, 2);
  return t;
}
template <class T>
Tensor rand_i(qk::Dims s, int lo, int hi) {
  Tensor t(qk::graph::dtype_of_v<T>, s);
  for (int64_t i = 0; i < t.size(); ++i) t.data<T>()[i] = static_cast<T>(ri(lo, hi));
  return t;
}

struct Case {
  ::onnx::ModelProto m;
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::string desc;
};

struct Builder {
  Case c;
  ::onnx::NodeProto* n;
  Builder(const std::string& op, int opset = 13) {
    c.m.set_ir_version(7);
    auto* o = c.m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    n = c.m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name("n");
    c.desc = op;
  }
  void in(const Tensor& t, bool init = false) {
    std::string name = "i" + std::to_string(n->input_size());
    n->add_input(name);
    if (init)
      add_tensor(c.m.mutable_graph()->add_initializer(), name, t);
    else {
      vi(c.m.mutable_graph()->add_input(), name, t.dtype());
      c.inputs.push_back({name, t});
    }
  }
  void none() { n->add_input(""); }
  void out(DType t) {
    std::string name = "o" + std::to_string(n->output_size());
    n->add_output(name);
    vi(c.m.mutable_graph()->add_output(), name, t);
  }
  void ai(const std::string& k, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
    c.desc += " " + k + "=" + std::to_string(v);
  }
  void af(const std::string& k, float v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
    c.desc += " " + k + "=" + std::to_string(v);
  }
  void as(const std::string& k, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
    c.desc += " " + k + "=" + v;
  }
  void ais(const std::string& k, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto::INTS);
    std::string d;
    for (auto x : v) {
      a->add_ints(x);
      d += std::to_string(x) + ",";
    }
    c.desc += " " + k + "=" + d;
  }
};

// window attrs; returns spatial dims
void window(Builder& b, int s, std::vector<int64_t>& in, std::vector<int64_t>& k, bool pool, bool maxpool) {
  std::vector<int64_t> st, dl, pads(2 * s);
  for (int i = 0; i < s; ++i) {
    k.push_back(ri(1, 3));
    st.push_back(ri(1, 3));
    dl.push_back((pool && !maxpool) ? 1 : ri(1, 2));
  }
  int mode = ri(0, 4);
  if (mode >= 2 && mode <= 3)
    for (auto& d : dl) d = 1;  // ORT: no dilation with SAME
  for (int i = 0; i < s; ++i) {
    int64_t eff = (k[i] - 1) * dl[i] + 1;
    in.push_back(eff + ri(0, 5));
  }
  if (mode <= 1) {
    for (int i = 0; i < 2 * s; ++i) pads[i] = ri(0, pool ? int(k[i % s]) - 1 : 2);
    b.ais("pads", pads);
  } else
    b.as("auto_pad", mode == 2 ? "SAME_UPPER" : mode == 3 ? "SAME_LOWER" : "VALID");
  if (pool) b.ais("kernel_shape", k);
  b.ais("strides", st);
  if (!pool || maxpool) b.ais("dilations", dl);
}

Case gen(int idx) {
  int kind = idx % 14;
  if (kind == 9) {  // Softmax over a random axis
    Builder b("Softmax");
    b.ai("axis", ri(-3, 2));
    b.in(rand_f(qk::Dims{ri(1, 3), ri(1, 4), ri(1, 5)}));
    b.out(DType::float32);
    return b.c;
  }
  if (kind == 10) {  // ReduceMean, random axes and keepdims
    Builder b("ReduceMean");
    std::vector<int64_t> axes;
    for (int a = -3; a < 3; ++a)
      if (ri(0, 3) == 0 && axes.size() < 2 && (axes.empty() || (axes[0] + 3) % 3 != (a + 3) % 3))
        axes.push_back(a);
    if (!axes.empty()) b.ais("axes", axes);
    b.ai("keepdims", ri(0, 1));
    b.in(rand_f(qk::Dims{ri(1, 3), ri(1, 4), ri(1, 5)}));
    b.out(DType::float32);
    return b.c;
  }
  if (kind == 11) {  // Pad: constant / reflect / edge
    Builder b("Pad");
    const char* modes[] = {"constant", "reflect", "edge"};
    int m = ri(0, 2);
    b.as("mode", modes[m]);
    qk::Dims xs{ri(1, 2), ri(2, 4), ri(2, 5)};
    std::vector<int64_t> pads;
    for (int i = 0; i < 6; ++i) pads.push_back(ri(0, m == 1 ? int(xs[i % 3]) - 1 : 3));
    b.in(rand_f(xs));
    b.in(Tensor::from_vector(qk::Dims{6}, pads), true);
    if (m == 0) b.in(Tensor::scalar(rf(-1, 1)), true);
    b.out(DType::float32);
    return b.c;
  }
  if (kind == 12) {  // DequantizeLinear per axis
    Builder b("DequantizeLinear");
    qk::Dims xs{ri(1, 3), ri(1, 4), ri(1, 3)};
    int axis = ri(0, 2);
    b.ai("axis", axis);
    Tensor sc(DType::float32, qk::Dims{xs[axis]});
    for (int64_t i = 0; i < sc.size(); ++i) sc.data<float>()[i] = rf(0.01f, 1);
    b.in(rand_i<int8_t>(xs, -128, 127));
    b.in(sc, true);
    b.in(rand_i<int8_t>(qk::Dims{xs[axis]}, -20, 20), true);
    b.out(DType::float32);
    return b.c;
  }
  if (kind == 13) {  // broadcasting binary ops
    const char* ops[] = {"Add", "Sub", "Mul", "Div"};
    Builder b(ops[ri(0, 3)]);
    qk::Dims a{ri(1, 3), 1, ri(1, 4)}, c{ri(0, 1) ? a[0] : 1, ri(1, 3), 1};
    b.in(rand_f(a));
    b.in(rand_f(ri(0, 1) ? c : qk::Dims{a[2]}));
    b.out(DType::float32);
    return b.c;
  }
  if (kind == 0 || kind == 1) {  // Conv
    Builder b("Conv");
    int s = ri(1, 3), g = ri(1, 3), cg = ri(1, 3), mg = ri(1, 3), N = ri(1, 2);
    std::vector<int64_t> in, k;
    window(b, s, in, k, false, false);
    if (g > 1) b.ai("group", g);
    std::vector<int64_t> xs = {N, g * cg}, ws = {g * mg, cg};
    for (int i = 0; i < s; ++i) {
      xs.push_back(in[i]);
      ws.push_back(k[i]);
    }
    b.in(rand_f(qk::Dims::from(xs.begin(), xs.end())));
    b.in(rand_f(qk::Dims::from(ws.begin(), ws.end())), true);
    if (ri(0, 1)) b.in(rand_f(qk::Dims{g * mg}), true);
    b.out(DType::float32);
    return b.c;
  }
  if (kind == 2 || kind == 3) {  // pools
    bool mx = kind == 2;
    Builder b(mx ? "MaxPool" : "AveragePool", mx ? 13 : 13);
    int s = ri(1, 3);
    std::vector<int64_t> in, k;
    window(b, s, in, k, true, mx);
    if (ri(0, 1)) b.ai("ceil_mode", 1);
    if (!mx && ri(0, 1)) b.ai("count_include_pad", 1);
    std::vector<int64_t> xs = {ri(1, 2), ri(1, 3)};
    for (auto v : in) xs.push_back(v);
    b.in(rand_f(qk::Dims::from(xs.begin(), xs.end())));
    b.out(DType::float32);
    return b.c;
  }
  if (kind == 4) {  // QLinearConv
    Builder b("QLinearConv");
    int s = ri(1, 2), g = ri(1, 2), cg = ri(1, 3), mg = ri(1, 3);
    std::vector<int64_t> in, k;
    window(b, s, in, k, false, false);
    if (g > 1) b.ai("group", g);
    int M = g * mg;
    std::vector<int64_t> xs = {1, g * cg}, ws = {M, cg};
    for (int i = 0; i < s; ++i) {
      xs.push_back(in[i]);
      ws.push_back(k[i]);
    }
    b.in(rand_i<uint8_t>(qk::Dims::from(xs.begin(), xs.end()), 0, 255));
    b.in(Tensor::scalar(rf(0.001f, 0.05f)), true);
    b.in(Tensor::scalar<uint8_t>(uint8_t(ri(0, 255))), true);
    b.in(rand_i<int8_t>(qk::Dims::from(ws.begin(), ws.end()), -127, 127), true);
    Tensor wsc(DType::float32, qk::Dims{M});
    for (int i = 0; i < M; ++i) wsc.data<float>()[i] = rf(0.001f, 0.05f);
    b.in(wsc, true);
    b.in(Tensor(DType::int8, qk::Dims{M}), true);
    b.in(Tensor::scalar(rf(0.001f, 0.1f)), true);
    b.in(Tensor::scalar<uint8_t>(uint8_t(ri(0, 255))), true);
    if (ri(0, 1)) b.in(rand_i<int32_t>(qk::Dims{M}, -5000, 5000), true);
    b.out(DType::uint8);
    return b.c;
  }
  if (kind == 5) {  // QLinearMatMul
    Builder b("QLinearMatMul");
    int M = ri(1, 5), K = ri(1, 20), Nn = ri(1, 5);
    b.in(rand_i<uint8_t>(qk::Dims{ri(1, 2), M, K}, 0, 255));
    b.in(Tensor::scalar(rf(0.001f, 0.05f)), true);
    b.in(Tensor::scalar<uint8_t>(uint8_t(ri(0, 255))), true);
    b.in(rand_i<uint8_t>(qk::Dims{K, Nn}, 0, 255), true);
    b.in(Tensor::scalar(rf(0.001f, 0.05f)), true);
    b.in(Tensor::scalar<uint8_t>(uint8_t(ri(0, 255))), true);
    b.in(Tensor::scalar(rf(0.0005f, 0.01f)), true);
    b.in(Tensor::scalar<uint8_t>(uint8_t(ri(0, 255))), true);
    b.out(DType::uint8);
    return b.c;
  }
  if (kind == 6) {  // QuantizeLinear with ties
    Builder b("QuantizeLinear");
    float sc = rf(0.01f, 0.2f);
    Tensor x(DType::float32, qk::Dims{64});
    for (int i = 0; i < 64; ++i)
      x.data<float>()[i] = (float(ri(-300, 300)) + (ri(0, 1) ? 0.5f : rf(-1, 1))) * sc;
    b.in(x);
    b.in(Tensor::scalar(sc), true);
    b.in(Tensor::scalar<int8_t>(int8_t(ri(-5, 5))), true);
    b.out(DType::int8);
    return b.c;
  }
  if (kind == 7) {  // Gemm
    Builder b("Gemm");
    int M = ri(1, 6), K = ri(1, 6), Nn = ri(1, 6);
    bool ta = ri(0, 1), tb = ri(0, 1);
    if (ta) b.ai("transA", 1);
    if (tb) b.ai("transB", 1);
    b.af("alpha", rf(0.5f, 2));
    b.af("beta", rf(0.5f, 2));
    b.in(rand_f(ta ? qk::Dims{K, M} : qk::Dims{M, K}));
    b.in(rand_f(tb ? qk::Dims{Nn, K} : qk::Dims{K, Nn}), true);
    int cs = ri(0, 3);
    if (cs == 1)
      b.in(rand_f(qk::Dims{Nn}), true);
    else if (cs == 2)
      b.in(rand_f(qk::Dims{M, 1}), true);
    else if (cs == 3)
      b.in(rand_f(qk::Dims{M, Nn}), true);
    b.out(DType::float32);
    return b.c;
  }
  Builder b("MatMul");  // batch broadcast
  int M = ri(1, 4), K = ri(1, 4), Nn = ri(1, 4);
  b.in(rand_f(ri(0, 1) ? qk::Dims{2, 1, M, K} : qk::Dims{M, K}));
  b.in(rand_f(ri(0, 1) ? qk::Dims{3, K, Nn} : qk::Dims{K, Nn}));
  b.out(DType::float32);
  return b.c;
}

json tjson(const Tensor& t) {
  json j;
  j["type"] = qk::graph::to_string(t.dtype());
  j["dims"] = qk::graph::to_vector(t.shape());
  std::vector<double> d;
  for (int64_t i = 0; i < t.size(); ++i) d.push_back(t.as_double(i));
  j["data"] = d;
  return j;
}

bool exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

const char* ort_script = R"JS(
const fs = require('fs');
const ort = require(process.argv[2]);
(async () => {
  // The graph as written ('disabled'), except on x86-64 CPUs without VNNI: there ONNX Runtime's
  // uint8 x int8 kernels saturate pair sums at int16 unless session.x64quantprecision is set,
  // which takes a level-2 rewrite (tools/ort/run_model.mjs, --x64-quant-precision auto).
  const { sessionSettings } = await import(process.argv[4]);
  const settings = sessionSettings('disabled', 'auto');
  fs.writeFileSync(process.argv[3] + '/settings.txt',
    `graph optimization ${settings.graphOptimization}, x64 quant precision ${settings.x64QuantPrecision}`);
  const man = JSON.parse(fs.readFileSync(process.argv[3] + '/manifest.json'));
  const out = [];
  const ctor = { float32: Float32Array, int8: Int8Array, uint8: Uint8Array, int32: Int32Array, int64: BigInt64Array };
  for (const e of man) {
    try {
      const s = await ort.InferenceSession.create(e.model, { intraOpNumThreads: 1, logSeverityLevel: 4, ...settings.options });
      const feeds = {};
      for (const i of (e.inputs || [])) feeds[i.name] = new ort.Tensor(i.type, ctor[i.type].from(i.data), i.dims);
      const t = (await s.run(feeds))['o0'];
      out.push({ out: { dims: t.dims, data: Array.from(t.data, Number) } });
    } catch (err) { out.push({ error: String(err.message || err).slice(0, 300) }); }
  }
  fs.writeFileSync(process.argv[3] + '/ort.json', JSON.stringify(out));
})();
)JS";

}  // namespace

TEST_CASE("executor agrees with ONNX Runtime on random single-op models") {
  std::string ort_module;
  if (const char* env = std::getenv("QUANTKIT_ORT_NODE_MODULE")) ort_module = env;
  for (const char* where :
       {"/../tools/ort/node_modules/onnxruntime-node", "/../tools/bench/node_modules/onnxruntime-node"})
    if (ort_module.empty() && exists(std::string(QUANTKIT_TEST_DIR) + where))
      ort_module = std::string(QUANTKIT_TEST_DIR) + where;
  if (!exists(ort_module) || std::system("node --version > /dev/null 2>&1") != 0) {
    MESSAGE("ONNX Runtime for node not found (" << ort_module << "): cross-check skipped");
    return;
  }
  char tmpl[] = "/tmp/quantkit_ort_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  const int n = 700;
  json man = json::array();
  for (int i = 0; i < n; ++i) {
    Case c = gen(i);
    const std::string path = dir + "/m" + std::to_string(i) + ".onnx";
    std::ofstream(path, std::ios::binary) << c.m.SerializeAsString();
    json e;
    e["model"] = path;
    e["desc"] = c.desc;
    for (auto& [name, t] : c.inputs) {
      json ti = tjson(t);
      ti["name"] = name;
      e["inputs"].push_back(ti);
    }
    try {
      qk::Executor<> ex(qk::onnx::load(path));
      std::map<std::string, Tensor> feed(c.inputs.begin(), c.inputs.end());
      e["ours"] = tjson(ex.run(feed).at("o0"));
    } catch (const qk::Error& err) {
      e["ours_error"] = err.what();
    }
    man.push_back(e);
  }
  std::ofstream(dir + "/manifest.json") << man.dump();
  std::ofstream(dir + "/ort.js") << ort_script;
  const std::string run_model = std::string(QUANTKIT_TEST_DIR) + "/../tools/ort/run_model.mjs";
  const std::string cmd = "node '" + dir + "/ort.js' '" + ort_module + "' '" + dir + "' 'file://" + run_model + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::string settings;
  std::getline(std::ifstream(dir + "/settings.txt"), settings);
  MESSAGE("ONNX Runtime: " << settings);
  const json res = json::parse(std::ifstream(dir + "/ort.json"));
  REQUIRE(res.size() == man.size());
  int agree = 0, ort_limits = 0;
  for (std::size_t i = 0; i < man.size(); ++i) {
    const json& e = man[i];
    const json& r = res[i];
    const std::string desc = e["desc"];
    if (r.contains("error")) {
      const std::string why = r["error"];
      if (why.find("padding values must be non-negative") != std::string::npos) {
        ++ort_limits;  // ORT rejects SAME padding when kernel < stride; the spec allows it
        continue;
      }
      CHECK_MESSAGE(e.contains("ours_error"),
                    desc << ": ONNX Runtime failed (" << why << "), quantkit did not");
      continue;
    }
    if (e.contains("ours_error")) {
      CHECK_MESSAGE(false, desc << ": quantkit failed: " << e["ours_error"].get<std::string>());
      continue;
    }
    const json& a = e["ours"];
    const json& b = r["out"];
    if (a["dims"] != b["dims"]) {
      CHECK_MESSAGE(false, desc << ": shape " << a["dims"].dump() << ", ONNX Runtime " << b["dims"].dump());
      continue;
    }
    int bad = 0;
    for (std::size_t k = 0; k < a["data"].size(); ++k) {
      const double x = a["data"][k], y = b["data"][k], d = std::fabs(x - y);
      if (a["type"] == "float32" ? d > 1e-4 + 1e-4 * std::fabs(y) : d != 0) ++bad;
    }
    CHECK_MESSAGE(bad == 0, desc << ": " << bad << " elements differ from ONNX Runtime");
    agree += bad == 0;
  }
  MESSAGE("ONNX Runtime cross-check: " << agree << " of " << n << " models agree, " << ort_limits
                                       << " rejected by ONNX Runtime (SAME padding with kernel < stride)");
  CHECK(agree + ort_limits == n);
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace test_onnx_load_ort_crosscheck
