#!/usr/bin/env python3
"""Fine-tune a GPT-2-shaped model with LoRA in bf16 through memfit, as one
would with transformers + PEFT, and save the adapters as PEFT does.

    .venv/bin/python examples/python/finetune_gpt2_lora.py [--steps 100]
        [--batch 4] [--seq 64] [--out gpt2-lora]

Nothing is downloaded: the model is transformers' GPT2LMHeadModel built
from a local GPT2Config (GPT-2's architecture, scaled down so that a step
takes milliseconds on a CPU: 4 layers, hidden 128, a byte vocabulary of
256) with random weights, and the text is this repository's README.md as
bytes. A real checkpoint works the same way: pass its folder to
from_pretrained instead of the model object.

memfit.from_pretrained exports the model, adds LoRA adapters of rank 8 to
every c_attn (the attention's fused q/k/v projection, as PEFT's
target_modules names it), computes in bf16 and plans the memory before
anything runs; memfit.train runs the steps; save_pretrained writes
adapter_model.safetensors and adapter_config.json, which
peft.PeftModel.from_pretrained loads (checked at the end).
"""

import argparse
import os
import time
import warnings

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel

import memfit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def batches(text: bytes, batch: int, seq: int, seed: int = 0):
    """Random windows of `text` as byte tokens, forever. For a causal LM the
    labels are the input ids (the model shifts them), as in transformers."""
    tokens = np.frombuffer(text, dtype=np.uint8).astype(np.int64)
    rng = np.random.default_rng(seed)
    while True:
        starts = rng.integers(0, len(tokens) - seq, batch)
        ids = np.stack([tokens[s:s + seq] for s in starts])
        yield {"input_ids": ids, "labels": ids}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--out", default="gpt2-lora")
    args = ap.parse_args()

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=256, n_positions=args.seq, n_embd=128,
                        n_layer=4, n_head=4, bos_token_id=0, eos_token_id=0,
                        initializer_range=0.1)
    hf_model = GPT2LMHeadModel(config)

    start = time.perf_counter()
    model = memfit.from_pretrained(
        hf_model, task="causal-lm", batch_size=args.batch, seq_len=args.seq,
        train=memfit.TrainConfig(
            learning_rate=args.lr, bf16=True,
            lora=memfit.LoraConfig(r=8, lora_alpha=16,
                                   target_modules=["c_attn"])))
    print(f"exported and compiled in {time.perf_counter() - start:.1f} s\n")
    print(model.memory_report())

    # A cosine schedule from --lr down to 0 over the run, as a callable of
    # the 0-based optimizer step.
    def lr(step):
        return args.lr * 0.5 * (1 + np.cos(np.pi * step / args.steps))

    with open(os.path.join(ROOT, "README.md"), "rb") as f:
        text = f.read()
    result = memfit.train(model, batches(text, args.batch, args.seq),
                          steps=args.steps, lr=lr, log_every=10)
    print(f"\nloss {result.losses[0]:.4f} -> {result.losses[-1]:.4f} in "
          f"{len(result.losses)} steps; {result.tokens_per_second:,.0f} "
          f"tokens/s; {result.peak_bytes:,} bytes on {result.device}")

    model.save_pretrained(args.out)
    print(f"saved {', '.join(sorted(os.listdir(args.out)))} to {args.out}")

    # The saved adapters in PEFT, on a batch that training did not see:
    # the untouched base model against the base with the adapters.
    import transformers
    from peft import PeftModel
    transformers.logging.set_verbosity_error()
    ids = torch.from_numpy(next(batches(text, args.batch, args.seq,
                                        seed=1))["input_ids"])
    with torch.no_grad():
        base = hf_model.eval()(input_ids=ids, labels=ids).loss.item()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            tuned = PeftModel.from_pretrained(hf_model, args.out).eval()
        loss = tuned(input_ids=ids, labels=ids).loss.item()
    print(f"PEFT on a new batch: base model loss {base:.4f}, with the saved "
          f"adapters {loss:.4f}")


if __name__ == "__main__":
    main()
