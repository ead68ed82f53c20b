#!/usr/bin/env python3
"""The ONNX backend node tests through memfit-run (host backend).

The `onnx` package's node tests (`onnx/backend/test/data/node/test_*`: a
model.onnx with one node, or the function body of an op "expanded" into
several, and test_data_set_*/input_*.pb, output_*.pb) are the ONNX project's
own conformance cases. This script runs every case of an op that memfit's
importer converts, and every other case whose model uses only such ops:

  conformance.py --memfit-run build/bin/memfit-run [--workdir DIR] [--jobs N]
                 [--timeout S] [--cases FILE] [--data DIR] [--markdown DOC]
                 [--list]

Cases come from DIR (`--data`, laid out as onnx/backend/test/data/node),
else from the onnx package's data/node directory where the package ships
it, else from the package's case definitions (onnx.backend.test.case.node,
which generate the same models and data). "Supported" is the importer's
op table (the converters that lib/Import/Onnx*Ops.cpp register);
BASELINE_OPS is that table at commit c9e86de, before this suite existed, so
that progress is measured on the same ops.

Each case is written to WORKDIR/cases/<case>/ (model.onnx, one .npy per
input) and run with `memfit-run --device=host --output-dir`; every graph
output is compared as the ONNX backend test runner does: same shape and
dtype, then numpy.testing.assert_allclose with the case's rtol and atol
(1e-3 and 1e-7 for every node test; NaN equals NaN). A case is
  PASS     all outputs match,
  REFUSED  memfit rejects the model with a diagnostic (an error located at
           the model or one of its nodes); the message, with names and
           numbers taken out, is the reason,
  WRONG    an output differs, memfit-run fails after import (a runtime or
           kernel compile error), crashes or runs past --timeout.

memfit compiles for static shapes, so an input that decides a shape
(Reshape's shape, Slice's starts, a reduction's axes...) must be known at
compile time; the node tests feed those as graph inputs. When memfit refuses
a case because a graph input is not known at compile time, the input is
given its value with memfit-run's --input-value (it becomes a constant, as
exporters write such inputs) and the case runs again; such passes are
counted apart ("with constant inputs"), and --no-constant-inputs turns this
off.

It prints one line per case (`PASS name [(constant inputs: ...)]`,
`REFUSED name: reason`, `WRONG name: why` with a reproducer), then the
totals. With --cases FILE (one case
name per line, # comments) only those run and every one must pass; the exit
status is 1 if any listed case does not pass, or (without --cases) if any
case is wrong. --markdown DOC rewrites the tables between the markers
`<!-- conformance:begin -->` and `<!-- conformance:end -->` of DOC.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
from onnx import numpy_helper

from memfit_test.runner import prepare

SRC_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..",
                                        ".."))
IMPORT_DIR = os.path.join(SRC_ROOT, "lib", "Import")

# lib/Import/OnnxOps.cpp's op table at c9e86de.
BASELINE_OPS = frozenset("""
Neg Exp Log Sqrt Reciprocal Erf Tanh Sigmoid Relu Sin Cos Not Gelu Dropout
Identity Cast CastLike Trilu Add Sub Mul Div Pow Equal Less Greater Where
MatMul Gemm Einsum Softmax LogSoftmax LayerNormalization RMSNormalization
ReduceSum ReduceMean ReduceMax Transpose Reshape Flatten Squeeze Unsqueeze
Concat Split Slice Gather Expand Shape Size Constant ConstantOfShape Range
SoftmaxCrossEntropyLoss NegativeLogLikelihoodLoss
""".split())

BEGIN, END = "<!-- conformance:begin -->", "<!-- conformance:end -->"


def supported_ops(directory=IMPORT_DIR):
    """The op types of the default domain in the importer's table: each
    `table.onOp("Add", 13, ...` of the converter files Onnx*Ops.cpp (ops
    of other domains are named "domain.OpType")."""
    ops = set()
    for path in glob.glob(os.path.join(directory, "Onnx*Ops.cpp")):
        with open(path) as f:
            ops.update(re.findall(r'\bonOp\("([A-Za-z]+)",', f.read()))
    return frozenset(ops)


# ---------------------------------------------------------------------------
# Cases.
# ---------------------------------------------------------------------------

class Case:
    """One node test: its model and data sets [(inputs, outputs)]."""

    def __init__(self, name, model, data_sets, rtol=1e-3, atol=1e-7):
        self.name, self.model, self.data_sets = name, model, data_sets
        self.rtol, self.atol = rtol, atol
        self.op = None  # the op under test, set by tested_ops

    def ops(self):
        """The (domain, op type) of every node, subgraphs included."""
        found = set()

        def walk(graph):
            for node in graph.node:
                found.add((node.domain, node.op_type))
                for a in node.attribute:
                    if a.type == onnx.AttributeProto.GRAPH:
                        walk(a.g)
                    for g in a.graphs:
                        walk(g)
        walk(self.model.graph)
        return found

    def uses_only(self, ops):
        return all(d in ("", "ai.onnx") and t in ops for d, t in self.ops())

    def opset(self):
        return next((o.version for o in self.model.opset_import
                     if o.domain in ("", "ai.onnx")), 0)


def to_array(value):
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def load_dir(directory):
    """A case laid out as onnx/backend/test/data/node/<case>/."""
    model = onnx.load(os.path.join(directory, "model.onnx"))
    sets = []
    for d in sorted(glob.glob(os.path.join(directory, "test_data_set_*"))):
        def read(kind):
            arrays, i = [], 0
            while os.path.exists(p := os.path.join(d, f"{kind}_{i}.pb")):
                t = onnx.TensorProto()
                with open(p, "rb") as f:
                    t.ParseFromString(f.read())
                arrays.append(numpy_helper.to_array(t))
                i += 1
            return arrays
        sets.append((read("input"), read("output")))
    return Case(os.path.basename(directory), model, sets)


def collect_cases(data_dir=None):
    """Every node test, by name: from `data_dir`, the package's data, or the
    package's case definitions. Returns (cases, where they came from)."""
    if data_dir is None:
        shipped = os.path.join(os.path.dirname(onnx.__file__), "backend",
                               "test", "data", "node")
        if os.path.isdir(shipped):
            data_dir = shipped
    if data_dir:
        cases = [load_dir(d) for d in
                 sorted(glob.glob(os.path.join(data_dir, "test_*")))]
        where = data_dir
    else:
        from onnx.backend.test.case import node as node_cases
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tests = node_cases.collect_testcases()
        # Converted when run: some cases of other ops hold sequences.
        cases = [Case(t.name, t.model, t.data_sets, t.rtol, t.atol)
                 for t in tests]
        where = f"onnx {onnx.__version__} case definitions"
    by_name = {c.name: c for c in cases}
    tested_ops(by_name)
    return by_name, where


