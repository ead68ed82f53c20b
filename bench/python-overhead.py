#!/usr/bin/env python3
"""What calling a training step from Python costs against the same step from
C++, on the host backend, for docs/benchmarks.md.

  .venv/bin/python bench/python-overhead.py [--repeat 5] [--threads T]
      [--scale 1.0] [--json build/bench/python-overhead.json]

Training steps (AdamW, lr 1e-3, fused kernels, the same fixed batch every
step) of three models: gpt_ts.onnx and llama_ts.onnx at 2 x 16 with
cross-entropy, and a 4 x 4 linear layer with MSE (a step of almost no work:
the fixed cost of a call). Every repeat runs, for each model in turn:

- C++: `memfit-run --train --steps=N` (the runtime's training loop:
  rt::runTraining, rt::Trainer::step), its stdout to a file. Per step:
  (the "trained N steps in X s" total - the first step) / (N - 1). That
  loop also assembles each micro-batch and writes one log line per step: it
  is what a C++ user of the loop gets. (The mean of the per-step "ms"
  fields, the step alone at 0.1 ms resolution, is in the JSON.)
- Python: memfit.compile + N calls of Model.step(**batch); the first call
  (which makes the session) is left out, as the first step is on the C++
  side. Per step: the loop's time / (N - 1). Then N / 2 pairs, in the same
  process, of Model.step and Session.run of its entry alone (with the
  inputs the step just set), each timed with perf_counter: the median of
  the pairs' differences is what a step costs outside its kernels, with
  the machine's noise shared by both halves. Then memfit.train
  (progress=False) for N steps on a fresh model.

Side by side, each figure is the best of the repeats (the machine's other
load only ever slows a run down); the JSON has the medians too. Both sides
first check that they compute the same thing: the first loss of each
equal to memfit-run's 6 decimals.

The fixed cost of one call: a forward pass of y = x + b (4 floats),
memfit-run --repeat=2000 (the best Session::run) against Session.run("main")
from the extension and Model.run(x=...) from the package (best and median of
2000 calls each, the median of the repeats).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import memfit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.environ.get("MEMFIT_RUN", os.path.join(ROOT, "build", "bin",
                                                "memfit-run"))
MODELS = os.path.join(ROOT, "test", "models")


def tiny_models(folder):
    """y = x + b (forward) and y = x @ W (training with MSE), as ONNX."""
    add = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["y"], name="add")], "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.ones(4, np.float32), "b")])
    linear = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="linear")],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(np.full((4, 4), 0.1, np.float32), "W")])
    paths = {}
    for name, graph in (("add", add), ("linear", linear)):
        paths[name] = os.path.join(folder, name + ".onnx")
        onnx.save(helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17)]), paths[name])
    return paths


def token_batch(seed, vocab):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, (2, 17)).astype(np.int64)
    return {"input_ids": ids[:, :-1].copy(), "labels": ids[:, 1:].copy()}


def cases(folder, scale):
    tiny = tiny_models(folder)
    rng = np.random.default_rng(0)
    return [
        dict(name="gpt_ts 2x16", model=os.path.join(MODELS, "gpt_ts.onnx"),
             shapes={"input_ids": (2, 16)}, loss="cross-entropy",
             batch=token_batch(0, 96), steps=int(2000 * scale)),
        dict(name="llama_ts 2x16",
             model=os.path.join(MODELS, "llama_ts.onnx"),
             shapes={"input_ids": (2, 16)}, loss="cross-entropy",
             batch=token_batch(1, 128), steps=int(1000 * scale)),
        dict(name="linear 4x4 (MSE)", model=tiny["linear"], shapes=None,
             loss="mse",
             batch={"x": rng.standard_normal((2, 4)).astype(np.float32),
                    "target": rng.standard_normal((2, 4)).astype(np.float32)},
             steps=int(20000 * scale)),
    ], tiny["add"]


def shape_flag(shapes):
    if not shapes:
        return []
    return ["--input-shape=" + ",".join(
        f"{k}=" + "x".join(map(str, v)) for k, v in shapes.items())]


STEP = re.compile(r"^step (\d+)/\d+ loss (\S+) lr \S+ ([\d.]+) ms", re.M)
TOTAL = re.compile(r"^trained (\d+) steps in ([\d.]+) s", re.M)


def cpp_side(case, threads, folder):
    inputs = []
    for name, array in case["batch"].items():
        path = os.path.join(folder, f"{abs(hash(case['name']))}-{name}.npy")
        np.save(path, array)
        inputs.append(f"--input={name}={path}")
    args = [RUN, case["model"], "--device=host", f"--host-threads={threads}",
            "--fuse", "--train", f"--loss={case['loss']}",
            "--optimizer=adamw", "--lr=1e-3", f"--steps={case['steps']}"] + \
        shape_flag(case["shapes"]) + inputs
    with tempfile.TemporaryFile("w+") as log:
        subprocess.run(args, stdout=log, stderr=subprocess.PIPE, check=True,
                       text=True)
        log.seek(0)
        out = log.read()
    steps = STEP.findall(out)
    total = float(TOTAL.search(out).group(2))
    n = len(steps)
    assert n == case["steps"], f"{case['name']}: {n} step lines"
    first_ms = float(steps[0][2])
    return {"first_loss": float(steps[0][1]),
            "per_step": (total - first_ms / 1e3) / (n - 1),
            "per_step_lines": sum(float(s[2]) for s in steps[1:]) / 1e3 /
            (n - 1)}


def python_side(case, threads):
    config = memfit.TrainConfig(learning_rate=1e-3, loss=case["loss"])
    model = memfit.compile(case["model"], input_shapes=case["shapes"],
                           train=config, device="host", fuse=True,
                           host_threads=threads)
    batch = case["batch"]
    first_loss = model.step(**batch)  # makes the session
    n = case["steps"]
    times = []
    clock = time.perf_counter
    start = clock()
    for _ in range(n - 1):
        t = clock()
        model.step(**batch)
        times.append(clock() - t)
    whole = clock() - start

    # The same process, call by call: Model.step against Session.run of
    # its entry alone (the inputs and lr that the step just set): what a
    # step costs outside its kernels, with the machine's noise shared.
    session, entry = model.session, "train_step"
    step_times, run_times = [], []
    for _ in range(n // 2):
        t = clock()
        model.step(**batch)
        u = clock()
        session.run(entry)
        step_times.append(u - t)
        run_times.append(clock() - u)

    # memfit.train on a fresh model, the same batch every step.
    model = memfit.compile(case["model"], input_shapes=case["shapes"],
                           train=config, device="host", fuse=True,
                           host_threads=threads)
    result = memfit.train(model, [batch], steps=n, cycle=True,
                          progress=False)
    return {"first_loss": first_loss,
            "per_step": whole / (n - 1),
            "per_step_calls": sum(times) / (n - 1),
            "median_call": statistics.median(times),
            "paired_step": statistics.median(step_times),
            "paired_run": statistics.median(run_times),
            "paired_difference": statistics.median(
                a - b for a, b in zip(step_times, run_times)),
            "train_per_step": (result.seconds - result.first_step_seconds) /
            (n - 1)}


def fixed_cost(add_model, threads, repeat):
    """One forward call of y = x + b: C++ Session::run (memfit-run's best of
    `repeat`) against the extension's Session.run and Model.run."""
    out = subprocess.run(
        [RUN, add_model, "--device=host", f"--host-threads={threads}",
         "--fuse", f"--repeat={repeat}"], capture_output=True, text=True,
        check=True).stdout
    cpp_best = float(re.search(r"forward pass: ([\d.]+) ms", out).group(1)) \
        / 1e3
    model = memfit.compile(add_model, device="host", fuse=True,
                           host_threads=threads)
    x = np.arange(4, dtype=np.float32)
    model.run(x=x)
    session = model.session
    clock = time.perf_counter
    raw, full = [], []
    for _ in range(repeat):
        t = clock()
        session.run("main")
        raw.append(clock() - t)
        t = clock()
        model.run(x=x)
        full.append(clock() - t)
    return {"cpp_best": cpp_best, "session_run_best": min(raw),
            "session_run_median": statistics.median(raw),
            "model_run_best": min(full),
            "model_run_median": statistics.median(full)}


