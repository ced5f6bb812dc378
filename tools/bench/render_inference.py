#!/usr/bin/env python3
"""Table of bench_inference (quantkit) and ort_inference.mjs (ONNX Runtime) results.

usage: render_inference.py OUT.md bench_inference.json [ort_inference.json]

Per model (the batch bench_inference ran, --qk_batch: 256 by default; one thread): milliseconds
per batch for quantkit's integer and float modes and ONNX Runtime's float, QDQ and QOperator
sessions, and the ratios that matter: how many times faster quantkit's integer mode is than each (> 1: quantkit is faster), and quantkit's float
executor against ORT's float session. The GEMM alone (M = 256, K = N = 1024): GOPS = 2 M N K / s
for quantkit's packed int8 kernel, ORT's MatMulInteger, quantkit's float GEMM, Eigen's and ORT's
float MatMul. Medians of the repetitions where the JSON has them.
"""
import json
import sys


def times(path):
    """name -> milliseconds (the median aggregate where there is one)."""
    data = json.load(open(path))
    out, plain = {}, {}
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            continue
        name = b.get("run_name", b["name"]).split("/repeats")[0]
        if name.endswith("/real_time"):  # UseRealTime() suffix
            name = name[: -len("/real_time")]
        unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
        ms = b["real_time"] * unit
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                out[name] = ms
        else:
            plain.setdefault(name, []).append(ms)
    for name, v in plain.items():
        if name not in out:
            v = sorted(v)
            out[name] = v[len(v) // 2]
    return out, data.get("context", {})


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out_path = sys.argv[1]
    t, ctx = times(sys.argv[2])
    for p in sys.argv[3:]:
        t.update(times(p)[0])
    models = sorted({n.split("/")[1] for n in t if n.startswith("inference/")})
    batch = str(ctx.get('quantkit.batch', '256'))
    # --batch=N runs the whole models alone (no GEMM benches), whatever N is
    batch_flag = "" if any(n.startswith("gemm/") for n in t) else f" --batch={batch}"
    lines = ["# Whole-model inference: quantkit vs ONNX Runtime", "",
             f"Batch {batch}, one thread. Host: {ctx.get('host_name', '?')}, "
             f"{ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz; {ctx.get('date', '')}.",
             f"Produced by `tools/bench/run_all.sh --inference{batch_flag}` (bench/bench_inference.cpp, "
             "tools/bench/ort_inference.mjs). Ratios > 1: quantkit's integer mode is faster (the last "
             "column: quantkit's float executor against ORT's float session).", "",
             "| model | quantkit int8 (ms) | quantkit float (ms) | ORT float (ms) | ORT QDQ (ms) | ORT QOperator (ms) "
             "| vs quantkit float | vs ORT float | vs ORT QDQ | vs ORT QOperator | float: quantkit vs ORT |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]

    def cell(v):
        return f"{v:.3f}" if v is not None else "-"

    def ratio(a, b):
        return f"{a / b:.2f}x" if a is not None and b else "-"

    for m in models:
        g = lambda k: t.get(f"inference/{m}/{k}")
        qi, qf = g("quantkit_integer"), g("quantkit_float")
        of, oq, oo = g("ort_float"), g("ort_qdq"), g("ort_qoperator")
        lines.append(f"| {m} | {cell(qi)} | {cell(qf)} | {cell(of)} | {cell(oq)} | {cell(oo)} | {ratio(qf, qi)} "
                     f"| {ratio(of, qi)} | {ratio(oq, qi)} | {ratio(oo, qi)} | {ratio(of, qf)} |")
    gemm = {n.split("/")[2]: v for n, v in t.items() if n.startswith("gemm/")}
    if gemm:
        ops = 2.0 * 256 * 1024 * 1024
        lines += ["", "GEMM alone, M = 256, K = N = 1024 (int8: u8 x s8, B packed once / a constant; f32: "
                  "quantkit_f32 packs B on every call, quantkit_f32_prepacked reads it packed once, as the float "
                  "executor keeps a constant weight; eigen_f32 is vectorized for the "
                  "bench build's flags only):", "",
                  "| kernel | ms | GOPS |", "|---|---|---|"]
        for k in sorted(gemm):
            lines.append(f"| {k} | {gemm[k]:.3f} | {ops / (gemm[k] * 1e-3) / 1e9:.1f} |")
    open(out_path, "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
