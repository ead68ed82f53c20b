#!/usr/bin/env python3
"""Frozen weights stored quantized (--quantize-weights) against onnxruntime.

  check_quantized_weights.py --memfit-run memfit-run --models test/models
                             --refs test/models/quant_refs.npz --workdir DIR

For each fixture and scheme, memfit-run --gradients computes the
cross-entropy loss of one batch with every matmul weight of the model
frozen (--frozen) and stored quantized by memfit-quantize; --emit-mlir
says which weights it quantized (those of at least 4096 values). The
oracle quantizes the same weights with NumPy (bitsandbytes' rules, written
here independently: absmax per block of 64, the code nearest to
x * (1/absmax) among nf4 / fp4 / int8 values, an exact midpoint going to
the lower value; double quantization of the absmax with the signed dynamic
map's 65,536-bin rule), puts the dequantized weights into the ONNX model,
runs it with onnxruntime and computes the same loss. The two losses must
agree within 2e-5 relative; the loss of the unquantized model is printed
beside them to show what quantization changed.

The forward pass (memfit-run without --train, where every weight that
only matmuls read is quantized) is compared the same way, logits against
onnxruntime's on the dequantized weights: within 1e-5 of their largest
magnitude.

Then, with --memfit-opt, the memory plan of each fixture's training step
(memfit-train-pipeline, the same frozen weights, nf4, remat none,
memfit-memory-plan buffers=true): every dequantized weight (a buffer named
"<weight> (dequantized)") must live in the arena only from its dequantize
to the contraction that reads it, so that at no step more than one weight
is live dequantized (at most one layer's, the issue asks); prints the
largest count and bytes live at one step and the fp32 bytes all of them
would take.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from memfit_test.runner import prepare, run_tool

F = np.float32
NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
       -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
       0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
       0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0]
# bitsandbytes' FP4 (E2M1 with one subnormal) over 12, by code.
FP4 = [v / 12 for v in (0, 0.0625, 8, 12, 4, 6, 2, 3,
                        0, -0.0625, -8, -12, -4, -6, -2, -3)]


def absmax_of(x, bs):
    pad = (-x.size) % bs
    flat = np.concatenate([np.abs(x.reshape(-1)), np.zeros(pad, F)])
    return flat.reshape(-1, bs).max(axis=1).astype(F)


def per_element(absmax, n, bs):
    return np.repeat(absmax, bs)[:n]


def table_codes(scaled, table):
    values = np.array(table, F)
    order = np.argsort(values, kind="stable")
    mids = ((values[order[:-1]] + values[order[1:]]) * F(0.5)).astype(F)
    return order[np.searchsorted(mids, scaled, side="left")], values


def dynamic_codes(x, absmax, dmap):
    """bitsandbytes' CPU 8-bit rule: 65,536 bins, nearest to the centre."""
    mids = ((dmap[:-1] + dmap[1:]) * F(0.5)).astype(F)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.clip(x * (F(1) / absmax), F(-1), F(1)).astype(F)
    half = ((v + F(1)) * F(0.5)).astype(F)
    bins = np.floor(half.astype(np.float64) * 65535 + 0.5).astype(np.int64)
    centre = ((bins * 2).astype(F) / F(65535) - F(1)).astype(F)
    codes = np.searchsorted(mids, centre, side="left")
    return np.where(absmax == 0, 0, codes)


def dequantized(w, scheme, double, dmap, bs=64):
    x = w.reshape(-1).astype(F)
    absmax = absmax_of(x, bs)
    a = per_element(absmax, x.size, bs)
    if scheme == "int8":
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = np.clip(x * (F(1) / a), F(-1), F(1)).astype(F)
        codes = np.where(a == 0, 0, np.rint(scaled * F(127))).astype(np.int8)
        values = (codes.astype(F) / F(127)).astype(F)
    else:
        scaled = np.clip(x * (F(1) / np.maximum(a, F(1e-38))), F(-1), F(1)).astype(F)
        codes, table = table_codes(scaled, NF4 if scheme == "nf4" else FP4)
        values = table[codes]
    if double:
        offset = F(absmax.astype(np.float64).mean())
        shifted = (absmax - offset).astype(F)
        nested = absmax_of(shifted, 256)
        na = per_element(nested, shifted.size, 256)
        back = (dmap[dynamic_codes(shifted, na, dmap)] * na).astype(F)
        absmax = (back + offset).astype(F)
        a = per_element(absmax, x.size, bs)
    return (values * a).astype(F).reshape(w.shape)


