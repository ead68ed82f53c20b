"""memfit.from_torch: a PyTorch module through torch.onnx.export into
memfit.compile, with the names of its weights kept.

    model = memfit.from_torch(net, (x,), train=memfit.TrainConfig())
    loss = model.step(x=x, labels=y)
    net.load_state_dict(memfit.hf.torch_state_dict(model, "torch"))

The module goes through the dynamo exporter (torch.export) and, where that
fails, the TorchScript exporter at opset 17 with a warning that says why.
The batch dimension (and the sequence dimension of integer inputs such as
token ids) is dynamic and named "batch" and "seq", so that
`input_shapes={"batch": 8, "seq": 512}` chooses the shapes memfit plans for.

Both exporters would otherwise change the weights' identity, which matters
to training though not to inference: the ONNX optimizer merges initializers
that hold equal values (a fresh model's LayerNorm weights are all ones, its
biases all zeros, so every LayerNorm would share one weight), drops a zero
bias, and folds a transpose of a weight into a new constant. So the dynamo
export is optimized with the module's own tensors hidden from the optimizer,
and the TorchScript export keeps its initializers apart
(keep_initializers_as_inputs, their inputs removed afterwards). Each ONNX
initializer is then traced back to the module's state: by name, else (the
TorchScript exporter's `onnx::MatMul_123`, a weight stored transposed) by
value, its transpose included; tied weights come back under one name, the
first the module lists. The mapping is `model._torch_source.names`.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import io
import logging
import os
import re
import shutil
import tempfile
import warnings
import weakref
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ._memfit import MemfitError

__all__ = ["from_torch", "torch_state_dict", "TorchSource"]

BATCH, SEQ = "batch", "seq"
TORCHSCRIPT_OPSET = 17
EXPORTERS = ("auto", "dynamo", "torchscript")
LORA_ROLES = ("attention", "mlp", "all-linear")


@dataclasses.dataclass
class TorchSource:
    """Where a Model's weights came from (Model._torch_source)."""
    # ONNX initializer -> (the module's state_dict name, stored transposed).
    names: Dict[str, Tuple[str, bool]]
    # The module's state_dict names (persistent state, tied weights once).
    state_names: List[str]
    # State with no ONNX initializer (weights the forward never reads): a
    # copy, so that save_pretrained writes the whole state.
    unexported: Dict[str, np.ndarray]
    # Each module path's class name (Conv1D, Linear...).
    module_types: Dict[str, str]
    exporter: str  # "dynamo" or "torchscript"
    # Hugging Face models: the config, the task, the name or folder.
    hf_config: Any = None
    generation_config: Any = None
    task: Optional[str] = None
    name_or_path: Optional[str] = None


# -- inputs ---------------------------------------------------------------

def _forward_parameters(module):
    try:
        return inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return {}


def _named_inputs(module, example_inputs, input_names):
    """The example inputs as (name -> tensor, passed by keyword?)."""
    import torch
    params = _forward_parameters(module)
    kinds = {p.kind for p in params.values()}
    takes_any_keyword = inspect.Parameter.VAR_KEYWORD in kinds
    takes_any_positional = inspect.Parameter.VAR_POSITIONAL in kinds
    where = f"from_torch: {type(module).__name__}.forward"
    if isinstance(example_inputs, Mapping):
        if input_names is not None and \
                list(input_names) != list(example_inputs):
            raise ValueError("from_torch: input_names name positional "
                             "example inputs; a dict of them is named "
                             "already")
        for name in example_inputs:
            if name not in params and not takes_any_keyword:
                raise ValueError(f"{where} takes no input named '{name}' "
                                 f"(it takes: {', '.join(params)})")
        inputs = dict(example_inputs)
        by_keyword = True
    else:
        if isinstance(example_inputs, torch.Tensor):
            example_inputs = (example_inputs,)
        positional = [n for n, p in params.items() if p.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        if len(example_inputs) > len(positional) and not takes_any_positional:
            raise ValueError(f"{where} takes {len(positional)} inputs "
                             f"({', '.join(positional)}), not "
                             f"{len(example_inputs)}")
        names = list(input_names) if input_names else [
            positional[i] if i < len(positional) else f"input_{i}"
            for i in range(len(example_inputs))]
        if len(names) != len(example_inputs):
            raise ValueError(f"from_torch: {len(names)} input_names for "
                             f"{len(example_inputs)} example inputs")
        inputs = dict(zip(names, example_inputs))
        by_keyword = False
    for name, value in inputs.items():
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"from_torch: example input '{name}' is a "
                             f"{type(value).__name__}, not a torch.Tensor")
    return inputs, by_keyword


