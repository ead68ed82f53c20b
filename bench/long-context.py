#!/usr/bin/env python3
"""What a training step holds at long context, with memfit.attention and
the chunked loss and without them, for docs/benchmarks.md.

  bench/long-context.py [--seqs 512,2048,8192,32768] [--models small,1b,7b]
                        [--budgets 8GiB,24GiB,80GiB] [--torch-json A,B,...]
                        [--json build/bench/long-context.json]

Models, written by bench/make_llama.py with --shapes-only into a temporary
directory (the figures come from shapes alone; the directory is deleted at
the end):
  - small: 4 layers, hidden 512, 8 heads, MLP 1,408, vocabulary 32,000
    (45.6 M parameters);
  - 1b: Llama-3.2-1B's shape (16 layers, hidden 2048, 32 query and 8
    key/value heads, MLP 8192, vocabulary 128,256, tied head);
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

With --torch-json (the JSON files of bench/torch-long-context.py, which
needs torch and transformers), a last table puts memfit's default plan next
to what PyTorch eager with SDPA holds (with and without per-block
torch.utils.checkpoint) for the same model, sequence and precision: the
peaks, and the bytes beyond parameters, gradients and optimizer states.
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
    "1b": ["--preset", "1b"],
    "7b": ["--preset", "7b"],
}
ROW = re.compile(r"^  (\S.*?)\s+([\d,]+)\s+([\d.]+)\s+([\d.]+)$")
CATEGORIES = ["weights", "gradients", "optimizer states", "saved activations",
              "loss", "temporaries", "one allocation"]
REMAT = {"none": False, "checkpoint-layers": True}


def beyond_states(rows):
    """Bytes beyond parameters, gradients and optimizer states: saved and
    recomputed activations, working copies, the loss, temporaries."""
    return rows["one allocation"] - sum(
        rows.get(c, 0) for c in ("weights", "gradients", "optimizer states"))


def torch_rows(paths):
    """bench/torch-long-context.py's rows by (model, seq, precision,
    checkpoint); a row of fewer layers than the model's (the 1b shape) is
    extended linearly from two layer counts."""
    by = {}
    for path in paths:
        with open(path) as f:
            for r in json.load(f)["rows"]:
                by.setdefault((r["model"], r["seq"], r["precision"],
                               r["checkpoint"]), {})[r["layers"]] = r
    full = {"small": 4, "1b": 16}
    out = {}
    for key, layers in by.items():
        n = full[key[0]]
        if n in layers:
            out[key] = dict(peak=layers[n]["peak"],
                            beyond=layers[n]["beyond_states"], how="measured")
        elif len(layers) >= 2:
            (l1, a), (l2, b) = sorted(layers.items())[:2]
            per = (b["beyond_states"] - a["beyond_states"]) / (l2 - l1)
            out[key] = dict(peak=None, how=f"from {l1} and {l2} layers",
                            beyond=int(a["beyond_states"] + per * (n - l1)))
    return out


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
    ap.add_argument("--models", default="small,1b,7b")
    ap.add_argument("--budgets", default="8GiB,24GiB,80GiB")
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench",
                                                   "long-context.json"))
    ap.add_argument("--torch-json", default="",
                    help="comma-separated JSON files of "
                         "bench/torch-long-context.py, for a side-by-side table")
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
        torch = torch_rows([p for p in args.torch_json.split(",") if p])
        if torch:
            print("\nmemfit (default) next to PyTorch eager + SDPA, MiB: the "
                  "peak, and the bytes beyond parameters, gradients and "
                  "optimizer states\n")
            print("| model, seq | precision | remat | memfit peak | PyTorch peak "
                  "| memfit beyond | PyTorch beyond | memfit / PyTorch beyond "
                  "| PyTorch |")
            print("|---|---|---|---:|---:|---:|---:|---:|---|")
            for key, r in results.items():
                name, seq, precision, remat, attention = key.split("/")
                t = torch.get((name, int(seq), precision, REMAT[remat]))
                if attention != "both" or not t or "rows" not in r:
                    continue
                mine = beyond_states(r["rows"])
                print(f"| {name}, {int(seq):,} | {precision} | {remat} | "
                      f"{mib(r['rows']['one allocation'])} | "
                      f"{mib(t['peak']) if t['peak'] else '-'} | {mib(mine)} | "
                      f"{mib(t['beyond'])} | {mine / t['beyond']:.2f} | "
                      f"{t['how']} |", flush=True)
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
