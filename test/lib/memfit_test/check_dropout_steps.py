#!/usr/bin/env python3
"""Training-mode dropout draws a new mask every step (memfit-dropout-step).

  check_dropout_steps.py MEMFIT_RUN WORKDIR

The model makes every step's mask visible: micro-batch s reads the one-hot
row e_s ([1, S], --data), h = e_s W is row s of the trained W ([S, N], all
ones), y = Dropout(h, ratio 0.1, training_mode) {seed}, loss = sum(y * R)
with R a fixed [1, N] initializer in [0.5, 1.5]. SGD with learning rate 1:
the gradient of step s is e_s^T (R * m_s / 0.9), so only row s of W moves:
after the run, row s holds the mask m_s that step s's gradient drew
(m_s = W[s] != 1), and step s's loss, sum(R * m'_s) / 0.9, the forward's.

Checks, on the host backend (S = 100 micro-batches, N = 2000 elements):
  - masks: each keeps 1 - p of the elements; consecutive steps differ in
    2 p (1 - p) = 0.18 of them within 0.01, every pair of steps too; the
    forward's mask is the gradient's (each step's loss is the sum of R over
    the kept elements / 0.9, within 1e-5 of sum |R|);
  - the same seed reproduces every mask and loss bit for bit; another seed
    (the ONNX attribute) draws other masks (differing in about 0.18);
  - accumulation (--accumulate=2, 50 steps, lr 2): every micro-batch draws
    its own mask, the two of one step included; micro-batch j draws the
    mask that step j of the unaccumulated run drew (the counter counts
    micro-batches);
  - dynamic loss scaling from a scale that overflows: the skipped steps
    leave their rows, every applied step draws the mask the run without
    scaling drew at that step, and the counter counts every call;
  - resume: 40 steps, a checkpoint, 60 resumed steps reach the losses and
    the checkpoint (W and the counter @dropout_step) of 100 uninterrupted
    steps bit for bit;
  - a forward pass (memfit-run without --train) draws step 0's mask, the
    same in every run.
Prints the measured figures and PASS or FAIL lines.
"""

import os
import re
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from memfit_test.check_training import read_checkpoint, read_losses, report, run
from memfit_test.op_numerics import onnx_model

S, N, P = 100, 2000, 0.1
EXPECTED = 2 * P * (1 - P)
TOL = 0.01


def model(seed):
    rng = np.random.default_rng(5)
    r = rng.uniform(0.5, 1.5, size=(1, N)).astype(np.float32)
    inits = [numpy_helper.from_array(np.ones((S, N), np.float32), "W"),
             numpy_helper.from_array(r, "R"),
             numpy_helper.from_array(np.float32(P), "ratio"),
             numpy_helper.from_array(np.bool_(True), "training")]
    nodes = [helper.make_node("MatMul", ["e", "W"], ["h"]),
             helper.make_node("Dropout", ["h", "ratio", "training"], ["y"],
                              name="drop", seed=seed),
             helper.make_node("Mul", ["y", "R"], ["yr"]),
             helper.make_node("ReduceSum", ["yr"], ["loss"], keepdims=0)]
    graph = helper.make_graph(
        nodes, "dropout_steps",
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, S])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        initializer=inits)
    return onnx_model(graph, 13), r[0].astype(np.float64)


class Runs:
    def __init__(self, memfit_run, workdir):
        self.memfit_run, self.workdir = memfit_run, workdir
        onehot = np.eye(S, dtype=np.float32).reshape(S, 1, S)
        self.data = os.path.join(workdir, "e.npy")
        np.save(self.data, onehot)
        self.models = {}
        for seed in (7, 8):
            m, self.r = model(seed)
            path = os.path.join(workdir, f"seed{seed}.onnx")
            onnx.save(m, path)
            self.models[seed] = path

    def train(self, name, steps, seed=7, extra=()):
        """Trains and returns (losses by step, checkpoint, stdout)."""
        losses = os.path.join(self.workdir, f"{name}.csv")
        ckpt = os.path.join(self.workdir, f"{name}.ckpt")
        out = run([self.memfit_run, self.models[seed], "--train",
                   "--device=host", "--loss=output", "--optimizer=sgd",
                   "--lr=1", "--weight-decay=0", "--frozen=R", f"--steps={steps}", f"--data=e={self.data}",
                   f"--losses={losses}", f"--checkpoint={ckpt}", *extra])
        return read_losses(losses), read_checkpoint(ckpt), out


def masks(ckpt):
    """Row s of W: the mask that step (micro-batch) s drew."""
    return ckpt["W"] != 1


def differing(a, b):
    return float((a != b).mean())


