#!/usr/bin/env python3
"""Finite-difference checks of memfit's gradient rules against onnxruntime.

Every case is a few ONNX nodes whose float operands are initializers (so
that memfit imports them as trainable parameters) and whose output Y enters
the scalar loss L = ReduceSum(Y * R) for a fixed random R (a Constant node),
so that every element of Y matters. Cases are grouped into one ONNX model per
group, whose loss is the sum of its cases' losses, so that each group costs
one `memfit-opt --memfit-autodiff` and one `memfit-run` (one g++ compilation):

  grad_check.py --memfit-opt build/bin/memfit-opt --memfit-run build/bin/memfit-run
                [--workdir DIR] [--only GROUP[/CASE],...] [--seed N] [--jobs N]

memfit's gradients (`grad.<parameter>.npy`) are compared with central finite
differences of the case's own loss, computed by onnxruntime with the
parameters fed as graph inputs:

  - in float64 (the model cast to double) where onnxruntime's CPU provider
    runs every op of the case in double: step 1e-5, and a gradient passes
    when max |memfit - fd| <= 1e-5 * max(max |fd|, 1e-2). memfit computes in
    float32, whose rounding dominates the error (3e-7 at most with seed 0).
  - otherwise in float32 (Erf and Gelu have no double kernel): step 3e-3,
    bound 1e-3 * max(max |fd|, 1e-2) (the error is 5e-5 at most).

A rule off by 1% (sigmoid's 1 - y as 1.01 - y) fails with an error of 5e-2.

Values are kept away from the kinks of the ops (relu at 0, ties of max
beyond two, the ends of where's condition), so that the central difference
is the derivative; two-way ties of reduce_max are tested on purpose: the
central difference there is 1/2, the share that memfit (like torch.amax)
gives each tied element.

It prints `PASS case/parameter err E (f64|f32)` or `FAIL ...` per parameter
and ends with `grad-check: N passed, M failed`; the exit status is 1 if
anything failed.
"""

import argparse
import os
import shlex
import subprocess
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from memfit_test.op_numerics import onnx_model, ort_session, unique_name

F32, F64, I64 = np.float32, np.float64, np.int64

TOLERANCE = {"f64": 1e-5, "f32": 1e-3}
STEP = {"f64": 1e-5, "f32": 3e-3}
FLOOR = 1e-2  # gradients smaller than this are compared absolutely


# ---------------------------------------------------------------------------
# Cases.
# ---------------------------------------------------------------------------

class Case:
    """A few nodes, their parameters (trainable) and constants, and the
    output Y that enters the loss. Names start with the case name."""

    def __init__(self, name, rng):
        self.name, self.rng = name, rng
        self.nodes, self.params, self.consts = [], {}, {}
        self.y = None
        self.r = None
        self.used = set()

    def _name(self, tag):
        return unique_name(self.used, f"{self.name}_{tag}")

    # Random values.
    def f(self, shape, lo=-2.0, hi=2.0):
        return np.asarray(self.rng.uniform(lo, hi, size=shape), F32)

    def away(self, shape, lo=0.3, hi=2.0):
        sign = np.where(self.rng.random(shape) < 0.5, -1.0, 1.0)
        return np.asarray(sign * self.rng.uniform(lo, hi, size=shape), F32)

    # Graph pieces.
    def param(self, value, tag="p"):
        """A trainable parameter: a float initializer of rank >= 1."""
        value = np.asarray(value, F32)
        assert value.ndim >= 1, "rank-0 initializers import as constants"
        name = self._name(tag)
        self.params[name] = value
        return name

    def const(self, value, tag="c", dtype=None):
        """An initializer that imports as a constant (integer or rank 0)."""
        value = np.asarray(value, dtype)
        assert value.dtype.kind in "iub" or value.ndim == 0
        name = self._name(tag)
        self.consts[name] = value
        return name

    def constant(self, value, tag="k"):
        """A float tensor from a Constant node (not a parameter)."""
        name = self._name(tag)
        self.nodes.append(helper.make_node(
            "Constant", [], [name], name=f"{self.name}/{tag}",
            value=numpy_helper.from_array(np.asarray(value, F32), name)))
        return name

    def op(self, op_type, inputs, nout=1, **attrs):
        outs = [self._name("y") for _ in range(nout)]
        node = f"{self.name}/{self._name(op_type)[len(self.name) + 1:]}"
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=node, **attrs))
        return outs[0] if nout == 1 else outs

    def output(self, y, shape):
        """Y, of `shape`, enters the loss as ReduceSum(Y * R)."""
        self.y = y
        self.r = self.f(shape, -1.0, 1.0)


def loss_nodes(c, name):
    """The nodes of the case's loss, writing `name`."""
    r = f"{c.name}_R"
    return [
        helper.make_node("Constant", [], [r], name=f"{c.name}/R",
                         value=numpy_helper.from_array(c.r, r)),
        helper.make_node("Mul", [c.y, r], [f"{c.name}_YR"],
                         name=f"{c.name}/loss_mul"),
        helper.make_node("ReduceSum", [f"{c.name}_YR"], [name], keepdims=0,
                         name=f"{c.name}/loss_sum"),
    ]


