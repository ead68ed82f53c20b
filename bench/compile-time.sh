#!/usr/bin/env bash
# Compile-time benchmark: ONNX -> CUDA C++ (import, passes, memory plan,
# emission), NVRTC to CUBIN for sm_80 and sm_90 with a cold and a warm
# kernel cache, and the host backend's C++ compile, cold and warm.
#
#   bench/compile-time.sh [N]      (N: repeats for the compile time; default 3)
#
# Models: the largest fixture (llama_ts) and a GPT-2-small-sized model (12
# layers, hidden 768, 124M parameters) that bench/make_gpt2_small.py writes
# with random weights into build/bench/ (not committed). Prints a Markdown
# table; results are recorded in docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-3}
run=build/bin/memfit-run
mkdir -p build/bench
gpt2=build/bench/gpt2-small.onnx
[ -f "$gpt2" ] || .venv/bin/python bench/make_gpt2_small.py "$gpt2"

models=("test/models/llama_ts.onnx:batch=2,seq=16"
        "$gpt2:batch=1,seq=128")

# The number after "in" on the line that starts with $2, from output $1.
field() { grep -E "^$2" <<<"$1" | sed -E 's/.* in ([0-9.]+) (ms|s)$/\1 \2/' | head -1; }

echo "| model | shape | kernels | ONNX -> CUDA (best of $n) | NVRTC sm_80 cold / warm | NVRTC sm_90 cold / warm | host g++ cold / warm | host forward |"
echo "|---|---|---|---|---|---|---|---|"
for entry in "${models[@]}"; do
  model=${entry%%:*}
  shape=${entry#*:}
  best=""
  for _ in $(seq "$n"); do
    out=$($run "$model" --input-shape="$shape" --compile-only)
    t=$(grep -E "^compiled" <<<"$out" | sed -E 's/.* in ([0-9.]+) ms$/\1/')
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
  done
  kernels=$(grep -E "^compiled" <<<"$out" | sed -E 's/.*: ([0-9]+) kernels.*/\1/')
  cache=$(mktemp -d)
  cold=$($run "$model" --input-shape="$shape" --compile-only --arch=sm_80 --arch=sm_90 --cache-dir="$cache")
  warm=$($run "$model" --input-shape="$shape" --compile-only --arch=sm_80 --arch=sm_90 --cache-dir="$cache")
  hcold=$($run "$model" --input-shape="$shape" --device=host --cache-dir="$cache")
  hwarm=$($run "$model" --input-shape="$shape" --device=host --cache-dir="$cache")
  rm -rf "$cache"
  hostcc=$(grep -E "^kernels:" <<<"$hcold" | sed -E 's/kernels: compiled in //')
  hosthit=$(grep -E "^kernels:" <<<"$hwarm" | sed -E 's/kernels: //')
  fwd=$(grep -E "^forward pass" <<<"$hwarm" | sed -E 's/forward pass: //')
  echo "| $(basename "$model") | $shape | $kernels | $best ms | $(field "$cold" sm_80) / $(field "$warm" sm_80) | $(field "$cold" sm_90) / $(field "$warm" sm_90) | $hostcc / $hosthit | $fwd |"
done
