"""Runs a fixture model with memfit-run and compares its outputs with the
onnxruntime references committed beside it.

    check_fixture.py MEMFIT_RUN MODELS_DIR NAME EXPORTER WORKDIR [-- memfit-run args]

NAME is gpt, bert or llama and EXPORTER ts or dynamo. Passes when every
output matches: max |memfit - ref| <= 1e-4 * max(1, max |ref|).
"""

import os
import subprocess
import sys

import numpy as np

TOLERANCE = 1e-4


def main():
    memfit_run, models, name, exporter, workdir = sys.argv[1:6]
    extra = sys.argv[7:] if len(sys.argv) > 6 and sys.argv[6] == "--" else []
    os.makedirs(workdir, exist_ok=True)
    inputs = np.load(os.path.join(models, f"{name}_inputs.npz"))
    refs = np.load(os.path.join(models, f"{name}_{exporter}_ref.npz"))
    model = os.path.join(models, f"{name}_{exporter}.onnx")

    args = [memfit_run, model, "--quiet", "--output-dir", os.path.join(workdir, "out")]
    shapes = []
    for key, value in inputs.items():
        path = os.path.join(workdir, f"{key}.npy")
        np.save(path, value)
        args.append(f"--input={key}={path}")
    # The fixtures' dynamic dimensions are named batch and seq.
    batch, seq = inputs["input_ids"].shape
    args.append(f"--input-shape=batch={batch},seq={seq}")
    args += extra
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        print(f"FAIL {name}_{exporter}: memfit-run exited {result.returncode}")
        print(result.stdout + result.stderr)
        return 1

    failed = 0
    for key, ref in refs.items():
        path = os.path.join(workdir, "out", key.replace("/", "_") + ".npy")
        got = np.load(path)
        if got.shape != ref.shape or got.dtype != ref.dtype:
            print(f"FAIL {name}_{exporter} {key}: {got.dtype}{list(got.shape)} "
                  f"vs reference {ref.dtype}{list(ref.shape)}")
            failed += 1
            continue
        err = float(np.max(np.abs(got.astype(np.float64) - ref)))
        bound = TOLERANCE * max(1.0, float(np.max(np.abs(ref))))
        status = "PASS" if err <= bound else "FAIL"
        failed += status == "FAIL"
        print(f"{status} {name}_{exporter} {key}: max abs error {err:.3g} "
              f"(bound {bound:.3g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
