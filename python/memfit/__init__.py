"""memfit from Python: compile an ONNX model, see its memory plan before it
runs, and run or train it with NumPy arrays.

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
import tempfile
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _memfit
from ._memfit import MemfitError
from .config import LoraConfig, TrainConfig

__all__ = ["compile", "load", "Model", "MemoryReport", "TrainConfig",
           "LoraConfig", "MemfitError"]

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

    def _set_inputs(self, entry: str, arrays: Mapping[str, np.ndarray],
                    skip=()) -> None:
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
        for name in names:
            self.session.set_input(name, np.ascontiguousarray(arrays[name]))

    def _entry(self, *candidates: str) -> str:
        for name in candidates:
            if name in self._entries:
                return name
        raise MemfitError("the executable has no entry "
                          f"{' or '.join(repr(c) for c in candidates)} "
                          f"(entries: {', '.join(self._entries)})")

    def run(self, **inputs: np.ndarray) -> Dict[str, np.ndarray]:
        """The forward pass (entry `main`): every output, by name."""
        entry = self._entry("main")
        self._set_inputs(entry, inputs)
        self.session.run(entry)
        return {name: self.session.output(name)
                for name, _, _ in self._entries[entry][1]}

    def step(self, lr: Optional[float] = None, **batch: np.ndarray) -> float:
        """One optimizer step on a micro-batch (entry `train_step`): the
        loss. `lr` defaults to the TrainConfig's learning_rate."""
        entry = self._entry("train_step")
        if lr is None:
            lr = getattr(self, "_learning_rate", None)
        if lr is None:
            raise MemfitError("step(): no learning rate (pass lr= or compile "
                              "with TrainConfig(learning_rate=...))")
        self._set_inputs(entry, batch, skip=("lr",))
        self.session.set_input("lr", np.asarray(lr, dtype=np.float32))
        self.session.run(entry)
        return float(self.session.output("loss"))

    def state_dict(self, kinds: Sequence[str] = ("parameter",
                                                 "frozen_parameter")
                   ) -> Dict[str, np.ndarray]:
        """The weights (and with other kinds, optimizer states, counters)
        under the model's own names, as NumPy arrays."""
        return {name: self.session.read_variable(name)
                for name, kind in self.session.variables() if kind in kinds}


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

    if isinstance(model, (str, os.PathLike)):
        exe = _memfit.compile(os.fspath(model), options)
    else:
        data = model if isinstance(model, (bytes, bytearray)) else \
            model.SerializeToString()
        with tempfile.TemporaryDirectory(prefix="memfit-") as folder:
            path = os.path.join(folder, "model.onnx")
            with open(path, "wb") as f:
                f.write(data)
            exe = _memfit.compile(path, options)
    result = Model(exe, device, cache_dir, host_threads)
    if train is not None:
        result._learning_rate = train.learning_rate
    return result


def load(directory, device: str = "auto", cache_dir: Optional[str] = None,
         host_threads: int = 0) -> Model:
    """A model that Model.save() (or memfit-run --save-executable) wrote."""
    return Model(_memfit.load(os.fspath(directory)), device, cache_dir,
                 host_threads)
