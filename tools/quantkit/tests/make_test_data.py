#!/usr/bin/python3
"""Test data for the quantkit CLI tests (tools/quantkit/tests/cli_tests.py).

Run with Debian's interpreter (numpy, python3-torch, python3-onnx):

    /usr/bin/python3 tools/quantkit/tests/make_test_data.py

Deterministic (fixed seed). Writes into tools/quantkit/tests/data/:

  small.npy               float32 [8, 6], normal(0.3, 1.5): the tensor `quantkit calibrate` observes
  calibrate_torch.json    PyTorch's observers on small.npy: for each case the CLI arguments and the
                          scale(s) / zero point(s) torch.ao.quantization computes (MinMaxObserver,
                          PerChannelMinMaxObserver, MovingAverageMinMaxObserver fed 2 rows a batch)
  ort_float.onnx          a float graph: x [N, 4] -> MatMul(W) -> y1 -> Relu -> y2 (output)
                          -> Sigmoid -> prob (output)
  ort_qdq.onnx            the same graph quantized the way ONNX Runtime's QDQ quantizer names
                          things (python3-onnxruntime is not available, so it is built by hand):
                          x -> QuantizeLinear -> x_QuantizeLinear_Output -> DequantizeLinear ->
                          x_DequantizeLinear_Output; W_quantized -> DequantizeLinear ->
                          W_DequantizeLinear_Output; the MatMul keeps writing y1, which gets
                          y1_QuantizeLinear_Output / y1_DequantizeLinear_Output; the graph output
                          y2 is written by Relu as y2_QuantizeLinear_Input and its DequantizeLinear
                          output keeps the name y2; Sigmoid stays float
  ort_x.npy               float32 [16, 4] inputs for both
"""

import json
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch.ao.quantization.observer import MinMaxObserver, MovingAverageMinMaxObserver, PerChannelMinMaxObserver

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data")


def f32(v):
    return float(np.float32(v))


def calibrate_cases(x):
    t = torch.from_numpy(x)
    cases = []

    def add(name, args, obs, batches=None):
        for b in batches if batches is not None else [t]:
            obs(b)
        scale, zp = obs.calculate_qparams()
        cases.append({"name": name, "args": args,
                      "scale": [f32(s) for s in scale.reshape(-1).tolist()],
                      "zero_point": [int(z) for z in zp.reshape(-1).tolist()]})

    add("minmax uint8 affine", ["--observer", "minmax", "--bits", "8"],
        MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_affine))
    add("minmax int8 symmetric", ["--observer", "minmax", "--bits", "8", "--signed", "--symmetric"],
        MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric))
    add("minmax uint8 symmetric (zero point 128)", ["--observer", "minmax", "--bits", "8", "--symmetric"],
        MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_symmetric))
    add("per-channel axis 1 int8 symmetric", ["--observer", "minmax", "--signed", "--symmetric", "--axis", "1"],
        PerChannelMinMaxObserver(ch_axis=1, dtype=torch.qint8, qscheme=torch.per_channel_symmetric))
    add("moving average, batches of 2 rows", ["--observer", "moving-average", "--batch", "2"],
        MovingAverageMinMaxObserver(averaging_constant=0.01, dtype=torch.quint8, qscheme=torch.per_tensor_affine),
        batches=[t[i:i + 2] for i in range(0, t.shape[0], 2)])
    return cases


