#!/usr/bin/env python3
"""ctest driver for the quantkit command-line tool: runs the built binary and checks what it
prints and writes (standard library only; every case asserts real values).

usage: cli_tests.py --quantkit PATH --source-dir ROOT --case NAME [--node PATH] [--cxx PATH]

Cases (one ctest test each, label "cli"; "peer" is label "peer"):
  quantize   W8A8 / W4A8 / per-group / --scale reports, --json fields, progress bar, summary
  eval       float 97.22 %; W8A8 and W4A8 QDQ files in fake and int mode within 0.5 / 1 points;
             a float model calibrated in memory (--calib) equals its QDQ file
  run        float logits equal PyTorch's (1e-4); fake-quant of the QDQ file == in-memory
             fake-quant bit for bit; int close to fake; -o NAME=, -o DIR/; --json
  calibrate  scales / zero points equal PyTorch's observers exactly (data/calibrate_torch.json)
  compare    a model against itself: cosine 1, chebyshev 0 on every row; float vs W8A8 rows;
             the ONNX Runtime QDQ naming (data/ort_qdq.onnx) maps back to the float values
  info       float / W8A8 / W4A8 per-group descriptions (--json)
  errors     bad inputs and options: non-zero exit, one line on stderr naming the option/file
  remedies   --cle recovers the hostile model's per-tensor accuracy; --bias-correction and
             --adaround=ITERS report per layer; bad iteration counts are usage errors
  qoperator  --format qoperator: QLinearConv/QLinearMatMul model, its accuracy when the executor
             runs it, --scale refused
  export     export-cpp: the header compiles -Wall -Wextra -Werror (--cxx) and its logits equal
             `quantkit run --mode int` bit for bit (standalone and with quantkit's headers)
  peer       ONNX Runtime (node tools/ort/run_model.mjs) runs the QDQ files quantize writes and
             agrees with `quantkit run --mode fake` (per-sample cosine >= 0.9999); exit 77 (skip)
             without node or onnxruntime-node
"""

import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

SKIP = 77


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


class Ctx:
    def __init__(self, args):
        self.qk = os.path.abspath(args.quantkit)
        self.root = os.path.abspath(args.source_dir)
        self.node = args.node
        self.cxx = args.cxx
        self.demo = os.path.join(self.root, "examples", "data", "demo")
        self.data = os.path.join(self.root, "tools", "quantkit", "tests", "data")
        self.tmp = tempfile.mkdtemp(prefix="quantkit_cli_")

    def demo_file(self, name):
        return os.path.join(self.demo, name)

    def tmp_file(self, name):
        return os.path.join(self.tmp, name)

    def run(self, *args, expect=0, env=None):
        cmd = [self.qk] + [str(a) for a in args]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        shown = " ".join(cmd)
        if expect is not None:
            check(p.returncode == expect,
                  f"{shown}: exit {p.returncode}, expected {expect}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def json(self, *args):
        p = self.run(*args, "--json")
        try:
            return json.loads(p.stdout)
        except ValueError as e:
            raise Failure(f"{' '.join(map(str, args))} --json: not JSON ({e}):\n{p.stdout}")

    def quantize(self, name, *options):
        out = self.tmp_file(name)
        self.run("quantize", self.demo_file("digits_cnn.onnx"), "-o", out, "--calib",
                 self.demo_file("digits_calib.npy"), *options)
        return out

    def eval(self, model, *options):
        return self.json("eval", model, "--input", self.demo_file("digits_test_x.npy"), "--labels",
                         self.demo_file("digits_test_y.npy"), *options)


# ---------------------------------------------------------------------------------------------
# .npy (float32, int8, uint8, int32, int64, float64; C order)
NPY_TYPES = {"<f4": "f", "<f8": "d", "|i1": "b", "|u1": "B", "<i2": "h", "<u2": "H", "<i4": "i", "<i8": "q"}


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    check(data[:6] == b"\x93NUMPY", f"{path}: not a .npy file")
    hlen = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    off = 10 if data[6] == 1 else 12
    header = eval(data[off:off + hlen].decode("latin1"))  # a Python dict literal
    code = NPY_TYPES[header["descr"].replace("<i1", "|i1").replace("<u1", "|u1")]
    shape = list(header["shape"])
    n = 1
    for d in shape:
        n *= d
    values = list(struct.unpack("<%d%s" % (n, code), data[off + hlen:]))
    return header["descr"], shape, values


def write_npy(path, descr, shape, values):
    code = NPY_TYPES[descr]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}," for d in shape) if len(shape) == 1 else ", ".join(str(d) for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def rows_of(shape, values):
    n = shape[0]
    k = len(values) // n
    return [values[i * k:(i + 1) * k] for i in range(n)]


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    aa = sum(x * x for x in a)
    bb = sum(y * y for y in b)
    if aa == 0 and bb == 0:
        return 1.0
    return ab / math.sqrt(aa * bb)


def argmax(r):
    return max(range(len(r)), key=lambda i: r[i])


