#!/usr/bin/python3
"""Renders bench_kernels' JSON and the peers' JSON (same shape) into a markdown table and SVG
charts. Every ratio is computed here from one results set: kernel / plain loop, kernel /
memcpy of the same bytes, kernel / ONNX Runtime, kernel / PyTorch.

usage: render.py [--out DIR] FILE.json [FILE.json ...]
  writes DIR/results.md, DIR/sweep.svg (Gelem/s over sizes, per operation) and
  DIR/variants.svg (every rounding / scheme x granularity, cache-resident and DRAM sizes).
Only the standard library is used.
"""
import argparse
import html
import json
import math
import os
import re
import sys
from collections import defaultdict

OPS = ["quantize", "dequantize", "fake_quantize", "requantize", "quantize_i16"]
GRANS = ["per_tensor", "per_channel", "per_group32"]
# The variant each operation is measured by: plain loops, memcpy, ORT (same semantics: x / s,
# ties to even; requantize: ORT's DequantizeLinear(int32) -> QuantizeLinear = float
# multiplier) and PyTorch (x * (1 / s)).
DEFAULT = {"quantize": "half_even", "dequantize": "linear", "fake_quantize": "half_even",
           "requantize": "fixed_point", "quantize_i16": "half_even"}
# (quantize_i16, f32 -> int16: ONNX Runtime's QuantizeLinear at opset 21; PyTorch has no int16
# quantize_per_tensor)
ORT_VARIANT = {"quantize": "half_even", "dequantize": "linear", "fake_quantize": "half_even",
               "requantize": "float", "quantize_i16": "half_even"}
BPE = {"fake_quantize": 8, "quantize_i16": 6}  # bytes moved per element (read + written); else 5
TORCH_VARIANT = {"quantize": "half_even.mul", "dequantize": "linear",
                 "fake_quantize": "half_even.mul"}
KERNEL = "simd"            # quantkit, runtime dispatch (the best target of this CPU)
CACHE_SIZES = (4096, 16384, 65536)
DRAM_SIZE = 16777216
BARS = {"plain": 1.5, "memcpy": 0.90, "ort": 3.0, "torch": 20.0, "per_channel": 0.80}
# run_all.sh's runs with --qk_channel_len=L (per-channel rows of L values, NCHW feature maps)
# name their granularities "rows<L>:per_channel" and "rows<L>:per_tensor" (same sizes); its
# runs with --qk_channels_last=C ([batch, C], channels innermost) "last<C>:...".
ROWS_GRAN = re.compile(r"^(rows|last)(\d+):(per_tensor|per_channel)$")
# (requantize measured by both of its usual schemes there: fixed point and the float multiplier)
ROWS_VARIANTS = {"quantize": ["half_even"], "dequantize": ["linear"], "fake_quantize": ["half_even"],
                 "requantize": ["fixed_point", "float"], "quantize_i16": ["half_even"]}


def parse(files):
    """{(op, variant, gran, impl, n): row} of median rows (or single runs)."""
    rows, contexts = {}, []
    for path in files:
        with open(path) as f:
            data = json.load(f)
        contexts.append((os.path.basename(path), data.get("context", {})))
        have_aggregates = any(b.get("run_type") == "aggregate" for b in data.get("benchmarks", []))
        for b in data.get("benchmarks", []):
            if have_aggregates and b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            if have_aggregates and b.get("run_type") == "iteration" and not b.get("error_occurred"):
                continue
            name = b.get("run_name") or b["name"]
            name = re.sub(r"/(real_time|process_time|manual_time)$", "", name)
            parts = name.split("/")
            if len(parts) != 5:
                continue
            op, variant, gran, impl, n = parts
            rows[(op, variant, gran, impl, int(n))] = b
    return rows, contexts


def ips(rows, key):
    b = rows.get(key)
    if not b or b.get("error_occurred") or not b.get("items_per_second"):
        return None
    return float(b["items_per_second"])


def memcpy_ips(rows, op, n):
    return ips(rows, ("memcpy", f"{BPE.get(op, 5)}B", "-", "memcpy", n))


def floor_ips(rows, op, n):
    """The op's loads and stores with no arithmetic (bench_kernels floor/<op>/-/floor_native/<n>)."""
    return ips(rows, ("floor", op, "-", "floor_native", n))


