#!/usr/bin/env bash
# Packs what the test suite needs on a GPU machine that has no LLVM, MLIR,
# ONNX or protobuf: the built tools, the shared libraries they load (except
# the C and C++ runtimes, which the GPU machine has newer), FileCheck, not,
# count and lit. Writes .device/bundle.tar.xz; scripts/device/check.sh
# unpacks and runs it there. Usage: scripts/device/bundle.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
llvm=/usr/lib/llvm-22
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/build/test" "$root/.device"

cp -a "$build"/bin/. "$stage/bin/"
cp -a "$build/cuda-mock" "$stage/build/"
cp "$build/test/lit.site.cfg.py" "$stage/build/test/"
for t in FileCheck not count split-file; do cp "$llvm/bin/$t" "$stage/bin/"; done
cp -a "$llvm/utils/lit" "$stage/lit"

# Every shared library a packed binary loads, the system's C and C++
# runtimes and the mock driver excepted.
for f in "$stage"/bin/*; do
  ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so|cuda-mock' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done

# libLLVM loads z3 (the static analyzer's solver) and libxml2 loads ICU's
# data; memfit calls neither, and the two are a third of the bundle. Stubs
# with the same sonames and symbols keep the bundle under the device tool's
# 64 MiB: each Z3 function aborts if ever called, ICU's data is empty.
stubs=$(mktemp -d)
if [ -f "$stage"/lib/libz3.so.* ]; then
  z3=$(basename "$stage"/lib/libz3.so.*)
  nm -D --undefined-only "$stage"/lib/libLLVM.so.* | awk '$2 ~ /^Z3_/ {print $2}' |
    sed 's/.*/void &(void) { abort(); }/' | { echo '#include <stdlib.h>'; cat; } > "$stubs/z3.c"
  cc -shared -fPIC -O1 -Wl,-soname,"$z3" -o "$stage/lib/$z3" "$stubs/z3.c"
fi
if [ -f "$stage"/lib/libicudata.so.* ]; then
  icu=$(basename "$stage"/lib/libicudata.so.*)
  nm -D --undefined-only "$stage"/lib/libicuuc.so.* | awk '$2 ~ /^icudt/ {print "const char " $2 "[16];"}' > "$stubs/icu.c"
  cc -shared -fPIC -O1 -Wl,-soname,"$icu" -o "$stage/lib/$icu" "$stubs/icu.c"
fi
rm -rf "$stubs"

strip --strip-unneeded "$stage"/bin/memfit-* "$stage"/bin/FileCheck "$stage"/bin/not "$stage"/bin/count "$stage"/bin/split-file "$stage"/lib/*.so* 2>/dev/null || true
XZ_OPT=-9T2 tar -C "$stage" -cJf "$root/.device/bundle.tar.xz" .
du -h "$root/.device/bundle.tar.xz"