# ---------------------------------------------------------------------------------------------
def case_quantize(c):
    out = c.tmp_file("w8a8.onnx")
    j = c.json("quantize", c.demo_file("digits_cnn.onnx"), "-o", out, "--calib", c.demo_file("digits_calib.npy"))
    check(os.path.isfile(out), f"{out} was not written")
    check(not [f for f in os.listdir(c.tmp) if ".tmp-" in f], "a temporary file was left behind")
    check(j["opset"] == 13 and j["checked"] is True, f"W8A8: opset {j['opset']}, checked {j['checked']}")
    check(len(j["quantized_nodes"]) == 14 and j["nodes"] == 14, f"W8A8: {j['quantized_nodes']} of {j['nodes']}")
    check(j["tensors"] == {"activations": 15, "weights": 6, "biases": 6}, f"W8A8 tensors {j['tensors']}")
    check(j["qdq_pairs"] == 15 and j["quantized_initializers"] == 12, "W8A8 QDQ pairs / initializers")
    check(j["calibration_samples"] == 256 and j["calibration_batch"] == 64, "calibration samples / batch")
    check(j["weights"] == "int8 per-channel symmetric (half-even)", j["weights"])
    check(j["activations"] == "uint8 affine", j["activations"])
    s = j["scale"]
    check(s["scheme"] == "fixed-point" and s["inexpressible_layers"] == 0, f"--scale report {s}")
    check(len(s["layers"]) == 12, f"{len(s['layers'])} requantized layers, expected 12 (6 weighted, 5 Relu, pool)")
    for layer in s["layers"]:
        check(layer["error"] == "" and 0 <= layer["max_relative_error"] < 1e-9, f"fixed-point layer {layer}")
        if layer["op"] in ("Conv", "Gemm"):
            check(layer["min_multiplier"] > 0 and layer["max_multiplier"] < 1, f"multipliers {layer}")
    conv1 = s["layers"][0]
    check(conv1["node"] == "/conv1/Conv" and conv1["multipliers"] == 16, f"first layer {conv1}")
    im = j["integer_mode"]
    check(im["checked"] and im["integer_nodes"] == 14 and im["compute_nodes"] == 14, f"integer mode {im}")

    # Power-of-two and single shift cannot express the Relu multipliers > 1: reported, file the same.
    j2 = c.json("quantize", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("w8a8_shift.onnx"), "--calib",
                c.demo_file("digits_calib.npy"), "--scale", "single-shift")
    bad = [layer for layer in j2["scale"]["layers"] if layer["error"]]
    check(j2["scale"]["inexpressible_layers"] == len(bad) > 0, f"single-shift: {j2['scale']['inexpressible_layers']}")
    for layer in bad:
        check(layer["max_multiplier"] > 1 and "cannot express" in layer["error"], f"single-shift layer {layer}")
    check(j2["integer_mode"]["integer_nodes"] == 14 - len(bad), f"single-shift integer nodes {j2['integer_mode']}")
    with open(out, "rb") as f1, open(c.tmp_file("w8a8_shift.onnx"), "rb") as f2:
        check(f1.read() == f2.read(), "--scale changed the written file")
    ok = [layer for layer in j2["scale"]["layers"] if not layer["error"]]
    check(all(0 <= layer["max_relative_error"] <= 0.5 for layer in ok), "single-shift errors within half a step")

    # W4A8: opset 21, int4 weights; the integer mode runs them (unpacked to int8).
    j4 = c.json("quantize", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("w4a8.onnx"), "--calib",
                c.demo_file("digits_calib.npy"), "--weight-bits", "4", "--observer", "kl")
    check(j4["opset"] == 21 and j4["checked"] is False and "opset" in j4["check_note"], f"W4A8 opset {j4['opset']}")
    check(j4["weights"].startswith("int4 per-channel") and j4["observer"] == "kl", j4["weights"])
    check(j4["integer_mode"]["integer_nodes"] == 14, f"W4A8 integer mode {j4['integer_mode']}")

    # --reduce-range: 7-bit weights ([-64, 63] under the default PyTorch convention).
    jr = c.json("quantize", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("w7a8.onnx"), "--calib",
                c.demo_file("digits_calib.npy"), "--reduce-range")
    check(jr["weights"] == "int8 per-channel symmetric (half-even), reduced range", jr["weights"])
    check(jr["integer_mode"]["integer_nodes"] == 14, f"--reduce-range integer mode {jr['integer_mode']}")
    with open(out, "rb") as f1, open(c.tmp_file("w7a8.onnx"), "rb") as f2:
        check(f1.read() != f2.read(), "--reduce-range wrote the same file as full-range weights")

    # Per group: the integer mode keeps the weighted layers float (blocked weights), says why.
    jg = c.json("quantize", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("w4g8.onnx"), "--calib",
                c.demo_file("digits_calib.npy"), "--weight-bits", "4", "--weight-granularity", "per-group:8")
    check(jg["weight_granularity"] == "per-group:8" and jg["opset"] == 21, "per-group config")
    floats = [n for n in jg["integer_mode"]["nodes"] if not n["integer"]]
    check({n["op"] for n in floats} == {"Conv", "Gemm"} and len(floats) == 6, f"per-group float nodes {floats}")
    check(any("bias" in n for n in jg["notes"]), f"per-group notes {jg['notes']}")

    # Mixed: a float node, an A16 node. The integer mode check reads the file back: the nodes
    # around 16-bit tensors stay float and say why.
    jm = c.json("quantize", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("mixed.onnx"), "--calib",
                c.demo_file("digits_calib.npy"), "--keep-float", "/fc2/Gemm", "--int16", "/conv1/Conv")
    check("/fc2/Gemm" not in jm["quantized_nodes"] and len(jm["quantized_nodes"]) == 13, "--keep-float")
    check(jm["int16_nodes"] == ["/conv1/Conv"] and jm["opset"] == 21, "--int16")
    nodes = jm["integer_mode"].get("nodes", [])
    check(jm["integer_mode"]["checked"] is True and any(n["node"] == "/conv1/Conv" and n["integer"] for n in nodes) and
          any(n["node"] == "/fc2/Gemm" and not n["integer"] for n in nodes), f"mixed model: {jm['integer_mode']}")

    # Text summary and the progress bar (only with --progress when stderr is not a terminal).
    p = c.run("quantize", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("t.onnx"), "--calib",
              c.demo_file("digits_calib.npy"), "--batch", "100")
    check(p.stderr == "", f"stderr without a terminal: {p.stderr!r}")
    for text in ("quantized '", "14 of 14 nodes quantized", "opset 13", "libonnx checker: passed",
                 "requantization (fixed-point): 12 layers, every multiplier expressible",
                 "integer mode (fixed-point): 14 of 14"):
        check(text in p.stdout, f"summary lacks {text!r}:\n{p.stdout}")
    check("/fc2/Gemm" not in p.stdout, "per-layer table without --scale")
    p = c.run("quantize", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("t.onnx"), "--calib",
              c.demo_file("digits_calib.npy"), "--scale", "pow2")
    for text in ("requantization (pow2), per layer", "/fc2/Gemm", "cannot express: requantization multiplier",
                 "layer(s) stay float in --mode int --scale pow2", "float: /Relu (Relu): a multiplier the scheme cannot express"):
        check(text in p.stdout, f"pow2 summary lacks {text!r}:\n{p.stdout}")
    p = c.run("quantize", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("t.onnx"), "--calib",
              c.demo_file("digits_calib.npy"), "--batch", "100", "--progress")
    check("calibrating [" in p.stderr and "3/3" in p.stderr and p.stderr.endswith("\n"), f"progress: {p.stderr!r}")


