#!/usr/bin/env python3
"""memfit-fuse changes how a step runs, not what it computes.

  check_fusion.py curve [--precision=bf16] MEMFIT_RUN MODELS WORKDIR [STEPS]
                  [FIXTURE...]
      Trains every fixture (train_refs_bf16.json's data and AdamW settings,
      fp32 unless --precision, 200 steps unless STEPS) twice, unfused and
      fused (the default): every step's loss within 1e-5 of the unfused run's
      (relative), and the fused
      step has fewer kernels and a plan at most 2% larger (the bytes live at
      each step are no more; the arena's first-fit packing of other buffers
      may differ). With bf16 compute a fused kernel keeps its intermediates
      in fp32 registers where the unfused steps round each to bf16, so the
      two runs differ by bf16's rounding: the fused run's losses must follow
      PyTorch's bf16 autocast curve (train_refs_bf16.json) within 1e-2, the
      bound of the unfused run in train-curve-bf16.test.

Prints one line per fixture with the kernel counts, the planned bytes and
the largest difference, then PASS or FAIL.
"""

import json
import os
import re
import sys

from memfit_test.check_training import (fixture_args, max_rel_diff,
                                        read_losses, report, run_pinned)

TOLERANCE = 1e-5
BF16_TOLERANCE = 1e-2  # against PyTorch's bf16 curve
PLAN_SLACK = 0.02


def kernels_and_bytes(stdout):
    kernels = re.search(r"compiled \S+: (\d+) kernels", stdout)
    plan = re.search(r"memory plan: ([\d,]+) bytes in one allocation", stdout)
    return (int(kernels.group(1)) if kernels else None,
            int(plan.group(1).replace(",", "")) if plan else None)


def curve(memfit_run, models, workdir, steps=None, *names, precision=None):
    settings = json.load(open(os.path.join(models, "train_refs_bf16.json")))
    names = names or list(settings["fixtures"])
    steps = int(steps or 200)
    bf16 = precision == "bf16"
    jobs = []
    for name in names:
        fixture = settings["fixtures"][name]["settings"]
        args = fixture_args(memfit_run, models, workdir, name, fixture, steps)
        # fixture_args asks for --quiet; the counts are on the first lines.
        args = [a for a in args if a != "--quiet"]
        if precision:
            args.append(f"--precision={precision}")
        for label, extra in (("unfused", ["--no-fuse"]), ("fused", [])):
            jobs.append(args + extra + [
                f"--losses={os.path.join(workdir, f'{name}.{label}.csv')}"])
    outputs = run_pinned(jobs)
    failures = []
    for i, name in enumerate(names):
        plain, fused = outputs[2 * i], outputs[2 * i + 1]
        (k0, b0), (k1, b1) = kernels_and_bytes(plain), kernels_and_bytes(fused)
        got = read_losses(os.path.join(workdir, f"{name}.fused.csv"))
        ref = read_losses(os.path.join(workdir, f"{name}.unfused.csv"))
        rel, step = max_rel_diff(got, ref)
        if bf16:
            torch16 = settings["fixtures"][name]["losses_bf16"][:steps]
            trel, tstep = max_rel_diff(got, torch16)
            print(f"{name}: kernels {k0} -> {k1}, plan {b0:,} -> {b1:,} bytes; "
                  f"bf16, max rel diff of the loss {trel:.2e} vs torch bf16 "
                  f"(step {tstep}, tolerance {BF16_TOLERANCE:.0e}), {rel:.2e} "
                  f"vs unfused (step {step}) over {steps} steps")
            if trel > BF16_TOLERANCE:
                failures.append(f"{name}: loss differs from torch bf16 by "
                                f"{trel:.2e} at step {tstep}")
        else:
            print(f"{name}: kernels {k0} -> {k1}, plan {b0:,} -> {b1:,} bytes; "
                  f"max rel diff of the loss {rel:.2e} (step {step}, tolerance "
                  f"{TOLERANCE:.0e}) over {steps} steps")
            if rel > TOLERANCE:
                failures.append(f"{name}: loss differs by {rel:.2e} at step {step}")
        if k1 is None or k0 is None or k1 >= k0:
            failures.append(f"{name}: fusion did not remove kernels")
        # Fusion never keeps more bytes live at a step, but the arena's
        # first-fit placement of a different set of buffers can pack a
        # little worse.
        if b1 is None or b0 is None or b1 > b0 * (1 + PLAN_SLACK):
            failures.append(f"{name}: the fused plan is larger by more than "
                            f"{PLAN_SLACK:.0%}")
    return report("fusion-curve", failures)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    options = {}
    while rest and rest[0].startswith("--precision="):
        options["precision"] = rest.pop(0).split("=", 1)[1]
    os.makedirs(rest[2], exist_ok=True)
    sys.exit({"curve": curve}[mode](*rest, **options))