def fmt_rate(v):
    if v is None:
        return "—"
    return f"{v / 1e9:.2f}" if v >= 1e8 else f"{v / 1e9:.3f}"


def fmt_ratio(a, b, pct=False):
    if a is None or b is None:
        return "—"
    r = a / b
    if pct:
        return f"{100 * r:.0f}%"
    return f"{r:.1f}×" if r < 100 else f"{r:.0f}×"


def sizes_of(rows):
    return sorted({k[4] for k in rows if not ROWS_GRAN.match(k[2])})


def per_tensor_like(rows, op, v, gran="per_tensor"):
    """The per-tensor variant that does the per-channel case's work: requantize per channel adds
    a bias per channel, so its per-tensor counterpart is the one with a bias (bench_kernels'
    "<scheme>.bias"), when measured."""
    if op == "requantize" and any(k[0] == op and k[1] == v + ".bias" and k[2] == gran for k in rows):
        return v + ".bias"
    return v


def row_lengths(rows, kind="rows"):
    """The L of rows<L> (kind "rows") or the C of last<C> (kind "last") measured."""
    return sorted({int(m.group(2)) for k in rows for m in [ROWS_GRAN.match(k[2])] if m and m.group(1) == kind})


def size_label(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10}K"
    return str(n)


def simd_targets(rows):
    return sorted({k[3] for k in rows if k[3].startswith("simd:")})


# ---- markdown -------------------------------------------------------------------------------

