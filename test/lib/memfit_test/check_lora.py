#!/usr/bin/env python3
"""memfit-lora against PEFT (references from test/models/make_lora_refs.py).

  check_lora.py grads MEMFIT_RUN MODELS WORKDIR [FIXTURE...]
      memfit-run --gradients with --lora-rank=4 --lora-alpha=8
      --lora-targets=all-linear on each fixture's gradient inputs (those of
      <fixture>_grads.npz): the loss equals PEFT's within 1e-5 relative, the
      gradients produced are exactly the adapters PEFT trains (by name), and
      each equals PEFT's within 1e-4 of its largest element; lora_A's are
      zero at the start (lora_B is zero), within 1e-7 absolutely.

  check_lora.py curve MEMFIT_RUN MODELS WORKDIR [STEPS] [FIXTURE...]
      200 AdamW steps of the same LoRA on train_refs_bf16.json's data and
      settings: every step's loss within 1e-3 of PEFT's (relative), and the
      memory report's trainable and total parameter counts equal PEFT's
      (plus, in the total, float buffers that the exporter wrote as
      initializers, which memfit counts as frozen parameters).

  check_lora.py qlora MEMFIT_RUN MODELS WORKDIR [STEPS] [FIXTURE...]
      The same run as QLoRA: the frozen base in NF4 with double
      quantization (--quantize-weights=nf4 --double-quant), compute in bf16:
      the final loss within 2% of PEFT's fp32 LoRA, and the memory report
      shows the quantized base at 0.50 B/value of codes (plus scales).

Prints one line per fixture with the measured differences, then PASS or FAIL.
"""

import json
import os
import re
import sys

import numpy as np
import onnx

from memfit_test.check_training import (fixture_args, max_rel_diff,
                                        read_losses, report, run_pinned)

LORA = ["--lora-rank=4", "--lora-alpha=8", "--lora-targets=all-linear"]
# QLoRA: the frozen base in NF4 with double quantization, compute in bf16.
QLORA = ["--quantize-weights=nf4", "--double-quant", "--precision=bf16"]
QLORA_TOLERANCE = 2e-2
LOSS_TOLERANCE = 1e-5
GRAD_TOLERANCE = 1e-4
ZERO_TOLERANCE = 1e-7
CURVE_TOLERANCE = 1e-3


def fixture_inputs(models, name):
    """The fixture's graph inputs and loss inputs, as the grads test uses."""
    family = name.split("_")[0]
    inputs = dict(np.load(os.path.join(models, f"{family}_inputs.npz")))
    refs = np.load(os.path.join(models, f"{name}_grads.npz"))
    loss = "cross-entropy" if "labels" in refs.files else "mse"
    inputs["labels" if loss == "cross-entropy" else "target"] = \
        refs["labels" if loss == "cross-entropy" else "target"]
    return inputs, loss


def grads(memfit_run, models, workdir, *names):
    refs = np.load(os.path.join(models, "lora_refs.npz"))
    fixtures = sorted({k.split("/")[0] for k in refs.files})
    names = names or fixtures
    failures = []
    for name in names:
        out = os.path.join(workdir, name)
        os.makedirs(out, exist_ok=True)
        inputs, loss = fixture_inputs(models, name)
        args = [memfit_run, os.path.join(models, f"{name}.onnx"), "--gradients",
                f"--loss={loss}", f"--output-dir={out}", "--quiet",
                "--device=host"] + LORA
        shapes = ",".join(f"{k}={'x'.join(map(str, v.shape))}"
                          for k, v in inputs.items()
                          if k not in ("labels", "target"))
        args.append(f"--input-shape={shapes}")
        for key, value in inputs.items():
            path = os.path.join(out, f"in.{key}.npy")
            np.save(path, value)
            args.append(f"--input={key}={path}")
        run_pinned([args])  # exits with FAIL when memfit-run fails
        want = {k[len(name) + 6:]: refs[k] for k in refs.files
                if k.startswith(f"{name}/grad.")}
        got = {f[5:-4] for f in os.listdir(out)
               if f.startswith("grad.") and f.endswith(".npy")}
        if got != set(want):
            failures.append(f"{name}: gradients {sorted(got ^ set(want))} are "
                            "in one of memfit's and PEFT's sets only")
            continue
        ref_loss = float(refs[f"{name}/loss"])
        loss_rel = abs(float(np.load(os.path.join(out, "loss.npy"))) -
                       ref_loss) / abs(ref_loss)
        worst_b, worst_a = 0.0, 0.0
        for key, ref in want.items():
            g = np.load(os.path.join(out, f"grad.{key}.npy")).astype(np.float64)
            if key.endswith("lora_A.weight"):
                worst_a = max(worst_a, float(np.abs(g - ref).max()))
                if np.abs(ref).max() != 0:
                    failures.append(f"{name}: PEFT's {key} gradient is not 0")
            else:
                rel = float(np.abs(g - ref).max() / np.abs(ref).max())
                worst_b = max(worst_b, rel)
        print(f"{name}: {len(want)} adapter gradients; loss rel diff "
              f"{loss_rel:.2e}; lora_B worst max_rel {worst_b:.2e}; lora_A "
              f"worst max_abs {worst_a:.2e} (zero at the start)")
        if loss_rel > LOSS_TOLERANCE:
            failures.append(f"{name}: loss differs by {loss_rel:.2e}")
        if worst_b > GRAD_TOLERANCE:
            failures.append(f"{name}: lora_B gradient differs by {worst_b:.2e}")
        if worst_a > ZERO_TOLERANCE:
            failures.append(f"{name}: lora_A gradient {worst_a:.2e}, not 0")
    return report("lora-grads", failures)


