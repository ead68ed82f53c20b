"""
memfit's C++ API (memfit/JIT/Compiler.h, memfit/runtime): the memfit package wraps it.
"""

from typing import Annotated

from numpy.typing import NDArray


class MemfitError(RuntimeError):
    pass

class Executable:
    """
    A compiled model: its entries, memory plan and kernels (memfit::rt::Executable).
    """

    @property
    def model(self) -> str: ...

    @property
    def plan_only(self) -> bool:
        """Compiled from shapes alone: it cannot run."""

    @property
    def entries(self) -> list[tuple[str, list[tuple[str, str, list[int]]], list[tuple[str, str, list[int]]]]]:
        """Each entry's name, inputs and outputs (name, dtype, shape)."""

    @property
    def memory(self) -> list[tuple[str, int]]:
        """
        The memory plan by category, in bytes, as memfit-run --memory-report lists it.
        """

    @property
    def total_bytes(self) -> int:
        """The one allocation a session makes."""

    def memory_report_text(self) -> str:
        """The plan and the memory report as memfit-run prints them."""

    def save(self, directory: str) -> None:
        """
        Writes the executable (manifest.json, kernels.cu, weights) for memfit-run or load().
        """

def compile(path: str, options: dict) -> Executable:
    """
    Compiles an ONNX or MLIR file with CompileOptions given as a dict of their snake-case names.
    """

def load(directory: str) -> Executable:
    """Loads an executable that save() wrote."""

def cuda_usable() -> tuple[bool, str]:
    """Whether a CUDA device can be used, and if not, why."""

class Session:
    """
    An executable on a device: one allocation, weights uploaded, kernels compiled (memfit::rt::Session).
    """

    def __init__(self, executable: Executable, device: str = 'host', cache_dir: str = '', host_threads: int = 0) -> None: ...

    @property
    def device(self) -> str: ...

    @property
    def allocated_bytes(self) -> int: ...

    def set_input(self, name: str, array: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

    def run(self, entry: str) -> None: ...

    def output(self, name: str) -> object: ...

    def variables(self) -> list[tuple[str, str]]:
        """
        Each persistent tensor's name and kind (parameter, frozen_parameter, optimizer_state, gradient_accumulator, counter).
        """

    def read_variable(self, name: str) -> object: ...

    def write_variable(self, name: str, array: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

    def save_checkpoint(self, path: str) -> None: ...

    def load_checkpoint(self, path: str) -> None: ...