def _default_axes(inputs) -> Dict[str, Dict[int, str]]:
    """Dimension 0 of every input is the batch; dimension 1 of an integer or
    boolean input of rank 2 or more (token ids, masks) the sequence."""
    import torch
    axes = {}
    for name, value in inputs.items():
        dims = {}
        if value.dim() >= 1:
            dims[0] = BATCH
        if value.dim() >= 2 and not torch.is_floating_point(value) and \
                not torch.is_complex(value):
            dims[1] = SEQ
        if dims:
            axes[name] = dims
    return axes


def _dim_sizes(inputs, axes) -> Dict[str, int]:
    """{"batch": 2, "seq": 16}: each named dimension's size in the examples
    (a name used twice must have one size)."""
    sizes: Dict[str, int] = {}
    for name, dims in axes.items():
        for dim, label in dims.items():
            size = int(inputs[name].shape[dim])
            if sizes.setdefault(label, size) != size:
                raise ValueError(f"from_torch: dimension '{label}' is "
                                 f"{sizes[label]} in one input and {size} in "
                                 f"'{name}'")
    return sizes


# -- export ---------------------------------------------------------------

@contextlib.contextmanager
def _quiet():
    """The exporters' progress lines, warnings and logs (TorchScript's
    deprecation, the graphs torch.export prints to stderr when it gives
    up, onnx_ir's notes on the initializers it is told to leave alone): a
    failure is reported once, by the exception or the fallback's
    warning."""
    manager = logging.Logger.manager
    loggers = [logging.getLogger(n) for n in list(manager.loggerDict)
               if n.split(".")[0] in ("torch", "onnx_ir", "onnxscript")]
    loggers += [logging.getLogger(n) for n in ("torch", "onnx_ir",
                                               "onnxscript")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), \
                contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _export_dynamo(module, inputs, by_keyword, axes, output_names, path):
    import torch
    dims = {label: torch.export.Dim(label)
            for d in axes.values() for label in d.values()}
    shapes = {name: {dim: dims[label] for dim, label in axes[name].items()}
              if name in axes else None for name in inputs}
    args = () if by_keyword else tuple(inputs.values())
    with _quiet():
        program = torch.onnx.export(
            module, args, kwargs=dict(inputs) if by_keyword else None,
            dynamo=True, optimize=False, verbose=False,
            input_names=list(inputs), output_names=output_names,
            dynamic_shapes=shapes if by_keyword else tuple(shapes.values()))
        # The optimizer (constant folding, rewrites, deduplication) sees
        # the module's tensors as values it does not know.
        graph = program.model.graph
        hidden = {name: value.const_value
                  for name, value in graph.initializers.items()}
        for value in graph.initializers.values():
            value.const_value = None
        try:
            program.optimize()
        finally:
            for name, tensor in hidden.items():
                if name in graph.initializers:
                    graph.initializers[name].const_value = tensor
        program.save(path)


def _export_torchscript(module, inputs, by_keyword, axes, output_names,
                        output_axes, path, training):
    import onnx
    import torch
    args = () if by_keyword else tuple(inputs.values())
    dynamic = {name: dict(d) for name, d in axes.items()}
    for name, d in (output_axes or {}).items():
        dynamic[name] = dict(d)
    mode = torch.onnx.TrainingMode.TRAINING if training else \
        torch.onnx.TrainingMode.EVAL
    with _quiet():
        torch.onnx.export(module, args, path,
                          kwargs=dict(inputs) if by_keyword else None,
                          dynamo=False, opset_version=TORCHSCRIPT_OPSET,
                          input_names=list(inputs), output_names=output_names,
                          dynamic_axes=dynamic or None, training=mode,
                          keep_initializers_as_inputs=True)
    # Kept as inputs only so that the exporter would not merge them.
    proto = onnx.load(path)
    inits = {t.name for t in proto.graph.initializer}
    graph_inputs = [i for i in proto.graph.input if i.name not in inits]
    del proto.graph.input[:]
    proto.graph.input.extend(graph_inputs)
    onnx.save(proto, path)


