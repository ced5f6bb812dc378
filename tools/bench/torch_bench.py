#!/usr/bin/python3
"""Times PyTorch's quantization ops (1 thread) on the sizes and data of bench_kernels and
writes Google-Benchmark-shaped JSON (name, size, bpe, items_per_second, aggregate_name
"median") for tools/bench/render.py.

  quantize/half_even.mul/per_tensor     torch.quantize_per_tensor(x, s, z, torch.qint8)
  quantize/half_even.mul/per_channel    torch.quantize_per_channel(x[64, n/64], s, z, 0, torch.qint8)
  dequantize/linear/per_tensor|channel  q.dequantize()
  fake_quantize/half_even.mul/per_*     torch.fake_quantize_per_{tensor,channel}_affine
PyTorch multiplies by the reciprocal scale (x * (1/s), ties to even), so its rows are named
after quantkit's "half_even.mul" variant. It has no per-group op and no int32 requantize.

Each call is timed alone (time.perf_counter_ns) for at least --min_time seconds and the
median kept (a shared machine's preemptions do not move it); the result is the median of
--repetitions repetitions. Times include the Python call and output allocation: what a
PyTorch user pays per call (at 16M elements that overhead is negligible).

usage: torch_bench.py OUT.json SIZE [SIZE...] [--min_time=0.2] [--repetitions=3]
"""
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch

CHANNELS = 64


def params(count):
    """bench_kernels' make_params for 1 or `count` channels."""
    i = np.arange(count)
    if count == 1:
        return np.float32(1.0 / 127.0), 2
    scale = ((0.5 + (i % 97) / 97.0) / 127.0).astype(np.float32)
    zp = ((i % 5) - 2).astype(np.int64)
    return torch.from_numpy(scale).double(), torch.from_numpy(zp)


def cases(n):
    rng = np.random.default_rng(20240611)
    x = torch.from_numpy(rng.uniform(-1.1, 1.1, n).astype(np.float32))
    s, z = params(1)
    s = float(s)
    xc = x.reshape(CHANNELS, n // CHANNELS)
    sc, zc = params(CHANNELS)
    zc32 = zc.int()
    sc32 = sc.float()
    qt = torch.quantize_per_tensor(x, s, z, torch.qint8)
    qc = torch.quantize_per_channel(xc, sc, zc, 0, torch.qint8)
    return [
        ("quantize/half_even.mul/per_tensor", 5, lambda: torch.quantize_per_tensor(x, s, z, torch.qint8)),
        ("quantize/half_even.mul/per_channel", 5, lambda: torch.quantize_per_channel(xc, sc, zc, 0, torch.qint8)),
        ("dequantize/linear/per_tensor", 5, lambda: qt.dequantize()),
        ("dequantize/linear/per_channel", 5, lambda: qc.dequantize()),
        ("fake_quantize/half_even.mul/per_tensor", 8,
         lambda: torch.fake_quantize_per_tensor_affine(x, s, z, -128, 127)),
        ("fake_quantize/half_even.mul/per_channel", 8,
         lambda: torch.fake_quantize_per_channel_affine(xc, sc32, zc32, 0, -128, 127)),
    ]


def time_call(fn, min_time, repetitions):
    warm = time.perf_counter()
    while time.perf_counter() - warm < min(0.05, min_time):
        fn()
    medians = []
    for _ in range(repetitions):
        times = []
        start = time.perf_counter()
        while time.perf_counter() - start < min_time or len(times) < 5:
            t0 = time.perf_counter_ns()
            fn()
            times.append((time.perf_counter_ns() - t0) * 1e-9)
        medians.append(statistics.median(times))
    return statistics.median(medians)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    if len(args) < 2:
        sys.exit(__doc__)
    out_path, sizes = args[0], [int(a) for a in args[1:]]
    min_time = float(opts.get("min_time", 0.2))
    repetitions = int(opts.get("repetitions", 3))
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    rows = []
    for n in sizes:
        for bench, bpe, fn in cases(n):
            t = time_call(fn, min_time, repetitions)
            name = f"{bench}/torch/{n}"
            rows.append({
                "name": name, "run_name": name, "run_type": "aggregate", "aggregate_name": "median",
                "repetitions": repetitions, "real_time": t * 1e9, "cpu_time": t * 1e9,
                "time_unit": "ns", "size": n, "bpe": bpe, "items_per_second": n / t,
                "bytes_per_second": n * bpe / t,
            })
            print(f"torch_bench: {bench}/{n}: {t * 1e6:.1f} us ({n / t / 1e9:.2f} Gelem/s)",
                  file=sys.stderr)
    out = {
        "context": {
            "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "host_name": platform.node(),
            "executable": "torch_bench.py", "peer": f"PyTorch {torch.__version__}",
            "quantized_engine": torch.backends.quantized.engine,
            "threads": "torch.set_num_threads(1)", "time": "median wall time of single calls",
            "min_time": min_time, "repetitions": repetitions, "num_cpus": os.cpu_count(),
        },
        "benchmarks": rows,
    }
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, out_path)


if __name__ == "__main__":
    main()
