"""memfit-run --plan-only on a model whose weight file is absent plans what
the model with its weights plans.

    check_plan_only.py MEMFIT_RUN MAKE_LLAMA WORKDIR

MAKE_LLAMA is bench/make_llama.py. It writes the tiny Llama-style model
twice: with its weights file (WORKDIR/weights) and without it
(WORKDIR/shapes, --shapes-only). Checks, each printing PASS or FAIL:
  - the generated graph: memfit-run's forward pass on the model with weights
    gives onnxruntime's logits (max error <= 1e-4 of their largest
    magnitude), so the benchmark's Llama-7B shape is a graph memfit imports
    right;
  - for each configuration (forward, full fine-tuning, LoRA, QLoRA, remat
    policies, accumulation), --plan-only prints the same plan and memory
    report for both models, timings aside;
  - the plan is what a run allocates: memfit-run --train on the model with
    weights allocates the bytes that --plan-only reported.
"""

import os
import re
import subprocess
import sys

import numpy as np
import onnxruntime as ort

SHAPE = "--input-shape=batch=2,seq=16"
TRAIN = ["--train", "--loss=cross-entropy"]
LORA = ["--lora-rank=8", "--lora-alpha=16", "--lora-targets=all-linear"]
QLORA = LORA + ["--quantize-weights=nf4", "--double-quant", "--precision=bf16"]
CONFIGS = {
    "forward": [],
    "full": TRAIN,
    "full-checkpoint-layers": TRAIN + ["--remat=checkpoint-layers"],
    "lora-accumulate": TRAIN + LORA + ["--accumulate=2"],
    "qlora-checkpoint-layers": TRAIN + QLORA + ["--remat=checkpoint-layers"],
    "qlora-budget": TRAIN + QLORA + ["--budget=680KiB"],
}
# Lines that hold a time.
TIMED = re.compile(r"^(compiled .* in [0-9.]+ ms|remat pass time: .*)$")

failures = []


def check(ok, what, detail=""):
    print(("PASS " if ok else "FAIL ") + what + (f": {detail}" if detail else ""))
    if not ok:
        failures.append(what)


def run(args):
    result = subprocess.run(args, capture_output=True, text=True)
    return result.returncode, result.stdout, result.stderr


def main():
    memfit_run, make_llama, workdir = sys.argv[1:4]
    paths = {}
    for kind, flags in (("weights", []), ("shapes", ["--shapes-only"])):
        os.makedirs(os.path.join(workdir, kind), exist_ok=True)
        paths[kind] = os.path.join(workdir, kind, "llama.onnx")
        subprocess.run([sys.executable, make_llama, paths[kind], "--preset",
                        "tiny"] + flags, check=True, capture_output=True)
    check(not os.path.exists(paths["shapes"] + ".weights"),
          "the shapes-only model has no weights file")

    # The graph against onnxruntime.
    ids = np.random.default_rng(0).integers(0, 128, (2, 16)).astype(np.int64)
    ids_path = os.path.join(workdir, "ids.npy")
    np.save(ids_path, ids)
    ref = ort.InferenceSession(paths["weights"]).run(None, {"input_ids": ids})[0]
    out_dir = os.path.join(workdir, "out")
    code, out, err = run([memfit_run, paths["weights"], SHAPE, "--device=host",
                          "--quiet", f"--input=input_ids={ids_path}",
                          f"--output-dir={out_dir}"])
    if code != 0:
        check(False, "forward pass", err)
    else:
        got = np.load(os.path.join(out_dir, "logits.npy"))
        error = float(np.abs(got - ref).max() / np.abs(ref).max())
        check(error <= 1e-4, "memfit's logits against onnxruntime's",
              f"relative error {error:.1e}")

    reports = {}
    for name, flags in CONFIGS.items():
        texts = {}
        for kind, path in paths.items():
            code, out, err = run([memfit_run, path, SHAPE, "--plan-only"] + flags)
            if code != 0:
                texts[kind] = f"exit {code}: {err}"
                continue
            texts[kind] = "\n".join(line for line in out.splitlines()
                                    if not TIMED.match(line))
        same = texts["weights"] == texts["shapes"] and "exit" not in texts["weights"]
        check(same, f"{name}: the plan without the weights file is the plan "
              "with it", "" if same else texts["shapes"][:2000])
        reports[name] = texts["shapes"]

    # What a run allocates, against the plan.
    for name in ("lora-accumulate", "qlora-budget"):
        match = re.search(r"one allocation\s+([0-9,]+)", reports[name])
        code, out, err = run([memfit_run, paths["weights"], SHAPE,
                              "--device=host", "--steps=1"] + CONFIGS[name])
        allocated = re.search(r"allocated: ([0-9,]+) bytes", out)
        ok = code == 0 and match and allocated and \
            match.group(1) == allocated.group(1)
        check(bool(ok), f"{name}: a run allocates the planned bytes",
              f"plan {match.group(1) if match else '?'}, run "
              f"{allocated.group(1) if allocated else err}")

    print("FAIL plan-only" if failures else "PASS plan-only")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
