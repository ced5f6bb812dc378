#!/usr/bin/python3
"""Golden values from PyTorch's observers, for tests/test_observer_torch_parity.cpp.

Run with Debian's interpreter (python3-torch 1.13.1 and numpy):

    /usr/bin/python3 tools/golden/gen_torch_observers.py [--out tests/golden]

Deterministic: fixed seeds, no timestamps; running it twice gives byte-identical files.
Floats are float32 values written as JSON numbers (float(np.float32(v))), so parsing as double
and narrowing recovers the float32 bits exactly. torch.set_num_threads(1) throughout.

observers_torch.json
    "generator", "torch_version", "numpy_version"
    "datasets": [{"name", "distribution", "shape": [4, 8, 32] (committed file),
                  "batches": [base64 of little-endian float32, row-major, one per batch]}]
        normal, uniform, laplace, lognormal and outlier-heavy data; the batches differ in
        scale so later batches widen the range (histogram re-binning) or stay inside it.
        "*_small" variants are scaled into (-1, 1) where PyTorch 1.13's integer histc bounds
        collapse to 0 (per-tensor observers only).
    "cases": [{"dataset", "observer", "dtype": "quint8" | "qint8",
               "qscheme": "per_tensor_affine" | "per_tensor_symmetric" |
                          "per_channel_affine" | "per_channel_symmetric",
               "ch_axis": int | null, "averaging_constant": float | null,
               "histc_bounds": "torch_1_13" | "float" | null,
               "qmin", "qmax",
               "after": [{"batches": k, "min": [f32...], "max": [f32...],
                          "scale": [f32...], "zero_point": [int...]}, ...]}]
        "after" holds the observer's state and calculate_qparams() after the first k batches
        (k = 1 .. number of batches). For HistogramObserver, min/max are the observer's
        min_val/max_val (the histogram's range, not the data's), and after the last batch of the
        quint8 per_tensor_affine cases "histogram" holds its 2048 float32 counts (base64, like
        the batches; the histogram does not depend on dtype or qscheme).
        observer: MinMaxObserver, MovingAverageMinMaxObserver, PerChannelMinMaxObserver,
        MovingAveragePerChannelMinMaxObserver, HistogramObserver.
        histc_bounds "torch_1_13" is PyTorch 1.13.1's HistogramObserver unmodified: it calls
        torch.histc(x, min=int(min_val), max=int(max_val)). "float" is the same class with that
        one call given the real bounds (min=float(min_val), max=float(max_val)) — what
        quantkit's HistogramObserver does by default; every other line is PyTorch's.
"""

import argparse
import base64
import json
import os
import sys

import numpy as np
import torch
from torch.ao.quantization.observer import (
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    PerChannelMinMaxObserver,
)

GENERATOR = "tools/golden/gen_torch_observers.py"
SHAPE = [4, 8, 32]
BATCHES = 4
SEED = 20240611


def f32(v):
    return float(np.float32(v))


def f32_list(t):
    return [f32(v) for v in np.asarray(t, dtype=np.float32).reshape(-1)]


def encode(a):
    a = np.ascontiguousarray(a, dtype="<f4")
    return base64.b64encode(a.tobytes()).decode("ascii")


class FloatBoundsHistogramObserver(HistogramObserver):
    """HistogramObserver with torch.histc given the real (float) bounds instead of int()."""

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach()
        min_val = self.min_val
        max_val = self.max_val
        same_values = min_val.item() == max_val.item()
        is_uninitialized = min_val == float("inf") and max_val == float("-inf")
        if is_uninitialized or same_values:
            min_val, max_val = torch.aminmax(x)
            self.min_val.resize_(min_val.shape)
            self.min_val.copy_(min_val)
            self.max_val.resize_(max_val.shape)
            self.max_val.copy_(max_val)
            torch.histc(x, self.bins, min=float(min_val), max=float(max_val), out=self.histogram)
        else:
            new_min, new_max = torch.aminmax(x)
            combined_min = torch.min(new_min, min_val)
            combined_max = torch.max(new_max, max_val)
            (combined_min, combined_max, downsample_rate, start_idx) = self._adjust_min_max(
                combined_min, combined_max, self.upsample_rate)
            combined_histogram = torch.histc(
                x, self.bins, min=float(combined_min), max=float(combined_max))
            if combined_min == min_val and combined_max == max_val:
                combined_histogram += self.histogram
            else:
                combined_histogram = self._combine_histograms(
                    combined_histogram, self.histogram, self.upsample_rate, downsample_rate,
                    start_idx, self.bins)
            self.histogram.detach_().resize_(combined_histogram.shape)
            self.histogram.copy_(combined_histogram)
            self.min_val.detach_().resize_(combined_min.shape)
            self.min_val.copy_(combined_min)
            self.max_val.detach_().resize_(combined_max.shape)
            self.max_val.copy_(combined_max)
        return x_orig


