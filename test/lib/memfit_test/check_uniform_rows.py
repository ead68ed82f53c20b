#!/usr/bin/env python3
"""Attention whose added mask hides a whole row with a finite fill.

  check_uniform_rows.py MEMFIT_RUN WORKDIR

The graph: queries, keys and values of 2 heads (initializers: parameters),
scores = q . k^T * 0.5 + Where(keep, 0, finfo.min) with `keep` a run-time
boolean input [1, 1, 4, 4] whose row 1 hides every key, softmax, the
values, and the loss ReduceSum(Y * R). In the exported graph that row's
scores all round to the fill: it averages every value, and autograd passes
the softmax's gradient on to the scores. memfit-raise-attention makes it
memfit.attention with uniform_hidden_rows (checked in the compiled IR).
The loss must equal onnxruntime's (1e-6 relative), and the gradients of
q, k and v those of the spelled-out graph (--no-fused-attention: memfit's
autodiff of the same ops) within 1e-6 of each tensor's largest magnitude.
Prints PASS or FAIL lines.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from memfit_test.op_numerics import onnx_model, ort_session
from memfit_test.check_training import report, run
from memfit_test.runner import relative

TOL = 1e-6


def model(rng):
    f = lambda *s: np.asarray(rng.uniform(-1.5, 1.5, size=s), np.float32)
    inits = [numpy_helper.from_array(v, n) for n, v in [
        ("q", f(1, 2, 4, 4)), ("k", f(1, 2, 4, 4)), ("v", f(1, 2, 4, 4)),
        ("r", f(1, 2, 4, 4)), ("half", np.float32(0.5)),
        ("zero", np.float32(0.0)),
        ("fmin", np.float32(np.finfo(np.float32).min))]]
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Mul", ["qk", "half"], ["s"]),
        helper.make_node("Where", ["keep", "zero", "fmin"], ["m"]),
        helper.make_node("Add", ["s", "m"], ["x"]),
        helper.make_node("Softmax", ["x"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"]),
        helper.make_node("Mul", ["y", "r"], ["yr"]),
        helper.make_node("ReduceSum", ["yr"], ["loss"], keepdims=0),
    ]
    keep = helper.make_tensor_value_info("keep", TensorProto.BOOL, [1, 1, 4, 4])
    loss = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])
    graph = helper.make_graph(nodes, "uniform_rows", [keep], [loss],
                              initializer=inits)
    return onnx_model(graph, 17)


def main():
    memfit_run, workdir = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    m = model(np.random.default_rng(7))
    path = os.path.join(workdir, "model.onnx")
    onnx.save(m, path)
    keep = np.array([[[[True, False, True, False], [False] * 4,
                       [True, True, False, True], [False, False, True, True]]]])
    keep_path = os.path.join(workdir, "keep.npy")
    np.save(keep_path, keep)
    ref = float(ort_session(m).run(None, {"keep": keep})[0])
    failures = []
    base = [memfit_run, path, "--gradients", "--loss=output", "--device=host",
            "--quiet", f"--input=keep={keep_path}"]
    fused = os.path.join(workdir, "fused")
    mlir = os.path.join(workdir, "fused.mlir")
    run(base + [f"--output-dir={fused}", f"--emit-mlir={mlir}"])
    with open(mlir) as f:
        if "uniform_hidden_rows" not in f.read():
            failures.append("the compiled step has no uniform_hidden_rows")
    spelled = os.path.join(workdir, "spelled")
    run(base + [f"--output-dir={spelled}", "--no-fused-attention"])
    loss = float(np.load(os.path.join(fused, "loss.npy")))
    err = abs(loss - ref) / max(abs(ref), 1e-30)
    print(f"loss {loss:.7f} onnxruntime {ref:.7f} rel {err:.2e}")
    if err > TOL:
        failures.append(f"loss differs from onnxruntime's by {err:.2e}")
    for name in ["q", "k", "v"]:
        err = relative(np.load(os.path.join(fused, f"grad.{name}.npy")),
                       np.load(os.path.join(spelled, f"grad.{name}.npy")))
        print(f"grad.{name}: relative difference {err:.2e}")
        if err > TOL:
            failures.append(f"grad.{name} differs from the spelled-out graph's "
                            f"by {err:.2e}")
    return report("uniform rows", failures)


if __name__ == "__main__":
    sys.exit(main())
