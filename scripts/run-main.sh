#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs memfit's main job: trains the shipped
# GPT-style model (test/models/gpt_ts.onnx) with AdamW on the shipped
# character-level corpus for a few dozen steps (batch 4 x sequence 32), on
# CUDA where a GPU is usable, else on the host backend. It prints the memory
# report (weights, gradients, optimizer states, activations, temporaries and
# bytes per parameter) before the first step, then the loss of every step,
# and saves a checkpoint under build/main-job. The step is compiled under a
# peak-memory budget (MEMFIT_BUDGET, default 1.2MiB: saving every forward
# value takes 1.50 MiB): memfit-remat's report says which values are saved
# and which recomputed, and why, and the memory timeline of the step is
# written to build/main-job/timeline.svg.
#   [MEMFIT_BUDGET=SIZE] scripts/run-main.sh [STEPS] [extra memfit-run flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
steps=${1:-40}
shift || true
out=build/main-job
mkdir -p "$out"
echo "memfit: training test/models/gpt_ts.onnx for $steps steps"
build/bin/memfit-run test/models/gpt_ts.onnx --train --loss=cross-entropy \
  --optimizer=adamw --lr=1e-3 --input-shape=input_ids=4x32 \
  --corpus=test/models/corpus.txt --steps="$steps" \
  --remat=auto --budget="${MEMFIT_BUDGET:-1.2MiB}" --remat-report \
  --memory-report --memory-timeline="$out/timeline.svg" \
  --losses="$out/losses.csv" --checkpoint="$out/gpt_ts.ckpt" "$@"
