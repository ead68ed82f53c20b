#!/usr/bin/env bash
# Runs on a lent GPU machine (the device tool), in the repository root, after
# scripts/device/bundle.sh packed .device/bundle.tar.xz here:
#   1. the CUDA probe, a step of collectives through NCCL (one rank) and one
#      fixture on --device=cuda;
#   2. a GPT-2-small-sized training step on the GPU, fp32 and bf16 (fused
#      and replayed as a CUDA graph, the defaults), each with the predicted
#      times of the GPU (--predict=all), then 3 profiled steps of each
#      (--profile: measured against predicted by kind), with PyTorch's
#      eager and torch.compile steps on the same GPU for scale (SKIP_BENCH
#      skips them all, unless TORCH_BENCH keeps PyTorch's; BENCH_TIMEOUT
#      bounds each memfit step's run, 150 s by default; GRAPH_BENCH adds the
#      fp32 step without CUDA graphs, TF32_BENCH the fp32 step in TF32),
#      and which of cuBLASLt's epilogues had no algorithm on the GPU;
#   3. with QUANT_CHECKS set, quantize/dequantize codes and 8-bit AdamW
#      against bitsandbytes' references, and the step with 8-bit states;
#      with OFFLOAD_CHECKS set, gpt_ts trained with its fp32 masters and
#      optimizer states in pinned host memory (--offload=optimizer, whose
#      host kernels the cuda backend compiles for the host and runs over
#      its cores from a host-task stream beside the GPU's) and
#      with offloaded activations (--offload=activations under a budget,
#      the copies in its stream) against on the device (the same losses),
#      and GPT-2 small's offloaded step with --predict;
#   4. with WEIGHT_BENCH set, the step with frozen weights in nf4 and fp32;
#      with COMPRESS_BENCH set, the step keeping 30% of the activation
#      memory, with and without activations saved compressed; with
#      LORA_BENCH set, full fine-tuning, LoRA and QLoRA steps; with
#      FUSE_BENCH set, the fp32 and bf16 steps with --no-fuse and fused
#      (FUSE_BENCH=bf16: the bf16 ones only); with LONG_BENCH set, the
#      small Llama of bench/long-context.py at seq 2,048 and 8,192 in
#      bf16, memfit.attention and the chunked loss (the default) beside
#      both turned off: the portable attention kernels' time on a GPU;
#   5. the whole lit suite (LIT_TIMEOUT=0 skips it; LIT_FILTER, a regular
#      expression, keeps the tests whose names match) with every memfit-run
#      call on the GPU (the tests pin --device=host; a wrapper turns that
#      into --device=cuda).
# Logs go to $OUT (the device tool brings them back).
set -uo pipefail
OUT=${OUT:-/tmp/memfit-device-out}
mkdir -p "$OUT"
root=$PWD
pkg=/tmp/memfit-bundle
mkdir -p "$pkg" && tar -C "$pkg" -xJf .device/bundle.tar.xz
export LD_LIBRARY_PATH=$pkg/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
py=$(command -v python3)
# NCCL: the toolkit's (found under CUDA_HOME by the runtime), else
# PyTorch's wheel's.
nccl=$("$py" -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null) &&
  [ -d "$nccl" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$nccl

# The build tree as lit.site.cfg.py names it (/work/main/build).
mkdir -p build/test /work
cp -a "$pkg/bin" build/ && cp -a "$pkg/build/cuda-mock" build/
cp "$pkg/build/test/lit.site.cfg.py" build/test/
[ "$root" = /work/main ] || ln -sfn "$root" /work/main
sed -i -e "s|^config.memfit_python = .*|config.memfit_python = \"$py\"|" \
       -e "s|^config.llvm_tools_dir = .*|config.llvm_tools_dir = \"/work/main/build/bin\"|" \
       build/test/lit.site.cfg.py

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  build/bin/memfit-nvrtc --cuda-check
  build/bin/memfit-nvrtc --nccl-check
  which g++ nvcc; nvcc --version | tail -1
} 2>&1 | tee "$OUT/probe.txt"

export PYTHONPATH=$root/test/lib
mkdir -p /tmp/fx
timeout 120 "$py" -m memfit_test.check_fixture build/bin/memfit-run test/models gpt ts /tmp/fx/gpt -- --device=cuda \
  > "$OUT/fixture-gpt-cuda.txt" 2>&1
