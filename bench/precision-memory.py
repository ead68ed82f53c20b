#!/usr/bin/env python3
"""Bytes of a training step by category in fp32, bf16 and fp16 (the memory
report of memfit-run --compile-only --memory-report), for docs/benchmarks.md.

  bench/precision-memory.py [--models gpt12,gpt2-small] [--remat none,...]
                            [--json build/bench/precision-memory.json]

For each model and remat policy it compiles the AdamW training step three
times (--precision=fp32, --bf16, --fp16; fp16 adds dynamic loss scaling)
and prints a markdown table per model: the bytes and bytes per trainable
parameter of each category of the report, and the activations (saved +
working copies + temporaries at the arena's peak) of bf16 and fp16 as a
fraction of fp32's. Nothing runs: the figures are the compiler's plan.

Models (written by bench/make_gpt2_small.py when missing):
  gpt12       12 layers, d=256, 4 heads, vocabulary 4096 (10.7M
              parameters), batch 4 x 128 (bench/remat-table.py's)
  gpt2-small  12 layers, d=768, 12 heads, vocabulary 50257 (124M
              parameters, tied head), batch 4 x 512 (where the forward pass
              holds the peak; at bench/train-step.sh's 1 x 128 the peak is
              the gradients at the end of the backward pass)
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(ROOT, ".venv", "bin", "python")
RUN = os.path.join(ROOT, "build", "bin", "memfit-run")

MODELS = {
    "gpt12": ("build/bench/gpt12-d256.onnx", "input_ids=4x128",
              ["--layers", "12", "--hidden", "256", "--heads", "4",
               "--vocab", "4096", "--positions", "512"]),
    "gpt2-small": ("build/bench/gpt2-small.onnx", "input_ids=4x512", []),
}
PRECISIONS = ["fp32", "bf16", "fp16"]
# Report rows (indent 2: groups), in the report's order.
ROW = re.compile(r"^  (\S.*?)\s+([\d,]+)\s+([\d.]+)\s+([\d.]+)$")
SUBROW = re.compile(r"^ {2,}(\S.*?)\s+([\d,]+)\s+([\d.]+)\s+([\d.]+)$")


def report(model, shape, precision, remat, optimizer="adamw", extra=(),
           subrows=False):
    """The report's rows {name: (bytes, B/param)}: the groups, and with
    `subrows` the rows under them whose names no group has."""
    args = [RUN, os.path.join(ROOT, model), "--input-shape=" + shape,
            "--train", "--loss=cross-entropy", "--optimizer=" + optimizer,
            *extra,
            "--compile-only", "--memory-report", "--quiet",
            "--precision=" + precision, "--remat=" + remat]
    start = time.time()
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)}\n{done.stdout}{done.stderr}")
    rows = {}
    for line in done.stdout.splitlines():
        m = (SUBROW if subrows else ROW).match(line)
        if m:
            rows.setdefault(m.group(1), (int(m.group(2).replace(",", "")),
                                         float(m.group(4))))
    params = re.search(r"([\d,]+) trainable parameters", done.stdout)
    return {"rows": rows, "params": int(params.group(1).replace(",", "")),
            "seconds": time.time() - start}


def activations(rows):
    return sum(rows.get(name, (0, 0))[0]
               for name in ("saved activations", "working copies",
                            "temporaries", "recomputed activations"))


def table(name, remat, results):
    names = []
    for precision in PRECISIONS:
        for row in results[precision]["rows"]:
            if row not in names:
                names.append(row)
    out = [f"{name}, remat={remat}, "
           f"{results['fp32']['params']:,} trainable parameters:", "",
           "| category | " + " | ".join(PRECISIONS) + " |",
           "|---|" + "---:|" * len(PRECISIONS)]
    for row in names:
        cells = []
        for precision in PRECISIONS:
            value = results[precision]["rows"].get(row)
            cells.append(f"{value[0]:,} ({value[1]:.2f} B/p)" if value
                         else "-")
        out.append(f"| {row} | " + " | ".join(cells) + " |")
    saved = [results[p]["rows"].get("saved activations", (0, 0))[0]
             for p in PRECISIONS]
    out.append("| saved activations against fp32 | " +
               " | ".join(f"{v / saved[0]:.2f}x" if saved[0] else "-"
                          for v in saved) + " |")
    base = activations(results["fp32"]["rows"])
    cells = [f"{activations(results[p]['rows']):,} "
             f"({activations(results[p]['rows']) / base:.2f}x)"
             for p in PRECISIONS]
    out.append("| activations at the peak (saved + working copies + "
               "temporaries + recomputed) | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--remat", default="none")
    ap.add_argument("--json", default=os.path.join(
        ROOT, "build", "bench", "precision-memory.json"))
    args = ap.parse_args()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    everything = {}
    for name in args.models.split(","):
        path, shape, make = MODELS[name]
        if not os.path.exists(os.path.join(ROOT, path)):
            subprocess.run([PY, os.path.join(ROOT, "bench",
                                             "make_gpt2_small.py"),
                            os.path.join(ROOT, path)] + make, check=True)
        for remat in args.remat.split(","):
            results = {p: report(path, shape, p, remat) for p in PRECISIONS}
            everything[f"{name}/{remat}"] = results
            print(table(name, remat, results), flush=True)
    with open(args.json, "w") as f:
        json.dump(everything, f, indent=1)


if __name__ == "__main__":
    main()
