#!/usr/bin/env python3
"""memfit-lora against PEFT (references from test/models/make_lora_refs.py).

  check_lora.py grads MEMFIT_RUN MODELS WORKDIR [FIXTURE...]
      memfit-run --gradients with --lora-rank=4 --lora-alpha=8
      --lora-targets=all-linear on each fixture's gradient inputs (those of
      <fixture>_grads.npz), twice: with memfit's initial adapters (lora_A's
      gradients are then zero, within 1e-7, since lora_B is zero), and with
      the adapters PEFT saved (--load-adapters=lora_<family>_adapters.
      safetensors, lora_B nonzero). Each time the loss equals PEFT's within
      1e-5 relative, the gradients produced are exactly the adapters PEFT
      trains (by name), and each equals PEFT's within 1e-4 of its largest
      element.

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

  check_lora.py remat-accumulate MEMFIT_RUN MODELS WORKDIR [STEPS] [FIXTURE...]
      The curve run with layer checkpoints (--remat=checkpoint-layers) and
      each step's batch as two micro-batches of half the size
      (--accumulate=2): every step's loss within 1e-3 of PEFT's, remat
      recomputing values.

  check_lora.py bf16-remat-accumulate MEMFIT_RUN MODELS WORKDIR [STEPS] [FIXTURE...]
      The same with bf16 compute and remat auto keeping 60% of the
      activations: the final loss within 2% of PEFT's fp32 LoRA, and every
      step's within 1e-2.

  check_lora.py export MEMFIT_RUN MODELS WORKDIR [FIXTURE...]
      5 LoRA steps with --export-adapters and --export-safetensors: the
      files (read by the safetensors format's definition, numpy only) hold
      PEFT's adapter names and the trained parameters, bit for bit the
      checkpoint's values.

Prints one line per fixture with the measured differences, then PASS or FAIL.
"""

import json
import os
import re
import sys

import numpy as np
import onnx

from memfit_test.check_grads import gradient_inputs, input_args
from memfit_test.check_training import (fixture_args, max_rel_diff,
                                        read_checkpoint, read_losses, report,
                                        run_pinned)

LORA = ["--lora-rank=4", "--lora-alpha=8", "--lora-targets=all-linear"]
# QLoRA: the frozen base in NF4 with double quantization, compute in bf16.
QLORA = ["--quantize-weights=nf4", "--double-quant", "--precision=bf16"]
QLORA_TOLERANCE = 2e-2
# bf16 LoRA against PEFT's fp32 curve, every step (check_training's bound
# for bf16 against PyTorch's bf16 curve).
BF16_STEP_TOLERANCE = 1e-2
LOSS_TOLERANCE = 1e-5
GRAD_TOLERANCE = 1e-4
ZERO_TOLERANCE = 1e-7
CURVE_TOLERANCE = 1e-3


def fixture_inputs(models, name):
    """The fixture's graph inputs and loss inputs, as the grads test uses."""
    return gradient_inputs(models, *name.split("_"))


def gradient_run(memfit_run, models, out, name, extra, lora=True):
    """memfit-run --gradients (with LoRA, else of the whole model) on the
    fixture's gradient inputs; the loss and the gradient files it wrote."""
    os.makedirs(out, exist_ok=True)
    inputs, loss = fixture_inputs(models, name)
    args = [memfit_run, os.path.join(models, f"{name}.onnx"), "--gradients",
            f"--loss={loss}", f"--output-dir={out}", "--quiet",
            "--device=host"] + (LORA if lora else []) + extra
    args += input_args(inputs, out)
    run_pinned([args])  # exits with FAIL when memfit-run fails
    got = {f[5:-4]: np.load(os.path.join(out, f)).astype(np.float64)
           for f in os.listdir(out) if f.startswith("grad.") and f.endswith(".npy")}
    return float(np.load(os.path.join(out, "loss.npy"))), got


