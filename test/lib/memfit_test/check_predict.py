#!/usr/bin/env python3
"""memfit-run --predict against the manifest and memfit-op-cost.

  check_predict.py MEMFIT_RUN MEMFIT_OPT MODEL SHAPE LOSS WORKDIR

Compiles MODEL's training step with memfit-run (saving the executable) and
prints its predicted times on every GPU of the table; runs the same
pipeline through memfit-opt --memfit-op-cost. Checks that:
  - the manifest's per-step costs add up to memfit-op-cost's traffic line
    (bytes moved, FLOPs) and its entry's lower bound to op-cost's bound;
    the copies of a Gemm's bias into its output (kernels `k<n>_gemm_bias`,
    which the emitter adds and op-cost does not list) are left out of the
    sum, and a contraction epilogue's fallback kernel (the column sum
    op-cost lists) is in it;
  - each kernel's kind agrees with its name where the name says it
    (attention kernels are named after memfit.attention, the optimizer's
    multi-tensor kernels after their updates);
  - a launch per kernel and contraction step;
  - each printed total equals the roofline sum recomputed here from the
    manifest with the data sheets' figures (SXM parts, dense): A100 2.039
    TB/s, 19.5 TFLOP/s f32, 312 bf16; H100 3.35 TB/s, 67 and 989.4; H200
    4.8 TB/s, 67 and 989.4; 90% of the bandwidth, 75% of the peak, 2 us a
    launch;
  - and so does each floor (the lower bound's bytes at the full bandwidth
    against every step's FLOPs at the full peaks).
Prints the totals and PASS or FAIL lines.
"""

import json
import os
import re
import sys

from memfit_test.check_training import report, run

GPUS = {
    "NVIDIA A100-SXM4-80GB": (2.039e12, 19.5e12, 312e12),
    "NVIDIA H100-SXM5-80GB": (3.35e12, 67e12, 989.4e12),
    "NVIDIA H200-SXM-141GB": (4.8e12, 67e12, 989.4e12),
}


def number(text):
    return int(text.replace(",", ""))


def predicted(manifest, bandwidth, fp32, half):
    total = floor_flops = 0.0
    entry = manifest["entries"][0]
    for step in entry["steps"]:
        if step["kind"] == "collective":
            continue
        if step["kind"] == "contraction":
            c = manifest["contractions"][step["index"]]
            peak = half if c["dtype"] in ("f16", "bf16") else fp32
        else:
            c = manifest["kernels"][step["index"]]
            peak = fp32
        b, f = c.get("bytes", 0), c.get("flops", 0)
        total += max(b / (0.9 * bandwidth), f / (0.75 * peak)) + 2e-6
        floor_flops += f / peak
    floor = max(entry.get("boundBytes", 0) / bandwidth, floor_flops)
    return total * 1e3, floor * 1e3


def main():
    memfit_run, memfit_opt, model, shape, loss, workdir = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    exe = os.path.join(workdir, "exe")
    out = run([memfit_run, model, f"--input-shape={shape}", "--train",
               f"--loss={loss}", "--compile-only", "--quiet",
               f"--save-executable={exe}", "--predict=all"])
    manifest = json.load(open(os.path.join(exe, "manifest.json")))
    cost = run([memfit_opt, model, f"--input-shape={shape}",
                f"--memfit-train-pipeline=loss={loss}", "--memfit-op-cost",
                "-o", os.devnull])
    failures = []

    moved = re.search(r"traffic: \d+ steps .*, ([\d,]+) FLOPs, ([\d,]+) bytes "
                      r"moved", cost)
    bound = re.search(r"traffic: lower bound ([\d,]+) bytes", cost)
    steps = manifest["kernels"] + manifest["contractions"]
    listed = [s for s in steps if not s["name"].endswith("_gemm_bias")]
    flops = sum(s.get("flops", 0) for s in listed)
    bytes_ = sum(s.get("bytes", 0) for s in listed)
    if not moved or not bound:
        failures.append("no traffic lines from memfit-op-cost:\n" + cost)
    else:
        print(f"manifest: {bytes_} bytes, {flops} FLOPs, bound "
              f"{manifest['entries'][0].get('boundBytes')}")
        if (bytes_, flops) != (number(moved.group(2)), number(moved.group(1))):
            failures.append(f"manifest {bytes_} bytes, {flops} FLOPs; "
                            f"op-cost {moved.group(0)}")
        if manifest["entries"][0].get("boundBytes") != number(bound.group(1)):
            failures.append(f"boundBytes {manifest['entries'][0].get('boundBytes')}"
                            f" != op-cost's {bound.group(1)}")

    for k in manifest["kernels"]:
        kind = k.get("kind", "elementwise")
        if "_attention" in k["name"] and kind != "attention":
            failures.append(f"{k['name']} is {kind}")
        if kind == "attention" and "_attention" not in k["name"]:
            failures.append(f"{k['name']} is attention")

    tables = re.findall(r"predicted on (.*) \(sm_\d+\), entry 'train_step':\n"
                        r"(?:.*\n)*?  total ([\d.]+) ms \((\d+) launches.*floor "
                        r"([\d.]+) ms", out)
    if len(tables) != len(GPUS):
        failures.append("expected a table per GPU:\n" + out)
    for name, total, launches, floor in tables:
        want_total, want_floor = predicted(manifest, *GPUS[name])
        print(f"{name}: total {total} ms (recomputed {want_total:.4f}), "
              f"floor {floor} ms (recomputed {want_floor:.4f})")
        if abs(float(total) - want_total) > 5e-4 or \
                abs(float(floor) - want_floor) > 5e-4:
            failures.append(f"{name}: printed {total}/{floor}, recomputed "
                            f"{want_total:.4f}/{want_floor:.4f}")
        # A launch per kernel and contraction step: a contraction's epilogue
        # replaces its fallback kernel, which has no step.
        launched = [s for s in manifest["entries"][0]["steps"]
                    if s["kind"] != "collective"]
        if int(launches) != len(launched):
            failures.append(f"{name}: {launches} launches for "
                            f"{len(launched)} kernel and contraction steps")
    return report("predict", failures)


if __name__ == "__main__":
    sys.exit(main())
