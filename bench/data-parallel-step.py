#!/usr/bin/env python3
"""Data parallel steps on the host backend, side by side: gradients
all-reduced in buckets (--bucket, 25 MiB by default) or one by one
(--bucket=0), with the collectives on a thread of their own beside the
backward (the default, MPI serialized) or each in its step
(--no-host-overlap).

GPT-2 small, 2 ranks under mpirun on this machine's 2 cores, one worker
thread a rank (--host-threads=1), batch 1 x 128 a rank, AdamW, fp32,
interleaved over several rounds on this noisy machine. Reports the median
ms/step of rank 0, the collectives a step, and the seconds a step the
steps waited for the collectives (memfit-run's line after training).

    .venv/bin/python bench/data-parallel-step.py [--rounds 2] [--steps 5]
"""
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interleaved  # noqa: E402

CONFIGS = {
    # memfit-run's default on the host backend is one by one: buckets are
    # asked for (DDP's 25 MiB, the GPUs' default).
    "buckets, beside the backward": ["--bucket=25MiB"],
    "buckets, in the step": ["--bucket=25MiB", "--no-host-overlap"],
    "one by one, beside the backward": ["--bucket=0"],
    "one by one, in the step": ["--bucket=0", "--no-host-overlap"],
}
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1",
           "OMPI_MCA_hwloc_base_binding_policy": "none",
           "OMPI_MCA_btl": "self,vader"}


def run(model, steps, flags):
    cmd = ["mpirun", "-np", "2"] + interleaved.train_command(model, steps,
                                                             flags)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=dict(os.environ, **MPI_ENV)).stdout
    return (interleaved.step_ms(out),
            interleaved.number(r"(\d+) collectives", out, int),
            interleaved.number(r"waited ([0-9.]+) ms a step for the "
                               r"collectives", out),
            interleaved.last_loss(out))


def main():
    args = interleaved.arguments(__doc__, rounds=2, steps=5)
    results, losses = interleaved.interleave(
        CONFIGS, lambda flags: run(args.model, args.steps, flags), args.rounds)
    print(f"GPT-2 small, 2 ranks x 1 x 128, AdamW, {args.rounds} rounds of "
          f"{args.steps} steps; last losses {sorted(losses)}")
    print("| gradients | ms/step (median) | collectives | waited for the "
          "collectives, ms/step |")
    print("|---|---:|---:|---:|")
    for name, rs in results.items():
        print(f"| {name} | {statistics.median(r[0] for r in rs):.1f} | "
              f"{rs[0][1]} | {statistics.median(r[2] for r in rs):.1f} |")
    return 0 if len(losses) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
