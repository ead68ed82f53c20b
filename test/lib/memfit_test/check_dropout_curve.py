#!/usr/bin/env python3
"""Training with dropout against PyTorch's spread over seeds.

  check_dropout_curve.py MEMFIT_RUN MODELS WORKDIR

Trains gpt_dropout_ts.onnx (the gpt fixture with GPT-2's dropouts of
p = 0.1, exported in training mode) with AdamW on the shipped corpus as
test/models/dropout_train_refs.json records, and compares memfit's loss at
every step with PyTorch's over its seeds (make_dropout_refs.py): masks are
drawn differently (memfit's generator, not Philox), so memfit's curve must
look like one more seed's:
  - at every step, |memfit - mean| <= Z_STEP standard deviations of the
    seeds' losses at that step;
  - over the steps, the mean of those z-scores is within Z_MEAN (a curve
    that is systematically off, as one without dropout, is not).
The reference's control without dropout must fail the second check (so the
check can fail); the one whose mask is the same at every step passes it
over so few steps, which is why test/Training/dropout-steps.test checks
the masks themselves.

Remat: the first 8 steps again with --remat=checkpoint-layers, whose
backward recomputes each layer's forward, dropouts included: the
recomputation draws the forward's masks, so the losses are the same bit for
bit.

Also LoRA dropout (--lora-dropout, memfit-lora's dropout of each adapter's
input): 6 steps of gpt_ts.onnx with rank-4 adapters, with and without
dropout 0.1. lora_B starts at zero, so step 1's loss is the same; from
step 2 on they differ (the adapters trained on dropped inputs), twice the
same.

Prints the measured figures and PASS or FAIL lines.
"""

import json
import os
import re
import sys

import numpy as np

from memfit_test.check_training import read_losses, report, run

Z_STEP = 4.0
Z_MEAN = 1.0


def train(memfit_run, models, workdir, ref, name, steps, extra=()):
    """memfit-run on the reference's model, data and AdamW settings."""
    opt = ref["optimizer"]
    losses = os.path.join(workdir, f"{name}.csv")
    out = run([memfit_run, os.path.join(models, ref["onnx_file"]), "--train",
               "--device=host", "--loss=cross-entropy",
               f"--corpus={os.path.join(models, ref['corpus_file'])}",
               f"--input-shape=input_ids={ref['batch']}x{ref['seq']}",
               f"--steps={steps}", "--optimizer=adamw", f"--lr={opt['lr']}",
               f"--beta1={opt['beta1']}", f"--beta2={opt['beta2']}",
               f"--eps={opt['eps']}", f"--weight-decay={opt['weight_decay']}",
               f"--losses={losses}", *extra])
    return read_losses(losses), out


def curve(memfit_run, models, workdir, failures):
    ref = json.load(open(os.path.join(models, "dropout_train_refs.json")))
    steps = ref["steps"]
    got, _ = train(memfit_run, models, workdir, ref, "losses", steps,
                   ["--quiet"])
    memfit = np.array([got[s + 1] for s in range(steps)])
    seeds = np.array(list(ref["losses_by_seed"].values()))
    mean, sd = seeds.mean(0), seeds.std(0, ddof=1)
    z = (memfit - mean) / sd
    worst = int(np.argmax(np.abs(z)))
    inside = int(((memfit >= seeds.min(0)) & (memfit <= seeds.max(0))).sum())
    controls = {name: float(((np.array(ref[key]) - mean) / sd).mean())
                for name, key in (("fixed mask", "losses_fixed_mask"),
                                  ("no dropout", "losses_no_dropout"))}
    print(f"{steps} steps, {len(seeds)} PyTorch seeds: memfit {memfit[0]:.4f} "
          f"-> {memfit[-1]:.4f}, seeds {mean[0]:.4f} -> {mean[-1]:.4f} (last "
          f"{seeds[:, -1].min():.4f}..{seeds[:, -1].max():.4f}); largest |z| "
          f"{abs(z[worst]):.2f} at step {worst + 1} (bound {Z_STEP}); mean z "
          f"{z.mean():+.2f} (bound {Z_MEAN}); inside the seeds' range at "
          f"{inside} of {steps} steps; controls' mean z: " +
          ", ".join(f"{k} {v:+.2f}" for k, v in controls.items()))
    if abs(z[worst]) > Z_STEP:
        failures.append(f"step {worst + 1}: {memfit[worst]:.4f} is "
                        f"{z[worst]:+.2f} standard deviations from PyTorch's")
    if abs(z.mean()) > Z_MEAN:
        failures.append(f"the curve is {z.mean():+.2f} standard deviations "
                        f"off PyTorch's on average")
    if abs(controls["no dropout"]) <= Z_MEAN:
        failures.append("the control without dropout passes the check")
    if memfit[-1] >= memfit[0]:
        failures.append("the loss did not fall")

    remat, out = train(memfit_run, models, workdir, ref, "remat", 8,
                       ["--remat=checkpoint-layers", "--memory-report"])
    recomputed = re.search(r"recomputed activations +([0-9,]+)", out)
    same = all(remat[s] == got[s] for s in range(1, 9))
    print(f"--remat=checkpoint-layers recomputes "
          f"{recomputed.group(1) if recomputed else 0} bytes of activations; "
          f"its 8 losses equal the run's bit for bit: {same}")
    if not recomputed or recomputed.group(1) == "0":
        failures.append("remat recomputed nothing")
    if not same:
        failures.append("the recomputed forward drew other masks")


def lora(memfit_run, models, workdir, failures):
    curves = {}
    for name, extra in (("none", []), ("drop", ["--lora-dropout=0.1"]),
                        ("again", ["--lora-dropout=0.1"])):
        losses = os.path.join(workdir, f"lora-{name}.csv")
        run([memfit_run, os.path.join(models, "gpt_ts.onnx"), "--train",
             "--device=host", "--quiet", "--loss=cross-entropy",
             f"--corpus={os.path.join(models, 'corpus.txt')}",
             "--input-shape=input_ids=4x32", "--steps=6", "--lr=1e-2",
             "--lora-rank=4", "--lora-targets=all-linear",
             f"--losses={losses}", *extra])
        curves[name] = read_losses(losses)
    none, drop = curves["none"], curves["drop"]
    differ = [s for s in range(2, 7) if drop[s] != none[s]]
    print(f"LoRA: losses without dropout {[round(none[s], 5) for s in none]}, "
          f"with 0.1 {[round(drop[s], 5) for s in drop]}")
    if drop[1] != none[1]:
        failures.append("LoRA dropout changed the first loss (lora_B is zero)")
    if len(differ) != 5:
        failures.append("LoRA dropout changed nothing after step 1")
    if curves["again"] != drop:
        failures.append("LoRA dropout is not reproducible")


def main():
    memfit_run, models, workdir = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    failures = []
    curve(memfit_run, models, workdir, failures)
    lora(memfit_run, models, workdir, failures)
    return report("dropout curve", failures)


if __name__ == "__main__":
    sys.exit(main())
