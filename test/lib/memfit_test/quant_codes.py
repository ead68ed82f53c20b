#!/usr/bin/env python3
"""memfit.quantize / memfit.dequantize against bitsandbytes, code for code.

  quant_codes.py --memfit-run memfit-run --refs test/models/quant_refs.npz \
                 --workdir DIR [--device host]

The references are bitsandbytes 0.50.2's CPU results, saved by
test/models/make_quant_refs.py (this script needs only numpy). For each case
it writes a .mlir function of memfit.quantize and memfit.dequantize ops,
runs it with `memfit-run` on the reference input and compares:

  tables     memfit's code values (dequantized codes 0..255 or 0..15 with
             absmax 1) against create_dynamic_map(signed, unsigned) and
             get_4bit_type(nf4, fp4), bit for bit;
  dynamic    quantize_blockwise with the signed dynamic map at block sizes
             64..4096 (8192 values with outliers, zeros, -0, an all-zero
             block and 126 values on midpoints of the map) and a partial
             last block (1000 values at 256);
  nf4, fp4   quantize_4bit at block size 64 (64x64 values with midpoint
             ties and signed zeros), without and with double quantization:
             the absmax minus bitsandbytes' offset (its fp32 mean, an input
             here) quantized with the signed dynamic map in blocks of 256,
             dequantized and the offset added back before the 4-bit
             dequantization, as bitsandbytes does.

Codes and absmax must be identical; dequantized values must be identical
too, as both sides compute code value * absmax in float32. Prints one line
per case and a summary; exits 1 on any difference.
"""
import argparse
import os
import sys

import numpy as np

from memfit_test.runner import prepare, run_function

BLOCK_SIZES = (64, 128, 256, 512, 1024, 2048, 4096)


def tensor(shape, dtype):
    dims = "x".join(str(d) for d in shape)
    return f"tensor<{dims}x{dtype}>" if dims else f"tensor<{dtype}>"


def nbytes(scheme, n):
    return (n + 1) // 2 if scheme in ("nf4", "fp4") else n


class Case:
    """One function: `body` lines over %arg0..., returning `results`."""

    def __init__(self, name, feeds, args, body, results):
        self.name, self.feeds, self.args = name, feeds, args
        self.body, self.results = body, results

    def text(self):
        args = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(self.args))
        types = ", ".join(t for _, t in self.results)
        values = ", ".join(v for v, _ in self.results)
        lines = [f"func.func @main({args}) -> ({types}) {{"]
        lines += ["  " + line for line in self.body]
        lines += [f"  return {values} : {types}", "}"]
        return "\n".join(lines) + "\n"


