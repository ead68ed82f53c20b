#!/usr/bin/env python3
"""Bytes by category of full fine-tuning, LoRA and QLoRA, for docs/benchmarks.md.

  bench/lora-memory.py [--models gpt12,gpt2-small] [--remat none,checkpoint-layers]

For each model (bench/precision-memory.py's: gpt12, 10.7M parameters at
4 x 128, and GPT-2 small, 124M at 4 x 512) and remat policy it compiles the
AdamW training step as full fine-tuning (fp32), LoRA on every linear layer
of the transformer blocks (--lora-targets=all-linear, alpha = 2r) at ranks
8, 16 and 64 (fp32), and QLoRA (rank 16, the frozen base in NF4 with double
quantization, compute in bf16), and prints a markdown table of the memory
report: trainable parameters and their share, the weights region's
parameters, frozen weights (fp32, or NF4 codes + scales), gradients,
optimizer states, activations (saved, recomputed, working copies and
temporaries at the arena's peak) and the one allocation. Nothing runs: the
figures are the compiler's plan.
"""

import argparse
import importlib.util
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "precision_memory", os.path.join(HERE, "precision-memory.py"))
pm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pm)


def lora(rank):
    return ["--lora-rank=%d" % rank, "--lora-alpha=%d" % (2 * rank),
            "--lora-targets=all-linear"]


CONFIGS = [
    ("full fine-tuning", "fp32", []),
    ("LoRA r=8", "fp32", lora(8)),
    ("LoRA r=16", "fp32", lora(16)),
    ("LoRA r=64", "fp32", lora(64)),
    ("QLoRA r=16 (NF4 + double quant, bf16)", "bf16",
     lora(16) + ["--quantize-weights=nf4", "--double-quant"]),
]


# The table's columns: groups of the memory report's rows.
COLUMNS = [
    ("parameters", ("parameters",)),
    ("frozen weights", ("frozen parameters", "weight codes", "weight scales")),
    ("gradients", ("gradients", "gradient accumulators")),
    ("optimizer states", ("optimizer states",)),
    ("activations", ("saved activations", "recomputed activations",
                     "working copies", "temporaries")),
    ("one allocation", ("one allocation",)),
]


def column_bytes(rows):
    """The bytes of each of COLUMNS from the report's rows ({name: bytes}
    or {name: (bytes, B/param)})."""
    def value(v):
        return v[0] if isinstance(v, tuple) else v
    return [sum(value(rows.get(k, 0)) for k in keys) for _, keys in COLUMNS]


def mib(b):
    return f"{b / 2**20:,.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(pm.MODELS))
    ap.add_argument("--remat", default="none,checkpoint-layers")
    ap.add_argument("--json", default=os.path.join(
        pm.ROOT, "build", "bench", "lora-memory.json"))
    args = ap.parse_args()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    everything = {}
    for name in args.models.split(","):
        path, shape, make = pm.MODELS[name]
        if not os.path.exists(os.path.join(pm.ROOT, path)):
            subprocess.run([pm.PY, os.path.join(HERE, "make_gpt2_small.py"),
                            os.path.join(pm.ROOT, path)] + make, check=True)
        lines = [f"\n{name} ({shape}), AdamW, MiB:\n",
                 "| configuration | remat | trainable | parameters | frozen "
                 "weights | gradients | optimizer states | activations | one "
                 "allocation |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for remat in args.remat.split(","):
            for label, precision, flags in CONFIGS:
                r = pm.report(path, shape, precision, remat, extra=flags,
                              subrows=True)
                everything[f"{name}/{remat}/{label}"] = r
                lines.append(
                    f"| {label} | {remat} | {r['params']:,} | " +
                    " | ".join(mib(b) for b in column_bytes(r["rows"])) + " |")
                print(lines[-1], flush=True)
        print("\n".join(lines), flush=True)
    with open(args.json, "w") as f:
        json.dump(everything, f, indent=1)


if __name__ == "__main__":
    main()
