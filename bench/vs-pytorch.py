#!/usr/bin/env python3
"""memfit's host backend side by side with PyTorch eager, torch.compile and
onnxruntime on the same CPU cores, for docs/benchmarks.md.

  python bench/vs-pytorch.py [--models gpt_ts,gpt12,gpt2-small]
      [--threads N] [--steps 12] [--repeat 10] [--no-compile] [--no-fuse]

Run it with a Python that has torch, onnx, onnxruntime and numpy (torch
is not in the suite's .venv). For each model, on the same token ids and
labels:

  - memfit: the AdamW training step (fp32, cross-entropy; --fuse unless
    --no-fuse) with memfit-run --device=host, MEMFIT_HOST_THREADS=N: the
    median of the steps after the first two, the cold start (empty kernel
    and executable caches: import, passes, emission, g++ and one step) and
    the warm one (the same with the caches filled, median of 3; in brackets
    without its step),
    and the one allocation of the memory plan; the forward pass (fused
    unless --no-fuse) with --repeat (best of R, three runs alternating
    with onnxruntime's); a --profile of 4 steps,
    by kind of step and the 5 largest ops;
  - PyTorch eager: the same model as a torch module holding the ONNX
    file's weights, torch.optim.AdamW with memfit-run's defaults, the
    median step; the peak of torch.profiler's memory timeline of one step
    (bench/torch_memory.py); torch.set_num_threads(N);
  - torch.compile: the first step (compile included, Inductor's cache
    empty unless TORCHINDUCTOR_CACHE_DIR is set) and the median of later
    ones (skipped with --no-compile);
  - onnxruntime: the forward pass, best of R (intra_op_num_threads=N), in
    three rounds alternating with memfit's forward (best of each).

Before timing, it checks that the models agree: memfit's first loss and
PyTorch's within 1e-4 relative, and onnxruntime's logits and PyTorch's
within 1e-4. Models: gpt_ts (the GPT fixture, 4 x 32), gpt12
(bench/make_gpt2_small.py --layers 12 --hidden 256 --heads 4 --vocab 4096
--positions 512, 4 x 128) and gpt2-small (124M parameters, 1 x 128); the
last two are written to build/bench when missing.
"""

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

# torch.compile's first step is measured cold: Inductor gets an empty cache
# of its own (a warm one from an earlier run made it 3.3 s instead of 66 s).
INDUCTOR_CACHE = None
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    INDUCTOR_CACHE = tempfile.mkdtemp(prefix="memfit-vs-pytorch-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = INDUCTOR_CACHE
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from onnx import numpy_helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, "build", "bin", "memfit-run")
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))

GEN = ["--layers", "12", "--hidden", "256", "--heads", "4", "--vocab", "4096",
       "--positions", "512"]
# name: (path, batch, seq, generator arguments or None for a fixture)
MODELS = {
    "gpt_ts": ("test/models/gpt_ts.onnx", 4, 32, None),
    "gpt12": ("build/bench/gpt12-d256.onnx", 4, 128, GEN),
    "gpt2-small": ("build/bench/gpt2-small.onnx", 1, 128, []),
}
# memfit-run's AdamW defaults (docs/training.md).
LR, BETAS, EPS, WD = 1e-3, (0.9, 0.999), 1e-8, 0.01


class OnnxGPT(nn.Module):
    """The graph bench/make_gpt2_small.py writes, with its weights."""

    def __init__(self, path):
        super().__init__()
        inits = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
                 for t in onnx.load(path).graph.initializer}
        floats = {k: v for k, v in inits.items() if v.dtype == torch.float32
                  and v.dim() > 0}
        self.p = nn.ParameterDict({k.replace(".", "_"): nn.Parameter(v)
                                   for k, v in floats.items()})
        self.layers = len([k for k in floats if k.endswith(".ln1.g")])
        self.heads = int(inits["qkv_shape"][3])

    def w(self, name):
        return self.p[name.replace(".", "_")]

    def forward(self, ids):
        b, t = ids.shape
        x = self.w("wte")[ids] + self.w("wpe")[:t]
        h = x.shape[-1]
        nh, hd = self.heads, h // self.heads
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        for i in range(self.layers):
            p = f"h{i}"
            y = F.layer_norm(x, (h,), self.w(f"{p}.ln1.g"), self.w(f"{p}.ln1.b"), 1e-5)
            qkv = y @ self.w(f"{p}.attn.w") + self.w(f"{p}.attn.b")
            q, k, v = qkv.view(b, t, 3, nh, hd).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
            att = torch.where(causal, att, torch.tensor(-1e9)).softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, h)
            x = x + y @ self.w(f"{p}.proj.w") + self.w(f"{p}.proj.b")
            y = F.layer_norm(x, (h,), self.w(f"{p}.ln2.g"), self.w(f"{p}.ln2.b"), 1e-5)
            m = y @ self.w(f"{p}.fc.w") + self.w(f"{p}.fc.b")
            m = F.gelu(m, approximate="tanh")
            x = x + m @ self.w(f"{p}.mproj.w") + self.w(f"{p}.mproj.b")
        x = F.layer_norm(x, (h,), self.w("lnf.g"), self.w("lnf.b"), 1e-5)
        return x @ self.w("wte").t()


