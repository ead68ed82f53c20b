#!/usr/bin/env python3
"""The remat table of docs/remat.md: peak memory, activation memory and
extra FLOPs of memfit-remat's policies at budgets from "save everything"
down to the smallest budget auto meets.

  bench/remat-table.py [--models gpt12,gpt_ts,...] [--out docs/remat-table.md]
                       [--json build/bench/remat.json] [--time-limit 120]

For each model it compiles the AdamW training step with memfit-opt (import,
autodiff, optimizer, kernels, memfit-remat) and reads memfit-remat's report:
  - none and checkpoint-layers once (they take no budget);
  - auto at activation-fraction 0.5, and at checkpoint-layers' peak;
  - the smallest budget auto meets, from the error of an impossible budget
    (the smallest peak in live bytes, plus what the planner's placement
    needs beyond them);
  - auto and optimal at six budgets evenly spaced from none's peak down to
    that smallest budget (optimal with a time limit; "-" with the reason
    where it finds no plan).
gpt12 is the GPT-style model of bench/make_gpt2_small.py at 12 layers,
d=256, 4 heads, vocabulary 4096 (10.7M parameters), at batch 4 x 128
tokens; the fixtures run at 2 x 16.
"""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPT = os.path.join(ROOT, "build", "bin", "memfit-opt")
PY = os.path.join(ROOT, ".venv", "bin", "python")


