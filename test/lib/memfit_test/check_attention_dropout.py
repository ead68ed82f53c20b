#!/usr/bin/env python3
"""Training-mode dropout on the attention probabilities, inside memfit.attention.

  check_attention_dropout.py MEMFIT_RUN WORKDIR

The graph: queries, keys and values of 2 samples and 2 heads
(initializers: parameters), 40 queries and keys (two tiles of the forward
kernel's 32 keys), scores = q . k^T * 0.25 with a constant causal mask
Where(tril, x, -inf), softmax, a training-mode Dropout(ratio 0.2, seed 5)
with its mask output unread (as TorchScript exports GPT-2's attn_dropout),
the values, and the loss ReduceSum(Y * R). memfit-raise-attention folds
the dropout into memfit.attention, and memfit-dropout-step gives it and
its gradient ops the step counter (checked in the compiled IR). A second
model adds Where(keep, 0, finfo.min) with a run-time keep-mask instead of
the causal where, whose row 1 hides every key: memfit.attention with
uniform_hidden_rows, where such a row attends to every key alike before
the dropout.

Checks, on the host backend:
  - the loss and the gradients of q, k and v with memfit.attention equal
    those of the spelled-out graph (--no-fused-attention: softmax,
    memfit.dropout and memfit's autodiff of them) within 1e-6 of each
    tensor's largest magnitude: both drop the same elements;
  - the loss equals a float64 NumPy evaluation of the same dropout (the
    keep test of memfit_dropout_keep, with the stream from the IR, at step
    0: memfit-dropout-step's counter starts there) within 1e-6;
  - the dropout drops: the loss and gradients differ from those of the
    same model with ratio 0 by more than 1e-3;
  - the second model's loss and gradients with memfit.attention equal the
    spelled-out graph's within 1e-6 as well.
Prints PASS or FAIL lines.
"""

import os
import re
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from memfit_test.op_numerics import onnx_model
from memfit_test.check_training import report, run
from memfit_test.runner import relative

TOL = 1e-6
B, H, S, D = 2, 2, 40, 8
SCALE = 0.25
RATIO = 0.2
SEED = 5


def model(ratio, uniform=False):
    rng = np.random.default_rng(11)
    f = lambda *s: np.asarray(rng.uniform(-1.5, 1.5, size=s), np.float32)
    tril = np.tril(np.ones((S, S), bool)).reshape(1, 1, S, S)
    inits = [numpy_helper.from_array(v, n) for n, v in [
        ("q", f(B, H, S, D)), ("k", f(B, H, S, D)), ("v", f(B, H, S, D)),
        ("r", f(B, H, S, D)), ("scale", np.float32(SCALE)),
        ("ninf", np.float32(-np.inf)), ("tril", tril),
        ("zero", np.float32(0.0)),
        ("fmin", np.float32(np.finfo(np.float32).min)),
        ("ratio", np.float32(ratio)), ("training", np.bool_(True))]]
    inputs = []
    if uniform:
        inputs = [helper.make_tensor_value_info("keep", TensorProto.BOOL,
                                                [B, 1, S, S])]
        masking = [helper.make_node("Where", ["keep", "zero", "fmin"], ["m"]),
                   helper.make_node("Add", ["s", "m"], ["x"])]
    else:
        masking = [helper.make_node("Where", ["tril", "s", "ninf"], ["x"])]
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Mul", ["qk", "scale"], ["s"]),
        *masking,
        helper.make_node("Softmax", ["x"], ["p"], axis=-1),
        helper.make_node("Dropout", ["p", "ratio", "training"],
                         ["pd", "pd_mask"], seed=SEED),
        helper.make_node("MatMul", ["pd", "v"], ["y"]),
        helper.make_node("Mul", ["y", "r"], ["yr"]),
        helper.make_node("ReduceSum", ["yr"], ["loss"], keepdims=0),
    ]
    loss = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])
    graph = helper.make_graph(nodes, "attention_dropout", inputs, [loss],
                              initializer=inits)
    return onnx_model(graph, 17)