def cross_entropy(logits, labels):
    z = logits.reshape(-1, logits.shape[-1]).astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(z.shape[0]), labels.reshape(-1)].mean())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--memfit-run", default="memfit-run")
    p.add_argument("--models", required=True)
    p.add_argument("--refs", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--device", default="host")
    p.add_argument("--memfit-opt", default="")
    args = p.parse_args()
    env = prepare("quantized-weights", args)
    if env is None:
        return 2
    tool, wd = args.memfit_run, args.workdir
    dmap = np.load(args.refs)["dynamic_map_signed"]
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 96, (2, 16)).astype(np.int64)
    labels = rng.integers(0, 96, (2, 16)).astype(np.int64)
    np.save(os.path.join(wd, "ids.npy"), ids)
    np.save(os.path.join(wd, "labels.npy"), labels)

    failed = False
    for fixture in ("gpt_ts", "llama_ts"):
        path = os.path.join(args.models, f"{fixture}.onnx")
        model = onnx.load(path)
        init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        matmul_inputs = {i for n in model.graph.node if n.op_type == "MatMul"
                         for i in n.input}
        frozen = sorted(n for n in init if n in matmul_inputs)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        plain = cross_entropy(sess.run(None, {"input_ids": ids})[0], labels)
        for scheme, double in (("nf4", False), ("nf4", True), ("fp4", False),
                               ("int8", False)):
            name = f"{fixture}-{scheme}{'-dq' if double else ''}"
            out = os.path.join(wd, name)
            shutil.rmtree(out, ignore_errors=True)
            cmd = [tool, path, "--input-shape=input_ids=2x16", "--gradients",
                   "--loss=cross-entropy", f"--device={args.device}", "--quiet",
                   f"--input=input_ids={os.path.join(wd, 'ids.npy')}",
                   f"--input=labels={os.path.join(wd, 'labels.npy')}",
                   f"--frozen={','.join(frozen)}",
                   f"--quantize-weights={scheme}", f"--output-dir={out}",
                   f"--emit-mlir={out}.mlir"]
            if double:
                cmd.append("--double-quant")
            why = run_tool(cmd, env)
            if why:
                print(f"FAIL {name}: {why}")
                failed = True
                continue
            quantized = quantized_names(out + ".mlir", init)
            qsess = dequantized_session(path, init, quantized, scheme, double,
                                        dmap)
            want = cross_entropy(qsess.run(None, {"input_ids": ids})[0], labels)
            got = float(np.load(os.path.join(out, "loss.npy")))
            rel = abs(got - want) / abs(want)
            ok = rel <= 2e-5 and len(quantized) > 0
            print(f"{'PASS' if ok else 'FAIL'} {name}: {len(quantized)} of "
                  f"{len(frozen)} frozen matmul weights quantized; loss memfit "
                  f"{got:.6f}, onnxruntime on the dequantized weights {want:.6f} "
                  f"(rel {rel:.1e}); unquantized {plain:.6f}")
            failed |= not ok
        for scheme in ("nf4", "int8"):
            failed |= not check_forward(tool, path, fixture, scheme, init,
                                        ids, dmap, wd, env, args.device)
        if args.memfit_opt:
            failed |= not check_plan(args.memfit_opt, path, fixture, frozen)
    return 1 if failed else 0


def quantized_names(mlir_path, init):
    """The initializers memfit quantized, from its emitted module."""
    found = re.findall(r'memfit\.parameter @"?([^" ]+)\.codes"? =',
                       open(mlir_path).read())
    return [q for q in found if q in init]


def dequantized_session(path, init, quantized, scheme, double, dmap):
    """onnxruntime on the model at `path` with its `quantized` initializers
    replaced by their NumPy-dequantized values."""
    graph = onnx.load(path)
    for t in graph.graph.initializer:
        if t.name in quantized:
            t.CopyFrom(numpy_helper.from_array(
                dequantized(init[t.name], scheme, double, dmap), t.name))
    return ort.InferenceSession(graph.SerializeToString(),
                                providers=["CPUExecutionProvider"])


def check_forward(tool, path, fixture, scheme, init, ids, dmap, wd, env,
                  device):
    name = f"{fixture}-forward-{scheme}"
    out = os.path.join(wd, name)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [tool, path, "--input-shape=input_ids=2x16", f"--device={device}",
           "--quiet", f"--input=input_ids={os.path.join(wd, 'ids.npy')}",
           f"--quantize-weights={scheme}", f"--output-dir={out}",
           f"--emit-mlir={out}.mlir"]
    why = run_tool(cmd, env)
    if why:
        print(f"FAIL {name}: {why}")
        return False
    quantized = quantized_names(out + ".mlir", init)
    sess = dequantized_session(path, init, quantized, scheme, False, dmap)
    want = sess.run(None, {"input_ids": ids})[0]
    got = np.load(os.path.join(out, "logits.npy"))
    err = float(np.abs(got - want).max() / np.abs(want).max())
    ok = err <= 1e-5 and len(quantized) > 0
    print(f"{'PASS' if ok else 'FAIL'} {name}: {len(quantized)} weights "
          f"quantized; logits max |diff| {err:.1e} of max |logit|")
    return ok


BUFFER = re.compile(r"buffer \d+: arena \S+ offset \d+ bytes (\d+) steps "
                    r"(\d+)\.\.(\d+) (.*) \(dequantized\)$")


def check_plan(memfit_opt, path, fixture, frozen):
    pipeline = ("loss=cross-entropy frozen=" + ",".join(frozen) +
                " quantize-weights=nf4 remat=none")
    proc = subprocess.run(
        [memfit_opt, path, "--input-shape=input_ids=2x16",
         f"--memfit-train-pipeline={pipeline}",
         "--memfit-memory-plan=buffers=true", "-o", os.devnull],
        capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        print(f"FAIL {fixture} plan: memfit-opt exit status {proc.returncode}: "
              + proc.stderr.strip()[:2000])
        return False
    spans = [(int(b), int(s), int(e), n) for b, s, e, n in
             (m.groups() for m in map(BUFFER.search,
                                      (proc.stdout + proc.stderr).splitlines())
              if m)]
    if not spans:
        print(f"FAIL {fixture} plan: no dequantized weight in the plan")
        return False
    last = max(e for _, _, e, _ in spans)
    worst = (0, 0, 0)
    for step in range(last + 1):
        live = [(b, n) for b, s, e, n in spans if s <= step <= e]
        total = sum(b for b, _ in live)
        if (len(live), total) > worst[:2]:
            worst = (len(live), total, step)
    every = sum(b for b, _, _, _ in spans)
    ok = worst[0] <= 1
    print(f"{'PASS' if ok else 'FAIL'} {fixture} plan: {len(spans)} "
          f"dequantizations; at most {worst[0]} dequantized weight(s) live at "
          f"one step ({worst[1]} bytes, step {worst[2]}) of {every} bytes if "
          f"all were")
    return ok


if __name__ == "__main__":
    sys.exit(main())