def compare(name, label, loss, got, ref_loss, want, failures, zero_a):
    """Prints and checks one run against PEFT's loss and gradients."""
    if set(got) != set(want):
        failures.append(f"{name} ({label}): gradients {sorted(set(got) ^ set(want))} "
                        "are in one of memfit's and PEFT's sets only")
        return
    loss_rel = abs(loss - ref_loss) / abs(ref_loss)
    worst = {"A": 0.0, "B": 0.0}
    for key, ref in want.items():
        which = "A" if key.endswith("lora_A.weight") else "B"
        if zero_a and which == "A":
            worst["A"] = max(worst["A"], float(np.abs(got[key]).max()))
            if np.abs(ref).max() != 0:
                failures.append(f"{name}: PEFT's {key} gradient is not 0")
            continue
        rel = float(np.abs(got[key] - ref).max() / np.abs(ref).max())
        worst[which] = max(worst[which], rel)
    a = (f"lora_A max_abs {worst['A']:.2e} (zero)" if zero_a
         else f"lora_A worst max_rel {worst['A']:.2e}")
    print(f"{name} ({label}): {len(want)} adapter gradients; loss rel diff "
          f"{loss_rel:.2e}; lora_B worst max_rel {worst['B']:.2e}; {a}")
    if loss_rel > LOSS_TOLERANCE:
        failures.append(f"{name} ({label}): loss differs by {loss_rel:.2e}")
    if worst["B"] > GRAD_TOLERANCE:
        failures.append(f"{name} ({label}): lora_B gradient differs by "
                        f"{worst['B']:.2e}")
    if worst["A"] > (ZERO_TOLERANCE if zero_a else GRAD_TOLERANCE):
        failures.append(f"{name} ({label}): lora_A gradient differs by "
                        f"{worst['A']:.2e}")


def grads(memfit_run, models, workdir, *names):
    refs = np.load(os.path.join(models, "lora_refs.npz"))
    fixtures = sorted({k.split("/")[0] for k in refs.files})
    names = names or fixtures
    failures = []
    for name in names:
        family = name.split("_")[0]
        for label, prefix, extra in (
                ("initial", f"{name}/", []),
                ("loaded", f"{name}/loaded/",
                 [f"--load-adapters={os.path.join(models, f'lora_{family}_adapters.safetensors')}"])):
            loss, got = gradient_run(memfit_run, models,
                                     os.path.join(workdir, name, label), name, extra)
            want = {k[len(prefix) + 5:]: refs[k] for k in refs.files
                    if k.startswith(prefix + "grad.")}
            compare(name, label, loss, got, float(refs[prefix + "loss"]), want,
                    failures, zero_a=label == "initial")
    return report("lora-grads", failures)


