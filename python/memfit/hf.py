"""Hugging Face models in and out of memfit.

    model = memfit.from_pretrained("path/to/gpt2", batch_size=8, seq_len=512,
                                   train=memfit.TrainConfig(lora=...))
    loss = model.step(input_ids=ids, attention_mask=mask, labels=ids)
    model.save_pretrained("out")   # PeftModel.from_pretrained(base, "out")

from_pretrained loads a local folder (or takes a PreTrainedModel already
built), exports it as from_torch does (memfit.torch_export: input_ids and
attention_mask in, logits out, batch and sequence dynamic) and compiles it
for {"batch": batch_size, "seq": seq_len}. `step` and `run` take the batch
as the model's forward does: a causal LM's labels are the input ids, which
Hugging Face shifts inside the model (position t predicts labels[t + 1]),
so they reach memfit's cross-entropy shifted left with -100 (ignored) last.

save_pretrained writes what Hugging Face writes: model.safetensors under the
model's parameter names and config.json, or with LoRA the adapters as PEFT
saves them (adapter_model.safetensors, adapter_config.json).
"""

from __future__ import annotations

import copy
import inspect
import json
import os
import shutil
import tempfile
from typing import Any, Dict, Optional

import numpy as np

from . import _memfit
from ._memfit import MemfitError
from .torch_export import (BATCH, SEQ, export_and_compile, from_torch,
                           torch_state_dict)

__all__ = ["from_pretrained", "save_pretrained", "from_torch",
           "torch_state_dict"]

TASKS = ("causal-lm", "masked-lm")
IGNORE_INDEX = -100
# The wrapper's attribute that holds the model: every exported name and
# module path starts with it.
PREFIX = "model."
# Example batch for the export (the shapes compiled are the caller's).
EXAMPLE_BATCH, EXAMPLE_SEQ = 2, 16


def _task_of(class_names) -> Optional[str]:
    for name in class_names or ():
        if name.endswith("ForCausalLM") or name.endswith("LMHeadModel"):
            return "causal-lm"
        if name.endswith("ForMaskedLM"):
            return "masked-lm"
    return None


def _load(path: str, task: Optional[str]):
    """The model of a local folder, in float32, and its task."""
    if not os.path.isdir(path):
        raise MemfitError(
            f"from_pretrained: no folder '{path}' (memfit loads local "
            "folders only and downloads nothing: fetch the model first, "
            "e.g. with huggingface_hub.snapshot_download)")
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise MemfitError(f"from_pretrained: '{path}' has no config.json, "
                          "so it is no Hugging Face model folder")
    import torch
    import transformers
    config = transformers.AutoConfig.from_pretrained(path,
                                                     local_files_only=True)
    task = task or _task_of(config.architectures)
    if task is None:
        raise ValueError(f"from_pretrained: {path}'s architectures "
                         f"{config.architectures} are no causal or masked "
                         f"LM; pass task= ({', '.join(TASKS)})")
    auto = transformers.AutoModelForCausalLM if task == "causal-lm" else \
        transformers.AutoModelForMaskedLM
    model = auto.from_pretrained(path, local_files_only=True,
                                 dtype=torch.float32)
    return model, task


def _logits_of(hf, with_mask: bool):
    """A module of (input_ids[, attention_mask]) -> logits around `hf`."""
    import torch

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = hf

        def forward(self, input_ids, attention_mask=None):
            if with_mask:
                return self.model(input_ids=input_ids,
                                  attention_mask=attention_mask).logits
            return self.model(input_ids=input_ids).logits

    return Logits()


def _shift_left(labels):
    """labels[:, 1:] with IGNORE_INDEX appended: what position t predicts."""
    if isinstance(labels, np.ndarray):
        pad = np.full_like(labels[..., :1], IGNORE_INDEX)
        return np.concatenate([labels[..., 1:], pad], axis=-1)
    if type(labels).__module__.split(".")[0] == "torch":
        import torch
        pad = torch.full_like(labels[..., :1], IGNORE_INDEX)
        return torch.cat([labels[..., 1:], pad], dim=-1)
    return _shift_left(np.asarray(labels))