def quantize(out, scheme, x, shape, bs):
    n = int(np.prod(shape))
    codes = tensor((nbytes(scheme, n),), "i8" if scheme == "linear" else "ui8")
    absmax = tensor((-(-n // bs),), "f32")
    return (f"%{out}c, %{out}a = memfit.quantize {scheme} {x} "
            f"{{block_size = {bs} : i64}} : {tensor(shape, 'f32')} -> "
            f"{codes}, {absmax}"), codes, absmax


def dequantize(out, scheme, c, a, codes, absmax, shape, bs):
    return (f"%{out} = memfit.dequantize {scheme} {c}, {a} "
            f"{{block_size = {bs} : i64}} : ({codes}, {absmax}) -> "
            f"{tensor(shape, 'f32')}")


def blockwise_case(name, x, scheme, bs):
    shape = x.shape
    q, codes, absmax = quantize("q", scheme, "%arg0", shape, bs)
    d = dequantize("y", scheme, "%qc", "%qa", codes, absmax, shape, bs)
    return Case(name, [x], [tensor(shape, "f32")], [q, d],
                [("%qc", codes), ("%qa", absmax), ("%y", tensor(shape, "f32"))])


def table_case(scheme, count):
    codes = np.arange(count, dtype=np.uint8)
    if scheme in ("nf4", "fp4"):
        codes = ((codes[0::2] << 4) | codes[1::2]).astype(np.uint8)
    ctype = tensor(codes.shape, "ui8")
    d = dequantize("y", scheme, "%arg0", "%arg1", ctype, tensor((1,), "f32"),
                   (count,), count)
    return Case(f"table {scheme}", [codes, np.ones(1, np.float32)],
                [ctype, tensor((1,), "f32")], [d],
                [("%y", tensor((count,), "f32"))])


def double_quant_case(name, x, scheme, offset):
    shape, bs = x.shape, 64
    n = x.size
    blocks = n // bs
    q, codes, absmax = quantize("q", scheme, "%arg0", shape, bs)
    f = tensor((blocks,), "f32")
    nested, ncodes, nabsmax = quantize("n", "dynamic", "%shifted", (blocks,),
                                       256)
    body = [
        q,
        f"%shifted = memfit.sub %qa, %arg1 : {f}, tensor<f32> -> {f}",
        nested,
        dequantize("back", "dynamic", "%nc", "%na", ncodes, nabsmax,
                   (blocks,), 256),
        f"%restored = memfit.add %back, %arg1 : {f}, tensor<f32> -> {f}",
        dequantize("y", scheme, "%qc", "%restored", codes, absmax, shape, bs),
    ]
    return Case(name, [x, np.float32(offset).reshape(())],
                [tensor(shape, "f32"), "tensor<f32>"], body,
                [("%qc", codes), ("%nc", ncodes), ("%na", nabsmax),
                 ("%y", tensor(shape, "f32"))])


def same_bits(got, want):
    got = np.asarray(got).reshape(-1)
    want = np.asarray(want).reshape(-1)
    if got.dtype.kind == "f":
        got, want = got.view(np.uint32), want.astype(np.float32).view(np.uint32)
    return int(np.count_nonzero(got == want)), got.size


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--memfit-run", default="memfit-run")
    p.add_argument("--refs", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--device", default="host")
    args = p.parse_args()
    env = prepare("quant-codes", args)
    if env is None:
        return 2
    r = np.load(args.refs)
    print(f"references: bitsandbytes {r['meta_bnb_version']}")

    # Each check: (case, [(label, output index, reference)]).
    checks = [
        (table_case("dynamic", 256), [("values", 0, r["dynamic_map_signed"])]),
        (table_case("dynamic_unsigned", 256),
         [("values", 0, r["dynamic_map_unsigned"])]),
        (table_case("nf4", 16), [("values", 0, r["q4_code_nf4"])]),
        (table_case("fp4", 16), [("values", 0, r["q4_code_fp4"])]),
    ]
    for bs in BLOCK_SIZES:
        checks.append((blockwise_case(f"dynamic bs={bs}", r["bw_input"],
                                      "dynamic", bs),
                       [("codes", 0, r[f"bw{bs}_codes"]),
                        ("absmax", 1, r[f"bw{bs}_absmax"]),
                        ("dequantized", 2, r[f"bw{bs}_dequant"])]))
    checks.append((blockwise_case("dynamic tail bs=256", r["bwtail_input"],
                                  "dynamic", 256),
                   [("codes", 0, r["bwtail256_codes"]),
                    ("absmax", 1, r["bwtail256_absmax"]),
                    ("dequantized", 2, r["bwtail256_dequant"])]))
    for scheme in ("nf4", "fp4"):
        checks.append((blockwise_case(f"{scheme} bs=64", r["q4_input"],
                                      scheme, 64),
                       [("codes", 0, r[f"q4_{scheme}_dq0_codes"]),
                        ("absmax", 1, r[f"q4_{scheme}_dq0_absmax"]),
                        ("dequantized", 2, r[f"q4_{scheme}_dq0_dequant"])]))
        pre = f"q4_{scheme}_dq1"
        checks.append((double_quant_case(f"{scheme} bs=64 double-quant",
                                         r["q4_input"], scheme,
                                         r[f"{pre}_offset"][0]),
                       [("codes", 0, r[f"{pre}_codes"]),
                        ("nested codes", 1, r[f"{pre}_absmax_q"]),
                        ("nested absmax", 2, r[f"{pre}_nested_absmax"]),
                        ("dequantized", 3, r[f"{pre}_dequant"])]))

    failed = 0
    for case, comparisons in checks:
        outputs, why = run_function(
            args.memfit_run,
            os.path.join(args.workdir, case.name.replace(" ", "-")),
            case.text(), case.feeds, len(case.results), args.device, env)
        if why:
            print(f"FAIL {case.name}: {why}")
            failed += 1
            continue
        parts, ok = [], True
        for label, index, want in comparisons:
            same, total = same_bits(outputs[index], want)
            text = f"{label} {same}/{total}"
            if same != total:
                ok = False
                got = outputs[index].reshape(-1)
                ref = np.asarray(want).reshape(-1)
                i = int(np.nonzero(got.view(np.uint32) != ref.astype(np.float32).view(np.uint32))[0][0]
                        if got.dtype.kind == "f" else np.nonzero(got != ref)[0][0])
                text += f" (first at {i}: got {got[i]!r}, want {ref[i]!r})"
            parts.append(text)
        print(f"{'PASS' if ok else 'FAIL'} {case.name}: " + ", ".join(parts))
        failed += not ok
    print(f"quant-codes: {len(checks) - failed} of {len(checks)} cases "
          f"identical to bitsandbytes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