echo "fixture gpt on cuda: rc $?" | tee -a "$OUT/probe.txt"

# Training step timings.
bench() {
  local name=$1; shift
  timeout "${BENCH_TIMEOUT:-150}" build/bin/memfit-run build/bench/gpt2-small.onnx --train \
    --loss=cross-entropy --device=cuda --memory-report "$@" \
    > "$OUT/bench-$name.txt" 2>&1
  echo "bench $name: rc $?" >> "$OUT/probe.txt"
}
mkdir -p build/bench
"$py" bench/make_gpt2_small.py build/bench/gpt2-small.onnx > /dev/null 2>&1
[ -n "${SKIP_BENCH:-}" ] || {
bench fp32-4x512 --input-shape=input_ids=4x512 --steps=12 --predict=all
bench bf16-4x512 --input-shape=input_ids=4x512 --steps=12 --precision=bf16 --predict=all
bench profile-fp32-4x512 --input-shape=input_ids=4x512 --steps=3 --profile
bench profile-bf16-4x512 --input-shape=input_ids=4x512 --steps=3 --precision=bf16 --profile
[ -z "${GRAPH_BENCH:-}" ] || bench nograph-fp32-4x512 --input-shape=input_ids=4x512 --steps=12 --no-cuda-graphs
[ -z "${TF32_BENCH:-}" ] || bench tf32-4x512 --input-shape=input_ids=4x512 --steps=12 --tf32
}
[ -n "${SKIP_BENCH:-}" ] && [ -z "${TORCH_BENCH:-}" ] ||
  timeout 300 "$py" scripts/device/torch_step.py > "$OUT/bench-torch.txt" 2>&1
# cuBLASLt's epilogues on this GPU: a contraction without an algorithm for
# its epilogue says so once (its fallback kernels run instead).
grep -h "has no algorithm for its" "$OUT"/bench-*.txt 2>/dev/null |
  sed -e "s/contraction '[^']*'/contraction/" | sort | uniq -c \
  > "$OUT/epilogue-fallbacks.txt"
echo "epilogues without a cuBLASLt algorithm: $(wc -l < "$OUT/epilogue-fallbacks.txt") kinds (epilogue-fallbacks.txt)" |
  tee -a "$OUT/probe.txt"

# --offload=optimizer on the GPU: the masters and states in pinned host
# memory, updated by the host's cores beside the GPU; the same losses as
# on the device (to the last bit, or the largest relative difference: the
# host's compiler and NVRTC may round AdamW's arithmetic apart), with the
# overlap and without it, and the step's time next to --predict's (which
# prices the bus), GPT-2 small 4x512; --offload=activations' copies
# through mapped memory, the same losses as saving everything.
if [ -n "${OFFLOAD_CHECKS:-}" ]; then
  for how in "--remat=none" "--remat=auto --budget=2150000 --offload=activations"; do
    name=saved; [ "$how" = "--remat=none" ] || name=offloaded
    timeout 120 build/bin/memfit-run test/models/gpt_ts.onnx --train --device=cuda \
      --loss=cross-entropy --corpus=test/models/corpus.txt --input-shape=input_ids=8x64 \
      --steps=5 --optimizer=adamw $how --losses="$OUT/activations-$name.csv" \
      > "$OUT/activations-$name.txt" 2>&1
    echo "activation offload check ($name): rc $?" | tee -a "$OUT/probe.txt"
  done
  cmp "$OUT/activations-saved.csv" "$OUT/activations-offloaded.csv" && echo "activation offload: same losses" | tee -a "$OUT/probe.txt"
  for where in device host in-step; do
    flag=; [ "$where" = host ] && flag=--offload=optimizer
    [ "$where" = in-step ] && flag="--offload=optimizer --no-host-overlap"
    timeout 120 build/bin/memfit-run test/models/gpt_ts.onnx --train --device=cuda \
      --loss=cross-entropy --corpus=test/models/corpus.txt --input-shape=input_ids=2x32 \
      --steps=6 --optimizer=adamw --losses="$OUT/offload-$where.csv" $flag \
      > "$OUT/offload-$where.txt" 2>&1
    echo "offload check ($where): rc $?" | tee -a "$OUT/probe.txt"
  done
  for where in host in-step; do
    if cmp -s "$OUT/offload-device.csv" "$OUT/offload-$where.csv"; then
      echo "offload ($where): same losses" | tee -a "$OUT/probe.txt"
    else
      "$py" - "$OUT/offload-device.csv" "$OUT/offload-$where.csv" "$where" <<'PY' 2>&1 | tee -a "$OUT/probe.txt"
