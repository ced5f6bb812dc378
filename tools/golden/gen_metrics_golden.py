#!/usr/bin/python3
"""Golden values for quantkit/analysis/metrics.hpp (tests/test_analysis_metrics.cpp).

Run with Debian's interpreter (numpy, python3-torch):

    /usr/bin/python3 tools/golden/gen_metrics_golden.py [--out tests/golden]

Writes metrics.json: float32 tensor pairs (x = reference, y = "quantized": x fake-quantized or
perturbed) and, for each, the metrics over the whole tensor and per channel along an axis.
Deterministic (fixed seed, no timestamps).

  numpy (float64 accumulation, the definitions of metrics.hpp):
    cosine    sum(x*y) / (|x| |y|)
    mse       mean((x - y)^2)
    mre       mean(|x - y| / max(|x|, 1e-3 * max|x|))
    sqnr      20 log10(|x| / |x - y|)
    chebyshev max |x - y|
  PyTorch's Numeric Suite (torch.ao.ns.fx.utils.compute_sqnr / compute_cosine_similarity, float32
  arithmetic) and torch.nn.functional.mse_loss, as the peer check: "torch" holds its values for
  the whole tensor; the script aborts if they disagree with numpy beyond float32 accuracy.
"""

import argparse
import json
import os

import numpy as np
import torch
from torch.ao.ns.fx.utils import compute_cosine_similarity, compute_sqnr

GENERATOR = "tools/golden/gen_metrics_golden.py"


def f32list(a):
    return [float(np.float32(v)) for v in np.asarray(a, dtype=np.float32).ravel()]


def metrics(x, y):
    x = x.astype(np.float64).ravel()
    y = y.astype(np.float64).ravel()
    d = x - y
    nx, ny, nd = np.linalg.norm(x), np.linalg.norm(y), np.linalg.norm(d)
    guard = 1e-3 * np.max(np.abs(x))
    return {
        "cosine": float(np.dot(x, y) / (nx * ny)),
        "mse": float(np.mean(d * d)),
        "mre": float(np.mean(np.abs(d) / np.maximum(np.abs(x), guard))),
        "sqnr": float(20.0 * np.log10(nx / nd)),
        "chebyshev": float(np.max(np.abs(d))),
    }


def torch_metrics(x, y):
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    return {
        "cosine": float(compute_cosine_similarity(tx, ty)),
        "mse": float(torch.nn.functional.mse_loss(ty, tx)),
        "sqnr": float(compute_sqnr(tx, ty)),
        "chebyshev": float(torch.max(torch.abs(tx - ty))),
    }


def fake_quant(x, scale, zp, qmin, qmax):
    q = np.clip(np.round(x / np.float32(scale)) + zp, qmin, qmax)
    return ((q - zp) * np.float32(scale)).astype(np.float32)


def make_cases():
    rng = np.random.default_rng(20240607)
    cases = []
    # Activations after a ReLU (many exact zeros), uint8 fake-quantized: [N, C, H, W].
    a = np.maximum(rng.normal(0.2, 1.0, size=(3, 4, 5, 6)), 0).astype(np.float32)
    s = float(a.max()) / 255
    cases.append(("relu_uint8", a, fake_quant(a, s, 0, 0, 255), 1))
    # Signed weights, int4 symmetric per tensor: [O, I].
    w = rng.normal(0.0, 0.5, size=(8, 12)).astype(np.float32)
    s = float(np.abs(w).max()) / 7.5
    cases.append(("weights_int4", w, fake_quant(w, s, 0, -8, 7), 0))
    # Logits with small additive noise, channel axis last (-1).
    z = rng.normal(0.0, 4.0, size=(10, 7)).astype(np.float32)
    cases.append(("logits_noise", z, (z + rng.normal(0, 0.05, size=z.shape)).astype(np.float32), -1))
    # Opposite directions, different magnitudes (cosine < 0).
    v = rng.uniform(-1, 1, size=(2, 9)).astype(np.float32)
    cases.append(("anti", v, (-0.5 * v + 0.01).astype(np.float32), 0))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden"))
    args = ap.parse_args()
    out = []
    for name, x, y, axis in make_cases():
        whole = metrics(x, y)
        peer = torch_metrics(x, y)
        for k, v in peer.items():
            if abs(v - whole[k]) > 1e-5 * max(1.0, abs(whole[k])):
                raise SystemExit(f"{name}: torch {k} {v} disagrees with numpy {whole[k]}")
        ax = axis % x.ndim
        per = []
        for c in range(x.shape[ax]):
            per.append(metrics(np.take(x, c, axis=ax), np.take(y, c, axis=ax)))
        out.append({"name": name, "shape": list(x.shape), "axis": axis, "x": f32list(x), "y": f32list(y),
                    "whole": whole, "torch": peer, "per_channel": per})
    doc = {
        "generator": GENERATOR,
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "cases": out,
    }
    path = os.path.join(args.out, "metrics.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        for k in ("generator", "torch_version", "numpy_version"):
            f.write(f'"{k}": {json.dumps(doc[k])},\n')
        f.write('"cases": [\n')
        f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in out))
        f.write("\n]\n}\n")
    print(f"wrote {path} ({len(out)} cases)")


if __name__ == "__main__":
    main()