# ---------------------------------------------------------------------------
# Groups of cases.
# ---------------------------------------------------------------------------

def unary(g):
    specs = [("Neg", {}, (-2, 2)), ("Exp", {}, (-2, 2)), ("Log", {}, (0.3, 3)),
             ("Sqrt", {}, (0.3, 3)), ("Reciprocal", {}, None),
             ("Erf", {}, (-2, 2)), ("Tanh", {}, (-2, 2)),
             ("Sigmoid", {}, (-4, 4)), ("Relu", {}, None),
             ("Sin", {}, (-3, 3)), ("Cos", {}, (-3, 3)),
             ("Gelu", {"approximate": "none"}, (-3, 3)),
             ("Gelu", {"approximate": "tanh"}, (-3, 3))]
    for k, (op, attrs, rng) in enumerate(specs):
        name = op.lower() + ("_" + attrs["approximate"] if attrs else "")
        c = g.case(name)
        shape = [[7], [3, 4], [2, 3, 2]][k % 3]
        x = c.param(c.away(shape) if rng is None else c.f(shape, *rng), "x")
        c.output(c.op(op, [x], **attrs), shape)


def elementwise_more(g):
    c = g.case("cast_f64_roundtrip")
    x = c.param(c.f([3, 4]), "x")
    d = c.op("Cast", [x], to=TensorProto.DOUBLE)
    c.output(c.op("Cast", [c.op("Exp", [d])], to=TensorProto.FLOAT), [3, 4])
    c = g.case("cast_int_path")  # the integer path carries no gradient
    x = c.param(np.floor(c.f([6])) + 0.5, "x")  # halfway between integers
    t = c.op("Cast", [c.op("Cast", [x], to=TensorProto.INT64)],
             to=TensorProto.FLOAT)
    c.output(c.op("Add", [c.op("Mul", [x, x]), t]), [6])
    for upper, k in [(1, 0), (0, -1), (1, 2)]:
        c = g.case(f"trilu_{'upper' if upper else 'lower'}_{k}".replace("-", "m"))
        x = c.param(c.f([2, 4, 5]), "x")
        c.output(c.op("Trilu", [x, c.const(k, "k", I64)], upper=upper),
                 [2, 4, 5])
    c = g.case("dropout_ratio0")
    x = c.param(c.f([3, 5]), "x")
    c.output(c.op("Dropout", [x, c.const(0.0, "ratio", F32),
                              c.const(True, "training", np.bool_)]), [3, 5])
    c = g.case("where_broadcast")
    a = c.param(c.f([3, 4]), "a")
    b = c.param(c.f([4]), "b")
    s = c.param(c.f([3, 1]), "s")
    cond = c.op("Less", [a, b])
    c.output(c.op("Where", [cond, c.op("Mul", [a, s]), b]), [3, 4])
    c = g.case("where_not_equal")
    a = c.param(c.f([2, 3]), "a")
    b = c.param(c.f([3]), "b")
    cond = c.op("Not", [c.op("Equal", [c.const([[1, 2, 3], [3, 2, 1]], "i",
                                               I64),
                                       c.const([1, 1, 1], "j", I64)])])
    c.output(c.op("Where", [cond, c.op("Tanh", [a]), b]), [2, 3])
    c = g.case("max_min_broadcast")  # distinct values: no ties
    a = c.param(distinct(c, [3, 4]), "a")
    b = c.param(distinct(c, [4]), "b")
    d = c.param(distinct(c, [3, 1]), "d")
    c.output(c.op("Mul", [c.op("Max", [a, b, d]), c.op("Min", [a, b])]),
             [3, 4])
    c = g.case("sum_mean")
    a = c.param(c.f([3, 4]), "a")
    b = c.param(c.f([4]), "b")
    c.output(c.op("Mul", [c.op("Sum", [a, b, a]), c.op("Mean", [a, b])]),
             [3, 4])
    c = g.case("cumsum")
    x = c.param(c.f([2, 3, 4]), "x")
    y = c.op("CumSum", [x, c.const(1, "axis", I64)])
    c.output(c.op("CumSum", [c.op("Sin", [y]), c.const(-1, "axis2", I64)],
                  exclusive=1, reverse=1), [2, 3, 4])
    c = g.case("chain_shared")  # a value used twice sums its gradients
    x = c.param(c.f([4, 3]), "x")
    e = c.op("Sigmoid", [x])
    c.output(c.op("Mul", [c.op("Mul", [e, x]), c.op("Sin", [e])]), [4, 3])


def broadcast_patterns():
    return [("same", [3, 4], [3, 4]), ("one", [3, 4], [1]),
            ("one_lhs", [1], [3, 4]), ("row", [3, 4], [4]),
            ("column", [3, 4], [3, 1]), ("rank_extend", [3, 4], [2, 3, 4]),
            ("both_sided", [2, 1, 4], [3, 1]), ("ones", [1, 3, 1], [2, 1, 4])]


