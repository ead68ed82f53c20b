# -*- Python -*-
# lit configuration of the memfit regression suite.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MEMFIT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "Inputs", "lib", "models"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.memfit_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%memfit_src_root", config.memfit_src_root))
config.substitutions.append(("%memfit_obj_root", config.memfit_obj_root))
config.substitutions.append(("%cxx", config.memfit_cxx))
config.substitutions.append(("%models", os.path.join(config.memfit_src_root, "test", "models")))
config.substitutions.append(("%fuzz_corpus", os.path.join(config.memfit_src_root, "fuzz", "corpus")))
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                     "ASAN_OPTIONS", "UBSAN_OPTIONS",
                                     "LSAN_OPTIONS"])
llvm_config.use_default_substitutions()

# The Python helpers are one package, test/lib/memfit_test; RUN lines run
# them as `%onnx_python -m memfit_test.<module>`.
llvm_config.with_environment("PYTHONPATH",
                             os.path.join(config.memfit_src_root, "test", "lib"),
                             append_path=True)

# Import tests build small ONNX graphs with onnx.helper; they need a Python
# with the onnx package (the setup script's virtual environment).
python = config.memfit_python
if python and os.path.exists(python):
    try:
        subprocess.run([python, "-c", "import onnx, numpy, onnxruntime"], check=True,
                       capture_output=True)
        config.available_features.add("onnx")
    except (OSError, subprocess.CalledProcessError):
        pass
# The memfit package (pyproject.toml), installed into that environment by
# the setup script, with pytest for its tests.
if "onnx" in config.available_features:
    try:
        subprocess.run([python, "-c", "import memfit, pytest"], check=True,
                       capture_output=True, cwd="/")
        config.available_features.add("python-package")
        # The PyTorch interop tests (scripts/requirements-torch.txt).
        # Found, not imported: importing torch takes seconds.
        subprocess.run([python, "-c", "import importlib.util as u, sys; "
                        "sys.exit(not all(u.find_spec(m) for m in ('torch', "
                        "'transformers', 'peft', 'onnxscript', "
                        "'safetensors')))"],
                       check=True, capture_output=True, cwd="/")
        config.available_features.add("torch")
    except (OSError, subprocess.CalledProcessError):
        pass
config.substitutions.append(("%onnx_python", python))
config.substitutions.append(("%mkonnx", python + " -m memfit_test.mkonnx"))

# Data parallelism's tests start ranks with mpirun (Open MPI: the setup
# installs openmpi-bin and libopenmpi-dev) through memfit's MPI plugin,
# which the build makes where it finds MPI; a probe run of two ranks tells
# whether this machine can start them at all.
plugin = os.path.join(config.memfit_obj_root, "lib", "libmemfit-mpi.so")
if shutil.which("mpirun") and os.path.exists(plugin):
    probe_env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                     OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                     OMPI_MCA_rmaps_base_oversubscribe="1",
                     OMPI_MCA_btl="self,vader")
    try:
        subprocess.run(["mpirun", "-np", "2", "true"], check=True,
                       capture_output=True, env=probe_env, timeout=60)
        config.available_features.add("mpi")
    except (OSError, subprocess.SubprocessError):
        lit_config.note("mpirun cannot start 2 ranks here: the data-parallel "
                        "tests are unsupported")

# The install test configures a project of its own with CMake and Ninja.
if shutil.which("cmake") and shutil.which("ninja"):
    config.available_features.add("cmake")

tool_dirs = [config.memfit_tools_dir, config.llvm_tools_dir]
tools = ["memfit-opt", "memfit-translate", "memfit-run", "memfit-nvrtc",
         "memfit-runtime-test", "memfit-example-forward", "memfit-example-train",
         "memfit-cuda-mock-test", "memfit-import-fuzz-replay",
         "memfit-compile-fuzz-replay"]
# memfit-half-check is built where CUDA's headers are.
if os.path.exists(os.path.join(config.memfit_tools_dir, "memfit-half-check")):
    config.available_features.add("cuda-headers")
    tools.append("memfit-half-check")
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# lit runs tests side by side on every core: each memfit-run takes one host
# worker thread (two processes of two workers each on two cores run slower
# than of one each: every kernel waits for all of its workers). Tests that
# run several memfit-runs at once pin each to a core (check_training's
# run_pinned), where the host backend takes the one CPU it may use.
config.environment["MEMFIT_HOST_THREADS"] = "1"

# Kernels compiled by the tests are cached in the build tree, never in the
# user's home.
config.environment["MEMFIT_CACHE_DIR"] = os.path.join(config.memfit_obj_root, "test", "kernel-cache")

# NVRTC (CUDA toolkit) compiles kernels to CUBIN without a GPU; a GPU is
# needed only to run them. `memfit-nvrtc --cuda-check` reports both.
nvrtc_tool = os.path.join(config.memfit_tools_dir, "memfit-nvrtc")
try:
    probe = subprocess.run([nvrtc_tool, "--cuda-check"], capture_output=True,
                           text=True, timeout=60)
    if "cuda: usable" in probe.stdout:
        config.available_features.add("gpu")
    else:
        config.available_features.add("no-gpu")
    probe_source = os.path.join(config.test_exec_root, "nvrtc-probe.cu")
    os.makedirs(config.test_exec_root, exist_ok=True)
    with open(probe_source, "w") as f:
        f.write('extern "C" __global__ void probe(float* p) { p[threadIdx.x] = 1.0f; }\n')
    probe = subprocess.run([nvrtc_tool, "--arch=sm_80", probe_source],
                           capture_output=True, text=True, timeout=120)
    if probe.returncode == 0:
        config.available_features.add("nvrtc")
except (OSError, subprocess.SubprocessError):
    config.available_features.add("no-gpu")
