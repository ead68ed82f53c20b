#!/usr/bin/env python3
"""f16 and bf16 numerics of memfit-run (host backend) against NumPy and
ml_dtypes, an oracle memfit did not write.

  half_numerics.py --memfit-run build/bin/memfit-run [--workdir DIR]
                   [--seed N] [--only FAMILY,...]

For each family (casts, elementwise, rows, contractions) and each 16-bit type
the script writes one small .mlir function, DIR/<family>-<type>/model.mlir,
its inputs as .npy files, runs `memfit-run --device=host` on it and compares
every result with the oracle, as 16-bit patterns:

  - Results in bf16 leave the function widened to f32 (a shift of the bits,
    exact for every pattern, NaNs included: memfit-run writes no bf16 .npy);
    results in f16 leave it as f16 .npy.
  - Inputs of bf16 functions are f32 .npy cast to bf16 inside the function
    (the cast the `casts` family checks bit for bit); inputs of f16 functions
    are f16 .npy, except in `casts`.
  - The oracle widens the 16-bit inputs to float32, computes in float32 (the
    kernels' register type) and rounds once to the 16-bit type with
    ml_dtypes.bfloat16 or numpy.float16. exp, tanh and erf are taken in
    float64 and rounded to float32 (a correctly rounded libm); the other
    operations follow the kernel's expression in float32, in its order.
  - The distance is in units in the last place of the 16-bit type: the
    difference of the patterns read as sign-magnitude integers. A
    tolerance of 0 means bit for bit (+0 and -0 differ); with a tolerance
    of 1 they are the same number. Non-finite oracle values must be
    reproduced.

Each check prints `PASS <family> <type> <case> max_ulp N (tol T) <n>
values` or `FAIL ...` with the first worst element; the last line is
`half-numerics: N passed, M failed` and the exit status is 1 on a failure.

NaN: memfit converts every NaN to the canonical 0x7fff (f16 and bf16; a NaN
f16 widens to 0x7fffffff), as CUDA's __float2half_rn / __float2bfloat16_rn /
__half2float do. NumPy and ml_dtypes keep the sign and the top of the payload
(0xffc00000 -> 0xffc0 in bf16, 0xfe00 in f16), so NaNs are compared as NaN and
checked to be canonical rather than compared with the oracle's pattern.
"""

import argparse
import math
import os
import shutil
import sys
import time
import zlib

import ml_dtypes
import numpy as np

from memfit_test.runner import prepare, run_function

F32 = np.float32
TYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}
CANONICAL_NAN = 0x7FFF


# ---------------------------------------------------------------------------
# Bits and units in the last place.
# ---------------------------------------------------------------------------

def bits16(values, dt):
    """The 16-bit patterns of float32 `values` rounded to type `dt`."""
    with np.errstate(all="ignore"):
        return np.asarray(values, F32).astype(TYPES[dt]).view(np.uint16)


def widen(bits, dt):
    """16-bit patterns of type `dt` as float32 values."""
    return np.asarray(bits, np.uint16).view(TYPES[dt]).astype(F32)


def rounded(values, dt):
    """float32 `values` rounded to `dt` and widened back (the value a 16-bit
    buffer holds)."""
    return widen(bits16(values, dt), dt)


def is_nan16(bits):
    return ((bits & 0x7C00) == 0x7C00) & ((bits & 0x03FF) != 0)


def is_nan_bf16(bits):
    return ((bits & 0x7F80) == 0x7F80) & ((bits & 0x007F) != 0)


def nan_mask(bits, dt):
    return is_nan_bf16(bits) if dt == "bf16" else is_nan16(bits)


def ordered(bits):
    """Sign-magnitude patterns as integers ordered like their values."""
    b = np.asarray(bits, np.int64)
    return np.where(b & 0x8000, -(b & 0x7FFF), b & 0x7FFF)


def hex16(b):
    return f"0x{int(b):04x}"


# ---------------------------------------------------------------------------
# Writing the function.
# ---------------------------------------------------------------------------

def ttype(shape, elt):
    return "tensor<" + "".join(f"{d}x" for d in shape) + elt + ">"


class Val:
    def __init__(self, name, shape, elt):
        self.name, self.shape, self.elt = name, tuple(shape), elt

    @property
    def type(self):
        return ttype(self.shape, self.elt)


