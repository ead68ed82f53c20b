#!/usr/bin/env python3
"""Per-op numeric tests of memfit-run (host backend) against onnxruntime.

Every supported ONNX op is exercised on random shapes and values drawn from a
seeded generator. Cases are grouped into one ONNX graph per group (a few to a
dozen and a half nodes of one op family), so that each group costs one
memfit-run and one g++ compilation of its kernels:

  op_numerics.py --memfit-run build/bin/memfit-run [--only FAMILY[/GROUP],...]
                 [--workdir DIR] [--seed N] [--jobs N] [--list]

For each group the script writes DIR/<family>/<group>/model.onnx and its
inputs as .npy files, runs onnxruntime (graph optimizations off) for the
reference and `memfit-run --device=host` for the result, and compares every
graph output: shapes and dtypes must match, integers and booleans exactly,
floats to max |got - ref| <= 1e-4 * max(1, max |ref|) over the finite
reference values (infinities and NaNs must be reproduced as they are).

It prints `PASS group/output dtype[shape] max_err E` or `FAIL group/output:
why` with the case's nodes and shapes, and a reproducer command line for
every failing model. A failing case, and every case of a group that memfit
fails on as a whole, is compiled and run again alone
(DIR/<family>/<group>/<case>/model.onnx): that pins the failure on the case
that causes it and gives a short reproducer. The last line is
`op-numerics: N passed, M failed`; the exit status is 1 if anything failed.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

from memfit_test.attention_cases import attention_opset23
from memfit_test.runner import prepare

F32, F64, I64, I32, BOOL = np.float32, np.float64, np.int64, np.int32, np.bool_
FMIN = float(np.finfo(np.float32).min)
INT64_MIN = int(np.iinfo(np.int64).min)
INT64_MAX = int(np.iinfo(np.int64).max)

NP_TO_ONNX = {
    np.dtype(F32): TensorProto.FLOAT,
    np.dtype(F64): TensorProto.DOUBLE,
    np.dtype(I64): TensorProto.INT64,
    np.dtype(I32): TensorProto.INT32,
    np.dtype(BOOL): TensorProto.BOOL,
}
ONNX_TYPE_NAMES = {TensorProto.FLOAT: "f32", TensorProto.DOUBLE: "f64",
                   TensorProto.INT64: "i64", TensorProto.INT32: "i32",
                   TensorProto.BOOL: "bool", TensorProto.FLOAT16: "f16"}


# ---------------------------------------------------------------------------
# Building cases and groups.
# ---------------------------------------------------------------------------

class Rand:
    """Random shapes and values from one seeded generator."""

    def __init__(self, rng):
        self.rng = rng

    def dim(self, lo=2, hi=6):
        return int(self.rng.integers(lo, hi + 1))

    def dims(self, n, lo=2, hi=6):
        return [self.dim(lo, hi) for _ in range(n)]

    def f(self, shape, lo=-3.0, hi=3.0):
        return np.asarray(self.rng.uniform(lo, hi, size=shape), F32)

    def away(self, shape, lo=0.2, hi=3.0):
        """Floats with lo <= |v| <= hi of random sign (safe divisors)."""
        sign = np.where(self.rng.random(shape) < 0.5, -1.0, 1.0)
        return np.asarray(sign * self.rng.uniform(lo, hi, size=shape), F32)

    def i(self, shape, lo, hi, dtype=I64):
        """Integers in [lo, hi]."""
        return np.asarray(self.rng.integers(lo, hi + 1, size=shape), dtype)

    def nonzero(self, shape, lo, hi, dtype=I64):
        v = self.i(shape, lo, hi, dtype)
        return np.where(v == 0, np.asarray(1, dtype), v).astype(dtype)

    def b(self, shape, p=0.5):
        return np.asarray(self.rng.random(shape) < p, BOOL)

    def choice(self, items):
        return items[int(self.rng.integers(0, len(items)))]


def unique_name(used, stem):
    """`stem`, or stem2, stem3, ... if taken; added to the set `used`."""
    name, k = stem, 2
    while name in used:
        name, k = f"{stem}{k}", k + 1
    used.add(name)
    return name


class Case:
    """One test case: a few nodes with their inputs, initializers, outputs.

    Tensor and node names start with the case name, so that the cases of a
    group can share one graph."""

    def __init__(self, name):
        self.name = name
        self.nodes, self.outputs = [], []
        self.inputs, self.inits = {}, {}
        self.used = set()

    def _name(self, tag):
        return unique_name(self.used, f"{self.name}_{tag}")

    def input(self, value, tag="x"):
        """A graph input fed from a .npy file."""
        name = self._name(tag)
        self.inputs[name] = np.asarray(value)
        return name

    def init(self, value, tag="c", dtype=None):
        """An initializer (integer ones and scalars import as constants,
        float tensors of rank >= 1 as parameters)."""
        name = self._name(tag)
        self.inits[name] = np.asarray(value, dtype)
        return name

    def ints(self, values, tag="c"):
        return self.init(values, tag, I64)

    def op(self, op_type, inputs, nout=1, tag=None, **attrs):
        outs = [self._name(tag or "y") for _ in range(nout)]
        node_name = unique_name(self.used, f"{self.name}/{op_type}")
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=node_name, **attrs))
        return outs[0] if nout == 1 else outs

    def output(self, *names):
        self.outputs.extend(names)


class Group:
    def __init__(self, family, name, opset, build):
        self.family, self.name, self.opset, self.build = family, name, opset, build
        self.cases = []

    @property
    def key(self):
        return f"{self.family}/{self.name}"

    def case(self, name):
        assert all(c.name != name for c in self.cases), name
        c = Case(name)
        self.cases.append(c)
        return c


def onnx_model(graph, opset):
    """The model of `graph` at `opset` of the default domain, with the
    lowest IR version that supports it."""
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(
        graph, opset_imports=opsets,
        ir_version=helper.find_min_ir_version_for(opsets))


def make_model(cases, opset, graph_name):
    """The ONNX model of `cases`, with output types from shape inference."""
    nodes, inputs, inits, outputs = [], [], [], []
    for c in cases:
        nodes += c.nodes
        outputs += c.outputs
        for name, value in c.inputs.items():
            inputs.append(helper.make_tensor_value_info(
                name, NP_TO_ONNX[value.dtype], value.shape))
        for name, value in c.inits.items():
            inits.append(numpy_helper.from_array(value, name))
    graph = helper.make_graph(nodes, graph_name, inputs, [], initializer=inits)
    model = onnx_model(graph, opset)
    inferred = shape_inference.infer_shapes(model, strict_mode=True)
    types = {vi.name: vi for vi in inferred.graph.value_info}
    for name in outputs:
        if name not in types:
            raise RuntimeError(f"no inferred type for output '{name}'")
        model.graph.output.append(types[name])
    onnx.checker.check_model(model)
    return model, inferred


def type_string(type_proto):
    t = type_proto.tensor_type
    dims = ",".join(str(d.dim_value) if d.HasField("dim_value") else "?"
                    for d in t.shape.dim)
    return f"{ONNX_TYPE_NAMES.get(t.elem_type, t.elem_type)}[{dims}]"


def describe_case(case, inferred):
    """`Op(in: type, ...) -> out: type {attrs}` for every node of the case."""
    types = {vi.name: vi.type for vi in inferred.graph.value_info}
    for vi in inferred.graph.input:
        types[vi.name] = vi.type
    for t in inferred.graph.initializer:
        types[t.name] = helper.make_tensor_type_proto(t.data_type, t.dims)
    short = lambda n: n[len(case.name) + 1:] if n.startswith(case.name + "_") else n

    def operand(n):
        if not n:
            return "<none>"
        s = f"{short(n)}: {type_string(types[n])}" if n in types else short(n)
        if n in case.inits and case.inits[n].size <= 8 and (
                case.inits[n].dtype.kind in "iub" or case.inits[n].ndim == 0):
            s += f" = {case.inits[n].tolist()}"
        return s

    lines = []
    for node in case.nodes:
        attrs = []
        for a in node.attribute:
            v = helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, onnx.TensorProto):
                v = numpy_helper.to_array(v).tolist()
            attrs.append(f"{a.name}={v}")
        ins = ", ".join(operand(n) for n in node.input)
        outs = ", ".join(operand(n) for n in node.output)
        lines.append(f"{node.op_type}({ins}) -> {outs}"
                     + (" {" + "; ".join(attrs) + "}" if attrs else ""))
    return lines


# ---------------------------------------------------------------------------
# Element-wise ops.
# ---------------------------------------------------------------------------

def unary(g, r):
    specs = [("Neg", r.f), ("Exp", lambda s: r.f(s, -5, 5)),
             ("Log", lambda s: r.f(s, 0.05, 20)),
             ("Sqrt", lambda s: r.f(s, 0, 20)),
             ("Reciprocal", r.away), ("Erf", r.f),
             ("Tanh", lambda s: r.f(s, -5, 5)),
             ("Sigmoid", lambda s: r.f(s, -10, 10)), ("Relu", r.f),
             ("Sin", lambda s: r.f(s, -10, 10)),
             ("Cos", lambda s: r.f(s, -10, 10))]
    for k, (op, values) in enumerate(specs):
        shape = r.dims(1 + k % 4)
        c = g.case(op.lower())
        c.output(c.op(op, [c.input(values(shape))]))


def unary_more(g, r):
    c = g.case("neg_i64")
    c.output(c.op("Neg", [c.input(r.i(r.dims(2), -100, 100))]))
    c = g.case("neg_i32")
    c.output(c.op("Neg", [c.input(r.i(r.dims(3), -100, 100, I32))]))
    c = g.case("tanh_scalar")
    c.output(c.op("Tanh", [c.input(r.f([]))]))
    c = g.case("exp_large_rank")
    c.output(c.op("Exp", [c.input(r.f(r.dims(5, 1, 3), -3, 3))]))
    c = g.case("identity")
    c.output(c.op("Identity", [c.input(r.f(r.dims(2)))]))
    c = g.case("identity_i64")
    c.output(c.op("Identity", [c.input(r.i(r.dims(2), -5, 5))]))
    c = g.case("dropout_default")
    c.output(c.op("Dropout", [c.input(r.f(r.dims(3)))]))
    c = g.case("dropout_inference")
    c.output(c.op("Dropout", [c.input(r.f(r.dims(2))),
                              c.init(0.3, "ratio", F32),
                              c.init(False, "training", BOOL)]))
    # Chains of unary ops, as exports of GELU and SiLU produce them.
    c = g.case("gelu_erf_chain")
    x = c.input(r.f(r.dims(2), -4, 4))
    e = c.op("Erf", [c.op("Mul", [x, c.init(0.70710678, "rsqrt2", F32)])])
    h = c.op("Mul", [c.op("Add", [e, c.init(1.0, "one", F32)]),
                     c.init(0.5, "half", F32)])
    c.output(c.op("Mul", [x, h]))
    c = g.case("silu_chain")
    x = c.input(r.f(r.dims(3), -6, 6))
    c.output(c.op("Mul", [x, c.op("Sigmoid", [x])]))
    c = g.case("rsqrt_chain")
    x = c.input(r.f(r.dims(2), 0.1, 10))
    c.output(c.op("Reciprocal", [c.op("Sqrt", [x])]),
             c.op("Exp", [c.op("Neg", [c.op("Log", [x])])]))


def gelu(g, r):
    for approx in ["none", "tanh", None]:
        c = g.case(f"gelu_{approx or 'default'}")
        x = c.input(r.f(r.dims(1 + len(c.name) % 3), -6, 6))
        attrs = {"approximate": approx} if approx else {}
        c.output(c.op("Gelu", [x], **attrs))
    c = g.case("gelu_tanh_wide")
    c.output(c.op("Gelu", [c.input(r.f(r.dims(2), -20, 20))],
                  approximate="tanh"))
    c = g.case("gelu_then_add")
    x = c.input(r.f(r.dims(2)))
    c.output(c.op("Add", [c.op("Gelu", [x]), x]))


def broadcast_patterns(r):
    """Pairs of broadcast-compatible shapes, with fresh dimensions each."""
    def fresh():
        return r.dims(3)
    pats = []
    m, n, _ = fresh(); pats.append(("same", [m, n], [m, n]))
    m, n, _ = fresh(); pats.append(("scalar_rhs", [m, n], []))
    m, n, _ = fresh(); pats.append(("scalar_lhs", [], [m, n]))
    m, n, _ = fresh(); pats.append(("row", [m, n], [n]))
    m, n, _ = fresh(); pats.append(("column", [m, n], [m, 1]))
    m, n, k = fresh(); pats.append(("rank_extend", [m, n], [k, m, n]))
    m, n, k = fresh(); pats.append(("both_sided", [k, 1, n], [m, 1]))
    m, n, k = fresh(); pats.append(("ones", [1, m, 1], [k, 1, n]))
    return pats


def binary_cases(g, r, ops):
    for op in ops:
        for pat, sa, sb in broadcast_patterns(r):
            c = g.case(f"{op.lower()}_{pat}")
            a = c.input(r.f(sa), "a")
            if op == "Div":
                b = c.input(r.away(sb, 0.25, 4), "b")
            else:
                b = c.input(r.f(sb), "b")
            c.output(c.op(op, [a, b]))


def binary_add_sub(g, r):
    binary_cases(g, r, ["Add", "Sub"])


def binary_mul_div(g, r):
    binary_cases(g, r, ["Mul", "Div"])


def binary_pow(g, r):
    for pat, sa, sb in broadcast_patterns(r):
        c = g.case(f"pow_{pat}")
        c.output(c.op("Pow", [c.input(r.f(sa, 0.3, 3), "a"),
                              c.input(r.f(sb, -2, 2), "b")]))
    # Negative bases with integral exponents are defined (powf(-2, 3) = -8).
    c = g.case("pow_negative_base")
    shape = r.dims(2)
    exps = np.asarray(r.i(shape, -2, 3), F32)
    c.output(c.op("Pow", [c.input(r.away(shape, 0.5, 3), "a"),
                          c.input(exps, "b")]))
    c = g.case("pow_square")
    c.output(c.op("Pow", [c.input(r.f(r.dims(3)), "a"),
                          c.init(2.0, "two", F32)]))
    c = g.case("pow_cube_const_row")
    n = r.dim()
    c.output(c.op("Pow", [c.input(r.f([r.dim(), n]), "a"),
                          c.init(np.full([n], 3.0), "three", F32)]))
    c = g.case("pow_half")
    c.output(c.op("Pow", [c.input(r.f(r.dims(2), 0, 9), "a"),
                          c.init(0.5, "half", F32)]))


def int_arith(g, r):
    for dtype, tname in [(I64, "i64"), (I32, "i32")]:
        for op in ["Add", "Sub", "Mul", "Div"]:
            m, n, k = r.dims(3)
            pat, sa, sb = r.choice([("same", [m, n], [m, n]),
                                    ("row", [m, n], [n]),
                                    ("both_sided", [k, 1, n], [m, 1]),
                                    ("scalar_rhs", [m, n], [])])
            if op == "Div" and dtype == I64:
                pat, sa, sb = "row", [m, n], [n]
            elif op == "Div":
                pat, sa, sb = "both_sided", [k, 1, n], [m, 1]
            c = g.case(f"{op.lower()}_{tname}_{pat}")
            a = c.input(r.i(sa, -50, 50, dtype), "a")
            b = (c.input(r.nonzero(sb, -7, 7, dtype), "b") if op == "Div"
                 else c.input(r.i(sb, -50, 50, dtype), "b"))
            c.output(c.op(op, [a, b]))
    # Truncating division: -7 / 2 = -3, 7 / -2 = -3, -7 / -2 = 3.
    c = g.case("div_i64_truncates")
    c.output(c.op("Div", [
        c.input(np.array([-7, 7, -7, 7, -1, 1, 0, -9], I64), "a"),
        c.input(np.array([2, -2, -2, 2, 3, -3, 5, 4], I64), "b")]))
    c = g.case("div_i64_scalar")
    c.output(c.op("Div", [c.input(r.i(r.dims(2), -40, 40), "a"),
                          c.ints(-3, "three")]))
    c = g.case("mul_i64_large")
    c.output(c.op("Mul", [c.input(r.i(r.dims(2), -2**31, 2**31), "a"),
                          c.input(r.i([], -1000, 1000), "b")]))


def compare(g, r):
    def tied(shape):  # small integers as floats, so that Equal hits
        return np.asarray(r.i(shape, -2, 2), F32)
    m, n = r.dims(2)
    c = g.case("equal_f32")
    c.output(c.op("Equal", [c.input(tied([m, n]), "a"),
                            c.input(tied([m, n]), "b")]))
    m, n = r.dims(2)
    c = g.case("less_f32_row")
    c.output(c.op("Less", [c.input(tied([m, n]), "a"),
                           c.input(tied([n]), "b")]))
    m, n, k = r.dims(3)
    c = g.case("greater_f32_both_sided")
    c.output(c.op("Greater", [c.input(tied([k, 1, n]), "a"),
                              c.input(tied([m, 1]), "b")]))
    m, n = r.dims(2)
    c = g.case("equal_i64_column")
    c.output(c.op("Equal", [c.input(r.i([m, n], -2, 2), "a"),
                            c.input(r.i([m, 1], -2, 2), "b")]))
    c = g.case("less_i64_scalar")
    c.output(c.op("Less", [c.input(r.i(r.dims(3), -5, 5), "a"),
                           c.ints(1, "one")]))
    c = g.case("greater_i32")
    shape = r.dims(2)
    c.output(c.op("Greater", [c.input(r.i(shape, -3, 3, I32), "a"),
                              c.input(r.i(shape, -3, 3, I32), "b")]))
    c = g.case("equal_bool")
    shape = r.dims(2)
    c.output(c.op("Equal", [c.input(r.b(shape), "a"), c.input(r.b(shape), "b")]))
    c = g.case("not")
    c.output(c.op("Not", [c.input(r.b(r.dims(3)))]))
    c = g.case("not_less")
    shape = r.dims(2)
    c.output(c.op("Not", [c.op("Less", [c.input(tied(shape), "a"),
                                        c.input(tied(shape), "b")])]))
    m, n = r.dims(2)
    c = g.case("where_cond_column_scalar_y")
    c.output(c.op("Where", [c.input(r.b([m, 1]), "cond"),
                            c.input(r.f([m, n]), "x"),
                            c.input(r.f([]), "y")]))
    m, n, k = r.dims(3)
    c = g.case("where_cond_row_rank_extend")
    c.output(c.op("Where", [c.input(r.b([n]), "cond"),
                            c.input(r.f([k, m, n]), "x"),
                            c.input(r.f([m, 1]), "y")]))
    m, n = r.dims(2)
    c = g.case("where_i64")
    c.output(c.op("Where", [c.input(r.b([m, n]), "cond"),
                            c.input(r.i([m, n], -9, 9), "x"),
                            c.input(r.i([n], -9, 9), "y")]))
    c = g.case("where_from_greater")
    x = c.input(r.f(r.dims(2)))
    c.output(c.op("Where", [c.op("Greater", [x, c.init(0.0, "zero", F32)]),
                            x, c.init(0.0, "zero2", F32)]))


def logical(g, r):
    """And, Or, Xor with broadcasting; LessOrEqual and GreaterOrEqual (ties,
    NaN and integers), as the exporters write attention masks."""
    def tied(shape):
        return np.asarray(r.i(shape, -2, 2), F32)
    m, n = r.dims(2)
    c = g.case("and_row")
    c.output(c.op("And", [c.input(r.b([m, n]), "a"), c.input(r.b([n]), "b")]))
    m, n, k = r.dims(3)
    c = g.case("or_both_sided")
    c.output(c.op("Or", [c.input(r.b([k, 1, n]), "a"),
                         c.input(r.b([m, 1]), "b")]))
    c = g.case("xor")
    shape = r.dims(3)
    c.output(c.op("Xor", [c.input(r.b(shape), "a"), c.input(r.b(shape), "b")]))
    m, n = r.dims(2)
    c = g.case("less_or_equal_f32_row")
    c.output(c.op("LessOrEqual", [c.input(tied([m, n]), "a"),
                                  c.input(tied([n]), "b")]))
    c = g.case("greater_or_equal_nan")
    a = tied([m, n])
    a[0, 0] = np.nan
    c.output(c.op("GreaterOrEqual", [c.input(a, "a"), c.input(tied([m, n]), "b")]))
    c = g.case("less_or_equal_i64_causal")  # GPT-2's causal mask
    q = r.dim(3, 9)
    c.output(c.op("LessOrEqual", [c.input(np.arange(q, dtype=I64).reshape(1, q), "k"),
                                  c.input(np.arange(q, dtype=I64).reshape(q, 1), "q")]))
    c = g.case("greater_or_equal_i32_scalar")
    c.output(c.op("GreaterOrEqual", [c.input(r.i(r.dims(2), -3, 3, I32), "a"),
                                     c.input(np.array(0, I32), "b")]))
    c = g.case("is_nan_is_inf")  # the exporters' SDPA zeroes NaN rows
    x = r.f(r.dims(2))
    x.flat[0], x.flat[-1] = np.nan, np.inf
    x.flat[1] = -np.inf
    xi = c.input(x, "x")
    c.output(c.op("IsNaN", [xi]), c.op("IsInf", [xi]),
             c.op("IsInf", [xi], detect_negative=0),
             c.op("IsInf", [xi], detect_positive=0))
    m, n = r.dims(2)
    c = g.case("max_min_variadic")
    a, b, d = (c.input(r.f([m, n]), "a"), c.input(r.f([n]), "b"),
               c.input(r.f([m, 1]), "d"))
    c.output(c.op("Max", [a, b, d]), c.op("Min", [a, b]), c.op("Max", [a]))
    c = g.case("max_min_i64_nan")
    x = r.f([m, n])
    x[0, 0] = np.nan
    c.output(c.op("Max", [c.input(r.i([m, n], -5, 5), "i"),
                          c.input(r.i([n], -5, 5), "j")]),
             c.op("Min", [c.input(x, "x"), c.input(r.f([m, n]), "y")]))
    c = g.case("sum_mean")
    a, b = c.input(r.f([m, n]), "a"), c.input(r.f([n]), "b")
    c.output(c.op("Sum", [a, b, a]), c.op("Mean", [a, b]))
    c = g.case("and_of_compares")
    shape = r.dims(2)
    x = c.input(tied(shape), "x")
    c.output(c.op("And", [c.op("GreaterOrEqual", [x, c.init(-1.0, "lo", F32)]),
                          c.op("LessOrEqual", [x, c.init(1.0, "hi", F32)])]))


def cast(g, r):
    to = {"f32": TensorProto.FLOAT, "i64": TensorProto.INT64,
          "i32": TensorProto.INT32, "bool": TensorProto.BOOL}

    def mixed(shape):
        """Negative and positive non-integers, exact integers and zeros."""
        v = r.f(shape, -6, 6)
        flat = v.reshape(-1)
        flat[::5] = np.round(flat[::5])
        flat[1::7] = 0
        return v

    srcs = {"f32": mixed,
            "i64": lambda s: r.i(s, -1000, 1000),
            "i32": lambda s: r.i(s, -1000, 1000, I32),
            "bool": r.b}
    pairs = [("f32", "i64"), ("f32", "i32"), ("f32", "bool"), ("f32", "f32"),
             ("i64", "f32"), ("i64", "i32"), ("i64", "bool"),
             ("i32", "i64"), ("i32", "f32"),
             ("bool", "f32"), ("bool", "i64"), ("bool", "i32")]
    for src, dst in pairs:
        c = g.case(f"cast_{src}_to_{dst}")
        values = srcs[src](r.dims(1 + len(c.name) % 3))
        if src in ("i64", "i32") and dst == "bool":
            values.reshape(-1)[::3] = 0
        c.output(c.op("Cast", [c.input(values)], to=to[dst]))
    c = g.case("castlike_f32_to_i64")
    c.output(c.op("CastLike", [c.input(mixed(r.dims(2))),
                               c.input(r.i([2], 0, 1), "like")]))
    c = g.case("castlike_i64_to_f32")
    c.output(c.op("CastLike", [c.input(r.i(r.dims(2), -9, 9)),
                               c.input(r.f([]), "like")]))


# ---------------------------------------------------------------------------
# Normalizations and reductions.
# ---------------------------------------------------------------------------

def softmax(g, r):
    for op in ["Softmax", "LogSoftmax"]:
        for axis in [-1, 0, 1]:
            c = g.case(f"{op.lower()}_axis{axis}".replace("-", "m"))
            # Large magnitudes: exp() overflows unless the max is subtracted.
            x = r.f(r.dims(3), -1, 1) * 200 + 500
            c.output(c.op(op, [c.input(x)], axis=axis))
    c = g.case("softmax_default_axis_4d")
    c.output(c.op("Softmax", [c.input(r.f(r.dims(4), -30, 30))]))
    c = g.case("logsoftmax_2d_neg_large")
    c.output(c.op("LogSoftmax", [c.input(r.f(r.dims(2), -1, 1) * 300 - 1000)],
                  axis=-1))
    c = g.case("softmax_axis2_of_4d")
    c.output(c.op("Softmax", [c.input(r.f(r.dims(4), -50, 50))], axis=2))


def layer_norm(g, r):
    def values(shape):
        return r.f(shape, -2, 2) * 3 + 5
    a, b, d = r.dims(3)
    c = g.case("ln_last_scale_bias")
    c.output(c.op("LayerNormalization", [
        c.input(values([a, b, d])), c.init(r.f([d]), "scale"),
        c.init(r.f([d]), "bias")], axis=-1))
    a, b, d = r.dims(3)
    c = g.case("ln_axis_m2_scale_bias")
    c.output(c.op("LayerNormalization", [
        c.input(values([a, b, d])), c.init(r.f([b, d]), "scale"),
        c.init(r.f([b, d]), "bias")], axis=-2))
    a, d = r.dims(2)
    c = g.case("ln_last_no_bias")
    c.output(c.op("LayerNormalization", [
        c.input(values([a, d])), c.init(r.f([d]), "scale")], axis=-1))
    a, b, d = r.dims(3)
    c = g.case("ln_axis_m2_no_bias_input_scale")
    c.output(c.op("LayerNormalization", [
        c.input(values([a, b, d])), c.input(r.f([b, d]), "scale")],
        axis=-2))
    a, b, d = r.dims(3)
    c = g.case("ln_axis1_eps")
    c.output(c.op("LayerNormalization", [
        c.input(values([a, b, d])), c.init(r.f([b, d]), "scale"),
        c.input(r.f([b, d]), "bias")], axis=1, epsilon=1e-2))
    a, b, h, d = r.dims(4)
    c = g.case("ln_4d_default_axis")
    c.output(c.op("LayerNormalization", [
        c.input(values([a, b, h, d])), c.init(r.f([d]), "scale"),
        c.init(r.f([d]), "bias")]))
    a, d = r.dims(2)
    c = g.case("ln_then_matmul")
    x = c.op("LayerNormalization", [c.input(values([a, d])),
                                    c.init(r.f([d]), "scale"),
                                    c.init(r.f([d]), "bias")], axis=-1)
    c.output(c.op("MatMul", [x, c.init(r.f([d, r.dim()]), "w")]))


def rms_norm(g, r):
    a, b, d = r.dims(3)
    c = g.case("rms_last")
    c.output(c.op("RMSNormalization", [c.input(r.f([a, b, d])),
                                       c.init(r.f([d]), "scale")], axis=-1))
    a, b, d = r.dims(3)
    c = g.case("rms_axis_m2")
    c.output(c.op("RMSNormalization", [c.input(r.f([a, b, d])),
                                       c.init(r.f([b, d]), "scale")], axis=-2))
    a, d = r.dims(2)
    c = g.case("rms_default_eps")
    c.output(c.op("RMSNormalization", [c.input(r.f([a, d], -0.1, 0.1)),
                                       c.input(r.f([d]), "scale")],
                  epsilon=1e-3))
    a, b, h, d = r.dims(4)
    c = g.case("rms_4d_large")
    c.output(c.op("RMSNormalization", [c.input(r.f([a, b, h, d]) * 100),
                                       c.init(r.f([d]), "scale")]))


REDUCE_AXES = [("last", [-1]), ("first", [0]), ("0_2", [0, 2]), ("all", None)]


def reduce_case(g, op, x, axes, keepdims, tag, axes_input):
    c = g.case(f"{op[6:].lower()}_{tag}_k{keepdims}")
    ins = [c.input(x)]
    attrs = {"keepdims": keepdims}
    if axes is not None:
        if axes_input:
            ins.append(c.ints(axes, "axes"))
        else:
            attrs["axes"] = axes
    c.output(c.op(op, ins, **attrs))
    return c


def reduce_sum(g, r):
    for tag, axes in REDUCE_AXES:
        for keepdims in [0, 1]:
            reduce_case(g, "ReduceSum", r.f(r.dims(3)), axes, keepdims, tag,
                        True)
    reduce_case(g, "ReduceSum", r.i(r.dims(3), -100, 100), [1], 0, "i64_mid",
                True)
    reduce_case(g, "ReduceSum", r.i(r.dims(2), -100, 100), None, 1, "i64_all",
                True)
    reduce_case(g, "ReduceSum", r.f(r.dims(3)), [-3, -1], 0, "neg_pair",
                True)
    c = g.case("sum_noop_empty_axes")
    c.output(c.op("ReduceSum", [c.input(r.f(r.dims(2)))],
                  noop_with_empty_axes=1))


def reduce_mean_max(g, r):
    for op in ["ReduceMean", "ReduceMax"]:
        for tag, axes in REDUCE_AXES:
            for keepdims in [0, 1]:
                reduce_case(g, op, r.f(r.dims(3), -10, 10), axes, keepdims,
                            tag, False)
    reduce_case(g, "ReduceMax", r.i(r.dims(3), -100, 100), [-1], 0,
                "i64_last", False)
    reduce_case(g, "ReduceMax", r.f(r.dims(3), -10, -1), [1], 1,
                "all_negative", False)


def reduce_opset18(g, r):
    for op in ["ReduceMean", "ReduceMax", "ReduceSum"]:
        reduce_case(g, op, r.f(r.dims(3)), [-1], 0, "last", True)
        reduce_case(g, op, r.f(r.dims(3)), [0, 2], 1, "0_2", True)
        reduce_case(g, op, r.f(r.dims(3)), None, 0, "all", True)


# ---------------------------------------------------------------------------
# Data movement, shapes and constants.
# ---------------------------------------------------------------------------

def transpose(g, r):
    c = g.case("transpose_2d_default")
    c.output(c.op("Transpose", [c.input(r.f(r.dims(2)))]))
    for perm in [[1, 2, 0], [2, 0, 1], [0, 2, 1, 3], [3, 1, 0, 2],
                 [0, 1, 3, 2]]:
        c = g.case("transpose_" + "".join(map(str, perm)))
        c.output(c.op("Transpose", [c.input(r.f(r.dims(len(perm))))],
                      perm=perm))
    c = g.case("transpose_i64")
    c.output(c.op("Transpose", [c.input(r.i(r.dims(3), -9, 9))],
                  perm=[1, 0, 2]))
    c = g.case("transpose_then_add")
    a, b = r.dims(2)
    t = c.op("Transpose", [c.input(r.f([a, b]))], perm=[1, 0])
    c.output(c.op("Add", [t, c.input(r.f([b, a]), "y")]))


def reshape(g, r):
    a, b, d = r.dims(3)
    c = g.case("reshape_minus1")
    c.output(c.op("Reshape", [c.input(r.f([a, b, d])), c.ints([-1, d])]))
    a, b, d = r.dims(3)
    c = g.case("reshape_zero_copies")
    c.output(c.op("Reshape", [c.input(r.f([a, b, d])), c.ints([0, -1])]))
    a, b, d = r.dims(3)
    c = g.case("reshape_then_add")
    y = c.op("Reshape", [c.input(r.f([a, b * d])), c.ints([a, b, d])])
    c.output(c.op("Add", [y, c.input(r.f([d]), "bias")]))
    c = g.case("reshape_i64_flat")
    c.output(c.op("Reshape", [c.input(r.i(r.dims(3), -9, 9)), c.ints([-1])]))
    c = g.case("reshape_to_scalar")
    c.output(c.op("Reshape", [c.input(r.f([1, 1])),
                              c.init(np.zeros([0], I64), "shape")]))
    for axis in [0, 1, 2, -1]:
        c = g.case(f"flatten_axis{axis}".replace("-", "m"))
        c.output(c.op("Flatten", [c.input(r.f(r.dims(4)))], axis=axis))
    a, d = r.dims(2)
    c = g.case("squeeze_axis1")
    c.output(c.op("Squeeze", [c.input(r.f([a, 1, d])), c.ints([1])]))
    c = g.case("squeeze_neg_axis")
    c.output(c.op("Squeeze", [c.input(r.f([a, d, 1])), c.ints([-1])]))
    c = g.case("squeeze_all_ones")
    c.output(c.op("Squeeze", [c.input(r.f([1, a, 1, d]))]))
    c = g.case("unsqueeze_0")
    c.output(c.op("Unsqueeze", [c.input(r.f([a, d])), c.ints([0])]))
    c = g.case("unsqueeze_neg")
    c.output(c.op("Unsqueeze", [c.input(r.f([a, d])), c.ints([-1])]))
    a, b, d = r.dims(3)
    c = g.case("unsqueeze_1_3_then_mul")
    u = c.op("Unsqueeze", [c.input(r.f([a, b])), c.ints([1, 3])])
    c.output(u, c.op("Mul", [u, c.input(r.f([d, b, 1]), "y")]))


def concat_split(g, r):
    a, b, n = r.dims(3)
    c = g.case("concat_axis0")
    c.output(c.op("Concat", [c.input(r.f([a, n]), "a"),
                             c.input(r.f([b, n]), "b")], axis=0))
    c = g.case("concat_axis_m1")
    c.output(c.op("Concat", [c.input(r.f([n, a]), "a"),
                             c.input(r.f([n, b]), "b")], axis=-1))
    m, k = r.dims(2)
    c = g.case("concat_middle_3_inputs")
    c.output(c.op("Concat", [c.input(r.f([m, a, k]), "a"),
                             c.input(r.f([m, b, k]), "b"),
                             c.input(r.f([m, 1, k]), "c")], axis=1))
    c = g.case("concat_same_input_twice")
    x = c.input(r.f([a, n]))
    c.output(c.op("Concat", [x, x], axis=0))
    c = g.case("concat_i64_computed")
    x = c.input(r.i([a, n], -9, 9))
    c.output(c.op("Concat", [x, c.op("Neg", [x]), c.ints(np.ones([a, 1]))],
                  axis=1))
    d = r.dim()
    c = g.case("split_equal2_axis0")
    c.output(*c.op("Split", [c.input(r.f([2 * d, n]))], nout=2, axis=0))
    c = g.case("split_equal3_axis_m1")
    c.output(*c.op("Split", [c.input(r.f([n, 3 * d]))], nout=3, axis=-1))
    c = g.case("split_uneven_axis1")
    c.output(*c.op("Split", [c.input(r.f([m, 6, k])), c.ints([2, 3, 1])],
                   nout=3, axis=1))
    c = g.case("split_i64_then_add")
    p, q = c.op("Split", [c.input(r.i([n, 4], -9, 9)), c.ints([1, 3])],
                nout=2, axis=-1)
    c.output(c.op("Add", [p, q]))


def split_opset18(g, r):
    n = r.dim()
    c = g.case("split_num_outputs_uneven")
    c.output(*c.op("Split", [c.input(r.f([n, 7]))], nout=3, axis=1,
                   num_outputs=3))
    c = g.case("split_num_outputs_even")
    c.output(*c.op("Split", [c.input(r.f([6, n]))], nout=2, axis=0,
                   num_outputs=2))
    c = g.case("split_sizes_input")
    c.output(*c.op("Split", [c.input(r.f([n, 5])), c.ints([4, 1])], nout=2,
                   axis=-1))


def slice_(g, r):
    def x3():
        return r.f(r.dims(3, 4, 8))

    def slc(name, x, starts, ends, axes=None, steps=None):
        c = g.case(name)
        ins = [c.input(x), c.ints(starts, "starts"), c.ints(ends, "ends")]
        if axes is not None:
            ins.append(c.ints(axes, "axes"))
        if steps is not None:
            ins.append(c.ints(steps, "steps"))
        c.output(c.op("Slice", ins))
        return c

    slc("slice_neg_start", x3(), [-3], [1000], [1])
    slc("slice_step2", x3(), [0], [1000], [1], [2])
    slc("slice_reverse", x3(), [-1], [INT64_MIN], [0], [-1])
    slc("slice_reverse_step_m2_partial", x3(), [-2], [0], [-1], [-2])
    slc("slice_end_past_end", x3(), [1], [1000], [-1])
    slc("slice_three_axes", x3(), [1, -2, 0], [3, 1000, 1000], [0, 2, 1],
        [1, 1, 2])
    slc("slice_no_axes_steps", x3(), [0, 1], [2, -1])
    slc("slice_neg_end", x3(), [1, 0], [-1, -2], [-1, 0])
    slc("slice_i64", r.i(r.dims(2, 4, 8), -9, 9), [1], [INT64_MIN], [1], [-1])
    c = slc("slice_then_mul", x3(), [0], [2], [2])
    y = c.input(r.f(c.inputs[c.name + "_x"].shape[:2] + (2,)), "y")
    c.output(c.op("Mul", [c.outputs[0], y]))


def gather(g, r):
    a, b, d = r.dims(3)
    c = g.case("gather_axis0_negative_indices")
    c.output(c.op("Gather", [c.input(r.f([a, b, d])),
                             c.input(np.array([-1, 0, -a, 1, a - 1], I64),
                                     "idx")], axis=0))
    a, b, d = r.dims(3)
    c = g.case("gather_axis0_const_indices")
    c.output(c.op("Gather", [c.input(r.f([a, d])), c.ints([1, -1, 0])]))
    a, b, d = r.dims(3)
    c = g.case("gather_axis1")
    c.output(c.op("Gather", [c.input(r.f([a, b, d])),
                             c.input(r.i([4], -b, b - 1), "idx")], axis=1))
    vocab, dim = r.dim(6, 12), r.dim()
    c = g.case("gather_embedding_2d_indices")
    c.output(c.op("Gather", [c.init(r.f([vocab, dim]), "table"),
                             c.input(r.i(r.dims(2), 0, vocab - 1), "ids")]))
    a, b, d = r.dims(3)
    c = g.case("gather_scalar_index_axis1")
    c.output(c.op("Gather", [c.input(r.f([a, b, d])),
                             c.input(np.array(b - 1, I64), "idx")], axis=1))
    c = g.case("gather_scalar_const_index_axis0")
    c.output(c.op("Gather", [c.input(r.f([a, d])), c.ints(-1, "idx")]))
    c = g.case("gather_axis_m1_i32_indices")
    c.output(c.op("Gather", [c.input(r.f([a, b, d])),
                             c.input(r.i([2, 3], -d, d - 1, I32), "idx")],
                  axis=-1))
    c = g.case("gather_i64_data")
    c.output(c.op("Gather", [c.input(r.i([a, d], -99, 99)),
                             c.input(r.i([3], 0, a - 1), "idx")], axis=0))


def gather_elements_nd(g, r):
    """GatherElements along each axis (negative indices, indices shorter than
    the data) and GatherND (batch_dims 0 and 1, tuples of 1 to all axes, the
    dynamo exporter's expansion of a 2-D mask)."""
    a, b, d = r.dims(3)
    c = g.case("gather_elements_axis0_negative")
    c.output(c.op("GatherElements", [c.input(r.f([a, b, d])),
                                     c.input(r.i([a + 1, b, d], -a, a - 1), "idx")],
                  axis=0))
    c = g.case("gather_elements_axis1_shorter")
    c.output(c.op("GatherElements", [c.input(r.f([a, b, d])),
                                     c.input(r.i([max(a - 1, 1), 2, d], -b, b - 1), "idx")],
                  axis=1))
    c = g.case("gather_elements_axis_m1_i32")
    c.output(c.op("GatherElements", [c.input(r.f([a, d])),
                                     c.input(r.i([a, 3], -d, d - 1, I32), "idx")],
                  axis=-1))
    c = g.case("gather_elements_i64_const")  # BERT's position ids
    c.output(c.op("GatherElements", [c.input(r.i([1, 2 * d], 0, 99), "ids"),
                                     c.ints(np.arange(d).reshape(1, d), "pos")],
                  axis=1))
    c = g.case("gather_nd_pairs")
    c.output(c.op("GatherND", [c.input(r.f([a, b, d])),
                               c.input(np.stack([r.i([3], -a, a - 1),
                                                 r.i([3], 0, b - 1)], -1), "idx")]))
    c = g.case("gather_nd_full_tuples")
    c.output(c.op("GatherND", [c.input(r.f([a, b])),
                               c.input(np.stack([r.i([2, 2], 0, a - 1),
                                                 r.i([2, 2], -b, b - 1)], -1), "idx")]))
    c = g.case("gather_nd_batch_dims1")
    c.output(c.op("GatherND", [c.input(r.f([a, b, d])),
                               c.input(r.i([a, 2, 1], 0, b - 1), "idx")],
                  batch_dims=1))
    c = g.case("cumsum_variants")
    x = c.input(r.f([a, b, d]))
    c.output(c.op("CumSum", [x, c.ints(1, "axis")]),
             c.op("CumSum", [x, c.ints(-1, "axis")], exclusive=1),
             c.op("CumSum", [x, c.ints(0, "axis")], reverse=1),
             c.op("CumSum", [x, c.ints(2, "axis")], exclusive=1, reverse=1))
    c = g.case("cumsum_position_ids")  # exporters' positions from a mask
    c.output(c.op("CumSum", [c.input(r.i([2, 9], 0, 2), "mask"),
                             c.ints(1, "axis")]))
    batch, seq = r.dim(2, 4), r.dim(4, 9)
    rows = np.broadcast_to(np.arange(batch).reshape(batch, 1, 1, 1), (batch, 1, 1, seq))
    cols = np.broadcast_to(np.arange(seq).reshape(1, 1, 1, seq), (batch, 1, 1, seq))
    c = g.case("gather_nd_mask_expansion")
    c.output(c.op("GatherND", [c.input(r.b([batch, seq]), "mask"),
                               c.ints(np.stack([rows, cols], -1), "idx")]))


def expand_trilu_range(g, r):
    a, b, n = r.dims(3)
    c = g.case("expand_column_rank_extend")
    c.output(c.op("Expand", [c.input(r.f([b, 1])), c.ints([a, b, n])]))
    c = g.case("expand_shape_lower_rank")
    c.output(c.op("Expand", [c.input(r.f([a, n])), c.ints([1])]))
    c = g.case("expand_both_sided")
    c.output(c.op("Expand", [c.input(r.f([1, n])), c.ints([a, 1, 1])]))
    c = g.case("expand_i64")
    c.output(c.op("Expand", [c.input(r.i([n], -9, 9)), c.ints([b, n])]))
    for upper, k, batch in [(1, 0, []), (0, 0, []), (1, -1, []), (0, 2, []),
                            (1, 2, [2]), (0, -1, [2, 3]), (None, None, [])]:
        m, n = r.dims(2, 3, 6)
        name = "trilu_default" if upper is None else (
            f"trilu_{'upper' if upper else 'lower'}_k{k}".replace("-", "m")
            + ("_batched" if batch else ""))
        c = g.case(name)
        ins = [c.input(r.f(batch + [m, n]))]
        if k is not None:
            ins.append(c.ints(k, "k"))
        attrs = {} if upper is None else {"upper": upper}
        c.output(c.op("Trilu", ins, **attrs))
    c = g.case("trilu_i64_lower")
    c.output(c.op("Trilu", [c.input(r.i([4, 4], -9, 9))], upper=0))
    c = g.case("range_i64")
    c.output(c.op("Range", [c.ints(2, "start"), c.ints(15, "limit"),
                            c.ints(3, "delta")]))
    c = g.case("range_i64_negative_delta")
    c.output(c.op("Range", [c.ints(10, "start"), c.ints(-3, "limit"),
                            c.ints(-4, "delta")]))
    c = g.case("range_f32")
    c.output(c.op("Range", [c.init(0.5, "start", F32),
                            c.init(3.0, "limit", F32),
                            c.init(0.25, "delta", F32)]))
    c = g.case("range_used_at_run_time")
    pos = c.op("Range", [c.ints(0, "start"), c.ints(6, "limit"),
                         c.ints(1, "delta")])
    x = c.input(r.i([r.dim(), 6], -9, 9))
    c.output(c.op("Add", [x, pos]))
    c = g.case("range_f32_constant_nodes")
    s = c.op("Constant", [], tag="start", value_float=-1.0)
    lim = c.op("Constant", [], tag="limit", value_float=1.0)
    d = c.op("Constant", [], tag="delta", value_float=0.5)
    rng_ = c.op("Range", [s, lim, d])
    c.output(c.op("Mul", [c.input(r.f([3, 4])), rng_]))


def shape_const(g, r):
    a, b, d = r.dims(3)
    c = g.case("constant_of_shape_from_shape")
    x = c.input(r.f([a, b]))
    ones = c.op("ConstantOfShape", [c.op("Shape", [x])],
                value=numpy_helper.from_array(np.array([1.5], F32)))
    c.output(c.op("Add", [x, ones]))
    c = g.case("size_cast_mul")
    x = c.input(r.f([a, d]))
    size = c.op("Cast", [c.op("Size", [x])], to=TensorProto.FLOAT)
    c.output(c.op("Mul", [x, size]))
    c = g.case("shape_slice_reshape")
    x = c.input(r.f([a * b, d]))
    y = c.input(r.f([a, b, d]), "y")
    tail = c.op("Shape", [y], start=-2)
    target = c.op("Concat", [c.ints([-1]), tail], axis=0)
    c.output(c.op("Reshape", [x, target]))
    c = g.case("shape_gather_unsqueeze")
    x = c.input(r.f([a, b, d]))
    dim1 = c.op("Gather", [c.op("Shape", [x]), c.ints(1, "one")], axis=0)
    shape = c.op("Concat", [c.op("Unsqueeze", [dim1, c.ints([0], "axes")]),
                            c.ints([-1], "m1")], axis=0)
    c.output(c.op("Reshape", [c.op("Transpose", [x], perm=[1, 0, 2]), shape]))
    c = g.case("constant_of_shape_i64")
    c.output(c.op("Add", [
        c.op("ConstantOfShape", [c.ints([a, b], "shape")],
             value=numpy_helper.from_array(np.array([7], I64))),
        c.input(r.i([a, b], -9, 9))]))
    c = g.case("constant_of_shape_default")
    c.output(c.op("Sub", [c.op("ConstantOfShape", [c.ints([b], "shape")]),
                          c.input(r.f([a, b]))]))
    c = g.case("constant_nodes")
    x = c.input(r.f([a, d]))
    t = c.op("Constant", [], tag="t",
             value=numpy_helper.from_array(r.f([d])))
    f = c.op("Constant", [], tag="f", value_float=-2.5)
    s = c.op("Constant", [], tag="s", value_ints=[d, a])
    c.output(c.op("Reshape", [c.op("Mul", [c.op("Add", [x, t]), f]), s]))
    c = g.case("shape_as_output")
    c.output(c.op("Shape", [c.input(r.f([a, b, d]))]))
    c = g.case("size_as_output")
    c.output(c.op("Size", [c.input(r.f([a, b]))]))


# ---------------------------------------------------------------------------
# Contractions, attention masks and losses.
# ---------------------------------------------------------------------------

def matmul(g, r):
    m, k, n, b = r.dims(4)
    specs = [("mm_2d", [m, k], [k, n]),
             ("mm_3d_batched", [b, m, k], [b, k, n]),
             ("mm_4d_batched", [2, b, m, k], [2, b, k, n]),
             ("mm_batch_broadcast", [2, 1, 4, 8], [3, 8, 5]),
             ("mm_3d_by_2d", [b, m, k], [k, n]),
             ("mm_2d_by_3d", [m, k], [b, k, n]),
             ("mm_1d_by_2d", [k], [k, n]),
             ("mm_2d_by_1d", [m, k], [k]),
             ("mm_1d_by_1d", [k], [k]),
             ("mm_1d_by_3d", [k], [b, k, n]),
             ("mm_4d_by_1d", [2, b, m, k], [k])]
    for name, sa, sb in specs:
        c = g.case(name)
        c.output(c.op("MatMul", [c.input(r.f(sa, -1, 1), "a"),
                                 c.input(r.f(sb, -1, 1), "b")]))
    c = g.case("mm_weight_initializer")
    c.output(c.op("MatMul", [c.input(r.f([b, m, 16], -1, 1), "a"),
                             c.init(r.f([16, 24], -1, 1), "w")]))


def gemm(g, r):
    def case(name, trans_a=0, trans_b=0, c_shape="none", alpha=None,
             beta=None, weight=False):
        m, k, n = r.dims(3)
        c = g.case(name)
        a = c.input(r.f([k, m] if trans_a else [m, k], -1, 1), "a")
        bshape = [n, k] if trans_b else [k, n]
        b = c.init(r.f(bshape, -1, 1), "w") if weight else \
            c.input(r.f(bshape, -1, 1), "b")
        ins = [a, b]
        cs = {"none": None, "scalar": [], "one": [1], "row": [n],
              "column": [m, 1], "full": [m, n]}[c_shape]
        if cs is not None:
            ins.append(c.input(r.f(cs), "c"))
        attrs = {}
        if trans_a:
            attrs["transA"] = 1
        if trans_b:
            attrs["transB"] = 1
        if alpha is not None:
            attrs["alpha"] = alpha
        if beta is not None:
            attrs["beta"] = beta
        c.output(c.op("Gemm", ins, **attrs))

    case("gemm_no_c")
    case("gemm_trans_a", trans_a=1, c_shape="row")
    case("gemm_trans_b_weight", trans_b=1, c_shape="row", weight=True)
    case("gemm_trans_ab_full", trans_a=1, trans_b=1, c_shape="full")
    case("gemm_alpha_beta_full", c_shape="full", alpha=0.5, beta=-2.0)
    case("gemm_c_scalar", c_shape="scalar", beta=3.0)
    case("gemm_c_one", c_shape="one")
    case("gemm_c_column", c_shape="column", alpha=1.5)
    case("gemm_alpha_no_c", trans_b=1, alpha=-0.25)


def einsum(g, r):
    for name, eq, shapes in [
            ("einsum_outer", "i,j->ij", [[4], [5]]),
            ("einsum_batched_outer", "bi,bj->bij", [[3, 4], [3, 5]]),
            ("einsum_transpose", "ij->ji", [[3, 5]]),
            ("einsum_vec_mat_outer", "i,jk->ijk", [[2], [3, 4]]),
            ("einsum_elementwise_permuted", "ij,ji->ij", [[3, 4], [4, 3]])]:
        c = g.case(name)
        ins = [c.input(r.f(s), f"in{k}") for k, s in enumerate(shapes)]
        c.output(c.op("Einsum", ins, equation=eq))


def attention(g, r):
    def scores(c, bsz, heads, s, d):
        q = c.input(r.f([bsz, heads, s, d], -2, 2), "q")
        k = c.input(r.f([bsz, heads, s, d], -2, 2), "k")
        kt = c.op("Transpose", [k], perm=[0, 1, 3, 2], tag="kt")
        qk = c.op("MatMul", [q, kt], tag="qk")
        return c.op("Mul", [qk, c.init(1 / np.sqrt(d), "scale", F32)],
                    tag="scores")

    def finish(c, masked, bsz, heads, s, d):
        probs = c.op("Softmax", [masked], axis=-1, tag="probs")
        v = c.input(r.f([bsz, heads, s, d]), "v")
        c.output(probs, c.op("MatMul", [probs, v], tag="ctx"))

    bsz, heads, s, d = 2, 2, r.dim(4, 7), r.dim(3, 8)
    c = g.case("attn_causal_bool_mask_fmin")
    sc = scores(c, bsz, heads, s, d)
    mask = c.input(np.tril(np.ones([1, 1, s, s], BOOL)), "mask")
    finish(c, c.op("Where", [mask, sc, c.init(FMIN, "fill", F32)]),
           bsz, heads, s, d)
    c = g.case("attn_trilu_mask_neg_inf")
    sc = scores(c, bsz, heads, s, d)
    tri = c.op("Trilu", [c.init(np.ones([s, s]), "ones", F32)], upper=0)
    mask = c.op("Cast", [tri], to=TensorProto.BOOL, tag="mask")
    finish(c, c.op("Where", [mask, sc, c.init(-np.inf, "fill", F32)]),
           bsz, heads, s, d)
    c = g.case("attn_padding_mask_1e9")
    sc = scores(c, bsz, heads, s, d)
    pad = r.b([bsz, 1, 1, s], 0.7)
    pad[..., 0] = True
    finish(c, c.op("Where", [c.input(pad, "mask"), sc,
                             c.init(-1e9, "fill", F32)]), bsz, heads, s, d)
    c = g.case("attn_additive_mask")
    sc = scores(c, bsz, heads, s, d)
    keep = np.asarray(r.b([bsz, 1, 1, s], 0.7), F32)
    keep[..., 0] = 1
    m = c.input(keep, "mask")
    add = c.op("Mul", [c.op("Sub", [c.init(1.0, "one", F32), m]),
                       c.init(FMIN, "fmin", F32)], tag="bias")
    finish(c, c.op("Add", [sc, add]), bsz, heads, s, d)
    c = g.case("masked_fill_where")
    x = c.input(r.f([3, s, s], -5, 5))
    pad = r.b([s, s], 0.3)
    np.fill_diagonal(pad, False)
    c.output(c.op("Softmax", [c.op("Where", [
        c.input(pad, "pad"), c.init(-10000.0, "fill", F32), x])], axis=-1))


def loss_cases(g, r, op, nll):
    def case(name, n, cls, extra=(), reduction=None, weights=False,
             ignore=None, label_dtype=I64):
        c = g.case(name)
        scores = r.f([n, cls] + list(extra), -4, 4)
        if nll:  # log-probabilities, as LogSoftmax would give
            scores = scores - np.log(np.exp(scores).sum(1, keepdims=True))
            scores = scores.astype(F32)
        labels = r.i([n] + list(extra), 0, cls - 1, label_dtype)
        if ignore is not None:
            flat = labels.reshape(-1)
            flat[1::3] = ignore
        ins = [c.input(scores, "scores"), c.input(labels, "labels")]
        if weights:
            ins.append(c.init(r.f([cls], 0.1, 2), "weights"))
        attrs = {}
        if reduction:
            attrs["reduction"] = reduction
        if ignore is not None:
            attrs["ignore_index"] = ignore
        c.output(c.op(op, ins, **attrs))

    p = "nll" if nll else "sce"
    n, cls, d = r.dim(3, 8), r.dim(3, 7), r.dim(2, 4)
    case(f"{p}_default_mean", n, cls)
    case(f"{p}_sum", n, cls, reduction="sum")
    case(f"{p}_none", n, cls, reduction="none")
    case(f"{p}_weights_mean", n, cls, reduction="mean", weights=True)
    case(f"{p}_weights_sum", n, cls, reduction="sum", weights=True)
    case(f"{p}_ignore_m100_mean", n, cls, reduction="mean", ignore=-100)
    case(f"{p}_ignore_in_range_weights_mean", n, cls, weights=True, ignore=1)
    case(f"{p}_3d_none_ignore", n, cls, [d], reduction="none", ignore=-1)
    case(f"{p}_3d_weights_mean_ignore", n, cls, [d], weights=True, ignore=0)
    case(f"{p}_4d_sum", 2, cls, [d, 3], reduction="sum")
    case(f"{p}_i32_labels", n, cls, label_dtype=I32, reduction="mean")


def loss_sce(g, r):
    loss_cases(g, r, "SoftmaxCrossEntropyLoss", nll=False)


def loss_nll(g, r):
    loss_cases(g, r, "NegativeLogLikelihoodLoss", nll=True)


# ---------------------------------------------------------------------------
# Large shapes: grid-stride loops, multi-block reductions, tiled contractions.
# ---------------------------------------------------------------------------

def elementwise_large(g, r):
    n = r.dim(900, 1100)
    c = g.case("add_row_large")
    c.output(c.op("Add", [c.input(r.f([r.dim(250, 300), n]), "a"),
                          c.input(r.f([n]), "b")]))
    c = g.case("exp_odd_size_large")
    c.output(c.op("Exp", [c.input(r.f([(1 << 17) + 3], -4, 4))]))
    c = g.case("where_both_sided_large")
    c.output(c.op("Where", [c.input(r.b([r.dim(60, 70), 1, n]), "cond"),
                            c.input(r.f([r.dim(60, 70), 1]), "x"),
                            c.input(r.f([n]), "y")]))
    c = g.case("div_i64_large")
    shape = [r.dim(200, 300), r.dim(200, 300)]
    c.output(c.op("Div", [c.input(r.i(shape, -10**6, 10**6), "a"),
                          c.input(r.nonzero(shape, -300, 300), "b")]))
    c = g.case("cast_f32_to_i32_large")
    c.output(c.op("Cast", [c.input(r.f([r.dim(300, 400), 257], -1e4, 1e4))],
                  to=TensorProto.INT32))
    # Innermost dimensions a multiple of the 256-thread block: the kernels'
    # coordinates come from the block's first element (emitThreadLoopCoords),
    # with operands broadcast along every other pattern.
    for inner in (256, 768):
        outer, mid = r.dim(3, 5), r.dim(2, 4)
        shape = [outer, mid, inner]
        for name, other in (("row", [inner]), ("column", [outer, mid, 1]),
                            ("middle", [outer, 1, inner]),
                            ("outer", [1, mid, inner])):
            c = g.case(f"mul_{name}_block_{inner}")
            c.output(c.op("Mul", [c.input(r.f(shape), "a"),
                                  c.input(r.f(other), "b")]))
        # GPT-2's GELU after its fc bias, spelled out as exported.
        c = g.case(f"gelu_bias_block_{inner}")
        x = c.op("Add", [c.input(r.f(shape, -4, 4), "a"),
                         c.input(r.f([inner]), "b")])
        cube = c.op("Mul", [c.op("Mul", [x, x]), x])
        inner_sum = c.op("Add", [x, c.op("Mul", [cube, c.init(0.044715, "k", F32)])])
        t = c.op("Tanh", [c.op("Mul", [inner_sum, c.init(0.7978845608, "s", F32)])])
        half = c.op("Mul", [x, c.init(0.5, "h", F32)])
        c.output(c.op("Mul", [half, c.op("Add", [t, c.init(1.0, "one", F32)])]))


def normalization_large(g, r):
    c = g.case("softmax_long_rows")
    c.output(c.op("Softmax", [c.input(r.f([8, r.dim(4000, 4200)], -20, 20))],
                  axis=-1))
    c = g.case("softmax_axis0_long")
    c.output(c.op("Softmax", [c.input(r.f([r.dim(2000, 2100), 3], -20, 20))],
                  axis=0))
    c = g.case("logsoftmax_middle_long")
    c.output(c.op("LogSoftmax", [c.input(r.f([4, r.dim(1400, 1600), 3],
                                             -20, 20))], axis=1))
    d = r.dim(2000, 2100)
    c = g.case("ln_long_rows")
    c.output(c.op("LayerNormalization", [
        c.input(r.f([16, d]) + 3), c.init(r.f([d]), "scale"),
        c.init(r.f([d]), "bias")], axis=-1))
    a, b = r.dim(60, 70), r.dim(90, 100)
    c = g.case("ln_axis_m2_large")
    c.output(c.op("LayerNormalization", [
        c.input(r.f([4, a, b])), c.init(r.f([a, b]), "scale"),
        c.init(r.f([a, b]), "bias")], axis=-2))
    c = g.case("sum_long_last")
    c.output(c.op("ReduceSum", [c.input(r.f([3, r.dim(5000, 5200)])),
                                c.ints([-1], "axes")], keepdims=0))
    c = g.case("mean_long_first")
    c.output(c.op("ReduceMean", [c.input(r.f([r.dim(3000, 3100), 5]))],
                  axes=[0], keepdims=1))
    c = g.case("max_long_middle")
    c.output(c.op("ReduceMax", [c.input(r.f([7, r.dim(1025, 1100), 3]))],
                  axes=[1], keepdims=0))
    # Mostly positive, so that the sum does not cancel to a value whose
    # rounding in onnxruntime's own float sum is above the tolerance.
    c = g.case("sum_all_large")
    c.output(c.op("ReduceSum", [c.input(r.f([r.dim(290, 310), 301], -1, 2))],
                  keepdims=0))
    c = g.case("sum_i64_large")
    c.output(c.op("ReduceSum", [c.input(r.i([r.dim(1000, 1100), 9],
                                            -10**6, 10**6)),
                                c.ints([0], "axes")], keepdims=0))


def movement_large(g, r):
    c = g.case("transpose_2d_large")
    c.output(c.op("Transpose", [c.input(r.f([r.dim(128, 140), 257]))]))
    c = g.case("transpose_4d_large")
    c.output(c.op("Transpose", [c.input(r.f([3, 64, r.dim(60, 70), 5]))],
                  perm=[0, 2, 3, 1]))
    c = g.case("slice_step3_large")
    c.output(c.op("Slice", [c.input(r.f([r.dim(1000, 1100), 40])),
                            c.ints([5], "starts"), c.ints([INT64_MAX], "ends"),
                            c.ints([0], "axes"), c.ints([3], "steps")]))
    n = r.dim(500, 600)
    c = g.case("concat_large")
    c.output(c.op("Concat", [c.input(r.f([n, 33]), "a"),
                             c.input(r.f([n, 31]), "b")], axis=-1))
    vocab = r.dim(5000, 5200)
    c = g.case("gather_embedding_large")
    c.output(c.op("Gather", [c.init(r.f([vocab, 64]), "table"),
                             c.input(r.i([4, 128], -vocab, vocab - 1),
                                     "ids")]))
    c = g.case("expand_large")
    c.output(c.op("Expand", [c.input(r.f([1, r.dim(1000, 1100)])),
                             c.ints([64, 1], "shape")]))
    c = g.case("trilu_large")
    c.output(c.op("Trilu", [c.input(r.f([r.dim(290, 310), 300])),
                            c.ints(3, "k")], upper=0))


def contraction_large(g, r):
    m, k, n = r.dim(128, 140), r.dim(250, 260), r.dim(60, 70)
    c = g.case("mm_2d_large")
    c.output(c.op("MatMul", [c.input(r.f([m, k], -1, 1), "a"),
                             c.input(r.f([k, n], -1, 1), "b")]))
    c = g.case("mm_batched_large")
    c.output(c.op("MatMul", [c.input(r.f([4, 64, 96], -1, 1), "a"),
                             c.input(r.f([4, 96, 80], -1, 1), "b")]))
    c = g.case("gemm_trans_b_large")
    c.output(c.op("Gemm", [c.input(r.f([100, 300], -1, 1), "a"),
                           c.init(r.f([200, 300], -1, 1), "w"),
                           c.init(r.f([200]), "bias")], transB=1))
    c = g.case("attn_causal_large")
    s, d = 128, 64
    q = c.input(r.f([2, 4, s, d], -1, 1), "q")
    kt = c.op("Transpose", [c.input(r.f([2, 4, s, d], -1, 1), "k")],
              perm=[0, 1, 3, 2], tag="kt")
    sc = c.op("Mul", [c.op("MatMul", [q, kt], tag="qk"),
                      c.init(1 / np.sqrt(d), "scale", F32)], tag="scores")
    masked = c.op("Where", [c.input(np.tril(np.ones([s, s], BOOL)), "mask"),
                            sc, c.init(FMIN, "fill", F32)], tag="masked")
    probs = c.op("Softmax", [masked], axis=-1, tag="probs")
    c.output(c.op("MatMul", [probs, c.input(r.f([2, 4, s, d]), "v")],
                  tag="ctx"))
    c = g.case("sce_many_classes")
    cls = r.dim(5000, 5200)
    labels = r.i([64], 0, cls - 1)
    labels[::5] = -100
    c.output(c.op("SoftmaxCrossEntropyLoss", [
        c.input(r.f([64, cls], -5, 5), "scores"), c.input(labels, "labels")],
        ignore_index=-100))
    c = g.case("nll_3d_large")
    c.output(c.op("NegativeLogLikelihoodLoss", [
        c.input(r.f([32, 1000, 7], -8, 0), "logp"),
        c.input(r.i([32, 7], 0, 999), "target")], reduction="sum"))


FAMILIES = {
    "elementwise": [("unary", 17, unary), ("unary_more", 17, unary_more),
                    ("binary_add_sub", 17, binary_add_sub),
                    ("binary_mul_div", 17, binary_mul_div),
                    ("binary_pow", 17, binary_pow),
                    ("int_arith", 17, int_arith), ("compare", 17, compare),
                    ("logical", 17, logical),
                    ("cast", 17, cast), ("gelu", 20, gelu),
                    ("large", 17, elementwise_large)],
    "normalization": [("softmax", 17, softmax), ("layer_norm", 17, layer_norm),
                      ("rms_norm", 23, rms_norm),
                      ("reduce_sum", 17, reduce_sum),
                      ("reduce_mean_max", 17, reduce_mean_max),
                      ("reduce_opset18", 18, reduce_opset18),
                      ("large", 17, normalization_large)],
    "movement": [("transpose", 17, transpose), ("reshape", 17, reshape),
                 ("concat_split", 17, concat_split),
                 ("split_opset18", 18, split_opset18), ("slice", 17, slice_),
                 ("gather", 17, gather),
                 ("gather_elements_nd", 17, gather_elements_nd),
                 ("expand_trilu_range", 17, expand_trilu_range),
                 ("shape_const", 17, shape_const),
                 ("large", 17, movement_large)],
    "contraction": [("matmul", 17, matmul), ("gemm", 17, gemm),
                    ("einsum", 17, einsum), ("attention", 17, attention),
                    ("attention_opset23", 23, attention_opset23),
                    ("loss_sce", 17, loss_sce), ("loss_nll", 17, loss_nll),
                    ("large", 17, contraction_large)],
}


def make_groups(seed, only):
    groups = []
    for family, specs in FAMILIES.items():
        for name, opset, build in specs:
            g = Group(family, name, opset, build)
            if only and not any(o in (family, g.key) for o in only):
                continue
            # Each group has its own generator: --only does not change values.
            r = Rand(np.random.default_rng([seed, zlib.crc32(g.key.encode())]))
            build(g, r)
            groups.append(g)
    return groups


# ---------------------------------------------------------------------------
# Running and comparing.
# ---------------------------------------------------------------------------

class Report:
    def __init__(self):
        self.lines, self.passed, self.failed, self.skipped = [], 0, 0, 0

    def ok(self, text):
        self.lines.append("PASS " + text)
        self.passed += 1

    def fail(self, text, details=()):
        self.lines.append("FAIL " + text)
        self.lines += ["    " + d for d in details]
        self.failed += 1

    def note(self, text):
        self.lines.append(text)


def compare_arrays(got, ref):
    """(max_err or None, message or None); message set on a mismatch."""
    if got.shape != ref.shape:
        return None, f"shape {list(got.shape)} != reference {list(ref.shape)}"
    if got.dtype != ref.dtype:
        return None, f"dtype {got.dtype} != reference {ref.dtype}"
    if ref.dtype.kind != "f":
        bad = got != ref
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            return None, (f"{int(bad.sum())} of {ref.size} elements differ; "
                          f"at {idx}: got {got[idx]!r}, want {ref[idx]!r}")
        return 0.0, None
    finite = np.isfinite(ref)
    special = ~finite
    if special.any():
        same = (np.isnan(got) & np.isnan(ref)) | (got == ref)
        bad = special & ~same
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            return None, (f"{int(bad.sum())} non-finite reference values not "
                          f"reproduced; at {idx}: got {got[idx]!r}, want "
                          f"{ref[idx]!r}")
    if not finite.any():
        return 0.0, None
    g64, r64 = got.astype(F64), ref.astype(F64)
    diff = np.where(finite, np.abs(g64 - r64), 0.0)
    diff = np.where(finite & ~np.isfinite(g64), np.inf, diff)
    max_err = float(diff.max())
    tol = 1e-4 * max(1.0, float(np.abs(r64[finite]).max()))
    if not max_err <= tol:
        idx = tuple(int(i) for i in np.unravel_index(np.argmax(diff), diff.shape))
        return max_err, (f"max_err {max_err:.3e} > tol {tol:.3e}; at {idx}: "
                         f"got {got[idx]!r}, want {ref[idx]!r}")
    return max_err, None


def ort_session(model):
    """An onnxruntime CPU session of `model`, graph optimizations off."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def reference(model, feeds):
    sess = ort_session(model)
    names = [o.name for o in model.graph.output]
    return dict(zip(names, sess.run(names, feeds)))


def write_model(model, cases, directory):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.onnx")
    onnx.save(model, path)
    inputs = []
    for c in cases:
        for name, value in c.inputs.items():
            p = os.path.join(directory, name + ".npy")
            np.save(p, value)
            inputs.append((name, p))
    return path, inputs


def run_memfit(memfit_run, model_path, inputs, out_dir, env):
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [memfit_run, model_path, "--device=host", "--quiet",
           f"--output-dir={out_dir}"] + [f"--input={n}={p}" for n, p in inputs]
    line = " ".join(shlex.quote(a) for a in cmd)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=600)
    except subprocess.TimeoutExpired:
        return False, "memfit-run timed out after 600 s", line
    except OSError as e:
        return False, f"cannot run memfit-run: {e}", line
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip()
               or f"exit status {proc.returncode}")
        if proc.returncode < 0:
            msg += f" (killed by signal {-proc.returncode})"
        return False, msg, line
    return True, None, line


def compare_case(case, refs, out_dir):
    """[(output, "dtype[shape]", max_err, mismatch or None)] of one case."""
    results = []
    for name in case.outputs:
        ref = refs[name]
        path = os.path.join(out_dir, name + ".npy")
        if not os.path.exists(path):
            err, msg = None, f"memfit-run wrote no {name}.npy"
        else:
            try:
                err, msg = compare_arrays(np.load(path), ref)
            except Exception as e:  # a malformed .npy
                err, msg = None, f"cannot read {path}: {e}"
        results.append((name, f"{ref.dtype}{list(ref.shape)}", err, msg))
    return results


def run_alone(g, c, args, env):
    """Compiles and runs case `c` as a model of its own: (ok, message,
    reproducer, inferred model)."""
    cmodel, cinferred = make_model([c], g.opset, c.name)
    cdir = os.path.join(args.workdir, g.family, g.name, c.name)
    cpath, cinputs = write_model(cmodel, [c], cdir)
    ok, msg, repro = run_memfit(args.memfit_run, cpath, cinputs,
                                os.path.join(cdir, "out"), env)
    return ok, msg, repro, cinferred


def memfit_lines(msg):
    return ["memfit-run: " + l for l in msg.splitlines()[:12]]


def run_group(g, args, env):
    report = Report()
    gdir = os.path.join(args.workdir, g.family, g.name)
    try:
        model, inferred = make_model(g.cases, g.opset, g.name)
    except Exception as e:
        report.fail(f"{g.key}: cannot build the ONNX model: {e}")
        return report
    feeds = {n: v for c in g.cases for n, v in c.inputs.items()}
    try:
        refs = reference(model, feeds)
    except Exception as e:
        text = str(e)
        if g.name == "rms_norm" and ("NOT_IMPLEMENTED" in text
                                     or "RMSNormalization" in text):
            report.note(f"SKIP {g.key}: onnxruntime cannot run "
                        f"RMSNormalization at opset {g.opset}: "
                        f"{text.splitlines()[0]}")
            report.skipped += 1
            return report
        report.fail(f"{g.key}: onnxruntime failed on the reference model: "
                    f"{text.splitlines()[0] if text else e}")
        return report
    model_path, inputs = write_model(model, g.cases, gdir)
    out_dir = os.path.join(gdir, "out")
    ok, msg, repro = run_memfit(args.memfit_run, model_path, inputs, out_dir,
                                env)
    if not ok:
        report.note(f"NOTE {g.key}: memfit-run failed on the group model; "
                    f"running its {len(g.cases)} cases one by one")
    case_failures = 0
    for c in g.cases:
        if ok:
            results = compare_case(c, refs, out_dir)
            if all(msg_ is None for _, _, _, msg_ in results):
                for name, shape, err, _ in results:
                    report.ok(f"{g.key}/{name} {shape} max_err {err:.2e}")
                continue
        # A failing case, or a group memfit could not run: the case alone
        # gives a short reproducer and tells whether the case is the cause.
        cok, cmsg, crepro, cinferred = run_alone(g, c, args, env)
        case_lines = ["case: " + l for l in describe_case(c, cinferred)]
        if not cok:
            case_failures += 1
            for name in c.outputs:
                report.fail(f"{g.key}/{name}: memfit-run failed on case "
                            f"'{c.name}'",
                            case_lines + memfit_lines(cmsg)
                            + ["reproduce: " + crepro])
            continue
        alone = compare_case(c, refs, os.path.join(gdir, c.name, "out"))
        if not ok:
            results = alone
        if any(m is not None for _, _, _, m in results):
            case_failures += 1
        for (name, shape, err, m), (_, _, _, m_alone) in zip(results, alone):
            if m is None:
                report.ok(f"{g.key}/{name} {shape} max_err {err:.2e}")
            elif m_alone is not None:
                report.fail(f"{g.key}/{name}: {m}",
                            case_lines + ["reproduce: " + crepro])
            else:
                report.fail(f"{g.key}/{name}: {m}",
                            case_lines
                            + ["the case passes alone; it fails in the "
                               "group model:", "reproduce: " + repro])
    if not ok and case_failures == 0:
        report.fail(f"{g.key}: memfit-run failed on the group model although "
                    f"each case passes alone",
                    memfit_lines(msg) + ["reproduce: " + repro])
    return report


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--memfit-run", default="memfit-run",
                   help="the memfit-run tool (default: from PATH)")
    p.add_argument("--workdir", help="where models, inputs and outputs are "
                   "kept (default: a new temporary directory)")
    p.add_argument("--only", action="append", default=[],
                   help="FAMILY or FAMILY/GROUP, comma-separated, repeatable "
                   f"(families: {', '.join(FAMILIES)})")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--jobs", "-j", type=int, default=1,
                   help="groups run in parallel")
    p.add_argument("--list", action="store_true",
                   help="list the groups and their cases, run nothing")
    args = p.parse_args()

    only = [o for spec in args.only for o in spec.split(",") if o]
    known = set(FAMILIES) | {f"{f}/{n}" for f, s in FAMILIES.items()
                             for n, _, _ in s}
    for o in only:
        if o not in known:
            p.error(f"--only {o}: no such family or group "
                    f"(families: {', '.join(FAMILIES)})")
    groups = make_groups(args.seed, only)
    if args.list:
        for g in groups:
            print(f"{g.key} (opset {g.opset}): "
                  + " ".join(c.name for c in g.cases))
        return 0

    try:
        import onnxruntime  # noqa: F401
    except ImportError as e:
        print(f"op-numerics: onnxruntime is needed for the reference: {e}")
        return 2
    env = prepare("op-numerics", args)
    if env is None:
        return 2
    # A fresh kernel cache for every run: each group's kernels go through g++.
    shutil.rmtree(env["MEMFIT_CACHE_DIR"], ignore_errors=True)
    print(f"op-numerics: seed {args.seed}, workdir {args.workdir}, "
          f"memfit-run {args.memfit_run}")

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        reports = list(pool.map(lambda g: (g, time.monotonic(),
                                           run_group(g, args, env),
                                           time.monotonic()), groups))
    passed = failed = skipped = 0
    for g, t0, rep, t1 in reports:
        print(f"== {g.key} (opset {g.opset}, {len(g.cases)} cases, "
              f"{t1 - t0:.1f} s)")
        for line in rep.lines:
            print(line)
        passed += rep.passed
        failed += rep.failed
        skipped += rep.skipped
    cases = {}
    for g in groups:
        cases[g.family] = cases.get(g.family, 0) + len(g.cases)
    print("op-numerics: cases per family: "
          + ", ".join(f"{f} {n}" for f, n in cases.items())
          + f"; {time.monotonic() - start:.1f} s")
    if skipped:
        print(f"op-numerics: {skipped} groups skipped")
    print(f"op-numerics: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
