#!/usr/bin/env python3
"""One data-parallel rank's memory, planned from shapes alone, for
docs/benchmarks.md: GPT-2 small, a Llama-7B-shaped model and a 7.5B-shaped
one (the ZeRO paper's example: the 7B shape with 36 layers, 7.5B
parameters), AdamW in bf16
(fp32 master weights and states, as ZeRO's paper counts K = 12), at 1, 8
and 64 ranks under ZeRO stages 0 to 3, next to the paper's formula, and
with the optimizer states in host memory (--offload=optimizer: its own
column, apart from the device's one allocation).

  bench/plan-ranks.py [--shape batch=1,seq=1024] [--json OUT]

memfit-run --plan-only --world-size=N --zero=S plans rank 0 of N from one
process (docs/distributed.md); bench/make_llama.py --shapes-only and
bench/make_gpt2_small.py write the models into a temporary directory.
The paper's bytes per parameter (Psi parameters): stage 0 keeps 2 (16-bit
weights) + 2 (16-bit gradients) + K on every rank; stage 1 divides K by N,
stage 2 also the gradients' 2, stage 3 everything.
memfit keeps the fp32 master weights (4, part of K) and the states (8)
in the weights region, and the 16-bit working copies and the gradients in
the arena while they live (with early updates each gradient is freed at
its update), so its columns are not the paper's one for one: the table
gives both.
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
ROW = re.compile(r"^ {2,}(\S.*?)\s+([\d,]+)\s+[\d.]+(?:\s+[\d.]+)?$")
COLUMNS = ["parameters", "optimizer states", "gradients", "working copies",
           "saved activations", "communication", "one allocation",
           "host memory (pinned)"]


def plan(model, shape, ranks, zero, offload):
    args = [RUN, model, "--input-shape=" + shape, "--plan-only", "--train",
            "--loss=cross-entropy", "--optimizer=adamw", "--precision=bf16",
            "--remat=checkpoint-layers", f"--world-size={ranks}",
            f"--zero={zero}"] + (["--offload=optimizer"] if offload else [])
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(args)}\n{done.stderr}")
    rows = {}
    report = done.stdout[done.stdout.index("memory report ("):]
    for line in report.splitlines():
        m = ROW.match(line)
        if m:
            rows.setdefault(m.group(1), int(m.group(2).replace(",", "")))
    params = int(re.search(r"([\d,]+) trainable parameters",
                           report).group(1).replace(",", ""))
    return rows, params


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="batch=1,seq=1024")
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench",
                                                    "plan-ranks.json"))
    a = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="memfit-ranks-") as tmp:
        gpt2 = os.path.join(tmp, "gpt2.onnx")
        llama = os.path.join(tmp, "llama7b.onnx")
        llama75 = os.path.join(tmp, "llama7.5b.onnx")
        subprocess.run([sys.executable, os.path.join(HERE, "make_gpt2_small.py"),
                        gpt2], check=True, capture_output=True)
        subprocess.run([sys.executable, os.path.join(HERE, "make_llama.py"),
                        llama, "--preset", "7b", "--shapes-only"], check=True,
                       capture_output=True)
        subprocess.run([sys.executable, os.path.join(HERE, "make_llama.py"),
                        llama75, "--preset", "7b", "--layers", "36",
                        "--shapes-only"], check=True, capture_output=True)
        for name, model in (("GPT-2 small", gpt2), ("Llama-7B-shaped", llama),
                            ("7.5B-shaped", llama75)):
            for ranks, zero, offload in (
                    (1, 0, False), (1, 0, True), (8, 0, False), (8, 1, False),
                    (8, 2, False), (8, 3, False), (8, 3, True),
                    (64, 0, False), (64, 1, False), (64, 2, False),
                    (64, 3, False), (64, 3, True)):
                rows, params = plan(model, a.shape, ranks, zero, offload)
                results.append({"model": name, "ranks": ranks, "zero": zero,
                                "offload": offload, "params": params,
                                "rows": rows})
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(results, f, indent=1)
    gib = lambda b: f"{b / 2**30:,.2f}"
    print("| model | ranks | stage | " + " | ".join(COLUMNS) +
          " | paper (GiB) |")
    print("|---|---:|---:|" + "---:|" * (len(COLUMNS) + 1))
    for r in results:
        n = r["ranks"]
        paper = {0: 2 + 2 + 12, 1: 2 + 2 + 12 / n,
                 2: 2 + (2 + 12) / n,
                 3: (2 + 2 + 12) / n}[r["zero"]] * r["params"]
        stage = f"{r['zero']}" + (" + offload" if r["offload"] else "")
        print(f"| {r['model']} | {r['ranks']} | {stage} | " +
              " | ".join(gib(r["rows"].get(c, 0)) for c in COLUMNS) +
              f" | {gib(paper)} |")


if __name__ == "__main__":
    main()
