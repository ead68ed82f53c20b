#!/usr/bin/env python3
"""Saved activations compressed to int8 as memfit-remat's third choice, on
the 12-layer GPT benchmark model: the table of docs/benchmarks.md.

  bench/compress-activations.py [--out build/bench/compress-table.md]
                                [--json build/bench/compress.json]
                                [--budgets 6] [--no-gradients]

Plans (the compiler's, not a run): memfit-opt's AdamW training step of
gpt12 (bench/remat-table.py's model, batch 4 x 128) with remat auto at
budgets from saving everything down to the smallest budget auto meets
without compression, and on down to the smallest it meets with it; at
each budget auto without and with memfit-quantize saved-activations=int8;
then the same with activation-fraction 0.5, 0.3 and 0.2 instead of a budget.
Rows: peak (weights + arena, planned), activation memory, extra FLOPs and
bytes moved, values recomputed and compressed.

Gradient error (a run, host backend): memfit-run --gradients on gpt12 with
the seed-0 random batch, once saving everything (the reference: a
recomputation is exact, so every plan without compression gives the same
gradients) and once per row that compresses, with --compress-activations,
at the same arena as the training step's budget (the gradients-only step
has no optimizer states in its weights region) or the same fraction. Per
row: the largest max_rel
over the parameters (max |g - ref| / max |ref| per tensor), the largest
norm_rel (|g - ref| / |ref|), and the relative L2 error of all gradients
together.
"""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, "build", "bin", "memfit-run")


