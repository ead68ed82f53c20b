#!/usr/bin/env python3
"""The loss in chunks against the loss whole, on a fixture.

  check_chunked_loss.py MEMFIT_RUN MODELS_DIR NAME EXPORTER WORKDIR
                        [--loss-chunk=ROWS] [-- memfit-run flags]

Runs `memfit-run --gradients --loss=cross-entropy` on the fixture's inputs
and labels (memfit_test.check_grads) twice: with the LM head's
cross-entropy computed a chunk of ROWS rows at a time
(memfit.linear_cross_entropy, the default; several chunks on purpose) and
with --no-chunked-loss, which holds the logits whole. The compiled steps
must differ (the chunked one has more loss kernels), and the loss and
every gradient must agree within 2e-6 of each tensor's largest magnitude
(of the largest gradient's for gradients that the references list as zero
analytically, whose values are rounding noise): the chunks sum the same
terms in another order. Prints the worst relative
difference, then `PASS NAME_EXPORTER` or FAIL lines.
"""

import os
import sys

import numpy as np

from memfit_test.check_grads import gradient_inputs, input_args
from memfit_test import check_training
from memfit_test.check_training import report
from memfit_test.runner import split_passthrough

REL_TOL = 2e-6


def run(args, workdir):
    os.makedirs(workdir, exist_ok=True)
    return check_training.run(args + [f"--output-dir={workdir}"])


def main():
    argv, extra = split_passthrough(sys.argv[1:])
    chunk = "--loss-chunk=5"
    for flag in [a for a in argv if a.startswith("--")]:
        if not flag.startswith("--loss-chunk="):
            sys.exit(f"unknown flag {flag}")
        chunk = flag
        argv.remove(flag)
    memfit_run, models, name, exporter, workdir = argv
    stem = f"{name}_{exporter}"
    os.makedirs(workdir, exist_ok=True)
    inputs, loss = gradient_inputs(models, name, exporter)
    if loss != "cross-entropy":
        sys.exit(f"FAIL {stem}: its loss is {loss}, not cross-entropy")
    args = [memfit_run, os.path.join(models, stem + ".onnx"), "--gradients",
            "--loss=cross-entropy", "--device=host"]
    args += input_args(inputs, workdir) + extra
    chunked_dir = os.path.join(workdir, "chunked")
    whole_dir = os.path.join(workdir, "whole")
    chunked = run(args + [chunk], chunked_dir)
    whole = run(args + ["--no-chunked-loss"], whole_dir)
    failures = []
    kernels = [line for line in (chunked, whole) for line in
               line.splitlines() if line.startswith("compiled ")]
    print("\n".join(kernels))
    if len(kernels) == 2 and kernels[0].split(":")[1] == kernels[1].split(":")[1]:
        failures.append("the chunked step compiled like the whole one")
    # Gradients that are zero analytically (an attention key's bias, as
    # the references list them) are rounding noise in both: those are
    # measured against the largest gradient of all instead.
    zero = {"grad." + str(z) for z in np.load(os.path.join(
        models, f"{stem}_grads.npz"))["zero_grad"]}
    names = [f for f in sorted(os.listdir(whole_dir))
             if f == "loss.npy" or f.startswith("grad.")]
    largest = max(float(np.max(np.abs(np.load(os.path.join(whole_dir, f)))))
                  for f in names if f.startswith("grad."))
    worst, worst_key = 0.0, None
    for f in names:
        a = np.load(os.path.join(chunked_dir, f)).astype(np.float64)
        b = np.load(os.path.join(whole_dir, f)).astype(np.float64)
        scale = largest if f[:-4] in zero else float(np.max(np.abs(b),
                                                             initial=0.0))
        err = float(np.max(np.abs(a - b), initial=0.0)) / max(scale, 1e-30)
        if err > worst:
            worst, worst_key = err, f[:-4]
        if not np.isfinite(err) or err > REL_TOL:
            failures.append(f"{f[:-4]}: relative difference {err:.2e}")
    print(f"{stem}: worst relative difference {worst:.2e} ({worst_key})")
    return report(stem, failures)


if __name__ == "__main__":
    sys.exit(main())