def case_eval(c):
    base = c.eval(c.demo_file("digits_cnn.onnx"))
    check(base["samples"] == 540 and base["correct"] == 525, f"float: {base}")
    check(abs(base["accuracy"] - 97.2222) < 1e-3 and base["mode"] == "float", f"float accuracy {base['accuracy']}")
    w8 = c.quantize("w8a8.onnx")
    w4 = c.quantize("w4a8.onnx", "--weight-bits", "4")
    results = {}
    for name, model, tol in (("W8A8", w8, 0.5), ("W4A8", w4, 1.0)):
        for mode in ("fake", "int"):
            r = c.eval(model, "--mode", mode)
            results[(name, mode)] = r
            check(abs(r["accuracy"] - base["accuracy"]) <= tol,
                  f"{name} {mode}: {r['accuracy']:.2f} % vs float {base['accuracy']:.2f} %")
        print(f"  {name}: fake {results[(name, 'fake')]['accuracy']:.2f} %, int {results[(name, 'int')]['accuracy']:.2f} %")
    check("integer_mode" in results[("W8A8", "int")] and
          all(n["integer"] for n in results[("W8A8", "int")]["integer_mode"]), "int mode report")
    # A float model calibrated in memory computes what its QDQ file computes.
    mem = c.eval(c.demo_file("digits_cnn.onnx"), "--mode", "fake", "--calib", c.demo_file("digits_calib.npy"))
    check(mem["correct"] == results[("W8A8", "fake")]["correct"], f"in-memory fake {mem} vs file")
    mem_int = c.eval(c.demo_file("digits_cnn.onnx"), "--mode", "int", "--calib", c.demo_file("digits_calib.npy"))
    check(mem_int["correct"] == results[("W8A8", "int")]["correct"], "in-memory int vs file")
    # Batching does not change the result.
    b = c.eval(w8, "--mode", "int", "--eval-batch", "7")
    check(b["correct"] == results[("W8A8", "int")]["correct"], "--eval-batch 7")
    p = c.run("eval", w8, "--input", c.demo_file("digits_test_x.npy"), "--labels", c.demo_file("digits_test_y.npy"),
              "--mode", "int", "--scale", "float")
    check(p.stdout.startswith("top-1 accuracy ") and "integer (float requantization)" in p.stdout, p.stdout)
    # 16-bit activations (A16W8) and weights (A16W16): the files run in every mode; fake quant is
    # within 0.5 points of float and in memory equals the file. The integer mode runs A16W8 in
    # integers (16-bit activations, int8 weights); 16-bit weights stay float, saying why.
    for name, options in (("A16W8", ["--act-bits", "16"]), ("A16W16", ["--act-bits", "16", "--weight-bits", "16"])):
        m16 = c.quantize(name + ".onnx", *options)
        fake = c.eval(m16, "--mode", "fake")
        check(abs(fake["accuracy"] - base["accuracy"]) <= 0.5, f"{name} fake: {fake['accuracy']:.2f} %")
        mem = c.eval(c.demo_file("digits_cnn.onnx"), "--mode", "fake", "--calib", c.demo_file("digits_calib.npy"),
                     *options)
        check(mem["correct"] == fake["correct"], f"{name}: in-memory fake {mem['correct']} vs file {fake['correct']}")
        r = c.eval(m16, "--mode", "int")
        float_nodes = [n for n in r["integer_mode"] if not n["integer"]]
        if name == "A16W8":
            check(not float_nodes, f"{name}: nodes left float {float_nodes}")
            check(abs(r["accuracy"] - base["accuracy"]) <= 0.5, f"{name} int: {r['accuracy']:.2f} %")
            check(abs(r["correct"] - fake["correct"]) <= 2, f"{name} int {r['correct']} vs fake {fake['correct']}")
        else:
            convs = [n for n in float_nodes if n["op"] in ("Conv", "Gemm")]
            check(len(convs) == 6 and all("int16" in n["detail"] for n in convs), f"{name} int report {float_nodes}")
            check(r["correct"] == fake["correct"], f"{name} int {r['correct']} vs fake {fake['correct']}")
        print(f"  {name}: fake {fake['accuracy']:.2f} %, int {r['accuracy']:.2f} % ({len(float_nodes)} nodes float)")


def case_run(c):
    x = c.demo_file("digits_test_x.npy")
    y = c.tmp_file("y.npy")
    j = c.json("run", c.demo_file("digits_cnn.onnx"), "--input", x, "-o", y)
    check(j["outputs"][0]["name"] == "logits" and j["outputs"][0]["shape"] == [540, 10], f"run --json {j}")
    descr, shape, got = read_npy(y)
    _, tshape, torch = read_npy(c.demo_file("digits_test_logits_torch.npy"))
    check(descr == "<f4" and shape == [540, 10] == tshape, f"logits {descr} {shape}")
    worst = max(abs(a - b) for a, b in zip(got, torch))
    check(worst < 1e-4, f"float logits differ from PyTorch's by {worst}")

    w8 = c.quantize("w8a8.onnx")
    c.run("run", w8, "--input", f"input={x}", "-o", f"logits={c.tmp_file('fake.npy')}", "--mode", "fake")
    c.run("run", c.demo_file("digits_cnn.onnx"), "--input", x, "-o", c.tmp_file("mem.npy"), "--mode", "fake",
          "--calib", c.demo_file("digits_calib.npy"))
    _, _, fake = read_npy(c.tmp_file("fake.npy"))
    _, _, mem = read_npy(c.tmp_file("mem.npy"))
    check(fake == mem, "fake-quant of the QDQ file differs from the in-memory fake-quant mode")
    check(max(abs(a - b) for a, b in zip(fake, got)) > 1e-4, "fake-quant equals float: nothing was quantized")
    out_dir = c.tmp_file("outs") + "/"
    j = c.json("run", w8, "--input", x, "-o", out_dir, "--mode", "int", "--scale", "fixed-point")
    check(j["mode"] == "int" and os.path.isfile(os.path.join(out_dir, "logits.npy")), f"-o DIR/: {j}")
    _, _, integer = read_npy(os.path.join(out_dir, "logits.npy"))
    cos = min(cosine(a, b) for a, b in zip(rows_of([540, 10], integer), rows_of([540, 10], fake)))
    check(cos > 0.999, f"int vs fake: smallest per-sample cosine {cos}")
    same = sum(argmax(a) == argmax(b) for a, b in zip(rows_of([540, 10], integer), rows_of([540, 10], fake)))
    check(same >= 535, f"int vs fake: {same} of 540 same argmax")
    # int8 / int64 / uint8 .npy outputs of a model: written with their element types (ORT model
    # has two outputs: -o DIR/ writes both).
    j = c.json("run", os.path.join(c.data, "ort_qdq.onnx"), "--input", os.path.join(c.data, "ort_x.npy"), "-o",
               c.tmp_file("ort") + "/")
    check(sorted(o["name"] for o in j["outputs"]) == ["prob", "y2"], f"two outputs {j['outputs']}")
    p = c.run("run", c.demo_file("digits_cnn.onnx"), "--input", x, "-o", c.tmp_file("y2.npy"))
    check("output logits float32 [540, 10] -> " in p.stdout, p.stdout)