class Model:
    """One func.func of the memfit dialect in 16-bit type `dt`, with its
    input values and the checks of its results."""

    def __init__(self, family, dt):
        self.family, self.dt = family, dt
        self.args, self.feeds, self.body, self.results = [], [], [], []
        self.checks = []  # (case, result index, oracle bits, tolerance)
        self.count = 0
        # casts: the results checked apart (NaNs, f16 widened to f32).
        self.nan_index = self.widen_index = self.widen_input = None

    def _fresh(self):
        self.count += 1
        return f"%v{self.count}"

    def arg(self, value):
        """A function argument fed from a .npy file (argN)."""
        value = np.ascontiguousarray(value)
        elt = {np.dtype(F32): "f32", np.dtype(np.float16): "f16",
               np.dtype(np.int64): "i64"}[value.dtype]
        v = Val(f"%arg{len(self.args)}", value.shape, elt)
        self.args.append(v)
        self.feeds.append(value)
        return v

    def op(self, text, shape, elt):
        """`%vN = text : <types>`; `text` ends with the op's type list."""
        v = Val(self._fresh(), shape, elt)
        self.body.append(f"  {v.name} = {text}")
        return v

    def ops(self, text, shapes, elt):
        """`%vN:k = text` of an op with k results of `shapes`."""
        name = self._fresh()
        self.body.append(f"  {name}:{len(shapes)} = {text}")
        return [Val(f"{name}#{i}", s, elt) for i, s in enumerate(shapes)]

    def cast(self, v, elt):
        return self.op(f"memfit.cast {v.name} : {v.type} to "
                       f"{ttype(v.shape, elt)}", v.shape, elt)

    def input16(self, values):
        """An input of the model's 16-bit type holding the float32 `values`
        rounded to it; returns (Val, the widened float32 values)."""
        if self.dt == "f16":
            h = np.asarray(values, F32).astype(np.float16)
            return self.arg(h), h.astype(F32)
        return (self.cast(self.arg(np.asarray(values, F32)), "bf16"),
                rounded(values, "bf16"))

    def result(self, v):
        """Returns `v` from the function (bf16 widened to f32); the index of
        the result."""
        if v.elt == "bf16":
            v = self.cast(v, "f32")
        self.results.append(v)
        return len(self.results) - 1

    def check(self, case, v, oracle_bits, tol):
        self.checks.append((case, self.result(v), np.asarray(oracle_bits,
                                                             np.uint16), tol))

    def text(self):
        args = ", ".join(f"{a.name}: {a.type}" for a in self.args)
        rtypes = ", ".join(r.type for r in self.results)
        lines = [f"func.func @{self.family.replace('-', '_')}_{self.dt}"
                 f"({args}) -> ({rtypes}) {{"]
        lines += self.body
        lines.append("  return " + ", ".join(r.name for r in self.results)
                     + " : " + rtypes)
        lines.append("}")
        return "\n".join(lines) + "\n"


def result_bits(array, dt):
    """The 16-bit patterns of a result as memfit-run wrote it."""
    if dt == "f16":
        if array.dtype != np.float16:
            raise ValueError(f"f16 result written as {array.dtype}")
        return array.view(np.uint16)
    if array.dtype != F32:
        raise ValueError(f"bf16 result written as {array.dtype}")
    u = array.view(np.uint32)
    if (u & 0xFFFF).any():
        raise ValueError("a widened bf16 result has low bits set")
    return (u >> 16).astype(np.uint16)


# ---------------------------------------------------------------------------
# Casts: f32 -> 16 bits, bit for bit.
# ---------------------------------------------------------------------------

def f32(*patterns):
    return np.asarray(patterns, np.uint32).view(F32)


