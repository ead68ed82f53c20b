#!/usr/bin/env python3
"""Predicted training-step times on the GPUs of memfit's table, for
docs/benchmarks.md: every model the benchmarks use, from shapes and the
compiler's cost model, without a GPU.

  bench/predict-time.py [--json build/bench/predict-time.json]

For each model (the fixtures at bench/fusion.py's shapes, gpt12, GPT-2
small at 1 x 128 and at 4 x 512 in fp32 and bf16, and the Llama-7B shape of
bench/plan-7b.py with --shapes-only) memfit-run --plan-only --predict=all
compiles the AdamW training step (fused, the default; remat none) and
prints each entry's predicted time by kind of kernel against the roofline
floor (memfit/runtime/Roofline.h). The script prints two markdown tables:
the totals and floors on the A100, H100 and H200, and the H100's time by
kind. Models missing from build/bench are written first (bench/
make_gpt2_small.py, bench/make_llama.py).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUN = os.path.join(ROOT, "build", "bin", "memfit-run")
PY = sys.executable

# name: (path, input shape, loss, extra flags, how to make it or None)
MODELS = [
    ("gpt_ts", "test/models/gpt_ts.onnx", "input_ids=4x32", "cross-entropy", [], None),
    ("gpt_dynamo", "test/models/gpt_dynamo.onnx", "input_ids=4x32", "cross-entropy", [], None),
    ("bert_ts", "test/models/bert_ts.onnx", "input_ids=16x16,attention_mask=16x16", "mse", [], None),
    ("bert_dynamo", "test/models/bert_dynamo.onnx", "input_ids=16x16,attention_mask=16x16", "mse", [], None),
    ("llama_ts", "test/models/llama_ts.onnx", "input_ids=4x32", "cross-entropy", [], None),
    ("llama_dynamo", "test/models/llama_dynamo.onnx", "input_ids=4x32", "cross-entropy", [], None),
    ("gpt12 (4x128)", "build/bench/gpt12-d256.onnx", "input_ids=4x128", "cross-entropy", [],
     ["make_gpt2_small.py", "--layers", "12", "--hidden", "256", "--heads", "4",
      "--vocab", "4096", "--positions", "512"]),
    ("GPT-2 small (1x128)", "build/bench/gpt2-small.onnx", "input_ids=1x128", "cross-entropy", [],
     ["make_gpt2_small.py"]),
    ("GPT-2 small (4x512)", "build/bench/gpt2-small.onnx", "input_ids=4x512", "cross-entropy", [],
     ["make_gpt2_small.py"]),
    ("GPT-2 small (4x512), bf16", "build/bench/gpt2-small.onnx", "input_ids=4x512", "cross-entropy",
     ["--precision=bf16"], ["make_gpt2_small.py"]),
    ("Llama-7B shape (1x2048), bf16", "build/bench/llama-7b-shapes.onnx", "input_ids=1x2048",
     "cross-entropy", ["--precision=bf16", "--remat=checkpoint-layers"],
     ["make_llama.py", "--preset", "7b", "--shapes-only"]),
]

TABLE = re.compile(r"predicted on (.*?) \(sm_\d+\).*\n  kind .*\n((?:  (?!total).*\n)*)"
                   r"  total ([\d.]+) ms \((\d+) launches, ([\d.]+) ms of them\); "
                   r"floor ([\d.]+) ms")
ROW = re.compile(r"  (\S+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%")


def ensure(path, maker):
    full = os.path.join(ROOT, path)
    if os.path.exists(full) or not maker:
        return full
    os.makedirs(os.path.dirname(full), exist_ok=True)
    subprocess.run([PY, os.path.join(HERE, maker[0]), full] + maker[1:],
                   check=True, stdout=subprocess.DEVNULL)
    return full


def predict(path, shape, loss, flags):
    args = [RUN, path, "--input-shape=" + shape, "--train", "--loss=" + loss,
            "--plan-only", "--quiet", "--predict=all"]
    if not any(f.startswith("--remat") for f in flags):
        args.append("--remat=none")
    done = subprocess.run(args + flags, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1]}
    gpus = {}
    for m in TABLE.finditer(done.stdout):
        rows = {r[0]: {"steps": int(r[1]), "memory_bound": int(r[2]),
                       "mib": float(r[3]), "gflop": float(r[4]),
                       "ms": float(r[5]), "share": float(r[6])}
                for r in ROW.findall(m.group(2))}
        gpus[m.group(1)] = {"total_ms": float(m.group(3)),
                            "launches": int(m.group(4)),
                            "launch_ms": float(m.group(5)),
                            "floor_ms": float(m.group(6)), "kinds": rows}
    return gpus


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench",
                                                   "predict-time.json"))
    args = ap.parse_args()
    results = {}
    for name, path, shape, loss, flags, maker in MODELS:
        full = ensure(path, maker)
        results[name] = predict(full, shape, loss, flags)
        print(f"{name}: done", file=sys.stderr)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)

    gpus = ["A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB"]
    print("| model | launches | " + " | ".join(
        f"{g.split('-')[0]} ms | floor" for g in gpus) + " |")
    print("|---|---:|" + "---:|---:|" * len(gpus))
    for name, r in results.items():
        if "error" in r:
            print(f"| {name} | {r['error']} |")
            continue
        first = r["NVIDIA " + gpus[0]]
        cells = [f"{r['NVIDIA ' + g]['total_ms']:.3f} | "
                 f"{r['NVIDIA ' + g]['floor_ms']:.3f}" for g in gpus]
        print(f"| {name} | {first['launches']} | " + " | ".join(cells) + " |")

    kinds = ["contractions", "element-wise", "rows", "optimizer", "attention"]
    print("\nH100, ms by kind (steps):\n")
    print("| model | " + " | ".join(kinds) + " | launches' share |")
    print("|---|" + "---:|" * (len(kinds) + 1))
    for name, r in results.items():
        if "error" in r:
            continue
        h = r["NVIDIA H100-SXM5-80GB"]
        cells = []
        for k in kinds:
            row = h["kinds"].get(k)
            cells.append(f"{row['ms']:.3f} ({row['steps']})" if row else "-")
        share = 100 * h["launch_ms"] / h["total_ms"] if h["total_ms"] else 0
        print(f"| {name} | " + " | ".join(cells) + f" | {share:.0f}% |")


if __name__ == "__main__":
    main()