def case_calibrate(c):
    with open(os.path.join(c.data, "calibrate_torch.json"), encoding="utf-8") as f:
        doc = json.load(f)
    data = os.path.join(c.data, doc["data"])
    for case in doc["cases"]:
        j = c.json("calibrate", data, *case["args"])
        scales = [p["scale"] for p in j["params"]]
        zps = [p["zero_point"] for p in j["params"]]
        check(scales == case["scale"] and zps == case["zero_point"],
              f"{case['name']}: quantkit {scales} {zps}; PyTorch {case['scale']} {case['zero_point']}")
        print(f"  {case['name']}: {len(scales)} scale(s) equal PyTorch's")
    j = c.json("calibrate", data, "--axis", "-1", "--signed", "--bits", "4")
    check(j["granularity"] == "per-channel" and j["axis"] == 1 and len(j["params"]) == 6, f"axis -1: {j}")
    check(j["qmin"] == -8 and j["qmax"] == 7 and j["format"] == "int4", "int4 range")
    j = c.json("calibrate", data, "--observer", "percentile:99.9", "--bits", "8")
    check(j["params"][0]["method"].startswith("percentile(0.999"), f"percentile method {j['params'][0]}")
    j = c.json("calibrate", data, "--observer", "auto", "--signed", "--symmetric")
    check(j["params"][0]["method"] in ("minmax", "kl") or j["params"][0]["method"].startswith("percentile"),
          f"auto picked {j['params'][0]}")
    p = c.run("calibrate", data, "--signed", "--symmetric")
    check("int8 [-128, 127] symmetric, per tensor, pytorch convention" in p.stdout and "zero point" in p.stdout,
          p.stdout)


def case_compare(c):
    model = c.demo_file("digits_cnn.onnx")
    x = c.demo_file("digits_test_x.npy")
    j = c.json("compare", model, model, "--input", x, "--mode", "float")
    check(len(j["rows"]) == 15 and not j["unmatched"], f"self-compare: {len(j['rows'])} rows, {j['unmatched']}")
    for r in j["rows"]:
        check(r["cosine"] == 1 and r["chebyshev"] == 0 and r["mse"] == 0 and r["sqnr"] == "inf" and r["mre"] == 0,
              f"self-compare row {r}")
        check(r["match"] == "same-name" and r["compared_value"] == r["value"], f"self-compare match {r}")
    w8 = c.quantize("w8a8.onnx")
    j = c.json("compare", model, w8, "--input", x, "--metric", "cosine,sqnr", "--samples", "100")
    check(j["samples"] == 100 and j["metrics"] == ["cosine", "sqnr"], f"compare options {j['metrics']}")
    check(j["rows"][0]["value"] == "input" and j["rows"][0]["match"] == "qdq-pair", f"first row {j['rows'][0]}")
    check(j["rows"][-1]["value"] == "logits", "last row is the output")
    check(j["unmatched"] == ["/conv1/Conv_output_0"], f"unmatched {j['unmatched']} (BatchNormalization folded)")
    check(len(j["rows"]) == 15 and all(0.999 < r["cosine"] < 1 and 25 < r["sqnr"] < 80 for r in j["rows"]),
          "W8A8 rows: cosine in (0.999, 1), sqnr 25..80 dB")
    check(all("mse" not in r for r in j["rows"]), "--metric selects the metrics")
    # ONNX Runtime's QDQ names map back to the float values.
    j = c.json("compare", os.path.join(c.data, "ort_float.onnx"), os.path.join(c.data, "ort_qdq.onnx"), "--input",
               os.path.join(c.data, "ort_x.npy"))
    got = [(r["value"], r["compared_value"], r["match"]) for r in j["rows"]]
    want = [("x", "x_DequantizeLinear_Output", "qdq-pair"), ("y1", "y1_DequantizeLinear_Output", "qdq-pair"),
            ("y2", "y2", "dequantized"), ("prob", "prob", "same-name")]
    check(got == want, f"ONNX Runtime naming: {got}")
    check(all(0.99 < r["cosine"] <= 1 and r["chebyshev"] < 0.1 for r in j["rows"]), f"ORT rows {j['rows']}")
    # Integer mode and an in-memory calibrated model compare too.
    j = c.json("compare", model, w8, "--input", x, "--mode", "int", "--samples", "50")
    check(j["rows"][-1]["value"] == "logits" and j["rows"][-1]["cosine"] > 0.999, f"int compare {j['rows'][-1]}")
    j = c.json("compare", model, model, "--input", x, "--calib", c.demo_file("digits_calib.npy"), "--samples", "50")
    check(j["rows"][0]["compared_value"] == "input_dq" and len(j["rows"]) == 15, f"in-memory compare {j['rows'][0]}")
    p = c.run("compare", model, w8, "--input", x, "--samples", "20")
    for text in ("layer-wise comparison on 20 samples", "cosine", "chebyshev", "/pw2/Conv_output_0", "lowest cosine"):
        check(text in p.stdout, f"compare table lacks {text!r}:\n{p.stdout}")


def case_info(c):
    j = c.json("info", c.demo_file("digits_cnn.onnx"))
    check(j["opset"] == 13 and j["quantization"]["format"] == "float", f"float info {j['quantization']}")
    check(j["inputs"] == [{"name": "input", "dtype": "float32", "shape": "[batch, 1, 8, 8]"}], f"inputs {j['inputs']}")
    check(j["op_histogram"]["Conv"] == 4 and j["op_histogram"]["Relu"] == 5, f"ops {j['op_histogram']}")
    w8 = c.quantize("w8a8.onnx")
    j = c.json("info", w8)
    q = j["quantization"]
    check(q["format"] == "qdq" and len(q["quantized_nodes"]) == 14 and q["compute_nodes"] == 14, f"W8A8 info {q}")
    conv1 = q["quantized_nodes"][0]
    check(conv1["node"] == "/conv1/Conv" and conv1["weights"] == {
        "type": "int8", "granularity": "per-channel", "symmetric": True, "axis": 0, "scales": 16}, f"conv1 {conv1}")
    check(conv1["bias"]["type"] == "int32", "int32 bias")
    check(conv1["inputs"][0]["format"]["type"] == "uint8" and conv1["outputs"][0]["format"]["type"] == "uint8",
          f"activations {conv1}")
    wg = c.quantize("w4g8.onnx", "--weight-bits", "4", "--weight-granularity", "per-group:8", "--keep-float",
                    "/fc2/Gemm", "--symmetric-activations")
    q = c.json("info", wg)["quantization"]
    fc1 = [n for n in q["quantized_nodes"] if n["node"] == "/fc1/Gemm"][0]
    check(fc1["weights"]["type"] == "int4" and fc1["weights"]["granularity"] == "per-group" and
          fc1["weights"]["block_size"] == 8 and fc1["weights"]["axis"] == 1, f"per-group weights {fc1['weights']}")
    check(fc1["inputs"][0]["format"] == {"type": "int8", "granularity": "per-tensor", "symmetric": True,
                                         "zero_point": 0}, f"symmetric activations {fc1['inputs']}")
    check(q["float_nodes"] == [{"node": "/fc2/Gemm", "op": "Gemm",
                                "reason": "float weights 'fc2.weight', float output 'logits'"}],
          f"float nodes {q['float_nodes']}")
    check(len(q["quantized_nodes"]) == 13, "13 quantized nodes")
    p = c.run("info", wg)
    check("int4 per-group(axis 1, block 8) symmetric" in p.stdout and
          "float: /fc2/Gemm (Gemm): float weights 'fc2.weight', float output 'logits'" in p.stdout, p.stdout)


