#!/usr/bin/python3
"""Golden vectors from PyTorch's quantization primitives, for tests/test_golden_torch.cpp.

Run with Debian's interpreter (it has python3-torch 1.13.1 and numpy):

    /usr/bin/python3 tools/golden/gen_torch_golden.py [--out tests/golden]

Deterministic: fixed seeds, no timestamps, stable key order; running it twice produces
byte-identical files. Every float is a float32 value written as a JSON number via
float(np.float32(v)) (Python's shortest repr of that double), so parsing it as double and
casting to float recovers the float32 bits exactly. Ints are JSON ints. No NaN/Inf appear.

Common top-level keys of every file:
    "generator":  "tools/golden/gen_torch_golden.py"
    "torch_version", "numpy_version": versions that produced the data
    "conventions": {name: text} — the arithmetic PyTorch uses, checked by this script against a
                   numpy model on every case (the script aborts if PyTorch disagrees)
    "cases": [ ... ]  (one case per line)

torch_qparams.json — torch.ao.quantization observers' _calculate_qparams(min, max)
    (torch 1.13 has no utils.determine_qparams). Each case:
      {"name", "observer": "MinMaxObserver" | "PerChannelMinMaxObserver",
       "dtype": "quint8" | "qint8", "qscheme": "per_tensor_affine" | "per_tensor_symmetric" |
       "per_channel_affine" | "per_channel_symmetric", "reduce_range": bool,
       "custom_range": null | [quant_min, quant_max]   (what was passed to the observer),
       "qmin", "qmax": the observer's effective range (after reduce_range),
       "min": [f32...], "max": [f32...], "scale": [f32...], "zero_point": [int...]}
    Per-tensor cases have one-element lists; per-channel cases one entry per channel.

torch_quantize_per_tensor.json — torch.quantize_per_tensor(x, scale, zp, dtype).int_repr()
    and .dequantize(). Each case:
      {"name", "dtype": "quint8" | "qint8" | "qint32", "qmin", "qmax", "scale": f32,
       "zero_point": int, "x": [f32...], "q": [int...], "dequant": [f32...],
       "q_divide": [int...]}
    "q_divide" is NOT from PyTorch: it is clamp(zp + round_half_even(x / scale)) computed by
    numpy in float32 (the ONNX QuantizeLinear convention) and differs from "q" exactly where
    x * (1/scale) and x / scale round differently — present so a test can show both policies.

torch_quantize_per_channel.json — torch.quantize_per_channel(x, scales, zps, axis, dtype).
    Each case:
      {"name", "dtype", "qmin", "qmax", "shape": [..], "axis": int (>= 0, PyTorch rejects
       negative axes), "scale": [f32 per channel], "zero_point": [int per channel],
       "x": [f32... row-major], "q": [int... row-major], "dequant": [f32... row-major]}

torch_fake_quantize.json — torch.fake_quantize_per_tensor_affine and
    torch.fake_quantize_per_channel_affine. Each case:
      {"name", "kind": "per_tensor" | "per_channel", "shape": [..], "axis": int | null,
       "quant_min", "quant_max", "scale": [f32...], "zero_point": [int...],
       "x": [f32... row-major], "y": [f32... row-major]}
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
from torch.ao.quantization.observer import MinMaxObserver, PerChannelMinMaxObserver

GENERATOR = "tools/golden/gen_torch_golden.py"
F32 = np.float32

CONVENTIONS = {
    "qparams": "float32 arithmetic; min_neg = min(min, 0), max_pos = max(max, 0); symmetric: "
               "scale = max(max(-min_neg, max_pos) / ((qmax - qmin) / 2), eps); zero_point 0 "
               "(qint8), 128 (quint8 default range, also with reduce_range), "
               "(qmin + qmax) // 2 (quint8 with a custom range); affine: "
               "scale = max((max_pos - min_neg) / (qmax - qmin), eps), zero_point = "
               "clamp(qmin - round_half_even(min_neg / scale), qmin, qmax); eps = 2^-23; "
               "min == max is not special (all-zero gives scale eps). reduce_range: default "
               "ranges become qint8 [-64, 63], quint8 [0, 127]; custom ranges are halved with "
               "floor division.",
    "quantize": "q = clamp(zp + nearbyint(x * (1.0f / scale)), qmin, qmax): multiply by the "
                "float32 reciprocal of the float32 scale, round half to even (not x / scale).",
    "dequantize": "y = float32(q - zp) * scale, one float32 rounding (no fma with a "
                  "premultiplied -zp*scale).",
    "fake_quantize": "y = (clamp(zp + nearbyint(x * (1.0f / scale)), quant_min, quant_max) - zp) "
                     "* scale in float32.",
    "limits": "PyTorch 1.13 (no FBGEMM in Debian's build) converts zp + nearbyint(x/scale) to "
              "int64 before clamping, so |x / scale| >= 2^63 and NaN give garbage "
              "(e.g. qint8 1e20 with scale 1 -> -128); the data keeps |x / scale| < 2^40.",
}


def f32(v):
    """A float32 value as the Python float that represents it exactly."""
    return float(F32(v))


def f32list(a):
    return [f32(v) for v in np.asarray(a, dtype=F32).reshape(-1)]


def intlist(a):
    return [int(v) for v in np.asarray(a).reshape(-1)]


DTYPES = {"quint8": torch.quint8, "qint8": torch.qint8, "qint32": torch.qint32}
DTYPE_RANGE = {"quint8": (0, 255), "qint8": (-128, 127), "qint32": (-2**31, 2**31 - 1)}
QSCHEMES = {
    "per_tensor_affine": torch.per_tensor_affine,
    "per_tensor_symmetric": torch.per_tensor_symmetric,
    "per_channel_affine": torch.per_channel_affine,
    "per_channel_symmetric": torch.per_channel_symmetric,
}


# ---------------------------------------------------------------- data

def sample(kind, n, rng):
    """n float32 values of a named distribution."""
    if kind == "normal":
        a = rng.normal(0.0, 1.0, n)
    elif kind == "uniform":
        a = rng.uniform(-3.0, 5.0, n)
    elif kind == "laplace":
        a = rng.laplace(0.3, 0.7, n)
    elif kind == "outliers":
        a = rng.normal(0.0, 0.5, n)
        idx = rng.choice(n, size=max(2, n // 16), replace=False)
        a[idx] *= 60.0
    elif kind == "positive":
        a = rng.uniform(0.25, 7.0, n)
    elif kind == "negative":
        a = rng.uniform(-9.0, -0.5, n)
    else:
        raise ValueError(kind)
    return a.astype(F32)


# ---------------------------------------------------------------- numpy models (checks)

def np_quantize(x, scale, zp, qmin, qmax):
    scale = F32(scale)
    inv = F32(1.0) / scale
    t = (np.asarray(x, dtype=F32) * inv).astype(F32)
    r = np.rint(t).astype(np.float64) + zp
    return np.clip(r, qmin, qmax).astype(np.int64)


def np_quantize_divide(x, scale, zp, qmin, qmax):
    t = (np.asarray(x, dtype=F32) / F32(scale)).astype(F32)
    r = np.rint(t).astype(np.float64) + zp
    return np.clip(r, qmin, qmax).astype(np.int64)


def np_dequantize(q, scale, zp):
    return ((np.asarray(q, dtype=np.int64) - zp).astype(F32) * F32(scale)).astype(F32)


def check_equal(what, got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    if got.dtype.kind == "f":
        same = got.view(np.uint32) == want.astype(F32).view(np.uint32)
    else:
        same = got == want
    if not np.all(same):
        i = int(np.argmin(same.reshape(-1)))
        sys.exit(f"{what}: PyTorch disagrees with the documented convention at {i}: "
                 f"torch {got.reshape(-1)[i]!r}, model {want.reshape(-1)[i]!r}")


# ---------------------------------------------------------------- qparams

def qparams_ranges(rng):
    """(name, min, max) pairs."""
    r = [
        ("all_zero", 0.0, 0.0),
        ("const_positive", 1.5, 1.5),
        ("const_negative", -2.25, -2.25),
        ("const_tiny", 3e-8, 3e-8),
        ("unit_positive", 0.0, 1.0),
        ("unit_negative", -1.0, 0.0),
        ("positive_only", 0.5, 3.0),
        ("negative_only", -3.0, -0.25),
        ("mixed", -1.3, 2.7),
        ("mixed_neg_heavy", -100.0, 1e-3),
        ("mixed_pos_heavy", -1e-3, 100.0),
        ("symmetric", -4.0, 4.0),
        ("eps_range", -1.1920929e-07, 1.1920929e-07),
        ("tiny_range", -1e-7, 1e-7),
        ("tiny_pos", 0.0, 1e-6),
        ("tiny_neg_zp", -2e-5, 1e-5),
        ("subnormal", -1e-40, 1e-40),
        ("huge", -1e37, 2e37),
        ("large", -65504.0, 3.0e6),
        ("zp_tie_half", -0.5, 254.5),      # quint8 affine: min/scale = -0.5 -> 0
        ("zp_tie_1_5", -1.5, 253.5),       # -1.5 -> -2
        ("zp_tie_2_5", -2.5, 252.5),       # -2.5 -> -2
        ("zp_tie_127_5", -127.5, 127.5),
        ("zp_tie_qint8", -128.5, 126.5),
        ("odd_scale", -0.3, 0.7),
        ("third", -1.0 / 3.0, 2.0 / 3.0),
    ]
    for kind in ("normal", "uniform", "laplace", "outliers", "positive", "negative"):
        for k in range(2):
            a = sample(kind, 257, rng)
            r.append((f"{kind}_{k}", float(a.min()), float(a.max())))
    return [(n, f32(lo), f32(hi)) for n, lo, hi in r]


def qparams_configs():
    cfgs = []
    for dtype in ("quint8", "qint8"):
        for sym in ("affine", "symmetric"):
            for rr in (False, True):
                cfgs.append((dtype, sym, rr, None))
    custom = [("quint8", (0, 15)), ("qint8", (-8, 7)), ("quint8", (0, 255)),
              ("qint8", (-127, 127)), ("qint8", (-128, 127)), ("quint8", (0, 3)),
              ("qint8", (-2, 1))]
    for dtype, cr in custom:
        for sym in ("affine", "symmetric"):
            for rr in (False, True):
                cfgs.append((dtype, sym, rr, cr))
    return cfgs


def np_qparams(lo, hi, qmin, qmax, symmetric, dtype, custom):
    """The documented convention in numpy float32 (checks PyTorch, see CONVENTIONS)."""
    eps = F32(np.finfo(F32).eps)
    min_neg, max_pos = min(F32(lo), F32(0)), max(F32(hi), F32(0))
    with np.errstate(over="ignore"):
        if symmetric:
            scale = max(F32(max(-min_neg, max_pos) / F32((qmax - qmin) / 2)), eps)
            zp = 0
            if dtype == "quint8":
                zp = (qmin + qmax) // 2 if custom else 128
            return scale, zp
        scale = max(F32(F32(max_pos - min_neg) / F32(qmax - qmin)), eps)
    zp = int(qmin - np.rint(F32(min_neg / scale)))
    return scale, min(max(zp, qmin), qmax)


def check_qparams(case):
    for i, (lo, hi) in enumerate(zip(case["min"], case["max"])):
        want = np_qparams(lo, hi, case["qmin"], case["qmax"], "symmetric" in case["qscheme"],
                          case["dtype"], case["custom_range"] is not None)
        got = (F32(case["scale"][i]), case["zero_point"][i])
        if got != want:
            sys.exit(f"{case['name']}[{i}]: PyTorch {got} disagrees with the model {want}")


def gen_qparams(rng):
    ranges = qparams_ranges(rng)
    cases = []
    for dtype, sym, rr, cr in qparams_configs():
        qmin_arg, qmax_arg = cr if cr else (None, None)
        tag = f"{dtype}_{sym}" + ("_rr" if rr else "") + (f"_{cr[0]}_{cr[1]}" if cr else "")
        # per tensor: one observer call per range (0-dim min/max tensors)
        qs = "per_tensor_" + sym
        try:
            obs = MinMaxObserver(dtype=DTYPES[dtype], qscheme=QSCHEMES[qs], reduce_range=rr,
                                 quant_min=qmin_arg, quant_max=qmax_arg)
        except NotImplementedError:  # quint8 symmetric with reduce_range: refused by PyTorch
            continue
        for name, lo, hi in ranges:
            s, z = obs._calculate_qparams(torch.tensor(lo, dtype=torch.float32),
                                          torch.tensor(hi, dtype=torch.float32))
            cases.append({
                "name": f"{tag}/{name}", "observer": "MinMaxObserver", "dtype": dtype,
                "qscheme": qs, "reduce_range": rr, "custom_range": list(cr) if cr else None,
                "qmin": int(obs.quant_min), "qmax": int(obs.quant_max),
                "min": [lo], "max": [hi], "scale": f32list(s.numpy()),
                "zero_point": intlist(z.numpy())})
        # per channel: all ranges at once, one channel each
        qs = "per_channel_" + sym
        obs = PerChannelMinMaxObserver(ch_axis=0, dtype=DTYPES[dtype], qscheme=QSCHEMES[qs],
                                       reduce_range=rr, quant_min=qmin_arg, quant_max=qmax_arg)
        mins = torch.tensor([lo for _, lo, _ in ranges], dtype=torch.float32)
        maxs = torch.tensor([hi for _, _, hi in ranges], dtype=torch.float32)
        s, z = obs._calculate_qparams(mins, maxs)
        cases.append({
            "name": f"{tag}/per_channel_all", "observer": "PerChannelMinMaxObserver",
            "dtype": dtype, "qscheme": qs, "reduce_range": rr,
            "custom_range": list(cr) if cr else None,
            "qmin": int(obs.quant_min), "qmax": int(obs.quant_max),
            "min": f32list(mins.numpy()), "max": f32list(maxs.numpy()),
            "scale": f32list(s.numpy()), "zero_point": intlist(z.numpy())})
    for c in cases:
        check_qparams(c)
    return cases


# ---------------------------------------------------------------- per-tensor quantize

def tie_values(scale, zp, qmin, qmax):
    """x = (k + 0.5) * scale for a power-of-two scale: x * (1/scale) is exactly k + 0.5."""
    ks = np.arange(qmin - zp - 3, qmax - zp + 3)
    if len(ks) > 40:
        ks = np.concatenate([ks[:12], np.arange(-6, 6), ks[-12:]])
    return (ks.astype(np.float64) + 0.5) * scale


def recip_vs_div_values(scale, zp, qmin, qmax, limit=48):
    """x near (k + 0.5) * scale where rint(x * (1/scale)) != rint(x / scale) in float32."""
    s = F32(scale)
    inv = F32(1.0) / s
    out = []
    for k in range(-200, 200):
        c = F32((k + 0.5) * float(s))
        for d in range(-3, 4):
            x = np.nextafter(c, F32(np.inf) if d > 0 else F32(-np.inf), dtype=F32) if d else c
            for _ in range(abs(d) - 1):
                x = np.nextafter(x, F32(np.inf) if d > 0 else F32(-np.inf), dtype=F32)
            a = np.rint(F32(x * inv))
            b = np.rint(F32(x / s))
            if a != b:
                out.append(float(x))
        if len(out) >= limit:
            break
    return out


def per_tensor_case(name, dtype, x, scale, zp):
    x = np.asarray(x, dtype=F32)
    scale = f32(scale)
    qmin, qmax = DTYPE_RANGE[dtype]
    qt = torch.quantize_per_tensor(torch.from_numpy(x.copy()), scale, zp, DTYPES[dtype])
    q = qt.int_repr().numpy().astype(np.int64)
    deq = qt.dequantize().numpy()
    check_equal(name + " q", q, np_quantize(x, scale, zp, qmin, qmax))
    check_equal(name + " dequant", deq, np_dequantize(q, scale, zp))
    return {"name": name, "dtype": dtype, "qmin": qmin, "qmax": qmax, "scale": scale,
            "zero_point": int(zp), "x": f32list(x), "q": intlist(q), "dequant": f32list(deq),
            "q_divide": intlist(np_quantize_divide(x, scale, zp, qmin, qmax))}


def observer_qparams(x, dtype, qscheme):
    obs = MinMaxObserver(dtype=DTYPES[dtype], qscheme=QSCHEMES[qscheme])
    obs(torch.from_numpy(np.asarray(x, dtype=F32)))
    s, z = obs.calculate_qparams()
    return f32(s.item()), int(z.item())


def gen_quantize_per_tensor(rng):
    cases = []
    n = 67  # odd: exercises PyTorch's vector body and scalar tail
    for dtype in ("quint8", "qint8"):
        for kind in ("normal", "uniform", "laplace", "outliers", "positive", "negative"):
            x = sample(kind, n, rng)
            for qs in ("per_tensor_affine", "per_tensor_symmetric"):
                s, z = observer_qparams(x, dtype, qs)
                cases.append(per_tensor_case(f"{dtype}/{kind}/{qs}", dtype, x, s, z))
        qmin, qmax = DTYPE_RANGE[dtype]
        # saturation at both ends: range observed on the bulk, data 4x beyond it
        x = sample("normal", n, rng)
        s, z = observer_qparams(x[:16], dtype, "per_tensor_affine")
        x = np.concatenate([x * 4.0, [1e6, -1e6, 3e9, -3e9]]).astype(F32)
        cases.append(per_tensor_case(f"{dtype}/saturate", dtype, x, s, z))
        # exact ties with power-of-two scales
        for e in (0, -3, -7, 4):
            scale = 2.0 ** e
            zp = 128 if dtype == "quint8" else 0
            if e == -7:
                zp = 37 if dtype == "quint8" else -5
            x = tie_values(scale, zp, qmin, qmax)
            cases.append(per_tensor_case(f"{dtype}/ties_pow2_{e}_zp{zp}", dtype, x, scale, zp))
        # x * (1/scale) vs x / scale
        for scale in (0.1, 0.3, 0.7, 0.0123, 1.7, 3.0):
            zp = 100 if dtype == "quint8" else -3
            x = recip_vs_div_values(scale, zp, qmin, qmax)
            cases.append(per_tensor_case(f"{dtype}/recip_vs_div_{scale}", dtype, x, scale, zp))
        # tiny and huge scales
        for scale, mag in ((2.0 ** -100, 2.0 ** -94), (1e-30, 3e-28), (1e-38, 5e-37),
                           (1e30, 5e31), (2.0 ** 100, 2.0 ** 106), (3e37, 1e39)):
            x = sample("uniform", 33, rng).astype(np.float64) / 5.0 * mag
            if mag > 3e38:
                x = np.clip(x, -3.3e38, 3.3e38)
            zp = 10 if dtype == "quint8" else 2
            cases.append(per_tensor_case(f"{dtype}/scale_{scale:g}", dtype, x, scale, zp))
        # subnormal inputs, signed zeros
        # (a subnormal scale has an infinite float32 reciprocal: PyTorch then yields garbage)
        x = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1e-38, -1e-38, 2.0 ** -127,
                      -2.0 ** -127, 3 * 2.0 ** -127, -3 * 2.0 ** -127, 5 * 2.0 ** -128],
                     dtype=F32)
        cases.append(per_tensor_case(f"{dtype}/subnormal_inputs", dtype, x, 2.0 ** -126, 3))
        cases.append(per_tensor_case(f"{dtype}/zeros", dtype, x, 0.05, 7 if dtype == "quint8" else -7))
    # qint32 (bias-like): large ranges, ties, saturation
    x = (sample("normal", n, rng).astype(np.float64) * 1e4)
    cases.append(per_tensor_case("qint32/normal", "qint32", x, 0.001, 0))
    cases.append(per_tensor_case("qint32/ties_pow2", "qint32",
                                 (np.arange(-20, 20) + 0.5) * 2.0 ** -10, 2.0 ** -10, 0))
    cases.append(per_tensor_case("qint32/recip_vs_div", "qint32",
                                 recip_vs_div_values(0.1, 0, -2**31, 2**31 - 1), 0.1, 0))
    x = np.array([1e3, -1e3, 2.0e6, -2.0e6, 3e9, -3e9, 1e10, -1e10], dtype=F32)
    cases.append(per_tensor_case("qint32/saturate", "qint32", x, 1.0, 0))
    x = np.array([1.25, -1.25, 2.5, -2.5, 1000.75, -1000.75], dtype=F32)
    cases.append(per_tensor_case("qint32/zp", "qint32", x, 0.5, 5))
    return cases


# ---------------------------------------------------------------- per-channel quantize

def channel_qparams(x, axis, dtype, qscheme, qmin=None, qmax=None):
    obs = PerChannelMinMaxObserver(ch_axis=axis, dtype=DTYPES[dtype], qscheme=QSCHEMES[qscheme],
                                   quant_min=qmin, quant_max=qmax)
    obs(torch.from_numpy(np.asarray(x, dtype=F32)))
    s, z = obs.calculate_qparams()
    return s.numpy().astype(F32), z.numpy().astype(np.int64)


def per_channel_case(name, dtype, x, axis, scales, zps):
    x = np.asarray(x, dtype=F32)
    scales = np.asarray(scales, dtype=F32)
    zps = np.asarray(zps, dtype=np.int64)
    qmin, qmax = DTYPE_RANGE[dtype]
    qt = torch.quantize_per_channel(torch.from_numpy(x.copy()),
                                    torch.from_numpy(scales.astype(np.float64)),
                                    torch.from_numpy(zps), axis, DTYPES[dtype])
    q = qt.int_repr().numpy().astype(np.int64)
    deq = qt.dequantize().numpy()
    bshape = [1] * x.ndim
    bshape[axis] = -1
    s_b, z_b = scales.reshape(bshape), zps.reshape(bshape)
    inv = (F32(1.0) / s_b).astype(F32)
    want = np.clip(np.rint((x * inv).astype(F32)).astype(np.float64) + z_b, qmin, qmax)
    check_equal(name + " q", q, want.astype(np.int64))
    check_equal(name + " dequant", deq, ((q - z_b).astype(F32) * s_b).astype(F32))
    return {"name": name, "dtype": dtype, "qmin": qmin, "qmax": qmax, "shape": list(x.shape),
            "axis": int(axis), "scale": f32list(scales), "zero_point": intlist(zps),
            "x": f32list(x), "q": intlist(q), "dequant": f32list(deq)}


def gen_quantize_per_channel(rng):
    cases = []
    shapes = [(6, 5), (3, 4, 5), (4, 3, 2, 3)]
    kinds = ["normal", "laplace", "outliers", "uniform"]
    i = 0
    for shape in shapes:
        for axis in sorted({0, 1, len(shape) - 1}):
            for dtype, qs in (("qint8", "per_channel_symmetric"), ("quint8", "per_channel_affine"),
                              ("qint8", "per_channel_affine")):
                kind = kinds[i % len(kinds)]
                i += 1
                x = sample(kind, int(np.prod(shape)), rng).reshape(shape)
                # make channels differ in magnitude, and one channel all-zero
                bshape = [1] * len(shape)
                bshape[axis] = -1
                mag = np.geomspace(0.01, 10.0, shape[axis]).astype(F32).reshape(bshape)
                x = (x * mag).astype(F32)
                if shape[axis] > 2:
                    sl = [slice(None)] * len(shape)
                    sl[axis] = 1
                    x[tuple(sl)] = 0.0
                s, z = channel_qparams(x, axis, dtype, qs)
                # saturate: quantize data 3x the observed range
                name = f"{dtype}/{qs}/shape{'x'.join(map(str, shape))}/axis{axis}/{kind}"
                cases.append(per_channel_case(name, dtype, x, axis, s, z))
                cases.append(per_channel_case(name + "/saturate", dtype, x * 3.0, axis, s, z))
    # ties: power-of-two scale per channel, x = (k + 0.5) * scale
    for dtype, zp0 in (("qint8", 0), ("quint8", 128)):
        scales = np.array([2.0 ** -2, 2.0 ** 0, 2.0 ** -6, 2.0 ** 3], dtype=F32)
        zps = np.array([zp0, zp0 + 1, zp0 - 3, zp0 + 2], dtype=np.int64)
        k = np.arange(-9, 9).astype(np.float64) + 0.5
        x = (k[None, :] * scales[:, None]).astype(F32)
        cases.append(per_channel_case(f"{dtype}/ties_pow2/axis0", dtype, x, 0, scales, zps))
        cases.append(per_channel_case(f"{dtype}/ties_pow2/axis1", dtype, x.T.copy(), 1,
                                      scales, zps))
        # reciprocal vs division per channel
        cols = []
        sc = np.array([0.1, 0.3, 0.7], dtype=F32)
        for s in sc:
            v = recip_vs_div_values(float(s), 0, -128, 127, limit=16)[:16]
            cols.append(v + [0.0] * (16 - len(v)))
        x = np.array(cols, dtype=F32)
        cases.append(per_channel_case(f"{dtype}/recip_vs_div/axis0", dtype, x, 0, sc,
                                      np.array([zp0, zp0, zp0])))
    return cases


# ---------------------------------------------------------------- fake quantize

def fake_per_tensor_case(name, x, scale, zp, qmin, qmax):
    x = np.asarray(x, dtype=F32)
    scale = f32(scale)
    y = torch.fake_quantize_per_tensor_affine(torch.from_numpy(x.copy()), scale, int(zp),
                                              qmin, qmax).numpy()
    check_equal(name, y, np_dequantize(np_quantize(x, scale, zp, qmin, qmax), scale, zp))
    return {"name": name, "kind": "per_tensor", "shape": list(x.shape), "axis": None,
            "quant_min": qmin, "quant_max": qmax, "scale": [scale], "zero_point": [int(zp)],
            "x": f32list(x), "y": f32list(y)}


def fake_per_channel_case(name, x, axis, scales, zps, qmin, qmax):
    x = np.asarray(x, dtype=F32)
    scales = np.asarray(scales, dtype=F32)
    zps = np.asarray(zps, dtype=np.int32)
    y = torch.fake_quantize_per_channel_affine(torch.from_numpy(x.copy()),
                                               torch.from_numpy(scales.copy()),
                                               torch.from_numpy(zps.copy()), axis, qmin,
                                               qmax).numpy()
    bshape = [1] * x.ndim
    bshape[axis] = -1
    s_b, z_b = scales.reshape(bshape), zps.astype(np.int64).reshape(bshape)
    inv = (F32(1.0) / s_b).astype(F32)
    q = np.clip(np.rint((x * inv).astype(F32)).astype(np.float64) + z_b, qmin, qmax)
    want = ((q.astype(np.int64) - z_b).astype(F32) * s_b).astype(F32)
    check_equal(name, y, want)
    return {"name": name, "kind": "per_channel", "shape": list(x.shape), "axis": int(axis),
            "quant_min": qmin, "quant_max": qmax, "scale": f32list(scales),
            "zero_point": intlist(zps), "x": f32list(x), "y": f32list(y)}


def gen_fake_quantize(rng):
    cases = []
    ranges = [(0, 255), (-128, 127), (0, 15), (-8, 7), (0, 127), (-64, 63), (-127, 127),
              (0, 3), (-2, 1)]
    for qmin, qmax in ranges:
        for kind in ("normal", "laplace", "outliers", "positive"):
            x = sample(kind, 45, rng)
            obs = MinMaxObserver(dtype=torch.quint8 if qmin >= 0 else torch.qint8,
                                 quant_min=qmin, quant_max=qmax)
            obs(torch.from_numpy(x[:30].copy()))  # the rest may saturate
            s, z = obs.calculate_qparams()
            cases.append(fake_per_tensor_case(f"{qmin}_{qmax}/{kind}", x, s.item(),
                                              int(z.item()), qmin, qmax))
        scale = 2.0 ** -3
        zp = (qmin + qmax + 1) // 2
        k = np.arange(qmin - zp - 2, qmax - zp + 2).astype(np.float64) + 0.5
        cases.append(fake_per_tensor_case(f"{qmin}_{qmax}/ties_pow2", k * scale, scale, zp,
                                          qmin, qmax))
        x = recip_vs_div_values(0.3, 0, qmin, qmax, limit=24)
        x = [v for v in x if qmin - 1 <= v / 0.3 <= qmax + 1] or [0.0]
        cases.append(fake_per_tensor_case(f"{qmin}_{qmax}/recip_vs_div", x, 0.3,
                                          (qmin + qmax + 1) // 2, qmin, qmax))
    for qmin, qmax in ((0, 15), (-8, 7), (-128, 127), (0, 255)):
        for shape, axis in (((5, 7), 0), ((4, 6), 1), ((3, 4, 5), 2), ((2, 3, 2, 4), 1)):
            x = sample("laplace", int(np.prod(shape)), rng).reshape(shape)
            bshape = [1] * len(shape)
            bshape[axis] = -1
            x = (x * np.geomspace(0.05, 4.0, shape[axis]).reshape(bshape)).astype(F32)
            obs = PerChannelMinMaxObserver(ch_axis=axis,
                                           dtype=torch.quint8 if qmin >= 0 else torch.qint8,
                                           qscheme=torch.per_channel_affine,
                                           quant_min=qmin, quant_max=qmax)
            obs(torch.from_numpy(x * 0.8))  # the tails saturate
            s, z = obs.calculate_qparams()
            cases.append(fake_per_channel_case(
                f"{qmin}_{qmax}/per_channel/shape{'x'.join(map(str, shape))}/axis{axis}", x,
                axis, s.numpy(), z.numpy(), qmin, qmax))
    return cases


# ---------------------------------------------------------------- output

def write_json(path, cases):
    head = {"generator": GENERATOR, "torch_version": torch.__version__,
            "numpy_version": np.__version__, "conventions": CONVENTIONS}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)},")
    lines.append('  "cases": [')
    for i, c in enumerate(cases):
        lines.append("    " + json.dumps(c, allow_nan=False, separators=(",", ":"))
                     + ("," if i + 1 < len(cases) else ""))
    lines.append("  ]")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    json.loads(text)  # well-formed
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)
    print(f"{path}: {len(cases)} cases, {len(text)} bytes")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.normpath(os.path.join(here, "..", "..", "tests", "golden"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=default_out, help="output directory (default tests/golden)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    import warnings
    warnings.filterwarnings("ignore")  # reduce_range deprecation warnings
    write_json(os.path.join(args.out, "torch_qparams.json"),
               gen_qparams(np.random.default_rng(1001)))
    write_json(os.path.join(args.out, "torch_quantize_per_tensor.json"),
               gen_quantize_per_tensor(np.random.default_rng(1002)))
    write_json(os.path.join(args.out, "torch_quantize_per_channel.json"),
               gen_quantize_per_channel(np.random.default_rng(1003)))
    write_json(os.path.join(args.out, "torch_fake_quantize.json"),
               gen_fake_quantize(np.random.default_rng(1004)))


if __name__ == "__main__":
    main()
