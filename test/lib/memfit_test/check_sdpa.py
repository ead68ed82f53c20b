#!/usr/bin/env python3
"""memfit.attention's gradients against PyTorch's scaled_dot_product_attention.

  check_sdpa.py MEMFIT_RUN REFS.npz WORKDIR [--bf16] [--rel-tol R]
                [--only CASE,...] [--forms opset23,spelled]

REFS.npz is test/models/make_sdpa_refs.py's: for each case, queries, keys
and values, a target, the flags and an optional mask, with PyTorch's loss
L = mean((SDPA(q, k, v) - target)^2) and its gradients of q, k and v. Each
case is written as ONNX twice, q, k and v as initializers (memfit's
parameters) and the attention's result as the output:

  - opset23: one opset-23 Attention node (is_causal, scale, a boolean or
    additive mask; grouped-query heads from the key and value shapes), which
    memfit imports as memfit.attention;
  - spelled: MatMul with the transposed key, a scale Mul, the masks as Where
    (a constant lower triangle, a boolean padding mask), Add (a float mask,
    or both as Hugging Face adds them: Where(And(causal, keep), 0, -inf)),
    Softmax,
    MatMul, the key and value heads repeated as Hugging Face's repeat_kv
    exports them (Unsqueeze, Expand, Reshape); memfit-raise-attention must
    make it one memfit.attention (the check reads --attention-report).

`memfit-run --gradients --loss=mse` on the host backend gives the loss and
grad.q|k|v; a tensor passes when max |memfit - PyTorch| <= R * max |PyTorch|
(default 1e-5; with --bf16, memfit's mixed precision, 0.02: a third of
test/Training/grads-bf16.test's bound, about four times the largest error
measured, which is also PyTorch's own bf16 SDPA's). Each line also prints PyTorch's own
error in that precision (fp32 against float64 SDPA, or bf16 SDPA against
fp32 SDPA) for scale. Ends with `sdpa: N passed, M failed`.
"""

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from memfit_test.runner import relative

F32 = np.float32


def cases(refs):
    names = sorted({k.split(".")[0] for k in refs.keys()})
    return [n for n in names if f"{n}.loss" in refs]


class Graph:
    def __init__(self):
        self.nodes, self.inits = [], []

    def const(self, value, name):
        self.nodes.append(helper.make_node(
            "Constant", [], [name], name=name,
            value=numpy_helper.from_array(np.asarray(value), name)))
        return name

    def op(self, op, inputs, name, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def model(self, y, shape, opset):
        graph = helper.make_graph(
            self.nodes, "sdpa", [],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, shape)],
            initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[
            helper.make_opsetid("", opset)])
        onnx.checker.check_model(model)
        return model