# Values that decide rounding: name, float32 patterns. Ties are exactly
# halfway between two neighbours of the 16-bit type.
EDGES = {
    "bf16": [
        ("zeros", f32(0x00000000, 0x80000000)),
        ("infinities", f32(0x7F800000, 0xFF800000)),
        # f32 subnormals are bf16 subnormals, rounded to 7 bits.
        ("subnormals", f32(0x00000001, 0x00007FFF, 0x00008000, 0x00018000,
                           0x00010000, 0x007FFFFF, 0x807FFFFF, 0x80008001)),
        ("smallest_normal", f32(0x00800000, 0x807F8000, 0x007F8000)),
        ("largest_normal", f32(0x7F7F0000, 0x7F7F7FFF, 0xFF7F7FFF)),
        # 0x7f7f8000 is halfway to 2^128: the odd 0x7f7f rounds up to inf.
        ("to_infinity", f32(0x7F7F8000, 0x7F7FFFFF, 0xFF7F8000, 0xFF7FFFFF)),
        # Halfway with an even lower neighbour rounds down, with an odd one
        # up; one bit off halfway rounds to the nearer.
        ("ties_to_even_down", f32(0x3F808000, 0xBF808000, 0x42FE8000,
                                  0x00028000)),
        ("ties_to_even_up", f32(0x3F818000, 0xBF818000, 0x42FF8000,
                                0x00038000)),
        ("near_ties", f32(0x3F807FFF, 0x3F808001, 0x3F817FFF, 0x3F818001)),
    ],
    "f16": [
        ("zeros", f32(0x00000000, 0x80000000)),
        ("infinities", f32(0x7F800000, 0xFF800000)),
        # 2^-24 is the smallest subnormal; 2^-25 is halfway to 0 (rounds to
        # even 0), 3 * 2^-25 halfway between 1 and 2 ulps (rounds to 2);
        # f32 subnormals become zeros of their sign.
        ("subnormals", np.asarray(
            [2.0 ** -24, -2.0 ** -24, 2.0 ** -25, 1.5 * 2.0 ** -25,
             3 * 2.0 ** -25, 1023 * 2.0 ** -24, 0.5 * 2.0 ** -14,
             2.0 ** -26, 1e-45, -1e-45, 2.0 ** -126, -2.0 ** -127], F32)),
        # 1023.5 ulps: halfway from the largest subnormal (odd) to the
        # smallest normal.
        ("smallest_normal", np.asarray([2.0 ** -14, -2.0 ** -14,
                                        1023.5 * 2.0 ** -24,
                                        1023.25 * 2.0 ** -24], F32)),
        ("largest_normal", np.asarray([65504, -65504, 65519.99, 65505],
                                      F32)),
        # 65520 is halfway from 65504 (odd) to 2^16: rounds up to inf.
        ("to_infinity", np.asarray([65520, -65520, 65536, 1e10, 3.4e38,
                                    -3.4e38], F32)),
        ("ties_to_even_down", np.asarray([1 + 2.0 ** -11, -(1 + 2.0 ** -11),
                                          2048 + 1, 2.0 ** -24 * 4.5],
                                         F32)),
        ("ties_to_even_up", np.asarray([1 + 3 * 2.0 ** -11,
                                        -(1 + 3 * 2.0 ** -11), 2048 + 3,
                                        2.0 ** -24 * 5.5], F32)),
        ("near_ties", f32(0x3F800FFF, 0x3F801001, 0x3F802FFF, 0x3F803001)),
    ],
}
NANS = f32(0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0xFFFFFFFF,
           0x7FC01234)


def casts(m, rng):
    dt = m.dt
    for case, values in EDGES[dt]:
        m.check(case, m.cast(m.arg(values), dt), bits16(values, dt), 0)
    # Random float32 patterns (every exponent; NaNs are checked apart).
    pats = rng.integers(0, 2 ** 32, size=1 << 18, dtype=np.uint64)
    values = pats.astype(np.uint32).view(F32)
    values = values[~np.isnan(values)]
    m.check("random_patterns", m.cast(m.arg(values), dt), bits16(values, dt),
            0)
    # Every 16-bit value (NaNs aside) survives f32 -> 16 bits -> f32 -> 16.
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    every = every[~nan_mask(every, dt)]
    through = m.cast(m.cast(m.arg(widen(every, dt)), dt), "f32")
    m.check("every_value_round_trip", m.cast(through, dt), every, 0)
    m.nan_index = m.result(m.cast(m.arg(NANS), dt))
    if dt == "f16":
        # f16 .npy in, f32 out: every pattern widens as NumPy does.
        every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
        m.widen_index = m.result(m.cast(m.arg(every.view(np.float16)), "f32"))
        m.widen_input = every