def load_remat_table():
    """bench/remat-table.py, for its model, compile step and report rows."""
    path = os.path.join(ROOT, "bench", "remat-table.py")
    spec = importlib.util.spec_from_file_location("remat_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


table = load_remat_table()
MODEL = "gpt12"
FRACTIONS = (0.5, 0.3, 0.2)


def gradients(workdir, name, flags):
    """memfit-run --gradients on gpt12: {parameter: gradient}, the remat
    report's text."""
    out = os.path.join(workdir, name)
    report = os.path.join(workdir, name + ".report")
    path, shapes, loss = table.MODELS[MODEL]
    env = dict(os.environ, MEMFIT_CACHE_DIR=os.path.join(workdir, "cache"))
    args = [RUN, os.path.join(ROOT, path), f"--input-shape={shapes}",
            "--gradients", f"--loss={loss}", "--device=host", "--quiet",
            f"--output-dir={out}", f"--remat-report={report}"] + flags
    run = subprocess.run(args, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        sys.exit(f"{' '.join(args)}\n{run.stdout}{run.stderr}")
    grads = {f[5:-4]: np.load(os.path.join(out, f)).astype(np.float64)
             for f in os.listdir(out) if f.startswith("grad.")}
    return grads, open(report).read()


def error(grads, ref):
    max_rel = max(float(np.max(np.abs(grads[k] - ref[k]))) /
                  max(float(np.max(np.abs(ref[k]))), 1e-30) for k in ref)
    norm_rel = max(float(np.linalg.norm(grads[k] - ref[k])) /
                   max(float(np.linalg.norm(ref[k])), 1e-30) for k in ref)
    total = float(np.sqrt(sum(np.sum((grads[k] - ref[k]) ** 2) for k in ref))
                  / np.sqrt(sum(np.sum(ref[k] ** 2) for k in ref)))
    return {"max_rel": max_rel, "norm_rel": norm_rel, "l2_rel": total}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench",
                                                  "compress-table.md"))
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench",
                                                   "compress.json"))
    ap.add_argument("--budgets", type=int, default=6)
    ap.add_argument("--no-gradients", action="store_true")
    args = ap.parse_args()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    if not os.path.exists(os.path.join(ROOT, table.MODELS[MODEL][0])):
        sys.exit("build/bench/gpt12-d256.onnx is missing: run "
                 "bench/remat-table.py --models gpt12 once")

    none = table.row(MODEL, "none", "", 0)
    high, weights = none["planned"], none["weights"]
    low = table.smallest_peak(MODEL, weights)
    lowest = table.smallest_peak(MODEL, weights, compress=True)
    budgets = [int(round(high - (high - low) * i / (args.budgets - 1)))
               for i in range(args.budgets)]
    # Below what auto meets without compression.
    for fraction in (0.5, 1.0):
        budget = int(round(low - (low - lowest) * fraction))
        if budget < budgets[-1]:
            budgets.append(budget)
    rows = []
    for budget in budgets:
        pair = {"budget": budget,
                "plain": table.row(MODEL, "auto", str(budget), 0),
                "compressed": table.row(MODEL, "auto", str(budget), 0,
                                        compress=True)}
        rows.append(pair)
        print(budget, pair, file=sys.stderr)
    # Limits on the activation memory alone.
    for fraction in FRACTIONS:
        extra = f"activation-fraction={fraction}"
        pair = {"fraction": fraction,
                "plain": table.row(MODEL, "auto", "", 0, extra),
                "compressed": table.row(MODEL, "auto", "", 0, extra,
                                        compress=True)}
        rows.append(pair)
        print(fraction, pair, file=sys.stderr)

    if not args.no_gradients:
        workdir = os.path.join(ROOT, "build", "bench", "compress-grads")
        os.makedirs(workdir, exist_ok=True)
        ref, text = gradients(workdir, "reference", ["--remat=none"])
        # The gradients-only step's weights region: no optimizer states.
        step_weights = int(re.search(r"planned: weights (\d+)",
                                     text).group(1))
        for pair in rows:
            if "error" in pair["compressed"] or \
                    not pair["compressed"]["compressed"]:
                continue
            if "fraction" in pair:
                name = f"f{pair['fraction']}"
                limit = f"--activation-fraction={pair['fraction']}"
            else:
                name = f"b{pair['budget']}"
                limit = f"--budget={pair['budget'] - weights + step_weights}"
            grads, text = gradients(
                workdir, name,
                ["--remat=auto", limit, "--compress-activations"])
            pair["gradient_error"] = error(grads, ref)
            pair["gradient_compressed"] = table.remat_report.parse(
                text)["compressed"]
            print(name, pair["gradient_error"], file=sys.stderr)

    mib = table.mib
    lines = [f"gpt12 at 4 x 128, AdamW: weights region {mib(weights)} MiB; "
             f"save-all peak {mib(high)} MiB; smallest budget auto meets "
             f"{mib(low)} MiB without compression, {mib(lowest)} MiB with "
             "it\n",
             "| budget (MiB) or limit | choices | peak (MiB) | activations (MiB) | extra "
             "FLOPs | extra bytes moved (MiB) | recomputed | compressed "
             "(stored MiB) | gradient error: max_rel / norm_rel / "
             "L2 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for pair in rows:
        for kind in ("plain", "compressed"):
            r = pair[kind]
            label = "save or recompute" if kind == "plain" else "+ compress"
            limit = (f"{pair['fraction']:.0%} of the activations"
                     if "fraction" in pair else mib(pair["budget"]))
            head = f"| {limit} | {label} |"
            if "error" in r:
                lines.append(f"{head} - | - | - | - | - | - | no plan |")
                continue
            compressed = "-"
            if r.get("compressed"):
                compressed = f"{r['compressed']} ({mib(r['compressed_bytes'])})"
            grad = "exact"
            if kind == "compressed":
                e = pair.get("gradient_error")
                grad = (f"{e['max_rel']:.1e} / {e['norm_rel']:.1e} / "
                        f"{e['l2_rel']:.1e}" if e else
                        "exact" if not r.get("compressed") else "-")
            lines.append(
                f"{head} {mib(r['planned'])} | {mib(r['activation'])} | "
                f"{r['extra_flops_pct']:.2f}% | {mib(r['extra_bytes'])} | "
                f"{r['recomputed']} | {compressed} | {grad} |")
    with open(args.json, "w") as f:
        json.dump({"weights": weights, "save_all": high, "smallest": low,
                   "smallest_compressed": lowest, "rows": rows}, f, indent=1)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