def case_errors(c):
    model = c.demo_file("digits_cnn.onnx")
    calib = c.demo_file("digits_calib.npy")
    x = c.demo_file("digits_test_x.npy")
    garbage = c.tmp_file("corrupt.onnx")
    with open(garbage, "wb") as f:
        f.write(b"\x08\x07\x12\x03abc\xff\xff\xff garbage")
    f64 = c.tmp_file("x64.npy")
    write_npy(f64, "<f8", [2, 1, 8, 8], [0.5] * 128)
    i64 = c.tmp_file("xi64.npy")
    write_npy(i64, "<i8", [2, 1, 8, 8], [1] * 128)
    flabels = c.tmp_file("labels_f.npy")
    write_npy(flabels, "<f4", [540], [1.0] * 540)
    out = c.tmp_file("never.onnx")
    cases = [
        (["info", "/nonexistent/model.onnx"], 1, ["file '/nonexistent/model.onnx'", "cannot open"]),
        (["info", garbage], 1, [f"file '{garbage}'", "not a valid ONNX model"]),
        (["run", garbage, "--input", x, "-o", c.tmp_file("y.npy")], 1, ["not a valid ONNX model"]),
        (["run", model, "--input", f64, "-o", c.tmp_file("y.npy")], 1, [f"file '{f64}'", "<f8", "expected float32"]),
        (["run", model, "--input", i64, "-o", c.tmp_file("y.npy")], 1,
         ["--input", f"file '{i64}' holds int64", "input 'input' expects float32"]),
        (["calibrate", i64], 1, [f"file '{i64}'", "int64", "expected float32"]),
        (["eval", model, "--input", x, "--labels", flabels], 1, ["--labels", "float32", "expected integer"]),
        (["quantize", model, "-o", out, "--calib", calib, "--observer", "foo"], 2,
         ["--observer 'foo'", "unknown observer", "expected minmax"]),
        (["quantize", model, "-o", out, "--calib", calib, "--weight-bits", "3"], 2,
         ["--weight-bits 3", "expected 4, 8 or 16"]),
        (["quantize", model, "-o", out, "--calib", calib, "--act-bits", "4"], 2, ["--act-bits 4", "expected 8 or 16"]),
        (["quantize", model, "-o", out, "--calib", calib, "--weight-bits", "4", "--reduce-range"], 2,
         ["--reduce-range with --weight-bits 4", "expected 8- or 16-bit weights"]),
        (["quantize", model, "-o", out, "--calib", calib, "--weight-granularity", "per-group:0"], 2,
         ["--weight-granularity 'per-group:0'", "expected a positive integer"]),
        (["quantize", model, "-o", out, "--calib", calib, "--observer", "percentile:0"], 2,
         ["--observer 'percentile:0'", "percentile 0", "expected P in (0, 100]"]),
        (["quantize", model, "-o", out, "--calib", calib, "--observer", "percentile:101"], 2,
         ["percentile 101", "expected P in (0, 100]"]),
        (["quantize", model, "-o", out, "--calib", calib, "--keep-float", "/conv1/Conv,nope"], 2,
         ["--keep-float: node 'nope' is not in model", "'/conv1/Conv'"]),
        (["quantize", model, "-o", "/nonexistent_dir/out.onnx", "--calib", calib], 1,
         ["-o /nonexistent_dir/out.onnx", "folder '/nonexistent_dir' does not exist"]),
        (["quantize", model, "-o", out, "--calib", calib, "--scale", "fixed"], 2, ["--scale 'fixed'", "expected float"]),
        (["quantize", model, "-o", out, "--calib", c.tmp_file("missing.npy")], 1,
         [f"file '{c.tmp_file('missing.npy')}'", "cannot open"]),
        (["quantize", model, "-o", out, "--calib", calib, "--rounding", "up"], 2, ["--rounding 'up'", "expected half-even"]),
        (["quantize", model, "-o", out], 2, ["--calib is required"]),
        (["quantize", model, "-o", out, "--calib", calib, "--bogus"], 2, ["--bogus"]),
        (["run", model, "--input", x, "-o", "/nonexistent_dir/y.npy"], 1, ["folder '/nonexistent_dir' does not exist"]),
        (["run", model, "--input", x, "-o", c.tmp_file("y.npy"), "--mode", "fake"], 2,
         ["--mode fake", "is a float model", "--calib"]),
        (["run", model, "--input", x, "-o", c.tmp_file("y.npy"), "--mode", "fast"], 2, ["--mode 'fast'"]),
        (["run", model, "--input", x, "-o", c.tmp_file("y.npy"), "--scale", "pow2"], 2, ["--scale pow2", "--mode int"]),
        (["eval", model, "--input", x, "--labels", c.demo_file("digits_test_y.npy"), "--ort-no-vnni"], 2,
         ["--ort-no-vnni", "expected --mode int", "the mode is float"]),
        (["run", model, "--input", x, "-o", c.tmp_file("y.npy"), "--weight-bits", "4", "--mode", "fake"], 2,
         ["expected --calib"]),
        (["run", model, "--input", f"other={x}", "-o", c.tmp_file("y.npy")], 2,
         ["has no input 'other'", "its inputs: 'input'"]),
        (["calibrate", calib, "--bits", "1"], 2, ["--bits 1", "expected an integer in [2, 16]"]),
        (["calibrate", calib, "--axis", "4"], 2, ["--axis 4", "[-4, 3]"]),
        (["calibrate", calib, "--observer", "percentile"], 2, ["expected percentile:P"]),
        (["compare", model, model, "--input", x, "--metric", "cos"], 2, ["--metric: unknown metric 'cos'"]),
        (["eval", model, "--input", x, "--labels", x], 1, ["--labels", "float32"]),
        (["run", model, "--input", x, "-o", f"probs={c.tmp_file('y.npy')}"], 2,
         ["has no output 'probs'", "its outputs: 'logits'"]),
        (["quantize", "--keep-float", "/conv1/Conv", model, "-o", out, "--calib", calib, "--int16", "/conv1/Conv"], 2,
         ["--keep-float and --int16 both name node '/conv1/Conv'"]),
    ]
    for args, code, texts in cases:
        p = c.run(*args, expect=None)
        shown = " ".join(args)
        check(p.returncode == code, f"{shown}: exit {p.returncode}, expected {code}; stderr: {p.stderr!r}")
        lines = p.stderr.splitlines()
        check(len(lines) == 1 and p.stderr.endswith("\n"), f"{shown}: stderr is not one line: {p.stderr!r}")
        check(lines[0].startswith("quantkit ") and ": error: " in lines[0], f"{shown}: {lines[0]}")
        for t in texts:
            check(t in lines[0], f"{shown}: message lacks {t!r}: {lines[0]}")
        check(p.stdout == "", f"{shown}: printed to stdout on error: {p.stdout!r}")
        print(f"  exit {code}: {lines[0]}")
    check(not os.path.exists(out), f"{out} exists after failed runs")
    check(not [f for f in os.listdir(c.tmp) if ".tmp-" in f], "a temporary file was left behind")
    # --help of every subcommand.
    for sub in ("quantize", "run", "eval", "calibrate", "compare", "info"):
        p = c.run(sub, "--help")
        check(p.stdout.startswith("") and "--json" in p.stdout and "Usage:" in p.stdout, f"{sub} --help:\n{p.stdout}")

