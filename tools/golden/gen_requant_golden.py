#!/usr/bin/python3
"""Golden vectors for gemmlowp/TFLite fixed-point requantization and N2D2-style shifts.

    python3 tools/golden/gen_requant_golden.py [--out tests/golden]   -> requant.json

An independent implementation in Python's arbitrary-precision ints, written from the published
definitions (gemmlowp fixedpoint/fixedpoint.h: SaturatingRoundingDoublingHighMul,
RoundingDivideByPOT; TFLite kernels/internal/quantization_util.cc: QuantizeMultiplier;
kernels/internal/common.h: MultiplyByQuantizedMultiplier with and without
TFLITE_SINGLE_ROUNDING; N2D2's SINGLE_SHIFT / DOUBLE_SHIFT rescaling). No numpy, no torch:
any python3 works. Deterministic (random.Random with a fixed seed); byte-identical reruns.

Formulas (x, a, b int32; all intermediate arithmetic exact):
  QuantizeMultiplier(m), m >= 0 double:
      m == 0 -> (0, 0); (q, shift) = frexp(m) (q in [0.5, 1));
      q_fixed = round_half_away(q * 2^31); if q_fixed == 2^31: q_fixed //= 2, shift += 1;
      if shift < -31: shift = 0, q_fixed = 0.
      Single-rounding build (TFLITE_SINGLE_ROUNDING) additionally: if shift > 30:
      shift = 30, q_fixed = 2^31 - 1.
  SRDHM(a, b): a == b == INT32_MIN -> INT32_MAX; else ab = a*b,
      nudge = 2^30 if ab >= 0 else 1 - 2^30, result = trunc((ab + nudge) / 2^31).
      (Ties go toward +infinity: SRDHM(-3, 2^30) = -1, SRDHM(3, 2^30) = 2.)
  RDBP(x, e), e in [0, 31]: mask = 2^e - 1, rem = x & mask, thr = (mask >> 1) + (x < 0),
      result = (x >> e) + (rem > thr)   (ties away from zero).
  Double rounding (gemmlowp, TFLite default): left = max(shift, 0), right = max(-shift, 0),
      RDBP(SRDHM(x * 2^left, q), right). When x * 2^left leaves int32 the peers compute
      int32 overflow (undefined behaviour): such entries are null.
  Single rounding (TFLITE_SINGLE_ROUNDING), shift in [-31, 30]:
      (x * q + 2^(30 - shift)) >> (31 - shift), arithmetic shift on the exact product. The
      exact result is recorded even when it leaves int32 (TFLite only DCHECKs that).
  N2D2 single shift: acc >> s (floor). N2D2 double shift:
      (acc + (acc << s1) + 2^(s2 - 1)) >> s2, 0 < s1 < s2 (the multiplier 2^-s2 + 2^(s1-s2)).
      Exact results are recorded (they can leave int32 when s1 = s2 - 1).

Schema of requant.json (all ints are JSON ints, doubles are JSON numbers whose shortest repr
round-trips, plus their float.hex() form for people):
  {"generator", "python_version_independent": true, "formulas": {...},
   "quantize_multiplier": [{"m", "m_hex", "multiplier", "shift",
                            "multiplier_single", "shift_single"}],
   "srdhm": [{"a", "b", "result"}],
   "rdbp": [{"x", "exponent", "result"}],
   "multiply_by_quantized_multiplier":
       [{"multiplier", "shift", "x": [int], "double_rounding": [int | null],
         "single_rounding": [int] | null  (null when shift > 30: not a single-rounding input)}],
   "requantize_from_real":      (m -> QuantizeMultiplier -> apply, per accumulator)
       [{"m", "m_hex", "acc": [int], "double_rounding": [int | null],
         "single_rounding": [int]}],
   "requantize_output":         (out = clamp(apply(acc + bias) + zp, lo, hi); acc + bias
                                 stays inside int32 and x * 2^left never overflows)
       [{"m", "m_hex", "bias", "zero_point", "clamp_min", "clamp_max", "acc": [int],
         "out_double_rounding": [int], "out_single_rounding": [int]}],
   "single_shift": [{"s", "acc": [int], "result": [int]}],
   "double_shift": [{"s1", "s2", "acc": [int], "result": [int]}]}
"""

