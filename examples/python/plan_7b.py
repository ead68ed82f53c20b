#!/usr/bin/env python3
"""Does fine-tuning a Llama-7B-shaped model fit in 24 GB? Asked of the
memory plan, before downloading any weight.

    .venv/bin/python examples/python/plan_7b.py [--batch 4] [--seq 2048]
                                                [--gpu-memory 24GB]

bench/make_llama.py --shapes-only writes the ONNX graph of Llama-2-7B's
shape (32 layers, hidden 4096, 6.74B parameters) whose initializers name an
external weights file that it never writes: the graph is 400 KB.
memfit.compile(..., plan_only=True) imports those tensors without reading
them and plans the training step; the report is the one a run with the
weights would allocate. Full fine-tuning (fp32 AdamW) against QLoRA (the
base in NF4 with double quantization, bf16 compute, LoRA r=16 on every
linear layer), both with layer checkpoints (gradient_checkpointing).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import memfit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GIB = 2**30


def plan(path, shape, title, **options):
    start = time.perf_counter()
    model = memfit.compile(path, input_shapes={"input_ids": shape},
                           plan_only=True, **options)
    report = model.memory_report()
    print(f"\n== {title}: planned in {time.perf_counter() - start:.1f} s\n")
    print(report)
    return report.total_bytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--gpu-memory", default="24GB")
    args = ap.parse_args()
    shape = (args.batch, args.seq)
    limit = memfit.config.parse_bytes(args.gpu_memory)

    with tempfile.TemporaryDirectory(prefix="memfit-plan-7b-") as folder:
        path = os.path.join(folder, "llama-7b.onnx")
        subprocess.run([sys.executable,
                        os.path.join(ROOT, "bench", "make_llama.py"), path,
                        "--preset", "7b", "--shapes-only"], check=True)
        print(f"{path}: {os.path.getsize(path):,} bytes; weights file "
              f"written: {os.path.exists(path + '.weights')}")

        full = plan(path, shape, "full fine-tuning (fp32, AdamW)",
                    train=memfit.TrainConfig(gradient_checkpointing=True))
        lora = memfit.LoraConfig(r=16, lora_alpha=32,
                                 target_modules="all-linear")
        qlora = plan(path, shape,
                     "QLoRA r=16 (NF4 + double quantization, bf16)",
                     train=memfit.TrainConfig(bf16=True, lora=lora,
                                              gradient_checkpointing=True),
                     load_in_4bit=True, bnb_4bit_quant_type="nf4",
                     bnb_4bit_use_double_quant=True)

    print(f"\nLlama-7B shape, batch {args.batch} x {args.seq}, layer "
          f"checkpoints; does it fit in {args.gpu_memory} "
          f"({limit / GIB:.2f} GiB)?")
    for name, total in (("full fine-tuning", full), ("QLoRA r=16", qlora)):
        verdict = "yes" if total <= limit else "no"
        print(f"  {name:<17} one allocation of {total / GIB:6.2f} GiB: "
              f"{verdict}")


if __name__ == "__main__":
    main()