def case_remedies(c):
    """--cle / --bias-correction / --adaround on quantize (and in-memory eval)."""
    hostile = c.demo_file("digits_hostile.onnx")
    calib = c.demo_file("digits_calib.npy")
    base = c.eval(hostile)["accuracy"]
    plain_file = c.tmp_file("hostile_plain.onnx")
    cle_file = c.tmp_file("hostile_cle.onnx")
    per_tensor = ("--weight-granularity", "per-tensor")
    c.run("quantize", hostile, "-o", plain_file, "--calib", calib, *per_tensor)
    j = c.json("quantize", hostile, "-o", cle_file, "--calib", calib, *per_tensor, "--cle")
    check(any("equaliz" in n.lower() for n in j["notes"]), f"--cle notes: {j['notes']}")
    plain = c.eval(plain_file, "--mode", "fake")["accuracy"]
    cle = c.eval(cle_file, "--mode", "fake")["accuracy"]
    cle_int = c.eval(cle_file, "--mode", "int")["accuracy"]
    print(f"  hostile per-tensor W8A8: float {base:.2f} %, plain {plain:.2f} %, --cle {cle:.2f} % (int {cle_int:.2f} %)")
    # Channels 100x apart: per-tensor weights lose accuracy; equalization recovers it.
    check(plain <= base - 10, f"plain per-tensor {plain} vs float {base}: the model is not hostile")
    check(cle >= base - 1.0 and cle_int >= base - 1.5, f"--cle {cle} / int {cle_int} vs float {base}")
    # The float model is unchanged by equalization: the same options in memory give the same result.
    mem = c.eval(hostile, "--mode", "fake", "--calib", calib, *per_tensor, "--cle")["accuracy"]
    check(mem == cle, f"in-memory --cle {mem} vs file {cle}")

    # Bias correction: its summary names the layers and the mean error it removed.
    jb = c.json("quantize", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("bc.onnx"), "--calib", calib,
                "--weight-bits", "4", "--bias-correction")
    check(any("bias correction" in n.lower() for n in jb["notes"]), f"--bias-correction notes: {jb['notes']}")
    demo_float = c.eval(c.demo_file("digits_cnn.onnx"))["accuracy"]
    bc = c.eval(c.tmp_file("bc.onnx"), "--mode", "int")["accuracy"]
    check(bc >= demo_float - 2.0, f"W4A8 + bias correction {bc} vs float {demo_float}")

    # AdaRound: the iteration count is honoured, each layer's reconstruction error is reported,
    # and the progress bar has its own stage.
    p = c.run("quantize", hostile, "-o", c.tmp_file("ada.onnx"), "--calib", calib, "--weight-bits", "4",
              *per_tensor, "--cle", "--adaround=60", "--progress")
    check("adaround [" in p.stderr and p.stderr.endswith("\n"), f"--adaround progress: {p.stderr[-300:]!r}")
    check("60 iterations" in p.stdout and "reconstruction error" in p.stdout, f"--adaround summary:\n{p.stdout}")
    ada = c.eval(c.tmp_file("ada.onnx"), "--mode", "fake")["accuracy"]
    print(f"  hostile per-tensor W4A8 --cle --adaround=60: {ada:.2f} % (float {base:.2f} %)")
    check(ada >= base - 3.0, f"--cle --adaround=60 W4A8 {ada} vs float {base}")
    jd = c.json("quantize", hostile, "-o", c.tmp_file("ada_default.onnx"), "--calib", calib, "--adaround",
                "--keep-float", "/conv1/Conv,/conv2/Conv,/fc1/Gemm")
    check(any(f"{1000} iterations" in n for n in jd["notes"]), f"--adaround default: {jd['notes']}")
    for bad, text in ((("--adaround=0",), "--adaround"), (("--adaround=x",), "--adaround")):
        p = c.run("quantize", hostile, "-o", c.tmp_file("bad.onnx"), "--calib", calib, *bad, expect=None)
        check(p.returncode != 0 and text in p.stderr and not os.path.exists(c.tmp_file("bad.onnx")),
              f"{bad}: exit {p.returncode}, {p.stderr!r}")


def case_qoperator(c):
    """--format qoperator: ONNX Runtime's integer operators; the executor runs them too."""
    out = c.tmp_file("w8a8_qop.onnx")
    j = c.json("quantize", c.demo_file("digits_cnn.onnx"), "-o", out, "--calib", c.demo_file("digits_calib.npy"),
               "--format", "qoperator")
    check(j["format"] == "qoperator" and os.path.isfile(out), f"qoperator: {j}")
    check(j["ops"].get("QLinearConv") == 4 and j["ops"].get("QLinearMatMul", 0) + j["ops"].get("QGemm", 0) == 2,
          f"qoperator ops {j['ops']}")
    check(j["quantize_nodes"] == 1 and j["dequantize_nodes"] == 1 and j["float_nodes"] == [],
          f"boundaries {j['quantize_nodes']} / {j['dequantize_nodes']}, float {j['float_nodes']}")
    check(not [f for f in os.listdir(c.tmp) if ".tmp-" in f], "a temporary file was left behind")
    base = c.eval(c.demo_file("digits_cnn.onnx"))["accuracy"]
    qop = c.eval(out)["accuracy"]
    qdq = c.eval(c.quantize("w8a8_qdq.onnx"), "--mode", "fake")["accuracy"]
    print(f"  QOperator W8A8: {qop:.2f} % (QDQ fake-quant {qdq:.2f} %, float {base:.2f} %)")
    check(abs(qop - base) <= 0.5 and abs(qop - qdq) <= 0.4, f"QOperator {qop} vs float {base} / QDQ {qdq}")
    info = c.json("info", out)
    check(info["opset"] >= 13, f"info on a QOperator model: {info.get('opset')}")
    p = c.run("quantize", c.demo_file("digits_cnn.onnx"), "-o", out, "--calib", c.demo_file("digits_calib.npy"),
              "--format", "qoperator")
    check("(QOperator)" in p.stdout and "QLinearConv x4" in p.stdout, p.stdout)
    for bad, text in ((("--format", "tflite"), "--format 'tflite'"),
                      (("--format", "qoperator", "--scale", "pow2"), "--scale pow2")):
        p = c.run("quantize", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("bad.onnx"), "--calib",
                  c.demo_file("digits_calib.npy"), *bad, expect=None)
        check(p.returncode != 0 and text in p.stderr and not os.path.exists(c.tmp_file("bad.onnx")),
              f"{bad}: exit {p.returncode}, {p.stderr!r}")


