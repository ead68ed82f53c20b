#!/usr/bin/env python3
"""Bytes of activations PyTorch eager holds for the backward of one training
step of gpt12, to compare with memfit's planned saved activations.

  /opt/torchenv/bin/python bench/torch-activations.py [--json OUT] [--sdpa]
                           [--no-optim] [--top 10]

gpt12 is bench/make_gpt2_small.py --layers 12 --hidden 256 --heads 4
--vocab 4096 --positions 512, trained at 4 x 128, fp32, mean cross-entropy.
The same architecture is written here as a torch.nn.Module mirroring the
ONNX graph op for op (token + position Gather, pre-norm LayerNorm, fused
QKV MatMul + Add, Reshape/Transpose/Split, attention written out as
MatMul/Mul/Where/Softmax/MatMul, tanh-GELU MLP, final LayerNorm, tied LM
head), with N(0, 0.02) weights; the ONNX file is not needed. --sdpa uses
scaled_dot_product_attention instead. One step (forward, loss, backward,
AdamW unless --no-optim) runs on the CPU two ways:

- torch.profiler (profile_memory, record_shapes, with_stack) and its memory
  categories (torch.profiler._memory_profiler, through bench/torch_memory.py): the bytes of the ACTIVATION
  category at the end of forward+loss, at its own maximum and at the peak
  of all categories;
- saved_tensors_hooks during forward+loss: the unique storages saved for
  backward, less parameters and inputs, with the largest by op and shape
  and the list for one layer.

Prints a markdown table (bytes, MB = 10^6, MiB); --json writes the numbers.
"""

import argparse
import collections
import json
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import record_function

from torch_memory import profile_step

TAG = [None]  # the layer whose forward is running, for the saved-tensor hook


def param(*shape, std=0.02):
    return nn.Parameter(torch.randn(*shape) * std)


class Block(nn.Module):
    def __init__(self, i, h, nh, sdpa):
        super().__init__()
        self.i, self.h, self.nh, self.sdpa = i, h, nh, sdpa
        self.ln1_g, self.ln1_b = nn.Parameter(torch.ones(h)), nn.Parameter(torch.zeros(h))
        self.attn_w, self.attn_b = param(h, 3 * h), nn.Parameter(torch.zeros(3 * h))
        self.proj_w, self.proj_b = param(h, h), nn.Parameter(torch.zeros(h))
        self.ln2_g, self.ln2_b = nn.Parameter(torch.ones(h)), nn.Parameter(torch.zeros(h))
        self.fc_w, self.fc_b = param(h, 4 * h), nn.Parameter(torch.zeros(4 * h))
        self.mproj_w, self.mproj_b = param(4 * h, h), nn.Parameter(torch.zeros(h))

    def forward(self, x, causal):
        TAG[0] = f"h{self.i}"
        b, t, h, nh = *x.shape[:2], self.h, self.nh
        hd = h // nh
        ln1 = F.layer_norm(x, (h,), self.ln1_g, self.ln1_b, 1e-5)
        qkv = torch.matmul(ln1, self.attn_w) + self.attn_b
        qkvt = qkv.reshape(b, t, 3, nh, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkvt.unbind(0)  # Split + Squeeze
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(hd))
            att = torch.where(causal, att, -1e9)
            y = torch.matmul(torch.softmax(att, dim=-1), v)
        y = y.transpose(1, 2).reshape(b, t, h)
        x = x + (torch.matmul(y, self.proj_w) + self.proj_b)
        ln2 = F.layer_norm(x, (h,), self.ln2_g, self.ln2_b, 1e-5)
        m = F.gelu(torch.matmul(ln2, self.fc_w) + self.fc_b, approximate="tanh")
        x = x + (torch.matmul(m, self.mproj_w) + self.mproj_b)
        TAG[0] = None
        return x


class GPT(nn.Module):
    def __init__(self, layers, h, nh, vocab, positions, sdpa):
        super().__init__()
        self.wte, self.wpe = param(vocab, h), param(positions, h)
        self.blocks = nn.ModuleList(Block(i, h, nh, sdpa) for i in range(layers))
        self.lnf_g, self.lnf_b = nn.Parameter(torch.ones(h)), nn.Parameter(torch.zeros(h))

    def forward(self, ids):
        t = ids.shape[1]
        x = F.embedding(ids, self.wte) + F.embedding(torch.arange(t), self.wpe)
        causal = torch.tril(torch.ones(t, t)).to(torch.bool)  # ConstantOfShape, Trilu, Cast
        for blk in self.blocks:
            x = blk(x, causal)
        x = F.layer_norm(x, (x.shape[-1],), self.lnf_g, self.lnf_b, 1e-5)
        return torch.matmul(x, self.wte.t())


def fwd_loss(model, ids, labels):
    logits = model(ids)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def skey(t):
    s = t.untyped_storage()
    return (s.data_ptr(), s.nbytes())


