#!/usr/bin/env python3
"""What PyTorch eager holds for one training step of bench/long-context.py's
Llama shapes, with Hugging Face's LlamaForCausalLM and
scaled_dot_product_attention, to put next to memfit's plans.

  TORCH_PYTHON bench/torch-long-context.py [--model small|1b] [--layers N]
        [--seqs 2048,8192] [--precision fp32|bf16] [--checkpoint none|layers|both]
        [--skip-contractions | --check-skip] [--json OUT]

The model is transformers' LlamaForCausalLM built from a config of the same
shape as bench/make_llama.py's (small: 4 layers, hidden 512, 8 heads, MLP
1,408, vocabulary 32,000, untied; 1b: Llama-3.2-1B's, 8 of 32 key/value
heads, vocabulary 128,256, tied), attn_implementation "sdpa", fp32
parameters, N(0, 0.02) weights. One step at batch 1: the model's own loss
(labels = the inputs; it upcasts the logits to fp32 for the cross-entropy),
backward, AdamW, zero_grad(set_to_none); the second step is measured, so
that AdamW's states exist, as in every step of a training run; bf16
is torch.autocast("cpu", torch.bfloat16) around the forward and loss, as a
user trains in mixed precision with fp32 master weights, like memfit's
--precision=bf16. Checkpointing is the model's gradient_checkpointing_enable
(torch.utils.checkpoint per decoder layer, use_reentrant=False).

The bytes are torch.profiler's memory timeline (bench/torch_memory.py): the
peak of the step and each category at that moment. The CPU allocator's
bytes are what the tensors ask for; the CUDA caching allocator on a GPU
rounds each block up to 512 bytes and keeps freed blocks (reserved >=
allocated), so a GPU's torch.cuda.max_memory_allocated would be at least
this.

--skip-contractions allocates the products' and attention's results without
computing them (bench/torch_memory.py says why: bf16 products run at 0.26
GFLOP/s on this CPU). --check-skip runs each fp32 configuration both ways
and fails unless the peaks and categories agree within 1 KiB; the long-context table
runs it first.

For the 1b shape, 16 layers do not fit this machine's 24 GiB in fp32 with
AdamW (20 GB of parameters, gradients and states), so it is measured with
--layers 1 and 2 and the figures beyond parameters, gradients and optimizer
states are extended to 16 layers linearly (per-layer bytes = the
difference; with checkpoints 1, 2 and 3 layers measured 12,753.2, 12,817.2
and 12,881.2 MiB: on the line to the byte).
"""

import argparse
import contextlib
import json
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from torch_memory import SkipContractions, profile_step

SHAPES = {
    "small": dict(num_hidden_layers=4, hidden_size=512, num_attention_heads=8,
                  num_key_value_heads=8, intermediate_size=1408,
                  vocab_size=32000, tie_word_embeddings=False,
                  rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    "1b": dict(num_hidden_layers=16, hidden_size=2048, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=8192, vocab_size=128256,
               tie_word_embeddings=True,
               rope_parameters={"rope_type": "default", "rope_theta": 500000.0}),
}
STATES = ("PARAMETER", "GRADIENT", "OPTIMIZER_STATE")


def measure(model_name, layers, seq, precision, checkpoint, skip, seed=0):
    shape = dict(SHAPES[model_name])
    if layers:
        shape["num_hidden_layers"] = layers
    torch.manual_seed(seed)
    config = LlamaConfig(max_position_embeddings=seq, rms_norm_eps=1e-6,
                         attn_implementation="sdpa", initializer_range=0.02,
                         **shape)
    model = LlamaForCausalLM(config).train()
    if checkpoint:
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, shape["vocab_size"], (1, seq))

    def step():
        with torch.profiler.record_function("memfit::forward"):
            with torch.autocast("cpu", torch.bfloat16, enabled=precision == "bf16"):
                loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    with SkipContractions() if skip else contextlib.nullcontext():
        step()  # the first step creates AdamW's states: profile the second
        r = profile_step(step)
    params = sum(p.numel() for p in model.parameters())
    beyond = r["total_peak"] - sum(r["at_peak"].get(c, 0) for c in STATES)
    return dict(model=model_name, layers=shape["num_hidden_layers"], seq=seq,
                precision=precision, checkpoint=bool(checkpoint), skip=skip,
                parameters=params, peak=r["total_peak"], beyond_states=beyond,
                at_peak=r["at_peak"], activation_max=r["act_max"])


def same(a, b, slack=1024):
    """Whether two steps' peaks and categories at the peak agree within
    `slack` bytes (the allocated-only step's scalars may differ by a few)."""
    cats = set(a["at_peak"]) | set(b["at_peak"])
    return abs(a["peak"] - b["peak"]) <= slack and all(
        abs(a["at_peak"].get(c, 0) - b["at_peak"].get(c, 0)) <= slack for c in cats)


def mib(b):
    return f"{b / 2**20:,.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(SHAPES), default="small")
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--seqs", default="2048,8192")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    ap.add_argument("--checkpoint", choices=["none", "layers", "both"],
                    default="both")
    ap.add_argument("--skip-contractions", action="store_true")
    ap.add_argument("--check-skip", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    cks = {"none": [False], "layers": [True], "both": [False, True]}[a.checkpoint]
    rows, failed = [], False
    print(f"torch {torch.__version__}, {a.model}"
          + (f" with {a.layers} layers" if a.layers else "") + f", {a.precision}")
    print("\n| seq | checkpoint | computed | peak MiB | beyond params/grads/states MiB"
          " | at the peak, by category (MiB) |\n|---:|---|---|---:|---:|---|")
    for seq in [int(s) for s in a.seqs.split(",")]:
        for ck in cks:
            runs = [a.skip_contractions] + ([True] if a.check_skip else [])
            got = [measure(a.model, a.layers, seq, a.precision, ck, s) for s in runs]
            for r in got:
                rows.append(r)
                cats = ", ".join(f"{k.lower()} {mib(v)}" for k, v in
                                 sorted(r["at_peak"].items(), key=lambda kv: -kv[1]))
                print(f"| {seq} | {'per layer' if ck else 'none'} | "
                      f"{'no (allocated only)' if r['skip'] else 'yes'} | "
                      f"{mib(r['peak'])} | {mib(r['beyond_states'])} | {cats} |",
                      flush=True)
            if a.check_skip and not same(got[0], got[1]):
                print(f"FAIL: seq {seq}: computed and allocated-only steps differ: "
                      f"{got[0]['peak']} {got[0]['at_peak']} vs "
                      f"{got[1]['peak']} {got[1]['at_peak']}", file=sys.stderr)
                failed = True
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(torch=torch.__version__, rows=rows), f, indent=2)
            f.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
