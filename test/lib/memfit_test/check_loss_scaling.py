#!/usr/bin/env python3
"""fp16 dynamic loss scaling of memfit-run checked against PyTorch's GradScaler.

  check_loss_scaling.py run MEMFIT_RUN MODELS WORKDIR [RUN...]
      Trains each run of test/models/grad_scaler_ref.json (all, or those
      named) with --fp16 and the reference's loss-scale settings (a huge
      initial scale, so that the run backs off step by step and then grows
      into an overflow every few steps), data and AdamW settings, and
      compares memfit's step lines with PyTorch's record: the scale every
      step used (exact: both print it with %g), the set of skipped steps,
      the summary line's count, and after the last step the loss scale, the
      growth tracker and AdamW's step count of the checkpoint. The losses
      must be finite, within 5e-3 of PyTorch's (relative) at every step, and
      fall. Prints a per-step table (memfit's and PyTorch's scale and skip,
      PyTorch's overflow threshold, both losses; mismatches marked) and
      PASS/FAIL lines.

  check_loss_scaling.py thresholds MEMFIT_RUN MODELS WORKDIR RUN [STEPS]
      Diagnosis for a mismatch (slow: minutes): memfit's overflow threshold
      at every step of its own run, beside PyTorch's. The run is taken one
      step at a time through checkpoints; a step's threshold is found by
      bisection (to 1e-3) over the loss scale written into the previous
      checkpoint (its FNV-1a hash updated), resuming one step and reading
      whether it skipped. A step skips iff its scale >= its threshold, so a
      mismatch shows which side's threshold crossed the scale used.
"""

import json
import math
import os
import re
import struct
import sys
from concurrent.futures import ThreadPoolExecutor

from memfit_test.check_training import read_checkpoint, report, run

REF = "grad_scaler_ref.json"
LOSS_TOLERANCE = 5e-3
STEP_LINE = re.compile(r"step (\d+)/\d+ loss (\S+) lr \S+ +[\d.]+ ms scale (\S+)( skipped)?$")
SUMMARY = re.compile(r"loss scaling: (\d+) of (\d+) steps skipped")


def train_args(memfit_run, models, ref, name, steps):
    r, gs, opt = ref["runs"][name], ref["grad_scaler"], ref["optimizer"]
    args = [memfit_run, os.path.join(models, r["onnx_file"]), "--train", "--device=host",
            "--fp16", "--loss=cross-entropy",
            f"--corpus={os.path.join(models, ref['corpus_file'])}",
            f"--input-shape=input_ids={ref['batch']}x{ref['seq']}", f"--steps={steps}",
            "--optimizer=adamw", f"--lr={opt['lr']}", f"--beta1={opt['beta1']}",
            f"--beta2={opt['beta2']}", f"--eps={opt['eps']}",
            f"--weight-decay={opt['weight_decay']}", "--loss-scale=dynamic",
            f"--loss-scale-growth={gs['growth_factor']!r}",
            f"--loss-scale-backoff={gs['backoff_factor']!r}",
            f"--loss-scale-interval={gs['growth_interval']}"]
    return args + [f"--keep-fp32={k}" for k in r["keep_fp32"]]


def parse_steps(out):
    """{step: (loss, scale as printed, skipped)} of memfit-run's step lines."""
    steps = {}
    for line in out.splitlines():
        m = STEP_LINE.match(line)
        if m:
            steps[int(m[1])] = (float(m[2]), m[3], bool(m[4]))
    return steps


def compare(name, ref, out, ckpt):
    r = ref["runs"][name]
    steps = ref["steps"]
    got = parse_steps(out)
    failures = []
    if sorted(got) != list(range(1, steps + 1)):
        return [f"{name}: step lines for steps {sorted(got)}, expected 1..{steps}"]
    print(f"{name}: step  scale memfit / torch  skip m/t  torch threshold  "
          f"loss memfit / torch")
    worst, worst_step = 0.0, 0
    for s in range(1, steps + 1):
        loss, scale, skipped = got[s]
        t_scale, t_skipped = f"{r['scale'][s - 1]:g}", r["skipped"][s - 1]
        t_loss = r["loss"][s - 1]
        rel = abs(loss - t_loss) / abs(t_loss) if math.isfinite(loss) else math.inf
        if rel > worst:
            worst, worst_step = rel, s
        bad = scale != t_scale or skipped != t_skipped
        mark = lambda k: "S" if k else "-"  # noqa: E731
        print(f"{name}: {s:4d}  {scale:>11s} {'=' if scale == t_scale else t_scale:>11s}"
              f"  {mark(skipped)}/{mark(t_skipped)}  {r['overflow_threshold'][s - 1]:15g}"
              f"  {loss:.6f} {t_loss:.6f}{'  <<' if bad else ''}")
    mine = [s for s in got if got[s][2]]
    torch = [s + 1 for s, k in enumerate(r["skipped"]) if k]
    print(f"{name}: skipped memfit {mine}\n{name}: skipped torch  {torch}")
    if mine != torch:
        failures.append(f"{name}: skipped steps differ: memfit {mine}, torch {torch}")
    scales = [s for s in got if got[s][1] != f"{r['scale'][s - 1]:g}"]
    if scales:
        failures.append(f"{name}: the scale differs at steps {scales}")
    summary = SUMMARY.search(out)
    if not summary or (int(summary[1]), int(summary[2])) != (len(torch), steps):
        failures.append(f"{name}: summary line {summary[0] if summary else None!r}, "
                        f"expected {len(torch)} of {steps} steps skipped")

    state = read_checkpoint(ckpt)
    expected = {"loss_scale": r["final_scale"],
                "loss_scale_growth_tracker": r["final_growth_tracker"],
                "adamw_step": r["adamw_steps"], "step": steps}
    missing = [k for k in expected if k not in state]
    if missing:
        failures.append(f"{name}: the checkpoint has no {missing}")
    else:
        final = {k: float(state[k]) for k in expected}
        print(f"{name}: after step {steps}: scale {final['loss_scale']:g} (torch "
              f"{r['final_scale']:g}), growth tracker "
              f"{final['loss_scale_growth_tracker']:g} ({r['final_growth_tracker']}), "
              f"AdamW steps {final['adamw_step']:g} ({r['adamw_steps']}), step counter "
              f"{final['step']:g}")
        for k, v in expected.items():
            if final[k] != v:
                failures.append(f"{name}: checkpoint {k} = {final[k]:g}, expected {v:g}")

    losses = [got[s][0] for s in range(1, steps + 1)]
    print(f"{name}: loss {losses[0]:.6f} -> {losses[-1]:.6f} (torch {r['loss'][0]:.6f} -> "
          f"{r['loss'][-1]:.6f}); max relative difference {worst:.2e} at step {worst_step}")
    if not all(math.isfinite(v) for v in losses):
        failures.append(f"{name}: non-finite losses")
    if worst > LOSS_TOLERANCE:
        failures.append(f"{name}: loss relative difference {worst:.2e} > {LOSS_TOLERANCE:g} "
                        f"at step {worst_step}")
    if not losses[-1] < losses[0]:
        failures.append(f"{name}: the loss did not fall")
    return failures