def _why(error: BaseException) -> str:
    """The first line of the innermost cause (the exporter wraps the
    torch.export error that says what went wrong), without colour codes."""
    while error.__cause__ is not None:
        error = error.__cause__
    lines = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines()
    return f"{type(error).__name__}: {(lines or [''])[0][:300]}"


def _export(module, inputs, by_keyword, axes, output_names, output_axes,
            folder, training, exporter) -> Tuple[str, str]:
    """Exports into folder/model.onnx: (path, the exporter that did)."""
    if exporter not in EXPORTERS:
        raise ValueError(f"from_torch: exporter {exporter!r} is not one of "
                         f"{', '.join(EXPORTERS)}")
    path = os.path.join(folder, "model.onnx")
    modes = [(m, m.training) for m in module.modules()]
    module.train(training)
    try:
        if exporter != "torchscript":
            try:
                _export_dynamo(module, inputs, by_keyword, axes,
                               output_names, path)
                return path, "dynamo"
            except Exception as e:  # the dynamo exporter's limits
                if exporter == "dynamo":
                    raise
                warnings.warn(
                    f"memfit.from_torch: the dynamo exporter failed "
                    f"({_why(e)}); exporting with the TorchScript exporter "
                    f"(opset {TORCHSCRIPT_OPSET})", stacklevel=4)
                for name in os.listdir(folder):
                    os.remove(os.path.join(folder, name))
        _export_torchscript(module, inputs, by_keyword, axes, output_names,
                            output_axes, path, training)
        return path, "torchscript"
    finally:
        for m, mode in modes:
            m.training = mode


# -- ONNX initializers -> the module's state --------------------------------

def _module_path(node) -> str:
    """The module a node belongs to, as memfit's onnxModulePath reads it:
    the dynamo exporter's "namespace" metadata, else the TorchScript node
    name ("/model/h.0/attn/c_attn/Gemm": model.h.0.attn.c_attn)."""
    text = ""
    for prop in getattr(node, "metadata_props", ()):
        if prop.key == "namespace":
            text = "/".join(seg.split(": ")[0].strip()
                            for seg in prop.value.split("/"))
    parts = [p for p in (text or node.name).split("/") if p]
    if parts:
        parts.pop()  # the op's own name
    modules: List[str] = []
    for part in parts:
        if part.startswith(":"):
            continue
        if modules and part.startswith(modules[-1] + "."):
            modules[-1] = part
        else:
            modules.append(part)
    return ".".join(modules)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and \
        a.tobytes() == b.tobytes()


def _match(proto, module) -> Dict[str, Tuple[str, bool]]:
    """ONNX initializer -> (state name, transposed)."""
    import onnx
    canonical: Dict[int, str] = {}
    tensors: Dict[str, Any] = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        canonical.setdefault(id(t), name)
        tensors[name] = t

    names: Dict[str, Tuple[str, bool]] = {}
    unmatched = []
    for init in proto.graph.initializer:
        t = tensors.get(init.name)
        if t is not None and tuple(t.shape) == tuple(init.dims):
            names[init.name] = (canonical[id(t)], False)
        elif len(init.dims) >= 1 and int(np.prod(init.dims)) > 1 and \
                init.data_type in (onnx.TensorProto.FLOAT,
                                   onnx.TensorProto.DOUBLE,
                                   onnx.TensorProto.FLOAT16):
            unmatched.append(init)
    if not unmatched:
        return names

    # By value: candidates of the same shape (or its transpose), the
    # consumer's module first.
    consumers: Dict[str, List[str]] = {}
    wanted = {i.name for i in unmatched}
    for node in proto.graph.node:
        for name in node.input:
            if name in wanted:
                consumers.setdefault(name, []).append(
                    _module_path(node) + ".")
    unique = {}
    for name, t in tensors.items():
        unique.setdefault(id(t), (canonical[id(t)], t))
    by_shape: Dict[tuple, List[Tuple[str, Any, bool]]] = {}
    for tname, t in unique.values():
        shape = tuple(t.shape)
        by_shape.setdefault(shape, []).append((tname, t, False))
        if len(shape) == 2 and shape[0] != shape[1]:
            by_shape.setdefault(shape[::-1], []).append((tname, t, True))
        elif len(shape) == 2:
            by_shape[shape].append((tname, t, True))
    taken = {v[0] for v in names.values()}
    for init in unmatched:
        value = onnx.numpy_helper.to_array(init)
        hints = consumers.get(init.name, [])
        candidates = sorted(
            by_shape.get(tuple(value.shape), []),
            key=lambda c: (not any(c[0].startswith(h) for h in hints),
                           c[0] in taken, c[2]))
        for tname, t, transposed in candidates:
            ref = t.detach().cpu()
            if transposed:
                ref = ref.t()
            try:
                ref = ref.contiguous().numpy()
            except TypeError:  # bfloat16 and other types NumPy lacks
                continue
            if _same(value, ref):
                names[init.name] = (tname, transposed)
                taken.add(tname)
                break
    return names


