# -*- Python -*-
# lit configuration of the memfit regression suite.

import os
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MEMFIT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "Inputs", "models"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.memfit_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%models", os.path.join(config.memfit_src_root, "test", "models")))
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# Import tests build small ONNX graphs with onnx.helper; they need a Python
# with the onnx package (the setup script's virtual environment).
python = config.memfit_python
if python and os.path.exists(python):
    try:
        subprocess.run([python, "-c", "import onnx, numpy"], check=True,
                       capture_output=True)
        config.available_features.add("onnx")
    except (OSError, subprocess.CalledProcessError):
        pass
config.substitutions.append(("%onnx_python", python))
config.substitutions.append(("%mkonnx", python + " " + os.path.join(
    config.memfit_src_root, "test", "Import", "Inputs", "mkonnx.py")))

tool_dirs = [config.memfit_tools_dir, config.llvm_tools_dir]
tools = ["memfit-opt"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