def binary(g):
    # Every pattern for Add; the rest share its unbroadcasting.
    subsets = {"Add": None, "Sub": ["same", "row", "both_sided"],
               "Mul": ["one", "column", "rank_extend", "ones"],
               "Div": ["one_lhs", "column", "both_sided"]}
    for op, subset in subsets.items():
        for pat, sa, sb in broadcast_patterns():
            if subset is not None and pat not in subset:
                continue
            c = g.case(f"{op.lower()}_{pat}")
            a = c.param(c.f(sa), "a")
            b = c.param(c.away(sb, 0.5, 2) if op == "Div" else c.f(sb), "b")
            out = list(np.broadcast_shapes(tuple(sa), tuple(sb)))
            c.output(c.op(op, [a, b]), out)


def pow_(g):
    for pat, sa, sb in broadcast_patterns():
        if pat not in ["same", "one_lhs", "row", "both_sided"]:
            continue
        c = g.case(f"pow_{pat}")
        a = c.param(c.f(sa, 0.4, 2.5), "a")
        b = c.param(c.f(sb, -1.5, 2.5), "b")
        out = list(np.broadcast_shapes(tuple(sa), tuple(sb)))
        c.output(c.op("Pow", [a, b]), out)
    for tag, e in [("square", 2.0), ("cube", 3.0), ("half", 0.5),
                   ("one", 1.0), ("zero", 0.0)]:
        c = g.case(f"pow_const_{tag}")
        base = c.f([3, 4], 0.4, 2.5) if e == 0.5 else c.f([3, 4])
        a = c.param(base, "a")
        c.output(c.op("Pow", [a, c.const(e, "e", F32)]), [3, 4])
    c = g.case("pow_int_exponent")
    a = c.param(c.away([3, 4], 0.4, 2), "a")
    c.output(c.op("Pow", [a, c.const(np.asarray([1, 2, 3, 0], I64), "e")]),
             [3, 4])


def matmul(g):
    shapes = [("2d", [3, 4], [4, 5]), ("linear", [2, 3, 4], [4, 5]),
              ("weight_batched", [3, 4], [2, 4, 5]),
              ("batched", [2, 3, 4], [2, 4, 5]),
              ("batch_broadcast", [2, 1, 3, 4], [3, 4, 2]),
              ("batch_ones", [1, 3, 4], [2, 4, 5]),
              ("vec_mat", [4], [4, 5]), ("mat_vec", [3, 4], [4]),
              ("vec_vec", [4], [4]), ("vec_batched", [4], [2, 4, 3]),
              ("batched_vec", [2, 3, 4], [4])]
    for tag, sa, sb in shapes:
        c = g.case(f"matmul_{tag}")
        a, b = c.param(c.f(sa), "a"), c.param(c.f(sb), "b")
        out = list(np.matmul(np.zeros(sa), np.zeros(sb)).shape)
        c.output(c.op("MatMul", [a, b]), out)


def gemm(g):
    m, k, n = 3, 4, 5
    for ta in (0, 1):
        for tb in (0, 1):
            c = g.case(f"gemm_t{ta}{tb}")
            a = c.param(c.f([k, m] if ta else [m, k]), "a")
            b = c.param(c.f([n, k] if tb else [k, n]), "b")
            bias = c.param(c.f([n]), "c")
            c.output(c.op("Gemm", [a, b, bias], transA=ta, transB=tb,
                          alpha=0.7, beta=1.3), [m, n])
    for tag, cs in [("column", [m, 1]), ("one", [1]), ("full", [m, n])]:
        c = g.case(f"gemm_bias_{tag}")
        a, b = c.param(c.f([m, k]), "a"), c.param(c.f([k, n]), "b")
        c.output(c.op("Gemm", [a, b, c.param(c.f(cs), "c")]), [m, n])
    c = g.case("gemm_no_bias")
    a, b = c.param(c.f([m, k]), "a"), c.param(c.f([n, k]), "b")
    c.output(c.op("Gemm", [a, b], transB=1, alpha=2.0), [m, n])


def normalization(g):
    for op in ["Softmax", "LogSoftmax"]:
        for axis, shape in [(-1, [3, 5]), (1, [2, 4, 3])]:
            c = g.case(f"{op.lower()}_axis{axis}".replace("-", "m"))
            x = c.param(c.f(shape, -3, 3), "x")
            c.output(c.op(op, [x], axis=axis), shape)
    for axis, shape in [(-1, [3, 6]), (1, [2, 3, 4]), (-2, [2, 3, 4])]:
        c = g.case(f"layer_norm_axis{axis}".replace("-", "m"))
        norm = shape[axis:]
        x = c.param(c.f(shape, -3, 3), "x")
        s = c.param(c.f(norm, 0.5, 1.5), "scale")
        b = c.param(c.f(norm), "bias")
        c.output(c.op("LayerNormalization", [x, s, b], axis=axis,
                      epsilon=1e-3), shape)
    c = g.case("layer_norm_no_bias")
    x = c.param(c.f([4, 5], -3, 3), "x")
    s = c.param(c.f([5], 0.5, 1.5), "scale")
    c.output(c.op("LayerNormalization", [x, s], axis=-1), [4, 5])


