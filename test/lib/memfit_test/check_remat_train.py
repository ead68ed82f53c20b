#!/usr/bin/env python3
"""Training under memfit-remat against training without it.

  check_remat_train.py MEMFIT_RUN MODELS_DIR WORKDIR

Trains gpt_ts for 3 optimizer steps of 2 accumulated micro-batches with
wpe.* frozen (SGD with momentum), once with --remat=none and once with
--remat=auto keeping half of the activation memory. The losses must be
identical, the remat run must have recomputed something, and the total
that the remat report plans (weights + arena; after memfit-fuse, which
fuses the step remat planned) must equal the bytes the runtime allocated. Prints the figures and PASS or FAIL lines.
"""

import os
import re
import sys

from memfit_test.check_training import report, run, train_args
from memfit_test.remat_report import parse


def train(memfit_run, models, workdir, tag, extra):
    losses = os.path.join(workdir, f"{tag}.csv")
    out = run(train_args(memfit_run, models, 2, 16, 3, [
        "--optimizer=sgd", "--momentum=0.9", "--lr=0.05", "--accumulate=2",
        "--frozen=wpe.*", f"--losses={losses}"] + extra))
    return out, open(losses).read()


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
    # The compiler's report is printed before the tool's own lines.
    order = [out.find(text) for text in
             ("remat report for", "compiled ", "step 1/")]
    if -1 in order or order != sorted(order):
        failures.append("the remat report, the compile line and the steps "
                        "are out of order:\n" + out)
    figures = parse(out)
    # A fused step (the default) is allocated as memfit-fuse planned it.
    recomputed = figures["recomputed"]
    planned_bytes = figures["planned_fused"] or figures["planned"]
    allocated = re.search(r"allocated: ([\d,]+) bytes", out)
    if recomputed is None or planned_bytes is None or not allocated:
        failures.append("no report or allocation line:\n" + out)
    else:
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
    return report("remat-train", failures)


if __name__ == "__main__":
    sys.exit(main())