def check_nans(m, outputs, report):
    """NaNs stay NaN and become the canonical 0x7fff."""
    got = result_bits(outputs[m.nan_index], m.dt)
    ref = bits16(NANS, m.dt)
    ok = bool(nan_mask(got, m.dt).all() and (got == CANONICAL_NAN).all()
              and nan_mask(ref, m.dt).all())
    detail = (f"memfit {' '.join(hex16(b) for b in got)}; "
              f"{'ml_dtypes' if m.dt == 'bf16' else 'numpy'} "
              f"{' '.join(hex16(b) for b in ref)}")
    report(ok, f"casts {m.dt} nan canonical 0x7fff ({len(NANS)} NaNs: "
           f"{' '.join(f'0x{int(p):08x}' for p in NANS.view(np.uint32))}): "
           f"{detail}")
    if m.dt == "f16":
        got = outputs[m.widen_index].view(np.uint32)
        h = m.widen_input.view(np.float16)
        ref = h.astype(F32).view(np.uint32)
        nan = np.isnan(h)
        same = np.where(nan, got == 0x7FFFFFFF, got == ref)
        bad = np.flatnonzero(~same)
        text = (f"casts f16 widen_every_pattern to f32: {int(bad.size)} of "
                f"{h.size} differ (NaN -> 0x7fffffff)")
        if bad.size:
            i = bad[0]
            text += (f"; first 0x{int(m.widen_input[i]):04x}: got "
                     f"0x{int(got[i]):08x}, want 0x{int(ref[i]):08x}")
        report(not bad.size, text)


# ---------------------------------------------------------------------------
# Element-wise ops.
# ---------------------------------------------------------------------------

def exp32(x):
    return np.exp(x.astype(np.float64)).astype(F32)


def tanh32(x):
    return np.tanh(x.astype(np.float64)).astype(F32)


ERF = np.frompyfunc(math.erf, 1, 1)


def erf32(x):
    return ERF(x.astype(np.float64)).astype(np.float64).astype(F32)


def gelu_erf(x):
    # 0.5f * v * (1.0f + erff(v * 0.707106781f))
    return F32(0.5) * x * (F32(1) + erf32(x * F32(0.707106781)))


def gelu_tanh(x):
    # 0.5f * v * (1.0f + tanhf(0.797884561f * (v + 0.044715f * v * v * v)))
    inner = x + F32(0.044715) * x * x * x
    return F32(0.5) * x * (F32(1) + tanh32(F32(0.797884561) * inner))


def sigmoid(x):
    # 1.0f / (1.0f + expf(-v))
    return F32(1) / (F32(1) + exp32(-x))


def signed(rng, shape, lo, hi):
    """Magnitudes 2^U(lo, hi) of random sign: every exponent in the range,
    so that results overflow, underflow and go subnormal."""
    mag = np.exp2(rng.uniform(lo, hi, size=shape))
    return np.asarray(np.where(rng.random(shape) < 0.5, -mag, mag), F32)


# Exponent ranges of the "wide" operands: products and quotients leave the
# type's range at both ends (f16: 2^-24 .. 65504; bf16 shares f32's range).
WIDE = {"f16": (-14, 9), "bf16": (-70, 70)}


