#!/usr/bin/env bash
# Compiles every fixture (forward pass and several training configurations)
# and writes each executable (manifest.json, kernels.cu) plus the remat
# report under OUT, so that two builds of memfit can be compared with
# `diff -r OUT1 OUT2`: a refactoring that must not change the emitted CUDA,
# the memory plan or the remat decisions shows an empty diff. Each one is
# compiled twice, the second time with another heap layout (glibc's malloc
# tunables), and must come out the same: a compile whose output depends on
# where the allocator puts things fails here.
#   scripts/compile-snapshot.sh BUILD_BIN_DIR OUT
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?build bin directory}
out=${2:?output directory}
rm -rf "$out"
mkdir -p "$out"
run() {
  local name=$1
  shift
  if ! "$bin/memfit-run" "$@" --compile-only --quiet --save-executable="$out/$name" \
      >"$out/$name.log" 2>&1; then
    echo "compile-snapshot: $name failed:" >&2
    cat "$out/$name.log" >&2
    return 1
  fi
  rm -f "$out/$name/weights.bin"
  local again="$out/.again"
  rm -rf "$again"
  local args=("$@")
  for i in "${!args[@]}"; do
    case ${args[$i]} in --remat-report=*) args[$i]=--remat-report="$again.report" ;; esac
  done
  GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.mmap_threshold=65536:glibc.malloc.top_pad=300000 \
    "$bin/memfit-run" "${args[@]}" --compile-only --quiet --save-executable="$again" \
    >/dev/null 2>&1
  for f in kernels.cu manifest.json; do
    if ! cmp -s "$out/$name/$f" "$again/$f"; then
      echo "compile-snapshot: $name: $f differs with another heap layout" >&2
      return 1
    fi
  done
  rm -rf "$again" "$again.report"
}
for family in gpt bert llama; do
  for exporter in ts dynamo; do
    stem=${family}_${exporter}
    model=test/models/$stem.onnx
    shape=--input-shape=batch=2,seq=16
    run "$stem.forward" "$model" $shape
    run "$stem.gradients" "$model" $shape --gradients --loss=cross-entropy
    run "$stem.train-none" "$model" $shape --train --loss=cross-entropy --remat=none
    run "$stem.train-layers" "$model" $shape --train --loss=cross-entropy \
      --remat=checkpoint-layers --remat-report="$out/$stem.train-layers.report"
    run "$stem.train-auto" "$model" $shape --train --loss=cross-entropy \
      --remat=auto --activation-fraction=0.5 --remat-report="$out/$stem.train-auto.report"
    run "$stem.train-sgd-accumulate" "$model" $shape --train --loss=cross-entropy \
      --optimizer=sgd --momentum=0.9 --nesterov --clip-norm=1 --accumulate=2 --remat=none
    # Fusion, mixed precision, quantization and LoRA: every pass of the
    # training pipeline runs in at least one configuration.
    run "$stem.forward-fuse" "$model" $shape --fuse
    run "$stem.train-fuse" "$model" $shape --train --loss=cross-entropy \
      --remat=checkpoint-layers --fuse
    run "$stem.train-fuse-bf16" "$model" $shape --train --loss=cross-entropy \
      --remat=none --fuse --precision=bf16
    run "$stem.train-fp16" "$model" $shape --train --loss=cross-entropy \
      --remat=none --precision=fp16
    run "$stem.train-8bit-compress" "$model" $shape --train --loss=cross-entropy \
      --optimizer=adamw8bit --remat=auto --activation-fraction=0.5 --compress-activations
    run "$stem.train-qlora" "$model" $shape --train --loss=cross-entropy \
      --lora-rank=4 --lora-targets=all-linear --quantize-weights=nf4 --double-quant \
      --remat=none
    run "$stem.forward-int8" "$model" $shape --quantize-weights=int8
  done
done
# The pass's own run time is the one line that differs between two runs.
sed -i '/^remat pass time:/d' "$out"/*.report
echo "compile-snapshot: $(ls -d "$out"/*/ | wc -l) executables in $out"
