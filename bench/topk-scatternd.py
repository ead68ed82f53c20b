#!/usr/bin/env python3
"""TopK over a vocabulary-sized axis and ScatterND with 10^5 updates on the
host backend, against onnxruntime on the same machine: the table of
docs/benchmarks.md.

  bench/topk-scatternd.py [--memfit-run build/bin/memfit-run]
                          [--workdir build/bench/topk-scatternd] [--repeat 20]

Models (one node each, f32, random inputs from a seeded generator):
  topk       TopK of 8 x 50,257 (GPT-2's vocabulary) along the last axis,
             k = 50: values and indices;
  topk-all   the same with k = 50,257: a full sort of each row;
  scatternd-entries  ScatterND into 1000 x 1000 of 10^5 single entries
             (indices 10^5 x 2, duplicates among them), reduction add;
  scatternd-slices   ScatterND into 50,257 x 64 of 1,563 rows (indices
             1,563 x 1, updates 1,563 x 64: 100,032 values), reduction
             none, distinct rows.

memfit: `memfit-run --device=host --repeat=N`, the best run time it
reports (the kernels only: inputs are set before, the compile not
counted). onnxruntime: the best of N InferenceSession.run calls (CPU
provider, its default threads, graph optimizations on), inputs already
in memory. Both check their outputs agree before the times are printed.
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
F, I = TensorProto.FLOAT, TensorProto.INT64


def topk_model(rows, n, k):
    graph = helper.make_graph(
        [helper.make_node("TopK", ["x", "k"], ["values", "indices"],
                          name="topk")],
        "topk", [helper.make_tensor_value_info("x", F, [rows, n])],
        [helper.make_tensor_value_info("values", F, [rows, k]),
         helper.make_tensor_value_info("indices", I, [rows, k])],
        initializer=[numpy_helper.from_array(np.array([k], np.int64), "k")])
    x = np.random.default_rng(0).normal(size=(rows, n)).astype(np.float32)
    return graph, {"x": x}


def scatternd_model(data_shape, indices, update_shape, reduction):
    graph = helper.make_graph(
        [helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"],
                          name="scatternd", reduction=reduction)],
        "scatternd",
        [helper.make_tensor_value_info("data", F, data_shape),
         helper.make_tensor_value_info("indices", I, list(indices.shape)),
         helper.make_tensor_value_info("updates", F, update_shape)],
        [helper.make_tensor_value_info("y", F, data_shape)])
    rng = np.random.default_rng(1)
    return graph, {"data": rng.normal(size=data_shape).astype(np.float32),
                   "indices": indices,
                   "updates": rng.normal(size=update_shape).astype(np.float32)}


def cases():
    rng = np.random.default_rng(2)
    entries = np.stack([rng.integers(0, 1000, 10**5),
                        rng.integers(0, 1000, 10**5)], axis=1)
    rows = rng.permutation(50257)[:1563].reshape(1563, 1)
    return {
        "topk": topk_model(8, 50257, 50),
        "topk-all": topk_model(8, 50257, 50257),
        "scatternd-entries": scatternd_model([1000, 1000], entries, [10**5],
                                             "add"),
        "scatternd-slices": scatternd_model([50257, 64], rows, [1563, 64],
                                            "none"),
    }


def memfit(args, name, graph, feeds):
    """(best run time in seconds, outputs)."""
    directory = os.path.join(args.workdir, name)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.onnx")
    onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 18)]), path)
    cmd = [args.memfit_run, path, "--device=host", f"--repeat={args.repeat}",
           f"--output-dir={directory}/out"]
    for n, v in feeds.items():
        np.save(os.path.join(directory, n + ".npy"), v)
        cmd.append(f"--input={n}={directory}/{n}.npy")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    ms = float(re.search(r"forward pass: ([\d.]+) ms", proc.stdout).group(1))
    outputs = {o.name: np.load(os.path.join(directory, "out", o.name + ".npy"))
               for o in graph.output}
    return ms / 1e3, outputs


def onnxruntime(args, graph, feeds):
    model = helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 18)])
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in graph.output]
    outputs = session.run(names, feeds)
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        session.run(names, feeds)
        best = min(best, time.perf_counter() - start)
    return best, dict(zip(names, outputs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memfit-run",
                        default=os.path.join(ROOT, "build", "bin", "memfit-run"))
    parser.add_argument("--workdir", default=os.path.join(
        ROOT, "build", "bench", "topk-scatternd"))
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(f"| case | memfit host | onnxruntime CPU |")
    print(f"|---|---:|---:|")
    for name, (graph, feeds) in cases().items():
        t_memfit, got = memfit(args, name, graph, feeds)
        t_ort, ref = onnxruntime(args, graph, feeds)
        for o in ref:
            if "scatternd-entries" == name:  # sums in one order, not ORT's
                ok = np.allclose(got[o], ref[o], rtol=1e-5, atol=1e-5)
            else:
                ok = np.array_equal(got[o], ref[o])
            if not ok:
                sys.exit(f"{name}: output {o} differs from onnxruntime's")
        print(f"| {name} | {t_memfit * 1e3:.2f} ms | {t_ort * 1e3:.2f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