import sys
rows = [[l.split(",") for l in open(p).read().split()[1:]] for p in sys.argv[1:3]]
d = max((abs(float(a[-1]) - float(b[-1])) / abs(float(a[-1])) for a, b in zip(*rows)), default=-1)
print(f"offload ({sys.argv[3]}): losses differ, largest relative difference {d:.3g}")
PY
    fi
  done
  [ -f build/bench/gpt2-small.onnx ] || "$py" bench/make_gpt2_small.py build/bench/gpt2-small.onnx > /dev/null 2>&1
  bench offload-4x512 --input-shape=input_ids=4x512 --steps=6 --offload=optimizer --predict=all
  bench offload-in-step-4x512 --input-shape=input_ids=4x512 --steps=6 --offload=optimizer --no-host-overlap
fi

# Quantization: codes and 8-bit AdamW against bitsandbytes on the GPU, and
# the training step with 8-bit states beside fp32 AdamW's.
if [ -n "${QUANT_CHECKS:-}" ]; then
  timeout 120 "$py" -m memfit_test.quant_codes --memfit-run build/bin/memfit-run \
    --refs test/models/quant_refs.npz --workdir /tmp/qc --device=cuda > "$OUT/quant-codes-cuda.txt" 2>&1
  echo "quant codes on cuda: rc $?" | tee -a "$OUT/probe.txt"
  timeout 120 "$py" -m memfit_test.check_adamw8bit --memfit-run build/bin/memfit-run \
    --refs test/models/quant_refs.npz --workdir /tmp/a8 --device=cuda > "$OUT/adamw8bit-cuda.txt" 2>&1
  echo "adamw8bit on cuda: rc $?" | tee -a "$OUT/probe.txt"
  [ -f build/bench/gpt2-small.onnx ] || "$py" bench/make_gpt2_small.py build/bench/gpt2-small.onnx > /dev/null 2>&1
  bench adamw-4x512 --input-shape=input_ids=4x512 --steps=12
  bench adamw8bit-4x512 --input-shape=input_ids=4x512 --steps=12 --optimizer=adamw8bit
fi

# Frozen matmul weights stored in nf4 against fp32, GPT-2 small: what the
# dequantization before each contraction costs per step.
if [ -n "${WEIGHT_BENCH:-}" ]; then
  [ -f build/bench/gpt2-small.onnx ] || "$py" bench/make_gpt2_small.py build/bench/gpt2-small.onnx > /dev/null 2>&1
  bench frozen-fp32 --input-shape=input_ids=4x512 --steps=12 '--frozen=h*.w'
  bench frozen-nf4 --input-shape=input_ids=4x512 --steps=12 '--frozen=h*.w' --quantize-weights=nf4
fi

# Remat auto at 30% of the activation memory, saving or recomputing against
# also compressing, GPT-2 small: the step's time and the plan.
if [ -n "${COMPRESS_BENCH:-}" ]; then
  [ -f build/bench/gpt2-small.onnx ] || "$py" bench/make_gpt2_small.py build/bench/gpt2-small.onnx > /dev/null 2>&1
  bench remat30 --input-shape=input_ids=4x512 --steps=12 --activation-fraction=0.3 \
    --remat-report="$OUT/remat30.report"
  bench remat30-compress --input-shape=input_ids=4x512 --steps=12 --activation-fraction=0.3 \
    --compress-activations --remat-report="$OUT/remat30-compress.report"
fi