def curve(memfit_run, models, workdir, steps=None, *names):
    return train(memfit_run, models, workdir, steps, names, qlora=False)


def qlora(memfit_run, models, workdir, steps=None, *names):
    return train(memfit_run, models, workdir, steps, names, qlora=True)


def train(memfit_run, models, workdir, steps, names, qlora):
    settings = json.load(open(os.path.join(models, "train_refs_bf16.json")))
    lora = json.load(open(os.path.join(models, "train_refs_lora.json")))
    names = names or list(lora["fixtures"])
    steps = int(steps or len(lora["fixtures"][names[0]]["losses"]))
    jobs, buffers = [], {}
    for name in names:
        fixture = settings["fixtures"][name]["settings"]
        args = fixture_args(memfit_run, models, workdir, name, fixture, steps)
        # Float buffers the exporter wrote as initializers (rotary inv_freq)
        # are parameters to memfit (frozen here), buffers to PyTorch.
        proto = onnx.load(os.path.join(models, fixture["onnx_file"]))
        buffers[name] = sum(int(np.prod(t.dims)) for t in proto.graph.initializer
                            if t.name in fixture["frozen"])
        jobs.append(args + LORA + (QLORA if qlora else []) + [
            "--memory-report", f"--losses={os.path.join(workdir, name)}.csv"])
    outputs = run_pinned(jobs)  # exits with FAIL when memfit-run fails
    failures = []
    for name, stdout in zip(names, outputs):
        ref = lora["fixtures"][name]
        got = read_losses(os.path.join(workdir, f"{name}.csv"))
        rel, step = max_rel_diff(got, ref["losses"][:steps])
        share = re.search(r"([\d,]+) trainable parameters of ([\d,]+)", stdout)
        counts = tuple(int(share.group(i).replace(",", "")) for i in (1, 2)) \
            if share else None
        base = re.search(r"quantized frozen weights: ([\d,]+) values in "
                         r"([\d.]+) B/value of codes \+ ([\d.]+) of scales",
                         stdout)
        if qlora:
            final = abs(got[steps] - ref["losses"][steps - 1]) / \
                ref["losses"][steps - 1]
            print(f"{name}: final loss QLoRA {got[steps]:.6f}, PEFT LoRA fp32 "
                  f"{ref['losses'][steps - 1]:.6f}, rel diff {final:.2e} "
                  f"(tolerance {QLORA_TOLERANCE:.0e}); largest per-step rel "
                  f"diff {rel:.2e} (step {step}); base "
                  + (f"{base.group(1)} values in {base.group(2)} B/value of "
                     f"codes + {base.group(3)} of scales" if base else "-"))
            if final > QLORA_TOLERANCE:
                failures.append(f"{name}: final loss {final:.2e} from LoRA's")
            if not base or float(base.group(2)) != 0.5:
                failures.append(f"{name}: the base is not in 4-bit codes")
            continue
        print(f"{name}: max rel diff vs PEFT {rel:.2e} (step {step}, tolerance "
              f"{CURVE_TOLERANCE:.0e}); final loss {got[steps]:.6f}, PEFT "
              f"{ref['losses'][steps - 1]:.6f}; trainable {counts}, PEFT "
              f"({ref['trainable_parameters']}, {ref['all_parameters']}) + "
              f"{buffers[name]} buffer values")
        if rel > CURVE_TOLERANCE:
            failures.append(f"{name}: loss differs by {rel:.2e} at step {step}")
        if counts != (ref["trainable_parameters"],
                      ref["all_parameters"] + buffers[name]):
            failures.append(f"{name}: trainable parameters {counts}")
    return report("qlora-curve" if qlora else "lora-curve", failures)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    os.makedirs(rest[2], exist_ok=True)
    sys.exit({"grads": grads, "curve": curve, "qlora": qlora}[mode](*rest))
