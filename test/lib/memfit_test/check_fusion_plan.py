#!/usr/bin/env python3
"""memfit-fuse never makes the plan larger (passes.md, memfit-fuse).

  check_fusion_plan.py MEMFIT_RUN MODEL SHAPE

Plans MODEL's training step (cross-entropy, AdamW) fused (the default) and
with --no-fuse, in fp32 and bf16, with remat none and checkpoint-layers,
on one rank and as one of 8 (ZeRO stages 0 and 2, --plan-only): the fused
plan is at most 2% over the unfused one's in every configuration (the
slack memfit-fuse allows first-fit packing), and has at most half its
kernels. Prints each configuration's figures and PASS or FAIL lines.
"""

import re
import subprocess
import sys

from memfit_test.check_training import report


def plan(memfit_run, model, shape, flags):
    done = subprocess.run([memfit_run, model, f"--input-shape={shape}",
                           "--plan-only", "--train", "--loss=cross-entropy",
                           "--optimizer=adamw"] + flags,
                          capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise SystemExit(f"FAIL fusion-plan: {flags}\n{done.stderr}")
    out = done.stdout + done.stderr
    bytes_ = int(re.search(r"memory plan: ([\d,]+) bytes", out)
                 .group(1).replace(",", ""))
    kernels = int(re.search(r": (\d+) kernels", out).group(1))
    return bytes_, kernels, "fused again" in out


def main():
    memfit_run, model, shape = sys.argv[1:]
    failures = []
    for precision in ("fp32", "bf16"):
        for remat in ("none", "checkpoint-layers"):
            for ranks, zero in ((1, 0), (8, 0), (8, 2)):
                flags = [f"--precision={precision}", f"--remat={remat}"]
                if ranks > 1:
                    flags += [f"--world-size={ranks}", f"--zero={zero}"]
                fb, fk, again = plan(memfit_run, model, shape, flags)
                ub, uk, _ = plan(memfit_run, model, shape,
                                 flags + ["--no-fuse"])
                label = " ".join(flags)
                print(f"{label}: fused {fb:,} bytes, {fk} kernels; unfused "
                      f"{ub:,} bytes, {uk} kernels"
                      f"{' (fused again, strictly)' if again else ''}")
                if fb > ub * 1.02:
                    failures.append(f"{label}: fused plan {fb:,} > {ub:,}")
                if 2 * fk > uk:
                    failures.append(f"{label}: {fk} kernels fused, {uk} not")
    return report("fusion-plan", failures)


if __name__ == "__main__":
    sys.exit(main())