def _source(module, proto, exporter) -> TorchSource:
    names = _match(proto, module)
    state = module.state_dict(keep_vars=True)
    seen, state_names = set(), []
    for name, t in state.items():
        if id(t) not in seen:
            seen.add(id(t))
            state_names.append(name)
    exported = {tname for tname, _ in names.values()}
    unexported = {n: state[n].detach().cpu().numpy().copy()
                  for n in state_names if n not in exported}
    module_types = {n: type(m).__name__ for n, m in module.named_modules()}
    return TorchSource(names, state_names, unexported, module_types,
                       exporter)


# -- compiling ------------------------------------------------------------

def _glob_escape(name: str) -> str:
    return re.sub(r"([*?\[\]\\{}])", r"\\\1", name)


def _lora_globs(targets, prefix: str):
    """PEFT's target_modules (a module name matches its path or the end of
    one) as memfit's globs over the exported module paths."""
    if targets is None:
        return None
    if isinstance(targets, str):
        targets = [targets]
    out = []
    for t in targets:
        if t in LORA_ROLES or t.startswith("*"):
            out.append(t)
        else:
            out += [t, "*." + t] + ([prefix + t] if prefix and "." in t
                                    else [])
    return list(dict.fromkeys(out))


class _ExportedTrain:
    """A TrainConfig whose options also freeze what the module does not
    train (buffers, parameters with requires_grad False, constants) and
    read LoRA targets as PEFT does."""

    def __init__(self, config, frozen: Sequence[str], prefix: str):
        self._config, self._frozen, self._prefix = config, frozen, prefix

    def __getattr__(self, name):
        return getattr(self._config, name)

    def to_options(self) -> dict:
        o = self._config.to_options()
        if self._frozen:
            o["frozen"] = list(o.get("frozen", [])) + \
                [_glob_escape(n) for n in self._frozen]
        for key in ("lora_targets", "lora_exclude"):
            if key in o:
                o[key] = _lora_globs(o[key], self._prefix)
        return o


def _frozen(proto, module, names) -> List[str]:
    """Float initializers of rank >= 1 that are no trainable parameter."""
    import onnx
    trainable = {n for n, p in module.named_parameters() if p.requires_grad}
    floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE,
              onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)
    return [i.name for i in proto.graph.initializer
            if i.data_type in floats and len(i.dims) >= 1
            and names.get(i.name, ("", False))[0] not in trainable]


def export_and_compile(module, inputs, by_keyword, *, axes, output_names,
                       output_axes=None, train=None, input_shapes=None,
                       device="auto", prefix="", exporter="auto",
                       **compile_kwargs):
    """The module exported into a temporary folder that lives as long as the
    Model, compiled, with its TorchSource (from_torch, from_pretrained)."""
    import onnx
    from . import compile as memfit_compile
    folder = tempfile.mkdtemp(prefix="memfit-torch-")
    try:
        path, exporter = _export(module, inputs, by_keyword, axes,
                                 output_names, output_axes, folder,
                                 training=train is not None,
                                 exporter=exporter)
        proto = onnx.load(path)
        source = _source(module, proto, exporter)
        if train is not None:
            train = _ExportedTrain(train, _frozen(proto, module,
                                                  source.names), prefix)
        del proto
        if input_shapes is None:
            input_shapes = _dim_sizes(inputs, axes) or {
                name: tuple(t.shape) for name, t in inputs.items()}
        model = memfit_compile(path, input_shapes=input_shapes, train=train,
                               device=device, **compile_kwargs)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    weakref.finalize(model, shutil.rmtree, folder, True)
    model._source_path = path
    model._torch_source = source
    return model