def tested_ops(by_name):
    """Sets each case's op under test: the node of its one-node model, or for
    `<case>_expanded[_verN]` (the op's function body) that of `<case>`."""
    for c in by_name.values():
        base = by_name.get(re.sub(r"_expanded(_ver\d+)?$", "", c.name), c)
        nodes = base.model.graph.node
        c.op = nodes[-1].op_type if nodes else "(none)"


# ---------------------------------------------------------------------------
# Running one case.
# ---------------------------------------------------------------------------

# memfit's diagnostics, from the most to the least specific, as reasons.
REASONS = [
    (r"model uses opset (\d+) of domain 'ai.onnx'; memfit supports opsets "
     r"(\d+) to (\d+)", lambda m: f"opset {m[1]} (memfit supports {m[2]} to "
     f"{m[3]})" if int(m[1]) > int(m[3]) else f"opset {m[1]} (older than "
     f"{m[2]})"),
    (r"unsupported ONNX op '(\w+)'[^;]*; (?:it is the only|the graph has "
     r"\d+ other unsupported ops?: (.*))",
     lambda m: "unsupported ONNX op " + ", ".join(sorted(
         {m[1]} | set(re.findall(r"(\w+) x\d+", m[2] or ""))))),
    (r"cannot emit CUDA for '([\w.]+)': unsupported element type '(\w+)'",
     lambda m: f"element type {m[2]} (no kernel for it)"),
    (r"casts from '(\w+)' to '(\w+)' are not supported \(they would round "
     r"twice\)", lambda m: f"cast {m[1]} to {m[2]} (would round twice)"),
    (r"'(memfit\.\w+)' op operand #\d+ must be .* values, but got "
     r"'tensor<(?:\d+x)*(\w+)>'",
     lambda m: f"{m[1]} does not take {m[2]}"),
    (r"(\w+) \(input \d+, '[^']*'\) must be .* known at compile time",
     lambda m: f"input {m[1]} not known at compile time"),
    (r"(cast to |has )unsupported (?:data type (\d+)|(\w+))",
     lambda m: ("cast to " if m[1] == "cast to " else "") + "element type "
     + (onnx.TensorProto.DataType.Name(int(m[2])) if m[2] else m[3])),
    (r"equation '[^']*' repeats index", lambda m: "Einsum with a repeated "
     "index in one term (a diagonal)"),
    (r"equation '[^']*' is not supported \(an ellipsis\)",
     lambda m: "Einsum with an ellipsis"),
    (r"graph input '[^']*' is not a tensor",
     lambda m: "graph input not a tensor (sequence or optional)"),
]