def torch_model(name, path):
    if MODELS[name][3] is not None:
        return OnnxGPT(path)
    import make_train_refs as tr  # the fixture's own module

    model = tr.build_model("gpt")
    tr.load_from_onnx(model, path)
    return model


def logits_of(out):
    return out if torch.is_tensor(out) else out[0]


def run(args, env=None):
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)}\n{done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def memfit(path, shape, feeds, args, threads, cache, ort_forward):
    """memfit's step times, cold and warm starts, plan, and its forward
    against onnxruntime's: three rounds, each onnxruntime's best of R
    (ort_forward()) then memfit's, so that both see the machine's speed of
    the same minute (it drifts by 20-30%); the best of each."""
    env = dict(os.environ, MEMFIT_HOST_THREADS=str(threads),
               MEMFIT_CACHE_DIR=cache)
    base = [RUN, path, f"--input-shape=input_ids={shape}", "--device=host",
            f"--input=input_ids={feeds['ids']}"]
    train = base + ["--train", "--loss=cross-entropy", "--optimizer=adamw",
                    f"--input=labels={feeds['labels']}"]
    if args.no_fuse:
        train.append("--no-fuse")
    shutil.rmtree(cache, ignore_errors=True)
    t0 = time.perf_counter()
    run(train + ["--steps=1"], env)
    cold = time.perf_counter() - t0
    # Warm: the same command again (the executable and kernel caches
    # filled), the median of three; what comes before the first step is the
    # process's time less that step's.
    warms = []
    for _ in range(3):
        t0 = time.perf_counter()
        warm_out = run(train + ["--steps=1"], env)
        total = time.perf_counter() - t0
        step = float(re.search(r"^step 1/1 loss \S+ lr \S+ (\S+) ms",
                               warm_out, re.M).group(1)) / 1e3
        warms.append((total - step, total, step))
    _, warm, warm_step = sorted(warms)[1]
    out = run(train + [f"--steps={args.steps}", "--memory-report"], env)
    steps = [(float(l), float(ms)) for l, ms in re.findall(
        r"^step \d+/\d+ loss (\S+) lr \S+ (\S+) ms", out, re.M)]
    plan = int(re.search(r"memory plan: ([0-9,]+) bytes", out).group(1)
               .replace(",", ""))
    fused = ["--no-fuse"] if args.no_fuse else []
    forward = ort = float("inf")
    for _ in range(3):
        ort = min(ort, ort_forward())
        fwd = run(base + fused + [f"--repeat={args.repeat}"], env)
        forward = min(forward, float(
            re.search(r"forward pass: (\S+) ms", fwd).group(1)))
    # Where a step's time goes: --profile waits for each kernel.
    prof = run(train + ["--steps=4", "--profile"], env)
    kinds = re.findall(r"^    (\S.*?)\s+(\d+) steps\s+(\S+) ms\s+(\S+)%$",
                       prof.split("by kind:")[1].split("by op")[0], re.M)
    ops = re.findall(r"^    (\S+)\s+(\d+) steps\s+(\S+) ms\s+(\S+)%$",
                     prof.split("by op")[1], re.M)
    return {"loss1": steps[0][0], "step": statistics.median(
        ms for _, ms in steps[2:]), "cold": cold, "warm": warm,
        "warm_prepare": warm - warm_step, "plan": plan, "forward": forward,
        "ort": ort,
        "kinds": kinds, "ops": ops[:5]}


def torch_steps(model, ids, labels, steps, compiled=False):
    """Step times in ms (the first included) and the first loss."""
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS,
                            weight_decay=WD)
    fwd = torch.compile(model) if compiled else model

    def step():
        opt.zero_grad(set_to_none=True)
        logits = logits_of(fwd(ids))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               labels.reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()

    times, first = [], None
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t0) * 1e3)
        first = loss if first is None else first
    return times, first, step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="gpt_ts,gpt12,gpt2-small")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-fuse", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import onnxruntime as ort
    from torch_memory import profile_step

    rows = []
    work = tempfile.mkdtemp(prefix="memfit-vs-pytorch-")
    for name in args.models.split(","):
        rel, b, t, gen = MODELS[name]
        path = os.path.join(ROOT, rel)
        if gen is not None and not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            run([sys.executable, os.path.join(ROOT, "bench", "make_gpt2_small.py"),
                 path, *gen])
        torch.manual_seed(0)
        model = torch_model(name, path)
        vocab = logits_of(model(torch.zeros(1, 1, dtype=torch.long))).shape[-1]
        rng = np.random.default_rng(0)
        ids = rng.integers(0, vocab, (b, t)).astype(np.int64)
        labels = rng.integers(0, vocab, (b, t)).astype(np.int64)
        feeds = {"ids": os.path.join(work, f"{name}.ids.npy"),
                 "labels": os.path.join(work, f"{name}.labels.npy")}
        np.save(feeds["ids"], ids)
        np.save(feeds["labels"], labels)

        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        with torch.no_grad():
            ref = logits_of(model(torch.from_numpy(ids))).numpy()
        got = sess.run(None, {"input_ids": ids})[0]
        err = float(np.abs(got - ref).max() / max(1.0, np.abs(ref).max()))
        if err > 1e-4:
            sys.exit(f"{name}: onnxruntime and the torch module differ by {err:.2e}")

        def ort_forward():
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                sess.run(None, {"input_ids": ids})
                best = min(best, (time.perf_counter() - t0) * 1e3)
            return best

        m = memfit(path, f"{b}x{t}", feeds, args, args.threads,
                   os.path.join(work, "cache"), ort_forward)
        tids, tlabels = torch.from_numpy(ids), torch.from_numpy(labels)
        eager, loss1, step = torch_steps(model, tids, tlabels, args.steps)
        if abs(loss1 - m["loss1"]) > 1e-4 * abs(loss1):
            sys.exit(f"{name}: first loss memfit {m['loss1']} PyTorch {loss1}")
        peak = profile_step(step)["total_peak"]
        row = {"model": name, "shape": f"{b} x {t}", "memfit": m,
               "eager": statistics.median(eager[2:]), "torch_peak": peak,
               "ort": m["ort"]}
        if not args.no_compile:
            torch._dynamo.reset()
            compiled = torch_model(name, path)
            times, _, _ = torch_steps(compiled, tids, tlabels, args.steps, True)
            row["compile_first"] = times[0] / 1e3
            row["compile"] = statistics.median(times[2:])
        rows.append(row)
        print(f"{name}: done", file=sys.stderr)

    print(f"threads {args.threads}, torch {torch.__version__}, onnxruntime "
          f"{ort.__version__}, fused {not args.no_fuse}\n")
    print("| model | shape | memfit step | PyTorch eager | torch.compile | "
          "memfit / eager | memfit forward | onnxruntime | memfit / ort |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        m = r["memfit"]
        comp = f"{r['compile']:.2f} ms" if "compile" in r else "-"
        print(f"| {r['model']} | {r['shape']} | {m['step']:.2f} ms | "
              f"{r['eager']:.2f} ms | {comp} | {m['step'] / r['eager']:.1f}x | "
              f"{m['forward']:.2f} ms | {r['ort']:.2f} ms | "
              f"{m['forward'] / r['ort']:.1f}x |")
    print("\n| model | memfit cold start | memfit warm start (before the "
          "step) | torch.compile first step | memfit plan | PyTorch peak "
          "(profiler) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        m = r["memfit"]
        first = f"{r['compile_first']:.1f} s" if "compile_first" in r else "-"
        print(f"| {r['model']} | {m['cold']:.1f} s | {m['warm']:.2f} s "
              f"({m['warm_prepare']:.2f} s) | {first} | {m['plan']:,} B | "
              f"{r['torch_peak']:,} B |")
    print("\nmemfit's step by kind (--profile, ms a step):\n")
    print("| model | " + " | ".join(
        k for k in ("contractions", "element-wise kernels", "row kernels",
                    "kernels run as fibers")) + " | largest ops |")
    print("|---|---:|---:|---:|---:|---|")
    for r in rows:
        m = r["memfit"]
        by = {k: (float(ms), pct) for k, _, ms, pct in m["kinds"]}
        cells = [f"{by[k][0]:.1f} ({by[k][1]}%)" if k in by else "-"
                 for k in ("contractions", "element-wise kernels",
                           "row kernels", "kernels run as fibers")]
        ops = ", ".join(f"{op} {float(ms):.1f}" for op, _, ms, _ in m["ops"])
        print(f"| {r['model']} | " + " | ".join(cells) + f" | {ops} |")
    shutil.rmtree(work, ignore_errors=True)
    if INDUCTOR_CACHE:
        shutil.rmtree(INDUCTOR_CACHE, ignore_errors=True)


if __name__ == "__main__":
    main()