def _batch_hook(task: str, with_mask: bool):
    """Model._batch_hook: the batch as the HF model's forward takes it ->
    the executable's inputs."""

    def hook(entry: str, arrays: Dict[str, Any]) -> Dict[str, Any]:
        if task == "causal-lm" and "labels" in arrays:
            arrays["labels"] = _shift_left(arrays["labels"])
        if with_mask and "attention_mask" not in arrays and \
                "input_ids" in arrays:
            ids = arrays["input_ids"]
            # HF's default: every position attends.
            if isinstance(ids, np.ndarray):
                arrays["attention_mask"] = np.ones_like(ids)
            else:
                import torch
                arrays["attention_mask"] = torch.ones_like(ids)
        return arrays

    return hook


def from_pretrained(model, *, task: Optional[str] = None,
                    batch_size: int = 1, seq_len: Optional[int] = None,
                    with_attention_mask: bool = True, train=None,
                    device: str = "auto", exporter: str = "auto",
                    **compile_kwargs):
    """A Hugging Face causal or masked LM, compiled for batch_size x seq_len.

    `model` is a local folder (transformers' AutoModelForCausalLM or
    AutoModelForMaskedLM with local_files_only: nothing is downloaded) or a
    PreTrainedModel. `task` is "causal-lm" or "masked-lm" (default: from
    config.architectures or the model's class). `seq_len` defaults to the
    config's max_position_embeddings. The inputs are input_ids and, with
    `with_attention_mask` (when forward takes one), attention_mask, which
    step/run fill with ones when it is not given. The model is exported in
    eval mode, or with `train` in training mode, so that its dropouts are
    those its config sets. `exporter` is from_torch's ("auto", "dynamo",
    "torchscript"); other keyword arguments go to memfit.compile."""
    import torch
    if task is not None and task not in TASKS:
        raise ValueError(f"from_pretrained: task {task!r} is not one of "
                         f"{', '.join(TASKS)}")
    if isinstance(model, (str, os.PathLike)):
        name_or_path = os.path.abspath(os.fspath(model))
        hf, task = _load(name_or_path, task)
    elif isinstance(model, torch.nn.Module) and hasattr(model, "config"):
        hf = model
        task = task or _task_of([type(model).__name__]) or \
            _task_of(getattr(model.config, "architectures", None))
        if task is None:
            raise ValueError(f"from_pretrained: {type(model).__name__} is no "
                             f"causal or masked LM; pass task= "
                             f"({', '.join(TASKS)})")
        name_or_path = getattr(model, "name_or_path", None) or None
    else:
        raise ValueError("from_pretrained: expected a folder or a "
                         f"transformers PreTrainedModel, got "
                         f"{type(model).__name__}")

    config = hf.config
    positions = getattr(config, "max_position_embeddings", None) or \
        getattr(config, "n_positions", None)
    if seq_len is None:
        if positions is None:
            raise ValueError("from_pretrained: the config gives no "
                             "max_position_embeddings; pass seq_len=")
        seq_len = positions
    with_mask = with_attention_mask and "attention_mask" in \
        inspect.signature(hf.forward).parameters
    seq = min(EXAMPLE_SEQ, positions or EXAMPLE_SEQ)
    ids = torch.arange(EXAMPLE_BATCH * seq).reshape(EXAMPLE_BATCH, seq) % \
        max(2, getattr(config, "vocab_size", 2))
    inputs = {"input_ids": ids.to(torch.int64)}
    if with_mask:
        # One row padded: an all-ones mask could let the model's Python
        # take a path that ignores the mask, which tracing would keep.
        mask = torch.ones_like(inputs["input_ids"])
        mask[-1, seq - max(1, seq // 4):] = 0
        inputs["attention_mask"] = mask
    axes = {name: {0: BATCH, 1: SEQ} for name in inputs}

    shapes = compile_kwargs.pop("input_shapes", None) or \
        {BATCH: int(batch_size), SEQ: int(seq_len)}
    use_cache = getattr(config, "use_cache", None)
    config.use_cache = False
    try:
        result = export_and_compile(
            _logits_of(hf, with_mask), inputs, False, axes=axes,
            output_names=["logits"], output_axes={"logits": {0: BATCH,
                                                             1: SEQ}},
            train=train, input_shapes=shapes, device=device, prefix=PREFIX,
            exporter=exporter, **compile_kwargs)
    finally:
        config.use_cache = use_cache

    source = result._torch_source
    # Names relative to the HF model (the wrapper's prefix off).
    source.state_names = [n[len(PREFIX):] for n in source.state_names]
    source.unexported = {n[len(PREFIX):]: a
                         for n, a in source.unexported.items()}
    source.names = {o: (t[len(PREFIX):], tr)
                    for o, (t, tr) in source.names.items()}
    source.module_types = {n[len(PREFIX):]: c
                           for n, c in source.module_types.items()
                           if n.startswith(PREFIX)}
    saved = copy.deepcopy(config)
    saved.use_cache = use_cache
    saved.architectures = [type(hf).__name__]
    source.hf_config = saved
    source.generation_config = copy.deepcopy(
        getattr(hf, "generation_config", None))
    source.task = task
    source.name_or_path = name_or_path
    result._batch_hook = _batch_hook(task, with_mask)
    return result


# -- save_pretrained --------------------------------------------------------

def _move_into(staging: str, folder: str) -> None:
    """staging's files into folder: the folder renamed into place when it
    is new, else each file (os.replace: a reader sees the old file or the
    new one, never half of one)."""
    if not os.path.exists(folder):
        os.rename(staging, folder)
        return
    if not os.path.isdir(folder):
        raise MemfitError(f"save_pretrained: '{folder}' is a file, not a "
                          "folder")
    for name in sorted(os.listdir(staging)):
        os.replace(os.path.join(staging, name), os.path.join(folder, name))


def _write_weights(model, source, staging: str) -> None:
    _memfit.write_safetensors(os.path.join(staging, "model.safetensors"),
                              torch_state_dict(model), {"format": "pt"})
    if source.hf_config is not None:
        source.hf_config.save_pretrained(staging)
        generation = getattr(source, "generation_config", None)
        if generation is not None:
            generation.save_pretrained(staging)


def _write_adapters(model, source, adapters, staging: str) -> None:
    options = (getattr(model, "_options", None) or {}).get("train", {})
    trained = model.state_dict(("parameter",))
    tensors, targets, conv1d = {}, [], False
    for a, b, base, _, _ in adapters:
        weight = source.names.get(base, (None, False))[0]
        if weight is None or not weight.endswith(".weight"):
            raise MemfitError(f"save_pretrained: the base weight '{base}' of "
                              f"the adapter '{a}' is no parameter of the "
                              "source model")
        module = weight[:-len(".weight")]
        for name, part in ((a, "lora_A"), (b, "lora_B")):
            if name not in trained:
                raise MemfitError(f"save_pretrained: no trained adapter "
                                  f"'{name}'")
            tensors[f"base_model.model.{module}.{part}.weight"] = trained[name]
        targets.append(module)
        conv1d |= source.module_types.get(module) == "Conv1D"
    _memfit.write_safetensors(
        os.path.join(staging, "adapter_model.safetensors"), tensors,
        {"format": "pt"})
    config = {
        "peft_type": "LORA",
        "task_type": {"causal-lm": "CAUSAL_LM"}.get(source.task),
        "base_model_name_or_path": source.name_or_path,
        "r": int(options.get("lora_rank", 8)),
        "lora_alpha": float(options.get("lora_alpha", 8.0)),
        "lora_dropout": float(options.get("lora_dropout", 0.0)),
        "use_rslora": bool(options.get("lora_rslora", False)),
        "target_modules": sorted(set(targets)),
        # GPT-2's Conv1D stores its weight [in, out].
        "fan_in_fan_out": conv1d,
        "bias": "none",
        "inference_mode": True,
        "init_lora_weights": True,
        "modules_to_save": None,
        "use_dora": False,
    }
    with open(os.path.join(staging, "adapter_config.json"), "w",
              encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def save_pretrained(model, folder) -> None:
    """Writes `model`'s trained weights as a Hugging Face folder: without
    LoRA, model.safetensors under the source model's parameter names (the
    ones stored transposed transposed back, tied weights once) and, for a
    Hugging Face source, config.json; with LoRA, adapter_model.safetensors
    under PEFT's names (base_model.model.<module>.lora_A.weight) and an
    adapter_config.json that peft.PeftModel.from_pretrained(base, folder)
    loads. The files are written to a temporary folder beside `folder` and
    renamed into place."""
    source = getattr(model, "_torch_source", None)
    if source is None:
        raise MemfitError(
            "save_pretrained(): the model was not made by from_torch or "
            "from_pretrained, so its weights have no PyTorch names; "
            "Model.export_onnx or Model.session.export_parameters write them "
            "under the ONNX names")
    folder = os.path.abspath(os.fspath(folder))
    parent = os.path.dirname(folder)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".memfit-save-", dir=parent)
    try:
        adapters = list(model._exe.lora_adapters)
        if adapters:
            _write_adapters(model, source, adapters, staging)
        else:
            _write_weights(model, source, staging)
        _move_into(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