import argparse
import json
import math
import os
import random

GENERATOR = "tools/golden/gen_requant_golden.py"
I32_MIN = -2**31
I32_MAX = 2**31 - 1


def fits_i32(v):
    return I32_MIN <= v <= I32_MAX


# ------------------------------------------------------------------ primitives

def round_half_away(v):
    """v: a double whose value is exact (q * 2^31). Ties away from zero, exactly."""
    from fractions import Fraction
    f = Fraction(v)
    n = math.floor(abs(f))
    if abs(f) - n >= Fraction(1, 2):
        n += 1
    return n if f >= 0 else -n


def quantize_multiplier(m, single_rounding=False):
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    q_fixed = round_half_away(q * 2.0**31)
    assert q_fixed <= 2**31
    if q_fixed == 2**31:
        q_fixed //= 2
        shift += 1
    assert q_fixed <= I32_MAX
    if shift < -31:
        shift = 0
        q_fixed = 0
    if single_rounding and shift > 30:
        shift = 30
        q_fixed = 2**31 - 1
    return q_fixed, shift


def trunc_div(n, d):
    """n / d rounded toward zero (C integer division), d > 0."""
    q = abs(n) // d
    return q if n >= 0 else -q


def srdhm(a, b):
    assert fits_i32(a) and fits_i32(b)
    if a == b == I32_MIN:
        return I32_MAX
    ab = a * b
    nudge = 2**30 if ab >= 0 else 1 - 2**30
    r = trunc_div(ab + nudge, 2**31)
    assert fits_i32(r)
    return r


def rdbp(x, e):
    assert fits_i32(x) and 0 <= e <= 31
    mask = (1 << e) - 1
    rem = x & mask            # Python's & on negative ints is two's complement: as in C
    thr = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > thr else 0)   # >> on negative ints is floor: arithmetic


def mbqm_double(x, qm, shift):
    left = max(shift, 0)
    right = max(-shift, 0)
    xs = x * 2**left
    if not fits_i32(xs):
        return None  # int32 overflow in the peers (undefined behaviour)
    return rdbp(srdhm(xs, qm), right)


def mbqm_single(x, qm, shift):
    assert -31 <= shift <= 30
    total = 31 - shift
    return (x * qm + (1 << (total - 1))) >> total


def single_shift(acc, s):
    return acc >> s


def double_shift(acc, s1, s2):
    return (acc + (acc << s1) + (1 << (s2 - 1))) >> s2


# ------------------------------------------------------------------ cases