def normalize(message):
    """A refusal's reason: memfit's message without the location prefix,
    node and tensor names, and numbers."""
    for pattern, reason in REASONS:
        if m := re.search(pattern, message):
            return reason(m)
    text = message.strip().splitlines()[0] if message.strip() else ""
    text = re.sub(r"^memfit-run: ", "", text)
    text = re.sub(r"^loc\(.*?\): error: ", "", text)
    text = re.sub(r"^.*?: error: ", "", text)
    text = re.sub(r"^ONNX node '[^']*' \(\w+\): ", "", text)
    text = re.sub(r" \(inputs: .*\)$", "", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"tensor<[^>]*>", "tensor<…>", text)
    text = re.sub(r"\b\d+(x\d+)+\b", "N", text)
    return text


def is_diagnostic(message):
    """Whether memfit-run failed on a diagnostic located in the model."""
    return bool(re.search(r"(^|\n)memfit-run: loc\(.*\): error: ", message)
                or re.search(r"model uses opset \d+ of domain", message))


# ml_dtypes' types, which memfit reads and writes as raw bytes.
ML_DTYPES = {"bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
             "float8_e5m2fnuz", "float4_e2m1fn", "int4", "uint4", "int2",
             "uint2"}


def compare(got, ref, rtol, atol):
    """None, or why `got` is not `ref` (the ONNX backend runner's test)."""
    if got.shape != ref.shape:
        return f"shape {list(got.shape)}, expected {list(ref.shape)}"
    # NumPy has no bfloat16, float8, float4 or sub-byte integers: memfit
    # writes their bits as raw bytes ('|V2', '|V1'), ml_dtypes' layout.
    if got.dtype.kind == "V" and got.dtype.itemsize == ref.dtype.itemsize \
            and ref.dtype.name in ML_DTYPES:
        got = got.view(ref.dtype)
    if got.dtype != ref.dtype:
        return f"dtype {got.dtype}, expected {ref.dtype}"
    # 16-bit floats within two units in the last place: memfit computes
    # them in float and rounds once per kernel, the case definitions round
    # after every NumPy operation, so the two differ by the reference's own
    # rounding (test_attention_4d_causal_fp16_expanded: memfit is within
    # 4.0e-4 of the exact result, the expected output within 4.9e-4, and
    # they differ by 2 ulps, 1.2e-3 relative).
    if ref.dtype.name == "bfloat16":
        rtol = max(rtol, 2 ** -6)
    if ref.dtype == np.float16:
        rtol = max(rtol, 2 ** -9)
    if ref.dtype.name in ML_DTYPES:
        wide = np.int8 if "int" in ref.dtype.name else np.float32
        got, ref = got.astype(wide), ref.astype(wide)
    try:
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    except AssertionError as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        return "; ".join(ln for ln in lines
                         if ln.startswith(("Mismatched", "Max")))
    return None


COMPILE_TIME = re.compile(r"(\w+) \(input \d+, '([^']*)'\) must be .* known "
                          r"at compile time")


def input_value(name, value):
    """memfit-run's --input-value giving graph input `name` its value."""
    flat = np.asarray(value).reshape(-1)
    if flat.dtype == np.bool_:
        text = ["true" if v else "false" for v in flat]
    elif np.issubdtype(flat.dtype, np.integer):
        text = [str(int(v)) for v in flat]
    else:
        text = [repr(float(v)) for v in flat]
    return f"--input-value={name}={','.join(text)}"


