#!/usr/bin/env bash
# Builds memfit with AddressSanitizer and UndefinedBehaviorSanitizer
# (-DMEMFIT_SANITIZE="address;undefined") in build-asan/ and runs the whole
# lit suite on it: any sanitizer report fails the test that triggered it.
#   scripts/sanitize.sh [lit arguments...]   (default: the whole suite)
# Slow: the build takes tens of minutes on two cores, and the suite runs
# about three times slower than in the normal build. JOBS sets ninja's
# parallelism. Leak detection is off: MLIR and LLVM keep process-lifetime
# allocations (registries, uniqued storage) that LeakSanitizer reports.
# A report aborts the process (abort_on_error=1): a test that expects a tool
# to fail (`not ...`) would take a sanitizer's exit status 1 for it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || scripts/setup.sh # packages and .venv

if [ ! -f build-asan/build.ninja ]; then
  cmake -G Ninja -S . -B build-asan \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DCMAKE_CXX_FLAGS=-g1 \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DMEMFIT_PYTHON="$PWD/.venv/bin/python" \
    -DMEMFIT_SANITIZE="address;undefined"
fi
ninja -C build-asan -j"${JOBS:-2}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}
if [ $# -eq 0 ]; then
  set -- build-asan/test
fi
/usr/lib/llvm-22/bin/lit -sv "$@" --xunit-xml-output build-asan/test-results.xml
