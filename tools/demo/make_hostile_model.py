#!/usr/bin/python3
"""Trains a small CNN on scikit-learn's digits (the demo model's data and split) and makes it
hostile to per-tensor weight quantization without changing what it computes: the output
channels of conv1, conv2 and fc1 are multiplied by factors spread log-uniformly over 100x
(0.1 .. 10, in a fixed shuffled order) and the next layer's matching inputs divided by the same
factors (ReLU and max pooling commute with positive per-channel scales). Per-channel weight
ranges inside each of those tensors then lie ~100x (times their natural spread) apart: one scale
per tensor leaves the small channels a handful of integer levels. Cross-layer equalization
undoes exactly this kind of rescaling, which is what quantkit's PTQ remedies table shows.

Writes to examples/data/demo/ (the calibration and test .npy files are the demo model's):

  digits_hostile.onnx      opset 13, input "input" float32 [batch,1,8,8], output "logits" [batch,10]
                           Conv 3x3 1->16 pad 1 -> Relu -> Conv 3x3 16->32 pad 1 -> Relu ->
                           MaxPool 2x2 -> Flatten -> Gemm 512->64 -> Relu -> Gemm 64->10
  digits_hostile.json      seed, epochs, the factors, per-channel weight ranges, test accuracy

Deterministic (fixed seeds, one thread, deterministic algorithms). Run with Debian's
/usr/bin/python3 (python3-torch, python3-sklearn, python3-onnx).

usage: tools/demo/make_hostile_model.py [OUT_DIR]     (default examples/data/demo)
"""
import json
import os
import random
import sys
import warnings

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 20240612
EPOCHS = 30
BATCH = 64
LR = 3e-3
SPREAD = 100.0  # ratio between the largest and the smallest channel factor


class HostileCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = torch.nn.Linear(32 * 4 * 4, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(torch.relu(self.fc1(x)))


def data():
    # The split of tools/demo/make_demo_model.py (and tools/make_example_data.py).
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    return train_test_split(x, y, test_size=0.3, random_state=0, stratify=y)


def factors(n, rng):
    f = SPREAD ** (np.arange(n) / (n - 1) - 0.5)  # 0.1 .. 10 for SPREAD 100
    rng.shuffle(f)
    return f.astype(np.float64)


def make_hostile(model):
    """Rescales output channels of conv1, conv2, fc1 by f and the next layer's inputs by 1/f."""
    rng = np.random.RandomState(SEED)
    used = {}
    with torch.no_grad():
        for first, second, block in (("conv1", "conv2", 1), ("conv2", "fc1", 16), ("fc1", "fc2", 1)):
            a, b = getattr(model, first), getattr(model, second)
            f = factors(a.weight.shape[0], rng)
            ft = torch.from_numpy(f).to(torch.float32)
            a.weight.mul_(ft.view(-1, *([1] * (a.weight.dim() - 1))))
            a.bias.mul_(ft)
            inv = (1.0 / ft).repeat_interleave(block)  # flatten: channel c -> inputs c*16 .. c*16+15
            b.weight.mul_(inv.view(1, -1, *([1] * (b.weight.dim() - 2))))
            used[first] = [float(v) for v in f]
    return used


def channel_ranges(w):
    return [float(v) for v in w.detach().abs().reshape(w.shape[0], -1).max(1).values]


def main():
    args = sys.argv[1:]
    if any(a.startswith("-") for a in args) or len(args) > 1:
        sys.exit(__doc__)
    out = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "data", "demo")
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    x_train, x_test, y_train, y_test = data()
    demo_test = os.path.join(out, "digits_test_x.npy")
    if os.path.exists(demo_test) and not np.array_equal(np.load(demo_test), x_test):
        sys.exit(f"make_hostile_model: {demo_test} is not this split's test set; run tools/demo/make_demo_model.py first")
    xt = torch.from_numpy(np.ascontiguousarray(x_train))
    yt = torch.from_numpy(y_train.astype(np.int64))
    model = HostileCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    gen = torch.Generator().manual_seed(SEED)
    for _ in range(EPOCHS):
        model.train()
        perm = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx]).backward()
            opt.step()
        sched.step()
    model.eval()

    x_test_t = torch.from_numpy(np.ascontiguousarray(x_test))
    with torch.no_grad():
        before = model(x_test_t)
    used = make_hostile(model)
    with torch.no_grad():
        after = model(x_test_t)
    drift = float((after - before).abs().max())
    if drift > 1e-3:
        sys.exit(f"make_hostile_model: rescaling changed the logits by {drift}")
    correct = int((after.argmax(1).numpy() == y_test).sum())

    path = os.path.join(out, "digits_hostile.onnx")
    tmp = path + ".tmp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        torch.onnx.export(model, x_test_t[:1], tmp, opset_version=13, input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, do_constant_folding=True)
    import onnx
    onnx.checker.check_model(onnx.load(tmp), full_check=True)
    os.replace(tmp, path)

    meta = {
        "model": "digits_hostile.onnx",
        "made_by": "tools/demo/make_hostile_model.py",
        "torch": torch.__version__,
        "seed": SEED, "epochs": EPOCHS, "batch": BATCH, "lr": LR, "spread": SPREAD,
        "factors": used,
        "channel_weight_ranges": {name: channel_ranges(getattr(model, name).weight) for name in ("conv1", "conv2", "fc1", "fc2")},
        "logit_drift_from_rescaling": drift,
        "test_samples": len(y_test),
        "test_correct": correct,
        "test_accuracy": correct / len(y_test),
    }
    tmp = os.path.join(out, "digits_hostile.json.tmp")
    with open(tmp, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(out, "digits_hostile.json"))
    r = meta["channel_weight_ranges"]
    print(f"digits hostile CNN: float test accuracy {correct / len(y_test):.4f} ({correct}/{len(y_test)}); "
          f"logit drift from rescaling {drift:.2e}")
    for name in ("conv1", "conv2", "fc1"):
        print(f"  {name}: channel weight ranges {min(r[name]):.4g} .. {max(r[name]):.4g} ({max(r[name]) / min(r[name]):.0f}x)")
    print(f"wrote {os.path.normpath(out)}/digits_hostile.onnx, digits_hostile.json")


if __name__ == "__main__":
    main()
