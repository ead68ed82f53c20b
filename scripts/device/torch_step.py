"""PyTorch's training step for a GPT-2-small-sized model on the GPU, eager
and under torch.compile: the scale against which memfit's CUDA step is read
(scripts/device/check.sh). transformers' GPT2LMHeadModel with
bench/make_gpt2_small.py's sizes (12 layers, d=768, 12 heads, vocabulary
50257), batch 4 x 512, AdamW, fp32 and bf16 autocast, TF32 off (PyTorch's
default for matmuls). Prints the median step time of 10 after 3 warm-ups
(torch.compile's compile is in the warm-ups) and the peak allocated memory.
TORCH_COMPILE=0 leaves torch.compile out."""
import os
import sys
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def run(dtype, compiled=False):
    torch.manual_seed(0)
    torch.cuda.empty_cache()
    cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257,
                     n_positions=1024, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0)
    model = GPT2LMHeadModel(cfg).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if compiled:
        model = torch.compile(model)
    ids = torch.randint(0, 50257, (4, 512), device="cuda")
    torch.cuda.reset_peak_memory_stats()
    times = []
    for i in range(13):
        torch.cuda.synchronize()
        t = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == "bf16"):
            loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i >= 3:
            times.append(time.perf_counter() - t)
    times.sort()
    way = "torch.compile" if compiled else "torch eager"
    print(f"{way} {dtype}: median {times[len(times) // 2] * 1e3:.1f} ms/step, "
          f"min {times[0] * 1e3:.1f}, peak {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB, "
          f"loss {loss.item():.4f}")


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    print(torch.__version__, torch.cuda.get_device_name())
    run("fp32")
    run("bf16")
    if os.environ.get("TORCH_COMPILE", "1") != "0":
        for dtype in ("fp32", "bf16"):
            try:
                run(dtype, compiled=True)
            except Exception as e:  # a missing Triton, a compiler error
                print(f"torch.compile {dtype}: failed: {e}", file=sys.stderr)
                print(f"torch.compile {dtype}: failed")
