#!/usr/bin/env python3
"""Kernels and memory of a training step without and with memfit-fuse, for
docs/benchmarks.md.

  bench/fusion.py [--models all] [--time gpt2-small] [--steps 3]

For each model it compiles the AdamW training step (fp32, cross-entropy or
mse as the model needs, remat none) twice, without and with --fuse, and
prints a markdown table: kernels per step, the one allocation, the arena
peak and the saved activations; then a second table of the bytes the step
moves (memfit-op-cost's traffic: each kernel's inputs read once and results
written once, contractions included) against the lower bound (inputs,
weights and states read once, outputs and updates written once, saved
activations written and read once), with two floors that fusing the other
kernels cannot go below: the contractions' bytes plus the optimizer's
states and updates (as if the optimizer read no gradient), and the
contractions' bytes plus what the optimizer's multi-tensor kernels move.
With --time, it also trains those models for --steps steps on the
host backend, both ways, with a cold kernel cache (--no-cache: g++ compiles
every kernel), and prints the kernel compile time and the best step time.

Models: the six fixtures at their training shapes (test/models), gpt12
(12 layers, d=256, 4 x 128) and gpt2-small (124M parameters, 1 x 128, as
bench/train-step.sh), written by bench/make_gpt2_small.py when missing.
"""

import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(ROOT, ".venv", "bin", "python")
RUN = os.path.join(ROOT, "build", "bin", "memfit-run")
OPT = os.path.join(ROOT, "build", "bin", "memfit-opt")
FIXTURES = os.path.join(ROOT, "test", "models")

# name: (path, input shapes, loss, generator arguments or None)
MODELS = {
    "gpt_ts": ("test/models/gpt_ts.onnx", "input_ids=4x32", "cross-entropy", None),
    "gpt_dynamo": ("test/models/gpt_dynamo.onnx", "input_ids=4x32", "cross-entropy", None),
    "bert_ts": ("test/models/bert_ts.onnx", "input_ids=16x16,attention_mask=16x16", "mse", None),
    "bert_dynamo": ("test/models/bert_dynamo.onnx", "input_ids=16x16,attention_mask=16x16", "mse", None),
    "llama_ts": ("test/models/llama_ts.onnx", "input_ids=4x32", "cross-entropy", None),
    "llama_dynamo": ("test/models/llama_dynamo.onnx", "input_ids=4x32", "cross-entropy", None),
    "gpt12": ("build/bench/gpt12-d256.onnx", "input_ids=4x128", "cross-entropy",
              ["--layers", "12", "--hidden", "256", "--heads", "4",
               "--vocab", "4096", "--positions", "512"]),
    "gpt2-small": ("build/bench/gpt2-small.onnx", "input_ids=1x128", "cross-entropy", []),
}


def run(args):
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)}\n{done.stdout}{done.stderr}")
    return done.stdout


def compile_step(path, shape, loss, fuse):
    out = run([RUN, os.path.join(ROOT, path), "--input-shape=" + shape,
               "--train", "--loss=" + loss, "--compile-only", "--remat=none"]
              + ([] if fuse else ["--no-fuse"]))
    kernels = int(re.search(r": (\d+) kernels", out).group(1))
    total, arena = re.search(r"memory plan: ([\d,]+) bytes in one allocation "
                             r"\(weights [\d,]+, arena peak ([\d,]+)\)",
                             out).groups()
    return kernels, number(total), number(arena)


def number(text):
    return int(text.replace(",", ""))


def traffic(path, shape, loss, fuse):
    """Bytes moved, the lower bound and the contractions' part."""
    options = f"loss={loss} remat=none" + ("" if fuse else " fuse=false")
    out = run([OPT, os.path.join(ROOT, path), "--input-shape=" + shape,
               "--memfit-train-pipeline=" + options, "--memfit-op-cost",
               "-o", os.devnull])
    moved, contractions = re.search(r"traffic: .* ([\d,]+) bytes moved "
                                    r"\(([\d,]+) by contractions\)",
                                    out).groups()
    bound, states, updates, saved = re.search(
        r"traffic: lower bound ([\d,]+) bytes .*weights and states read "
        r"([\d,]+), .*updates ([\d,]+), saved activations ([\d,]+) written",
        out).groups()
    return (number(moved), number(bound), number(contractions), number(saved),
            number(states), number(updates))


