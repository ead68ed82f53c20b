#!/usr/bin/env python3
"""Training losses of every ONNX fixture on two builds of memfit-run's host
backend, side by side: the largest difference, for a change to how the host
backend runs kernels that must leave the numerics alone (issue 36).

  python3 scripts/host-losses.py OLD/memfit-run NEW/memfit-run [--steps 10]

Each fixture trains --steps AdamW steps (cross-entropy, the same seed, so
the same random inputs and labels), unfused and with --fuse; each build has
a cache directory of its own. Prints one row per fixture and mode: the
steps whose losses are equal to the bit, and the largest absolute and
relative difference.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each fixture and the classes of its cross-entropy (random ids and labels
# are drawn below it).
FIXTURES = {"gpt_ts": 64, "gpt_dynamo": 64, "gpt_dropout_ts": 64,
            "bert_ts": 3, "bert_dynamo": 3, "llama_ts": 64,
            "llama_dynamo": 64}


def losses(binary, model, fuse, steps, cache):
    cmd = [binary, os.path.join(ROOT, "test", "models", model + ".onnx"),
           "--device=host", "--input-shape=batch=2,seq=16", "--train",
           "--loss=cross-entropy", f"--steps={steps}", "--seed=7",
           f"--int-high={FIXTURES[model]}"]
    if not fuse:
        cmd.append("--no-fuse")
    env = dict(os.environ, MEMFIT_CACHE_DIR=cache, MEMFIT_HOST_THREADS="2")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return [float(x) for x in re.findall(r"^step \d+/\d+ loss (\S+)",
                                         out.stdout, re.M)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="memfit-host-losses-")
    print("| fixture | fused | steps equal | largest difference | relative |")
    print("|---|---|---:|---:|---:|")
    worst = 0.0
    for model in FIXTURES:
        for fuse in (False, True):
            a = losses(args.old, model, fuse, args.steps, work + "/old")
            b = losses(args.new, model, fuse, args.steps, work + "/new")
            if len(a) != args.steps or len(b) != args.steps:
                sys.exit(f"{model}: expected {args.steps} losses")
            equal = sum(x == y for x, y in zip(a, b))
            diff = max(abs(x - y) for x, y in zip(a, b))
            rel = max(abs(x - y) / max(abs(x), 1e-30) for x, y in zip(a, b))
            worst = max(worst, rel)
            print(f"| {model} | {'yes' if fuse else 'no'} | {equal} of "
                  f"{args.steps} | {diff:.3g} | {rel:.3g} |", flush=True)
    print(f"\nlargest relative difference: {worst:.3g}")


if __name__ == "__main__":
    main()
