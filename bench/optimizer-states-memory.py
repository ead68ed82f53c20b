#!/usr/bin/env python3
"""Optimizer-state bytes of AdamW with fp32 and with 8-bit states
(--optimizer=adamw8bit), and frozen weights stored quantized
(--quantize-weights), for docs/benchmarks.md.

  bench/optimizer-states-memory.py [--models gpt12,gpt2-small]
                                   [--precisions fp32,bf16]

For each model (bench/precision-memory.py's: gpt12, 10.7M parameters at
4 x 128, and GPT-2 small, 124M at 4 x 512) and precision it compiles the
training step with remat none twice, --optimizer=adamw and
--optimizer=adamw8bit, and prints a markdown table of the memory report's
optimizer states (bytes and bytes per trainable parameter), weights region
and one allocation. A second table freezes every matmul weight
(--frozen='h*.w', QLoRA's setting without the adapters) and stores them as
imported, nf4, nf4 with double quantization, fp4 and int8: the frozen
bytes, the weights region, the arena peak (which holds the dequantized
weight of the contraction that runs) and the one allocation. Nothing runs:
the figures are the compiler's plan.
"""

import argparse
import importlib.util
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "precision_memory", os.path.join(HERE, "precision-memory.py"))
pm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pm)

ROWS = ["optimizer states", "weights region", "one allocation"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(pm.MODELS))
    ap.add_argument("--precisions", default="fp32,bf16")
    args = ap.parse_args()
    print("| model | precision | optimizer | " + " | ".join(ROWS) + " |")
    print("|---|---|---|" + "---:|" * len(ROWS))
    for name in args.models.split(","):
        path, shape, make = pm.MODELS[name]
        if not os.path.exists(os.path.join(pm.ROOT, path)):
            subprocess.run([pm.PY, os.path.join(HERE, "make_gpt2_small.py"),
                            os.path.join(pm.ROOT, path)] + make, check=True)
        for precision in args.precisions.split(","):
            base = None
            for optimizer in ("adamw", "adamw8bit"):
                rows = pm.report(path, shape, precision, "none",
                                 optimizer)["rows"]
                cells = []
                for row in ROWS:
                    value, per = rows[row]
                    text = f"{value:,} ({per:.2f} B/p)"
                    if base and row != "weights region":
                        text += f", {value / base[row][0]:.2f}x"
                    cells.append(text)
                print(f"| {name} | {precision} | {optimizer} | " +
                      " | ".join(cells) + " |", flush=True)
                base = base or rows
    print()
    weights(args.models.split(","))


WEIGHT_ROWS = ["frozen parameters", "weights region", "arena peak",
               "one allocation"]


def weights(models):
    print("| model | frozen matmul weights | " + " | ".join(WEIGHT_ROWS) + " |")
    print("|---|---|" + "---:|" * len(WEIGHT_ROWS))
    for name in models:
        path, shape, _ = pm.MODELS[name]
        base = None
        for label, extra in (("fp32", []), ("nf4", ["--quantize-weights=nf4"]),
                             ("nf4 + double-quant",
                              ["--quantize-weights=nf4", "--double-quant"]),
                             ("fp4", ["--quantize-weights=fp4"]),
                             ("int8", ["--quantize-weights=int8"])):
            got = pm.report(path, shape, "fp32", "none", "adamw",
                            ["--frozen=h*.w"] + extra, subrows=True)
            rows = got["rows"]
            cells = []
            for row in WEIGHT_ROWS:
                value = rows[row][0]
                text = f"{value:,}"
                if base:
                    text += f" ({value / base[row][0]:.2f}x)"
                cells.append(text)
            print(f"| {name} | {label} | " + " | ".join(cells) + " |", flush=True)
            base = base or rows


if __name__ == "__main__":
    main()