def rms_norm(g):
    for axis, shape in [(-1, [3, 6]), (1, [2, 3, 4])]:
        c = g.case(f"rms_norm_axis{axis}".replace("-", "m"))
        x = c.param(c.f(shape, -3, 3), "x")
        s = c.param(c.f(shape[axis:], 0.5, 1.5), "scale")
        c.output(c.op("RMSNormalization", [x, s], axis=axis, epsilon=1e-3),
                 shape)


def reduction(g):
    shape = [3, 4, 2]
    configs = {"ReduceSum": [([1], 0), ([-1, 0], 1), (None, 0)],
               "ReduceMean": [([1], 1), ([0, 2], 0), (None, 1)],
               "ReduceMax": [([1], 1), ([1], 0), ([-1, 0], 1), (None, 0)]}
    for op, axes_keep in configs.items():
        for axes, keep in axes_keep:
            tag = "all" if axes is None else "_".join(
                str(a).replace("-", "m") for a in axes)
            c = g.case(f"{op[6:].lower()}_{tag}_k{keep}")
            x = c.param(c.f(shape) if op != "ReduceMax"
                        else distinct(c, shape), "x")
            inputs = [x] if axes is None else [x, c.const(axes, "axes", I64)]
            y = c.op(op, inputs, keepdims=keep)
            out = list(np.sum(np.zeros(shape), axis=None if axes is None
                              else tuple(axes), keepdims=bool(keep)).shape)
            c.output(y, out)
    c = g.case("max_ties")  # two-way ties: each gets half
    x = c.param(np.asarray([[1.5, 0.25, 1.5, -1.0], [0.5, 2.0, 2.0, 0.75],
                            [3.0, -1.0, 0.5, 1.0]], F32), "x")
    c.output(c.op("ReduceMax", [x, c.const([1], "axes", I64)], keepdims=0),
             [3])


def distinct(c, shape):
    """Values whose differences are well above the finite-difference step."""
    n = int(np.prod(shape))
    return np.asarray(c.rng.permutation(n) * 0.25 - n * 0.1, F32).reshape(shape)


def movement(g):
    c = g.case("transpose")
    x = c.param(c.f([2, 3, 4]), "x")
    c.output(c.op("Transpose", [x], perm=[2, 0, 1]), [4, 2, 3])
    c = g.case("reshape_flatten")
    x = c.param(c.f([2, 3, 4]), "x")
    r = c.op("Reshape", [x, c.const([4, 6], "shape", I64)])
    c.output(c.op("Flatten", [c.op("Sin", [r])], axis=0), [1, 24])
    c = g.case("squeeze_unsqueeze")
    x = c.param(c.f([3, 1, 4]), "x")
    s = c.op("Squeeze", [x, c.const([1], "axes", I64)])
    c.output(c.op("Unsqueeze", [c.op("Exp", [s]),
                                c.const([0, -1], "axes", I64)]), [1, 3, 4, 1])
    c = g.case("expand")
    x = c.param(c.f([3, 1]), "x")
    c.output(c.op("Expand", [x, c.const([2, 3, 4], "shape", I64)]), [2, 3, 4])
    c = g.case("concat_all")
    a, b, d = (c.param(c.f([2, n, 3]), t) for n, t in [(1, "a"), (3, "b"),
                                                       (2, "d")])
    c.output(c.op("Concat", [a, b, d], axis=-2), [2, 6, 3])
    c = g.case("concat_one")
    a = c.param(c.f([3, 2]), "a")
    c.output(c.op("Concat", [c.constant(c.f([3, 3])), a,
                             c.constant(c.f([3, 1]))], axis=1), [3, 6])
    c = g.case("split_unused")
    x = c.param(c.f([2, 7]), "x")
    p, q, r = c.op("Split", [x, c.const([2, 4, 1], "split", I64)], nout=3,
                   axis=1)
    c.output(c.op("Concat", [r, p], axis=1), [2, 3])
    c = g.case("split_all")
    x = c.param(c.f([6, 2]), "x")
    p, q = c.op("Split", [x, c.const([3, 3], "split", I64)], nout=2, axis=0)
    c.output(c.op("Mul", [p, q]), [3, 2])
    slices = [("step1_two_axes", [4, 6], [1, 2], [3, -1], [0, 1], [1, 1], [2, 3]),
              ("step2", [3, 7], [1], [7], [1], [2], [3, 3]),
              ("reverse", [3, 5], [-1], [-100], [1], [-1], [3, 5]),
              ("step_m2", [6, 4], [-2], [0], [0], [-2], [2, 4]),
              ("mixed", [5, 6, 3], [0, 5, 1], [5, 0, 3], [0, 1, 2],
               [3, -2, 1], [2, 3, 2])]
    for tag, shape, starts, ends, axes, steps, out in slices:
        c = g.case(f"slice_{tag}")
        x = c.param(c.f(shape), "x")
        c.output(c.op("Slice", [x, c.const(starts, "starts", I64),
                                c.const(ends, "ends", I64),
                                c.const(axes, "axes", I64),
                                c.const(steps, "steps", I64)]), out)
    c = g.case("gather_rows")  # repeated and negative indices
    x = c.param(c.f([5, 3]), "x")
    ids = c.const(np.asarray([[0, 4, -1], [2, 2, -5]], I64), "ids")
    c.output(c.op("Gather", [x, ids], axis=0), [2, 3, 3])
    c = g.case("gather_axis1")
    x = c.param(c.f([2, 4, 3]), "x")
    ids = c.const(np.asarray([3, -4, 3, 1], I64), "ids")
    c.output(c.op("Gather", [x, ids], axis=1), [2, 4, 3])
    c = g.case("gather_scalar_index")
    x = c.param(c.f([3, 4]), "x")
    c.output(c.op("Gather", [x, c.const(-2, "ids", I64)], axis=1), [3])