def load_remat_report():
    """The report parser the remat tests use, test/lib/memfit_test/
    remat_report.py, loaded by its path so that the script needs no
    PYTHONPATH (it imports nothing but the standard library)."""
    path = os.path.join(ROOT, "test", "lib", "memfit_test", "remat_report.py")
    spec = importlib.util.spec_from_file_location("remat_report", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


remat_report = load_remat_report()

# The report's figures that a row of the JSON file keeps.
FIELDS = ("planned", "weights", "activation", "activation_none",
          "extra_flops_pct", "recomputed", "extra_bytes", "pass_seconds",
          "solver", "compressed", "compressed_bytes")

MODELS = {
    "gpt12": ("build/bench/gpt12-d256.onnx", "input_ids=4x128",
              "cross-entropy"),
    "gpt_ts": ("test/models/gpt_ts.onnx", "input_ids=2x16", "cross-entropy"),
    "gpt_dynamo": ("test/models/gpt_dynamo.onnx", "input_ids=2x16",
                   "cross-entropy"),
    "bert_ts": ("test/models/bert_ts.onnx",
                "input_ids=2x16,attention_mask=2x16", "mse"),
    "bert_dynamo": ("test/models/bert_dynamo.onnx", "batch=2,seq=16", "mse"),
    "llama_ts": ("test/models/llama_ts.onnx", "input_ids=2x16",
                 "cross-entropy"),
    "llama_dynamo": ("test/models/llama_dynamo.onnx", "input_ids=2x16",
                     "cross-entropy"),
}


def compile_step(model, remat, compress=False):
    """memfit-opt's AdamW training step with memfit-remat{remat}; with
    `compress`, memfit-quantize asks for activations saved compressed."""
    path, shapes, loss = MODELS[model]
    quantize = "memfit-quantize{saved-activations=int8}," if compress else ""
    pipeline = ("builtin.module(canonicalize,cse,memfit-tie-parameters,"
                f"memfit-autodiff{{loss={loss}}},memfit-optimizer,canonicalize,"
                f"cse,{quantize}func.func(memfit-form-kernels),"
                f"memfit-remat{{{remat} report=-}})")
    start = time.time()
    run = subprocess.run([OPT, os.path.join(ROOT, path),
                          f"--input-shape={shapes}",
                          f"--pass-pipeline={pipeline}", "-o", os.devnull],
                         capture_output=True, text=True)
    return run, time.time() - start


def smallest_peak(model, weights, compress=False):
    """The smallest budget auto meets: the smallest peak in live bytes that
    an impossible budget's error states, raised by what the planner's
    placement needs beyond the live bytes when the error says so."""
    budget = weights + 256
    for _ in range(6):
        run, _ = compile_step(model, f"policy=auto budget={budget}", compress)
        if run.returncode == 0:
            return budget
        ask = re.search(r"ask for about [^(]*\((\d+) bytes", run.stderr)
        low = re.search(r"smallest peak reachable is [^(]*\((\d+) bytes",
                        run.stderr)
        if not (ask or low):
            sys.exit(f"{model}: no smallest peak in:\n{run.stderr}")
        budget = max(budget + 256, int((ask or low).group(1)))
    sys.exit(f"{model}: auto meets none of the budgets tried")


def row(model, policy, budget, time_limit, extra="", compress=False):
    remat = f"policy={policy}"
    if budget:
        remat += f" budget={budget}"
    if extra:
        remat += f" {extra}"
    if policy == "optimal":
        remat += f" time-limit={time_limit}"
    run, seconds = compile_step(model, remat, compress)
    if run.returncode != 0:
        err = [line for line in run.stderr.strip().splitlines()
               if "error:" in line] or run.stderr.strip().splitlines()
        return {"policy": policy, "budget": budget, "extra": extra, "error":
                err[-1] if err else "failed", "seconds": seconds}
    figures = remat_report.parse(run.stdout)
    result = {key: figures[key] for key in FIELDS}
    result.update(policy=policy, budget=budget, seconds=seconds, extra=extra)
    return result


def mib(b):
    return f"{b / 2**20:.2f}" if b is not None else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench",
                                                  "remat-table.md"))
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench",
                                                   "remat.json"))
    ap.add_argument("--time-limit", type=float, default=120)
    ap.add_argument("--budgets", type=int, default=6)
    args = ap.parse_args()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    if "gpt12" in args.models and not os.path.exists(
            os.path.join(ROOT, MODELS["gpt12"][0])):
        subprocess.run([PY, os.path.join(ROOT, "bench", "make_gpt2_small.py"),
                        os.path.join(ROOT, MODELS["gpt12"][0]), "--layers",
                        "12", "--hidden", "256", "--heads", "4", "--vocab",
                        "4096", "--positions", "512"], check=True)
    results = {}
    lines = []
    for model in args.models.split(","):
        rows = [row(model, "none", "", 0),
                row(model, "checkpoint-layers", "", 0)]
        # auto at half the activations, and at checkpoint-layers' peak.
        rows.append(row(model, "auto", "", 0, "activation-fraction=0.5"))
        rows.append(row(model, "auto", str(rows[1]["planned"]), 0))
        low = smallest_peak(model, rows[0]["weights"])
        high = rows[0]["planned"]
        for i in range(args.budgets):
            budget = int(round(high - (high - low) * i / (args.budgets - 1)))
            for policy in ("auto", "optimal"):
                rows.append(row(model, policy, str(budget), args.time_limit))
                print(model, rows[-1], file=sys.stderr)
        results[model] = {"smallest_budget": low, "rows": rows}
        none = rows[0]
        lines.append(f"\n### {model}\n")
        lines.append(f"weights region {mib(none['weights'])} MiB; save-all "
                     f"peak {mib(high)} MiB; smallest budget auto meets "
                     f"{mib(low)} MiB\n")
        lines.append("| policy | budget (MiB) | peak (MiB) | activations (MiB) "
                     "| activations kept | extra FLOPs | extra bytes moved "
                     "(MiB) | recomputed ops | pass time |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            budget = mib(int(r["budget"])) if r["budget"] else "-"
            if r.get("extra"):
                budget = r["extra"]
            if "error" in r:
                why = r["error"].split("; ")[-1] if "; " in r["error"] \
                    else r["error"].split("error: ")[-1]
                lines.append(f"| {r['policy']} | {budget} | - | - | - | - | - | - "
                             f"| {r['seconds']:.1f} s (did not run: "
                             f"{why[:70]}) |")
                continue
            kept = (100.0 * r["activation"] / r["activation_none"]
                    if r["activation_none"] else 100.0)
            note = ""
            if r["policy"] == "optimal" and r["solver"] and \
                    "proven" not in r["solver"]:
                note = " (time limit)"
            lines.append(
                f"| {r['policy']}{note} | {budget} | {mib(r['planned'])} | "
                f"{mib(r['activation'])} | {kept:.0f}% | "
                f"{r['extra_flops_pct']:.2f}% | {mib(r['extra_bytes'])} | "
                f"{r['recomputed']} | "
                f"{r['pass_seconds']:.2f} s |")
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
