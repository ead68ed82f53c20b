#!/usr/bin/env python3
"""Training under memfit-remat against training without it.

  check_remat_train.py MEMFIT_RUN MODELS_DIR WORKDIR

Trains gpt_ts for 3 optimizer steps of 2 accumulated micro-batches with
wpe.* frozen (SGD with momentum), once with --remat=none and once with
--remat=auto keeping half of the activation memory. The losses must be
identical, the remat run must have recomputed something, and the total
that the remat report plans (weights + arena) must equal the bytes the
runtime allocated. Prints the figures and PASS or FAIL lines.
"""

import os
import re
import subprocess
import sys


def train(memfit_run, models, workdir, tag, extra):
    losses = os.path.join(workdir, f"{tag}.csv")
    args = [memfit_run, os.path.join(models, "gpt_ts.onnx"), "--train",
            "--device=host", "--loss=cross-entropy", "--optimizer=sgd",
            "--momentum=0.9", "--lr=0.05", "--accumulate=2",
            "--frozen=wpe.*", "--input-shape=input_ids=2x16",
            f"--corpus={os.path.join(models, 'corpus.txt')}", "--steps=3",
            f"--losses={losses}"] + extra
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode:
        print(f"FAIL {tag}: exit {run.returncode}\n{run.stdout}{run.stderr}")
        sys.exit(1)
    return run.stdout, open(losses).read()


def main():
    memfit_run, models, workdir = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    failures = []
    _, base = train(memfit_run, models, workdir, "none", ["--remat=none"])
    out, remat = train(memfit_run, models, workdir, "auto",
                       ["--remat=auto", "--activation-fraction=0.5",
                        "--remat-report"])
    if base != remat:
        failures.append(f"losses differ:\n{base}\nvs\n{remat}")
    totals = re.search(r"(\d+) recomputed \(", out)
    planned = re.search(r"planned: weights \d+ \+ arena \d+ = (\d+) bytes", out)
    allocated = re.search(r"allocated: ([\d,]+) bytes", out)
    if not (totals and planned and allocated):
        failures.append("no report or allocation line:\n" + out)
    else:
        recomputed = int(totals.group(1))
        planned_bytes = int(planned.group(1))
        allocated_bytes = int(allocated.group(1).replace(",", ""))
        print(f"recomputed {recomputed}, planned {planned_bytes}, "
              f"allocated {allocated_bytes}")
        if recomputed == 0:
            failures.append("nothing recomputed")
        if planned_bytes != allocated_bytes:
            failures.append(f"planned {planned_bytes} != allocated "
                            f"{allocated_bytes}")
    print("losses:", " ".join(l.split(",")[1] for l in
                              remat.strip().splitlines()[1:]))
    for failure in failures:
        print("FAIL", failure)
    if not failures:
        print("PASS remat-train")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