def losses(g):
    n, k = 6, 5
    for red in ["mean", "sum", "none"]:
        c = g.case(f"sce_{red}")
        x = c.param(c.f([n, k], -3, 3), "scores")
        labels = c.const(np.asarray([0, 4, -100, 2, 2, 1], I64), "labels")
        c.output(c.op("SoftmaxCrossEntropyLoss", [x, labels], reduction=red,
                      ignore_index=-100), [] if red != "none" else [n])
    c = g.case("sce_no_ignore")
    x = c.param(c.f([n, k], -3, 3), "scores")
    labels = c.const(np.asarray([0, 4, 3, 2, 2, 1], I64), "labels")
    c.output(c.op("SoftmaxCrossEntropyLoss", [x, labels]), [])
    c = g.case("sce_rank3_mean")
    x = c.param(c.f([2, k, 3], -3, 3), "scores")
    labels = c.const(np.asarray([[0, 4, 1], [1, 1, 3]], I64), "labels")
    c.output(c.op("SoftmaxCrossEntropyLoss", [x, labels], ignore_index=4), [])
    c = g.case("sce_weights")
    x = c.param(c.f([n, k], -3, 3), "scores")
    labels = c.const(np.asarray([0, 4, 3, 2, 2, 1], I64), "labels")
    w = c.constant(c.f([k], 0.5, 2))
    c.output(c.op("SoftmaxCrossEntropyLoss", [x, labels, w], ignore_index=3),
             [])
    for red in ["mean", "sum", "none"]:
        c = g.case(f"nll_{red}")
        x = c.param(c.f([n, k], -3, 0), "logp")
        labels = c.const(np.asarray([1, 4, -1, 2, 0, 0], I64), "labels")
        c.output(c.op("NegativeLogLikelihoodLoss", [x, labels], reduction=red,
                      ignore_index=-1), [] if red != "none" else [n])
    c = g.case("nll_rank3_weights")
    x = c.param(c.f([2, k, 3], -3, 0), "logp")
    labels = c.const(np.asarray([[0, 4, 1], [1, 2, 3]], I64), "labels")
    w = c.constant(c.f([k], 0.5, 2))
    c.output(c.op("NegativeLogLikelihoodLoss", [x, labels, w]), [])
    c = g.case("log_softmax_nll")  # the exporters' cross-entropy
    x = c.param(c.f([n, k], -3, 3), "scores")
    labels = c.const(np.asarray([0, 4, 3, 2, 2, 1], I64), "labels")
    c.output(c.op("NegativeLogLikelihoodLoss",
                  [c.op("LogSoftmax", [x], axis=1), labels]), [])


def composed(g):
    """The ops memfit writes as other ops (lib/Import/OnnxComposedOps.cpp)
    and Einsum's contractions, whose gradients are those ops' rules; Mod
    of floats (memfit.fmod)."""
    c = g.case("abs_sign")
    x = c.param(c.away([3, 4]), "x")
    c.output(c.op("Mul", [c.op("Abs", [x]), c.op("Sign", [x])]), [3, 4])
    c = g.case("clip")  # values away from the bounds
    x = c.param(c.away([3, 4], 0.2, 0.4) + np.asarray([0, 1, 0, -1], F32), "x")
    c.output(c.op("Clip", [x, c.const(np.float32(-0.5), "lo"),
                           c.const(np.float32(0.5), "hi")]), [3, 4])
    c = g.case("softplus_mish")
    x = c.param(c.f([3, 4], -4, 4), "x")
    c.output(c.op("Mul", [c.op("Softplus", [x]), c.op("Mish", [x])]), [3, 4])
    c = g.case("hard_sigmoid_swish")  # alpha x + beta away from 0 and 1
    x = c.param(c.away([3, 4], 0.2, 2.0) + np.asarray([0, 0, 4, -4], F32),
                "x")
    c.output(c.op("Add", [c.op("HardSigmoid", [x], alpha=0.3, beta=0.4),
                          c.op("HardSwish", [x])]), [3, 4])
    c = g.case("mod_float")  # a / b away from integers: fmod is smooth
    b = np.asarray(c.rng.uniform(1.0, 1.5, size=[3, 4]), F32)
    q = c.rng.integers(-2, 3, size=[3, 4]) + c.rng.uniform(0.2, 0.8,
                                                          size=[3, 4])
    a = c.param(np.asarray(b * q, F32), "a")
    c.output(c.op("Mod", [a, c.param(b, "b")], fmod=1), [3, 4])
    c = g.case("tile")
    x = c.param(c.f([2, 3]), "x")
    c.output(c.op("Tile", [x, c.const([2, 3], "repeats", I64)]), [4, 9])
    c = g.case("pad")
    x = c.param(c.f([3, 4]), "x")
    pads = c.const([1, 2, 2, -1], "pads", I64)
    c.output(c.op("Add", [c.op("Pad", [x, pads, c.const(np.float32(0.5), "v")]),
                          c.op("Add", [c.op("Pad", [x, pads], mode="reflect"),
                                       c.op("Pad", [x, pads], mode="edge")])]),
             [6, 5])
    c = g.case("einsum_contract")
    a = c.param(c.f([2, 3, 4]), "a")
    b = c.param(c.f([2, 4, 5]), "b")
    d = c.param(c.f([5]), "d")
    y = c.op("Einsum", [a, b], equation="bij,bjk->bik")
    c.output(c.op("Einsum", [y, d, a], equation="bik,k,bij->bj"), [2, 4])