def mix64(z):
    """splitmix64's finalizer (memfit_mix64) on uint64 arrays."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
    return z ^ (z >> np.uint64(31))


def keeps(seed, stream, ratio, n, step=0):
    """memfit_dropout_keep (lib/Target/Cuda/Prelude.cuh) of indices 0..n-1
    at `step` (the first call of a compiled step draws step 0)."""
    with np.errstate(over="ignore"):
        s = np.uint64((seed * 1000003 + stream) % 2**64)
        key = mix64(np.array([s + np.uint64(0xd1b54a32d192ed03) *
                              np.uint64(step + 1)], dtype=np.uint64))[0]
        z = mix64(key + np.uint64(0x9e3779b97f4a7c15) *
                  (np.arange(n, dtype=np.uint64) + np.uint64(1)))
    u = (z >> np.uint64(40)).astype(np.float32) * np.float32(1 / 16777216)
    return u >= np.float32(ratio)


def reference_loss(m, stream):
    """The loss in float64 with the dropout's keep test of NumPy's own."""
    w = {t.name: numpy_helper.to_array(t).astype(np.float64)
         for t in m.graph.initializer if t.name in "qkvr"}
    s = np.einsum("bhid,bhjd->bhij", w["q"], w["k"]) * SCALE
    s = np.where(np.tril(np.ones((S, S), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    z = keeps(SEED, stream, RATIO, p.size).reshape(p.shape)
    scale = float(np.float32(1 / (1 - float(np.float32(RATIO)))))
    y = np.einsum("bhij,bhjd->bhid", p * z * scale, w["v"])
    return float((y * w["r"]).sum()), float(1 - z.mean())


def main():
    memfit_run, workdir = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    failures = []
    outputs = {}
    # The uniform model's keep-mask: random, and row 1 hides every key.
    keep = np.random.default_rng(3).uniform(size=(B, 1, S, S)) < 0.7
    keep[:, :, 1, :] = False
    keep_path = os.path.join(workdir, "keep.npy")
    np.save(keep_path, keep)
    uniform = [f"--input=keep={keep_path}"]
    for name, ratio, flags in [
            ("fused", RATIO, []),
            ("spelled", RATIO, ["--no-fused-attention"]),
            ("undropped", 0.0, []),
            ("uniform-fused", RATIO, uniform),
            ("uniform-spelled", RATIO, uniform + ["--no-fused-attention"])]:
        path = os.path.join(workdir, f"{name}.onnx")
        m = model(ratio, uniform=name.startswith("uniform"))
        onnx.save(m, path)
        out = os.path.join(workdir, name)
        mlir = os.path.join(workdir, f"{name}.mlir")
        run([memfit_run, path, "--gradients", "--loss=output", "--device=host",
             "--quiet", f"--output-dir={out}", f"--emit-mlir={mlir}"] + flags)
        with open(mlir) as f:
            outputs[name] = (out, f.read())
    fused, fused_ir = outputs["fused"]
    if not re.search(r"memfit\.attention .*dropout_ratio = 2\.0+e-01",
                     fused_ir):
        failures.append("the compiled step has no memfit.attention with "
                        "dropout_ratio 0.2")
    if not re.search(r"memfit\.attention_grad_key_value .*dropout_step",
                     fused_ir):
        failures.append("the compiled step's attention gradient draws for "
                        "no dropout_step")
    if "attention_grad_key_value" not in fused_ir:
        failures.append("the compiled step has no attention_grad_key_value")
    if not re.search(r"memfit\.attention uniform_hidden_rows .*dropout_ratio",
                     outputs["uniform-fused"][1]):
        failures.append("the uniform model's compiled step has no "
                        "memfit.attention uniform_hidden_rows with dropout")
    load = lambda d, n: np.load(os.path.join(outputs[d][0], f"{n}.npy"))

    err = relative(load("fused", "loss"), load("spelled", "loss"))
    print(f"loss {float(load('fused', 'loss')):.7f} spelled-out "
          f"{float(load('spelled', 'loss')):.7f} relative difference {err:.2e}")
    if err > TOL:
        failures.append(f"the loss differs from the spelled-out graph's by "
                        f"{err:.2e}")
    stream = re.search(r"dropout_stream = (\d+)", fused_ir)
    if stream:
        ref, dropped = reference_loss(model(RATIO), int(stream.group(1)))
        err = relative(load("fused", "loss"), ref)
        print(f"NumPy float64 loss {ref:.7f} ({dropped:.3f} of the "
              f"probabilities dropped) relative difference {err:.2e}")
        if err > TOL:
            failures.append(f"the loss differs from NumPy's by {err:.2e}")
    else:
        failures.append("no dropout_stream in the compiled step")

    for name in ["loss", "grad.q", "grad.k", "grad.v"]:
        if name != "loss":
            err = relative(load("fused", name), load("spelled", name))
            print(f"{name}: relative difference {err:.2e}")
            if err > TOL:
                failures.append(f"{name} differs from the spelled-out "
                                f"graph's by {err:.2e}")
        change = relative(load("fused", name), load("undropped", name))
        print(f"{name}: with ratio 0 it differs by {change:.2e}")
        if change < 1e-3:
            failures.append(f"{name} is that of ratio 0 (differs by "
                            f"{change:.2e}): nothing dropped")
        err = relative(load("uniform-fused", name),
                       load("uniform-spelled", name))
        print(f"{name} (uniform rows): relative difference {err:.2e}")
        if err > TOL:
            failures.append(f"{name} of the uniform model differs from the "
                            f"spelled-out graph's by {err:.2e}")
    return report("attention dropout", failures)


if __name__ == "__main__":
    sys.exit(main())
