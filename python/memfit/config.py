"""Training configuration in the ecosystem's words: the fields are named as
Hugging Face's TrainingArguments and PEFT's LoraConfig name them where they
mean the same thing, plus memfit's own (memory_budget, remat). Each maps to
a field of memfit::TrainOptions (memfit/JIT/Compiler.h) and so to a
memfit-run flag; docs/python.md has the table."""

from __future__ import annotations

import dataclasses
import re
from typing import List, Optional, Union

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(size: Union[int, str, None]) -> int:
    """"20GB", "600KiB" or a number of bytes; None is 0 (no budget)."""
    if size is None:
        return 0
    if isinstance(size, int):
        return size
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", size)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"memory_budget {size!r}: expected bytes such as "
                         "'20GB' or '600KiB'")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


@dataclasses.dataclass
class LoraConfig:
    """PEFT's LoraConfig: adapters of rank `r` on `target_modules` (module
    paths, globs, or "all-linear"), scaled by lora_alpha / r."""
    r: int = 8
    lora_alpha: float = 8.0
    target_modules: Optional[Union[str, List[str]]] = None
    exclude_modules: Optional[Union[str, List[str]]] = None
    lora_dropout: float = 0.0
    use_rslora: bool = False


@dataclasses.dataclass
class TrainConfig:
    """What turns the forward pass into a training step."""
    learning_rate: float = 1e-3
    weight_decay: float = 0.01
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    max_grad_norm: float = 0.0
    gradient_accumulation_steps: int = 1
    optim: str = "adamw"  # adamw, adamw_8bit, sgd, none (gradients only)
    bf16: bool = False
    fp16: bool = False
    gradient_checkpointing: bool = False
    loss: str = "cross-entropy"  # cross-entropy, mse, output
    ignore_index: int = -100
    lora: Optional[LoraConfig] = None
    seed: int = 0
    # memfit's own
    memory_budget: Union[int, str, None] = None
    remat: str = "auto"  # none, checkpoint-layers, auto, optimal
    # "optimizer" (the optimizer states), "activations" (saved values remat
    # chooses), or both as "optimizer,activations": in host memory
    # (memfit-run --offload)
    offload: Optional[str] = None

    def to_options(self) -> dict:
        """The options of memfit::TrainOptions, by their snake-case names."""
        if self.bf16 and self.fp16:
            raise ValueError("TrainConfig: bf16 and fp16 are exclusive")
        optimizers = {"adamw": "adamw", "adamw_torch": "adamw",
                      "adamw_8bit": "adamw8bit", "adamw_bnb_8bit": "adamw8bit",
                      "sgd": "sgd", "none": "none"}
        if self.optim not in optimizers:
            raise ValueError(f"TrainConfig: optim {self.optim!r} is not one of "
                             f"{', '.join(optimizers)}")
        offload = set() if self.offload in (None, "none") else \
            set(self.offload.split(","))
        if not offload <= {"optimizer", "activations"}:
            raise ValueError(f"TrainConfig: offload {self.offload!r} is not "
                             "None, 'optimizer', 'activations' or both")
        remat = self.remat
        if self.gradient_checkpointing and remat == "auto" and \
                self.memory_budget is None:
            remat = "checkpoint-layers"
        o = {"loss": self.loss, "ignore_index": self.ignore_index,
             "optimizer": optimizers[self.optim], "beta1": self.adam_beta1,
             "beta2": self.adam_beta2, "eps": self.adam_epsilon,
             "weight_decay": self.weight_decay, "clip_norm": self.max_grad_norm,
             "accumulate": self.gradient_accumulation_steps, "remat": remat,
             "budget": parse_bytes(self.memory_budget),
             "precision": "bf16" if self.bf16 else "fp16" if self.fp16
             else "fp32", "offload_optimizer": "optimizer" in offload,
             "offload_activations": "activations" in offload}
        if self.lora is not None:
            targets = self.lora.target_modules
            o.update({"lora_rank": self.lora.r,
                      "lora_alpha": float(self.lora.lora_alpha),
                      "lora_dropout": float(self.lora.lora_dropout),
                      "lora_rslora": self.lora.use_rslora,
                      "lora_seed": self.seed})
            if targets is not None:
                o["lora_targets"] = [targets] if isinstance(targets, str) \
                    else list(targets)
            if self.lora.exclude_modules is not None:
                ex = self.lora.exclude_modules
                o["lora_exclude"] = [ex] if isinstance(ex, str) else list(ex)
        return o
