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

observers_reference.json — KL (TensorRT entropy) and percentile reference values computed here
by deliberately plain numpy/scipy code, independent of quantkit's C++:
    "datasets": [{"name", "distribution", "data": base64 float32 (8192 values)}]
    "grid": {"bins": 4096, "rule": text} — the histogram quantkit's GridHistogram keeps: bin
        width w = 2^e, e the smallest integer >= max(-127, ceil(log2(max|x|)) - 30) such that
        floor(max/w) - floor(min/w) < bins; bin j covers [(base + j) w, (base + j + 1) w),
        base = floor(min / w). The model: each non-empty bin's values spread uniformly over the
        bin clipped to [min, max].
    "percentile": [{"dataset", "p", "side": "abs" | "two_sided", "range": [lo, hi] (float64),
                    "raw": [lo, hi] (numpy quantiles of the raw data, method "linear"),
                    "bin_width": w}]
        abs: t = the p-quantile of |x| under the model, range [max(min(min, 0), -t),
        min(max(max, 0), t)];
        two_sided: the (1-p)/2 and 1-(1-p)/2 quantiles.
    "kl_histograms": {name: base64 float64, 2048 bins over [0, max|x|]}
    "kl": [{"dataset" | "synthetic", "histogram": key of kl_histograms, "levels", "start_bin",
            "zero_bin_fix", "amax": max|x| (float64), "bin": i, "divergence": KL at i,
            "threshold": i * amax / 2048}]
        The histogram of |x| under the model resampled to 2048 equal bins by overlap; then
        pytorch-quantization's published _compute_amax_entropy, written out with np.linspace,
        np.digitize, collections.Counter and scipy.stats.entropy (the last minimum wins).
        "synthetic" cases give a histogram directly (fractional counts, empty bins).
"""

import argparse
import collections
import base64
import json
import os
import sys

import numpy as np
import scipy
import scipy.stats
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


# ----------------------------------------------------------------------------------------------
# observers_reference.json: plain re-implementations for KL and percentile.

GRID_BINS = 4096


def grid_of(xmin, xmax, bins):
    """quantkit's GridHistogram grid (exponent, base) for the range [xmin, xmax]."""
    xmin, xmax = float(xmin), float(xmax)
    amax = max(abs(xmin), abs(xmax))

    def floor_log2(v):
        _, k = np.frexp(v)
        return int(k) - 1

    e = -127
    if amax > 0:
        f = floor_log2(amax)
        ceil = f if 2.0 ** f == amax else f + 1
        e = max(e, ceil - 30)
    span = xmax - xmin
    if span > 0:
        e = max(e, floor_log2(span / bins) - 1)
    while True:
        w = 2.0 ** e
        a = int(np.floor(xmin / w))
        b = int(np.floor(xmax / w))
        if b - a < bins:
            return e, a
        e += 1


def model_pieces(x, bins=GRID_BINS):
    """Non-empty bins as (lo, hi, count), clipped to [min, max]."""
    x = np.asarray(x, dtype=np.float64)
    xmin, xmax = x.min(), x.max()
    e, base = grid_of(xmin, xmax, bins)
    w = 2.0 ** e
    idx = np.floor(x / w).astype(np.int64) - base
    counts = np.bincount(idx, minlength=bins)
    pieces = []
    for j in np.nonzero(counts)[0]:
        lo = max((base + j) * w, xmin)
        hi = min((base + j + 1) * w, xmax)
        pieces.append((lo, hi, float(counts[j])))
    return pieces, w


def fold(pieces):
    out = []
    for lo, hi, c in pieces:
        if lo >= 0:
            out.append((lo, hi, c))
        elif hi <= 0:
            out.append((-hi, -lo, c))
        else:
            out.append((0.0, -lo, c * (-lo) / (hi - lo)))
            out.append((0.0, hi, c * hi / (hi - lo)))
    return out


def cdf_at(pieces, t):
    total = 0.0
    for lo, hi, c in pieces:
        if hi > lo:
            total += c * min(max((t - lo) / (hi - lo), 0.0), 1.0)
        elif t >= lo:
            total += c
    return total


