#!/usr/bin/python3
"""Writes the hostile inputs of bad_inputs.py into data/bad/ (committed; rerun by hand with
Debian's python3-onnx and python3-numpy when they need to change):

  python3 tools/quantkit/tests/make_bad_inputs.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "bad")


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def save(model, name, check=False):
    if check:
        onnx.checker.check_model(model)
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(model.SerializeToString())


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "bad", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_bad_inputs")


def main():
    os.makedirs(OUT, exist_ok=True)
    w = numpy_helper.from_array(np.ones((4, 8), np.float32), "w")
    # A valid small float model: x[2, 8] -> MatMul(w^T...) -> Relu -> y
    wt = numpy_helper.from_array(np.ones((8, 4), np.float32), "w")
    good = model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                  helper.make_node("Relu", ["h"], ["y"], name="relu")],
                 [vi("x", [2, 8])], [vi("y", [2, 4])], [wt])
    save(good, "small_float.onnx", check=True)
    # Unsupported op.
    save(model([helper.make_node("Hardmax", ["x"], ["y"], name="hm")], [vi("x", [2, 8])], [vi("y", [2, 8])]),
         "unsupported_op.onnx")
    # Missing initializer: MatMul reads 'w' that nothing defines.
    save(model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [2, 8])], [vi("y", [2, 4])]),
         "missing_initializer.onnx")
    # A cycle: a -> b -> a.
    save(model([helper.make_node("Add", ["x", "b"], ["a"], name="add_a"),
                helper.make_node("Relu", ["a"], ["b"], name="relu_b"),
                helper.make_node("Relu", ["a"], ["y"], name="relu_y")],
               [vi("x", [2, 8])], [vi("y", [2, 8])]), "cycle.onnx")
    # A dangling output: 'z' is declared but nothing produces it.
    save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2, 8])],
               [vi("y", [2, 8]), vi("z", [2, 8])]), "dangling_output.onnx")
    # Graph with no nodes / no outputs.
    save(model([], [vi("x", [2, 8])], []), "no_outputs.onnx")
    # A QDQ model: x -> Q -> DQ -> y, with bad scales / zero points.
    def qdq(scale, zp, zp_type=TensorProto.UINT8):
        s = numpy_helper.from_array(np.array(scale, np.float32), "s")
        z = helper.make_tensor("z", zp_type, [], [zp])
        return model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
                      helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequant")],
                     [vi("x", [2, 8])], [vi("y", [2, 8])], [s, z])
    save(qdq(0.0, 0), "qdq_zero_scale.onnx")
    save(qdq(-0.5, 0), "qdq_negative_scale.onnx")
    save(qdq(float("nan"), 0), "qdq_nan_scale.onnx")
    save(qdq(0.1, 300, TensorProto.INT32), "qdq_zero_point_int32.onnx")
    # Zero point 300 does not fit the uint8 the zero point declares (int32_data out of range).
    m = qdq(0.1, 0)
    for t in m.graph.initializer:
        if t.name == "z":
            t.int32_data[:] = [300]
    save(m, "qdq_zero_point_out_of_range.onnx")
    # Wrong input rank: the model wants [2, 8]; tests feed [2, 1, 8, 8] data.
    # A model whose initializer declares more data than it holds.
    m = good.__class__()
    m.CopyFrom(good)
    m.graph.initializer[0].raw_data = m.graph.initializer[0].raw_data[:-4]
    save(m, "truncated_initializer.onnx")
    # An initializer declaring 2^40 elements with no data.
    m.CopyFrom(good)
    del m.graph.initializer[0].dims[:]
    m.graph.initializer[0].dims.extend([1 << 20, 1 << 20])
    m.graph.initializer[0].raw_data = b""
    save(m, "huge_initializer.onnx")
    # External data.
    m.CopyFrom(good)
    t = m.graph.initializer[0]
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "weights.bin"
    t.raw_data = b""
    save(m, "external_data.onnx")
    # A string input (unsupported element type).
    save(model([helper.make_node("Identity", ["x"], ["y"], name="id")], [vi("x", [2], TensorProto.STRING)],
               [vi("y", [2], TensorProto.STRING)]), "string_input.onnx")
    # .npy files: Fortran order, truncated, big-endian, a bad header, NaN / Inf data, empty.
    np.save(os.path.join(OUT, "fortran.npy"), np.asfortranarray(np.ones((2, 8), np.float32)))
    np.save(os.path.join(OUT, "x_2x8.npy"), np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8))
    np.save(os.path.join(OUT, "x_rank3.npy"), np.ones((2, 1, 8), np.float32))
    np.save(os.path.join(OUT, "x_int32.npy"), np.ones((2, 8), np.int32))
    np.save(os.path.join(OUT, "x_nan.npy"), np.array([[0.5] * 7 + [np.nan]] * 2, np.float32))
    np.save(os.path.join(OUT, "x_inf.npy"), np.array([[0.5] * 7 + [np.inf]] * 2, np.float32))
    np.save(os.path.join(OUT, "x_empty.npy"), np.zeros((0, 8), np.float32))
    np.save(os.path.join(OUT, "digits_empty.npy"), np.zeros((0, 1, 8, 8), np.float32))
    np.save(os.path.join(OUT, "bigendian.npy"), np.ones((2, 8), ">f4"))
    with open(os.path.join(OUT, "x_2x8.npy"), "rb") as f:
        data = f.read()
    with open(os.path.join(OUT, "truncated.npy"), "wb") as f:
        f.write(data[:-5])
    with open(os.path.join(OUT, "bad_header.npy"), "wb") as f:
        f.write(data[:10] + b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }".ljust(len(data) - 10))
    with open(os.path.join(OUT, "random.bin"), "wb") as f:
        f.write(bytes((i * 37 + 11) % 256 for i in range(257)))


if __name__ == "__main__":
    main()
