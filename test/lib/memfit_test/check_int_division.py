#!/usr/bin/env python3
"""Integer Div and Mod on data that divides by zero, through memfit-run.

The ONNX backend node tests of integer Div and Mod (test_div_uint32,
test_mod_mixed_sign_int64, ...) run on the host backend with inputs that
hold the cases a CPU traps on: divisors 0 (every dividend, the extremes
included) and, for signed types, the lowest value divided by -1. memfit
defines them (docs/robustness.md), as NumPy does:

  x / 0 = 0, x % 0 = 0 (Mod with fmod = 0 or 1),
  INT_MIN / -1 = INT_MIN (it wraps), INT_MIN % -1 = 0,

and every other element as ONNX says (Div truncates; Mod with fmod = 0 has
the divisor's sign, NumPy's remainder, with fmod = 1 the dividend's, NumPy's
fmod). The references are NumPy's floor_divide, remainder and fmod, which
give 0 for a zero divisor and wrap INT_MIN // -1; the truncating quotient
is NumPy's floor quotient moved by one where the remainder is not zero and
the signs differ.

  check_int_division.py --memfit-run build/bin/memfit-run [--workdir DIR]

It prints `PASS case` or `FAIL case: why` per case and `int-division: N
passed, M failed`; the exit status is 1 if any case failed.
"""

import argparse
import os
import subprocess
import sys
import warnings

import numpy as np
import onnx
from onnx import helper

from memfit_test.conformance import collect_cases
from memfit_test.runner import prepare, run_tool

CASES = [
    "test_div_int8", "test_div_int16", "test_div_int32_trunc",
    "test_div_uint8", "test_div_uint16", "test_div_uint32", "test_div_uint64",
    "test_mod_mixed_sign_int8", "test_mod_mixed_sign_int16",
    "test_mod_mixed_sign_int32", "test_mod_mixed_sign_int64",
    "test_mod_uint8", "test_mod_uint16", "test_mod_uint32", "test_mod_uint64",
    "test_mod_int64_fmod",
]


def operands(dtype, shape, rng):
    """Dividends and divisors of `shape`: the pairs a CPU traps on first
    (every value by 0, INT_MIN by -1), then random ones with zeros among the
    divisors."""
    info = np.iinfo(dtype)
    signed = info.min < 0
    if signed:
        special = [(info.min, 0), (info.min, -1), (info.max, 0), (-7, 2),
                   (7, -2), (0, 0), (-7, 0), (info.max, -1), (-7, -2),
                   (info.min, 3), (info.min, info.min), (1, 0)]
    else:
        special = [(info.max, 0), (0, 0), (7, 2), (info.max, 1), (1, 0),
                   (info.max, info.max)]
    n = int(np.prod(shape))
    x = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dtype)
    y = rng.integers(-3 if signed else 0, 4, size=n, dtype=dtype)
    for i, (a, b) in enumerate(special[:n]):
        x[i], y[i] = a, b
    return x.reshape(shape), y.reshape(shape)


def expected(op, fmod, x, y):
    """NumPy's result (its integer operations give 0 for a zero divisor and
    wrap INT_MIN // -1)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op == "Mod":
            return np.fmod(x, y) if fmod else np.remainder(x, y)
        q = np.floor_divide(x, y)
        if np.iinfo(x.dtype).min < 0:
            r = np.remainder(x, y)
            moved = (r != 0) & ((x < 0) != (y < 0))
            q = np.where(moved, q + np.ones_like(q), q)
        return q


def run_case(case, args, env, rng):
    """None, or why `case` fails."""
    model = case.model
    node = model.graph.node[0]
    fmod = next((a.i for a in node.attribute if a.name == "fmod"), 0)
    x_info, y_info = model.graph.input[0], model.graph.input[1]
    dtype = helper.tensor_dtype_to_np_dtype(x_info.type.tensor_type.elem_type)
    shape = [d.dim_value for d in x_info.type.tensor_type.shape.dim]
    directory = os.path.join(args.workdir, case.name)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.onnx")
    onnx.save(model, path)
    x, y = operands(dtype, shape, rng)
    # The node tests broadcast only in test_div_bcast and test_mod_broadcast,
    # which are float; these have operands of one shape.
    y_shape = [d.dim_value for d in y_info.type.tensor_type.shape.dim]
    if y_shape != shape:
        return f"operands of shapes {shape} and {y_shape}"
    cmd = [args.memfit_run, path, "--device=host", "--quiet",
           f"--output-dir={directory}/out"]
    for name, value in ((x_info.name, x), (y_info.name, y)):
        np.save(os.path.join(directory, name + ".npy"), value)
        cmd.append(f"--input={name}={directory}/{name}.npy")
    why = run_tool(cmd, env)
    if why:
        return why
    out = model.graph.output[0].name
    got = np.load(os.path.join(directory, "out", out + ".npy"))
    ref = expected(node.op_type, fmod, x, y)
    if got.dtype != ref.dtype or got.shape != ref.shape:
        return f"got {got.dtype}{list(got.shape)}, expected " \
               f"{ref.dtype}{list(ref.shape)}"
    wrong = np.flatnonzero(got.reshape(-1) != ref.reshape(-1))
    if wrong.size:
        i = wrong[0]
        return (f"{wrong.size} elements differ, first {i}: "
                f"{x.reshape(-1)[i]} {node.op_type} {y.reshape(-1)[i]} gave "
                f"{got.reshape(-1)[i]}, expected {ref.reshape(-1)[i]}")
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memfit-run", required=True)
    parser.add_argument("--workdir")
    args = parser.parse_args()
    env = prepare("int-division", args)
    if env is None:
        return 1
    cases, _ = collect_cases()
    rng = np.random.default_rng(37)
    failed = 0
    for name in CASES:
        why = run_case(cases[name], args, env, rng)
        print(f"PASS {name}" if why is None else f"FAIL {name}: {why}")
        failed += why is not None
    print(f"int-division: {len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
