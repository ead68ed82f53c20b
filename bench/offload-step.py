#!/usr/bin/env python3
"""ZeRO-Offload's step on the host backend, side by side.

GPT-2 small (1 x 128, AdamW, fp32) trained for a few steps in three
configurations, interleaved over several rounds on this noisy machine:

  device      the states and masters on the device (no offload)
  overlap     --offload=optimizer: masters and states in host memory, the
              update on the host's task thread beside the device's steps
  in-step     --offload=optimizer --no-host-overlap: the same update, run in
              its step (what the overlap hides)

The "device" is the host backend's one worker thread (--host-threads=1), so
the host's update has the second core to itself. Reports the median ms/step
of each, the device's allocation, and the device's wait for the updates a
step: with the overlap off that wait is the updates' whole cost on the host
cores; with it on, the part the overlap did not hide. The gradients' copies
to host memory run on the copy queue's thread (with the overlap off, in
the step): their column is the device's wait for them.

    .venv/bin/python bench/offload-step.py [--rounds 3] [--steps 6]
"""
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interleaved  # noqa: E402

CONFIGS = {
    "device": [],
    "overlap": ["--offload=optimizer"],
    "in-step": ["--offload=optimizer", "--no-host-overlap"],
}


def run(model, steps, flags):
    out = subprocess.run(interleaved.train_command(model, steps, flags),
                         check=True, capture_output=True, text=True).stdout
    return (interleaved.step_ms(out),
            interleaved.number(r"^host updates.*waited ([0-9.]+) ms a step",
                               out),
            interleaved.number(r"^allocated: ([0-9,]+) bytes", out, int),
            interleaved.number(r"^copies to and from host memory.*waited "
                               r"([0-9.]+) ms a step", out),
            interleaved.last_loss(out))


def main():
    args = interleaved.arguments(__doc__, rounds=3, steps=6)
    results, losses = interleaved.interleave(
        CONFIGS, lambda flags: run(args.model, args.steps, flags), args.rounds)
    print(f"GPT-2 small 1 x 128, AdamW, {args.rounds} rounds of "
          f"{args.steps} steps; last losses {sorted(losses)}")
    print("| configuration | ms/step (median of rounds) | device waited for "
          "the updates, ms/step | device waited for the gradients' copies, "
          "ms/step | device allocation |")
    print("|---|---:|---:|---:|---:|")
    for name, rs in results.items():
        print(f"| {name} | {statistics.median(r[0] for r in rs):.1f} | "
              f"{statistics.median(r[1] for r in rs):.1f} | "
              f"{statistics.median(r[3] for r in rs):.1f} | {rs[0][2]:,} |")
    cost = statistics.median(r[1] for r in results["in-step"])
    left = statistics.median(r[1] for r in results["overlap"])
    if cost > 0:
        print(f"the updates take {cost:.1f} ms a step on the host's thread; "
              f"the overlap hides {cost - left:.1f} ms of it "
              f"({100 * (cost - left) / cost:.0f}%)")
    return 0 if len(losses) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