def split_micro_batches(args, workdir, name):
    """Turns a fixture's memfit-run arguments into the same optimizer steps
    over two micro-batches of half the batch each (--accumulate=2): the
    input shapes' first dimension halved, and each --data array's batches
    split in two (micro-batch 2s + j is half j of step s's batch, which is
    what the corpus reader gives by itself). Every fixture's loss is a mean
    over equal parts, so the step is the same."""
    out = []
    for arg in args:
        if arg.startswith("--input-shape="):
            shapes = []
            for spec in arg[len("--input-shape="):].split(","):
                key, dims = spec.split("=")
                first, *rest = dims.split("x")
                shapes.append(f"{key}=" + "x".join([str(int(first) // 2)] + rest))
            arg = "--input-shape=" + ",".join(shapes)
        elif arg.startswith("--accumulate="):
            assert arg == "--accumulate=1", arg
            arg = "--accumulate=2"
        elif arg.startswith("--data="):
            key, path = arg[len("--data="):].split("=", 1)
            data = np.load(path)
            split = os.path.join(workdir, f"{name}.{key}.micro.npy")
            np.save(split, data.reshape(data.shape[0] * 2, data.shape[1] // 2,
                                        *data.shape[2:]))
            arg = f"--data={key}={split}"
        out.append(arg)
    return out


# What each variant adds to the LoRA run. remat-accumulate: layer
# checkpoints and two micro-batches per step, fp32 (the curve's tolerance);
# bf16-remat-accumulate: bf16 compute, remat auto keeping 60% of the
# activations, two micro-batches (QLoRA's tolerance on the final loss).
VARIANTS = {
    "lora": [],
    "qlora": QLORA,
    "remat-accumulate": ["--remat=checkpoint-layers"],
    "bf16-remat-accumulate": ["--precision=bf16", "--remat=auto",
                              "--activation-fraction=0.6"],
}


def train(variant, memfit_run, models, workdir, steps=None, *names):
    settings = json.load(open(os.path.join(models, "train_refs_bf16.json")))
    lora = json.load(open(os.path.join(models, "train_refs_lora.json")))
    names = names or list(lora["fixtures"])
    steps = int(steps or len(lora["fixtures"][names[0]]["losses"]))
    final_only = variant in ("qlora", "bf16-remat-accumulate")
    jobs, buffers = [], {}
    for name in names:
        fixture = settings["fixtures"][name]["settings"]
        args = fixture_args(memfit_run, models, workdir, name, fixture, steps)
        if variant.endswith("accumulate"):
            args = split_micro_batches(args, workdir, name)
        # Float buffers the exporter wrote as initializers (rotary inv_freq)
        # are parameters to memfit (frozen here), buffers to PyTorch.
        proto = onnx.load(os.path.join(models, fixture["onnx_file"]))
        buffers[name] = sum(int(np.prod(t.dims)) for t in proto.graph.initializer
                            if t.name in fixture["frozen"])
        jobs.append(args + LORA + VARIANTS[variant] + [
            "--memory-report", "--remat-report=" +
            os.path.join(workdir, f"{name}.remat.txt"),
            f"--losses={os.path.join(workdir, name)}.csv"])
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
        remat = remat_totals(os.path.join(workdir, f"{name}.remat.txt"))
        if variant.endswith("accumulate") and not remat[1]:
            failures.append(f"{name}: remat recomputed nothing")
        if final_only:
            final = abs(got[steps] - ref["losses"][steps - 1]) / \
                ref["losses"][steps - 1]
            what = "QLoRA" if variant == "qlora" else "LoRA bf16"
            print(f"{name}: final loss {what} {got[steps]:.6f}, PEFT LoRA fp32 "
                  f"{ref['losses'][steps - 1]:.6f}, rel diff {final:.2e} "
                  f"(tolerance {QLORA_TOLERANCE:.0e}); largest per-step rel "
                  f"diff {rel:.2e} (step {step}); "
                  + (f"base {base.group(1)} values in {base.group(2)} B/value "
                     f"of codes + {base.group(3)} of scales"
                     if variant == "qlora" and base else
                     f"remat: {remat[0]} saved, {remat[1]} recomputed"))
            if final > QLORA_TOLERANCE:
                failures.append(f"{name}: final loss {final:.2e} from LoRA's")
            if variant != "qlora" and rel > BF16_STEP_TOLERANCE:
                failures.append(f"{name}: loss differs by {rel:.2e} at step "
                                f"{step}")
            if variant == "qlora" and (not base or float(base.group(2)) != 0.5):
                failures.append(f"{name}: the base is not in 4-bit codes")
            continue
        print(f"{name}: max rel diff vs PEFT {rel:.2e} (step {step}, tolerance "
              f"{CURVE_TOLERANCE:.0e}); final loss {got[steps]:.6f}, PEFT "
              f"{ref['losses'][steps - 1]:.6f}; trainable {counts}, PEFT "
              f"({ref['trainable_parameters']}, {ref['all_parameters']}) + "
              f"{buffers[name]} buffer values"
              + (f"; remat: {remat[0]} saved, {remat[1]} recomputed"
                 if variant != "lora" else ""))
        if rel > CURVE_TOLERANCE:
            failures.append(f"{name}: loss differs by {rel:.2e} at step {step}")
        if counts != (ref["trainable_parameters"],
                      ref["all_parameters"] + buffers[name]):
            failures.append(f"{name}: trainable parameters {counts}")
    return report({"lora": "lora-curve", "qlora": "qlora-curve"}.get(
        variant, "lora-" + variant), failures)


def remat_totals(path):
    """(saved, recomputed) values of a remat report's totals line."""
    with open(path) as f:
        m = re.search(r"totals: (\d+) saved \(\d+ bytes\), (\d+) recomputed",
                      f.read())
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def read_safetensors(path):
    """{name: array} and the metadata of a safetensors file, read by the
    format's definition (an 8-byte little-endian header size, the JSON
    header, the data without gaps), with numpy only; asserts the layout."""
    data = open(path, "rb").read()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + size])
    assert size % 8 == 0, "header not padded to 8 bytes"
    blob = data[8 + size:]
    dtypes = {"F32": np.float32, "F64": np.float64, "F16": np.float16,
              "I64": np.int64, "I32": np.int32, "I8": np.int8, "U8": np.uint8}
    meta = header.pop("__metadata__", {})
    out, end = {}, 0
    for name, v in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, stop = v["data_offsets"]
        assert begin == end, f"{name}: gap or overlap"
        end = stop
        out[name] = np.frombuffer(blob[begin:stop], dtypes[v["dtype"]]).reshape(
            v["shape"])
    assert end == len(blob), "bytes after the last tensor"
    return out, meta


PEFT_PREFIX = "base_model.model."


def export(memfit_run, models, workdir, *names):
    """Trains each fixture 5 LoRA steps with --export-adapters,
    --export-safetensors and --checkpoint: the adapters file holds exactly
    PEFT's adapter names (those of lora_refs.npz, base_model.model.<module>.
    lora_A.weight) and the parameters file exactly the trained parameters,
    each bit for bit the checkpoint's value."""
    settings = json.load(open(os.path.join(models, "train_refs_bf16.json")))
    refs = np.load(os.path.join(models, "lora_refs.npz"))
    names = names or ["gpt_ts", "llama_dynamo"]
    failures = []
    for name in names:
        fixture = settings["fixtures"][name]["settings"]
        out = os.path.join(workdir, name)
        os.makedirs(out, exist_ok=True)
        adapters = os.path.join(out, "adapters.safetensors")
        params = os.path.join(out, "params.safetensors")
        checkpoint = os.path.join(out, "ckpt")
        run_pinned([fixture_args(memfit_run, models, workdir, name, fixture, 5)
                    + LORA + [f"--export-adapters={adapters}",
                              f"--export-safetensors={params}",
                              f"--checkpoint={checkpoint}"]])
        state = read_checkpoint(checkpoint)
        got, meta = read_safetensors(adapters)
        everything, _ = read_safetensors(params)
        want = {PEFT_PREFIX + k[len(name) + 6:] for k in refs.files
                if k.startswith(f"{name}/grad.")}
        trained = {k for k in state if k.endswith(".weight") and ".lora_" in k}
        if set(got) != want:
            failures.append(f"{name}: adapter names {sorted(set(got) ^ want)} "
                            "differ from PEFT's")
        if set(everything) != trained:
            failures.append(f"{name}: parameters {sorted(set(everything) ^ trained)}"
                            " differ from the trained ones")
        same = all(np.array_equal(v, state[k[len(PEFT_PREFIX):]])
                   for k, v in got.items()) and all(
            np.array_equal(v, state[k]) for k, v in everything.items())
        if not same:
            failures.append(f"{name}: exported values differ from the checkpoint")
        print(f"{name}: {len(got)} adapters exported with PEFT's names, "
              f"{len(everything)} trained parameters, metadata {meta}, values "
              f"{'equal' if same else 'DIFFER from'} the checkpoint's")
    return report("lora-export", failures)


def numpy_loss(logits, inputs, loss):
    """The fixtures' loss on outputs, as make_train_refs.loss_fn."""
    out = logits.astype(np.float64)
    if loss == "mse":
        return float(np.mean((out - inputs["target"]) ** 2))
    flat = out.reshape(-1, out.shape[-1])
    labels = inputs["labels"].reshape(-1)
    keep = labels != -100
    shifted = flat - flat.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-logp[keep, labels[keep]].mean())


def export_onnx(memfit_run, models, workdir, *names):
    """Trains 5 steps and exports the model (--export): onnxruntime on the
    exported file gives the loss that memfit computes at the trained
    parameters (--gradients --load-adapters of the exported parameters),
    within 1e-5 relative: LoRA merged (gpt_ts), LoRA merged with the
    weights in an external data file (llama_dynamo), full fine-tuning with
    the tied transposed embedding copy following its weight (gpt_ts)."""
    import onnxruntime as ort
    settings = json.load(open(os.path.join(models, "train_refs_bf16.json")))
    cases = [("gpt_ts", "lora", LORA), ("llama_dynamo", "lora-external",
                                        LORA + ["--export-external-data"]),
             ("gpt_ts", "full", [])]
    failures = []
    for name, label, flags in cases:
        if names and name not in names:
            continue
        fixture = settings["fixtures"][name]["settings"]
        out = os.path.join(workdir, f"{name}-{label}")
        os.makedirs(out, exist_ok=True)
        exported = os.path.join(out, "trained.onnx")
        params = os.path.join(out, "params.safetensors")
        run_pinned([fixture_args(memfit_run, models, workdir, name, fixture, 5)
                    + flags + [f"--export={exported}",
                               f"--export-safetensors={params}"]])
        inputs, loss = fixture_inputs(models, name)
        memfit_loss, _ = gradient_run(
            memfit_run, models, os.path.join(out, "grads"), name,
            [f"--load-adapters={params}"], lora=label != "full")
        session = ort.InferenceSession(exported,
                                       providers=["CPUExecutionProvider"])
        feeds = {i.name: inputs[i.name] for i in session.get_inputs()}
        logits = session.run(None, feeds)[0]
        original = ort.InferenceSession(os.path.join(models, f"{name}.onnx"),
                                        providers=["CPUExecutionProvider"])
        before = original.run(None, feeds)[0]
        # memfit's own import of the export (external data included).
        forward = os.path.join(out, "forward")
        os.makedirs(forward, exist_ok=True)
        run_pinned([[memfit_run, exported, "--device=host", "--quiet",
                     f"--output-dir={forward}"] + input_args(feeds, forward)])
        output = session.get_outputs()[0].name
        mine = np.load(os.path.join(forward, f"{output}.npy"))
        forward_rel = float(np.abs(mine - logits).max() / np.abs(logits).max())
        if forward_rel > GRAD_TOLERANCE:
            failures.append(f"{name} ({label}): memfit's forward pass on the "
                            f"export differs from onnxruntime's by "
                            f"{forward_rel:.2e}")
        got = numpy_loss(logits, inputs, loss)
        rel = abs(got - memfit_loss) / abs(memfit_loss)
        changed = float(np.abs(logits - before).max())
        external = os.path.exists(exported + ".data")
        print(f"{name} ({label}): onnxruntime loss on the export {got:.6f}, "
              f"memfit {memfit_loss:.6f}, rel diff {rel:.2e}; memfit's "
              f"forward pass on the export vs onnxruntime's {forward_rel:.2e}; "
              f"outputs moved "
              f"by up to {changed:.2e} from the original model; external "
              f"data file: {'yes' if external else 'no'}")
        if rel > LOSS_TOLERANCE:
            failures.append(f"{name} ({label}): loss differs by {rel:.2e}")
        if changed == 0:
            failures.append(f"{name} ({label}): the export equals the original")
        if external != (label == "lora-external"):
            failures.append(f"{name} ({label}): external data file {external}")
    return report("onnx-export", failures)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    os.makedirs(rest[2], exist_ok=True)
    # The training modes run `train` with the variant of VARIANTS they name
    # ("curve": plain LoRA).
    variant = {"curve": "lora"}.get(mode, mode)
    if variant in VARIANTS:
        sys.exit(train(variant, *rest))
    sys.exit({"grads": grads, "export": export, "onnx": export_onnx}[mode](*rest))