def run_set(case, k, feeds, refs, constants, args, env):
    """Runs data set `k`: (status, why)."""
    directory = os.path.join(args.workdir, "cases", case.name)
    model_path = os.path.join(directory, f"model{k}.onnx")
    onnx.save(case.model, model_path)
    inputs = [i.name for i in case.model.graph.input
              if i.name not in {t.name for t in case.model.graph.initializer}]
    outputs = [o.name for o in case.model.graph.output]
    out = os.path.join(directory, f"out{k}")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [args.memfit_run, model_path, "--device=host", "--quiet",
           f"--output-dir={out}"]
    for j, (name, value) in enumerate(zip(inputs, feeds)):
        if name in constants:
            cmd.append(input_value(name, constants[name]))
            continue
        p = os.path.join(directory, f"input{k}_{j}.npy")
        np.save(p, to_array(value))
        cmd.append(f"--input={name}={p}")
    reproduce = " ".join(cmd)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return "WRONG", f"timed out after {args.timeout} s\n    " \
            f"reproduce: {reproduce}"
    message = (proc.stderr.strip() or proc.stdout.strip())
    if proc.returncode < 0 or proc.returncode > 1:
        return "WRONG", (f"crashed (exit status {proc.returncode}): "
                         f"{message[-1000:]}\n    reproduce: {reproduce}")
    if proc.returncode == 1:
        if is_diagnostic(message) or re.search(r"unsupported dtype", message):
            return "REFUSED", message
        return "WRONG", (f"failed after import: {message[-1000:]}"
                         f"\n    reproduce: {reproduce}")
    for name, ref in zip(outputs, refs):
        file = re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".npy"
        path = os.path.join(out, file)
        if not os.path.exists(path):
            return "WRONG", f"output '{name}' not written\n    " \
                f"reproduce: {reproduce}"
        why = compare(np.load(path), to_array(ref), case.rtol, case.atol)
        if why:
            return "WRONG", (f"output '{name}': {why}\n    reproduce: "
                             f"{reproduce}")
    return "PASS", ""


def not_comparable(case, feeds):
    """Why the case's outputs cannot be compared with NumPy's, or None:
    training-mode Dropout draws its mask from memfit's generator."""
    inputs = [i.name for i in case.model.graph.input]
    values = {t.name: numpy_helper.to_array(t)
              for t in case.model.graph.initializer}
    values.update((n, to_array(v)) for n, v in zip(inputs, feeds))

    def value(node, i, default):
        name = node.input[i] if len(node.input) > i else ""
        return values.get(name, default) if name else default
    for node in case.model.graph.node:
        if node.op_type != "Dropout":
            continue
        if bool(value(node, 2, False)) and float(value(node, 1, 0.5)) > 0:
            return ("training-mode Dropout: a random mask (memfit's "
                    "generator, not NumPy's)")
    return None


def run_case(case, args, env):
    """(status, why, constants): PASS, REFUSED with a reason, or WRONG with
    the cause; `constants` names the graph inputs that were given as
    initializers because memfit needs their values at compile time."""
    directory = os.path.join(args.workdir, "cases", case.name)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    inputs = [i.name for i in case.model.graph.input
              if i.name not in {t.name for t in case.model.graph.initializer}]
    used = set()
    for k, (feeds, refs) in enumerate(case.data_sets):
        if why := not_comparable(case, feeds):
            return "REFUSED", why, []
        constants = {}
        while True:
            status, why = run_set(case, k, feeds, refs, constants, args, env)
            m = COMPILE_TIME.search(why) if status == "REFUSED" else None
            if (not m or not args.constant_inputs or m[2] in constants
                    or m[2] not in inputs):
                break
            constants[m[2]] = to_array(feeds[inputs.index(m[2])])
        used |= set(constants)
        if status == "REFUSED":
            return status, normalize(why), sorted(used)
        if status != "PASS":
            return status, why, sorted(used)
    shutil.rmtree(directory, ignore_errors=True)
    return "PASS", "", sorted(used)


# ---------------------------------------------------------------------------
# Reporting.
# ---------------------------------------------------------------------------

def markdown(results, cases, baseline, ops, where):
    """The generated part of docs/onnx-conformance.md."""
    lines = []

    def totals(title, names):
        c = Counter(results[n][0] for n in names)
        const = sum(1 for n in names if results[n][0] == "PASS"
                    and results[n][2])
        lines.append(f"| {title} | {len(names)} | {c['PASS']} | {const} | "
                     f"{c['REFUSED']} | {c['WRONG']} |")

    in_base = [n for n in results if cases[n].op in baseline]
    lines += [f"Cases: {where}.", "",
              "| cases | all | pass | of which with constant inputs | "
              "refused | wrong |",
              "|---|---:|---:|---:|---:|---:|"]
    totals("all that ran", list(results))
    totals("of the ops supported at c9e86de", in_base)
    totals("of the ops supported now", [n for n in results
                                        if cases[n].op in ops])
    totals("of other ops, expanded into supported ones",
           [n for n in results if cases[n].op not in ops])
    reasons = Counter(results[n][1] for n in results
                      if results[n][0] == "REFUSED")
    lines += ["", "Refusals by reason:", "",
              "| reason | cases |", "|---|---:|"]
    for reason, count in sorted(reasons.items(), key=lambda x: (-x[1], x[0])):
        lines.append(f"| {reason} | {count} |")
    by_op = defaultdict(list)
    for n in results:
        by_op[cases[n].op].append(n)
    lines += ["", "Per op (the op under test: a case's one node, or the op "
              "whose function body an `_expanded` case spells out):", "",
              "| op | cases | pass (with constant inputs) | refused (reasons) "
              "| wrong |",
              "|---|---:|---:|---|---:|"]
    for op in sorted(by_op):
        names = by_op[op]
        c = Counter(results[n][0] for n in names)
        why = Counter(results[n][1] for n in names
                      if results[n][0] == "REFUSED")
        refused = str(c["REFUSED"])
        if why:
            refused += ": " + "; ".join(
                f"{r} ({k})" for r, k in sorted(why.items(),
                                                key=lambda x: (-x[1], x[0])))
        mark = "" if op in ops else " (not converted)"
        const = sum(1 for n in names if results[n][0] == "PASS"
                    and results[n][2])
        passed = f"{c['PASS']}" + (f" ({const})" if const else "")
        lines.append(f"| {op}{mark} | {len(names)} | {passed} | "
                     f"{refused} | {c['WRONG']} |")
    wrong = sorted(n for n in results if results[n][0] == "WRONG")
    if wrong:
        lines += ["", "Wrong:", ""]
        lines += [f"- `{n}`: {results[n][1].splitlines()[0]}" for n in wrong]
    return "\n".join(lines) + "\n"