def elementwise(m, rng):
    dt = m.dt
    n = 4096
    binary = [("add", lambda a, b: a + b), ("sub", lambda a, b: a - b),
              ("mul", lambda a, b: a * b), ("div", lambda a, b: a / b)]
    for name, f in binary:
        a, fa = m.input16(rng.uniform(-8, 8, n))
        if name == "div":
            b, fb = m.input16(signed(rng, n, -3, 3))
        else:
            b, fb = m.input16(rng.uniform(-8, 8, n))
        y = m.op(f"memfit.{name} {a.name}, {b.name} : {a.type}, {b.type} -> "
                 f"{a.type}", a.shape, dt)
        m.check(name, y, bits16(f(fa, fb), dt), 0)
    lo, hi = WIDE[dt]
    for name, f in binary:
        a, fa = m.input16(signed(rng, n, lo, hi))
        b, fb = m.input16(signed(rng, n, lo, hi))
        y = m.op(f"memfit.{name} {a.name}, {b.name} : {a.type}, {b.type} -> "
                 f"{a.type}", a.shape, dt)
        with np.errstate(all="ignore"):
            m.check(name + "_wide", y, bits16(f(fa, fb), dt), 0)
    # A row operand broadcast against [64, 64].
    a, fa = m.input16(rng.uniform(-8, 8, (64, 64)))
    b, fb = m.input16(rng.uniform(-8, 8, (64,)))
    y = m.op(f"memfit.add {a.name}, {b.name} : {a.type}, {b.type} -> "
             f"{a.type}", a.shape, dt)
    m.check("add_broadcast", y, bits16(fa + fb, dt), 0)

    unary = [("neg", "memfit.neg", lambda x: -x, (-8, 8), 0),
             ("relu", "memfit.relu", lambda x: np.where(x > 0, x, F32(0)),
              (-8, 8), 0),
             ("tanh", "memfit.tanh", tanh32, (-5, 5), 1),
             ("sigmoid", "memfit.sigmoid", sigmoid, (-10, 10), 1),
             # Below about -3.5, 1 + erf and 1 + tanh cancel: one float32 ulp
             # of erff or tanhf is many 16-bit ulps of the tiny result.
             ("gelu_erf", "memfit.gelu none", gelu_erf, (-3.5, 3.5), 1),
             ("gelu_tanh", "memfit.gelu tanh", gelu_tanh, (-3.5, 3.5), 1)]
    for name, op, f, (lo, hi), tol in unary:
        x, fx = m.input16(rng.uniform(lo, hi, n))
        y = m.op(f"{op} {x.name} : {x.type}", x.shape, dt)
        m.check(name, y, bits16(f(fx), dt), tol)

    # Data movement: split copies elements, transpose widens and rounds
    # back; both exact.
    x, fx = m.input16(signed(rng, (8, 30), lo, hi))
    s1, s2 = (8, 10), (8, 20)
    first, second = m.ops(f"memfit.split {x.name} {{axis = 1 : i64, sizes = "
                          f"array<i64: 10, 20>}} : {x.type} -> "
                          f"{ttype(s1, dt)}, {ttype(s2, dt)}", [s1, s2], dt)
    m.check("split_0", first, bits16(fx[:, :10], dt), 0)
    m.check("split_1", second, bits16(fx[:, 10:], dt), 0)
    y = m.op(f"memfit.transpose {x.name} {{perm = array<i64: 1, 0>}} : "
             f"{x.type} -> {ttype((30, 8), dt)}", (30, 8), dt)
    m.check("transpose", y, bits16(fx.T, dt), 0)


# ---------------------------------------------------------------------------
# Row kernels: normalizations, softmax, reductions, a loss.
# ---------------------------------------------------------------------------

EPS = F32(1e-5)


def layer_norm(x, g, b):
    n = F32(x.shape[-1])
    mean = x.sum(-1, keepdims=True, dtype=F32) / n
    var = ((x - mean) ** 2).sum(-1, keepdims=True, dtype=F32) / n
    inv = F32(1) / np.sqrt(var + EPS)
    return (x - mean) * inv * g + b


def rms_norm(x, g):
    n = F32(x.shape[-1])
    inv = F32(1) / np.sqrt((x * x).sum(-1, keepdims=True, dtype=F32) / n
                           + EPS)
    return x * inv * g


def softmax(x):
    m = x.max(-1, keepdims=True)
    e = exp32(x - m)
    return e / e.sum(-1, keepdims=True, dtype=F32)


def log_softmax(x):
    m = x.max(-1, keepdims=True)
    s = exp32(x - m).sum(-1, keepdims=True, dtype=F32)
    return x - (m + np.log(s.astype(np.float64)).astype(F32))


