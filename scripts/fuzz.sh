#!/usr/bin/env bash
# Fuzzes the compiler: builds fuzz/'s libFuzzer targets with clang-22 and
# the address and undefined-behaviour sanitizers in build-fuzz/, then runs
# one of them for SECONDS (default 120):
#   scripts/fuzz.sh [--target=import|compile] [SECONDS] [extra libFuzzer flags...]
# import (the default) fuzzes the ONNX importer (memfit-import-fuzz) from
# fuzz/corpus/seeds, the fixtures in test/models and fuzz/corpus/regressions;
# compile fuzzes the whole compile (memfit-compile-fuzz: import, the forward
# and training pipelines, the memory plan and the CUDA emitter) from the
# same seeds, the Hugging Face exports in test/models/hf and
# fuzz/corpus/regressions-compile.
# A crash, timeout, OOM or sanitizer report fails the script and is
# copied to the target's regressions folder (fuzz/corpus/regressions or
# fuzz/corpus/regressions-compile) so that the lit suite replays it
# (test/Import/fuzz-replay.test, test/Import/compile-fuzz-replay.test)
# once the bug is fixed. The corpus the fuzzer grows stays in
# build-fuzz/corpus (import) or build-fuzz/corpus-compile. JOBS sets
# ninja's parallelism. Extra flags override the defaults (e.g. -timeout=60
# on a loaded machine).
set -euo pipefail
cd "$(dirname "$0")/.."
target=import
case "${1:-}" in
  --target=import | --target=compile)
    target=${1#--target=}
    shift
    ;;
  --target=*)
    echo "fuzz: unknown target '${1#--target=}' (import or compile)" >&2
    exit 2
    ;;
esac
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
ninja -C build-fuzz -j"${JOBS:-2}" "memfit-$target-fuzz"

# External data resolves next to model.onnx in this folder: one small
# weights file, so that locations, offsets and lengths are exercised, and
# the Hugging Face exports' data files, so that those seeds import.
mkdir -p build-fuzz/artifacts build-fuzz/model
head -c 4096 /dev/zero > build-fuzz/model/weights.bin
for f in test/models/hf/*.data; do
  ln -sf "$PWD/$f" build-fuzz/model/
done
if [ "$target" = import ]; then
  corpus=build-fuzz/corpus
  regressions=fuzz/corpus/regressions
  seeds=(fuzz/corpus/seeds "$regressions" test/models)
  limits=(-timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=2048)
else
  corpus=build-fuzz/corpus-compile
  regressions=fuzz/corpus/regressions-compile
  # test/models holds the Hugging Face exports (hf/) too: libFuzzer
  # reads folders recursively.
  seeds=(fuzz/corpus/seeds "$regressions" test/models)
  # The passes take longer than the importer (remat=auto's search of a
  # fixture takes 30 to 60 s under the sanitizers on two busy cores): two
  # minutes per input before an input counts as a hang.
  # fuzz/onnx.dict: the op types and attribute names the importer knows.
  limits=(-timeout=120 -rss_limit_mb=4096 -malloc_limit_mb=2048
          -dict=fuzz/onnx.dict)
fi
mkdir -p "$corpus"
# Artifacts of earlier runs were copied to the regressions folder then (and
# renamed there once fixed): only this run's count.
rm -f build-fuzz/artifacts/{crash,timeout,oom,leak}-*

export MEMFIT_FUZZ_MODEL_DIR="$PWD/build-fuzz/model"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
set +e
"build-fuzz/bin/memfit-$target-fuzz" "$corpus" "${seeds[@]}" \
  -max_total_time="$seconds" "${limits[@]}" \
  -max_len=1048576 -print_final_stats=1 \
  -artifact_prefix=build-fuzz/artifacts/ "$@"
status=$?
set -e
found=0
for f in build-fuzz/artifacts/{crash,timeout,oom,leak}-*; do
  [ -e "$f" ] || continue
  name=$(basename "$f")
  [ -e "$regressions/$name" ] && continue
  cp "$f" "$regressions/"
  echo "fuzz: $f copied to $regressions/$name"
  found=1
done
if [ $status -ne 0 ] || [ $found -ne 0 ]; then
  echo "fuzz: FAILED (libFuzzer exit $status)"
  exit 1
fi
echo "fuzz: no crash in ${seconds}s"