def model_quantile(pieces, f):
    """The smallest t with F(t) >= f * total, F the model's cumulative count."""
    total = sum(c for _, _, c in pieces)
    target = f * total
    points = sorted(set([p[0] for p in pieces] + [p[1] for p in pieces]))
    if target <= 0:
        return points[0]
    prev_x, prev_f = None, 0.0
    for x in points:
        fx = cdf_at(pieces, x)
        mass = sum(c for lo, hi, c in pieces if lo == hi == x)
        left = fx - mass  # F just below x: F is linear between breakpoints
        if prev_x is not None and left >= target and left > prev_f:
            return prev_x + (x - prev_x) * (target - prev_f) / (left - prev_f)
        if fx >= target:
            return x
        prev_x, prev_f = x, fx
    return points[-1]


def kl_reference(hist, levels, start_bin, zero_bin_fix):
    """pytorch-quantization's _compute_amax_entropy, as published, on one histogram."""
    bins = np.array(hist, dtype=np.float64)
    if zero_bin_fix:
        bins[0] = bins[1]
    divergences = []
    arguments = []
    new_density_counts = np.zeros(levels, dtype=np.float64)
    for i in range(start_bin, len(bins) + 1):
        new_density_counts.fill(0)
        space = np.linspace(0, i, num=levels + 1)
        digitized_space = np.digitize(range(i), space) - 1
        digitized_space[bins[:i] == 0] = -1
        for idx, digitized in enumerate(digitized_space):
            if digitized != -1:
                new_density_counts[digitized] += bins[idx]
        counter = collections.Counter(digitized_space)
        for key, val in counter.items():
            if key != -1:
                new_density_counts[key] = new_density_counts[key] / val
        new_density = np.zeros(i, dtype=np.float64)
        for idx, digitized in enumerate(digitized_space):
            if digitized != -1:
                new_density[idx] = new_density_counts[digitized]
        reference_density = np.array(bins[:len(digitized_space)])
        reference_density[-1] += np.sum(bins[i:])
        divergences.append(scipy.stats.entropy(reference_density, new_density))
        arguments.append(i)
    divergences = np.array(divergences)
    last = len(divergences) - 1 - int(np.argmin(divergences[::-1]))
    return arguments[last], float(divergences[last])


def resample(pieces, top, nbins):
    out = np.zeros(nbins, dtype=np.float64)
    w = top / nbins
    for lo, hi, c in pieces:
        if not hi > lo:
            out[min(max(int(np.floor(lo / w)), 0), nbins - 1)] += c
            continue
        k0 = min(max(int(np.floor(lo / w)), 0), nbins - 1)
        k1 = min(max(int(np.floor(hi / w)), 0), nbins - 1)
        if k0 == k1:
            out[k0] += c
            continue
        rho = c / (hi - lo)
        assigned = 0.0
        for k in range(k0, k1):
            a = max(lo, w * k)
            b = min(hi, w * (k + 1))
            part = rho * (b - a) if b > a else 0.0
            out[k] += part
            assigned += part
        out[k1] += max(0.0, c - assigned)
    return out


def encode64(a):
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f8").tobytes()).decode("ascii")


