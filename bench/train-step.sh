#!/usr/bin/env bash
# Host time per training step and the memory report of a GPT-2-small-sized
# model (124M parameters, batch 1 x 128, AdamW, cross-entropy on random
# tokens). The model comes from bench/make_gpt2_small.py (not committed).
#   bench/train-step.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-3}
model=build/bench/gpt2-small.onnx
if [ ! -f "$model" ]; then
  mkdir -p build/bench
  .venv/bin/python bench/make_gpt2_small.py "$model"
fi
build/bin/memfit-run "$model" --input-shape=input_ids=1x128 --train \
  --loss=cross-entropy --optimizer=adamw --device=host --steps="$steps" \
  --memory-report