def make_datasets():
    rng = np.random.default_rng(SEED)
    n = int(np.prod(SHAPE))
    # Batch scales: growth, inside, growth, shrink — exercises re-binning and the same-range add.
    scales = [1.0, 0.8, 1.7, 1.1]
    out = []

    def add(name, dist, gen, scale_all=1.0):
        batches = []
        for b in range(BATCHES):
            x = gen(n) * scales[b] * scale_all
            batches.append(np.asarray(x, dtype=np.float32).reshape(SHAPE))
        out.append({"name": name, "distribution": dist, "batches": batches})

    add("normal", "normal(0.3, 2.0)", lambda m: rng.normal(0.3, 2.0, m))
    add("uniform", "uniform(-1.5, 6.0)", lambda m: rng.uniform(-1.5, 6.0, m))
    add("laplace", "laplace(0, 1.5)", lambda m: rng.laplace(0.0, 1.5, m))
    add("lognormal", "lognormal(0, 0.75)", lambda m: rng.lognormal(0.0, 0.75, m))

    def outliers(m):
        x = rng.normal(0.0, 0.5, m)
        idx = rng.choice(m, size=6, replace=False)
        x[idx] = rng.choice([-1.0, 1.0], size=6) * rng.uniform(8.0, 25.0, 6)
        return x

    add("outliers", "normal(0, 0.5) + 6 outliers of |x| in [8, 25]", outliers)
    add("normal_small", "normal(0, 0.12)", lambda m: rng.normal(0.0, 0.12, m))
    add("laplace_small", "laplace(0.05, 0.08)", lambda m: rng.laplace(0.05, 0.08, m))
    return out


def make_observer(kind, dtype, qscheme, ch_axis, histc_bounds):
    kw = dict(dtype=dtype, qscheme=qscheme)
    if kind == "MinMaxObserver":
        return MinMaxObserver(**kw)
    if kind == "MovingAverageMinMaxObserver":
        return MovingAverageMinMaxObserver(averaging_constant=0.01, **kw)
    if kind == "PerChannelMinMaxObserver":
        return PerChannelMinMaxObserver(ch_axis=ch_axis, **kw)
    if kind == "MovingAveragePerChannelMinMaxObserver":
        return MovingAveragePerChannelMinMaxObserver(averaging_constant=0.01, ch_axis=ch_axis, **kw)
    if kind == "HistogramObserver":
        cls = HistogramObserver if histc_bounds == "torch_1_13" else FloatBoundsHistogramObserver
        return cls(bins=2048, upsample_rate=128, **kw)
    raise ValueError(kind)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden"))
    ap.add_argument("--shape", default=None,
                    help="stress runs only: batch shape, e.g. 16,64,1024 (committed file: 4,8,32)")
    ap.add_argument("--seed", type=int, default=None, help="stress runs only")
    ap.add_argument("--name", default="observers_torch.json")
    args = ap.parse_args()
    global SHAPE, SEED
    if args.shape:
        SHAPE = [int(v) for v in args.shape.split(",")]
    if args.seed is not None:
        SEED = args.seed
    torch.set_num_threads(1)
    torch.manual_seed(0)

    datasets = make_datasets()
    dtypes = {"quint8": torch.quint8, "qint8": torch.qint8}
    cases = []
    for ds in datasets:
        for kind in ["MinMaxObserver", "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
                     "MovingAveragePerChannelMinMaxObserver", "HistogramObserver"]:
            per_channel = "PerChannel" in kind
            if per_channel and ds["name"].endswith("_small"):
                continue  # (the *_small sets are for HistogramObserver's histc bounds)
            schemes = ["per_channel_affine", "per_channel_symmetric"] if per_channel else \
                      ["per_tensor_affine", "per_tensor_symmetric"]
            axes = [0, 1, 2] if per_channel else [None]
            bounds = ["torch_1_13", "float"] if kind == "HistogramObserver" else [None]
            for dtype_name, dtype in dtypes.items():
                for qscheme_name in schemes:
                    for axis in axes:
                        for hb in bounds:
                            obs = make_observer(kind, dtype, getattr(torch, qscheme_name), axis, hb)
                            after = []
                            for k, batch in enumerate(ds["batches"]):
                                obs(torch.from_numpy(batch.copy()))
                                scale, zp = obs.calculate_qparams()
                                rec = {"batches": k + 1,
                                       "min": f32_list(obs.min_val),
                                       "max": f32_list(obs.max_val),
                                       "scale": f32_list(scale),
                                       "zero_point": [int(v) for v in zp.reshape(-1).tolist()]}
                                if (kind == "HistogramObserver" and k + 1 == len(ds["batches"])
                                        and dtype_name == "quint8" and qscheme_name.endswith("affine")):
                                    rec["histogram"] = encode(obs.histogram.numpy())
                                after.append(rec)
                            cases.append({
                                "dataset": ds["name"], "observer": kind, "dtype": dtype_name,
                                "qscheme": qscheme_name, "ch_axis": axis,
                                "averaging_constant": 0.01 if "MovingAverage" in kind else None,
                                "histc_bounds": hb,
                                "qmin": int(obs.quant_min), "qmax": int(obs.quant_max),
                                "after": after})
    doc = {
        "generator": GENERATOR,
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "datasets": [{"name": d["name"], "distribution": d["distribution"], "shape": list(SHAPE),
                      "batches": [encode(b) for b in d["batches"]]} for d in datasets],
        "cases": cases,
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, args.name)
    with open(path, "w") as f:
        f.write("{\n")
        keys = [k for k in doc if k != "cases"]
        for k in keys:
            f.write(json.dumps(k) + ": " + json.dumps(doc[k]) + ",\n")
        f.write('"cases": [\n')
        f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in cases))
        f.write("\n]\n}\n")
    print("wrote", path, len(cases), "cases", file=sys.stderr)


if __name__ == "__main__":
    main()