def optimizer_bytes(path, shape, loss):
    """Bytes the fused step's multi-tensor kernels (the optimizer's
    updates) read and write, from memfit-run's --fusion-report."""
    report = os.path.join(ROOT, "build", "bench", "fusion-report.txt")
    os.makedirs(os.path.dirname(report), exist_ok=True)
    run([RUN, os.path.join(ROOT, path), "--input-shape=" + shape, "--train",
         "--loss=" + loss, "--remat=none", "--fuse", "--compile-only",
         "--fusion-report=" + report])
    total = 0
    with open(report) as f:
        for line in f:
            step = re.match(r"\s+\d+ kernel\s+([\d,]+)\s+([\d,]+)\s", line)
            if step and "segments)" in line:
                total += number(step.group(1)) + number(step.group(2))
    return total


def parameter_bytes(path, shape):
    """The model's weights, from the inference plan's report."""
    out = run([RUN, os.path.join(ROOT, path), "--input-shape=" + shape,
               "--compile-only"])
    return number(re.search(r"parameters\s+([\d,]+) bytes", out).group(1))


def time_steps(path, shape, loss, fuse, steps):
    out = run([RUN, os.path.join(ROOT, path), "--input-shape=" + shape,
               "--train", "--loss=" + loss, "--device=host", "--no-cache",
               f"--steps={steps}", "--remat=none"]
              + ([] if fuse else ["--no-fuse"]))
    compile_s = float(re.search(r"kernels: compiled in ([\d.]+) s", out).group(1))
    times = [float(t) for t in re.findall(r"step \d+/\d+ loss \S+ lr \S+ ([\d.]+) ms", out)]
    return compile_s, min(times)


def mib(b):
    return f"{b / 2**20:,.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--time", default="")
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    names = list(MODELS) if args.models == "all" else args.models.split(",")
    lines = ["| model | kernels unfused | fused | fewer | one allocation MiB "
             "unfused | fused | arena peak MiB unfused | fused | saved "
             "activations MiB unfused | fused |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    # Saved activations: every buffer a forward step writes and a backward
    # step reads, counted once (not only those live at the peak).
    moved = ["| model | bytes moved MiB unfused | fused | less | lower bound "
             "MiB unfused | fused | moved / bound unfused | fused | "
             "contractions' share fused | contractions and optimizer "
             "/ bound | contractions and optimizer kernels / bound |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        path, shape, loss, make = MODELS[name]
        if make is not None and not os.path.exists(os.path.join(ROOT, path)):
            os.makedirs(os.path.dirname(os.path.join(ROOT, path)), exist_ok=True)
            run([PY, os.path.join(ROOT, "bench", "make_gpt2_small.py"),
                 os.path.join(ROOT, path)] + make)
        k0, t0, a0 = compile_step(path, shape, loss, False)
        k1, t1, a1 = compile_step(path, shape, loss, True)
        m0, b0, _, s0, _, _ = traffic(path, shape, loss, False)
        m1, b1, c1, s1, states, updates = traffic(path, shape, loss, True)
        # What no fusion of the other ops goes below while contractions
        # are library calls: their operands and results, the optimizer
        # states read and every update written (weights are read by the
        # contractions already).
        floor = c1 + states - parameter_bytes(path, shape) + updates
        # The same with the optimizer as the kernels it is: each update
        # reads the weight, its gradient and its states and writes them.
        kernels_floor = c1 + optimizer_bytes(path, shape, loss)
        lines.append(f"| {name} ({shape}) | {k0:,} | {k1:,} | {k0 / k1:.2f}x | "
                     f"{mib(t0)} | {mib(t1)} | {mib(a0)} | {mib(a1)} | "
                     f"{mib(s0)} | {mib(s1)} |")
        print(lines[-1], flush=True)
        moved.append(f"| {name} | {mib(m0)} | {mib(m1)} | {m0 / m1:.2f}x | "
                     f"{mib(b0)} | {mib(b1)} | {m0 / b0:.2f} | {m1 / b1:.2f} | "
                     f"{100 * c1 / m1:.0f}% | {floor / b1:.2f} | "
                     f"{kernels_floor / b1:.2f} |")
        print(moved[-1], flush=True)
    print("\n".join(lines))
    print()
    print("\n".join(moved))
    if args.time:
        timed = ["| model | g++ kernel compile s unfused | fused | best step "
                 "ms unfused | fused |", "|---|---:|---:|---:|---:|"]
        for name in args.time.split(","):
            path, shape, loss, _ = MODELS[name]
            c0, s0 = time_steps(path, shape, loss, False, args.steps)
            c1, s1 = time_steps(path, shape, loss, True, args.steps)
            timed.append(f"| {name} ({shape}) | {c0:.1f} | {c1:.1f} | "
                         f"{s0:.1f} | {s1:.1f} |")
            print(timed[-1], flush=True)
        print("\n".join(timed))


if __name__ == "__main__":
    main()