def scatter(g):
    """ScatterElements and ScatterND (none: the updated entries' gradient
    goes to the updates; add: to both), GatherElements and GatherND (their
    gradients add into the data at the indices, repeated ones twice), and
    TopK's values (a gather at the positions it picks)."""
    c = g.case("scatter_elements")
    x = c.param(c.f([3, 5]), "x")
    u = c.param(c.f([3, 2]), "u")
    idx = c.const(np.asarray([[4, 0], [1, -2], [2, 0]], I64), "i")
    c.output(c.op("Add", [c.op("ScatterElements", [x, idx, u], axis=1),
                          c.op("ScatterElements", [x, idx, u], axis=1,
                               reduction="add")]), [3, 5])
    c = g.case("scatter_nd")
    x = c.param(c.f([4, 3]), "x")
    u = c.param(c.f([2, 3]), "u")
    idx = c.const(np.asarray([[3], [1]], I64), "i")
    c.output(c.op("Add", [c.op("ScatterND", [x, idx, u]),
                          c.op("ScatterND", [x, idx, u], reduction="add")]),
             [4, 3])
    c = g.case("gather_elements")
    x = c.param(c.f([3, 4]), "x")
    idx = c.const(np.asarray([[0, 3, 3], [1, 1, -1], [2, 0, 1]], I64), "i")
    c.output(c.op("GatherElements", [x, idx], axis=1), [3, 3])
    c = g.case("gather_nd")
    x = c.param(c.f([3, 4]), "x")
    idx = c.const(np.asarray([[2, 1], [0, 3], [2, 1]], I64), "i")
    c.output(c.op("GatherND", [x, idx]), [3])
    c = g.case("topk")  # distinct values, so the positions are stable
    x = c.param(c.away([3, 6], 0.2, 2.0), "x")
    values, _ = c.op("TopK", [x, c.const(np.asarray([3], I64), "k")], nout=2,
                     axis=1)
    c.output(values, [3, 3])


def attention(g):
    """Spelled-out attention that memfit-raise-attention makes one
    memfit.attention (the group runs that pass first and fails unless it
    did): its gradient ops against differences of the spelled-out graph."""
    b, h, s, d = 2, 2, 5, 4
    inf = np.float32(-np.inf)

    def scores(c, tag):
        q = c.param(c.f([b, h, s, d]), f"q{tag}")
        k = c.param(c.f([b, s, h, d]), f"k{tag}")  # heads second to last
        kt = c.op("Transpose", [k], perm=[0, 2, 3, 1])
        return c.op("Mul", [c.op("MatMul", [q, kt]),
                            c.const(np.float32(0.5), "scale")])

    def attend(c, x, tag):
        v = c.param(c.f([b, h, s, d]), f"v{tag}")
        c.output(c.op("MatMul", [c.op("Softmax", [x], axis=-1), v]),
                 [b, h, s, d])

    c = g.case("attention_causal")  # a constant lower triangle: `causal`
    hide = ~np.tril(np.ones([1, 1, s, s], bool))
    x = c.op("Where", [c.const(hide, "hide"), c.const(inf, "ninf"),
                       scores(c, "")])
    attend(c, x, "")
    c = g.case("attention_padding")  # a run-time-shaped boolean mask
    hide = np.zeros([b, 1, 1, s], bool)
    hide[1, 0, 0, 3:] = True
    x = c.op("Where", [c.const(hide, "hide"), c.const(inf, "ninf"),
                       scores(c, "")])
    attend(c, x, "")
    c = g.case("attention_bias")  # an additive float mask
    bias = c.constant(c.f([1, h, s, s], -1, 1), "bias")
    attend(c, c.op("Add", [scores(c, ""), bias]), "")