def profiler_numbers(model, opt, ids, labels):
    def step():
        with record_function("memfit::forward"):
            loss = fwd_loss(model, ids, labels)
        loss.backward()
        if opt is not None:
            opt.step()
            opt.zero_grad(set_to_none=True)

    r = profile_step(step)
    return {k: r[k] for k in ("act_end_fwd", "act_max", "total_peak",
                              "act_at_total_peak")}


def hook_numbers(model, ids, labels, top):
    exclude = {skey(p) for p in model.parameters()} | {skey(ids), skey(labels)}
    saved = {}  # storage -> (layer, shape, dtype)

    def pack(t):
        k = skey(t)
        if k not in exclude and k not in saved:
            saved[k] = (TAG[0], tuple(t.shape), str(t.dtype).replace("torch.", ""))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = fwd_loss(model, ids, labels)
    # Which ops save each storage: walk the graph's _saved_* attributes.
    ops, seen, stack = collections.defaultdict(set), set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for a in dir(node):
            if a.startswith("_saved_"):
                v = getattr(node, a)
                for x in v if isinstance(v, (tuple, list)) else [v]:
                    if isinstance(x, torch.Tensor):
                        ops[skey(x)].add(f"{node.name()}.{a[7:]}")
        stack.extend(f for f, _ in node.next_functions)
    rows = [(k[1], tag, shape, dt, ",".join(sorted(ops.get(k, {"?"}))))
            for k, (tag, shape, dt) in saved.items()]
    total = sum(r[0] for r in rows)
    by = collections.defaultdict(lambda: [0, 0])
    for nb, _, shape, dt, op in rows:
        by[(op, shape, dt)][0] += 1
        by[(op, shape, dt)][1] += nb
    print(f"\nsaved for backward (hooks): {len(rows)} storages, {total:,} bytes; "
          f"top {top} by op and shape:\n")
    print("| op.saved | shape | count | bytes |\n|---|---|---:|---:|")
    for (op, shape, dt), (c, nb) in sorted(by.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"| {op} | {list(shape)} {dt} | {c} | {nb:,} |")
    layer = [r for r in rows if r[1] == "h0"]
    print(f"\nlayer h0: {len(layer)} storages, {sum(r[0] for r in layer):,} bytes\n")
    print("| op.saved | shape | bytes |\n|---|---|---:|")
    for nb, _, shape, dt, op in layer:
        print(f"| {op} | {list(shape)} {dt} | {nb:,} |")
    outside = [r for r in rows if r[1] is None]
    print(f"\noutside the blocks: {len(outside)} storages, {sum(r[0] for r in outside):,} bytes: "
          + "; ".join(f"{r[4]} {list(r[2])} {r[3]}" for r in outside))
    del loss
    return dict(saved_bytes=total, saved_storages=len(rows),
                layer0_bytes=sum(r[0] for r in layer), layer0_storages=len(layer))


def main():
    p = argparse.ArgumentParser()
    for name, default in (("layers", 12), ("hidden", 256), ("heads", 4), ("vocab", 4096),
                          ("positions", 512), ("batch", 4), ("seq", 128), ("seed", 0)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--sdpa", action="store_true", help="scaled_dot_product_attention")
    p.add_argument("--no-optim", action="store_true", help="profile without the AdamW step")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--json", metavar="OUT")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    model = GPT(a.layers, a.hidden, a.heads, a.vocab, a.positions, a.sdpa)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq))
    labels = torch.roll(ids, -1, dims=1)  # next token (wrapping at the end)
    opt = None if a.no_optim else torch.optim.AdamW(model.parameters(), lr=1e-4)
    nparam = sum(x.numel() for x in model.parameters())
    print(f"gpt: {a.layers} layers, hidden {a.hidden}, {nparam:,} parameters, "
          f"{a.batch} x {a.seq}, fp32, {'sdpa' if a.sdpa else 'explicit'} attention, "
          f"torch {torch.__version__}")
    hooks = hook_numbers(model, ids, labels, a.top)
    prof = profiler_numbers(model, opt, ids, labels)
    rows = [("profiler ACTIVATION at end of forward+loss", prof["act_end_fwd"]),
            ("profiler ACTIVATION max over the step", prof["act_max"]),
            ("profiler ACTIVATION at the step's total peak", prof["act_at_total_peak"]),
            ("profiler total (all categories) peak", prof["total_peak"]),
            ("saved_tensors_hooks unique storages", hooks["saved_bytes"]),
            ("saved_tensors_hooks, layer h0 only", hooks["layer0_bytes"])]
    print("\n| method | bytes | MB | MiB |\n|---|---:|---:|---:|")
    for name, nb in rows:
        print(f"| {name} | {nb:,} | {nb / 1e6:.2f} | {nb / 2**20:.2f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(config=vars(a), parameters=nparam, torch=torch.__version__,
                           profiler=prof, hooks=hooks), f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