# Full fine-tuning, LoRA and QLoRA of GPT-2 small on the GPU (all-linear,
# rank 16, alpha 32; QLoRA: NF4 base with double quantization, bf16).
if [ -n "${LORA_BENCH:-}" ]; then
  [ -f build/bench/gpt2-small.onnx ] || "$py" bench/make_gpt2_small.py build/bench/gpt2-small.onnx > /dev/null 2>&1
  bench full-4x512 --input-shape=input_ids=4x512 --steps=12
  bench lora16-4x512 --input-shape=input_ids=4x512 --steps=12 --lora-rank=16 \
    --lora-alpha=32 --lora-targets=all-linear
  bench qlora16-4x512 --input-shape=input_ids=4x512 --steps=12 --lora-rank=16 \
    --lora-alpha=32 --lora-targets=all-linear --quantize-weights=nf4 \
    --double-quant --precision=bf16
fi

# Fusion (memfit-fuse) of GPT-2 small's fp32 and bf16 steps on the GPU,
# beside the unfused ones.
if [ -n "${FUSE_BENCH:-}" ]; then
  [ -f build/bench/gpt2-small.onnx ] || "$py" bench/make_gpt2_small.py build/bench/gpt2-small.onnx > /dev/null 2>&1
  [ "$FUSE_BENCH" = bf16 ] || {
  bench unfused-4x512 --input-shape=input_ids=4x512 --steps=12 --no-fuse
  bench fused-4x512 --input-shape=input_ids=4x512 --steps=12
  }
  bench unfused-bf16-4x512 --input-shape=input_ids=4x512 --steps=12 --precision=bf16 --no-fuse
  bench fused-bf16-4x512 --input-shape=input_ids=4x512 --steps=12 --precision=bf16
fi

# Long sequences: the small Llama (4 layers, hidden 512, 8 heads, MLP
# 1,408, vocabulary 32,000), batch 1, bf16, with and without
# memfit.attention and the chunked loss.
if [ -n "${LONG_BENCH:-}" ]; then
  "$py" bench/make_llama.py build/bench/llama-small.onnx --layers 4 --hidden 512 \
    --heads 8 --intermediate 1408 --vocab 32000 > /dev/null 2>&1
  for seq in 2048 8192; do
    for way in default spelled; do
      flags=()
      [ "$way" = spelled ] && flags=(--no-fused-attention --no-chunked-loss)
      timeout "${BENCH_TIMEOUT:-150}" build/bin/memfit-run build/bench/llama-small.onnx \
        --train --loss=cross-entropy --device=cuda --memory-report --precision=bf16 \
        --input-shape=input_ids=1x$seq --steps=6 "${flags[@]}" \
        > "$OUT/bench-long-$way-$seq.txt" 2>&1
      echo "bench long-$way-$seq: rc $?" >> "$OUT/probe.txt"
    done
  done
fi

# The suite, every memfit-run on the GPU.
mv build/bin/memfit-run build/bin/memfit-run.real
cat > build/bin/memfit-run <<'WRAP'
#!/usr/bin/env bash
args=()
for a in "$@"; do [ "$a" = --device=host ] && a=--device=cuda; args+=("$a"); done
exec -a "$0" "$(dirname "$0")/memfit-run.real" "${args[@]}"
WRAP
chmod +x build/bin/memfit-run
# The mock driver test must load the mock libcuda, not the real one that the
# machine's LD_LIBRARY_PATH finds before the binary's RUNPATH.
mv build/bin/memfit-cuda-mock-test build/bin/memfit-cuda-mock-test.real
cat > build/bin/memfit-cuda-mock-test <<'WRAP'
#!/usr/bin/env bash
export LD_LIBRARY_PATH=/work/main/build/cuda-mock/lib:$LD_LIBRARY_PATH
exec -a "$0" "$(dirname "$0")/memfit-cuda-mock-test.real" "$@"
WRAP
chmod +x build/bin/memfit-cuda-mock-test
[ "${LIT_TIMEOUT:-330}" = 0 ] || timeout "${LIT_TIMEOUT:-330}" "$py" -c "import sys; sys.path.insert(0, '$pkg/lit'); from lit.main import main; main()" -sv -j16 --timeout 240 ${LIT_FILTER:+--filter "$LIT_FILTER"} build/test \
  > "$OUT/lit.txt" 2>&1
echo "lit: rc $?" | tee -a "$OUT/probe.txt"
grep -E "^(PASS|FAIL|XFAIL|UNSUPPORTED|TIMEOUT)|Passed|Failed" "$OUT/lit.txt" | tail -30