def us(seconds):
    return f"{seconds * 1e6:,.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiplies the steps per run (2000, 1000, 20000)")
    ap.add_argument("--json", default=os.path.join(
        ROOT, "build", "bench", "python-overhead.json"))
    args = ap.parse_args()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    load_before = os.getloadavg()
    results = {}
    with tempfile.TemporaryDirectory(prefix="memfit-overhead-") as folder:
        all_cases, add_model = cases(folder, args.scale)
        for r in range(args.repeat):
            for case in all_cases:
                cpp = cpp_side(case, args.threads, folder)
                py = python_side(case, args.threads)
                if f"{py['first_loss']:.6f}" != f"{cpp['first_loss']:.6f}":
                    sys.exit(f"{case['name']}: first loss {py['first_loss']} "
                             f"from Python, {cpp['first_loss']} from "
                             "memfit-run")
                entry = results.setdefault(case["name"], {
                    "steps": case["steps"], "cpp": [], "python": []})
                entry["cpp"].append(cpp)
                entry["python"].append(py)
                print(f"repeat {r + 1}/{args.repeat} {case['name']}: C++ "
                      f"{us(cpp['per_step'])} us, Python "
                      f"{us(py['per_step'])} us per step", flush=True)
        fixed = [fixed_cost(add_model, args.threads, 2000)
                 for _ in range(args.repeat)]

    def med(side, rows, key):
        return statistics.median(row[key] for row in rows[side])

    def best(side, rows, key):
        return min(row[key] for row in rows[side])

    side = ["| model | steps per run | C++ memfit-run | Python Model.step "
            "| Python - C++ | Python memfit.train |",
            "|---|---:|---:|---:|---:|---:|"]
    paired = ["| model | Model.step | Session.run of its entry | outside "
              "the kernels |", "|---|---:|---:|---:|"]
    summary = {}
    for name, rows in results.items():
        cpp, py = best("cpp", rows, "per_step"), \
            best("python", rows, "per_step")
        train = best("python", rows, "train_per_step")
        step = med("python", rows, "paired_step")
        run = med("python", rows, "paired_run")
        outside = med("python", rows, "paired_difference")
        summary[name] = {"cpp_us": cpp * 1e6, "python_us": py * 1e6,
                         "overhead_us": (py - cpp) * 1e6,
                         "overhead_percent": (py - cpp) / cpp * 100,
                         "cpp_median_us": med("cpp", rows, "per_step") * 1e6,
                         "python_median_us":
                         med("python", rows, "per_step") * 1e6,
                         "train_us": train * 1e6,
                         "median_call_us":
                         med("python", rows, "median_call") * 1e6,
                         "cpp_step_lines_us":
                         med("cpp", rows, "per_step_lines") * 1e6,
                         "paired_step_us": step * 1e6,
                         "paired_run_us": run * 1e6,
                         "outside_kernels_us": outside * 1e6,
                         "outside_kernels_percent": outside / run * 100}
        side.append(f"| {name} | {rows['steps']:,} | {us(cpp)} us | "
                    f"{us(py)} us | {us(py - cpp)} us "
                    f"({(py - cpp) / cpp * 100:+.1f}%) | {us(train)} us |")
        paired.append(f"| {name} | {us(step)} us | {us(run)} us | "
                      f"{us(outside)} us ({outside / run * 100:.1f}%) |")
    lines = side + [""] + paired
    f = {k: statistics.median(row[k] for row in fixed) for k in fixed[0]}
    lines += ["", "| forward of y = x + b (4 floats) | best | median |",
              "|---|---:|---:|",
              f"| C++ Session::run (memfit-run --repeat=2000) | "
              f"{us(f['cpp_best'])} us | |",
              f"| Python Session.run('main') (the extension) | "
              f"{us(f['session_run_best'])} us | "
              f"{us(f['session_run_median'])} us |",
              f"| Python Model.run(x=x) (inputs, run, outputs) | "
              f"{us(f['model_run_best'])} us | "
              f"{us(f['model_run_median'])} us |"]
    print("\n".join(lines))
    print(f"load average before {load_before[0]:.2f}, after "
          f"{os.getloadavg()[0]:.2f}; {args.threads} host threads")
    with open(args.json, "w") as out:
        json.dump({"runs": results, "summary": summary, "fixed": fixed,
                   "threads": args.threads, "repeat": args.repeat,
                   "load_before": load_before,
                   "load_after": os.getloadavg()}, out, indent=1)


if __name__ == "__main__":
    main()