def from_torch(module, example_inputs, *, input_names=None,
               dynamic_axes: Optional[Mapping[str, Mapping[int, str]]] = None,
               output_names: Optional[Sequence[str]] = None,
               train=None, input_shapes=None, device: str = "auto",
               exporter: str = "auto", **compile_kwargs):
    """Exports `module` (a torch.nn.Module) with `example_inputs` (a tensor,
    a tuple of them in forward's order, or a dict by forward's parameter
    names) and compiles it as memfit.compile does.

    `input_names` names the ONNX inputs (default: forward's parameter
    names). `dynamic_axes` ({input: {dim: name}}, TorchScript's form) are
    the dimensions left open; by default the batch (dimension 0) and the
    sequence (dimension 1 of integer inputs), named "batch" and "seq".
    `input_shapes` defaults to the examples' sizes of those dimensions
    ({"batch": 2, "seq": 16}). `exporter`: "auto" (dynamo, else
    TorchScript with a warning), "dynamo" or "torchscript".

    With `train`, the module is exported in training mode (its dropouts
    apply), every float initializer that is no trainable parameter of the
    module (buffers, requires_grad=False) is frozen, and
    LoraConfig.target_modules are read as PEFT reads them (a name matches a
    module path or its end). One difference from PyTorch remains:
    nn.Embedding's padding_idx row, whose gradient PyTorch keeps zero, is
    an ordinary row of the exported Gather and trains."""
    import torch
    if not isinstance(module, torch.nn.Module):
        raise ValueError(f"from_torch: expected a torch.nn.Module, got "
                         f"{type(module).__name__}")
    inputs, by_keyword = _named_inputs(module, example_inputs, input_names)
    axes = _default_axes(inputs) if dynamic_axes is None else \
        {name: dict(d) for name, d in dynamic_axes.items()}
    for name in axes:
        if name not in inputs:
            raise ValueError(f"from_torch: dynamic_axes names '{name}', "
                             f"which is no input ({', '.join(inputs)})")
    model = export_and_compile(
        module, inputs, by_keyword, axes=axes,
        output_names=list(output_names) if output_names else None,
        train=train, input_shapes=input_shapes, device=device,
        exporter=exporter, **compile_kwargs)
    config = getattr(module, "config", None)
    if hasattr(config, "save_pretrained") and hasattr(config, "to_dict"):
        # A transformers model: save_pretrained writes its config.json.
        config = copy.deepcopy(config)
        config.architectures = [type(module).__name__]
        model._torch_source.hf_config = config
    return model


def torch_state_dict(model, framework: str = "numpy") -> Dict[str, Any]:
    """The model's weights under the source module's state_dict names
    (transposed back where the ONNX file stores them transposed, tied
    weights once), the state the forward never read as it was: for
    `module.load_state_dict`. NumPy arrays, or torch tensors with
    framework="torch"."""
    source = getattr(model, "_torch_source", None)
    if source is None:
        raise MemfitError("this model was not made by from_torch or "
                          "from_pretrained, so its weights have no PyTorch "
                          "names; Model.state_dict() gives them under the "
                          "ONNX names")
    trained = model.state_dict()
    out: Dict[str, np.ndarray] = {}
    transposed_only: Dict[str, np.ndarray] = {}
    for oname, (tname, transposed) in source.names.items():
        if oname not in trained:
            continue
        if transposed:
            transposed_only.setdefault(
                tname, np.ascontiguousarray(trained[oname].T))
        else:
            out[tname] = trained[oname]
    for tname, array in transposed_only.items():
        out.setdefault(tname, array)
    missing = [n for n in source.state_names
               if n not in out and n not in source.unexported]
    initial = _initial_values(model._source_path, source, missing)
    result = {}
    for name in source.state_names:
        if name in out:
            result[name] = out[name]
        elif name in source.unexported:
            result[name] = source.unexported[name]
        else:
            result[name] = initial[name]
    if framework == "torch":
        import torch
        return {n: torch.from_numpy(np.array(a)) for n, a in result.items()}
    return result


def _initial_values(path, source, names) -> Dict[str, np.ndarray]:
    """State that memfit holds no variable for (integer buffers, weights it
    folded as constants), from the exported file."""
    if not names:
        return {}
    import onnx
    wanted = set(names)
    values = {}
    for init in onnx.load(path).graph.initializer:
        tname, transposed = source.names.get(init.name, (None, False))
        if tname in wanted and (tname not in values or not transposed):
            a = onnx.numpy_helper.to_array(init)
            values[tname] = np.ascontiguousarray(a.T) if transposed else a
    lost = sorted(wanted - set(values))
    if lost:
        raise MemfitError(f"no value for '{lost[0]}' in the exported model")
    return values
