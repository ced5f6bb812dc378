#!/usr/bin/env python3
"""ctest driver for `quantkit debug` and the quantize options acting on it (standard library
only; every case asserts real values). Models: examples/data/demo (digits_cnn.onnx, and
digits_hostile.onnx, whose channels are scaled by factors 0.1..10 — hostile to per-tensor
weights, harmless in float).

usage: debug_tests.py --quantkit PATH --source-dir ROOT --case NAME [--artifacts DIR]

Cases (one ctest test each, label "cli"):
  verbs      sensitivity (node/weight/activation, sorted worst first by the first metric),
             acc-error (--only/--all-but nested lists, weight/activation only, running mean),
             distribution (node, weight, activation: histograms and clipping ranges),
             channelwise (box statistics; the hostile weight's uneven channels), partial
             (sensitive nodes, k left in float), ort-saturation (ONNX Runtime's int16 pair sums
             without VNNI: the demo saturates, --reduce-range never); text and JSON; --quantized
             Q.onnx (the QDQ file quantize writes) measures what calibrating in memory measures
  errors     bad options and names: non-zero exit, one line naming the option and the value
  report     runall on the demo model under a minute: report.json sections, a self-contained
             report.html (no script, no external reference) with a chart in every section,
             rendered by headless Chromium (DOM dump + screenshot kept in --artifacts); the
             Chromium part exits 77 (skip) only when no chromium is installed
  mixed      quantize --auto-mixed 0.999 on the hostile per-tensor model: steps reported, target
             reached, the written model's accuracy recovered; --observer mix reports per-node
             choices; calibrate refuses mix
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

from cli_tests import SKIP, Failure, check  # the same failure reporting as the other CLI cases


class Ctx:
    def __init__(self, args):
        self.qk = os.path.abspath(args.quantkit)
        self.root = os.path.abspath(args.source_dir)
        self.demo = os.path.join(self.root, "examples", "data", "demo")
        self.artifacts = args.artifacts
        self.tmp = tempfile.mkdtemp(prefix="quantkit_debug_")

    def demo_file(self, name):
        return os.path.join(self.demo, name)

    def run(self, *args, expect=0):
        cmd = [self.qk] + [str(a) for a in args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        check(expect is None or p.returncode == expect,
              f"{' '.join(cmd)}: exit {p.returncode}, expected {expect}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def json(self, *args):
        p = self.run(*args, "--json")
        try:
            return json.loads(p.stdout)
        except ValueError as e:
            raise Failure(f"{' '.join(map(str, args))} --json: not JSON ({e}):\n{p.stdout}")

    def hostile(self, verb, *options):
        """A debug verb on the hostile model with per-tensor weights (its accuracy is lost there)."""
        return ["debug", verb, self.demo_file("digits_hostile.onnx"), "--calib", self.demo_file("digits_calib.npy"),
                "--weight-granularity", "per-tensor", *options]


def num(v):
    if isinstance(v, str):
        return {"inf": math.inf, "-inf": -math.inf}.get(v, math.nan)
    return float(v)


def sorted_worst_first(rows, metric):
    values = [num(r["metrics"][metric]) for r in rows]
    higher_better = metric in ("cosine", "sqnr")
    return all((a <= b) if higher_better else (a >= b) for a, b in zip(values, values[1:]))


# ---------------------------------------------------------------------------------------------
def case_verbs(c):
    # Node sensitivity: every quantized node once, worst first by cosine; the fully quantized
    # output is much worse than any single node (the hostile per-tensor weights add up).
    j = c.json(*c.hostile("sensitivity"))
    s = j["sensitivity"]
    check(j["quantized_nodes"] == 9 and len(s["rows"]) == 9, f"sensitivity rows: {len(s['rows'])}, expected 9")
    check(s["metrics"] == ["cosine", "mse", "mre", "sqnr", "chebyshev"], f"default metrics: {s['metrics']}")
    check(sorted_worst_first(s["rows"], "cosine"), "node sensitivity not sorted by cosine")
    full = num(s["full"]["cosine"])
    check(full < 0.9, f"hostile per-tensor full cosine {full}, expected < 0.9")
    worst = s["rows"][0]
    check(worst["node"] == "/fc1/Gemm" and num(worst["metrics"]["cosine"]) < 0.95,
          f"worst node {worst}, expected /fc1/Gemm under 0.95")
    check(num(s["rows"][-1]["metrics"]["cosine"]) > 0.999, "the least sensitive node should be near 1")
    check(j["samples"] == 64 and j["output"] == "logits", f"header: {j['samples']} samples, output {j['output']}")

    # Weight type, sorted by SQNR: only nodes with weights (2 Conv + 2 Gemm), each names its weight.
    w = c.json(*c.hostile("sensitivity", "--type", "weight", "--metric", "sqnr,cosine"))["sensitivity"]
    check(len(w["rows"]) == 4 and all(r["tensor"].endswith("weight") for r in w["rows"]),
          f"weight rows: {[r.get('tensor') for r in w['rows']]}")
    check(sorted_worst_first(w["rows"], "sqnr"), "weight sensitivity not sorted by sqnr")
    # Activation type, restricted to two values.
    a = c.json(*c.hostile("sensitivity", "--type", "activation", "--nodes", "input,/conv1/Conv_output_0"))
    names = sorted(r["tensor"] for r in a["sensitivity"]["rows"])
    check(names == ["/conv1/Conv_output_0", "input"], f"activation rows for --nodes: {names}")
    # Text: the table and the fully quantized line.
    t = c.run(*c.hostile("sensitivity", "--metric", "cosine")).stdout
    check("sensitivity (node)" in t and "/fc1/Gemm" in t and "fully quantized:" in t, f"text output:\n{t}")

    # Cumulative error: nested lists (one model per --only / --all-but), weight / activation only.
    j = c.json(*c.hostile("acc-error", "--only", "/fc1/Gemm", "--only", "/fc1/Gemm,/conv2/Conv", "--all-but",
                          "/fc1/Gemm", "--weight-only", "--activation-only"))
    labels = [cv["label"] for cv in j["acc_error"]["curves"]]
    check(labels == ["only /fc1/Gemm", "only /fc1/Gemm,/conv2/Conv", "all but /fc1/Gemm", "weight only",
                     "activation only"], f"curve labels: {labels}")
    for cv in j["acc_error"]["curves"]:
        rows = [r for r in cv["rows"] if "error" not in r]
        avg = cv["average"]["cosine"]
        check(len(avg) == len(rows) and len(rows) >= 8, f"{cv['label']}: {len(rows)} rows, {len(avg)} means")
        check(abs(num(avg[0]) - num(rows[0]["metrics"]["cosine"])) < 1e-12, "running mean of the first value")
        mean2 = (num(rows[0]["metrics"]["cosine"]) + num(rows[1]["metrics"]["cosine"])) / 2
        check(abs(num(avg[1]) - mean2) < 1e-12, "running mean of the first two values")
    only_fc1 = j["acc_error"]["curves"][0]["rows"]
    before = [r for r in only_fc1 if r["value"] == "/conv1/Conv_output_0"]
    check(before and num(before[0]["metrics"]["cosine"]) == 1.0,
          "with only fc1 quantized, conv1's output must equal the float model's")
    check(num(only_fc1[-1]["metrics"]["cosine"]) < 0.95, "with only fc1 quantized the logits must degrade")
    t = c.run(*c.hostile("acc-error", "--average", "--metric", "cosine")).stdout
    check("running mean" in t and "fully quantized" in t, f"acc-error --average text:\n{t}")

    # Distributions: a weight (per-tensor: one clipping range covering max |w|), an activation,
    # a node's float vs quantized output.
    d = c.json(*c.hostile("distribution", "--weight", "fc1.weight", "--bins", "32"))["distribution"]
    h = d["histogram"]
    check(d["kind"] == "weight" and d["clip"]["channels"] == 1 and len(h["counts"]) == 32,
          f"weight distribution: {d['clip']}, {len(h['counts'])} bins")
    check(sum(h["counts"]) == h["total"] and d["clipped"] == 0, "min-max weights clip nothing")
    check(abs(d["clip"]["hi"] - d["max_abs"] * 127 / 127.5) < 1e-5 * d["max_abs"],
          f"symmetric int8 keeps 127 s = max|w| * 127 / 127.5: {d['clip']['hi']} vs max|w| {d['max_abs']}")
    d = c.json(*c.hostile("distribution", "--activation", "/conv1/Conv_output_0"))["distribution"]
    check(d["kind"] == "activation" and d["clip"]["lo"] <= d["histogram"]["min"] + 1e-6, f"activation: {d['clip']}")
    d = c.json(*c.hostile("distribution", "--node", "/fc1/Gemm"))["distribution"]
    check(d["kind"] == "node" and d["value"] and sum(d["float"]["counts"]) == d["float"]["total"],
          "node distribution histograms")
    check(num(d["metrics"]["cosine"]) < 0.99, "fc1's output in the fully quantized hostile model is far off")
    t = c.run(*c.hostile("distribution", "--weight", "fc1.weight")).stdout
    check("kept by quantization" in t and "#" in t, f"distribution text:\n{t}")

    # Channel-wise: the hostile conv weights' output channels differ by up to 100x; the demo's do not.
    ch = c.json(*c.hostile("channelwise", "--weight", "conv2.weight"))["channelwise"]
    check(ch["axis"] == 0 and len(ch["channels"]) == 32, f"conv2.weight: axis {ch['axis']}, {len(ch['channels'])} channels")
    check(num(ch["range_ratio"]) > 8, f"hostile conv2.weight range ratio {ch['range_ratio']}, expected > 8")
    for b in ch["channels"]:
        check(b["min"] <= b["q1"] <= b["median"] <= b["q3"] <= b["max"], f"box order in channel {b['channel']}")
    demo = c.json("debug", "channelwise", c.demo_file("digits_cnn.onnx"), "--calib", c.demo_file("digits_calib.npy"),
                  "--activation", "/Relu_output_0", "--axis", "1")["channelwise"]
    check(demo["axis"] == 1 and len(demo["channels"]) > 1, "activation channels along axis 1")

    # Partial quantization: sensitive nodes worst first; keeping them float climbs to near 1.
    p = c.json(*c.hostile("partial"))["partial"]
    sens = [num(r["metrics"]["cosine"]) for r in p["sensitive"]]
    check(len(sens) >= 2 and sens == sorted(sens) and all(v < 0.999 for v in sens), f"sensitive cosines {sens}")
    steps = p["steps"]
    check([s["k"] for s in steps] == list(range(1, len(sens) + 1)), "steps k = 1..n")
    check(steps[0]["kept_float"] == [p["sensitive"][0]["node"]], "k = 1 keeps the worst node float")
    check(num(steps[-1]["metrics"]["cosine"]) > num(p["full"]["cosine"]) + 0.1,
          f"all sensitive nodes in float: {steps[-1]['metrics']['cosine']} vs full {p['full']['cosine']}")
    t = c.run(*c.hostile("partial", "--threshold", "0.99")).stdout
    check("sensitive nodes" in t and "k =  1" in t, f"partial text:\n{t}")

    # --quantized: the QDQ file quantize writes, taken apart, measures what calibrating in memory
    # with the same options measures (ptq::import_qdq gives back the same parameters and integers).
    qdq = os.path.join(c.tmp, "w8a8.onnx")
    c.run("quantize", c.demo_file("digits_cnn.onnx"), "-o", qdq, "--calib", c.demo_file("digits_calib.npy"))
    test_x = c.demo_file("digits_test_x.npy")
    mem = c.json("debug", "sensitivity", c.demo_file("digits_cnn.onnx"), "--calib", c.demo_file("digits_calib.npy"),
                 "--input", test_x)["sensitivity"]
    imp = c.json("debug", "sensitivity", c.demo_file("digits_cnn.onnx"), "--quantized", qdq, "--input", test_x)
    check(imp["scheme"].startswith("imported from the QDQ model"), f"scheme {imp['scheme']}")
    rows_mem = [(r["node"], r["metrics"]["cosine"]) for r in mem["rows"]]
    rows_imp = [(r["node"], r["metrics"]["cosine"]) for r in imp["sensitivity"]["rows"]]
    check(rows_mem == rows_imp, f"in memory {rows_mem[:3]} vs imported {rows_imp[:3]}")

    # ort-saturation: ONNX Runtime's int16 pair sums without VNNI. Full-range weights on the demo
    # saturate (conv1: uint8 pixels near 255 times its largest weights); the depthwise conv is
    # not checked (int32 sums); --reduce-range keeps every pair within +-32640; the imported QDQ
    # file gives the same figures as calibrating in memory.
    demo_args = ["debug", "ort-saturation", c.demo_file("digits_cnn.onnx"), "--calib", c.demo_file("digits_calib.npy")]
    o = c.json(*demo_args)["ort_saturation"]
    rows = {r["node"]: r for r in o["rows"]}
    check(sorted(rows) == ["/conv1/Conv", "/conv3/Conv", "/dw2/Conv", "/fc1/Gemm", "/fc2/Gemm", "/pw2/Conv"],
          f"ort-saturation rows {sorted(rows)}")
    check(not rows["/dw2/Conv"]["checked"] and "depthwise" in rows["/dw2/Conv"]["reason"], f"dw2: {rows['/dw2/Conv']}")
    check(o["checked"] == 5 and o["saturating"] >= 1, f"checked {o['checked']}, saturating {o['saturating']}")
    c1 = rows["/conv1/Conv"]
    check(c1["formats"] == "uint8 x int8" and c1["reduction"] == 9 and c1["outputs"] == 64 * 16 * 64,
          f"conv1: {c1}")
    check(c1["saturated_pairs"] > 0 and 0 < c1["affected_outputs"] <= c1["outputs"] and c1["max_pair"] > 32767,
          f"conv1 saturates: {c1}")
    check(c1["pairs"] == c1["outputs"] * 5 and num(c1["max_error_steps"]) > 1, f"conv1 pairs / error: {c1}")
    for r in o["rows"]:
        if r["checked"] and r["saturated_pairs"] == 0:
            check(r["affected_outputs"] == 0 and num(r["max_error"]) == 0, f"no saturation, no error: {r}")
    # the effect on the output: the integer mode with and without ONNX Runtime's pair sums
    e = o["effect"]
    check(e["output"] == "logits" and e["argmax_samples"] == 64 and 0 < e["argmax_same"] <= 64, f"effect: {e}")
    exact, ort = num(e["integer_vs_float"]["cosine"]), num(e["ort_no_vnni_vs_float"]["cosine"])
    check(0.999 < exact < 1 and ort < exact and num(e["ort_no_vnni_vs_integer"]["cosine"]) < 0.9999,
          f"effect cosines: exact {exact}, with the pair sums {ort}, {e['ort_no_vnni_vs_integer']}")
    t = c.run(*demo_args).stdout
    check("/conv1/Conv" in t and "not checked: depthwise" in t and "--reduce-range" in t and
          "effect on 'logits'" in t, f"ort-saturation text:\n{t}")
    red = c.json(*demo_args, "--reduce-range")["ort_saturation"]
    check(red["saturating"] == 0 and red["checked"] == 5 and "effect" not in red,
          f"--reduce-range: {red['saturating']} saturating")
    for r in red["rows"]:
        if r["checked"]:
            check(-32640 <= r["min_pair"] and r["max_pair"] <= 32640 and r["affected_outputs"] == 0, f"7-bit: {r}")
    check("no pair sum outside int16" in c.run(*demo_args, "--reduce-range").stdout, "--reduce-range verdict")
    imp = c.json("debug", "ort-saturation", c.demo_file("digits_cnn.onnx"), "--quantized", qdq,
                 "--calib", c.demo_file("digits_calib.npy"))["ort_saturation"]
    check(imp == o, "ort-saturation on the imported QDQ file differs from the in-memory calibration")
    # --output an intermediate value: the integer mode holds it as integers, so the effect is
    # not measured, and the text and JSON say why (the rows are the same)
    mid = c.json(*demo_args, "--output", "/Relu_output_0")["ort_saturation"]
    check(mid["rows"] == o["rows"] and mid["effect"] == {
        "output": "/Relu_output_0", "error": "the integer mode does not compute '/Relu_output_0' as a float value"},
        f"--output /Relu_output_0: {mid.get('effect')}")
    check("effect on the output: not measured (the integer mode does not compute '/Relu_output_0' as a float value)"
          in c.run(*demo_args, "--output", "/Relu_output_0").stdout, "--output /Relu_output_0 text")


def case_errors(c):
    def fails(args, status, *needles):
        p = c.run(*args, expect=status)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(len(lines) == 1, f"{args}: expected one line on stderr, got:\n{p.stderr}")
        for n in needles:
            check(n in lines[0], f"{args}: '{n}' not in: {lines[0]}")

    fails(c.hostile("sensitivity", "--type", "layer"), 2, "--type", "'layer'", "node, weight or activation")
    fails(c.hostile("sensitivity", "--nodes", "nope"), 1, "'nope' is not a quantized node")
    fails(c.hostile("sensitivity", "--metric", "psnr"), 2, "--metric", "'psnr'", "cosine, mse")
    fails(c.hostile("distribution"), 2, "exactly one of --node, --weight or --activation")
    fails(c.hostile("distribution", "--weight", "input"), 1, "--weight 'input'", "not a quantized weight")
    fails(c.hostile("distribution", "--node", "/nope"), 1, "--node '/nope'", "no such node")
    fails(c.hostile("channelwise", "--node", "/fc1/Gemm"), 2, "--node")
    fails(c.hostile("channelwise"), 2, "expected exactly one of --weight or --activation")
    fails(c.hostile("channelwise", "--weight", "fc1.weight", "--axis", "3"), 1, "channel axis 3", "expected an axis")
    fails(c.hostile("partial", "--threshold", "2"), 2, "--threshold '2'", "(-1, 1]")
    fails(c.hostile("partial", "--samples", "0"), 2, "--samples 0")
    fails(c.hostile("acc-error", "--only", "/fc9/Gemm"), 1, "node '/fc9/Gemm' is not a quantized node")
    fails(c.hostile("sensitivity", "--output", "nowhere"), 1, "debug output 'nowhere'")
    fails(["debug", "partial", c.demo_file("digits_cnn.onnx")], 2, "--calib")
    fails(["debug", "partial", c.demo_file("digits_cnn.onnx"), "--quantized", c.demo_file("digits_cnn.onnx"), "--input",
           c.demo_file("digits_test_x.npy")], 1, "--quantized", "has no QuantizeLinear/DequantizeLinear")
    fails(["debug", "partial", c.demo_file("digits_cnn.onnx"), "--quantized", c.demo_file("digits_cnn.onnx"),
           "--observer", "kl", "--input", c.demo_file("digits_test_x.npy")], 2, "--observer",
          "expected no quantize options")
    fails(["debug", "ort-saturation", c.demo_file("digits_cnn.onnx"), "--quantized", c.demo_file("digits_cnn.onnx"),
           "--reduce-range", "--input", c.demo_file("digits_test_x.npy")], 2, "--reduce-range",
          "expected no quantize options")
    fails(["debug", "partial", c.demo_file("digits_cnn.onnx"), "--quantized", c.demo_file("digits_cnn.onnx")], 2,
          "--quantized: no samples")
    qdq = os.path.join(c.tmp, "q.onnx")
    c.run("quantize", c.demo_file("digits_cnn.onnx"), "-o", qdq, "--calib", c.demo_file("digits_calib.npy"))
    fails(["debug", "partial", qdq, "--calib", c.demo_file("digits_calib.npy")], 1, "already quantized",
          "expected the float model")
    missing = os.path.join(c.tmp, "no", "such", "dir", "x")
    blocker = os.path.join(c.tmp, "file")
    open(blocker, "w").close()
    fails(["debug", "runall", c.demo_file("digits_cnn.onnx"), "--calib", c.demo_file("digits_calib.npy"), "-o",
           os.path.join(blocker, "out")], 1, "-o", "cannot create the folder")
    fails(["quantize", c.demo_file("digits_cnn.onnx"), "-o", os.path.join(c.tmp, "x.onnx"), "--calib",
           c.demo_file("digits_calib.npy"), "--auto-mixed", "1.5"], 2, "--auto-mixed '1.5'", "(-1, 1]")
    fails(["calibrate", c.demo_file("digits_calib.npy"), "--observer", "mix"], 2, "--observer mix")
    del missing


def case_report(c):
    out = os.path.join(c.tmp, "report")
    start = time.monotonic()
    p = c.run("debug", "runall", c.demo_file("digits_cnn.onnx"), "--calib", c.demo_file("digits_calib.npy"), "-o", out)
    elapsed = time.monotonic() - start
    check(elapsed < 60, f"runall took {elapsed:.1f} s, expected under a minute")
    check("wrote" in p.stdout and "output cosine" in p.stdout, f"runall stdout:\n{p.stdout}")
    with open(os.path.join(out, "report.json")) as f:
        j = json.load(f)
    for key in ("sensitivity_node", "sensitivity_weight", "sensitivity_activation", "acc_error", "partial",
                "distributions", "channelwise", "conclusion", "model", "scheme"):
        check(key in j, f"report.json lacks '{key}'")
    check(len(j["sensitivity_node"]["rows"]) == 14, f"demo: {len(j['sensitivity_node']['rows'])} node rows")
    labels = [cv["label"] for cv in j["acc_error"]["curves"]]
    check(labels[:3] == ["fully quantized", "weight only", "activation only"], f"curves {labels}")
    kinds = [d["kind"] for d in j["distributions"]]
    check(kinds.count("weight") == 5 and kinds.count("activation") == 5 and kinds.count("node") == 5,
          f"distributions (top 5 of each): {kinds}")
    check(len(j["channelwise"]) == 10, f"channelwise entries: {len(j['channelwise'])}")
    check(j["conclusion"].startswith("The fully quantized model's output cosine is"), j["conclusion"])
    o = j["ort_saturation"]
    check(o["checked"] == 5 and o["saturating"] >= 1 and len(o["rows"]) == 6, f"ort_saturation {o}")
    check("--reduce-range" in j["conclusion"] and "/conv1/Conv" in j["conclusion"] and "output cosine" in j["conclusion"],
          f"the conclusion names the saturating nodes and the remedy: {j['conclusion']}")

    html_path = os.path.join(out, "report.html")
    with open(html_path, encoding="utf-8") as f:
        html = f.read()
    sections = ["summary", "sensitivity", "weights", "activations", "acc-error", "partial", "distributions",
                "channelwise", "ort-saturation"]
    for sid in sections:
        start_at = html.find(f'<section id="{sid}">')
        check(start_at >= 0, f"report.html lacks section '{sid}'")
        end = html.find("</section>", start_at)
        body = html[start_at:end]
        if sid not in ("summary", "partial", "ort-saturation"):  # partial: a chart only when a node is sensitive
            check("<svg" in body, f"section '{sid}' has no chart")
    check("<script" not in html.lower(), "report.html must not need JavaScript")
    for ref in ("src=", "http://", "https://", "@import", "url("):
        check(ref not in html, f"report.html references something outside itself ('{ref}')")
    check(html.count("<svg") == html.count("</svg>") and html.count("<svg") >= 20, "svg elements balanced")
    check("<b>Conclusion.</b> " + j["conclusion"][:30] in html, "the conclusion in the page")

    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        print("no chromium found: the rendering check is skipped")
        return SKIP
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--disable-extensions",
            "--user-data-dir=" + os.path.join(c.tmp, "chromium-profile"), "--enable-logging=stderr", "--v=0"]
    url = "file://" + html_path
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=180)
    check(dom.returncode == 0, f"chromium --dump-dom: exit {dom.returncode}\n{dom.stderr[-2000:]}")
    for sid in sections:
        check(f'id="{sid}"' in dom.stdout, f"rendered DOM lacks section '{sid}'")
    check(dom.stdout.count("<svg") == html.count("<svg"), "every chart parsed into the DOM")
    bad = [l for l in dom.stderr.splitlines() if "CONSOLE" in l or "net::ERR" in l or "Uncaught" in l]
    check(not bad, "chromium reported page errors:\n" + "\n".join(bad))
    artifacts = c.artifacts or c.tmp
    os.makedirs(artifacts, exist_ok=True)
    shot = os.path.join(artifacts, "debug_report.png")
    if os.path.exists(shot):
        os.remove(shot)
    p = subprocess.run(base + ["--hide-scrollbars", "--window-size=1200,7000", "--screenshot=" + shot, url],
                       capture_output=True, text=True, timeout=180)
    check(p.returncode == 0 and os.path.exists(shot), f"chromium --screenshot: exit {p.returncode}\n{p.stderr[-2000:]}")
    with open(shot, "rb") as f:
        png = f.read()
    check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50000, f"screenshot {shot}: {len(png)} bytes")
    shutil.copy(os.path.join(out, "report.html"), os.path.join(artifacts, "debug_report.html"))
    print(f"screenshot kept: {shot}")


def case_mixed(c):
    out = os.path.join(c.tmp, "mixed.onnx")
    base = ["quantize", c.demo_file("digits_hostile.onnx"), "-o", out, "--calib", c.demo_file("digits_calib.npy"),
            "--weight-granularity", "per-tensor"]
    j = c.json(*base, "--auto-mixed", "0.999")
    m = j["auto_mixed"]
    check(m["initial_cosine"] < 0.9 and m["reached"] and m["final_cosine"] >= 0.999, f"auto mixed: {m}")
    steps = m["steps"]
    check(steps and steps[0]["action"] == "int16" and steps[0]["node"] == "/fc1/Gemm", f"first step {steps[:1]}")
    check(abs(steps[-1]["cosine"] - m["final_cosine"]) < 1e-12, "the last step is the written model")
    floats = [s["node"] for s in steps if s["action"] == "float"]
    check(j["keep_float"] == floats, f"keep_float {j['keep_float']} vs float steps {floats}")
    for n in floats:
        check(n not in j["quantized_nodes"], f"{n} kept float but quantized")
    # The executor runs QDQ files with 8-bit activations only: evaluate the same configuration in
    # memory (the fake-quant mode of the float model computes what the file does).
    def acc(*options):
        return c.json("eval", c.demo_file("digits_hostile.onnx"), "--input", c.demo_file("digits_test_x.npy"),
                      "--labels", c.demo_file("digits_test_y.npy"), "--mode", "fake", "--calib",
                      c.demo_file("digits_calib.npy"), "--weight-granularity", "per-tensor", *options)["accuracy"]
    mixed = []
    if j["keep_float"]:
        mixed += ["--keep-float", ",".join(j["keep_float"])]
    if j["int16_nodes"]:
        mixed += ["--int16", ",".join(j["int16_nodes"])]
    a_plain, a_mixed = acc(), acc(*mixed)
    check(a_mixed > a_plain + 0.05 and a_mixed > 0.93, f"accuracy plain {a_plain}, auto-mixed {a_mixed}")
    t = c.run(*base, "--auto-mixed", "0.999").stdout
    check("auto mixed precision (target output cosine 0.999" in t and "reached" in t, f"text:\n{t}")

    # --observer mix: KL everywhere; each sensitive node tries max and percentile 99.995.
    j = c.json("quantize", c.demo_file("digits_hostile.onnx"), "-o", os.path.join(c.tmp, "mix.onnx"), "--calib",
               c.demo_file("digits_calib.npy"), "--observer", "mix")
    check(j["observer"] == "mix", f"observer {j['observer']}")
    notes = [n for n in j["notes"] if n.startswith("observer mix:")]
    check(notes and "kl everywhere" in notes[0], f"mix notes: {notes}")
    for n in notes[1:]:
        check("kl " in n and "max " in n and "percentile:99.995 " in n and "->" in n, f"choice note: {n}")


CASES = {"verbs": case_verbs, "errors": case_errors, "report": case_report, "mixed": case_mixed}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quantkit", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--artifacts")
    args = ap.parse_args()
    c = Ctx(args)
    try:
        status = CASES[args.case](c)
    except Failure as e:
        print(f"FAIL {args.case}: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(c.tmp, ignore_errors=True)
    if status == SKIP:
        return SKIP
    print(f"ok {args.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
