#!/usr/bin/env python3
"""Gradients of a fixture against PyTorch autograd references.

  check_grads.py MEMFIT_RUN MODELS_DIR NAME EXPORTER WORKDIR
                 [--rel-tol=R] [--zero-abs-tol=Z] [-- memfit-run flags]

Runs `memfit-run --gradients` on MODELS_DIR/NAME_EXPORTER.onnx with the
fixture's inputs (NAME_inputs.npz) and the loss inputs stored with the
references (NAME_EXPORTER_grads.npz, written by test/models/make_train_refs.py:
`labels` for cross-entropy, `target` for mse), freezing what the references
list as not trained. Compares the loss and every `grad.<parameter>` with the
fp32 PyTorch gradient: max |got - ref| <= 1e-4 * max |ref| per tensor (the
issue's "1e-4 relative"), or <= 1e-6 absolute for gradients that are zero
analytically (`zero_grad`: PyTorch's values there are rounding noise). Every
reference gradient must be produced and nothing else.

With --rel-tol and --zero-abs-tol (for runs in bf16 or fp16, `-- --bf16`)
the bounds are R and Z * (the largest |ref| of all gradients): the noise of
an analytically zero gradient scales with the gradients around it.

Prints `grad <name> shape max_rel E norm_rel N` per parameter (N: the
relative error in the L2 norm, |got - ref| / |ref|), then
`PASS NAME_EXPORTER: N gradients, worst relative error E` or FAIL lines.
"""

import os
import subprocess
import sys

import numpy as np

from memfit_test.runner import split_passthrough

REL_TOL = 1e-4
ZERO_ABS_TOL = 1e-6


def file_name(tensor):
    return "".join(c if c.isalnum() or c in "_-." else "_" for c in tensor)


def gradient_inputs(models, name, exporter):
    """The fixture's graph inputs (<name>_inputs.npz) and loss inputs
    (`labels` or `target` of <name>_<exporter>_grads.npz), and the loss."""
    refs = np.load(os.path.join(models, f"{name}_{exporter}_grads.npz"))
    inputs = dict(np.load(os.path.join(models, f"{name}_inputs.npz")))
    if "labels" in refs:
        loss, inputs["labels"] = "cross-entropy", refs["labels"]
    else:
        loss, inputs["target"] = "mse", refs["target"]
    return inputs, loss


def input_args(inputs, workdir):
    """memfit-run's --input-shape (of the graph inputs) and one --input per
    array, each saved as WORKDIR/in.<name>.npy."""
    shapes = ",".join(f"{k}={'x'.join(map(str, v.shape))}"
                      for k, v in inputs.items() if k not in ("labels", "target"))
    args = [f"--input-shape={shapes}"]
    for key, value in inputs.items():
        path = os.path.join(workdir, f"in.{key}.npy")
        np.save(path, value)
        args.append(f"--input={key}={path}")
    return args


def main():
    argv, extra = split_passthrough(sys.argv[1:])
    rel_tol, zero_tol = REL_TOL, None
    for flag in [a for a in argv if a.startswith("--")]:
        key, _, value = flag.partition("=")
        if key == "--rel-tol":
            rel_tol = float(value)
        elif key == "--zero-abs-tol":
            zero_tol = float(value)
        else:
            sys.exit(f"unknown flag {flag}")
        argv.remove(flag)
    memfit_run, models, name, exporter, workdir = argv
    os.makedirs(workdir, exist_ok=True)
    stem = f"{name}_{exporter}"
    refs = np.load(os.path.join(models, f"{stem}_grads.npz"))
    inputs, loss = gradient_inputs(models, name, exporter)
    args = [memfit_run, os.path.join(models, stem + ".onnx"), "--gradients",
            f"--loss={loss}", f"--output-dir={workdir}", "--quiet"]
    args += input_args(inputs, workdir)
    for frozen in refs["frozen"]:
        args.append(f"--frozen={frozen}")
    args += extra
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL {stem}: memfit-run exited with {run.returncode}\n"
              f"{run.stdout}{run.stderr}\n$ {' '.join(args)}")
        return 1

    failures = []
    got_loss = np.load(os.path.join(workdir, "loss.npy"))
    ref_loss = refs["loss"]
    loss_err = abs(float(got_loss) - float(ref_loss)) / abs(float(ref_loss))
    print(f"loss {float(got_loss):.7f} ref {float(ref_loss):.7f} rel {loss_err:.2e}")
    if loss_err > rel_tol:
        failures.append(f"loss: {float(got_loss)} vs {float(ref_loss)}")

    zero = set(str(z) for z in refs["zero_grad"])
    expected = [k for k in refs.keys() if k.startswith("grad.")]
    produced = {f[:-4] for f in os.listdir(workdir)
                if f.startswith("grad.") and f.endswith(".npy")}
    worst = 0.0
    scale = max(float(np.max(np.abs(refs[k]))) for k in expected)
    zero_abs = ZERO_ABS_TOL if zero_tol is None else zero_tol * scale
    for key in expected:
        path = os.path.join(workdir, file_name(key) + ".npy")
        produced.discard(file_name(key))
        if not os.path.exists(path):
            failures.append(f"{key}: not produced")
            continue
        got, ref = np.load(path), refs[key]
        if got.shape != ref.shape or got.dtype != ref.dtype:
            failures.append(f"{key}: {got.dtype}{list(got.shape)} vs "
                            f"{ref.dtype}{list(ref.shape)}")
            continue
        delta = got.astype(np.float64) - ref
        diff = float(np.max(np.abs(delta)))
        if key[len("grad."):] in zero:
            ok = diff <= zero_abs
            print(f"grad {key[5:]} {list(ref.shape)} max_abs {diff:.2e} (zero)")
        else:
            rel = diff / max(float(np.max(np.abs(ref))), 1e-30)
            norm = float(np.linalg.norm(delta)) / max(
                float(np.linalg.norm(ref)), 1e-30)
            worst = max(worst, rel)
            ok = rel <= rel_tol
            print(f"grad {key[5:]} {list(ref.shape)} max_rel {rel:.2e} "
                  f"norm_rel {norm:.2e}")
        if not ok:
            failures.append(f"{key}: error {diff:.3e} over tolerance")
    for extra_grad in sorted(produced):
        failures.append(f"{extra_grad}: produced but not in the references")
    for failure in failures:
        print(f"FAIL {stem}: {failure}")
    if failures:
        print(f"$ {' '.join(args)}")
        return 1
    print(f"PASS {stem}: {len(expected)} gradients, worst relative error "
          f"{worst:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