def interesting_accs(rng, n_random=24):
    base = [I32_MIN, I32_MIN + 1, I32_MIN + 2, -2**30 - 1, -2**30, -65536, -257, -255, -128,
            -3, -2, -1, 0, 1, 2, 3, 127, 128, 255, 65535, 2**30 - 1, 2**30, I32_MAX - 1, I32_MAX]
    base += [rng.randint(I32_MIN, I32_MAX) for _ in range(n_random // 2)]
    base += [rng.randint(-2**20, 2**20) for _ in range(n_random // 2)]
    return base


def multipliers(rng):
    ms = [
        0.0, 1.0, 0.5, 0.25, 0.75, 2.0**-31, 2.0**-32, 2.0**-33, 3 * 2.0**-34, 3 * 2.0**-33,
        1e-10, 1e-6, 0.1, 0.3, 1.0 / 3.0, 1.0 / 255.0, 0.0039215686, 0.999999999,
        1.0 - 2.0**-33,            # q * 2^31 = 2^31 - 0.25 -> 2^31: halved, shift + 1
        1.0 - 2.0**-32,            # q * 2^31 = 2^31 - 0.5 (tie) -> away -> 2^31: halved
        1.0 - 2.0**-31,            # exactly 2^31 - 1
        0.5 + 2.0**-32,            # q * 2^31 = 2^30 + 0.5 (tie) -> 2^30 + 1
        0.5 + 3 * 2.0**-33,        # 2^30 + 0.75 -> 2^30 + 1
        0.75 + 2.0**-33,           # 1.5 * 2^30 + 0.25 -> down
        0.75 + 2.0**-32,           # tie -> up
        1.5, 2.0, 3.7, 1000.5, 12345.678, 2.0**29, 2.0**30 - 1, 2.0**30,
        2.0**31, 2.0**31 + 2.0**20, 2.0**40, 1.0e12,
    ]
    for _ in range(20):
        ms.append(2.0 ** rng.uniform(-34.0, 12.0))
    for _ in range(8):
        ms.append(rng.uniform(0.0, 1.0))
    return ms


def hexm(m):
    return float.hex(m)


def gen_quantize_multiplier(rng):
    out = []
    for m in multipliers(rng):
        qm, sh = quantize_multiplier(m)
        qs, ss = quantize_multiplier(m, single_rounding=True)
        out.append({"m": m, "m_hex": hexm(m), "multiplier": qm, "shift": sh,
                    "multiplier_single": qs, "shift_single": ss})
    return out


def gen_srdhm(rng):
    pairs = [(I32_MIN, I32_MIN), (I32_MIN, I32_MAX), (I32_MAX, I32_MIN), (I32_MAX, I32_MAX),
             (I32_MIN, 1), (1, I32_MIN), (I32_MIN, -1), (-1, I32_MIN), (0, I32_MIN), (0, 0),
             (I32_MAX, 1), (I32_MAX, -1), (1, 1), (-1, -1), (1, -1)]
    for a in (1, 3, 5, 7, -1, -3, -5, -7, 2**29 + 1, -(2**29 + 1), I32_MAX, I32_MIN + 1):
        pairs.append((a, 2**30))                       # ab / 2^31 = a / 2: ties for odd a
    for k in (1, 3, -1, -3):
        pairs.append((k * 2**16 + 1, 2**14))           # near-ties
    for a, b in ((3, 2**30 + 1), (-3, 2**30 + 1), (3, 2**30 - 1), (-3, 2**30 - 1)):
        pairs.append((a, b))
    for _ in range(40):
        pairs.append((rng.randint(I32_MIN, I32_MAX), rng.randint(I32_MIN, I32_MAX)))
    for _ in range(20):
        pairs.append((rng.randint(-2**16, 2**16), rng.randint(2**30, I32_MAX)))
    return [{"a": a, "b": b, "result": srdhm(a, b)} for a, b in pairs]


def gen_rdbp(rng):
    out = []
    xs_fixed = [I32_MIN, I32_MIN + 1, -2**30, -3, -2, -1, 0, 1, 2, 3, 2**30, I32_MAX - 1, I32_MAX]
    for e in list(range(0, 32)):
        xs = list(xs_fixed)
        if e >= 1:
            half = 1 << (e - 1)
            for k in (0, 1, 2, 5, -1, -2, -3, -6):     # exact ties k * 2^e + 2^(e-1)
                t = k * (1 << e) + half
                if fits_i32(t):
                    xs.append(t)
                for d in (-1, 1):
                    if fits_i32(t + d):
                        xs.append(t + d)
        xs += [rng.randint(I32_MIN, I32_MAX) for _ in range(4)]
        for x in xs:
            out.append({"x": x, "exponent": e, "result": rdbp(x, e)})
    return out


def gen_mbqm(rng):
    out = []
    qms = [2**30, 2**30 + 1, 1518500250, 1717986918, 2**31 - 1, 1, 0]
    shifts = [-31, -30, -17, -8, -1, 0, 1, 2, 7, 30, 31]
    combos = [(q, s) for q in qms for s in shifts]
    combos += [(rng.randint(2**30, 2**31 - 1), rng.randint(-31, 8)) for _ in range(12)]
    for q, s in combos:
        xs = interesting_accs(rng, 8)
        # exact ties of the final shift when q = 2^30 (SRDHM halves exactly for even x)
        if s < 0:
            e = -s + 1
            for k in (1, -1, 3, -3):
                t = k * (1 << (e - 1))
                if fits_i32(t):
                    xs.append(t)
        dbl = [mbqm_double(x, q, s) for x in xs]
        sgl = [mbqm_single(x, q, s) for x in xs] if s <= 30 else None
        out.append({"multiplier": q, "shift": s, "x": xs, "double_rounding": dbl,
                    "single_rounding": sgl})
    return out


def gen_from_real(rng):
    out = []
    for m in multipliers(rng):
        if not (0.0 < m <= 2.0**30):
            continue
        accs = interesting_accs(rng, 16)
        qm, sh = quantize_multiplier(m)
        qs, ss = quantize_multiplier(m, single_rounding=True)
        if qm == 2**30 and sh <= 0:  # m a power of two: add exact ties of the last step
            e = 1 - sh
            accs += [k * (1 << (e - 1)) for k in (1, -1, 3, -3, 5, -5) if fits_i32(k << (e - 1))]
        out.append({"m": m, "m_hex": hexm(m), "acc": accs,
                    "double_rounding": [mbqm_double(a, qm, sh) for a in accs],
                    "single_rounding": [mbqm_single(a, qs, ss) for a in accs]})
    # accumulators where double and single rounding disagree, found by search
    found = []
    for _ in range(200000):
        m = rng.uniform(2.0**-12, 1.0)
        qm, sh = quantize_multiplier(m)
        a = rng.randint(-2**24, 2**24)
        if mbqm_double(a, qm, sh) != mbqm_single(a, qm, sh):
            found.append((m, a))
            if len(found) >= 24:
                break
    for m, a in found:
        qm, sh = quantize_multiplier(m)
        qs, ss = quantize_multiplier(m, single_rounding=True)
        out.append({"m": m, "m_hex": hexm(m), "acc": [a],
                    "double_rounding": [mbqm_double(a, qm, sh)],
                    "single_rounding": [mbqm_single(a, qs, ss)]})
    return out


def gen_output(rng):
    out = []
    configs = [(0.0123, 0, -128, 127, 17), (0.0123, 1000, -128, 127, -5),
               (0.25, -3000, 0, 255, 128), (1.0 / 255.0, 0, 0, 255, 0), (0.5 + 2.0**-32, 7, -128, 127, 3),
               (0.75, 0, 0, 6, 0),          # fused ReLU6-like clamp
               (3.7, -20, -8, 7, 0), (2.0**-9, 0, -128, 127, -128), (0.9, 123456, -32768, 32767, 0)]
    for m, bias, lo, hi, zp in configs:
        accs = []
        while len(accs) < 40:
            a = rng.choice([rng.randint(-2**20, 2**20), rng.randint(-300, 300),
                            rng.randint(I32_MIN, I32_MAX)])
            v = a + bias
            qm, sh = quantize_multiplier(m)
            if fits_i32(v) and mbqm_double(v, qm, sh) is not None:
                accs.append(a)
        qm, sh = quantize_multiplier(m)
        qs, ss = quantize_multiplier(m, single_rounding=True)

        def finish(r):
            return min(max(r + zp, lo), hi)
        out.append({"m": m, "m_hex": hexm(m), "bias": bias, "zero_point": zp, "clamp_min": lo,
                    "clamp_max": hi, "acc": accs,
                    "out_double_rounding": [finish(mbqm_double(a + bias, qm, sh)) for a in accs],
                    "out_single_rounding": [finish(mbqm_single(a + bias, qs, ss)) for a in accs]})
    return out


def gen_single_shift(rng):
    out = []
    for s in (0, 1, 2, 3, 7, 8, 15, 16, 24, 30, 31):
        accs = interesting_accs(rng, 8)
        if s >= 1:
            accs += [k * (1 << (s - 1)) for k in (1, -1, 3, -3) if fits_i32(k << (s - 1))]
        out.append({"s": s, "acc": accs, "result": [single_shift(a, s) for a in accs]})
    return out


def gen_double_shift(rng):
    out = []
    pairs = [(1, 2), (1, 8), (2, 3), (3, 10), (7, 8), (10, 20), (15, 16), (8, 24), (30, 31),
             (1, 31), (16, 31)]
    for s1, s2 in pairs:
        accs = interesting_accs(rng, 8)
        # exact ties of the final shift: acc * (1 + 2^s1) + 2^(s2-1) = 0 mod 2^s2 exactly
        # for acc = (2k + 1) * 2^(s2-1) (1 + 2^s1 is odd)
        for k in (-3, -2, -1, 0, 1, 2):
            a = (2 * k + 1) << (s2 - 1)
            if fits_i32(a):
                assert ((a + (a << s1) + (1 << (s2 - 1))) & ((1 << s2) - 1)) == 0
                accs.append(a)
        out.append({"s1": s1, "s2": s2, "acc": accs,
                    "result": [double_shift(a, s1, s2) for a in accs]})
    return out


FORMULAS = {
    "quantize_multiplier": "frexp(m) = (q, shift); q_fixed = round_half_away(q * 2^31); "
                           "q_fixed == 2^31 -> (2^30, shift + 1); shift < -31 -> (0, 0); "
                           "m == 0 -> (0, 0); single rounding: shift > 30 -> (2^31 - 1, 30)",
    "srdhm": "INT32_MIN*INT32_MIN -> INT32_MAX; else trunc((a*b + (a*b >= 0 ? 2^30 : "
             "1 - 2^30)) / 2^31)",
    "rdbp": "(x >> e) + ((x & (2^e - 1)) > ((2^e - 1) >> 1) + (x < 0))",
    "double_rounding": "RDBP(SRDHM(x * 2^max(shift, 0), q), max(-shift, 0)); null where "
                       "x * 2^max(shift,0) leaves int32",
    "single_rounding": "(x * q + 2^(30 - shift)) >> (31 - shift), exact",
    "single_shift": "acc >> s (floor)",
    "double_shift": "(acc + (acc << s1) + 2^(s2 - 1)) >> s2, exact",
    "requantize_output": "clamp(apply(acc + bias) + zero_point, clamp_min, clamp_max)",
}


def write(path, doc):
    keys = list(doc.keys())
    lines = ["{"]
    for i, k in enumerate(keys):
        v = doc[k]
        sep = "," if i + 1 < len(keys) else ""
        if isinstance(v, list):
            lines.append(f"  {json.dumps(k)}: [")
            for j, c in enumerate(v):
                lines.append("    " + json.dumps(c, allow_nan=False, separators=(",", ":"))
                             + ("," if j + 1 < len(v) else ""))
            lines.append("  ]" + sep)
        else:
            lines.append(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}{sep}")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    json.loads(text)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)
    counts = {k: len(v) for k, v in doc.items() if isinstance(v, list)}
    print(f"{path}: {len(text)} bytes, {counts}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.normpath(os.path.join(here, "..", "..", "tests", "golden"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=default_out, help="output directory (default tests/golden)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # self-checks of the primitives against hand-worked values
    assert srdhm(3, 2**30) == 2 and srdhm(-3, 2**30) == -1 and srdhm(I32_MIN, I32_MIN) == I32_MAX
    assert rdbp(3, 1) == 2 and rdbp(-3, 1) == -2 and rdbp(5, 2) == 1 and rdbp(-6, 2) == -2
    assert quantize_multiplier(1.0 - 2.0**-33) == (2**30, 1)
    assert quantize_multiplier(0.5 + 2.0**-32) == (2**30 + 1, 0)
    assert quantize_multiplier(2.0**-33) == (0, 0)
    assert mbqm_single(-3, 2**30, 0) == -1 and mbqm_double(-3, 2**30, 0) == -1
    doc = {
        "generator": GENERATOR,
        "python_version_independent": True,
        "formulas": FORMULAS,
        "quantize_multiplier": gen_quantize_multiplier(random.Random(11)),
        "srdhm": gen_srdhm(random.Random(12)),
        "rdbp": gen_rdbp(random.Random(13)),
        "multiply_by_quantized_multiplier": gen_mbqm(random.Random(14)),
        "requantize_from_real": gen_from_real(random.Random(15)),
        "requantize_output": gen_output(random.Random(16)),
        "single_shift": gen_single_shift(random.Random(17)),
        "double_shift": gen_double_shift(random.Random(18)),
    }
    for sec in ("multiply_by_quantized_multiplier", "requantize_from_real", "requantize_output",
                "single_shift", "double_shift"):
        for c in doc[sec]:
            assert all(fits_i32(v) for v in c.get("acc", c.get("x", []))), sec
    write(os.path.join(args.out, "requant.json"), doc)


if __name__ == "__main__":
    main()
