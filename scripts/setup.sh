#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for memfit and builds it; idempotent.
#   - Debian packages: LLVM/MLIR 22, ONNX protobuf classes, CMake, Ninja, lld,
#     Open MPI (data-parallel runs and their tests)
#   - a Python virtual environment (.venv) with onnx, onnxruntime, numpy,
#     and (unless MEMFIT_NO_TORCH=1) torch, transformers and peft
#   - the build in build/ (CMake + Ninja): compiler, runtime, tools, tests
#   The CUDA toolkit (NVRTC) is expected at /usr/local/cuda; without it the
#   CUDA paths report it and the NVRTC tests are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build lld ccache g++ python3 python3-venv python3-dev
          libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
          libonnx-dev libprotobuf-dev protobuf-compiler libzstd-dev
          libopenblas-dev libglpk-dev libopenmpi-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

# Python oracles for the tests; pinned so results are reproducible.
python=${MEMFIT_PYTHON_BIN:-python3}
if ! .venv/bin/python -c "import onnx, onnxruntime, numpy, sympy, nanobind, scikit_build_core, pytest" >/dev/null 2>&1; then
  echo "setup: creating .venv"
  "$python" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r scripts/requirements.txt
fi

# PyTorch and Hugging Face for the package's interop tests (from_torch,
# from_pretrained, adapters into PEFT): about 3 GB, 1.5 minutes from PyPI.
# MEMFIT_NO_TORCH=1 leaves them out; those tests are then unsupported.
if [ "${MEMFIT_NO_TORCH:-0}" != 1 ] && ! .venv/bin/python -c \
    "import torch, transformers, peft, safetensors, onnxscript, tqdm" \
    >/dev/null 2>&1; then
  echo "setup: installing PyTorch into .venv (scripts/requirements-torch.txt)"
  .venv/bin/pip install -q -r scripts/requirements-torch.txt
fi

if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DMEMFIT_PYTHON="$PWD/.venv/bin/python" \
    -DPython_EXECUTABLE="$PWD/.venv/bin/python" \
    -DMEMFIT_PYTHON_PACKAGE=ON
fi
ninja -C build
# The memfit package into .venv, built in the same tree (pyproject.toml):
# only the extension is new to it.
.venv/bin/pip install -q --no-build-isolation .
