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
                rows = r["rows"]
                get = lambda *keys: sum(rows.get(k, (0, 0))[0] for k in keys)
                frozen = get("frozen parameters", "weight codes",
                             "weight scales")
                everything[f"{name}/{remat}/{label}"] = r
                lines.append(
                    f"| {label} | {remat} | {r['params']:,} | "
                    f"{mib(get('parameters'))} | {mib(frozen)} | "
                    f"{mib(get('gradients', 'gradient accumulators'))} | "
                    f"{mib(get('optimizer states'))} | "
                    f"{mib(get('saved activations', 'recomputed activations', 'working copies', 'temporaries'))} | "
                    f"{mib(get('one allocation'))} |")
                print(lines[-1], flush=True)
        print("\n".join(lines), flush=True)
    with open(args.json, "w") as f:
        json.dump(everything, f, indent=1)


if __name__ == "__main__":
    main()
