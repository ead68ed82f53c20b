#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs memfit's main job on the shipped
# GPT-style model: import it for batch 2 x sequence 16 and print its summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
model=${1:-test/models/gpt_ts.onnx}
echo "memfit: importing $model"
build/bin/memfit-opt "$model" --input-shape=batch=2,seq=16 \
  --memfit-model-summary -o /dev/null