def attention_opset23(g):
    """Opset 23's Attention, imported as memfit.attention: grouped-query
    heads (4 over 2), causal, and a boolean padding mask."""
    b, hq, hkv, s, d = 1, 4, 2, 5, 4
    c = g.case("attention23_gqa_causal")
    q = c.param(c.f([b, hq, s, d]), "q")
    k = c.param(c.f([b, hkv, s, d]), "k")
    v = c.param(c.f([b, hkv, s, d]), "v")
    c.output(c.op("Attention", [q, k, v], is_causal=1), [b, hq, s, d])
    c = g.case("attention23_gqa_padding")
    q = c.param(c.f([b, hq, s, d]), "q")
    k = c.param(c.f([b, hkv, s, d]), "k")
    v = c.param(c.f([b, hkv, s, d]), "v")
    keep = np.ones([b, 1, s, s], bool)
    keep[..., 3:] = False
    c.output(c.op("Attention", [q, k, v, c.const(keep, "keep")], scale=0.4),
             [b, hq, s, d])


def rotary(g):
    """Hugging Face's apply_rotary_pos_emb spelled out, which memfit-raise
    makes memfit.rotary: x * cos + concat(-x[..., h:], x[..., :h]) * sin,
    cos and sin trained too (their rule's sums over the broadcast)."""
    for name, xs, ts in [("rotary", [2, 3, 8], [2, 3, 8]),
                         ("rotary_broadcast", [2, 2, 3, 6], [3, 6])]:
        c = g.case(name)
        x = c.param(c.f(xs), "x")
        cos = c.param(c.f(ts), "cos")
        sin = c.param(c.f(ts), "sin")
        h = xs[-1] // 2
        axes = c.const([-1], "axes", I64)
        low = c.op("Slice", [x, c.const([0], "lo_s", I64),
                             c.const([h], "lo_e", I64), axes])
        high = c.op("Slice", [x, c.const([h], "hi_s", I64),
                              c.const([2 ** 62], "hi_e", I64), axes])
        rotated = c.op("Concat", [c.op("Neg", [high]), low], axis=-1)
        c.output(c.op("Add", [c.op("Mul", [x, cos]),
                              c.op("Mul", [rotated, sin])]), xs)


GROUPS = [("unary", 20, unary), ("elementwise", 17, elementwise_more),
          ("binary", 17, binary), ("pow", 17, pow_), ("matmul", 17, matmul),
          ("gemm", 17, gemm), ("normalization", 17, normalization),
          ("rms_norm", 23, rms_norm), ("reduction", 18, reduction),
          ("movement", 18, movement), ("losses", 17, losses),
          ("composed", 18, composed), ("scatter", 18, scatter),
          ("attention", 17, attention),
          ("attention_opset23", 23, attention_opset23),
          ("rotary", 18, rotary)]

# The passes a group runs before memfit-autodiff, the op they must make and
# how many of it a case's forward and gradients hold (rotary's: its own, the
# input's gradient, the inverse rotation, and sin's, x rotated by g).
RAISED = {"attention": ("--memfit-raise-attention", "memfit.attention ", 1),
          "rotary": ("--memfit-raise", "memfit.rotary ", 3)}


class Group:
    def __init__(self, name, opset, rng):
        self.name, self.opset, self.rng = name, opset, rng
        self.cases = []

    def case(self, name):
        assert all(c.name != name for c in self.cases), name
        c = Case(name, self.rng)
        self.cases.append(c)
        return c


# ---------------------------------------------------------------------------
# Models.
# ---------------------------------------------------------------------------

def make_model(nodes, inputs, inits, output, opset, name):
    graph = helper.make_graph(nodes, name, inputs, [output], initializer=inits)
    model = onnx_model(graph, opset)
    onnx.checker.check_model(model)
    return model


def group_model(g):
    """All cases, parameters as initializers, loss = sum of the cases'."""
    nodes, inits, losses = [], [], []
    for c in g.cases:
        nodes += c.nodes + loss_nodes(c, f"{c.name}_L")
        losses.append(f"{c.name}_L")
        for name, v in list(c.params.items()) + list(c.consts.items()):
            inits.append(numpy_helper.from_array(v, name))
    total = losses[0]
    for k, l in enumerate(losses[1:]):
        name = "loss" if k == len(losses) - 2 else f"loss_{k}"
        nodes.append(helper.make_node("Add", [total, l], [name], name=name))
        total = name
    if total != "loss":
        nodes.append(helper.make_node("Identity", [total], ["loss"],
                                      name="loss"))
    out = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])
    return make_model(nodes, [], inits, out, g.opset, g.name)


def to_double(array):
    return array.astype(F64) if array.dtype == F32 else array


def case_model(c, opset, dtype):
    """The case alone, its parameters as graph inputs of `dtype`."""
    double = dtype == F64
    elem = TensorProto.DOUBLE if double else TensorProto.FLOAT
    nodes = []
    for node in c.nodes + loss_nodes(c, "L"):
        node = onnx.NodeProto.FromString(node.SerializeToString())
        for a in node.attribute:
            if not double:
                continue
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.DOUBLE
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(
                    to_double(numpy_helper.to_array(a.t)), a.t.name))
        nodes.append(node)
    inputs = [helper.make_tensor_value_info(n, elem, v.shape)
              for n, v in c.params.items()]
    inits = [numpy_helper.from_array(to_double(v) if double else v, n)
             for n, v in c.consts.items()]
    out = helper.make_tensor_value_info("L", elem, [])
    return make_model(nodes, inputs, inits, out, opset, c.name)


