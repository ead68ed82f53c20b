#!/usr/bin/env python3
"""What a training step holds at long context, with memfit.attention and
the chunked loss and without them, for docs/benchmarks.md.

  bench/long-context.py [--seqs 512,2048,8192,32768] [--models small,7b]
                        [--budgets 8GiB,24GiB,80GiB]
                        [--json build/bench/long-context.json]

Models, written by bench/make_llama.py with --shapes-only into a temporary
directory (the figures come from shapes alone; the directory is deleted at
the end):
  - small: 4 layers, hidden 512, 8 heads, MLP 1,408, vocabulary 32,000
    (45.6 M parameters);
  - 7b: Llama-2-7B's shape (32 layers, hidden 4096, 32 heads, MLP 11,008,
    vocabulary 32,000).

For each model, batch 1, each sequence, fp32 and bf16, remat none and
checkpoint-layers, `memfit-run --plan-only` plans the AdamW training step
three ways: as memfit compiles it by default (memfit.attention and the
chunked loss), with --no-chunked-loss (attention alone), and with
--no-fused-attention --no-chunked-loss (the plan before either); the
script prints the memory report's categories in MiB. Then, for the small
model in bf16 with checkpoint-layers, the longest sequence (a multiple of
256, up to 2^20) whose planned step fits each budget, by default and
before, by bisection over plans.

PyTorch's side (eager with SDPA, with and without per-block
torch.utils.checkpoint) is not measured here yet: docs/benchmarks.md says
so.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, "build", "bin", "memfit-run")

VARIANTS = [
    ("both", []),
    ("attention only", ["--no-chunked-loss"]),
    ("neither", ["--no-fused-attention", "--no-chunked-loss"]),
]
MODELS = {
    "small": ["--layers", "4", "--hidden", "512", "--heads", "8",
              "--intermediate", "1408", "--vocab", "32000"],
    "7b": ["--preset", "7b"],
}
ROW = re.compile(r"^  (\S.*?)\s+([\d,]+)\s+([\d.]+)\s+([\d.]+)$")
CATEGORIES = ["weights", "optimizer states", "saved activations",
              "temporaries", "one allocation"]


def plan(model, seq, flags):
    """The report's top-level rows {name: bytes}, or {"error": why}."""
    args = [RUN, model, f"--input-shape=input_ids=1x{seq}", "--plan-only",
            "--train", "--loss=cross-entropy", "--optimizer=adamw"] + flags
    start = time.time()
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["exit status "
                                                     f"{done.returncode}"]
        return {"error": lines[-1], "seconds": time.time() - start}
    rows = {}
    for line in done.stdout.splitlines():
        m = ROW.match(line)
        if m:
            rows.setdefault(m.group(1), int(m.group(2).replace(",", "")))
    return {"rows": rows, "seconds": time.time() - start}


def mib(b):
    return f"{b / 2**20:,.1f}"


def longest(model, flags, budget_bytes, hi=1 << 20, step=256):
    """The longest multiple of `step` up to `hi` whose plan's one allocation
    fits `budget_bytes` (0 when none does)."""
    def fits(seq):
        r = plan(model, seq, flags)
        return "rows" in r and r["rows"]["one allocation"] <= budget_bytes
    lo, top = 0, hi // step
    while lo < top:
        mid = (lo + top + 1) // 2
        if fits(mid * step):
            lo = mid
        else:
            top = mid - 1
    return lo * step


def parse_size(text):
    units = {"GiB": 2**30, "GB": 10**9, "MiB": 2**20}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(float(text[:-len(unit)]) * factor)
    return int(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", default="512,2048,8192,32768")
    ap.add_argument("--models", default="small,7b")
    ap.add_argument("--budgets", default="8GiB,24GiB,80GiB")
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench",
                                                   "long-context.json"))
    args = ap.parse_args()
    seqs = [int(s) for s in args.seqs.split(",")]
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    work = tempfile.mkdtemp(prefix="memfit-long-context-")
    results = {}
    try:
        paths = {}
        for name in args.models.split(","):
            paths[name] = os.path.join(work, f"llama-{name}.onnx")
            subprocess.run([sys.executable,
                            os.path.join(ROOT, "bench", "make_llama.py"),
                            paths[name], "--shapes-only"] + MODELS[name],
                           check=True)
        for name, model in paths.items():
            print(f"\n{name}, batch 1, AdamW, MiB:\n")
            print("| seq | precision | remat | compiled with | " +
                  " | ".join(CATEGORIES) + " | plan time |")
            print("|---:|---|---|---|" + "---:|" * len(CATEGORIES) + "---:|")
            for seq in seqs:
                for precision in ["fp32", "bf16"]:
                    for remat in ["none", "checkpoint-layers"]:
                        for attention, extra in VARIANTS:
                            flags = [f"--precision={precision}",
                                     f"--remat={remat}"] + extra
                            r = plan(model, seq, flags)
                            key = f"{name}/{seq}/{precision}/{remat}/{attention}"
                            results[key] = r
                            head = f"| {seq} | {precision} | {remat} | {attention} |"
                            if "error" in r:
                                print(head + f" {r['error']} |" +
                                      " |" * len(CATEGORIES), flush=True)
                                continue
                            print(head + " " + " | ".join(
                                mib(r["rows"].get(c, 0)) for c in CATEGORIES) +
                                  f" | {r['seconds']:.1f} s |", flush=True)
        if "small" in paths:
            print("\nsmall, bf16, checkpoint-layers: the longest sequence "
                  "that fits\n")
            print("| budget | both | neither |")
            print("|---|---:|---:|")
            for budget in args.budgets.split(","):
                row = []
                for extra in [VARIANTS[0][1], VARIANTS[2][1]]:
                    flags = ["--precision=bf16",
                             "--remat=checkpoint-layers"] + extra
                    row.append(longest(paths["small"], flags,
                                       parse_size(budget)))
                results[f"longest/{budget}"] = row
                print(f"| {budget} | {row[0]:,} | {row[1]:,} |", flush=True)
    finally:
        shutil.rmtree(work)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
