#!/usr/bin/env python3
"""Gradients of a fixture with activations saved compressed, against PyTorch.

  check_compressed_grads.py MEMFIT_RUN MODELS_DIR NAME EXPORTER WORKDIR

Runs memfit_test.check_grads (PyTorch autograd references) with
`--remat=auto --activation-fraction=0.5 --compress-activations` and the
remat report written to a file. Saving a value as int8 codes with one
absmax per 256 values changes it by up to half a code step, 1/254 of its
block's largest magnitude, so the gradients are bounded at 5e-2 of each
tensor's largest element (max_rel), 1e-3 of the largest gradient for
those that are zero analytically, and the loss at 1e-4 (the forward pass
reads the whole values). The report must show values saved compressed.

Prints the report's figures, the worst max_rel and norm_rel over the
gradients, and `PASS NAME_EXPORTER` or FAIL lines.
"""

import os
import re
import subprocess
import sys

from memfit_test.check_training import report
from memfit_test.remat_report import parse

MAX_REL = 5e-2
ZERO_TOL = 1e-3
LOSS_REL = 1e-4
FLAGS = ["--device=host", "--remat=auto", "--activation-fraction=0.5",
         "--compress-activations"]


def main():
    memfit_run, models, name, exporter, workdir = sys.argv[1:]
    stem = f"{name}_{exporter}"
    os.makedirs(workdir, exist_ok=True)
    report_path = os.path.join(workdir, "remat.report")
    args = [sys.executable, "-m", "memfit_test.check_grads", memfit_run,
            models, name, exporter, os.path.join(workdir, "out"),
            f"--rel-tol={MAX_REL}", f"--zero-abs-tol={ZERO_TOL}", "--"]
    args += FLAGS + [f"--remat-report={report_path}"]
    run = subprocess.run(args, capture_output=True, text=True)
    failures = []
    if run.returncode != 0 or "PASS" not in run.stdout:
        failures.append(f"check_grads failed\n{run.stdout}{run.stderr}")
        return report(stem, failures)
    rels = [float(x) for x in re.findall(r"max_rel (\S+)", run.stdout)]
    norms = [float(x) for x in re.findall(r"norm_rel (\S+)", run.stdout)]
    loss = re.search(r"^loss .* rel (\S+)$", run.stdout, re.MULTILINE)
    loss_rel = float(loss.group(1)) if loss else float("inf")
    if loss_rel > LOSS_REL:
        failures.append(f"loss differs by {loss_rel:.2e}")
    figures = parse(open(report_path).read())
    if not figures["compressed"]:
        failures.append("the report shows nothing saved compressed")
    print(f"{stem}: {figures['compressed']} compressed, "
          f"{figures['recomputed']} recomputed, activations "
          f"{figures['activation_none']} -> {figures['activation']} bytes, "
          f"extra FLOPs {figures['extra_flops_pct']:.2f}%; gradients: worst "
          f"max_rel {max(rels):.2e}, worst norm_rel {max(norms):.2e}; loss "
          f"rel {loss_rel:.2e}")
    return report(stem, failures)


if __name__ == "__main__":
    sys.exit(main())