def finite_differences(c, opset):
    """{parameter: gradient} by central differences, and "f64" or "f32"."""
    try:
        sess, kind, dtype = ort_session(case_model(c, opset, F64)), "f64", F64
        sess.run(["L"], {n: v.astype(F64) for n, v in c.params.items()})
    except Exception:
        sess, kind, dtype = ort_session(case_model(c, opset, F32)), "f32", F32
    h = STEP[kind]
    feeds = {n: v.astype(dtype) for n, v in c.params.items()}
    grads = {}
    for name, value in feeds.items():
        grad = np.zeros(value.shape, F64)
        for i in np.ndindex(value.shape):
            saved = value[i]
            value[i] = saved + h
            up = float(sess.run(["L"], feeds)[0])
            value[i] = saved - h
            down = float(sess.run(["L"], feeds)[0])
            value[i] = saved
            grad[i] = (up - down) / (2 * h)
        grads[name] = grad
    return grads, kind


# ---------------------------------------------------------------------------
# Running.
# ---------------------------------------------------------------------------

def run(cmd):
    line = " ".join(shlex.quote(a) for a in cmd)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        return False, f"cannot run: {e}", line
    return proc.returncode == 0, (proc.stderr or proc.stdout).strip(), line


def check_group(g, args):
    lines, passed, failed = [], 0, 0
    gdir = os.path.join(args.workdir, g.name)
    os.makedirs(gdir, exist_ok=True)
    model_path = os.path.join(gdir, "model.onnx")
    onnx.save(group_model(g), model_path)
    grads_path = os.path.join(gdir, "grads.mlir")
    out_dir = os.path.join(gdir, "out")
    # Locations kept, so that kernel comments name the ONNX nodes.
    raise_pass, raised, per_case = RAISED.get(g.name, (None, None, 0))
    steps = [[args.memfit_opt, model_path] + ([raise_pass] if raise_pass else [])
             + ["--memfit-autodiff", "--mlir-print-debuginfo", "-o", grads_path],
             [args.memfit_run, grads_path, "--device=host", "--quiet",
              f"--output-dir={out_dir}"]]
    for cmd in steps:
        ok, msg, line = run(cmd)
        if not ok:
            n = sum(len(c.params) for c in g.cases)
            lines.append(f"FAIL {g.name}: {os.path.basename(cmd[0])} failed "
                         f"({n} parameters unchecked)")
            lines += ["  " + l for l in msg.splitlines()[:20]]
            lines.append(f"  reproduce: {line}")
            return lines, 0, n
    if raised:
        with open(grads_path) as f:
            made = f.read().count(raised)
        if made != per_case * len(g.cases):
            n = sum(len(c.params) for c in g.cases)
            lines.append(f"FAIL {g.name}: {made} {raised.strip()} ops for "
                         f"{len(g.cases)} cases ({n} parameters unchecked)")
            return lines, 0, n
    for c in g.cases:
        refs, kind = finite_differences(c, g.opset)
        for name, ref in refs.items():
            path = os.path.join(out_dir, f"grad.{name}.npy")
            if not os.path.exists(path):
                lines.append(f"FAIL {c.name}/{name}: memfit wrote no "
                             f"grad.{name}.npy")
                failed += 1
                continue
            got = np.load(path).astype(F64)
            if got.shape != ref.shape:
                lines.append(f"FAIL {c.name}/{name}: shape {list(got.shape)}, "
                             f"expected {list(ref.shape)}")
                failed += 1
                continue
            scale = max(float(np.max(np.abs(ref), initial=0.0)), FLOOR)
            err = float(np.max(np.abs(got - ref), initial=0.0)) / scale
            if np.isfinite(err) and err <= TOLERANCE[kind]:
                lines.append(f"PASS {c.name}/{name} err {err:.2e} ({kind})")
                passed += 1
            else:
                i = np.unravel_index(np.argmax(np.abs(got - ref)), ref.shape)
                lines.append(f"FAIL {c.name}/{name}: err {err:.2e} > "
                             f"{TOLERANCE[kind]:.0e} ({kind}); at {list(i)} "
                             f"memfit {got[i]!r}, fd {ref[i]!r}")
                lines.append(f"  reproduce: {args.memfit_opt} {model_path} "
                             f"--memfit-autodiff")
                failed += 1
    return lines, passed, failed


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memfit-opt", default="memfit-opt")
    p.add_argument("--memfit-run", default="memfit-run")
    p.add_argument("--workdir", default="grad-check")
    p.add_argument("--only", default="",
                   help="comma-separated groups or group/case names")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = p.parse_args()
    only = [o for o in args.only.split(",") if o]

    groups = []
    for name, opset, build in GROUPS:
        rng = np.random.default_rng([args.seed, zlib.crc32(name.encode())])
        g = Group(name, opset, rng)
        build(g)
        if only and name not in only:
            g.cases = [c for c in g.cases if f"{name}/{c.name}" in only]
        if g.cases:
            groups.append(g)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda g: check_group(g, args), groups))
    passed = failed = 0
    for lines, p_, f_ in results:
        print("\n".join(lines))
        passed += p_
        failed += f_
    print(f"grad-check: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
