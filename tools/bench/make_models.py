#!/usr/bin/python3
"""ONNX models for timing ONNX Runtime's QuantizeLinear / DequantizeLinear on the sizes of
bench_kernels (made at run time, never committed).

For every (op, granularity, size) two models are written: one with a single copy of the op
(timed per session.run: what a caller of ONNX Runtime pays) and one with K independent copies
reading the same input (each with its own, slightly different scale so that common
subexpression elimination keeps them apart); (T_K - T_1) / (K - 1) is the cost of one op inside
a graph, without the per-run overhead of the binding. Only the first copy's output is fetched.

  op             ONNX graph per copy                                        opset
  quantize       QuantizeLinear(x f32 -> int8)                               13 (21 per group)
  dequantize     DequantizeLinear(q int8 -> f32)                             13 (21 per group)
  fake_quantize  QuantizeLinear -> DequantizeLinear                          13 (21 per group)
  requantize     [Add(bias)] -> DequantizeLinear(acc int32, m) -> QuantizeLinear(1, zp)   13
  quantize_i16   QuantizeLinear(x f32 -> int16; scale / 32767 of int8's)      21
                 (quantkit's FloatMultiplier<RoundHalfEven> scheme; per channel with bias)

Parameters follow bench_kernels: x in [-1.1, 1.1], per tensor scale 1/127 and zero point 2;
per channel 64 rows along axis 0; per group blocks of 32 along the last axis (rows of
min(n, 4096)); requantization multiplier 0.0061, output zero point 3.

usage: make_models.py OUT_DIR SIZE [SIZE...]   -> OUT_DIR/manifest.json
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CHANNELS = 64
BLOCK = 32
ROW_LEN_MAX = 4096


def shape_of(gran, n):
    if gran == "per_tensor":
        return [n]
    if gran == "per_channel":
        return [CHANNELS, n // CHANNELS]
    row_len = min(n, ROW_LEN_MAX)
    return [n // row_len, row_len]


def param_count(gran, shape):
    if gran == "per_tensor":
        return 1
    if gran == "per_channel":
        return shape[0]
    return shape[0] * (shape[1] // BLOCK)


def quant_params(gran, shape, wide=False):
    """Scales and zero points as bench_kernels makes them (make_params; wide: int16)."""
    count = param_count(gran, shape)
    i = np.arange(count)
    qmax = 32767.0 if wide else 127.0
    zt = np.int16 if wide else np.int8
    if count == 1:
        scale = np.array([1.0 / qmax], dtype=np.float32)
        zp = np.array([2], dtype=zt)
    else:
        scale = ((0.5 + (i % 97) / 97.0) / qmax).astype(np.float32)
        zp = ((i % 5) - 2).astype(zt)
    if gran == "per_tensor":
        return scale.reshape([]), zp.reshape([])
    if gran == "per_channel":
        return scale, zp
    return scale.reshape([shape[0], shape[1] // BLOCK]), zp.reshape([shape[0], shape[1] // BLOCK])


def q_attrs(gran):
    if gran == "per_tensor":
        return {}
    if gran == "per_channel":
        return {"axis": 0}
    return {"axis": 1, "block_size": BLOCK}


def build(op, gran, n, copies):
    shape = shape_of(gran, n)
    scale, zp = quant_params(gran, shape, wide=(op == "quantize_i16"))
    nodes, inits, outputs = [], [], []
    attrs = q_attrs(gran)
    if op in ("quantize", "quantize_i16"):
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
        in_name, in_type = "x", "float32"
    elif op == "dequantize":
        inputs = [helper.make_tensor_value_info("q", TensorProto.INT8, shape)]
        in_name, in_type = "q", "int8"
    elif op == "fake_quantize":
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
        in_name, in_type = "x", "float32"
    else:
        inputs = [helper.make_tensor_value_info("acc", TensorProto.INT32, shape)]
        in_name, in_type = "acc", "int32"
    for k in range(copies):
        # Copies differ in the last bits of their scale: no CSE merges them, same work.
        s = (scale * np.float32(1.0 + 1e-6 * k)).astype(np.float32)
        sn, zn = f"scale{k}", f"zp{k}"
        y = f"y{k}"
        if op in ("quantize", "quantize_i16"):
            inits += [numpy_helper.from_array(s, sn), numpy_helper.from_array(zp, zn)]
            nodes.append(helper.make_node("QuantizeLinear", ["x", sn, zn], [y], name=f"q{k}", **attrs))
            outputs.append(helper.make_tensor_value_info(
                y, TensorProto.INT16 if op == "quantize_i16" else TensorProto.INT8, shape))
        elif op == "dequantize":
            inits += [numpy_helper.from_array(s, sn), numpy_helper.from_array(zp, zn)]
            nodes.append(helper.make_node("DequantizeLinear", ["q", sn, zn], [y], name=f"dq{k}", **attrs))
            outputs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, shape))
        elif op == "fake_quantize":
            inits += [numpy_helper.from_array(s, sn), numpy_helper.from_array(zp, zn)]
            nodes.append(helper.make_node("QuantizeLinear", ["x", sn, zn], [f"t{k}"], name=f"q{k}", **attrs))
            nodes.append(helper.make_node("DequantizeLinear", [f"t{k}", sn, zn], [y], name=f"dq{k}", **attrs))
            outputs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, shape))
        else:
            count = param_count(gran, shape)
            i = np.arange(count)
            m = np.asarray(0.0061 * (np.ones(count) if count == 1 else 1.0 + (i % 64) / 64.0)
                           * (1.0 + 1e-6 * k), dtype=np.float32)
            src = "acc"
            if gran == "per_channel":
                bias = (((i * 37) % 200) - 100).astype(np.int32).reshape([count, 1])
                inits.append(numpy_helper.from_array(bias, f"bias{k}"))
                nodes.append(helper.make_node("Add", ["acc", f"bias{k}"], [f"b{k}"], name=f"add{k}"))
                src = f"b{k}"
            inits += [numpy_helper.from_array(m.reshape([]) if count == 1 else m, f"m{k}"),
                      numpy_helper.from_array(np.zeros(m.shape, np.int32).reshape([]) if count == 1
                                              else np.zeros(m.shape, np.int32), f"mz{k}"),
                      numpy_helper.from_array(np.array(1.0, np.float32), f"one{k}"),
                      numpy_helper.from_array(np.array(3, np.int8), f"ozp{k}")]
            dq_attrs = {"axis": 0} if gran == "per_channel" else {}
            nodes.append(helper.make_node("DequantizeLinear", [src, f"m{k}", f"mz{k}"], [f"r{k}"],
                                          name=f"dq{k}", **dq_attrs))
            nodes.append(helper.make_node("QuantizeLinear", [f"r{k}", f"one{k}", f"ozp{k}"], [y], name=f"q{k}"))
            outputs.append(helper.make_tensor_value_info(y, TensorProto.INT8, shape))
    graph = helper.make_graph(nodes, f"{op}_{gran}_{n}_x{copies}", inputs, outputs, inits)
    opset = 21 if gran == "per_group32" or attrs.get("block_size") or op == "quantize_i16" else 13
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="quantkit-bench")
    model.ir_version = 8 if opset == 13 else 10
    if opset == 13:
        onnx.checker.check_model(model)  # Debian's onnx 1.12 knows opsets <= 17 only
    return model, {"name": in_name, "type": in_type, "dims": shape}


VARIANT = {"quantize": "half_even", "dequantize": "linear", "fake_quantize": "half_even",
           "requantize": "float", "quantize_i16": "half_even"}
BPE = {"quantize": 5, "dequantize": 5, "fake_quantize": 8, "requantize": 5, "quantize_i16": 6}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    sizes = [int(s) for s in sys.argv[2:]]
    os.makedirs(out, exist_ok=True)
    manifest = []
    for op in ("quantize", "dequantize", "fake_quantize", "requantize", "quantize_i16"):
        grans = (("per_tensor", "per_channel") if op in ("requantize", "quantize_i16")
                 else ("per_tensor", "per_channel", "per_group32"))
        for gran in grans:
            for n in sizes:
                copies = 32 if n <= (1 << 16) else (8 if n <= (1 << 20) else 3)
                entry = {"bench": f"{op}/{VARIANT[op]}/{gran}", "size": n, "bpe": BPE[op], "copies": copies}
                for c in (1, copies):
                    model, spec = build(op, gran, n, c)
                    path = os.path.join(out, f"{op}_{gran}_{n}_x{c}.onnx")
                    tmp = path + ".tmp"
                    onnx.save(model, tmp)
                    os.replace(tmp, path)
                    entry["model_1" if c == 1 else "model_k"] = path
                    entry["input"] = spec
                manifest.append(entry)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"make_models.py: {len(manifest)} cases in {out}")


if __name__ == "__main__":
    main()
