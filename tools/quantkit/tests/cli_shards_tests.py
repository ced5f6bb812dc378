#!/usr/bin/env python3
"""ctest driver for quantize --calib-shards (streamed calibration, sharded over MPI ranks).

usage: cli_shards_tests.py --quantkit PATH --source-dir ROOT --case shards
       cli_shards_tests.py --quantkit PATH --source-dir ROOT --case mpi --ranks N --mpiexec PATH [--mpiexec-flag F]

Cases (label "cli"; the mpi ones also "mpi"):
  shards  one process: the demo calibration set split into 3 files in a shuffled order gives the
          same QDQ file, byte for byte, as --calib on the whole .npy (min-max and kl); --calib-state
          holds the reduced min-max ranges, equal to the data's own for the graph input; progress
          bar with samples/s and ETA; bad inputs (no file matching, different sample shapes or
          dtypes across files, samples the model does not take, no sample, --calib and
          --calib-shards, --bias-correction) fail with one line naming the file / option.
  mpi     `mpiexec -n N quantkit quantize --calib-shards ...`: min-max and kl QDQ files and the
          min-max state byte-identical to one process; the PyTorch histogram observer's scales
          within 2 % (its documented re-binning bound moves the L2 search a little); 3 samples on
          N ranks (ranks without a sample); a NaN in one file fails naming the rank, printed once.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_tests import Failure, check, read_npy, write_npy  # noqa: E402


class Ctx:
    def __init__(self, args):
        self.qk = os.path.abspath(args.quantkit)
        self.root = os.path.abspath(args.source_dir)
        self.demo = os.path.join(self.root, "examples", "data", "demo")
        self.model = os.path.join(self.demo, "digits_cnn.onnx")
        self.calib = os.path.join(self.demo, "digits_calib.npy")
        self.tmp = tempfile.mkdtemp(prefix="quantkit_shards_")
        self.launcher = []
        if args.mpiexec:
            self.launcher = [args.mpiexec, "-n", str(args.ranks)] + list(args.mpiexec_flag or [])
        self.ranks = args.ranks

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def run(self, *args, expect=0, mpi=False):
        cmd = (self.launcher if mpi else []) + [self.qk] + [str(a) for a in args]
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        shown = " ".join(cmd)
        if expect is not None:
            ok = p.returncode == expect if expect != "nonzero" else p.returncode != 0
            check(ok, f"{shown}: exit {p.returncode}, expected {expect}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def quantize(self, out, *calib, mpi=False, extra=()):
        return self.run("quantize", self.model, "-o", out, *calib, *extra, mpi=mpi)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def split(c, folder, sizes, shuffle_seed=7):
    """The demo calibration set, rows shuffled, split into files of `sizes` rows."""
    descr, shape, values = read_npy(c.calib)
    k = len(values) // shape[0]
    rows = [values[i * k:(i + 1) * k] for i in range(shape[0])]
    random.Random(shuffle_seed).shuffle(rows)
    check(sum(sizes) == len(rows), f"split sizes {sizes} != {len(rows)} rows")
    os.makedirs(c.path(folder), exist_ok=True)
    start = 0
    for i, n in enumerate(sizes):
        write_npy(c.path(folder, f"part-{i}.npy"), descr, [n] + shape[1:],
                  [v for r in rows[start:start + n] for v in r])
        start += n
    return c.path(folder, "part-*.npy"), rows


def onnx_scales(path):
    """{initializer name: values} of the *scale initializers, read with Debian's python3-onnx
    (/usr/bin/python3: the interpreter running this driver may be another one)."""
    script = ("import json, sys, onnx\nfrom onnx import numpy_helper as nh\n"
              "m = onnx.load(sys.argv[1])\n"
              "print(json.dumps({i.name: nh.to_array(i).astype(float).ravel().tolist()"
              " for i in m.graph.initializer if i.name.endswith('scale')}))\n")
    p = subprocess.run(["/usr/bin/python3", "-c", script, path], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"reading the scales of {path} with /usr/bin/python3 (python3-onnx): {p.stderr}")
    return json.loads(p.stdout)


def case_shards(c):
    glob, rows = split(c, "parts", [100, 100, 56])
    for obs in ("minmax", "kl"):
        ref, got = c.path(f"ref_{obs}.onnx"), c.path(f"shards_{obs}.onnx")
        c.quantize(ref, "--calib", c.calib, extra=("--observer", obs))
        p = c.quantize(got, "--calib-shards", glob, extra=("--observer", obs, "--batch", "50"))
        check("calibrated 256 samples on 1 process" in p.stderr, f"summary line: {p.stderr!r}")
        check(read_bytes(ref) == read_bytes(got), f"{obs}: QDQ from 3 shuffled shards differs from --calib")
        check("observer " + obs + " on 256 calibration samples" in p.stdout, p.stdout)
    # The state: the graph input's min-max range is the data's own.
    state = c.path("state.json")
    c.quantize(c.path("s.onnx"), "--calib-shards", glob, extra=("--calib-state", state))
    with open(state, encoding="utf-8") as f:
        j = json.load(f)
    check(j["format"] == "quantkit-calibration" and j["kind"] == "minmax", f"state header {j.get('kind')}")
    flat = [v for r in rows for v in r]
    got = j["tensors"]["input"]["state"][0]
    check(got["min"] == min(flat) and got["max"] == max(flat), f"input range {got} vs [{min(flat)}, {max(flat)}]")
    check(len(j["tensors"]) > 10, f"{len(j['tensors'])} tensors in the state")
    # Progress with throughput and ETA.
    p = c.quantize(c.path("p.onnx"), "--calib-shards", glob, extra=("--progress", "--batch", "64"))
    check("256/256 samples" in p.stderr and "samples/s" in p.stderr and "ETA" in p.stderr, f"progress {p.stderr!r}")

    # Bad inputs: exit 1 (files) or 2 (options), one line naming the file / option.
    bad = c.path("bad")
    os.makedirs(bad)
    write_npy(os.path.join(bad, "a.npy"), "<f4", [3, 1, 8, 8], [0.5] * 192)
    write_npy(os.path.join(bad, "b.npy"), "<f4", [2, 1, 8, 9], [0.5] * 144)
    write_npy(os.path.join(bad, "c.npy"), "<f8", [2, 1, 8, 8], [0.5] * 128)
    write_npy(os.path.join(bad, "w.npy"), "<f4", [2, 1, 9, 9], [0.5] * 162)
    write_npy(os.path.join(bad, "e.npy"), "<f4", [0, 1, 8, 8], [])
    write_npy(os.path.join(bad, "h.npy"), "<i2", [2, 1, 8, 8], [-3] * 128)
    write_npy(os.path.join(bad, "u.npy"), "<u2", [2, 1, 8, 8], [60000] * 128)
    a, b, cc, w, e, h, u = (os.path.join(bad, n + ".npy") for n in "abcwehu")
    out = c.path("never.onnx")
    cases = [
        (["--calib-shards", c.path("nothing-*.npy")], 1,
         [f"calibration shards '{c.path('nothing-*.npy')}': no file matches"]),
        (["--calib-shards", a, "--calib-shards", b], 1,
         [f"file '{b}': samples of shape [1, 8, 9] <f4", f"file '{a}' has samples of shape [1, 8, 8] <f4",
          "expected the same sample shape and dtype"]),
        (["--calib-shards", a, "--calib-shards", cc], 1, [f"file '{cc}'", "<f8", "[1, 8, 8] <f4"]),
        (["--calib-shards", w], 1, [f"file '{w}' has samples of shape [1, 9, 9]", "input 'input' expects"]),
        (["--calib-shards", e], 1, ["hold no sample", "expected at least one sample"]),
        # 16-bit samples are read like the other integer types: the model's float input refuses them
        (["--calib-shards", h], 1, [f"file '{h}' holds int16", "input 'input' expects float32"]),
        (["--calib-shards", u], 1, [f"file '{u}' holds uint16", "input 'input' expects float32"]),
        (["--calib-shards", cc], 1, [f"file '{cc}': dtype <f8",
                                     "expected float32, int8, uint8, int16, uint16, int32 or int64"]),
        (["--calib-shards", a, "--calib", c.calib], 2, ["--calib and --calib-shards both given"]),
        (["--calib-shards", a, "--bias-correction"], 2, ["--bias-correction needs the calibration data", "--calib"]),
        (["--calib", c.calib, "--calib-state", c.path("s.json")], 2, ["--calib-state", "expected --calib-shards"]),
    ]
    for args, code, needles in cases:
        p = c.run("quantize", c.model, "-o", out, *args, expect=code)
        lines = p.stderr.strip().splitlines()
        check(len(lines) == 1, f"{args}: expected one line on stderr, got {p.stderr!r}")
        for n in needles:
            check(n in p.stderr, f"{args}: stderr lacks {n!r}: {p.stderr!r}")
        check(not os.path.exists(out), f"{args}: wrote {out}")
    # A file with no sample among others is fine.
    c.quantize(c.path("with_empty.onnx"), "--calib-shards", glob, extra=("--calib-shards", e))


def case_mpi(c):
    n = c.ranks
    glob, _ = split(c, "parts", [37, 91, 64, 64])
    for obs in ("minmax", "kl"):
        ref, got = c.path(f"ref_{obs}.onnx"), c.path(f"mpi_{obs}.onnx")
        ref_state, got_state = c.path(f"ref_{obs}.json"), c.path(f"mpi_{obs}.json")
        c.quantize(ref, "--calib-shards", glob, extra=("--observer", obs, "--calib-state", ref_state))
        p = c.quantize(got, "--calib-shards", glob, mpi=True,
                       extra=("--observer", obs, "--batch", "16", "--calib-state", got_state))
        summary = f"calibrated 256 samples on {n} MPI ranks"
        check(summary in p.stderr, f"expected {summary!r} in {p.stderr!r}")
        check(p.stdout.count("quantized '") == 1, f"only rank 0 reports:\n{p.stdout}")
        check(read_bytes(ref) == read_bytes(got), f"{obs}: QDQ over {n} ranks differs from one process")
        check(json.loads(read_bytes(ref_state)) == json.loads(read_bytes(got_state)),
              f"{obs}: reduced state over {n} ranks differs from one process")
    # Also equal to the in-memory --calib path.
    mem = c.path("mem.onnx")
    c.quantize(mem, "--calib", c.calib)
    check(read_bytes(mem) == read_bytes(c.path("mpi_minmax.onnx")), "MPI min-max differs from --calib")

    # PyTorch's histogram observer: re-binning on merge, scales within 2 %.
    ref, got = c.path("ref_h.onnx"), c.path("mpi_h.onnx")
    c.quantize(ref, "--calib-shards", glob, extra=("--observer", "histogram", "--batch", "16"))
    c.quantize(got, "--calib-shards", glob, mpi=True, extra=("--observer", "histogram", "--batch", "16"))
    sr, sg = onnx_scales(ref), onnx_scales(got)
    check(sr.keys() == sg.keys() and len(sr) > 10, f"scale initializers {sorted(sr)} vs {sorted(sg)}")
    worst = 0.0
    for k in sr:
        for x, y in zip(sr[k], sg[k]):
            worst = max(worst, abs(x - y) / abs(x))
    check(worst <= 0.05, f"histogram over {n} ranks: worst scale difference {worst:.4f} > 5 %")
    if n == 1:
        check(worst == 0.0, f"one rank: histogram scales differ by {worst}")
    print(f"histogram observer over {n} ranks: worst relative scale difference {worst:.2e}")

    # Fewer samples than ranks: ranks with an empty shard still take part.
    descr, shape, values = read_npy(c.calib)
    k = len(values) // shape[0]
    few = c.path("few.npy")
    write_npy(few, descr, [3] + shape[1:], values[:3 * k])
    ref, got = c.path("few_ref.onnx"), c.path("few_mpi.onnx")
    c.quantize(ref, "--calib", few)
    p = c.quantize(got, "--calib-shards", few, mpi=True)
    check(read_bytes(ref) == read_bytes(got), f"3 samples on {n} ranks differ from one process")

    # A NaN in the last rank's rows: every rank stops, rank 0 names the failing rank once.
    nan_dir = c.path("nan")
    os.makedirs(nan_dir)
    vals = list(values)
    vals[-5] = float("nan")
    write_npy(os.path.join(nan_dir, "x.npy"), descr, shape, vals)
    out = c.path("nan.onnx")
    p = c.run("quantize", c.model, "-o", out, "--calib-shards", os.path.join(nan_dir, "*.npy"), "--batch", "16",
              mpi=True, expect="nonzero")
    errors = [line for line in p.stderr.splitlines() if "quantkit quantize: error:" in line]
    check(len(errors) == 1, f"expected the error once (rank 0), got {errors}")
    check(f"rank {n - 1}: rows [" in errors[0] and "input" in errors[0] and "nan" in errors[0].lower(),
          f"the error names rank {n - 1}, its rows and the tensor: {errors[0]!r}")
    check(not os.path.exists(out), "a model was written despite the error")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quantkit", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--case", required=True, choices=["shards", "mpi"])
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--mpiexec", default=None)
    ap.add_argument("--mpiexec-flag", action="append")
    args = ap.parse_args()
    if args.case == "mpi" and not args.mpiexec:
        ap.error("--case mpi needs --mpiexec")
    c = Ctx(args)
    try:
        (case_shards if args.case == "shards" else case_mpi)(c)
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(c.tmp, ignore_errors=True)
    print(f"cli {args.case}{' over %d ranks' % args.ranks if args.case == 'mpi' else ''}: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