def run_mode(memfit_run, models, workdir, *names):
    ref = json.load(open(os.path.join(models, REF)))
    unknown = [n for n in names if n not in ref["runs"]]
    if unknown:
        print(f"FAIL loss-scaling: no reference for {unknown}")
        return 1
    names = names or list(ref["runs"])
    init = f"--loss-scale-init={ref['grad_scaler']['init_scale']!r}"

    def train(name):
        ckpt = os.path.join(workdir, f"{name}.ckpt")
        args = train_args(memfit_run, models, ref, name, ref["steps"])
        return run(args + [init, f"--checkpoint={ckpt}"]), ckpt

    # Two runs at once: the host kernels keep about one core busy each.
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(train, names))
    failures = []
    for name, (out, ckpt) in zip(names, results):
        failures += compare(name, ref, out, ckpt)
    return report("loss-scaling", failures)


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xffffffffffffffff
    return f"{h:016x}"


def with_loss_scale(src, dst, scale):
    """Copies checkpoint src to dst with its loss_scale set to `scale`."""
    data = bytearray(open(src, "rb").read())
    newline = data.index(b"\n")
    start = newline + 1 + int(data[:newline].split(b" ")[1])
    header = json.loads(bytes(data[newline + 1:start]))
    var = next(v for v in header["variables"] if v["name"] == "loss_scale")
    raw = struct.pack("<f", scale)
    offset = start + var["offset"]
    data[offset:offset + 4] = raw
    # The hash is 16 hex digits either way: the header keeps its size.
    text = bytes(data[newline + 1:start]).replace(
        f'"{var["fnv1a64"]}"'.encode(), f'"{fnv1a64(raw)}"'.encode(), 1)
    data[newline + 1:start] = text
    open(dst, "wb").write(data)


def thresholds(memfit_run, models, workdir, name, steps=None):
    ref = json.load(open(os.path.join(models, REF)))
    r = ref["runs"][name]
    steps = int(steps or ref["steps"])
    one = train_args(memfit_run, models, ref, name, 1)
    ckpt = lambda s: os.path.join(workdir, f"{name}.{s}.ckpt")  # noqa: E731
    init = f"--loss-scale-init={ref['grad_scaler']['init_scale']!r}"

    def last_step(args):
        return parse_steps(run(args))

    # Memfit's own run, one step at a time.
    own = {}
    for s in range(1, steps + 1):
        start = [f"--resume={ckpt(s - 1)}"] if s > 1 else [init]
        own.update(last_step(one + start + [f"--checkpoint={ckpt(s)}"]))

    def threshold(s):
        def skipped(scale):
            if s == 1:
                args = one + [f"--loss-scale-init={scale!r}"]
            else:
                probe = os.path.join(workdir, f"{name}.probe{s}.ckpt")
                with_loss_scale(ckpt(s - 1), probe, scale)
                args = one + [f"--resume={probe}"]
            return last_step(args)[s][2]
        lo, hi = 1.0, 2.0 ** 40
        if skipped(lo) or not skipped(hi):
            return math.nan
        while hi / lo > 1 + 1e-3:
            mid = math.sqrt(lo * hi)
            lo, hi = (lo, mid) if skipped(mid) else (mid, hi)
        return hi

    with ThreadPoolExecutor(max_workers=2) as pool:
        found = list(pool.map(threshold, range(1, steps + 1)))
    print(f"{name}: step  scale memfit / torch  skip m/t  threshold memfit / torch  "
          f"log2(scale / threshold) memfit / torch")
    for s, mine in enumerate(found, 1):
        _, scale, skipped = own[s]
        t = r["overflow_threshold"][s - 1]
        used = float(scale)
        print(f"{name}: {s:4d}  {scale:>11s} {r['scale'][s - 1]:11g}  "
              f"{'S' if skipped else '-'}/{'S' if r['skipped'][s - 1] else '-'}  "
              f"{mine:10.6g} {t:10.6g}  {math.log2(used / mine):+7.3f} "
              f"{math.log2(r['scale'][s - 1] / t):+7.3f}")
    return 0


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    os.makedirs(rest[2], exist_ok=True)
    sys.exit({"run": run_mode, "thresholds": thresholds}[mode](*rest))
