#!/usr/bin/env bash
# Fuzzes the ONNX importer: builds fuzz/'s libFuzzer target with clang-22
# and the address and undefined-behaviour sanitizers in build-fuzz/, then
# runs it for SECONDS (default 120) from the seed corpus (fuzz/corpus/seeds,
# the fixtures in test/models and fuzz/corpus/regressions).
#   scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]
# A crash, timeout, OOM or sanitizer report fails the script and is
# copied to fuzz/corpus/regressions/ so that the lit suite replays it
# (test/Import/fuzz-replay.test) once the bug is fixed. The corpus the
# fuzzer grows stays in build-fuzz/corpus. JOBS sets ninja's parallelism.
# Extra flags override the defaults (e.g. -timeout=60 on a loaded machine).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
shift || true

packages=(clang-22 libclang-rt-22-dev lld cmake ninja-build)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

if [ ! -f build-fuzz/build.ninja ]; then
  cmake -G Ninja -S . -B build-fuzz \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_CXX_FLAGS=-gline-tables-only \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DMEMFIT_SANITIZE="address;undefined" -DMEMFIT_FUZZ=ON
fi
ninja -C build-fuzz -j"${JOBS:-2}" memfit-import-fuzz

# External data resolves next to model.onnx in this folder: one small
# weights file, so that locations, offsets and lengths are exercised.
mkdir -p build-fuzz/corpus build-fuzz/artifacts build-fuzz/model
# Artifacts of earlier runs were copied to fuzz/corpus/regressions then (and
# renamed there once fixed): only this run's count.
rm -f build-fuzz/artifacts/{crash,timeout,oom,leak}-*
head -c 4096 /dev/zero > build-fuzz/model/weights.bin

export MEMFIT_FUZZ_MODEL_DIR="$PWD/build-fuzz/model"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
set +e
build-fuzz/bin/memfit-import-fuzz build-fuzz/corpus fuzz/corpus/seeds \
  fuzz/corpus/regressions test/models \
  -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
  -malloc_limit_mb=2048 -max_len=1048576 -print_final_stats=1 \
  -artifact_prefix=build-fuzz/artifacts/ "$@"
status=$?
set -e
found=0
for f in build-fuzz/artifacts/{crash,timeout,oom,leak}-*; do
  [ -e "$f" ] || continue
  name=$(basename "$f")
  [ -e "fuzz/corpus/regressions/$name" ] && continue
  cp "$f" fuzz/corpus/regressions/
  echo "fuzz: $f copied to fuzz/corpus/regressions/$name"
  found=1
done
if [ $status -ne 0 ] || [ $found -ne 0 ]; then
  echo "fuzz: FAILED (libFuzzer exit $status)"
  exit 1
fi
echo "fuzz: no crash in ${seconds}s"
