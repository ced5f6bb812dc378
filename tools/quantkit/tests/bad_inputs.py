#!/usr/bin/env python3
"""The bad-input catalogue of the quantkit tool (ctest, label "cli"): hostile or broken models,
.npy files and option values given to quantize, run, calibrate, compare and export-cpp. Every case
must exit non-zero with exactly one line on stderr, "quantkit <cmd>: error: ...", that contains
the listed fragments (the file/node/option, the value found, what was expected), print nothing on
stdout, and leave no output file (nor temporary file) behind.

usage: bad_inputs.py --quantkit PATH --source-dir ROOT --case catalogue|kill

  catalogue  the table CASES below (inputs in data/bad/, made by make_bad_inputs.py)
  kill       atomic outputs: each writer (run -> .npy, quantize -> .onnx, export-cpp -> .hpp) is
             SIGKILLed in the middle of writing (QUANTKIT_TEST_STALL_WRITE makes it stop after
             half of its first write and signal that); the existing file under the final name must
             be untouched and the partial bytes only in the temporary file.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def catalogue(qk, root, tmp):
    bad = os.path.join(root, "tools", "quantkit", "tests", "data", "bad")
    demo = os.path.join(root, "examples", "data", "demo")

    def b(name):
        return os.path.join(bad, name)

    def t(name):
        return os.path.join(tmp, name)

    small = b("small_float.onnx")
    x = b("x_2x8.npy")
    cnn = os.path.join(demo, "digits_cnn.onnx")
    calib = os.path.join(demo, "digits_calib.npy")
    empty = t("empty.onnx")
    open(empty, "wb").close()
    truncated = t("truncated.onnx")
    with open(small, "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[: len(data) // 2])
    missing = t("missing.onnx")
    out = t("out.onnx")
    y = t("y.npy")
    hpp = t("model.hpp")
    # Quantize the small model once: export-cpp and compare need a QDQ model.
    qdq = t("small_qdq.onnx")
    p = subprocess.run([qk, "quantize", small, "-o", qdq, "--calib", x], capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"quantize {small}: exit {p.returncode}: {p.stderr}")
    readonly = t("readonly")
    os.mkdir(readonly, 0o555)

    Q = ["quantize"]
    cases = [
        # --- models: missing, empty, truncated, random bytes, unsupported, broken graphs
        (Q + [missing, "-o", out, "--calib", x], [f"file '{missing}'", "cannot open"]),
        (Q + [empty, "-o", out, "--calib", x], [f"file '{empty}'", "not a valid ONNX model", "empty"]),
        (Q + [truncated, "-o", out, "--calib", x], [f"file '{truncated}'", "not a valid ONNX model"]),
        (Q + [b("random.bin"), "-o", out, "--calib", x], ["random.bin'", "not a valid ONNX model"]),
        (Q + [b("unsupported_op.onnx"), "-o", out, "--calib", x], ["unsupported_op.onnx", "'hm'", "Hardmax"]),
        (Q + [b("missing_initializer.onnx"), "-o", out, "--calib", x],
         ["missing_initializer.onnx", "'mm'", "input 'w' is not a graph input, an initializer or any node's output"]),
        (Q + [b("cycle.onnx"), "-o", out, "--calib", x], ["cycle.onnx", "part of a cycle"]),
        (Q + [b("dangling_output.onnx"), "-o", out, "--calib", x],
         ["dangling_output.onnx", "graph output 'z' is not produced by any node"]),
        (Q + [b("truncated_initializer.onnx"), "-o", out, "--calib", x],
         ["truncated_initializer.onnx", "initializer 'w'", "needs 128 bytes; raw_data holds 124"]),
        (Q + [b("huge_initializer.onnx"), "-o", out, "--calib", x],
         ["huge_initializer.onnx", "initializer 'w'", "[1048576, 1048576]", "expected a smaller tensor"]),
        (Q + [b("external_data.onnx"), "-o", out, "--calib", x],
         ["external_data.onnx", "initializer 'w'", "externally", "weights.bin", "not supported"]),
        (Q + [b("string_input.onnx"), "-o", out, "--calib", x], ["string_input.onnx", "'x'", "STRING", "expected FLOAT"]),
        (["run", b("unsupported_op.onnx"), "--input", x, "-o", y], ["unsupported_op.onnx", "Hardmax"]),
        (["run", b("cycle.onnx"), "--input", x, "-o", y], ["cycle.onnx", "part of a cycle"]),
        (["run", b("random.bin"), "--input", x, "-o", y], ["random.bin'", "not a valid ONNX model"]),
        (["compare", small, b("missing_initializer.onnx"), "--input", x], ["missing_initializer.onnx", "'w'"]),
        (["export-cpp", b("random.bin"), "-o", hpp], ["random.bin'", "not a valid ONNX model"]),
        (["export-cpp", small, "-o", hpp], [small, "would stay float", "mm (MatMul)"]),
        # --- QDQ models with bad quantization parameters
        (["run", b("qdq_zero_scale.onnx"), "--input", x, "-o", y], ["qdq_zero_scale.onnx", "'quant'", "scale", "0"]),
        (["run", b("qdq_negative_scale.onnx"), "--input", x, "-o", y], ["qdq_negative_scale.onnx", "'quant'", "-0.5"]),
        (["run", b("qdq_nan_scale.onnx"), "--input", x, "-o", y], ["qdq_nan_scale.onnx", "'quant'", "nan"]),
        (["run", b("qdq_zero_point_out_of_range.onnx"), "--input", x, "-o", y],
         ["qdq_zero_point_out_of_range.onnx", "'z'", "300", "out of range for uint8"]),
        (["export-cpp", b("qdq_zero_scale.onnx"), "-o", hpp], ["qdq_zero_scale.onnx", "scale"]),
        (["compare", small, b("qdq_negative_scale.onnx"), "--input", x], ["qdq_negative_scale.onnx", "-0.5"]),
        # --- input data: wrong rank / dtype, Fortran order, truncated, NaN/Inf, empty
        (["run", small, "--input", b("x_rank3.npy"), "-o", y], ["'x'", "[2, 1, 8]", "[2, 8]"]),
        (["run", small, "--input", b("x_int32.npy"), "-o", y], ["x_int32.npy", "int32", "float32"]),
        (["run", small, "--input", b("fortran.npy"), "-o", y], ["fortran.npy", "Fortran", "expected C order"]),
        (["run", small, "--input", b("truncated.npy"), "-o", y], ["truncated.npy", "needs 64 bytes", "has 59"]),
        (["run", small, "--input", b("bigendian.npy"), "-o", y], ["bigendian.npy", "'>f4'", "expected little-endian"]),
        (["run", small, "--input", b("bad_header.npy"), "-o", y], ["bad_header.npy", "malformed shape"]),
        (["run", small, "--input", b("random.bin"), "-o", y], ["random.bin'", "not a .npy file"]),
        (Q + [small, "-o", out, "--calib", b("x_nan.npy")], ["tensor 'x'", "found nan at index [0, 7]", "expected finite"]),
        (Q + [small, "-o", out, "--calib", b("x_inf.npy")], ["tensor 'x'", "found inf at index [0, 7]", "expected finite"]),
        (Q + [small, "-o", out, "--calib", b("x_empty.npy")], ["x_empty.npy", "[0, 8]", "expects [2, 8]"]),
        (Q + [cnn, "-o", out, "--calib", b("digits_empty.npy")],
         ["--calib", "input 'input'", "[0, 1, 8, 8]", "expected at least one sample"]),
        (Q + [small, "-o", out, "--calib", b("fortran.npy")], ["fortran.npy", "Fortran"]),
        (["calibrate", b("x_nan.npy")], ["x_nan.npy", "found nan at index [0, 7]", "expected finite"]),
        (["calibrate", b("x_empty.npy")], ["x_empty.npy", "[0, 8] has no values", "expected at least one"]),
        (["calibrate", b("truncated.npy")], ["truncated.npy", "needs 64 bytes"]),
        (["compare", small, qdq, "--input", b("x_int32.npy")], ["x_int32.npy", "int32", "float32"]),
        # --- option values
        (Q + [cnn, "-o", out, "--calib", calib, "--weight-bits", "0"], ["--weight-bits 0", "expected an integer in"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--weight-bits", "1"], ["--weight-bits 1", "expected 4, 8 or 16"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--weight-bits", "33"], ["--weight-bits 33", "expected 4, 8 or 16"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--act-bits", "33"], ["--act-bits 33", "expected 8 or 16"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--weight-granularity", "per-group:-8"],
         ["--weight-granularity 'per-group:-8'", "expected a positive integer"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--weight-granularity", "per-group:0"],
         ["--weight-granularity 'per-group:0'", "expected a positive integer"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--observer", "median"], ["--observer 'median'", "expected minmax"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--rounding", "banker"], ["--rounding 'banker'", "expected half-even"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--scale", "log2"], ["--scale 'log2'", "expected float"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--observer", "percentile:0"], ["percentile 0", "expected P in (0, 100]"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--observer", "percentile:100.5"],
         ["percentile 100.5", "expected P in (0, 100]"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--observer", "percentile:-3"], ["percentile -3", "expected P in (0, 100]"]),
        (Q + [cnn, "-o", out, "--calib", calib, "--keep-float", "/conv9/Conv"],
         ["--keep-float: node '/conv9/Conv' is not in model"]),
        (["calibrate", x, "--bits", "0"], ["--bits 0", "expected an integer in [2, 16]"]),
        (["calibrate", x, "--bits", "33"], ["--bits 33", "expected an integer in [2, 16]"]),
        (["calibrate", x, "--observer", "percentile:250"], ["percentile 250", "expected P in (0, 100]"]),
        (["calibrate", x, "--convention", "numpy"], ["--convention", "'numpy'", "pytorch"]),
        (["run", qdq, "--input", x, "-o", y, "--mode", "int", "--scale", "pow3"], ["--scale", "'pow3'"]),
        (["export-cpp", qdq, "-o", hpp, "--scale", "pow3"], ["--scale", "'pow3'"]),
        (["compare", small, qdq, "--input", x, "--samples", "0"], ["--samples", "0"]),
        # --- output paths
        (Q + [small, "-o", t("no_such_dir/out.onnx"), "--calib", x], ["no_such_dir", "does not exist"]),
        (["run", small, "--input", x, "-o", t("no_such_dir/y.npy")], ["no_such_dir", "does not exist"]),
        (["export-cpp", qdq, "-o", t("no_such_dir/m.hpp")], ["no_such_dir", "does not exist"]),
    ]
    if os.geteuid() != 0:
        # As root (CI) a read-only folder is writable: these two only run as a normal user.
        cases += [
            (Q + [small, "-o", os.path.join(readonly, "out.onnx"), "--calib", x], [readonly, "Permission denied"]),
            (["run", small, "--input", x, "-o", os.path.join(readonly, "y.npy")], [readonly, "Permission denied"]),
        ]
    else:
        print("  (running as root: the read-only output folder cases are skipped, root may write there)")

    failures = []
    for args, texts in cases:
        before = set(os.listdir(tmp))
        p = subprocess.run([qk] + args, capture_output=True, text=True, timeout=600)
        shown = "quantkit " + " ".join(args)
        lines = p.stderr.splitlines()
        problems = []
        if p.returncode in (0,) or p.returncode < 0:
            problems.append(f"exit {p.returncode}")
        if len(lines) != 1 or not p.stderr.endswith("\n"):
            problems.append(f"stderr is not one line: {p.stderr!r}")
        elif not (lines[0].startswith("quantkit ") and ": error: " in lines[0]):
            problems.append(f"not a quantkit error line: {lines[0]!r}")
        else:
            for frag in texts:
                if frag not in lines[0]:
                    problems.append(f"message lacks {frag!r}")
        if p.stdout:
            problems.append(f"printed to stdout: {p.stdout[:200]!r}")
        new = set(os.listdir(tmp)) - before
        if new:
            problems.append(f"left files behind: {sorted(new)}")
            for n in new:
                path = os.path.join(tmp, n)
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        if problems:
            failures.append(f"{shown}\n    -> {'; '.join(problems)}\n    stderr: {p.stderr.strip()[:400]}")
        else:
            print(f"  ok (exit {p.returncode}): {lines[0]}")
    print(f"{len(cases) - len(failures)} of {len(cases)} cases pass")
    check(not failures, f"{len(failures)} case(s) failed:\n" + "\n".join(failures))


def kill_mid_write(qk, root, tmp):
    bad = os.path.join(root, "tools", "quantkit", "tests", "data", "bad")
    small = os.path.join(bad, "small_float.onnx")
    x = os.path.join(bad, "x_2x8.npy")
    qdq = os.path.join(tmp, "qdq.onnx")
    p = subprocess.run([qk, "quantize", small, "-o", qdq, "--calib", x], capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"quantize: {p.stderr}")
    for label, target, args in (
            ("run -> .npy", "y.npy", ["run", small, "--input", x, "-o"]),
            ("quantize -> .onnx", "model.onnx", ["quantize", small, "--calib", x, "-o"]),
            ("export-cpp -> .hpp", "model.hpp", ["export-cpp", qdq, "-o"])):
        folder = os.path.join(tmp, target + ".d")
        os.mkdir(folder)
        final = os.path.join(folder, target)
        old = b"the previous file, which must survive\n" * 3
        with open(final, "wb") as f:
            f.write(old)
        marker = os.path.join(tmp, target + ".stalled")
        env = dict(os.environ, QUANTKIT_TEST_STALL_WRITE=marker)
        proc = subprocess.Popen([qk] + args + [final], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300
        while not os.path.exists(marker) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if not os.path.exists(marker):
            proc.kill()
            _, err = proc.communicate()
            raise Failure(f"{label}: the writer never stalled (exit {proc.returncode}): {err.decode()[:400]}")
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        check(proc.returncode == -signal.SIGKILL, f"{label}: exit {proc.returncode}, expected SIGKILL")
        with open(final, "rb") as f:
            now = f.read()
        check(now == old, f"{label}: {final} changed after the kill ({len(now)} bytes)")
        temps = [n for n in os.listdir(folder) if n != target]
        check(len(temps) == 1 and temps[0].startswith(target + ".tmp-quantkit-"),
              f"{label}: expected one temporary file beside {target}, found {temps}")
        size = os.path.getsize(os.path.join(folder, temps[0]))
        check(size > 0, f"{label}: the temporary file is empty: the kill did not happen mid-write")
        print(f"  {label}: killed mid-write ({size} bytes in {temps[0]}); {target} untouched")
        # Without the hook the same command replaces the file completely.
        p = subprocess.run([qk] + args + [final], capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"{label}: rerun failed: {p.stderr}")
        with open(final, "rb") as f:
            check(f.read() != old, f"{label}: the rerun did not replace {final}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quantkit", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--case", required=True, choices=["catalogue", "kill"])
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="quantkit_bad_")
    try:
        (catalogue if args.case == "catalogue" else kill_mid_write)(os.path.abspath(args.quantkit),
                                                                    os.path.abspath(args.source_dir), tmp)
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"bad inputs {args.case}: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