def main():
    memfit_run, workdir = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    runs = Runs(memfit_run, workdir)
    failures = []

    losses, ckpt, _ = runs.train("full", S)
    m = masks(ckpt)
    kept = float(m.mean())
    consecutive = [differing(m[s], m[s + 1]) for s in range(S - 1)]
    pairs = [differing(m[s], m[t]) for s in range(S) for t in range(s + 1, S)]
    c, a = float(np.mean(consecutive)), float(np.mean(pairs))
    print(f"{S} steps of {N} elements, p = {P}: kept {kept:.4f}; "
          f"consecutive steps differ in {c:.4f} of the elements (min "
          f"{min(consecutive):.4f}, max {max(consecutive):.4f}), all pairs "
          f"in {a:.4f}; expected 2p(1-p) = {EXPECTED:.4f}")
    if abs(kept - (1 - P)) > TOL:
        failures.append(f"the masks keep {kept:.4f}")
    if abs(c - EXPECTED) > TOL or abs(a - EXPECTED) > TOL:
        failures.append(f"masks of different steps differ in {c:.4f} "
                        f"(consecutive) and {a:.4f} (all pairs)")
    if min(consecutive) == 0:
        failures.append("two consecutive steps drew the same mask")
    worst = max(abs(losses[s + 1] - float((runs.r * m[s]).sum() / (1 - P)))
                for s in range(S)) / float(runs.r.sum())
    print(f"forward against gradient masks: the losses differ from the "
          f"gradient masks' sums by at most {worst:.2e} of sum |R|")
    if worst > 1e-5:
        failures.append(f"the forward's mask is not the gradient's "
                        f"({worst:.2e})")
    counter = int(ckpt["dropout_step"])
    if counter != S:
        failures.append(f"@dropout_step is {counter} after {S} steps")

    again_losses, again, _ = runs.train("again", S)
    if again["W"].tobytes() != ckpt["W"].tobytes() or again_losses != losses:
        failures.append("the same seed drew other masks")
    _, other, _ = runs.train("seed8", S, seed=8)
    d = float(np.mean([differing(m[s], masks(other)[s]) for s in range(S)]))
    print(f"seed 7 against seed 8: the masks of a step differ in {d:.4f}")
    if abs(d - EXPECTED) > TOL:
        failures.append(f"another seed's masks differ in {d:.4f}")

    # Accumulation: micro-batch j reads row j and draws for counter j.
    _, acc, _ = runs.train("acc", S // 2, extra=["--accumulate=2", "--lr=2"])
    ma = masks(acc)
    within = [differing(ma[2 * s], ma[2 * s + 1]) for s in range(S // 2)]
    w = float(np.mean(within))
    same = bool(np.array_equal(ma, m))
    print(f"--accumulate=2: the two micro-batches of a step differ in "
          f"{w:.4f}; micro-batch j draws step j's mask: {same}")
    if abs(w - EXPECTED) > TOL or min(within) == 0:
        failures.append(f"micro-batches of one step differ in {w:.4f}")
    if not same:
        failures.append("micro-batch masks are not those of the counter's "
                        "steps")

    # Dynamic loss scaling: sum(grad) = scale * ~N overflows until the
    # scale has backed off below ~1.7e35.
    _, scaled, out = runs.train("scaled", S, extra=[
        "--loss-scale=dynamic", "--loss-scale-init=1e36"])
    skipped = [int(s) for s in re.findall(r"step (\d+)/\d+ .* skipped", out)]
    ms = masks(scaled)
    applied = [s for s in range(S) if s + 1 not in skipped]
    print(f"dynamic loss scaling: steps {skipped} skipped; the applied "
          f"steps' masks are the unscaled run's: "
          f"{bool(np.array_equal(ms[applied], m[applied]))}; counter "
          f"{int(scaled['dropout_step'])}")
    if not skipped:
        failures.append("no step was skipped")
    if any(ms[s - 1].any() for s in skipped):
        failures.append("a skipped step changed its row")
    if not np.array_equal(ms[applied], m[applied]):
        failures.append("applied steps after skipped ones drew other masks")
    if int(scaled["dropout_step"]) != S:
        failures.append("skipped steps did not advance the counter")

    # Resume.
    runs.train("half", 40)
    resumed_losses, resumed, _ = runs.train("resumed", S - 40, extra=[
        f"--resume={os.path.join(workdir, 'half.ckpt')}"])
    bad = [s for s in range(41, S + 1) if resumed_losses.get(s) != losses[s]]
    differ = [n for n in ckpt if ckpt[n].tobytes() != resumed[n].tobytes()]
    print(f"resume after 40 of {S} steps: {S - 40 - len(bad)} of {S - 40} "
          f"losses and {len(ckpt) - len(differ)} of {len(ckpt)} variables "
          f"bit-identical")
    if bad or sorted(resumed_losses) != list(range(41, S + 1)):
        failures.append(f"resumed losses differ at steps {bad[:5]}")
    if differ:
        failures.append(f"resumed variables differ: {differ}")

    # A forward pass: step 0.
    e0 = os.path.join(workdir, "e0.npy")
    np.save(e0, np.eye(S, dtype=np.float32)[:1])
    fwd = []
    for i in range(2):
        d = os.path.join(workdir, f"fwd{i}")
        run([memfit_run, runs.models[7], "--device=host", "--quiet",
             f"--input=e={e0}", f"--output-dir={d}"])
        fwd.append(float(np.load(os.path.join(d, "loss.npy"))))
    print(f"forward pass: loss {fwd[0]!r} twice {fwd[1]!r}; step 1 of "
          f"training {losses[1]!r}")
    if fwd[0] != fwd[1] or abs(fwd[0] - losses[1]) > 1e-6 * abs(losses[1]):
        failures.append("a forward pass does not draw step 0's mask")
    return report("dropout steps", failures)


if __name__ == "__main__":
    sys.exit(main())