def build(refs, case, form):
    q, k, v = (refs[f"{case}.{n}"] for n in "qkv")
    causal, scale = (float(x) for x in refs[f"{case}.flags"])
    mask = refs[f"{case}.mask"] if f"{case}.mask" in refs else None
    b, hq, s, d = q.shape
    hkv, t = k.shape[1], k.shape[2]
    g = Graph()
    g.inits = [numpy_helper.from_array(a, n) for n, a in (("q", q), ("k", k), ("v", v))]
    if form == "opset23":
        inputs = ["q", "k", "v"]
        if mask is not None:
            inputs.append(g.const(mask, "mask"))
        attrs = dict(is_causal=int(causal))
        if scale:
            attrs["scale"] = scale
        return g.model(g.op("Attention", inputs, "y", **attrs), [b, hq, s, d], 23)

    def repeat_kv(x):  # [B, hkv, T, D] -> [B, hq, T, D]
        if hkv == hq:
            return x
        x = g.op("Unsqueeze", [x, g.const(np.array([2], np.int64), f"{x}_axes")],
                 f"{x}_unsqueeze")
        x = g.op("Expand", [x, g.const(np.array([1, 1, hq // hkv, 1, 1], np.int64),
                                       f"{x}_repeat")], f"{x}_expand")
        return g.op("Reshape", [x, g.const(np.array([0, hq, -1, d], np.int64),
                                           f"{x}_shape")], f"{x}_merged")

    kt = g.op("Transpose", [repeat_kv("k")], "kt", perm=[0, 1, 3, 2])
    x = g.op("Mul", [g.op("MatMul", ["q", kt], "qk"),
                     g.const(F32(scale or 1 / np.sqrt(d)), "scale")], "scores")
    ninf = g.const(F32(-np.inf), "ninf")
    tril = np.tril(np.ones((1, 1, s, t), bool))
    if causal and mask is not None:  # one mask, added, as Hugging Face's
        keep = g.op("And", [g.const(tril, "causal"), g.const(mask, "keep")],
                    "keep_both")
        x = g.op("Add", [x, g.op("Where", [keep, g.const(F32(0), "zero"), ninf],
                                 "mask")], "masked_scores")
    elif causal:
        x = g.op("Where", [g.const(tril, "causal"), x, ninf], "causal_scores")
    elif mask is not None and mask.dtype == bool:
        x = g.op("Where", [g.const(mask, "keep"), x, ninf], "masked_scores")
    elif mask is not None:
        x = g.op("Add", [x, g.const(mask, "bias")], "biased_scores")
    p = g.op("Softmax", [x], "probs", axis=-1)
    return g.model(g.op("MatMul", [p, repeat_kv("v")], "y"), [b, hq, s, d], 17)


def check(args, refs, case, form):
    work = os.path.join(args.workdir, f"{case}.{form}")
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "model.onnx")
    onnx.save(build(refs, case, form), path)
    target = os.path.join(work, "target.npy")
    np.save(target, refs[f"{case}.target"])
    out = os.path.join(work, "out")
    cmd = [args.memfit_run, path, "--gradients", "--loss=mse", "--device=host",
           f"--input=target={target}", f"--output-dir={out}", "--attention-report"]
    cmd += ["--bf16"] if args.bf16 else []
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    tag = f"{case}/{form}"
    if run.returncode != 0:
        return [f"FAIL {tag}: memfit-run exited with {run.returncode}: "
                f"{run.stderr.strip()[-2000:]}\n  $ {' '.join(cmd)}"], 0, 4
    report = run.stdout + run.stderr
    if "1 of 1 softmaxes became memfit.attention" not in report and form == "spelled":
        return [f"FAIL {tag}: the softmax did not become memfit.attention:\n"
                f"{report.strip()}"], 0, 4
    lines, passed, failed = [], 0, 0
    own = refs[f"{case}.{'bf16' if args.bf16 else 'fp32'}_err"]
    got_loss = float(np.load(os.path.join(out, "loss.npy")))
    ref_loss = float(refs[f"{case}.loss"])
    loss_err = abs(got_loss - ref_loss) / abs(ref_loss)
    ok = loss_err <= args.rel_tol
    lines.append(f"{'PASS' if ok else 'FAIL'} {tag}/loss err {loss_err:.2e}")
    passed, failed = passed + ok, failed + (not ok)
    for i, n in enumerate("qkv"):
        ref = refs[f"{case}.grad.{n}"].astype(np.float64)
        got_path = os.path.join(out, f"grad.{n}.npy")
        if not os.path.exists(got_path):
            lines.append(f"FAIL {tag}/grad.{n}: not produced")
            failed += 1
            continue
        got = np.load(got_path).astype(np.float64)
        if got.shape != ref.shape:
            lines.append(f"FAIL {tag}/grad.{n}: shape {got.shape} vs {ref.shape}")
            failed += 1
            continue
        err = relative(got, ref)
        ok = np.isfinite(err) and err <= args.rel_tol
        lines.append(f"{'PASS' if ok else 'FAIL'} {tag}/grad.{n} err {err:.2e} "
                     f"(PyTorch's own {float(own[i]):.1e})")
        passed, failed = passed + ok, failed + (not ok)
    return lines, passed, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("memfit_run")
    ap.add_argument("refs")
    ap.add_argument("workdir")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--rel-tol", type=float)
    ap.add_argument("--only", default="")
    ap.add_argument("--forms", default="opset23,spelled")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    if args.rel_tol is None:
        args.rel_tol = 0.02 if args.bf16 else 1e-5
    refs = dict(np.load(args.refs))
    names = cases(refs)
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    # Form by form: the second form of a case compiles the same kernels,
    # which the kernel cache then has.
    jobs = [(c, f) for f in args.forms.split(",") for c in names]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda j: check(args, refs, *j), jobs))
    passed = failed = 0
    for lines, p, f in results:
        print("\n".join(lines))
        passed, failed = passed + p, failed + f
    print(f"sdpa: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