def rewrite_doc(path, generated):
    with open(path) as f:
        text = f.read()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + generated + END + tail)


def read_list(path):
    with open(path) as f:
        return [ln.split("#")[0].strip() for ln in f
                if ln.split("#")[0].strip()]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--memfit-run", default="memfit-run",
                   help="the memfit-run tool (default: from PATH)")
    p.add_argument("--workdir", help="where models, inputs and outputs are "
                   "kept (default: a new temporary directory)")
    p.add_argument("--jobs", "-j", type=int, default=2,
                   help="cases run in parallel (default 2)")
    p.add_argument("--timeout", type=float, default=120,
                   help="seconds one memfit-run may take (default 120)")
    p.add_argument("--data", help="node test directories (default: the "
                   "onnx package's data, else its case definitions)")
    p.add_argument("--cases", help="a file of case names that must pass")
    p.add_argument("--markdown", help="rewrite the generated tables of this "
                   "document")
    p.add_argument("--no-constant-inputs", dest="constant_inputs",
                   action="store_false", help="do not give the inputs "
                   "memfit needs at compile time with --input-value")
    p.add_argument("--list", action="store_true",
                   help="list the cases that would run, run nothing")
    args = p.parse_args()

    cases, where = collect_cases(args.data)
    ops = supported_ops()
    if args.cases:
        names = read_list(args.cases)
        missing = [n for n in names if n not in cases]
        if missing:
            print(f"conformance: no such case: {', '.join(missing)}")
            return 1
    else:
        names = sorted(n for n, c in cases.items()
                       if c.op in ops or c.uses_only(ops))
    if args.list:
        for n in names:
            print(f"{n} ({cases[n].op}, opset {cases[n].opset()})")
        return 0

    env = prepare("conformance", args, keep_cache=True)
    if env is None:
        return 2
    print(f"conformance: {len(names)} cases from {where}; workdir "
          f"{args.workdir}")

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(lambda n: run_case(cases[n], args, env),
                                 names))
    results = dict(zip(names, outcomes))
    for n, (status, why, constants) in results.items():
        print(f"{status} {n}" + (f": {why}" if why else "")
              + (f" (constant inputs: {', '.join(constants)})"
                 if constants and status == "PASS" else ""))
    count = Counter(s for s, _, _ in results.values())
    in_base = [n for n in names if cases[n].op in BASELINE_OPS]
    base = Counter(results[n][0] for n in in_base)
    print(f"conformance: {time.monotonic() - start:.1f} s")
    const = {n for n, r in results.items() if r[0] == "PASS" and r[2]}
    print(f"conformance: ops at c9e86de: {len(in_base)} cases, "
          f"{base['PASS']} passed ({len(const & set(in_base))} with "
          f"constant inputs), {base['REFUSED']} refused, "
          f"{base['WRONG']} wrong")
    print(f"conformance: {len(names)} cases, {count['PASS']} passed "
          f"({len(const)} with constant inputs), {count['REFUSED']} "
          f"refused, {count['WRONG']} wrong")
    if args.markdown:
        rewrite_doc(args.markdown, markdown(results, cases, BASELINE_OPS,
                                            ops, where))
    if args.cases:
        return 0 if count["PASS"] == len(names) else 1
    return 1 if count["WRONG"] else 0


if __name__ == "__main__":
    sys.exit(main())
