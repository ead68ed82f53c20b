"""memfit from Python: compile an ONNX model (or a PyTorch module, or a
Hugging Face model), see its memory plan before it runs, and run or train
it with NumPy arrays or torch tensors.

    import memfit
    model = memfit.compile("gpt.onnx", input_shapes={"input_ids": (2, 16)},
                           train=memfit.TrainConfig(learning_rate=1e-3))
    print(model.memory_report())
    loss = model.step(input_ids=ids, labels=labels)

Everything runs in memfit's C++ (the `_memfit` extension over
memfit/JIT/Compiler.h and memfit/runtime); errors are `MemfitError` with
the same one-line diagnostics as memfit-run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, \
    Union

import numpy as np

from . import _memfit
from ._memfit import MemfitError
from .config import LoraConfig, TrainConfig

__all__ = ["compile", "load", "Model", "MemoryReport", "TrainConfig",
           "LoraConfig", "MemfitError", "from_torch", "from_pretrained",
           "train", "TrainResult"]

# The parts that need PyTorch (hf) or are a loop over the API (training)
# load on first use, so that `import memfit` needs neither torch nor tqdm.
_LAZY = {"from_torch": "hf", "from_pretrained": "hf", "train": "training",
         "TrainResult": "training"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module 'memfit' has no attribute {name!r}")


Shapes = Union[None, str, Mapping[str, Sequence[int]]]


def _shapes_text(shapes: Shapes) -> str:
    """`{"input_ids": (2, 16)}` or `{"batch": 2}` as memfit-run's
    --input-shape text ("input_ids=2x16", "batch=2")."""
    if shapes is None:
        return ""
    if isinstance(shapes, str):
        return shapes
    parts = []
    for name, shape in shapes.items():
        if isinstance(shape, int):
            parts.append(f"{name}={shape}")
        else:
            parts.append(f"{name}=" + "x".join(str(int(d)) for d in shape))
    return ",".join(parts)


class MemoryReport(dict):
    """The memory plan by category in bytes (the categories of memfit-run
    --memory-report); str() gives the report as memfit-run prints it."""

    def __init__(self, rows, text: str, total: int):
        super().__init__(rows)
        self.text = text
        self.total_bytes = total

    def __str__(self) -> str:
        return self.text


def _is_torch(value) -> bool:
    return type(value).__module__.split(".")[0] == "torch"


def _host_array(value):
    """An array the extension reads in place: NumPy arrays and CPU torch
    tensors in C order as they are (a copy only where they are not), a
    torch tensor on a GPU copied to the host, anything else through
    numpy.asarray."""
    if _is_torch(value):
        if value.device.type != "cpu":
            value = value.cpu()
        return value.contiguous()
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value)
    return np.asarray(value)


class Model:
    """A compiled model and, once it runs, its session on a device."""

    def __init__(self, executable, device: str = "auto",
                 cache_dir: Optional[str] = None, host_threads: int = 0):
        self._exe = executable
        self._device = device
        self._cache_dir = cache_dir or ""
        self._host_threads = host_threads
        self._session = None
        self._entries = {name: (inputs, outputs)
                         for name, inputs, outputs in executable.entries}
        # The ONNX file compiled (export_onnx, remat_report) and the options
        # it was compiled with; memfit.compile sets them.
        self._source_path: Optional[str] = None
        self._options: Optional[dict] = None
        # from_pretrained: the batch as the source model's forward takes it
        # (HF's unshifted causal-LM labels) -> the executable's inputs.
        self._batch_hook: Optional[Callable[[str, dict], dict]] = None
        # Micro-batches per optimizer step of an accumulating executable.
        self._accumulate: Optional[int] = None

    # -- what was compiled ------------------------------------------------

    @property
    def plan_only(self) -> bool:
        """Compiled from shapes alone (no weights): it plans, it cannot run."""
        return self._exe.plan_only

    @property
    def entries(self) -> Dict[str, Tuple[list, list]]:
        """Each entry's inputs and outputs as (name, dtype, shape)."""
        return dict(self._entries)

    def memory_report(self) -> MemoryReport:
        """Bytes by category before anything runs."""
        return MemoryReport(self._exe.memory, self._exe.memory_report_text(),
                            self._exe.total_bytes)

    def save(self, path: str) -> None:
        """Writes the executable, for memfit-run or memfit.load()."""
        self._exe.save(os.fspath(path))

    def remat_report(self) -> str:
        """memfit-remat's report for the training step: for each forward
        value the backward reads, whether it is saved, recomputed or
        compressed, and why (memfit-run --remat-report's text). Computed
        by compiling the same model again from its shapes alone."""
        options = self._options
        if options is None or self._source_path is None:
            raise MemfitError("remat_report(): this model was loaded, not "
                              "compiled here; memfit-run --remat-report "
                              "gives the report")
        if "train" not in options:
            raise MemfitError("remat_report(): the model was compiled "
                              "without train=; remat decides what a "
                              "training step keeps")
        with tempfile.TemporaryDirectory(prefix="memfit-") as folder:
            report = os.path.join(folder, "remat.txt")
            again = dict(options, plan_only=True,
                         train=dict(options["train"], remat_report=report))
            _memfit.compile(self._source_path, again)
            with open(report, encoding="utf-8") as f:
                return f.read()

    # -- running ----------------------------------------------------------

    @property
    def session(self):
        if self.plan_only:
            raise MemfitError(
                f"{self._exe.model} was compiled to plan only, without its "
                "weights; compile it without plan_only to run it")
        if self._session is None:
            device = self._device
            if device == "auto":
                device = "cuda" if _memfit.cuda_usable()[0] else "host"
            self._session = _memfit.Session(self._exe, device,
                                            self._cache_dir,
                                            self._host_threads)
        return self._session

    @property
    def device(self) -> str:
        return self.session.device

    @property
    def peak_bytes(self) -> int:
        """Bytes the session holds on its device: memfit makes one
        allocation, the plan's peak (weights, states and arena), so this is
        also the peak."""
        return self.session.allocated_bytes

    @property
    def host_bytes(self) -> int:
        """Bytes the session holds in host memory apart from the device's
        allocation: with TrainConfig(offload="optimizer") the fp32 masters,
        the optimizer states and what the host's update reads (pinned on a
        GPU), else 0."""
        return self.session.host_bytes

    def _set_inputs(self, entry: str, arrays: Mapping[str, Any],
                    skip=()) -> str:
        """Sets an entry's inputs; "torch" when any was a torch tensor (the
        outputs follow), else "numpy"."""
        if self._batch_hook is not None:
            arrays = self._batch_hook(entry, dict(arrays))
        inputs, _ = self._entries[entry]
        names = [name for name, _, _ in inputs if name not in skip]
        unknown = sorted(set(arrays) - set(names))
        if unknown:
            raise MemfitError(f"entry '{entry}': no input named "
                              f"'{unknown[0]}' (inputs: {', '.join(names)})")
        missing = [name for name in names if name not in arrays]
        if missing:
            raise MemfitError(f"entry '{entry}': missing input "
                              f"'{missing[0]}' (inputs: {', '.join(names)})")
        framework = "numpy"
        for name in names:
            if _is_torch(arrays[name]):
                framework = "torch"
            self.session.set_input(name, _host_array(arrays[name]))
        return framework

    def _entry(self, *candidates: str) -> str:
        for name in candidates:
            if name in self._entries:
                return name
        raise MemfitError("the executable has no entry "
                          f"{' or '.join(repr(c) for c in candidates)} "
                          f"(entries: {', '.join(self._entries)})")

    def run(self, **inputs) -> Dict[str, Any]:
        """The forward pass (entry `main`; with TrainConfig(optim="none"),
        the loss and every gradient `grad.<name>`): every output, by name,
        as NumPy arrays, or torch tensors when the inputs were torch
        tensors."""
        entry = self._entry("main")
        framework = self._set_inputs(entry, inputs)
        self.session.run(entry)
        return {name: self.session.output(name, framework)
                for name, _, _ in self._entries[entry][1]}

    def step(self, lr: Optional[float] = None, **batch) -> float:
        """One optimizer step: the loss. `lr` defaults to the TrainConfig's
        learning_rate.

        With gradient_accumulation_steps = k (the entries `accumulate` and
        `apply`), every input holds the step's k micro-batches along a new
        first dimension (k x the input's shape); their gradients are added
        micro-batch by micro-batch, then applied once, and the loss is
        their mean (memfit-run's step)."""
        entry = self._entry("train_step", "accumulate")
        if lr is None:
            lr = getattr(self, "_learning_rate", None)
        if lr is None:
            raise MemfitError("step(): no learning rate (pass lr= or compile "
                              "with TrainConfig(learning_rate=...))")
        rate = np.asarray(lr, dtype=np.float32)
        if entry == "train_step":
            self._set_inputs(entry, batch, skip=("lr",))
            self.session.set_input("lr", rate)
            self.session.run(entry)
            return float(self.session.output("loss"))
        k = self._accumulate
        if not k:
            raise MemfitError("step(): the executable accumulates gradients "
                              "(entries accumulate and apply) but how many "
                              "micro-batches make a step is not known: "
                              "memfit.load(..., gradient_accumulation_steps=k)")
        shapes = {n: tuple(shape) for n, _, shape in self._entries[
            "accumulate"][0]}
        for name, value in batch.items():
            want = (k,) + shapes.get(name, tuple(np.shape(value))[1:])
            if tuple(np.shape(value)) != want:
                raise MemfitError(
                    f"step(): input '{name}' has shape "
                    f"{tuple(np.shape(value))}, expected {want}: with "
                    f"gradient_accumulation_steps={k} each input holds the "
                    f"step's {k} micro-batches along a first dimension")
        total = 0.0
        for j in range(k):
            self._set_inputs("accumulate", {n: v[j] for n, v in batch.items()})
            self.session.run("accumulate")
            total += float(self.session.output("loss"))
        self.session.set_input("lr", rate)
        self.session.run("apply")
        return float(np.float32(total / k))

    def state_dict(self, kinds: Sequence[str] = ("parameter",
                                                 "frozen_parameter"),
                   framework: str = "numpy") -> Dict[str, Any]:
        """The weights (and with other kinds, optimizer states, counters)
        under the model's own (ONNX initializer) names, as NumPy arrays or
        torch tensors (framework="torch", sharing the arrays' memory)."""
        return {name: self.session.read_variable(name, framework)
                for name, kind in self.session.variables() if kind in kinds}

    def load_state_dict(self, arrays: Mapping[str, Any]) -> None:
        """Overwrites variables by name (NumPy arrays or torch tensors of
        each one's dtype and shape)."""
        for name, value in arrays.items():
            self.session.write_variable(name, _host_array(value))

    # -- weights out ------------------------------------------------------

    def export_onnx(self, path, external_data: bool = False) -> None:
        """The source ONNX model with the trained weights, LoRA adapters
        merged into their base weights (memfit-run --export)."""
        if self._source_path is None:
            raise MemfitError("export_onnx(): the model was loaded, not "
                              "compiled here, so its source is not known")
        self.session.export_model(self._source_path, os.fspath(path),
                                  external_data)

    def save_pretrained(self, folder) -> None:
        """The trained weights as a Hugging Face folder: model.safetensors
        under the source model's parameter names (and its config.json), or
        with LoRA the adapters as PEFT saves them (adapter_model.safetensors
        and adapter_config.json). See memfit.hf.save_pretrained."""
        from .hf import save_pretrained
        save_pretrained(self, os.fspath(folder))