def make_reference(out_dir):
    rng = np.random.default_rng(99)
    n = 8192
    sets = []

    def add(name, dist, x):
        sets.append({"name": name, "distribution": dist, "x": np.asarray(x, dtype=np.float32)})

    add("normal", "normal(0.2, 1.0)", rng.normal(0.2, 1.0, n))
    add("laplace", "laplace(0, 0.7)", rng.laplace(0.0, 0.7, n))
    relu = np.maximum(rng.normal(0.0, 1.0, n), 0.0)
    add("relu", "max(normal(0, 1), 0): half zeros", relu)
    add("lognormal", "lognormal(-1, 1)", rng.lognormal(-1.0, 1.0, n))
    add("uniform", "uniform(-3, 5)", rng.uniform(-3.0, 5.0, n))
    xo = rng.normal(0.0, 0.3, n)
    xo[rng.choice(n, 5, replace=False)] = [40.0, -35.0, 22.0, 18.0, -60.0]
    add("outliers", "normal(0, 0.3) + 5 outliers up to |60|", xo)

    percentile_cases = []
    kl_cases = []
    histograms = {}
    for ds in sets:
        x = ds["x"].astype(np.float64)
        pieces, w = model_pieces(ds["x"])
        xmin, xmax = float(x.min()), float(x.max())
        folded = fold(pieces)
        for p in [0.9, 0.99, 0.999, 0.9999, 0.99995]:
            t = model_quantile(folded, p)
            ax = np.abs(x)
            raw_t = float(np.quantile(ax, p))
            lo0, hi0 = min(xmin, 0.0), max(xmax, 0.0)  # the data's hull widened to include 0
            percentile_cases.append({
                "dataset": ds["name"], "p": p, "side": "abs",
                "range": [max(lo0, -t), min(hi0, t)],
                "raw": [max(lo0, -raw_t), min(hi0, raw_t)], "bin_width": w})
            cut = (1.0 - p) / 2.0
            lo = model_quantile(pieces, cut)
            hi = model_quantile(pieces, 1.0 - cut)
            percentile_cases.append({
                "dataset": ds["name"], "p": p, "side": "two_sided", "range": [lo, hi],
                "raw": [float(np.quantile(x, cut)), float(np.quantile(x, 1.0 - cut))],
                "bin_width": w})
        amax = max(abs(xmin), abs(xmax))
        hist = resample(folded, amax, 2048)
        configs = [(128, False), (128, True)] if ds["name"] in ("relu", "normal") else [(128, False)]
        if ds["name"] == "laplace":
            configs.append((8, False))
        for levels, fix in configs:
            i, div = kl_reference(hist, levels, 128, fix)
            kl_cases.append({"dataset": ds["name"], "histogram": ds["name"], "levels": levels,
                             "start_bin": 128, "zero_bin_fix": fix, "amax": amax,
                             "bin": i, "divergence": div, "threshold": i * amax / 2048})
        histograms[ds["name"]] = encode64(hist)
        print("reference:", ds["name"], file=sys.stderr)

    # Synthetic histograms: fractional counts, empty stretches, a zero spike.
    centers = (np.arange(2048) + 0.5) / 2048
    synth = {
        "halfnormal_fractional": np.exp(-0.5 * (centers * 6.0) ** 2) * 1000.0 / 3.0,
        "gaps": np.where((np.arange(2048) // 7) % 3 == 0, 0.0, np.exp(-centers * 9.0) * 500.0),
        "spike_and_tail": np.concatenate([[5000.0], np.exp(-centers[1:] * 4.0) * 40.0]),
    }
    synth["gaps"][1900] = 3.0  # a lone far bin
    for name, h in synth.items():
        for levels, fix in [(128, False), (128, True), (64, False)]:
            i, div = kl_reference(h, levels, 128, fix)
            kl_cases.append({"synthetic": name, "histogram": name, "levels": levels,
                             "start_bin": 128, "zero_bin_fix": fix, "amax": 1.0,
                             "bin": i, "divergence": div, "threshold": i / 2048})
        histograms[name] = encode64(h)
        print("reference:", name, file=sys.stderr)

    doc = {
        "generator": GENERATOR,
        "numpy_version": np.__version__,
        "scipy_version": scipy.__version__ if hasattr(scipy, "__version__") else "",
        "datasets": [{"name": d["name"], "distribution": d["distribution"], "data": encode(d["x"])}
                     for d in sets],
        "grid": {"bins": GRID_BINS, "rule": grid_of.__doc__},
        "kl_histograms": histograms,
        "percentile": percentile_cases,
        "kl": kl_cases,
    }
    path = os.path.join(out_dir, "observers_reference.json")
    with open(path, "w") as f:
        f.write("{\n")
        for k in [k for k in doc if k not in ("percentile", "kl")]:
            f.write(json.dumps(k) + ": " + json.dumps(doc[k]) + ",\n")
        f.write('"percentile": [\n' + ",\n".join(json.dumps(c) for c in percentile_cases) + "\n],\n")
        f.write('"kl": [\n' + ",\n".join(json.dumps(c) for c in kl_cases) + "\n]\n}\n")
    print("wrote", path, file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden"))
    ap.add_argument("--shape", default=None,
                    help="stress runs only: batch shape, e.g. 16,64,1024 (committed file: 4,8,32)")
    ap.add_argument("--seed", type=int, default=None, help="stress runs only")
    ap.add_argument("--name", default="observers_torch.json")
    ap.add_argument("--skip-reference", action="store_true",
                    help="only observers_torch.json (stress runs)")
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
    if not args.skip_reference:
        make_reference(args.out)


if __name__ == "__main__":
    main()