EXPORT_MAIN = r"""
#include <cstdio>
#include <vector>
#include "model.hpp"
// argv: input.f32 (samples x SIZE floats), output.f32, samples
int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const long n = std::atol(argv[3]);
  std::FILE* in = std::fopen(argv[1], "rb");
  std::FILE* out = std::fopen(argv[2], "wb");
  if (!in || !out) return 3;
  std::vector<float> x(digits::IN_size), y(digits::OUT_size);
  std::vector<digits::IN_type> qx(digits::IN_size);
  std::vector<digits::OUT_type> qy(digits::OUT_size);
  for (long i = 0; i < n; ++i) {
    if (std::fread(x.data(), sizeof(float), x.size(), in) != x.size()) return 4;
    digits::quantize_IN(x.data(), qx.data());
    digits::infer(qx.data(), qy.data());
    digits::dequantize_OUT(qy.data(), y.data());
    std::fwrite(y.data(), sizeof(float), y.size(), out);
  }
  std::fclose(in);
  return std::fclose(out) == 0 ? 0 : 5;
}
"""


def case_export(c):
    """export-cpp: the header compiles (-Wall -Wextra -Werror) and equals `run --mode int` bit for bit."""
    qdq = c.quantize("w8a8.onnx")
    x = c.demo_file("digits_test_x.npy")
    _, xshape, xs = read_npy(x)
    for scale, standalone in (("fixed-point", True), ("fixed-point", False)):
        header = c.tmp_file("model.hpp")
        opts = ["--namespace", "digits", "--scale", scale] + (["--standalone"] if standalone else [])
        j = c.json("export-cpp", qdq, "-o", header, *opts)
        check(len(j["inputs"]) == 1 and len(j["outputs"]) == 1, f"ports {j['inputs']} {j['outputs']}")
        inp, outp = j["inputs"][0], j["outputs"][0]
        check(inp["shape"] == "1x1x8x8" and outp["shape"] == "1x10", f"shapes {inp['shape']} {outp['shape']}")
        check(len(j["layers"]) >= 6 and j["parameter_bytes"] > 14000, f"{len(j['layers'])} layers, {j['parameter_bytes']} B")
        with open(header) as f:
            text = f.read()
        check("namespace digits" in text and ("#include \"quantkit/" in text) != standalone, "header contents")
        if not c.cxx:
            print("  no C++ compiler given (--cxx): the header is not compiled")
            continue
        src = c.tmp_file("main.cpp")
        with open(src, "w") as f:
            f.write("#include <cstdlib>\n" + EXPORT_MAIN.replace("IN_", inp["identifier"] + "_")
                    .replace("quantize_IN", "quantize_" + inp["identifier"])
                    .replace("OUT_", outp["identifier"] + "_")
                    .replace("dequantize_OUT", "dequantize_" + outp["identifier"]))
        exe = c.tmp_file("model_main")
        cmd = [c.cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-I", c.tmp, src, "-o", exe]
        if not standalone:
            cmd[1:1] = ["-I", os.path.join(c.root, "include")]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"{scale}: the exported header does not compile:\n{p.stderr[:3000]}")
        raw_in, raw_out = c.tmp_file("x.f32"), c.tmp_file("y.f32")
        with open(raw_in, "wb") as f:
            f.write(struct.pack("<%df" % len(xs), *xs))
        p = subprocess.run([exe, raw_in, raw_out, str(xshape[0])], capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"{scale}: the exported program failed ({p.returncode}): {p.stderr}")
        with open(raw_out, "rb") as f:
            data = f.read()
        got = list(struct.unpack("<%df" % (len(data) // 4), data))
        c.run("run", qdq, "--input", x, "-o", c.tmp_file("int.npy"), "--mode", "int", "--scale", scale)
        _, yshape, want = read_npy(c.tmp_file("int.npy"))
        check(len(got) == len(want) == xshape[0] * 10, f"{scale}: {len(got)} values, expected {len(want)}")
        diff = sum(a != b for a, b in zip(got, want))
        print(f"  {scale}{' standalone' if standalone else ''}: {len(j['layers'])} layers, "
              f"{len(got)} logits, {diff} differ from run --mode int")
        check(diff == 0, f"{scale}: {diff} logits differ from quantkit run --mode int")
    # The demo's Relu multipliers exceed 1 (Q/DQ between Conv and Relu): a single shift cannot
    # express them, and the error lists those layers.
    for bad, text in ((("--scale", "single-shift"), "/Relu_1 (Relu): the scheme cannot express a multiplier"),
                      (("--scale", "float"), "--scale 'float'"), (("--namespace", "1bad"), "namespace"),
                      (("--input-shape", "nope=1x1x8x8"), "no input 'nope'")):
        p = c.run("export-cpp", qdq, "-o", c.tmp_file("bad.hpp"), *bad, expect=None)
        check(p.returncode != 0 and text in p.stderr and not os.path.exists(c.tmp_file("bad.hpp")),
              f"{bad}: exit {p.returncode}, {p.stderr!r}")
    # A float model cannot be exported: the error names the node that is not integer.
    p = c.run("export-cpp", c.demo_file("digits_cnn.onnx"), "-o", c.tmp_file("bad.hpp"), expect=None)
    check(p.returncode != 0 and "Conv" in p.stderr and not os.path.exists(c.tmp_file("bad.hpp")),
          f"float model: exit {p.returncode}, {p.stderr!r}")
    # 16-bit activations inside (--int16 on one node): refused, naming the 16-bit value.
    mixed = c.quantize("mixed16.onnx", "--int16", "/pw2/Conv")
    p = c.run("export-cpp", mixed, "-o", c.tmp_file("bad.hpp"), expect=None)
    check(p.returncode != 0 and "16-bit activations are not exported" in p.stderr and
          not os.path.exists(c.tmp_file("bad.hpp")), f"A16 node: exit {p.returncode}, {p.stderr!r}")


def case_peer(c):
    node = c.node or shutil.which("node")
    ort_dir = os.path.join(c.root, "tools", "ort", "node_modules", "onnxruntime-node")
    if not node or not os.path.isdir(ort_dir):
        print("SKIPPED: node or onnxruntime-node (tools/ort/install.sh) not found")
        return SKIP
    x = c.demo_file("digits_test_x.npy")
    for index, (label, options) in enumerate((("W8A8 per-channel minmax", []),
                           ("W8A8 per-tensor, int8 symmetric activations, kl",
                            ["--weight-granularity", "per-tensor", "--symmetric-activations", "--observer", "kl"]),
                           ("W4A8 per-channel mse", ["--weight-bits", "4", "--observer", "mse"]),
                           ("W4A8 per-group:8 percentile", ["--weight-bits", "4", "--weight-granularity",
                                                            "per-group:8", "--observer", "percentile:99.99"]),
                           ("W8A16 (uint16 activations)", ["--act-bits", "16"]),
                           ("W16A16", ["--act-bits", "16", "--weight-bits", "16"]),
                           # 7-bit weights: exact in ONNX Runtime's default session on any x86-64
                           ("W8A8 per-channel --reduce-range, ORT default session", ["--reduce-range"]))):
        name = f"peer{index}"
        model = c.quantize(name + ".onnx", *options)
        ort_out = c.tmp_file(name + "_ort")
        p = subprocess.run([node, os.path.join(c.root, "tools", "ort", "run_model.mjs"), model, "--input",
                            f"input={x}", "--output-dir", ort_out,
                            # exact integer kernels also on x86-64 CPUs without VNNI (see run_model.mjs),
                            # but for --reduce-range, whose point is not to need them
                            "--x64-quant-precision", "off" if "--reduce-range" in options else "auto"],
                           capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"{label}: ONNX Runtime failed: {p.stderr}")
        c.run("run", model, "--input", x, "-o", c.tmp_file(name + "_qk.npy"), "--mode", "fake")
        _, shape, ort = read_npy(os.path.join(ort_out, "logits.npy"))
        _, qshape, qk = read_npy(c.tmp_file(name + "_qk.npy"))
        check(shape == qshape == [540, 10], f"{label}: shapes {shape} {qshape}")
        cos = min(cosine(a, b) for a, b in zip(rows_of(shape, ort), rows_of(shape, qk)))
        same = sum(argmax(a) == argmax(b) for a, b in zip(rows_of(shape, ort), rows_of(shape, qk)))
        print(f"  {label}: smallest per-sample cosine {cos:.7f}, same argmax {same}/540")
        check(cos >= 0.9999, f"{label}: ONNX Runtime vs quantkit run --mode fake: cosine {cos}")
        check(same >= 537, f"{label}: {same} of 540 same argmax")
    runner = os.path.join(c.root, "tools", "ort", "run_model.mjs")
    model = c.tmp_file("peer0.onnx")
    # --mode int --scale float computes ONNX Runtime's exact kernels bit for bit (x64quantprecision
    # on, exact on every x86-64 CPU); --ort-no-vnni computes its default session on CPUs without
    # VNNI (int16-saturating pair sums), which only such a CPU can check (elsewhere ONNX Runtime's
    # default session is exact, and equals the plain integer mode).
    flags = set()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    pairs_saturate = "avx2" in flags and not flags & {"avx512_vnni", "avx_vnni", "amx_int8"}
    for precision, emulate in (("on", False), ("off", pairs_saturate)):
        ort_out = c.tmp_file("int_ort_" + precision)
        p = subprocess.run([node, runner, model, "--input", f"input={x}", "--output-dir", ort_out,
                            "--x64-quant-precision", precision], capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"run_model.mjs --x64-quant-precision {precision}: {p.stderr}")
        qk_out = c.tmp_file(f"int_qk_{precision}.npy")
        c.run("run", model, "--input", x, "-o", qk_out, "--mode", "int", "--scale", "float",
              *(["--ort-no-vnni"] if emulate else []))
        _, _, ort = read_npy(os.path.join(ort_out, "logits.npy"))
        _, _, qk = read_npy(qk_out)
        differ = sum(a != b for a, b in zip(ort, qk))
        what = "--ort-no-vnni" if emulate else "exact integer mode"
        print(f"  ONNX Runtime x64quantprecision {precision} vs quantkit run --mode int --scale float ({what}): "
              f"{differ} of {len(ort)} logits differ")
        check(len(ort) == len(qk) == 5400 and differ == 0,
              f"ONNX Runtime (x64quantprecision {precision}) vs quantkit ({what}): {differ} logits differ")
    if pairs_saturate:
        # the emulation is what makes the difference: the exact integer mode differs from the default session
        qk_exact = c.tmp_file("int_qk_on.npy")
        _, _, exact = read_npy(qk_exact)
        _, _, ort_default = read_npy(os.path.join(c.tmp_file("int_ort_off"), "logits.npy"))
        check(sum(a != b for a, b in zip(exact, ort_default)) > 0,
              "the full-range demo model should saturate ONNX Runtime's pair sums on this CPU")
    else:
        print("  this CPU has VNNI (or is not x86-64 with AVX2): --ort-no-vnni cannot be checked against ONNX Runtime here")
    # run_model.mjs: the precision option's usage errors, and the settings it reports.
    for bad, says in ((["--x64-quant-precision", "sometimes"], "expected on, off or auto"),
                      (["--x64-quant-precision", "on", "--graph-optimization", "disabled"],
                       "needs --graph-optimization extended or all")):
        p = subprocess.run([node, runner, model, "--input", f"input={x}", "--output-dir", c.tmp_file("bad_ort"), *bad],
                           capture_output=True, text=True, timeout=600)
        check(p.returncode == 2 and says in p.stderr, f"run_model.mjs {bad}: exit {p.returncode}, {p.stderr!r}")
    for mode in ("off", "on"):
        p = subprocess.run([node, runner, model, "--input", f"input={x}", "--output-dir", c.tmp_file("ort_" + mode),
                            "--x64-quant-precision", mode], capture_output=True, text=True, timeout=600)
        check(p.returncode == 0 and f"graph optimization all, x64 quant precision {mode}:" in p.stdout,
              f"run_model.mjs --x64-quant-precision {mode}: {p.stdout!r} {p.stderr!r}")
    return 0


CASES = {"quantize": case_quantize, "eval": case_eval, "run": case_run, "calibrate": case_calibrate,
         "compare": case_compare, "info": case_info, "errors": case_errors, "remedies": case_remedies,
         "qoperator": case_qoperator, "export": case_export, "peer": case_peer}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quantkit", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--node", default=None)
    ap.add_argument("--cxx", default=None, help="C++ compiler for the export case")
    args = ap.parse_args()
    c = Ctx(args)
    try:
        status = CASES[args.case](c) or 0
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(c.tmp, ignore_errors=True)
    if status == 0:
        print(f"cli {args.case}: passed")
    return status


if __name__ == "__main__":
    sys.exit(main())
