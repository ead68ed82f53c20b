#!/usr/bin/env python3
"""Hugging Face exports (test/models/hf, made by make_hf_fixtures.py) run and
train as PyTorch and onnxruntime say they should.

  check_hf.py MEMFIT_RUN HF_DIR WORKDIR FIXTURE... [-- memfit-run flags]

FIXTURE is <family>_<inputs>_<exporter> (gpt2_mask_ts, llama_ids_dynamo...;
"all" for every fixture of manifest.json). For each:

  forward   memfit-run on the fixture's inputs (batch 2, sequence 16, the
            second row padded in the mask fixtures) against onnxruntime on
            the same file: max |memfit - ort| <= 1e-4 * max(1, max |ort|);
  gradients memfit_test.check_grads against PyTorch autograd (its 1e-4
            relative bound per parameter, every gradient produced);
  train     20 AdamW steps on the fixed padded batches of
            <family>_<inputs>_train.npz (--data), every step's loss within
            1e-3 (relative) of PyTorch's, and the loss falls.

With --ort-optimized (before the fixtures), each fixture first goes through
onnxruntime's transformer optimizer (onnxruntime.transformers.optimizer,
model type gpt2 or bert, 4 heads, hidden size 64), which fuses it into its
com.microsoft ops (SkipLayerNormalization, FastGelu, BiasGelu); the fused
file must hold at least one, and it is checked as above except for the
per-parameter gradients (the training losses check the whole step).

Prints one line per check with the measured error, then `PASS FIXTURE` or
`FAIL FIXTURE: why`.
"""

import json
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort

from memfit_test.check_grads import input_args
from memfit_test.check_training import read_losses
from memfit_test.runner import split_passthrough

FORWARD_TOL = 1e-4
TRAIN_TOL = 1e-3


def run(args):
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"exited {done.returncode}: {done.stdout}"
                           f"{done.stderr}\n$ {' '.join(args)}")
    return done.stdout


def ort_optimized(hf, workdir, fixture):
    """The fixture through onnxruntime's transformer optimizer, and the
    com.microsoft ops in it."""
    from onnxruntime.transformers.optimizer import optimize_model
    family = fixture.split("_")[0]
    model = optimize_model(os.path.join(hf, fixture + ".onnx"),
                           model_type=family, num_heads=4, hidden_size=64,
                           opt_level=0)
    path = os.path.join(workdir, fixture + "_ortopt.onnx")
    model.save_model_to_file(path)
    fused = sorted({n.op_type for n in model.model.graph.node
                    if n.domain == "com.microsoft"})
    print(f"{fixture} ort-optimized: com.microsoft ops {', '.join(fused)}")
    return path, fused


def forward(memfit_run, path, workdir, fixture, inputs, extra):
    ref = ort.InferenceSession(path).run(None, inputs)[0]
    run([memfit_run, path, "--quiet", f"--output-dir={workdir}/forward"]
        + input_args(inputs, workdir) + extra)
    got = np.load(os.path.join(workdir, "forward", "logits.npy"))
    err = float(np.abs(got - ref).max()) / max(1.0, float(np.abs(ref).max()))
    print(f"{fixture} forward: max error {err:.2e} of max(1, max|ref|)")
    return [] if err <= FORWARD_TOL else [f"forward error {err:.2e}"]


def gradients(memfit_run, hf, workdir, fixture, extra):
    family, inputs, exporter = fixture.split("_")
    done = subprocess.run(
        [sys.executable, "-m", "memfit_test.check_grads", memfit_run, hf,
         f"{family}_{inputs}", exporter, os.path.join(workdir, "grads"), "--"]
        + extra, capture_output=True, text=True)
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"{fixture} gradients: {last}")
    return [] if done.returncode == 0 and last.startswith("PASS") else [
        f"gradients: {done.stdout[-2000:]}{done.stderr[-2000:]}"]


def train(memfit_run, hf, path, workdir, fixture, manifest, extra):
    family, inputs, _ = fixture.split("_")
    data = np.load(os.path.join(hf, f"{family}_{inputs}_train.npz"))
    frozen = np.load(os.path.join(hf, fixture + "_grads.npz"))["frozen"]
    opt = manifest["adamw"]
    losses = os.path.join(workdir, "losses.csv")
    args = [memfit_run, path, "--train",
            "--quiet", "--loss=cross-entropy", f"--steps={manifest['steps']}",
            "--optimizer=adamw", f"--lr={opt['lr']}",
            f"--beta1={opt['betas'][0]}", f"--beta2={opt['betas'][1]}",
            f"--eps={opt['eps']}", f"--weight-decay={opt['weight_decay']}",
            f"--losses={losses}"]
    shapes = []
    for key in data.files:
        if key == "losses_fp32":
            continue
        path = os.path.join(workdir, f"train.{key}.npy")
        # Rows of every step's batch, as micro-batches: [steps, batch, seq].
        batch = manifest["batch"]
        np.save(path, data[key].reshape(-1, batch, *data[key].shape[1:]))
        args.append(f"--data={key}={path}")
        if key != "labels":
            shapes.append(f"{key}={manifest['batch']}x{manifest['seq']}")
    args.append("--input-shape=" + ",".join(shapes))
    args += [f"--frozen={f}" for f in frozen]
    run(args + extra)
    got = read_losses(losses)
    ref = data["losses_fp32"]
    worst, at = 0.0, 0
    for step, expected in enumerate(ref, start=1):
        if step not in got:
            return [f"train: no loss for step {step}"]
        rel = abs(got[step] - expected) / abs(expected)
        if rel > worst:
            worst, at = rel, step
    print(f"{fixture} train: {len(ref)} steps, loss {got[1]:.6f} -> "
          f"{got[len(ref)]:.6f} (PyTorch {ref[0]:.6f} -> {ref[-1]:.6f}), max "
          f"relative difference {worst:.2e} at step {at}")
    failures = []
    if worst > TRAIN_TOL:
        failures.append(f"train: relative difference {worst:.2e}")
    if got[len(ref)] >= got[1]:
        failures.append("train: the loss did not fall")
    return failures


def main():
    argv, extra = split_passthrough(sys.argv[1:])
    optimized = "--ort-optimized" in argv
    argv = [a for a in argv if a != "--ort-optimized"]
    memfit_run, hf, workdir, *fixtures = argv
    manifest = json.load(open(os.path.join(hf, "manifest.json")))
    if fixtures == ["all"]:
        fixtures = manifest["fixtures"]
    status = 0
    for fixture in fixtures:
        if fixture not in manifest["fixtures"]:
            print(f"FAIL {fixture}: not in manifest.json")
            status = 1
            continue
        family, inputs, _ = fixture.split("_")
        feeds = dict(np.load(os.path.join(hf, f"{family}_{inputs}_inputs.npz")))
        work = os.path.join(workdir, fixture)
        os.makedirs(work, exist_ok=True)
        path = os.path.join(hf, fixture + ".onnx")
        try:
            failures = []
            if optimized:
                path, fused = ort_optimized(hf, work, fixture)
                if not fused:
                    failures.append("the optimizer fused nothing")
            failures += forward(memfit_run, path, work, fixture, feeds, extra)
            if not optimized:
                failures += gradients(memfit_run, hf, work, fixture, extra)
            failures += train(memfit_run, hf, path, work, fixture, manifest,
                              extra)
        except RuntimeError as e:
            failures = [f"memfit-run {e}"]
        if failures:
            status = 1
            print(f"FAIL {fixture}: " + "; ".join(failures))
        else:
            print(f"PASS {fixture}")
    return status


if __name__ == "__main__":
    sys.exit(main())
