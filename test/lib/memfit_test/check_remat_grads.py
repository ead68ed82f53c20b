#!/usr/bin/env python3
"""Gradients of a fixture with every remat policy against those without.

  check_remat_grads.py MEMFIT_RUN MODELS_DIR NAME EXPORTER WORKDIR

Runs memfit_test.check_grads (PyTorch references, 1e-4
relative) once with --remat=none and once per policy (checkpoint-layers;
auto and optimal keeping half of the activation memory), each with
--remat-report written to a file (optimal keeps 80%: its ILP needs
seconds to tens of seconds on the fixtures). A policy passes when its gradients and
loss equal those without remat within 1e-6 of the largest element (a
recomputation runs the same kernels on the same inputs, so they are
expected to be identical) and its report shows that it recomputed
something. Prints one line per policy and `PASS NAME_EXPORTER` or FAIL.
"""

import os
import subprocess
import sys

import numpy as np

from memfit_test.check_training import report
from memfit_test.remat_report import parse

POLICIES = {
    "none": ["--remat=none"],
    "checkpoint-layers": ["--remat=checkpoint-layers"],
    "auto": ["--remat=auto", "--activation-fraction=0.5"],
    "optimal": ["--remat=optimal", "--activation-fraction=0.8"],
}


def run_policy(memfit_run, models, name, exporter, workdir, policy):
    out = os.path.join(workdir, policy)
    report = os.path.join(workdir, policy + ".report")
    args = [sys.executable, "-m", "memfit_test.check_grads", memfit_run,
            models, name, exporter, out, "--", "--device=host",
            f"--remat-report={report}"]
    args += POLICIES[policy]
    run = subprocess.run(args, capture_output=True, text=True)
    return run, out, report


def main():
    memfit_run, models, name, exporter, workdir = sys.argv[1:]
    stem = f"{name}_{exporter}"
    failures = []
    base = None
    for policy in POLICIES:
        run, out, report_path = run_policy(memfit_run, models, name,
                                           exporter, workdir, policy)
        if run.returncode != 0 or "PASS" not in run.stdout:
            failures.append(f"{policy}: check_grads failed\n{run.stdout}"
                            f"{run.stderr}")
            continue
        figures = parse(open(report_path).read())
        recomputed = figures["recomputed"]
        if None in (recomputed, figures["extra_flops_pct"],
                    figures["activation"]):
            failures.append(f"{policy}: no totals in the report")
            continue
        if policy == "none" and recomputed:
            failures.append("none recomputed something")
        if policy != "none" and not recomputed:
            failures.append(f"{policy}: recomputed nothing")
        files = sorted(f for f in os.listdir(out)
                       if f.endswith(".npy") and not f.startswith("in."))
        worst = 0.0
        if base is None:
            base = (out, files)
        else:
            if files != base[1]:
                failures.append(f"{policy}: produced {files}, not {base[1]}")
            for f in base[1]:
                a = np.load(os.path.join(base[0], f)).astype(np.float64)
                b = np.load(os.path.join(out, f)).astype(np.float64)
                scale = max(float(np.max(np.abs(a))), 1e-30)
                worst = max(worst, float(np.max(np.abs(a - b))) / scale)
            if worst > 1e-6:
                failures.append(f"{policy}: differs from no remat by "
                                f"{worst:.2e}")
        print(f"{policy}: {recomputed} recomputed, activations "
              f"{figures['activation_none']} -> {figures['activation']} "
              f"bytes, extra FLOPs {figures['extra_flops_pct']:.2f}%, max "
              f"difference from none {worst:.2e}")
    return report(stem, failures)


if __name__ == "__main__":
    sys.exit(main())
