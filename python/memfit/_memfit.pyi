"""
memfit's C++ API (memfit/JIT/Compiler.h, memfit/runtime): the memfit package wraps it.
"""

from collections.abc import Mapping


class MemfitError(RuntimeError):
    pass

class Executable:
    """
    A compiled model: its entries, memory plan and kernels (memfit::rt::Executable).
    """

    @property
    def model(self) -> str:
        """The model file it was compiled from."""

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

    @property
    def lora_adapters(self) -> list[tuple[str, str, str, float, bool]]:
        """
        Each LoRA adapter as (A, B, base weight, scale, base stored transposed).
        """

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

    def __init__(self, executable: Executable, device: str = 'host', cache_dir: str = '', host_threads: int = 0) -> None:
        """
        A session of `executable` on 'host' or 'cuda': its kernels compiled or loaded from `cache_dir`, its one allocation made, its weights uploaded; host_threads 0: $MEMFIT_HOST_THREADS, else one per CPU.
        """

    @property
    def device(self) -> str:
        """What it runs on: 'host (2 threads, g++ ...)', the GPU's name."""

    @property
    def allocated_bytes(self) -> int:
        """Bytes of its one allocation: the plan's peak."""

    @property
    def host_bytes(self) -> int:
        """Bytes it holds in host memory apart from the device's allocation:
        the optimizer states under offload='optimizer'."""

    def set_input(self, name: str, array: object) -> None:
        """
        Copies an array (NumPy, or a CPU torch tensor, read in place) to an input; its dtype and shape must be the input's.
        """

    def run(self, entry: str) -> None:
        """
        Runs an entry ('main', 'train_step', 'accumulate', 'apply') on the inputs set since another entry last ran, and waits for it.
        """

    def output(self, name: str, framework: str = 'numpy') -> object:
        """
        An output of the entry that ran last, as a NumPy array or a torch tensor (framework='torch').
        """

    def variables(self) -> list[tuple[str, str]]:
        """
        Each persistent tensor's name and kind (parameter, frozen_parameter, optimizer_state, gradient_accumulator, counter).
        """

    def read_variable(self, name: str, framework: str = 'numpy') -> object:
        """
        A copy of a variable (see variables()), as a NumPy array or a torch tensor.
        """

    def write_variable(self, name: str, array: object) -> None:
        """Overwrites a variable; the array's dtype and shape must be its."""

    def save_checkpoint(self, path: str) -> None:
        """
        Writes every variable but the frozen parameters to `path` through a temporary renamed into place.
        """

    def load_checkpoint(self, path: str) -> None:
        """
        Reads a checkpoint of save_checkpoint(), checked whole against the executable first (on error nothing changed).
        """

    def export_parameters(self, path: str, adapters_only: bool = False) -> None:
        """
        Writes the trainable parameters under their ONNX names (or only the LoRA adapters, under PEFT's names) to a safetensors file, as memfit-run --export-safetensors / --export-adapters.
        """

    def export_model(self, source: str, path: str, external_data: bool = False) -> None:
        """
        Writes the source ONNX model with the trained weights, LoRA merged (memfit-run --export).
        """

    def load_parameters(self, path: str) -> None:
        """
        Sets trainable parameters from a safetensors file (PEFT's names or memfit's), every tensor checked first (--load-adapters).
        """

def write_safetensors(path: str, tensors: dict, metadata: Mapping[str, str] = {}) -> None:
    """
    Writes arrays (NumPy or torch) to a safetensors file through a temporary renamed into place.
    """
