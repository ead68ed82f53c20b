#!/usr/bin/env python3
"""Indices out of range at run time: memfit-run fails as onnxruntime does.

For each of Gather, GatherElements, GatherND, ScatterElements and ScatterND
a model takes its indices from a graph input (through an Add for Gather, so
that they are computed, not an input the session checks before the run).
With indices in range, memfit-run's outputs equal onnxruntime's; with one
index out of range, onnxruntime fails the node ("Non-zero status code
returned while running Gather node. Name:'g'") and memfit-run must fail
too, with a non-zero exit status and a message naming the kernel, the ONNX
node and the index (docs/robustness.md).

  check_index_range.py --memfit-run build/bin/memfit-run [--workdir DIR]

Prints `PASS op` or `FAIL op: why`, then `index-range: N passed, M
failed`; exit status 1 if any failed.
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from memfit_test.runner import prepare

F, I = TensorProto.FLOAT, TensorProto.INT64


def case(op, shapes, attrs, good, bad, bad_value):
    """(op, model, feeds with good indices, feeds with bad ones, the bad
    index as memfit reports it)."""
    x = np.arange(np.prod(shapes["x"]), dtype=np.float32).reshape(shapes["x"])
    inputs = [helper.make_tensor_value_info("x", F, shapes["x"]),
              helper.make_tensor_value_info("i", I, list(good.shape))]
    names = ["x", "i"]
    nodes, inits = [], []
    feeds = {"x": x}
    if op == "Gather":
        inits.append(numpy_helper.from_array(np.array([1], np.int64), "one"))
        nodes.append(helper.make_node("Add", ["i", "one"], ["j"], name="add"))
        names = ["x", "j"]
    if "u" in shapes:
        inputs.append(helper.make_tensor_value_info("u", F, shapes["u"]))
        names.append("u")
        feeds["u"] = np.full(shapes["u"], -1, np.float32)
    node = "node_" + op.lower()
    nodes.append(helper.make_node(op, names, ["y"], name=node, **attrs))
    graph = helper.make_graph(nodes, op, inputs,
                              [helper.make_tensor_value_info("y", F, None)],
                              initializer=inits)
    model = helper.make_model(graph, ir_version=8,
                              opset_imports=[helper.make_opsetid("", 18)])
    return (op, node, model, dict(feeds, i=good), dict(feeds, i=bad),
            bad_value)


CASES = [
    case("Gather", {"x": [4, 3]}, {"axis": 0}, np.array([0, 2, -3]),
         np.array([0, 3, 1]), 4),
    case("GatherElements", {"x": [3, 4]}, {"axis": 1},
         np.array([[0, 3], [-4, 1], [2, 2]]),
         np.array([[0, 3], [-5, 1], [2, 2]]), -5),
    case("GatherND", {"x": [3, 4, 2]}, {}, np.array([[0, 3], [-1, -4]]),
         np.array([[0, 3], [1, 4]]), 4),
    case("ScatterElements", {"x": [3, 4], "u": [3, 2]}, {"axis": 1},
         np.array([[0, 3], [-4, 1], [2, 0]]),
         np.array([[0, 3], [-4, 1], [2, 9]]), 9),
    case("ScatterND", {"x": [5, 3], "u": [2, 3]}, {},
         np.array([[4], [-5]]), np.array([[4], [-6]]), -6),
]


def run_memfit(args, env, directory, model, feeds):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.onnx")
    onnx.save(model, path)
    cmd = [args.memfit_run, path, "--device=host", "--quiet",
           f"--output-dir={directory}/out"]
    for name, value in feeds.items():
        np.save(os.path.join(directory, name + ".npy"), value)
        cmd.append(f"--input={name}={directory}/{name}.npy")
    return subprocess.run(cmd, capture_output=True, text=True, env=env,
                          timeout=600)


def check(c, args, env):
    op, node, model, good, bad, bad_value = c
    options = ort.SessionOptions()
    options.log_severity_level = 4  # the failure is expected: not logged
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    ref = session.run(["y"], good)[0]
    try:
        session.run(["y"], bad)
        return "onnxruntime accepts the bad indices"
    except Exception as e:  # the oracle's behaviour: the node fails
        if f"Name:'{node}'" not in str(e):
            return f"onnxruntime fails otherwise: {e}"
    directory = os.path.join(args.workdir, op)
    proc = run_memfit(args, env, os.path.join(directory, "good"), model, good)
    if proc.returncode != 0:
        return f"good indices: exit status {proc.returncode}: {proc.stderr}"
    got = np.load(os.path.join(directory, "good", "out", "y.npy"))
    if got.shape != ref.shape or not np.array_equal(got, ref):
        return f"good indices: {got.tolist()}, onnxruntime {ref.tolist()}"
    proc = run_memfit(args, env, os.path.join(directory, "bad"), model, bad)
    message = (proc.stderr + proc.stdout).strip()
    pattern = (rf"kernel 'k\d+_\w+' found index {bad_value} out of range: "
               rf"ONNX node '{node}' \(memfit\.\w+\): an index into axis \d+ "
               rf"of the data \([\dx]+\) must be within \[-\d+, \d+\]")
    if proc.returncode == 0 or not re.search(pattern, message):
        return (f"bad indices: exit status {proc.returncode}, message "
                f"'{message}'")
    print(f"  {op}: {message.splitlines()[-1]}")
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memfit-run", required=True)
    parser.add_argument("--workdir")
    args = parser.parse_args()
    env = prepare("index-range", args)
    if env is None:
        return 1
    failed = 0
    for c in CASES:
        why = check(c, args, env)
        print(f"PASS {c[0]}" if why is None else f"FAIL {c[0]}: {why}")
        failed += why is not None
    print(f"index-range: {len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