def rows(m, rng):
    dt = m.dt
    for rows_, n in [(16, 96), (4, 1000)]:
        x, fx = m.input16(rng.uniform(-3, 3, (rows_, n)))
        g, fg = m.input16(rng.uniform(0.5, 1.5, n))
        b, fb = m.input16(rng.uniform(-1, 1, n))
        eps = "epsilon = 9.99999974E-6 : f32"
        y = m.op(f"memfit.layer_norm {x.name}, {g.name}, {b.name} "
                 f"{{axis = -1 : i64, {eps}}} : {x.type}, {g.type}, {b.type}",
                 x.shape, dt)
        m.check(f"layer_norm_{rows_}x{n}", y, bits16(layer_norm(fx, fg, fb),
                                                     dt), 1)
        y = m.op(f"memfit.rms_norm {x.name}, {g.name} {{axis = -1 : i64, "
                 f"{eps}}} : {x.type}, {g.type}", x.shape, dt)
        m.check(f"rms_norm_{rows_}x{n}", y, bits16(rms_norm(fx, fg), dt), 1)
        y = m.op(f"memfit.softmax {x.name} {{axis = -1 : i64}} : {x.type}",
                 x.shape, dt)
        m.check(f"softmax_{rows_}x{n}", y, bits16(softmax(fx), dt), 1)
        y = m.op(f"memfit.log_softmax {x.name} {{axis = -1 : i64}} : "
                 f"{x.type}", x.shape, dt)
        m.check(f"log_softmax_{rows_}x{n}", y, bits16(log_softmax(fx), dt), 1)
        y = m.op(f"memfit.reduce_max {x.name} {{axes = array<i64: 1>}} : "
                 f"{x.type} -> {ttype((rows_, 1), dt)}", (rows_, 1), dt)
        m.check(f"reduce_max_{rows_}x{n}", y,
                bits16(fx.max(-1, keepdims=True), dt), 0)
        # Positive terms: no cancellation, so the float32 sums of memfit and
        # NumPy (in different orders) are within a 16-bit ulp.
        p, fp = m.input16(rng.uniform(0.1, 2, (rows_, n)))
        y = m.op(f"memfit.reduce_sum {p.name} {{axes = array<i64: 1>}} : "
                 f"{p.type} -> {ttype((rows_, 1), dt)}", (rows_, 1), dt)
        m.check(f"reduce_sum_{rows_}x{n}", y,
                bits16(fp.sum(-1, keepdims=True, dtype=F32), dt), 1)
        y = m.op(f"memfit.reduce_mean {p.name} {{axes = array<i64: 1>, "
                 f"keepdims = false}} : {p.type} -> {ttype((rows_,), dt)}",
                 (rows_,), dt)
        m.check(f"reduce_mean_{rows_}x{n}", y,
                bits16(fp.sum(-1, dtype=F32) / F32(n), dt), 1)
    # Multiples of 1/16 of either sign: every float32 partial sum is exact,
    # whatever the order, so the result is the exact sum rounded once.
    x, fx = m.input16(rng.integers(-64, 65, (32, 200)) / 16.0)
    y = m.op(f"memfit.reduce_sum {x.name} {{axes = array<i64: 0>, keepdims "
             f"= false}} : {x.type} -> {ttype((200,), dt)}", (200,), dt)
    m.check("reduce_sum_exact_axis0", y, bits16(fx.sum(0, dtype=F32), dt), 0)
    # Softmax cross-entropy, mean over 8 rows of 50 classes.
    s, fs = m.input16(rng.uniform(-4, 4, (8, 50)))
    labels = rng.integers(0, 50, 8)
    lab = m.arg(labels.astype(np.int64))
    y = m.op(f"memfit.softmax_cross_entropy_loss mean {s.name}, {lab.name} : "
             f"({s.type}, {lab.type}) -> {ttype((), dt)}", (), dt)
    lsm = log_softmax(fs)
    loss = -lsm[np.arange(8), labels].sum(dtype=F32) / F32(8)
    m.check("softmax_cross_entropy_mean", y, bits16(loss, dt), 1)


# ---------------------------------------------------------------------------
# Contractions.
# ---------------------------------------------------------------------------

def contractions(m, rng):
    dt = m.dt

    def matmul(case, sa, sb, values, tol):
        a, fa = m.input16(values(sa))
        b, fb = m.input16(values(sb))
        out = np.matmul(fa, fb)
        y = m.op(f"memfit.matmul {a.name}, {b.name} : {a.type}, {b.type} -> "
                 f"{ttype(out.shape, dt)}", out.shape, dt)
        m.check(case, y, bits16(out, dt), tol)

    # Positive operands: no cancellation, the float32 dot products of the
    # host BLAS and NumPy's differ by float32 ulps only.
    positive = lambda s: rng.uniform(0, 1, s)
    matmul("matmul", (24, 64), (64, 40), positive, 1)
    matmul("matmul_batched", (2, 3, 8, 32), (32, 16), positive, 1)
    # Multiples of 1/16 of either sign: exact float32 sums, exact results
    # rounded once; ties of the 16-bit type included.
    exact = lambda s: rng.integers(-64, 65, s) / 16.0
    matmul("matmul_exact", (16, 48), (48, 24), exact, 0)
    # gemm with a bias row and B transposed: out = round(A B^T + bias).
    a, fa = m.input16(positive((8, 32)))
    b, fb = m.input16(positive((12, 32)))
    c, fc = m.input16(rng.uniform(-1, 1, 12))
    y = m.op(f"memfit.gemm {a.name}, {b.name}, {c.name} {{trans_b = true}} : "
             f"({a.type}, {b.type}, {c.type}) -> {ttype((8, 12), dt)}",
             (8, 12), dt)
    m.check("gemm_bias_trans_b", y, bits16(fa @ fb.T + fc, dt), 1)


