#!/usr/bin/python3
"""Golden outputs of ONNX Runtime's uint8 x int8 Conv / MatMul / Gemm on an x86-64 CPU without
AVX-VNNI, where MLAS sums each pair of products in int16 with saturation (VPMADDUBSW).

    /usr/bin/python3 tools/golden/gen_ort_saturation_golden.py [--out tests/golden]
        -> ort_saturation.json

Needs python3-onnx, python3-numpy, node and onnxruntime-node (tools/ort/install.sh), and a CPU
with AVX2 but neither avx512_vnni nor avx_vnni (elsewhere ONNX Runtime's kernels are exact and
there is nothing to record: the script refuses). Each case is a QDQ model
    X -> QuantizeLinear(uint8) -> DequantizeLinear -> op(., DequantizeLinear(W int8)) -> QuantizeLinear(uint8)
run by ONNX Runtime (graph optimization all: it fuses the QDQ node groups into QLinearConv,
QLinearMatMul, QGemm) twice: with its default session (session.x64quantprecision off: the
saturating kernels) and with session.x64quantprecision on (exact uint8 x uint8 kernels). The
JSON holds the integer input, weights, zero points, scales, attributes and both outputs.

Before writing, the script checks its own model of ONNX Runtime's arithmetic against both runs,
bit for bit: raw uint8 activations (zero point included; Conv padding holds the zero point) times
int8 weights, pairs (k = 2j, 2j + 1) of the reduction in channels-last order for Conv
((kernel position, input channel of the group), one product per group) and along K for MatMul /
Gemm, each pair clamped to int16; depthwise Conv exact; then ONNX Runtime's requantization in
float32 (scale = x_scale * w_scale / y_scale, acc * scale rounded half to even, + zero point,
clamped). tests/test_analysis_ort_saturation_onnx.cpp replays the cases through quantkit's
analysis::ort_pair_sums and through the integer mode with IntegerModeOptions::ort_pair_saturation.
Deterministic (numpy Generator, fixed seed).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_MODEL = os.path.join(HERE, '..', 'ort', 'run_model.mjs')


def cpu_flags():
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('flags'):
                return set(line.split(':', 1)[1].split())
    return set()


def model_bytes(op, x_shape, w, w_scale, x_scale, x_zp, y_scale, attrs):
    ws = np.asarray(w_scale, np.float32)
    inits = [numpy_helper.from_array(w.astype(np.int8), 'Wq'), numpy_helper.from_array(ws, 'ws'),
             numpy_helper.from_array(np.zeros(ws.shape, np.int8), 'wz'),
             numpy_helper.from_array(np.array(x_scale, np.float32), 'xs'),
             numpy_helper.from_array(np.array(x_zp, np.uint8), 'xz'),
             numpy_helper.from_array(np.array(y_scale, np.float32), 'ys'),
             numpy_helper.from_array(np.array(128, np.uint8), 'yz')]
    axis = {'axis': 0} if ws.ndim else {}
    if ws.ndim and op != 'Conv':
        axis = {'axis': 0 if attrs.get('transB') else 1}
    nodes = [helper.make_node('QuantizeLinear', ['X', 'xs', 'xz'], ['Xq']),
             helper.make_node('DequantizeLinear', ['Xq', 'xs', 'xz'], ['Xd']),
             helper.make_node('DequantizeLinear', ['Wq', 'ws', 'wz'], ['Wd'], **axis),
             helper.make_node(op, ['Xd', 'Wd'], ['Yf'], **attrs),
             helper.make_node('QuantizeLinear', ['Yf', 'ys', 'yz'], ['Y'])]
    g = helper.make_graph(nodes, 'case', [helper.make_tensor_value_info('X', TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info('Y', TensorProto.UINT8, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
    m.ir_version = 8
    return m.SerializeToString()


def run_ort(path, x_path, out_dir, precision):
    subprocess.run(['node', RUN_MODEL, path, '--input', 'X=' + x_path, '--output-dir', out_dir,
                    '--graph-optimization', 'all', '--x64-quant-precision', precision],
                   check=True, stdout=subprocess.DEVNULL)
    return np.load(os.path.join(out_dir, 'Y.npy')).astype(np.int64)


def conv_columns(xq, kernel, pads, strides, zp):
    """N x C x H x W (or N x C x L) -> per image, rows of (kernel position, channel) patches."""
    if xq.ndim == 3:
        xq = xq[:, :, None, :]
        kernel, pads, strides = [1] + kernel, [0, pads[0], 0, pads[1]], [1] + strides
    n, c, h, w = xq.shape
    kh, kw = kernel
    xp = np.full((n, c, h + pads[0] + pads[2], w + pads[1] + pads[3]), zp, np.int64)
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + w] = xq
    oh = (xp.shape[2] - kh) // strides[0] + 1
    ow = (xp.shape[3] - kw) // strides[1] + 1
    cols = np.empty((n, oh * ow, kh * kw, c), np.int64)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw]
            cols[:, i * ow + j] = patch.reshape(n, c, kh * kw).transpose(0, 2, 1)
    return cols, oh * ow  # n x positions x taps x c


def pair_sums(a, w, saturate):
    """a: rows x K, w: K x cols -> rows x cols sums of int16-clamped pairs."""
    k = a.shape[1]
    if k % 2:
        a = np.pad(a, ((0, 0), (0, 1)))
        w = np.pad(w, ((0, 1), (0, 0)))
    p = a[:, 0::2, None] * w[None, 0::2, :] + a[:, 1::2, None] * w[None, 1::2, :]
    if saturate:
        p = np.clip(p, -32768, 32767)
    return p.sum(1)


def model_accumulators(case, saturate):
    x = np.array(case['x'], np.int64).reshape(case['x_shape'])
    w = np.array(case['w'], np.int64).reshape(case['w_shape'])
    zp = case['x_zero_point']
    if case['op'] == 'Conv':
        a = case['attrs']
        group = a.get('group', 1)
        m, cg = w.shape[0], w.shape[1]
        mg = m // group
        spatial = w.shape[2:]
        npad = len(spatial)
        cols, positions = conv_columns(x, list(spatial), a.get('pads', [0] * 2 * npad), a.get('strides', [1] * npad), zp)
        n = x.shape[0]
        acc = np.zeros((n, m, positions), np.int64)
        for gi in range(group):
            rows = cols[:, :, :, gi * cg:(gi + 1) * cg].reshape(n * positions, -1)
            wk = w[gi * mg:(gi + 1) * mg].reshape(mg, cg, -1).transpose(0, 2, 1).reshape(mg, -1).T
            depthwise = cg == 1 and mg == 1
            s = pair_sums(rows, wk, saturate and not depthwise)
            acc[:, gi * mg:(gi + 1) * mg] = s.reshape(n, positions, mg).transpose(0, 2, 1)
        wsum = w.reshape(m, -1).sum(1)
        return (acc - zp * wsum[None, :, None]).reshape(-1)
    trans_b = case['attrs'].get('transB', 0)
    wk = w.T if trans_b else w
    a = x.T if case['attrs'].get('transA', 0) else x.reshape(-1, wk.shape[0])  # transA: x is K x rows
    acc = pair_sums(a, wk, saturate) - zp * wk.sum(0)[None, :]
    return acc.reshape(-1)


def requantize(case, acc):
    """ONNX Runtime's requantization, in float32."""
    xs = np.float32(case['x_scale'])
    ys = np.float32(case['y_scale'])
    ws = np.asarray(case['w_scale'], np.float32)
    acc = acc.astype(np.int64)
    if case['op'] == 'Conv':
        m = np.array(case['w_shape'][0])
        per = ws if ws.ndim else np.full(m, ws, np.float32)
        positions = acc.size // (case['x_shape'][0] * m)
        scale = np.repeat(np.tile((xs * per / ys).astype(np.float32), case['x_shape'][0]), positions)
    else:
        cols = case['w_shape'][0] if case['attrs'].get('transB') else case['w_shape'][1]
        per = ws if ws.ndim else np.full(cols, ws, np.float32)
        scale = np.tile((xs * per / ys).astype(np.float32), acc.size // cols)
    y = np.rint(acc.astype(np.float32) * scale) + 128
    return np.clip(y, 0, 255).astype(np.int64)


def make_cases(rng):
    specs = [
        # name, op, x_shape, w_shape, attrs, x_zero_point, per_channel
        ('conv_c1_k3_pad1', 'Conv', [2, 1, 9, 9], [8, 1, 3, 3], {'pads': [1, 1, 1, 1]}, 0, False),
        ('conv_c3_k3_stride2_zp128', 'Conv', [1, 3, 11, 11], [8, 3, 3, 3], {'pads': [1, 1, 1, 1], 'strides': [2, 2]}, 128, True),
        ('conv_c4_k3_zp37', 'Conv', [1, 4, 8, 8], [16, 4, 3, 3], {'pads': [1, 1, 1, 1]}, 37, True),
        ('conv_c5_k5_pad2_zp10', 'Conv', [1, 5, 8, 8], [6, 5, 5, 5], {'pads': [2, 2, 2, 2]}, 10, False),
        ('conv_c7_k1_zp128', 'Conv', [1, 7, 6, 6], [8, 7, 1, 1], {}, 128, True),
        ('conv_c64_k3_zp128', 'Conv', [1, 64, 5, 5], [16, 64, 3, 3], {'pads': [1, 1, 1, 1]}, 128, True),
        ('conv_group2', 'Conv', [1, 4, 7, 7], [4, 2, 3, 3], {'pads': [1, 1, 1, 1], 'group': 2}, 128, False),
        ('conv_group3_multiplier2', 'Conv', [1, 3, 7, 7], [6, 1, 3, 3], {'pads': [1, 1, 1, 1], 'group': 3}, 128, True),
        ('conv_depthwise', 'Conv', [1, 4, 7, 7], [4, 1, 3, 3], {'pads': [1, 1, 1, 1], 'group': 4}, 128, True),
        ('conv1d_c3_k5', 'Conv', [1, 3, 20], [8, 3, 5], {'pads': [2, 2]}, 128, False),
        ('matmul_k33_zp200', 'MatMul', [3, 33], [33, 9], {}, 200, False),
        ('matmul_k300_batched', 'MatMul', [2, 3, 300], [300, 16], {}, 128, True),
        ('gemm_transb_k40', 'Gemm', [4, 40], [12, 40], {'transB': 1}, 100, True),
        ('gemm_k17', 'Gemm', [3, 17], [17, 5], {}, 64, False),
        ('gemm_transa_k24', 'Gemm', [24, 3], [24, 7], {'transA': 1}, 128, True),
        ('gemm_transa_transb_k31', 'Gemm', [31, 2], [5, 31], {'transA': 1, 'transB': 1}, 50, False),
    ]
    cases = []
    for name, op, x_shape, w_shape, attrs, zp, per_channel in specs:
        x = rng.integers(0, 256, size=x_shape)
        x[rng.random(x_shape) < 0.5] = 255        # activations at the top of uint8: where pairs overflow
        w = rng.integers(-128, 128, size=w_shape)
        w[rng.random(w_shape) < 0.4] = 127
        w[rng.random(w_shape) < 0.1] = -128
        k = int(np.prod(w_shape[1:])) if op == 'Conv' else (w_shape[1] if attrs.get('transB') else w_shape[0])
        channels = w_shape[0] if (op == 'Conv' or attrs.get('transB')) else w_shape[1]
        w_scale = (rng.uniform(0.5, 2.0, size=channels).astype(np.float32).tolist() if per_channel else 1.0)
        case = {'name': name, 'op': op, 'attrs': attrs, 'x_shape': x_shape, 'x': x.reshape(-1).tolist(),
                'x_zero_point': zp, 'x_scale': 0.02, 'w_shape': w_shape, 'w': w.reshape(-1).tolist(),
                'w_scale': w_scale, 'y_scale': float(np.float32(0.02 * 60 * np.sqrt(k))), 'y_zero_point': 128}
        cases.append(case)
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=os.path.join(HERE, '..', '..', 'tests', 'golden'))
    args = ap.parse_args()
    flags = cpu_flags()
    if 'avx2' not in flags or flags & {'avx512_vnni', 'avx_vnni'}:
        sys.exit('gen_ort_saturation_golden.py: this CPU has ' +
                 ('VNNI' if flags & {'avx512_vnni', 'avx_vnni'} else 'no AVX2') +
                 '; expected AVX2 without VNNI (where ONNX Runtime saturates pair sums)')
    rng = np.random.default_rng(20261127)
    cases = make_cases(rng)
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            xq = np.array(case['x'], np.int64).reshape(case['x_shape'])
            x = ((xq - case['x_zero_point']) * np.float32(case['x_scale'])).astype(np.float32)
            ws = np.asarray(case['w_scale'], np.float32)
            mpath = os.path.join(tmp, 'm.onnx')
            with open(mpath, 'wb') as f:
                f.write(model_bytes(case['op'], case['x_shape'], np.array(case['w']).reshape(case['w_shape']),
                                    ws, case['x_scale'], case['x_zero_point'], case['y_scale'], case['attrs']))
            xpath = os.path.join(tmp, 'x.npy')
            np.save(xpath, x)
            off = run_ort(mpath, xpath, os.path.join(tmp, 'off'), 'off').reshape(-1)
            on = run_ort(mpath, xpath, os.path.join(tmp, 'on'), 'on').reshape(-1)
            exact = requantize(case, model_accumulators(case, False))
            sat = requantize(case, model_accumulators(case, True))
            if not np.array_equal(on, exact):
                sys.exit(f"{case['name']}: ONNX Runtime (x64quantprecision on) differs from the exact model in "
                         f"{int((on != exact).sum())} outputs")
            if not np.array_equal(off, sat):
                sys.exit(f"{case['name']}: ONNX Runtime (default session) differs from the saturating model in "
                         f"{int((off != sat).sum())} outputs")
            case['ort_default'] = off.tolist()
            case['ort_exact'] = on.tolist()
            print(f"{case['name']:28s} outputs {off.size:5d}, differ between the sessions: {int((off != on).sum())}")
    out = {'generator': 'tools/golden/gen_ort_saturation_golden.py',
           'peer': 'onnxruntime-node ' + json.load(open(os.path.join(HERE, '..', 'ort', 'node_modules',
                                                                     'onnxruntime-node', 'package.json')))['version'],
           'cpu': 'x86-64 with AVX2, without AVX-VNNI',
           'cases': cases}
    path = os.path.join(args.out, 'ort_saturation.json')
    with open(path, 'w') as f:
        json.dump(out, f, separators=(',', ':'))
        f.write('\n')
    print('wrote', os.path.relpath(path))


if __name__ == '__main__':
    main()
