"""Runs an ONNX model with memfit-run and with onnxruntime on the same
seeded random inputs and compares every graph output.

    check_ort.py MEMFIT_RUN MODEL WORKDIR [-- memfit-run args]

Float inputs are standard normal, integer ones uniform in [0, 4), bool ones
uniform (numpy seeded with 0). Passes when every output has onnxruntime's
shape and dtype and max |memfit - ort| <= 1e-4 * max(1, max |ort|) over the
finite reference values (integers and bools exactly); prints one line per
output and `PASS` or `FAIL: why`.
"""

import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from memfit_test.runner import split_passthrough

TOLERANCE = 1e-4


def main():
    argv, extra = split_passthrough(sys.argv[1:])
    memfit_run, model_path, workdir = argv
    os.makedirs(workdir, exist_ok=True)
    model = onnx.load(model_path)
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(0)
    feeds, args = {}, []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        shape = [d.dim_value for d in t.shape.dim]
        if np.issubdtype(dtype, np.floating):
            value = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            value = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            value = rng.integers(0, 4, shape).astype(dtype)
        feeds[vi.name] = value
        path = os.path.join(workdir, vi.name + ".npy")
        np.save(path, value)
        args.append(f"--input={vi.name}={path}")
    names = [o.name for o in model.graph.output]
    refs = ort.InferenceSession(model_path).run(names, feeds)
    out = os.path.join(workdir, "out")
    done = subprocess.run([memfit_run, model_path, "--quiet",
                           f"--output-dir={out}"] + args + extra,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(f"FAIL: memfit-run exited {done.returncode}: {done.stderr}")
        return 1
    failures = []
    for name, ref in zip(names, refs):
        got = np.load(os.path.join(out, name + ".npy"))
        if got.shape != ref.shape or got.dtype != ref.dtype:
            failures.append(f"{name}: {got.dtype}{list(got.shape)}, expected "
                            f"{ref.dtype}{list(ref.shape)}")
            continue
        if not np.issubdtype(ref.dtype, np.floating):
            err = float(np.count_nonzero(got != ref))
        else:
            finite = np.isfinite(ref)
            if not np.array_equal(np.isfinite(got), finite):
                failures.append(f"{name}: non-finite values differ")
                continue
            scale = max(1.0, float(np.abs(ref[finite]).max(initial=0)))
            err = float(np.abs(got[finite] - ref[finite]).max(initial=0)) / scale
        print(f"{name}: max error {err:.2e}")
        if err > (0 if not np.issubdtype(ref.dtype, np.floating)
                  else TOLERANCE):
            failures.append(f"{name}: error {err:.2e}")
    print("PASS" if not failures else "FAIL: " + "; ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
