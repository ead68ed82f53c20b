#!/usr/bin/env bash
# Times ONNX import (to bytecode in memory, then printing dropped) for each
# fixture: the best of N runs. Usage: bench/import-time.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
for f in test/models/*.onnx; do
  best=""
  for _ in $(seq "$n"); do
    s=$(date +%s%N)
    build/bin/memfit-opt "$f" --input-shape=batch=2,seq=16 -o /dev/null
    e=$(date +%s%N)
    t=$(( (e - s) / 1000 ))
    if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
  done
  printf "%-28s %8d bytes  %6.1f ms\n" "$(basename "$f")" "$(stat -c %s "$f")" "$(echo "$best/1000" | bc -l)"
done
