#!/usr/bin/python3
"""Times PyTorch's observers (1 thread) on the batches bench_observers uses and writes
Google-Benchmark-shaped JSON for tools/bench/render_observers.py:

  observe/minmax/per_tensor/torch/<n>          MinMaxObserver()(x)
  observe/minmax/per_channel64/torch/<n>       PerChannelMinMaxObserver(ch_axis=0)(x[64, n/64])
  observe/histogram.torch113/per_tensor/torch/<n>   HistogramObserver()(x)  (2048 bins)
  ranges/histogram/per_tensor/torch/2048       HistogramObserver.calculate_qparams() (quint8)

Data: 4 batches of n normal values with standard deviations 1, 1.125, 1.25, 1.375, cycled (as
bench_observers). Each forward call is timed alone; the median over at least --min_time seconds,
then the median of --repetitions repetitions.

usage: torch_observers.py OUT.json SIZE [SIZE...] [--min_time=0.5] [--repetitions=3]
"""
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch
from torch.ao.quantization.observer import (HistogramObserver, MinMaxObserver,
                                            PerChannelMinMaxObserver)

BATCHES = 4
CHANNELS = 64


def batches(n):
    rng = np.random.default_rng(20241122)
    return [torch.from_numpy((rng.standard_normal(n) * (1.0 + b / 8.0)).astype(np.float32))
            for b in range(BATCHES)]


def time_cycle(make, data, min_time, repetitions):
    """Median time of one observer forward over the cycled batches."""
    obs = make()
    for x in data:  # settle the range, as bench_observers' first iterations do
        obs(x)
    medians = []
    for _ in range(repetitions):
        times = []
        start = time.perf_counter()
        i = 0
        while time.perf_counter() - start < min_time or len(times) < 5:
            x = data[i % BATCHES]
            t0 = time.perf_counter_ns()
            obs(x)
            times.append((time.perf_counter_ns() - t0) * 1e-9)
            i += 1
        medians.append(statistics.median(times))
    return statistics.median(medians)


def time_call(fn, min_time, repetitions):
    medians = []
    for _ in range(repetitions):
        times = []
        start = time.perf_counter()
        while time.perf_counter() - start < min_time or len(times) < 3:
            t0 = time.perf_counter_ns()
            fn()
            times.append((time.perf_counter_ns() - t0) * 1e-9)
        medians.append(statistics.median(times))
    return statistics.median(medians)


def row(name, n, t, repetitions):
    return {"name": name, "run_name": name, "run_type": "aggregate", "aggregate_name": "median",
            "repetitions": repetitions, "real_time": t * 1e9, "cpu_time": t * 1e9, "time_unit": "ns",
            "size": n, "bpe": 4, "items_per_second": n / t, "bytes_per_second": n * 4 / t}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    if len(args) < 2:
        sys.exit(__doc__)
    out_path, sizes = args[0], [int(a) for a in args[1:]]
    min_time = float(opts.get("min_time", 0.5))
    repetitions = int(opts.get("repetitions", 3))
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    rows = []

    def report(name, n, t):
        rows.append(row(name, n, t, repetitions))
        print(f"torch_observers: {name}: {t * 1e3:.3f} ms ({n / t / 1e9:.3f} Gelem/s)", file=sys.stderr)

    with torch.no_grad():
        for n in sizes:
            data = batches(n)
            report(f"observe/minmax/per_tensor/torch/{n}", n,
                   time_cycle(lambda: MinMaxObserver(), data, min_time, repetitions))
            data_c = [x.reshape(CHANNELS, n // CHANNELS) for x in data]
            report(f"observe/minmax/per_channel64/torch/{n}", n,
                   time_cycle(lambda: PerChannelMinMaxObserver(ch_axis=0), data_c, min_time, repetitions))
            report(f"observe/histogram.torch113/per_tensor/torch/{n}", n,
                   time_cycle(lambda: HistogramObserver(), data, min_time, repetitions))
        data = batches(1 << 20)
        h = HistogramObserver()
        for x in data:
            h(x)
        t = time_call(h.calculate_qparams, min_time, repetitions)
        rows.append(row("ranges/histogram/per_tensor/torch/2048", 2048, t, repetitions))
        print(f"torch_observers: calculate_qparams: {t * 1e3:.3f} ms", file=sys.stderr)

    out = {"context": {"date": time.strftime("%Y-%m-%dT%H:%M:%S"), "host_name": platform.node(),
                       "executable": "torch_observers.py", "peer": f"PyTorch {torch.__version__}",
                       "threads": "torch.set_num_threads(1)", "time": "median wall time of single calls",
                       "min_time": min_time, "repetitions": repetitions, "num_cpus": os.cpu_count()},
           "benchmarks": rows}
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, out_path)


if __name__ == "__main__":
    main()