def sweep_table(rows, op, sizes):
    v, tv, ov = DEFAULT[op], TORCH_VARIANT.get(op), ORT_VARIANT[op]
    out = [f"#### {op} (per tensor, {'int16' if op == 'quantize_i16' else 'int8'}; `{v}`)", "",
           "| elements | quantkit Gelem/s | vs plain -O3 -march=native | vs plain x86-64 | "
           "of memcpy (same bytes) | of floor | plain of floor | vs ORT op | vs ORT run | vs PyTorch | "
           "vs scalar ref | static dispatch |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in sizes:
        k = ips(rows, (op, v, "per_tensor", KERNEL, n))
        ko = ips(rows, (op, ov, "per_tensor", KERNEL, n))
        kt = ips(rows, (op, tv, "per_tensor", KERNEL, n)) if tv else None
        cells = [
            size_label(n), fmt_rate(k),
            fmt_ratio(k, ips(rows, (op, v, "per_tensor", "plain_native", n))),
            fmt_ratio(k, ips(rows, (op, v, "per_tensor", "plain_x86-64", n))),
            fmt_ratio(k, memcpy_ips(rows, op, n), pct=True),
            fmt_ratio(k, floor_ips(rows, op, n), pct=True),
            fmt_ratio(ips(rows, (op, v, "per_tensor", "plain_native", n)), floor_ips(rows, op, n), pct=True),
            fmt_ratio(ko, ips(rows, (op, ov, "per_tensor", "ort_op", n))),
            fmt_ratio(ko, ips(rows, (op, ov, "per_tensor", "ort", n))),
            fmt_ratio(kt, ips(rows, (op, tv, "per_tensor", "torch", n))) if tv else "n/a",
            fmt_ratio(k, ips(rows, (op, v, "per_tensor", "ref", n))),
            fmt_ratio(ips(rows, (op, v, "per_tensor", "simd_static", n)), k),
        ]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return out


def rates_table(rows, op, sizes):
    v = DEFAULT[op]
    impls = [KERNEL, "simd_static", "plain_native", "plain_x86-64", "ref", "ort_op", "ort", "torch"]
    out = [f"#### {op}: Gelem/s by granularity", "",
           "| granularity | impl | " + " | ".join(size_label(n) for n in sizes) + " |",
           "|---|---|" + "---:|" * len(sizes)]
    for g in GRANS:
        for impl in impls + ["memcpy"]:
            if impl == "memcpy":
                if g != "per_tensor":
                    continue
                vals = [memcpy_ips(rows, op, n) for n in sizes]
                label = f"memcpy ({BPE.get(op, 5)} B/elem)"
            else:
                var = ORT_VARIANT[op] if impl.startswith("ort") else (
                    TORCH_VARIANT.get(op, v) if impl == "torch" else v)
                vals = [ips(rows, (op, var, g, impl, n)) for n in sizes]
                label = impl if var == v else f"{impl} (`{var}`)"
            if all(x is None for x in vals):
                continue
            out.append(f"| {g} | {label} | " + " | ".join(fmt_rate(x) for x in vals) + " |")
    out.append("")
    return out


def granularity_table(rows, sizes):
    out = ["| operation | granularity | " + " | ".join(size_label(n) for n in sizes) + " |",
           "|---|---|" + "---:|" * len(sizes)]
    for op in OPS:
        v = DEFAULT[op]
        for g in GRANS[1:]:
            for tv in dict.fromkeys([per_tensor_like(rows, op, v), v]):
                vals = [fmt_ratio(ips(rows, (op, v, g, KERNEL, n)), ips(rows, (op, tv, "per_tensor", KERNEL, n)), pct=True)
                        for n in sizes]
                if all(x == "—" for x in vals):
                    continue
                against = "per_tensor" if tv == v else f"per_tensor `{tv}`"
                out.append(f"| {op} `{v}` | {g} / {against} | " + " | ".join(vals) + " |")
    out.append("")
    return out


def rows_table(rows, kind="rows"):
    """Per-channel rows of L values (feature maps of 7x7, 14x14: NCHW on axis 1; kind "rows") or
    [batch, C] with the channels innermost (kind "last") against per-tensor at the same sizes."""
    head = "row length | rows" if kind == "rows" else "channels | batch"
    out = [f"| operation | {head} | elements | per_channel Gelem/s | per_tensor Gelem/s | "
           "per_channel / per_tensor |", "|---|---:|---:|---:|---:|---:|---:|"]
    for op in OPS:
        for v in ROWS_VARIANTS[op]:
            for length in row_lengths(rows, kind):
                g = f"{kind}{length}"
                for n in sorted({k[4] for k in rows if k[2] == f"{g}:per_channel" and k[0] == op and k[1] == v}):
                    c = ips(rows, (op, v, f"{g}:per_channel", KERNEL, n))
                    tv = per_tensor_like(rows, op, v, f"{g}:per_tensor")
                    t = ips(rows, (op, tv, f"{g}:per_tensor", KERNEL, n))
                    label = f"`{v}`" if tv == v else f"`{v}` (per tensor: `{tv}`)"
                    out.append(f"| {op} {label} | {length} | {n // length} | {n} | {fmt_rate(c)} | {fmt_rate(t)} | "
                               f"{fmt_ratio(c, t, pct=True)} |")
    out.append("")
    return out


def matrix_table(rows, n):
    targets = simd_targets(rows)
    impls = [KERNEL, "simd_static"] + targets + ["plain_native", "plain_x86-64"]
    impls = [i for i in impls if any(k[3] == i and k[4] == n for k in rows)]
    if not impls:
        return []
    out = [f"#### {size_label(n)} elements ({n}): Gelem/s, and quantkit (dispatched) vs its plain loop", "",
           "| operation | variant | granularity | " + " | ".join(impls) + " | vs plain native | vs x86-64 |",
           "|---|---|---|" + "---:|" * (len(impls) + 2)]
    variants = defaultdict(set)
    for (op, var, g, impl, m) in rows:
        if m == n and op in OPS and impl in impls:
            variants[op].add(var)
    for op in OPS:
        for var in sorted(variants[op], key=variant_order):
            for g in GRANS:
                vals = [ips(rows, (op, var, g, i, n)) for i in impls]
                if all(x is None for x in vals):
                    continue
                k = ips(rows, (op, var, g, KERNEL, n))
                out.append(f"| {op} | `{var}` | {g} | " + " | ".join(fmt_rate(x) for x in vals) + " | " +
                           fmt_ratio(k, ips(rows, (op, var, g, "plain_native", n))) + " | " +
                           fmt_ratio(k, ips(rows, (op, var, g, "plain_x86-64", n))) + " |")
    out.append("")
    return out


def variant_order(v):
    order = ["half_even", "half_away", "half_up", "floor", "toward_zero", "stochastic", "linear",
             "float", "fixed_point", "fixed_point_single", "pow2", "single_shift", "double_shift"]
    base, _, suffix = v.partition(".")
    return (order.index(base) if base in order else len(order), suffix, v)


def check(rows, sizes):
    """[(target, measured, bar, verdict)] for the bars of the issue."""
    res = []
    cache = [n for n in sizes if n in CACHE_SIZES]

    def worst(pairs):
        vals = [a / b for a, b in pairs if a is not None and b is not None]
        return min(vals) if vals else None

    for op in OPS:
        v, ov, tv = DEFAULT[op], ORT_VARIANT[op], TORCH_VARIANT.get(op)
        k16 = ips(rows, (op, v, "per_tensor", KERNEL, DRAM_SIZE))
        res.append((f"{op} per-tensor 16M: of memcpy (same bytes)", k16 and memcpy_ips(rows, op, DRAM_SIZE)
                    and k16 / memcpy_ips(rows, op, DRAM_SIZE), BARS["memcpy"], "pct"))
        res.append((f"{op} per-tensor in cache: vs plain -O3 -march=native (worst of {', '.join(map(size_label, cache))})",
                    worst([(ips(rows, (op, v, "per_tensor", KERNEL, n)), ips(rows, (op, v, "per_tensor", "plain_native", n)))
                           for n in cache]), BARS["plain"], "x"))
        res.append((f"{op} per-tensor in cache: vs ONNX Runtime op (`{ov}`, worst)",
                    worst([(ips(rows, (op, ov, "per_tensor", KERNEL, n)), ips(rows, (op, ov, "per_tensor", "ort_op", n)))
                           for n in cache]), BARS["ort"], "x"))
        res.append((f"{op} per-tensor in cache: vs ONNX Runtime session.run (`{ov}`, worst)",
                    worst([(ips(rows, (op, ov, "per_tensor", KERNEL, n)), ips(rows, (op, ov, "per_tensor", "ort", n)))
                           for n in cache]), BARS["ort"], "x"))
        if tv:
            res.append((f"{op} per-tensor in cache: vs PyTorch (`{tv}`, worst)",
                        worst([(ips(rows, (op, tv, "per_tensor", KERNEL, n)), ips(rows, (op, tv, "per_tensor", "torch", n)))
                               for n in cache]), BARS["torch"], "x"))
        for var in [v] + [x for x in ROWS_VARIANTS[op] if x != v]:
            tv = per_tensor_like(rows, op, var)
            pairs = [(ips(rows, (op, var, "per_channel", KERNEL, n)), ips(rows, (op, tv, "per_tensor", KERNEL, n)))
                     for n in sizes]
            if var != v and all(a is None for a, _ in pairs):
                continue
            same = "" if tv == var else f" (both with biases: per tensor `{tv}`)"
            res.append((f"{op} `{var}` per-channel / per-tensor{same} (worst over all sizes)", worst(pairs),
                        BARS["per_channel"], "pct"))
            if tv != var:
                res.append((f"{op} `{var}` per-channel with biases / per-tensor without (worst over all sizes; "
                            "shown, no bar)",
                            worst([(ips(rows, (op, var, "per_channel", KERNEL, n)),
                                    ips(rows, (op, var, "per_tensor", KERNEL, n))) for n in sizes]), None, "pct"))
        for var in ROWS_VARIANTS[op]:
            for kind, what in (("rows", "rows of {} values"), ("last", "{} channels last")):
                for length in row_lengths(rows, kind):
                    g = f"{kind}{length}"
                    tv = per_tensor_like(rows, op, var, f"{g}:per_tensor")
                    pairs = [(ips(rows, k), ips(rows, (op, tv, f"{g}:per_tensor", KERNEL, k[4])))
                             for k in rows if k[:4] == (op, var, f"{g}:per_channel", KERNEL)]
                    if pairs:
                        same = "" if tv == var else f" (`{tv}`)"
                        res.append((f"{op} `{var}` per-channel {what.format(length)} / per-tensor{same} (worst "
                                    f"over {len(pairs)} sizes)", worst(pairs), BARS["per_channel"], "pct"))
    for op in OPS:
        v = DEFAULT[op]
        # What the plain-loop bar can be at all: no kernel moves the op's bytes faster than its
        # floor, so floor / plain is the largest possible gain over the plain loop.
        res.append((f"{op} per-tensor in cache: most any kernel can gain over plain -O3 -march=native "
                    f"(floor / plain, worst of {', '.join(map(size_label, cache))}; shown, no bar)",
                    worst([(floor_ips(rows, op, n), ips(rows, (op, v, "per_tensor", "plain_native", n)))
                           for n in cache]), None, "x"))
        res.append((f"{op} per-tensor in cache: quantkit of its floor (worst of {', '.join(map(size_label, cache))}; "
                    "shown, no bar)",
                    worst([(ips(rows, (op, v, "per_tensor", KERNEL, n)), floor_ips(rows, op, n)) for n in cache]),
                    None, "pct"))
    for op in OPS:
        v = DEFAULT[op]
        res.append((f"{op} per-tensor: vs plain loop for baseline x86-64 (worst in cache; shown, no bar)",
                    worst([(ips(rows, (op, v, "per_tensor", KERNEL, n)), ips(rows, (op, v, "per_tensor", "plain_x86-64", n)))
                           for n in cache]), None, "x"))
    return res


def verdict_rows(results):
    out = ["| target | measured | bar | |", "|---|---:|---:|---|"]
    for name, value, bar, kind in results:
        b = "" if bar is None else (f"≥ {100 * bar:.0f}%" if kind == "pct" else f"≥ {bar:g}×")
        if value is None:
            out.append(f"| {name} | — | {b} | not measured |")
            continue
        meas = f"{100 * value:.0f}%" if kind == "pct" else f"{value:.1f}×"
        if bar is None:
            out.append(f"| {name} | {meas} | | |")
            continue
        ok = value >= bar
        out.append(f"| {name} | {meas} | {b} | {'hit' if ok else f'MISSED by {100 * (1 - value / bar):.0f}%'} |")
    out.append("")
    return out


def markdown(rows, contexts, out_dir):
    sizes = sizes_of({k: v for k, v in rows.items() if k[3] == KERNEL or k[0] == "memcpy"}) or sizes_of(rows)
    lines = ["# quantkit benchmark results", "",
             "Generated by `tools/bench/render.py` from one run of `tools/bench/run_all.sh`; every ratio "
             "compares numbers of that run. Rates are Gelem/s (elements of the operation per second, "
             "median of 3 repetitions, one thread). `simd` is quantkit's kernel with runtime dispatch "
             "(the best target this CPU has); `simd:<TARGET>` the same kernel restricted to one Highway "
             "target; `simd_static` compiled for `-march=native` without dispatch; `plain_native` / "
             "`plain_x86-64` the same operation as a plain loop built with `-O3 -march=native` / "
             "`-O3 -march=x86-64` (both `-fno-trapping-math`); `ref` quantkit's scalar reference; `memcpy` "
             "a memcpy moving as many bytes (read + written) as the operation; `floor` the operation's own "
             "loads and stores in 512-bit vectors with no arithmetic (`bench/bench_kernels/floor_native.cpp`): "
             "no kernel of the operation moves its bytes faster, so floor / plain loop bounds what any "
             "kernel can gain over the plain loop; `ort_op` one ONNX Runtime "
             "op inside a graph, `ort` one `session.run` of a 1-op model from Node (binding, allocation "
             "and copy included); `torch` one PyTorch call from Python. All outputs are int8 but "
             "`quantize_i16`'s (f32 -> int16, range [-32768, 32767]: A16 activations) "
             "(requantize: int32 accumulators in).", "",
             "![Gelem/s over sizes](sweep.svg)", "", "![variants](variants.svg)", "",
             "## Targets", ""]
    lines += verdict_rows(check(rows, sizes))
    lines += ["## Per-tensor sweep (ratios)", ""]
    for op in OPS:
        lines += sweep_table(rows, op, sizes)
    lines += ["## Per-channel and per-group against per-tensor (quantkit, dispatched)", ""]
    lines += granularity_table(rows, sizes)
    if row_lengths(rows):
        lines += ["## Per-channel rows of feature maps against per-tensor (quantkit, dispatched)", "",
                  "Per-channel rows of " + ", ".join(map(str, row_lengths(rows))) + " values (NCHW "
                  "activations of 7x7 / 14x14 maps, channels on axis 1: each channel's values are one "
                  "row), 64 to 16384 rows, against per-tensor on the same elements; from runs of "
                  "`bench_kernels --qk_channel_len=L` in the same `run_all.sh`.", ""]
        lines += rows_table(rows)
    if row_lengths(rows, "last"):
        lines += ["## Per channel with the channels innermost against per-tensor (quantkit, dispatched)", "",
                  "[batch, C] with the per-channel parameters on the last axis (GEMM and fully connected "
                  "outputs, NHWC activations: the parameters change with every element of a row), C = " +
                  ", ".join(map(str, row_lengths(rows, "last"))) + ", batches of 16 to 65536, against "
                  "per-tensor on the same elements; from runs of `bench_kernels --qk_channels_last=C` in "
                  "the same `run_all.sh`.", ""]
        lines += rows_table(rows, "last")
    lines += ["## Rates", ""]
    for op in OPS:
        lines += rates_table(rows, op, sizes)
    matrix_sizes = sorted({k[4] for k in rows if k[0] in OPS and k[1] != DEFAULT[k[0]] and k[2] in GRANS})
    if matrix_sizes:
        lines += ["## Every variant × granularity × target", "",
                  "Variants: rounding `half_even` (ONNX, PyTorch), `half_away` (C `round`, TFLite), "
                  "`half_up`, `floor`, `toward_zero`; `.mul` multiplies by the float reciprocal of the "
                  "scale (PyTorch, fbgemm) instead of dividing (ONNX). Requantization schemes: `float` "
                  "(float multiplier, ties to even), `fixed_point` (gemmlowp double rounding), "
                  "`fixed_point_single` (TFLite single rounding), `pow2` (power-of-two shift, ties away), "
                  "`single_shift` / `double_shift` (N2D2). per_channel: 64 channels on axis 0; "
                  "per_group32: blocks of 32 on the last axis.", ""]
        for n in matrix_sizes:
            lines += matrix_table(rows, n)
    errors = [(k, b.get("error_message", "")) for k, b in rows.items() if b.get("error_occurred")]
    if errors:
        lines += ["## Not measured (errors)", ""]
        lines += [f"- `{'/'.join(map(str, k))}`: {msg}" for k, msg in sorted(errors)]
        lines.append("")
    lines += ["## Machine and run", "",
              "`library_build_type` is how Debian built libbenchmark itself; quantkit's benchmark "
              "code is a Release build (-O3). Times are CPU time for bench_kernels (the machine is "
              "shared), the median of single calls' wall time for the peers.", ""]
    for name, ctx in contexts:
        keep = {k: v for k, v in ctx.items() if k not in ("caches", "load_avg")}
        lines.append(f"- `{name}`: " + ", ".join(f"{k}={v}" for k, v in keep.items()))
    lines.append("")
    with open(os.path.join(out_dir, "results.md.tmp"), "w") as f:
        f.write("\n".join(lines))
    os.replace(os.path.join(out_dir, "results.md.tmp"), os.path.join(out_dir, "results.md"))


# ---- SVG ------------------------------------------------------------------------------------

COLORS = {KERNEL: "#d62728", "simd_static": "#ff9896", "plain_native": "#1f77b4",
          "plain_x86-64": "#aec7e8", "memcpy": "#2ca02c", "ort_op": "#9467bd", "ort": "#c5b0d5",
          "torch": "#ff7f0e", "ref": "#7f7f7f"}
LABELS = {KERNEL: "quantkit (dispatched)", "simd_static": "quantkit (static, -march=native)",
          "plain_native": "plain loop -O3 -march=native", "plain_x86-64": "plain loop -O3 x86-64",
          "memcpy": "memcpy, same bytes", "ort_op": "ONNX Runtime op", "ort": "ONNX Runtime session.run",
          "torch": "PyTorch", "ref": "scalar reference"}


def esc(s):
    return html.escape(str(s), quote=True)


def sweep_svg(rows, path):
    sizes = sorted({k[4] for k in rows if k[0] in OPS and k[3] == KERNEL and k[2] in GRANS}) or sizes_of(rows)
    if not sizes:
        return
    pw, ph, ml, mt, mb, gap = 420, 300, 60, 40, 45, 75
    width = ml + 2 * pw + gap + 20
    grid_rows = (len(OPS) + 1) // 2
    height = 60 + grid_rows * (ph + mt + mb) + 150
    vals = [ips(rows, k) for k in rows if k[0] in OPS + ["memcpy"]]
    vals = [v for v in vals if v]
    lo = 10 ** math.floor(math.log10(min(vals) / 1e9)) if vals else 0.01
    hi = 10 ** math.ceil(math.log10(max(vals) / 1e9)) if vals else 100
    lx0, lx1 = math.log2(sizes[0]), math.log2(sizes[-1])
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15">quantkit kernels: Gelem/s over '
           f'tensor size (per tensor, int8 or int16, one thread; log scales)</text>']
    for idx, op in enumerate(OPS):
        ox = ml + (idx % 2) * (pw + gap)
        oy = 50 + (idx // 2) * (ph + mt + mb) + mt

        def X(n):
            return ox + (math.log2(n) - lx0) / max(lx1 - lx0, 1e-9) * pw

        def Y(v):
            v = max(v / 1e9, lo)
            return oy + ph - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * ph

        out.append(f'<text x="{ox + pw / 2}" y="{oy - 10}" text-anchor="middle" font-size="13" '
                   f'font-weight="bold">{esc(op)} ({esc(DEFAULT[op])})</text>')
        out.append(f'<rect x="{ox}" y="{oy}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        d = lo
        while d <= hi * 1.0001:
            y = Y(d * 1e9)
            out.append(f'<line x1="{ox}" x2="{ox + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{ox - 5}" y="{y + 4:.1f}" text-anchor="end">{d:g}</text>')
            d *= 10
        for n in sizes:
            x = X(n)
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{oy}" y2="{oy + ph}" stroke="#f3f3f3"/>')
            out.append(f'<text x="{x:.1f}" y="{oy + ph + 15}" text-anchor="middle">{size_label(n)}</text>')
        out.append(f'<text x="{ox + pw / 2}" y="{oy + ph + 32}" text-anchor="middle">elements</text>')
        out.append(f'<text transform="translate({ox - 42},{oy + ph / 2}) rotate(-90)" text-anchor="middle">'
                   f'Gelem/s</text>')
        for impl in [KERNEL, "simd_static", "plain_native", "plain_x86-64", "memcpy", "ort_op", "ort", "torch", "ref"]:
            pts = []
            for n in sizes:
                if impl == "memcpy":
                    v = memcpy_ips(rows, op, n)
                else:
                    var = ORT_VARIANT[op] if impl.startswith("ort") else (
                        TORCH_VARIANT.get(op, DEFAULT[op]) if impl == "torch" else DEFAULT[op])
                    v = ips(rows, (op, var, "per_tensor", impl, n))
                if v:
                    pts.append((X(n), Y(v)))
            if not pts:
                continue
            dash = ' stroke-dasharray="5,3"' if impl in ("memcpy", "ort", "simd_static", "plain_x86-64") else ""
            width_px = 2.5 if impl == KERNEL else 1.5
            out.append(f'<polyline fill="none" stroke="{COLORS[impl]}" stroke-width="{width_px}"{dash} points="' +
                       " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
            for x, y in pts:
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{COLORS[impl]}"/>')
    ly = 50 + grid_rows * (ph + mt + mb) + 10
    for i, impl in enumerate([KERNEL, "simd_static", "plain_native", "plain_x86-64", "memcpy", "ort_op", "ort", "torch", "ref"]):
        x = ml + (i % 3) * 270
        y = ly + (i // 3) * 20
        dash = ' stroke-dasharray="5,3"' if impl in ("memcpy", "ort", "simd_static", "plain_x86-64") else ""
        out.append(f'<line x1="{x}" x2="{x + 30}" y1="{y}" y2="{y}" stroke="{COLORS[impl]}" stroke-width="2.5"{dash}/>')
        out.append(f'<text x="{x + 36}" y="{y + 4}">{esc(LABELS[impl])}</text>')
    out.append(f'<text x="{ml}" y="{ly + 75}" fill="#555">ONNX Runtime and quantkit divide by the scale; PyTorch '
               f'multiplies by 1/scale (compared with quantkit\'s .mul variant in the table).</text>')
    out.append(f'<text x="{ml}" y="{ly + 109}" fill="#555">ONNX Runtime\'s requantize is DequantizeLinear(int32) → '
               f'QuantizeLinear (a float multiplier, not fixed point).</text>')
    out.append(f'<text x="{ml}" y="{ly + 92}" fill="#555">memcpy moves the same bytes (read + written) as the '
               f'operation: the memory roofline. ONNX Runtime op: one op inside a graph; session.run: one call from Node.</text>')
    out.append("</svg>")
    write(path, "\n".join(out))


def variants_svg(rows, path):
    matrix_sizes = sorted({k[4] for k in rows if k[0] in OPS and k[1] != DEFAULT[k[0]] and k[3] == KERNEL
                           and k[2] in GRANS})
    if not matrix_sizes:
        return
    entries = []
    for op in OPS:
        vs = sorted({k[1] for k in rows if k[0] == op and k[3] == KERNEL and k[4] in matrix_sizes},
                    key=variant_order)
        for var in vs:
            for g in GRANS:
                if any(ips(rows, (op, var, g, KERNEL, n)) for n in matrix_sizes):
                    entries.append((op, var, g))
    if not entries:
        return
    bar_h, gap = 7, 6
    group_h = bar_h * 2 * len(matrix_sizes) + gap
    ml, mt, pw = 300, 70, 560
    height = mt + len(entries) * group_h + 60
    width = ml + pw + 80
    vmax = max((ips(rows, (op, var, g, impl, n)) or 0)
               for op, var, g in entries for n in matrix_sizes for impl in (KERNEL, "plain_native"))
    vmax = math.ceil(vmax / 1e9 / 5) * 5 or 1

    def W(v):
        return (v / 1e9) / vmax * pw

    palette = ["#d62728", "#8c1515", "#1f77b4", "#0b3c6b"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="15">Pick a variant by looking: '
           f'Gelem/s of every rounding / scheme × granularity</text>']
    lx = ml
    for i, n in enumerate(matrix_sizes):
        for j, (impl, label) in enumerate([(KERNEL, "quantkit"), ("plain_native", "plain loop -march=native")]):
            c = palette[2 * j + (i % 2)] if len(matrix_sizes) > 1 else palette[2 * j]
            out.append(f'<rect x="{lx}" y="32" width="12" height="10" fill="{c}"/>')
            txt = f"{label}, {size_label(n)} elements"
            out.append(f'<text x="{lx + 16}" y="41">{esc(txt)}</text>')
            lx += 16 + 7 * len(txt) + 14
    for t in range(0, int(vmax) + 1, max(1, int(vmax) // 10)):
        x = ml + W(t * 1e9)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{mt - 8}" y2="{height - 45}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 30}" text-anchor="middle">{t}</text>')
    out.append(f'<text x="{ml + pw / 2}" y="{height - 12}" text-anchor="middle">Gelem/s</text>')
    y = mt
    last_op = None
    for op, var, g in entries:
        if op != last_op:
            out.append(f'<line x1="10" x2="{width - 10}" y1="{y - 3}" y2="{y - 3}" stroke="#bbb"/>')
            last_op = op
        out.append(f'<text x="{ml - 6}" y="{y + group_h / 2}" text-anchor="end">'
                   f'{esc(op)} · {esc(var)} · {esc(g)}</text>')
        by = y
        for i, n in enumerate(matrix_sizes):
            for j, impl in enumerate((KERNEL, "plain_native")):
                v = ips(rows, (op, var, g, impl, n))
                c = palette[2 * j + (i % 2)] if len(matrix_sizes) > 1 else palette[2 * j]
                if v:
                    out.append(f'<rect x="{ml}" y="{by:.1f}" width="{W(v):.1f}" height="{bar_h - 1}" fill="{c}"/>')
                    out.append(f'<text x="{ml + W(v) + 3:.1f}" y="{by + bar_h - 1:.1f}" font-size="8">'
                               f'{v / 1e9:.1f}</text>')
                by += bar_h
        y += group_h
    out.append("</svg>")
    write(path, "\n".join(out))


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    rows, contexts = parse([f for f in a.files if os.path.exists(f)])
    if not rows:
        sys.exit("render.py: no benchmark rows found")
    os.makedirs(a.out, exist_ok=True)
    markdown(rows, contexts, a.out)
    sweep_svg(rows, os.path.join(a.out, "sweep.svg"))
    variants_svg(rows, os.path.join(a.out, "variants.svg"))
    print(f"render.py: {len(rows)} rows -> {a.out}/results.md, sweep.svg, variants.svg")


if __name__ == "__main__":
    main()
