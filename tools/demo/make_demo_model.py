#!/usr/bin/python3
"""Trains quantkit's demo model -- a small CNN on scikit-learn's bundled digits set (8x8 images,
10 classes) -- and writes it with its data to examples/data/demo/:

  digits_cnn.onnx                 opset 13, input "input" float32 [batch,1,8,8] in [0,1],
                                  output "logits" float32 [batch,10]; batch is dynamic
  digits_calib.npy                float32 [256,1,8,8]  training images, for calibration
  digits_test_x.npy               float32 [540,1,8,8]  held-out test images
  digits_test_y.npy               int64   [540]        their labels
  digits_test_logits_torch.npy    float32 [540,10]     the float model's logits (PyTorch)
  digits_cnn.json                 what was trained: seed, epochs, nodes, test accuracy

Architecture (exported graph):
  Conv 3x3 1->16 pad 1 -> BatchNormalization -> Relu          (BN kept as a node: the loader's
  Conv 3x3 depthwise 16 (group 16) pad 1 -> Relu               folding pass has work to do)
  Conv 1x1 16->32 -> Relu -> MaxPool 2x2                       32x4x4
  Conv 3x3 32->32 pad 1, group 2 -> Relu -> AveragePool 2x2    32x2x2
  Flatten -> Gemm 128->64 -> Relu -> Gemm 64->10

Same train/test split as tools/make_example_data.py (30% test, stratified, random_state 0).
Deterministic: fixed seeds, one thread, torch.use_deterministic_algorithms; rerunning gives the
same weights, logits and accuracy (the .onnx bytes too, up to the producer version torch
writes). Run with Debian's /usr/bin/python3 (python3-torch, python3-sklearn, python3-onnx).

usage: tools/demo/make_demo_model.py [OUT_DIR]           write the files (default examples/data/demo)
       tools/demo/make_demo_model.py --check [OUT_DIR]   regenerate in a temporary folder and
                                                         compare byte for byte (exit 1 if not)
"""
import json
import os
import random
import sys
import tempfile
import warnings

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 20240611
EPOCHS = 40
BATCH = 64
LR = 3e-3


class DigitsCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1, bias=True)
        self.bn1 = torch.nn.BatchNorm2d(16)
        self.dw2 = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw2 = torch.nn.Conv2d(16, 32, 1)
        self.conv3 = torch.nn.Conv2d(32, 32, 3, padding=1, groups=2)
        self.fc1 = torch.nn.Linear(32 * 2 * 2, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.dw2(x))
        x = torch.nn.functional.max_pool2d(torch.relu(self.pw2(x)), 2)
        # count_include_pad=False (the same thing without padding): torch 1.13 otherwise exports
        # a zero Pad node in front of the AveragePool.
        x = torch.nn.functional.avg_pool2d(torch.relu(self.conv3(x)), 2, count_include_pad=False)
        x = torch.flatten(x, 1)
        return self.fc2(torch.relu(self.fc1(x)))


FILES = ["digits_cnn.onnx", "digits_cnn.json", "digits_calib.npy", "digits_test_x.npy",
         "digits_test_y.npy", "digits_test_logits_torch.npy"]


def train():
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.3, random_state=0, stratify=y)
    x_train_t = torch.from_numpy(np.ascontiguousarray(x_train))
    y_train_t = torch.from_numpy(y_train.astype(np.int64))

    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    gen = torch.Generator().manual_seed(SEED)
    n = len(x_train_t)
    for _ in range(EPOCHS):
        model.train()
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n, BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x_train_t[idx]), y_train_t[idx])
            loss.backward()
            opt.step()
        sched.step()
    model.eval()
    return model, x_train, y_train, x_test, y_test.astype(np.int64)


def write_atomic(path, write):
    tmp = path + ".tmp"
    write(tmp)
    os.replace(tmp, path)


def save_npy(path, array):
    def write(tmp):
        with open(tmp, "wb") as f:
            np.save(f, array)
    write_atomic(path, write)


def write_all(out):
    model, x_train, y_train, x_test, y_test = train()
    x_test_t = torch.from_numpy(np.ascontiguousarray(x_test))
    with torch.no_grad():
        logits = model(x_test_t).numpy().astype(np.float32)
        train_acc = float((model(torch.from_numpy(x_train)).argmax(1).numpy() == y_train).mean())
    correct = int((logits.argmax(1) == y_test).sum())

    onnx_path = os.path.join(out, "digits_cnn.onnx")

    def export(tmp):
        # TrainingMode.PRESERVE on an eval()-mode model exports inference BatchNormalization as
        # a node; TrainingMode.EVAL would fold it into the Conv during export.
        with warnings.catch_warnings():
            # "constant folding ... training-amenable mode": the model is in eval() mode.
            warnings.simplefilter("ignore", UserWarning)
            torch.onnx.export(
                model, x_test_t[:1], tmp, opset_version=13,
                input_names=["input"], output_names=["logits"],
                dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=True)
        import onnx
        m = onnx.load(tmp)
        onnx.checker.check_model(m, full_check=True)
        ops = [nd.op_type for nd in m.graph.node]
        if "BatchNormalization" not in ops:
            sys.exit(f"make_demo_model: the exported graph has no BatchNormalization node: {ops}")
        export.ops = ops
    write_atomic(onnx_path, export)

    save_npy(os.path.join(out, "digits_calib.npy"), np.ascontiguousarray(x_train[:256]))
    save_npy(os.path.join(out, "digits_test_x.npy"), np.ascontiguousarray(x_test))
    save_npy(os.path.join(out, "digits_test_y.npy"), y_test)
    save_npy(os.path.join(out, "digits_test_logits_torch.npy"), logits)
    meta = {
        "model": "digits_cnn.onnx",
        "made_by": "tools/demo/make_demo_model.py",
        "torch": torch.__version__,
        "seed": SEED, "epochs": EPOCHS, "batch": BATCH, "lr": LR,
        "parameters": sum(p.numel() for p in model.parameters()),
        "nodes": export.ops,
        "input": "input", "output": "logits",
        "test_samples": len(y_test),
        "test_correct": correct,
        "test_accuracy": correct / len(y_test),
        "train_accuracy": train_acc,
    }

    def write_json(tmp):
        with open(tmp, "w") as f:
            json.dump(meta, f, indent=2)
            f.write("\n")
    write_atomic(os.path.join(out, "digits_cnn.json"), write_json)

    print(f"digits CNN: {meta['parameters']} parameters; nodes: {' '.join(export.ops)}")
    print(f"float train accuracy {train_acc:.4f}; float test accuracy {correct / len(y_test):.4f} "
          f"({correct}/{len(y_test)})")
    print(f"wrote {os.path.normpath(out)}/: {' '.join(FILES)}")


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    if any(a.startswith("-") for a in args) or len(args) > 1:
        sys.exit(__doc__)
    out = args[0] if args else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "data", "demo")
    if not check:
        os.makedirs(out, exist_ok=True)
        write_all(out)
        return
    # --check: regenerate into a temporary folder and compare with OUT_DIR byte for byte.
    with tempfile.TemporaryDirectory() as tmp:
        write_all(tmp)
        differ = []
        for name in FILES:
            a, b = os.path.join(out, name), os.path.join(tmp, name)
            if not os.path.exists(a) or open(a, "rb").read() != open(b, "rb").read():
                differ.append(name)
        if differ:
            sys.exit(f"make_demo_model --check: {os.path.normpath(out)}: differ from a fresh run: {' '.join(differ)}")
        print(f"make_demo_model --check: {os.path.normpath(out)} is byte-identical to a fresh run")


if __name__ == "__main__":
    main()
