#!/usr/bin/env python3
"""ArgMin/ArgMax at the integer extremes, TopK and ScatterND against
onnxruntime, through memfit-run on the host backend.

  check_index_ops.py --memfit-run build/bin/memfit-run [--workdir DIR]
                     [--only GROUP,...]

Groups (one ONNX model each, so one compile and one run):
  argminmax  ArgMin and ArgMax of int64 and int32 inputs holding INT_MIN and
             INT_MAX (ArgMin wrapped at INT64_MIN when it negated the input),
             first and last index, over either axis; also against NumPy.
  topk       TopK of f32 with many ties (smaller index first), f64, int64
             with the extremes, int32, f16; largest and smallest; along the
             last axis, a middle axis and the first; k = 1 and k = n; an
             axis of 50,257 entries (a vocabulary) with k = 50.
  scatternd  ScatterND with every reduction (none without duplicate
             tuples, add/mul/max/min with them), tuples addressing slices
             and single entries, negative indices, 10^4 updates.

Every output must equal onnxruntime's exactly (integers, and floats: TopK
and ScatterND compute no new values, and ScatterND's reductions apply the
updates in the same order). Prints `PASS group/output` or `FAIL
group/output: why` and `index-ops: N passed, M failed`; exit status 1 if
any failed.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

from memfit_test.runner import prepare, run_tool

NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT,
              np.dtype(np.float64): TensorProto.DOUBLE,
              np.dtype(np.float16): TensorProto.FLOAT16,
              np.dtype(np.int64): TensorProto.INT64,
              np.dtype(np.int32): TensorProto.INT32}


class Group:
    """Nodes, graph inputs (fed from .npy), initializers and outputs of one
    model."""

    def __init__(self, name):
        self.name = name
        self.nodes, self.outputs = [], []
        self.inputs, self.inits = {}, {}

    def input(self, name, value):
        self.inputs[name] = np.asarray(value)
        return name

    def init(self, name, value):
        self.inits[name] = np.asarray(value)
        return name

    def node(self, op, inputs, outputs, **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs,
                                           name=outputs[0], **attrs))
        self.outputs += outputs

    def model(self):
        """The ONNX model, with output types from shape inference."""
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(n, NP_TO_ONNX[v.dtype], v.shape)
             for n, v in self.inputs.items()], [],
            initializer=[numpy_helper.from_array(v, n)
                         for n, v in self.inits.items()])
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
        inferred = shape_inference.infer_shapes(model, strict_mode=True)
        types = {vi.name: vi for vi in inferred.graph.value_info}
        model.graph.output.extend(types[n] for n in self.outputs)
        onnx.checker.check_model(model)
        return model


INT64_MIN, INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max
INT32_MIN, INT32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def argminmax(rng):
    g = Group("argminmax")
    x = rng.integers(-5, 5, size=(4, 7)).astype(np.int64)
    x[0, 3] = x[0, 5] = INT64_MIN
    x[1, 2] = INT64_MAX
    x[2, :] = INT64_MIN
    x[3, 1] = x[3, 6] = INT64_MAX
    x[1, 4] = INT64_MIN
    y = x.astype(np.int32)
    y[x == INT64_MIN], y[x == INT64_MAX] = INT32_MIN, INT32_MAX
    g.input("x", x)
    g.input("y", y)
    refs = {}
    for op, fn in (("ArgMin", np.argmin), ("ArgMax", np.argmax)):
        for axis in (0, 1):
            for last in (0, 1):
                for name, value in (("x", x), ("y", y)):
                    out = f"{op.lower()}_{name}_a{axis}_l{last}"
                    g.node(op, [name], [out], axis=axis, keepdims=0,
                           select_last_index=last)
                    if not last:
                        refs[out] = fn(value, axis=axis)
    return g, refs


def topk(rng):
    g = Group("topk")
    ties = np.round(rng.normal(size=(3, 40)) * 2).astype(np.float32)
    ties[0, 5] = -0.0
    ties[1, :] = 1.0
    g.input("ties", ties)
    g.init("k1", np.array([1], np.int64))
    g.init("k7", np.array([7], np.int64))
    g.init("k40", np.array([40], np.int64))
    for largest in (1, 0):
        for k in ("k1", "k7", "k40"):
            g.node("TopK", ["ties", k], [f"t_{k}_l{largest}_v",
                                         f"t_{k}_l{largest}_i"],
                   largest=largest)
    mid = np.round(rng.normal(size=(2, 9, 3)) * 3).astype(np.float64)
    g.input("mid", mid)
    g.init("k4", np.array([4], np.int64))
    g.node("TopK", ["mid", "k4"], ["mid_v", "mid_i"], axis=1)
    g.init("k2", np.array([2], np.int64))
    g.node("TopK", ["mid", "k2"], ["first_v", "first_i"], axis=0, largest=0)
    ints = rng.integers(-3, 3, size=(2, 12)).astype(np.int64)
    ints[0, 2], ints[0, 7], ints[1, 0] = INT64_MIN, INT64_MAX, INT64_MIN
    ints[1, 11] = INT64_MAX
    g.input("ints", ints)
    g.node("TopK", ["ints", "k7"], ["i64_max_v", "i64_max_i"])
    g.node("TopK", ["ints", "k7"], ["i64_min_v", "i64_min_i"], largest=0)
    i32 = rng.integers(-4, 4, size=(3, 10)).astype(np.int32)
    i32[0, 0], i32[2, 9] = INT32_MIN, INT32_MAX
    g.input("i32", i32)
    g.node("TopK", ["i32", "k4"], ["i32_v", "i32_i"], largest=0)
    half = np.round(rng.normal(size=(2, 16)) * 4).astype(np.float16)
    g.input("half", half)
    g.node("TopK", ["half", "k4"], ["f16_v", "f16_i"])
    vocab = rng.normal(size=(2, 50257)).astype(np.float32)
    vocab[1, 1000:1100] = 3.0  # ties at the top
    g.input("vocab", vocab)
    g.init("k50", np.array([50], np.int64))
    g.node("TopK", ["vocab", "k50"], ["vocab_v", "vocab_i"])
    return g, {}


def scatternd(rng):
    g = Group("scatternd")
    data = rng.normal(size=(6, 5, 4)).astype(np.float32)
    g.input("data", data)
    # Slices (k = 1) and single entries (k = 3), negative indices.
    perm = rng.permutation(6)[:4].reshape(4, 1) - 6 * (rng.random((4, 1)) < .5)
    g.input("slices", perm.astype(np.int64))
    g.input("supd", rng.normal(size=(4, 5, 4)).astype(np.float32))
    g.node("ScatterND", ["data", "slices", "supd"], ["nd_none_slices"])
    dup = rng.integers(-6, 6, size=(7, 1)).astype(np.int64)
    dup[3] = dup[0]
    g.input("dup", dup)
    g.input("dupd", rng.normal(size=(7, 5, 4)).astype(np.float32))
    for red in ("add", "mul", "max", "min"):
        g.node("ScatterND", ["data", "dup", "dupd"], [f"nd_{red}_dup"],
               reduction=red)
    coords = np.stack([rng.integers(0, 6, 10**4), rng.integers(-5, 5, 10**4),
                       rng.integers(0, 4, 10**4)], axis=1).astype(np.int64)
    g.input("coords", coords)
    g.input("cupd", rng.normal(size=(10**4,)).astype(np.float32))
    g.node("ScatterND", ["data", "coords", "cupd"], ["nd_add_entries"],
           reduction="add")
    ents = np.array([[0, 0, 0], [5, 4, 3], [-1, -1, -1], [2, 3, 1]], np.int64)
    g.input("ents", ents)
    g.input("eupd", rng.normal(size=(4,)).astype(np.float32))
    g.node("ScatterND", ["data", "ents", "eupd"], ["nd_none_entries"])
    return g, {}


GROUPS = {"argminmax": argminmax, "topk": topk, "scatternd": scatternd}


def run_group(name, args, env):
    """[(output, why or None)]."""
    g, numpy_refs = GROUPS[name](np.random.default_rng(37))
    directory = os.path.join(args.workdir, name)
    os.makedirs(directory, exist_ok=True)
    model = g.model()
    path = os.path.join(directory, "model.onnx")
    onnx.save(model, path)
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options,
                                   providers=["CPUExecutionProvider"])
    refs = dict(zip(g.outputs, session.run(g.outputs, g.inputs)))
    cmd = [args.memfit_run, path, "--device=host", "--quiet",
           f"--output-dir={directory}/out"]
    for n, v in g.inputs.items():
        np.save(os.path.join(directory, n + ".npy"), v)
        cmd.append(f"--input={n}={directory}/{n}.npy")
    why = run_tool(cmd, env)
    if why:
        return [(o, why) for o in g.outputs]
    results = []
    for o in g.outputs:
        got = np.load(os.path.join(directory, "out", o + ".npy"))
        why = compare(got, refs[o], "onnxruntime")
        if why is None and o in numpy_refs:
            why = compare(got, numpy_refs[o], "NumPy")
        results.append((o, why))
    return results


def compare(got, ref, oracle):
    if got.dtype != ref.dtype or got.shape != ref.shape:
        return (f"got {got.dtype}{list(got.shape)}, {oracle} "
                f"{ref.dtype}{list(ref.shape)}")
    same = (got == ref) | ((got != got) & (ref != ref))
    if same.all():
        return None
    i = np.argwhere(~same)[0]
    return (f"{(~same).sum()} elements differ from {oracle}'s, first at "
            f"{tuple(int(j) for j in i)}: {got[tuple(i)]} vs {ref[tuple(i)]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memfit-run", required=True)
    parser.add_argument("--workdir")
    parser.add_argument("--only", default=",".join(GROUPS))
    args = parser.parse_args()
    env = prepare("index-ops", args)
    if env is None:
        return 1
    passed = failed = 0
    for name in args.only.split(","):
        for output, why in run_group(name, args, env):
            print(f"PASS {name}/{output}" if why is None
                  else f"FAIL {name}/{output}: {why}")
            passed += why is None
            failed += why is not None
    print(f"index-ops: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
