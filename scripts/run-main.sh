#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs memfit's main job on the shipped
# GPT-style model: compile it for batch 2 x sequence 16, print the memory
# plan, run the forward pass on the fixture's token ids (on CUDA where a GPU
# is usable, else on the host backend) and print a summary of the logits.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
model=${1:-test/models/gpt_ts.onnx}
inputs=build/main-job
mkdir -p "$inputs"
.venv/bin/python - "$inputs" <<'PY'
import sys
import numpy as np
for name, value in np.load("test/models/gpt_inputs.npz").items():
    np.save(f"{sys.argv[1]}/{name}.npy", value)
PY
echo "memfit: running $model"
build/bin/memfit-run "$model" --input-shape=batch=2,seq=16 \
  --input=input_ids="$inputs/input_ids.npy" --output-dir="$inputs/outputs"