def compile(model, *, input_shapes: Shapes = None,
            input_values: Optional[Mapping[str, Sequence[float]]] = None,
            train: Optional[TrainConfig] = None, device: str = "auto",
            fuse: bool = True, plan_only: bool = False,
            load_in_4bit: bool = False, bnb_4bit_quant_type: str = "nf4",
            bnb_4bit_use_double_quant: bool = False,
            cache_dir: Optional[str] = None, host_threads: int = 0) -> Model:
    """Compiles `model` (a path to an ONNX or MLIR file, an
    onnx.ModelProto or the bytes of one) for `device` ("auto": CUDA where a
    GPU is usable, else the host backend). With `train`, the training step;
    else the forward pass."""
    options = {"input_shapes": _shapes_text(input_shapes), "fuse": fuse,
               "plan_only": plan_only}
    if input_values:
        options["input_values"] = [
            f"{name}=" + ",".join(str(v) for v in np.ravel(values))
            for name, values in input_values.items()]
    if load_in_4bit:
        options["quantize_weights"] = bnb_4bit_quant_type
        options["double_quant"] = bnb_4bit_use_double_quant
    if train is not None:
        options["train"] = train.to_options()
    if cache_dir:
        options["cache_dir"] = os.fspath(cache_dir)

    folder = None
    if isinstance(model, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(model))
    else:
        # Bytes go to a file that lives as long as the Model: export_onnx
        # and remat_report read the source again.
        data = model if isinstance(model, (bytes, bytearray)) else \
            model.SerializeToString()
        folder = tempfile.mkdtemp(prefix="memfit-")
        path = os.path.join(folder, "model.onnx")
        with open(path, "wb") as f:
            f.write(data)
    try:
        exe = _memfit.compile(path, options)
    except BaseException:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    result = Model(exe, device, cache_dir, host_threads)
    result._source_path = path
    result._options = options
    if folder:
        weakref.finalize(result, shutil.rmtree, folder, True)
    if train is not None:
        result._learning_rate = train.learning_rate
        result._accumulate = train.gradient_accumulation_steps
    return result


def load(directory, device: str = "auto", cache_dir: Optional[str] = None,
         host_threads: int = 0,
         gradient_accumulation_steps: Optional[int] = None) -> Model:
    """A model that Model.save() (or memfit-run --save-executable) wrote;
    an accumulating training step needs the gradient_accumulation_steps it
    was compiled with, as memfit-run's --accumulate."""
    model = Model(_memfit.load(os.fspath(directory)), device, cache_dir,
                  host_threads)
    model._accumulate = gradient_accumulation_steps
    return model
