#!/usr/bin/env python3
"""What memfit predicts for fine-tuning a Llama-7B-shaped model, from shapes
alone, for docs/benchmarks.md.

  bench/plan-7b.py [--shape batch=4,seq=2048] [--budget 24GB]
                   [--json build/bench/plan-7b.json]

It writes bench/make_llama.py's 7B-shaped model (32 layers, hidden 4096, 32
heads, MLP 11008, vocabulary 32000: 6.74B parameters) with --shapes-only
into a temporary directory: the ONNX graph names an external weights file
that is never written. memfit-run --plan-only then compiles the AdamW
training step of each configuration (full fine-tuning in fp32; LoRA r=16 on
every linear layer of the blocks, fp32; QLoRA r=16 with the base in NF4 and
double quantization, compute in bf16) under remat none, checkpoint-layers
and auto with --budget, and the script prints a markdown table of the
memory report in GiB, with remat's extra FLOPs. A configuration that the
budget cannot hold prints why. The directory is deleted at the end.
"""

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The memory report's rows and the table's columns, as lora-memory.py's.
lm = load("lora_memory", "lora-memory.py")
pm = lm.pm
ROOT, RUN = pm.ROOT, pm.RUN
LORA = lm.lora(16)
CONFIGS = [
    ("full fine-tuning", ["--precision=fp32"]),
    ("LoRA r=16", LORA + ["--precision=fp32"]),
    ("QLoRA r=16 (NF4 + double quant, bf16)",
     LORA + ["--quantize-weights=nf4", "--double-quant", "--precision=bf16"]),
]


def gib(b):
    return f"{b / 2**30:,.2f}"


def plan(model, shape, flags):
    args = [RUN, model, "--input-shape=" + shape, "--plan-only", "--train",
            "--loss=cross-entropy", "--optimizer=adamw"] + flags
    start = time.time()
    done = subprocess.run(args, capture_output=True, text=True)
    seconds = time.time() - start
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1]
        return {"error": why.split("error: ", 1)[-1], "seconds": seconds}
    rows = {}
    for line in done.stdout.splitlines():
        m = pm.SUBROW.match(line)
        if m:
            rows.setdefault(m.group(1), int(m.group(2).replace(",", "")))
    params = re.search(r"([\d,]+) trainable parameters", done.stdout)
    extra = re.search(r"extra FLOPs: .*?\(([\d.]+)% of the step's ([\d.]+) "
                      r"GFLOP\)", done.stdout)
    return {"rows": rows, "params": int(params.group(1).replace(",", "")),
            "extra": float(extra.group(1)), "step_gflop": float(extra.group(2)),
            "seconds": seconds}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="batch=4,seq=2048")
    ap.add_argument("--budget", default="24GB")
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench",
                                                   "plan-7b.json"))
    args = ap.parse_args()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    work = tempfile.mkdtemp(prefix="memfit-plan-7b-")
    results = {}
    try:
        model = os.path.join(work, "llama-7b.onnx")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench",
                                                     "make_llama.py"),
                        model, "--preset", "7b", "--shapes-only"], check=True)
        print(f"{model}: {os.path.getsize(model):,} bytes; weights file "
              f"present: {os.path.exists(model + '.weights')}")
        lines = [f"\nLlama-7B shape ({args.shape}), AdamW, GiB:\n",
                 "| configuration | remat | trainable | parameters | frozen "
                 "weights | gradients | optimizer states | activations | one "
                 "allocation | extra FLOPs | plan time |",
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        policies = [("none", ["--remat=none"]),
                    ("checkpoint-layers", ["--remat=checkpoint-layers"]),
                    (f"auto, budget {args.budget}",
                     ["--remat=auto", "--budget=" + args.budget])]
        for remat, remat_flags in policies:
            for label, flags in CONFIGS:
                r = plan(model, args.shape, flags + remat_flags)
                results[f"{remat}/{label}"] = r
                if "error" in r:
                    lines.append(f"| {label} | {remat} | does not fit: "
                                 f"{r['error']} | | | | | | | | "
                                 f"{r['seconds']:.1f} s |")
                    print(lines[-1], flush=True)
                    continue
                lines.append(
                    f"| {label} | {remat} | {r['params']:,} | " +
                    " | ".join(gib(b) for b in lm.column_bytes(r["rows"])) +
                    f" | {r['extra']:.2f}% | {r['seconds']:.1f} s |")
                print(lines[-1], flush=True)
        print("\n".join(lines), flush=True)
    finally:
        shutil.rmtree(work)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