def qparams_uint8(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = np.float32((hi - lo) / 255.0)
    zp = int(np.clip(np.round(-lo / s), 0, 255))
    return s, zp


def ort_models(rng):
    x = rng.normal(0.0, 1.0, size=(16, 4)).astype(np.float32)
    w = rng.normal(0.0, 0.8, size=(4, 3)).astype(np.float32)
    y1 = x @ w
    y2 = np.maximum(y1, 0)

    float_graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y1"], name="matmul"),
         helper.make_node("Relu", ["y1"], ["y2"], name="relu"),
         helper.make_node("Sigmoid", ["y2"], ["prob"], name="sigmoid")],
        "ort_float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y2", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(w, "W")])
    float_model = helper.make_model(float_graph, opset_imports=[helper.make_opsetid("", 13)],
                                    producer_name="quantkit tests")
    onnx.checker.check_model(float_model)

    sx, zx = qparams_uint8(float(x.min()), float(x.max()))
    s1, z1 = qparams_uint8(float(y1.min()), float(y1.max()))
    s2, z2 = qparams_uint8(float(y2.min()), float(y2.max()))
    sw = np.float32(np.abs(w).max() / 127.0)
    wq = np.clip(np.round(w / sw), -127, 127).astype(np.int8)
    inits = [
        numpy_helper.from_array(wq, "W_quantized"),
        numpy_helper.from_array(np.array(sw, dtype=np.float32), "W_scale"),
        numpy_helper.from_array(np.array(0, dtype=np.int8), "W_zero_point"),
    ]
    for name, s, z in (("x", sx, zx), ("y1", s1, z1), ("y2", s2, z2)):
        inits.append(numpy_helper.from_array(np.array(s, dtype=np.float32), f"{name}_scale"))
        inits.append(numpy_helper.from_array(np.array(z, dtype=np.uint8), f"{name}_zero_point"))
    qdq = lambda v, src, dst: [  # noqa: E731
        helper.make_node("QuantizeLinear", [src, f"{v}_scale", f"{v}_zero_point"], [f"{v}_QuantizeLinear_Output"],
                         name=f"{v}_QuantizeLinear"),
        helper.make_node("DequantizeLinear", [f"{v}_QuantizeLinear_Output", f"{v}_scale", f"{v}_zero_point"], [dst],
                         name=f"{v}_DequantizeLinear")]
    nodes = (qdq("x", "x", "x_DequantizeLinear_Output") +
             [helper.make_node("DequantizeLinear", ["W_quantized", "W_scale", "W_zero_point"],
                               ["W_DequantizeLinear_Output"], name="W_DequantizeLinear"),
              helper.make_node("MatMul", ["x_DequantizeLinear_Output", "W_DequantizeLinear_Output"], ["y1"],
                               name="matmul")] +
             qdq("y1", "y1", "y1_DequantizeLinear_Output") +
             [helper.make_node("Relu", ["y1_DequantizeLinear_Output"], ["y2_QuantizeLinear_Input"], name="relu")] +
             qdq("y2", "y2_QuantizeLinear_Input", "y2") +
             [helper.make_node("Sigmoid", ["y2"], ["prob"], name="sigmoid")])
    qdq_graph = helper.make_graph(nodes, "ort_qdq", float_graph.input, float_graph.output, inits)
    qdq_model = helper.make_model(qdq_graph, opset_imports=[helper.make_opsetid("", 13)],
                                  producer_name="quantkit tests (ONNX Runtime QDQ names)")
    onnx.checker.check_model(qdq_model)
    return float_model, qdq_model, x


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(1234)
    small = rng.normal(0.3, 1.5, size=(8, 6)).astype(np.float32)
    np.save(os.path.join(OUT, "small.npy"), small)
    doc = {"generator": "tools/quantkit/tests/make_test_data.py", "torch_version": torch.__version__,
           "data": "small.npy", "cases": calibrate_cases(small)}
    with open(os.path.join(OUT, "calibrate_torch.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    float_model, qdq_model, x = ort_models(rng)
    onnx.save(float_model, os.path.join(OUT, "ort_float.onnx"))
    onnx.save(qdq_model, os.path.join(OUT, "ort_qdq.onnx"))
    np.save(os.path.join(OUT, "ort_x.npy"), x)
    print(f"wrote {OUT}: small.npy, calibrate_torch.json, ort_float.onnx, ort_qdq.onnx, ort_x.npy")


if __name__ == "__main__":
    main()