FAMILIES = {"casts": casts, "elementwise": elementwise, "rows": rows,
            "contractions": contractions}


# ---------------------------------------------------------------------------
# Running and comparing.
# ---------------------------------------------------------------------------

def compare(got, ref, dt, tol):
    """(max ulp or None, message or None)."""
    if got.shape != ref.shape:
        return None, f"shape {list(got.shape)} != {list(ref.shape)}"
    ref_nan, got_nan = nan_mask(ref, dt), nan_mask(got, dt)
    ref_inf = ((ref & 0x7FFF) == (0x7F80 if dt == "bf16" else 0x7C00))
    if (ref_nan != got_nan).any():
        i = np.flatnonzero(ref_nan != got_nan)[0]
        return None, f"NaN mismatch at {i}: got {hex16(got.flat[i])}, " \
                     f"want {hex16(ref.flat[i])}"
    bad = ref_inf & (got != ref)
    if bad.any():
        i = np.flatnonzero(bad)[0]
        return None, f"infinity not reproduced at {i}: got " \
                     f"{hex16(got.flat[i])}, want {hex16(ref.flat[i])}"
    diff = np.abs(ordered(got) - ordered(ref))
    if tol == 0:
        # Bit for bit: +0 and -0 differ.
        diff = np.where(got != ref, np.maximum(diff, 1), 0)
    diff = np.where(ref_nan, 0, diff)
    worst = int(diff.max()) if diff.size else 0
    if worst > tol:
        i = int(np.argmax(diff))
        return worst, (f"at {np.unravel_index(i, got.shape)}: got "
                       f"{hex16(got.flat[i])} ({widen(got.flat[i], dt)}), "
                       f"want {hex16(ref.flat[i])} ({widen(ref.flat[i], dt)}"
                       f"), {worst} ulp > {tol}")
    return worst, None


def run_model(m, args, env, lines):
    outputs, why = run_function(args.memfit_run,
                                os.path.join(args.workdir, f"{m.family}-{m.dt}"),
                                m.text(), m.feeds, len(m.results), env=env,
                                timeout=300, flags=["--no-fuse"])
    if why:
        lines.append(f"FAIL {m.family} {m.dt}: {why}")
    return outputs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--memfit-run", default="memfit-run")
    p.add_argument("--workdir", required=True)
    p.add_argument("--seed", type=int, default=2025)
    p.add_argument("--only", default="",
                   help=f"comma-separated families ({', '.join(FAMILIES)})")
    args = p.parse_args()
    only = [o for o in args.only.split(",") if o]
    for o in only:
        if o not in FAMILIES:
            p.error(f"--only {o}: no such family")
    env = prepare("half-numerics", args)
    if env is None:
        return 2
    # A fresh kernel cache: every kernel goes through g++ and the host
    # emulation of __half and __nv_bfloat16.
    shutil.rmtree(env["MEMFIT_CACHE_DIR"], ignore_errors=True)

    passed = failed = 0
    start = time.monotonic()
    for family, build in FAMILIES.items():
        if only and family not in only:
            continue
        for k, dt in enumerate(TYPES):
            t0 = time.monotonic()
            m = Model(family, dt)
            # Each family and type has its own generator: --only does not
            # change the values.
            build(m, np.random.default_rng(
                [args.seed, zlib.crc32(family.encode()), k]))
            lines = []
            outputs = run_model(m, args, env, lines)

            def report(ok, text):
                nonlocal passed, failed
                lines.append(("PASS " if ok else "FAIL ") + text)
                passed, failed = passed + ok, failed + (not ok)

            if outputs is None:
                failed += 1
            else:
                for case, index, ref, tol in m.checks:
                    try:
                        got = result_bits(outputs[index], dt)
                        worst, msg = compare(got, ref, dt, tol)
                    except ValueError as e:
                        worst, msg = None, str(e)
                    text = (f"{family} {dt} {case} max_ulp {worst} (tol "
                            f"{tol}) {ref.size} values")
                    report(msg is None, text + ("" if msg is None
                                                else ": " + msg))
                if family == "casts":
                    check_nans(m, outputs, report)
            print(f"== {family} {dt}: {len(m.checks)} checks, "
                  f"{time.monotonic() - t0:.1f} s")
            for line in lines:
                print(line)
    print(f"half-numerics: {passed} passed, {failed} failed; "
          f"{time.monotonic() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
