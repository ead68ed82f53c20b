#!/usr/bin/env python3
"""PEFT LoRA references for the six ONNX fixtures.

Regenerate (from the repository root; needs torch and peft, not the suite):

    /opt/torchenv/bin/python test/models/make_lora_refs.py

For each fixture of train_refs_bf16.json (three families, two exporters), the
PyTorch model of make_fixtures.py with the ONNX file's weights (as
make_train_refs.py loads them) is wrapped by PEFT's get_peft_model with
LoraConfig(r=4, lora_alpha=8, lora_dropout=0, bias="none") on every nn.Linear
inside the transformer layers: memfit-lora's `all-linear`. lora_B starts at
zero (PEFT's default); lora_A is set to memfit-lora's initial values, which
this script computes with memfit's generator (memfit_lora_a below; the C++ is
loraSeed / loraUniform in passes/Training/Lora.cpp), so that both start from
the same adapters. Writes

    lora_refs.npz
        <fixture>/loss              float32: the loss of the fixture's
                                    gradient inputs (<name>_<exp>_grads.npz)
                                    at the initial adapters
        <fixture>/grad.<param>      float32: d loss / d adapter, PEFT's
                                    layout, memfit's names
                                    (<module>.lora_A.weight, ...)
        <fixture>/loaded/loss, <fixture>/loaded/grad.<param>
                                    the same with lora_B set to 0.1 * N(0, 1)
                                    (torch seed 99), the adapters that
                                    PEFT's save_pretrained writes to
    lora_<family>_adapters.safetensors
                                    (PEFT's names, base_model.model.<module>.
                                    lora_A.weight; the ts and dynamo models
                                    share them), for memfit-run
                                    --load-adapters
    train_refs_lora.json
        per fixture: the loss of each of 200 AdamW steps (train_refs_bf16.json's
        data and settings) on the adapters only, in float32.
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_train_refs as tr  # noqa: E402

from peft import LoraConfig, get_peft_model  # noqa: E402

RANK, ALPHA = 4, 8
MASK = (1 << 64) - 1


def memfit_lora_a(name, rank, fan_in, seed=0):
    """memfit-lora's initial lora_A for the adapter parameter `name`:
    FNV-1a of the name xor seed * 0x9e3779b97f4a7c15, then splitmix64 at
    positions 1..n, top 53 bits as u in [0, 1), value (2u - 1) / sqrt(in)."""
    h = 0xcbf29ce484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001b3) & MASK
    state = np.uint64(h ^ ((seed * 0x9e3779b97f4a7c15) & MASK))
    with np.errstate(over="ignore"):
        idx = np.arange(1, rank * fan_in + 1, dtype=np.uint64)
        z = state + idx * np.uint64(0x9e3779b97f4a7c15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    bound = 1.0 / np.sqrt(float(fan_in))
    return (bound * (2 * u - 1)).astype(np.float32).reshape(rank, fan_in)


def in_layer(path):
    """memfit's layer test (layerIndex in lib/Dialect/MemfitDialect.cpp)."""
    import re
    return re.search(r"(^|[./_:])(h|layer|layers|block|blocks|blk)[._]?([0-9]+)"
                     r"([./_:]|$)", path) is not None


def lora_model(name, path):
    """The fixture's model with PEFT adapters on every nn.Linear in a layer,
    lora_A set to memfit's initial values; the adapted module paths."""
    model = tr.build_model(name)
    tr.load_from_onnx(model, path)
    targets = [n for n, m in model.named_modules()
               if isinstance(m, torch.nn.Linear) and in_layer(n)]
    config = LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0, bias="none",
                        target_modules=targets)
    peft_model = get_peft_model(model, config)
    with torch.no_grad():
        for n, m in model.named_modules():
            if n in targets:
                a = m.lora_A["default"].weight
                a.copy_(torch.from_numpy(memfit_lora_a(f"{n}.lora_A.weight", RANK,
                                                       a.shape[1])))
    return peft_model, model, targets


def adapter_grads(model, targets):
    out = {}
    for n, m in model.named_modules():
        if n in targets:
            out[f"{n}.lora_A.weight"] = m.lora_A["default"].weight.grad.numpy().copy()
            out[f"{n}.lora_B.weight"] = m.lora_B["default"].weight.grad.numpy().copy()
    return out


def main():
    torch.set_num_threads(1)
    import make_fixtures as mf
    bf16 = json.load(open(os.path.join(HERE, tr.BF16_REF)))["fixtures"]
    data = open(os.path.join(HERE, tr.CORPUS), "rb").read()
    toks = torch.from_numpy(tr.encode(data.decode("ascii")))
    bert = {k: torch.from_numpy(v) for k, v in
            np.load(os.path.join(HERE, tr.BERT_DATA)).items()}
    c = tr.CURVE

    def corpus_batch(step):
        offs = tr.batch_offsets(step, 0, len(toks), c["batch"], c["seq"], 1)
        x = torch.stack([toks[o:o + c["seq"]] for o in offs])
        y = torch.stack([toks[o + 1:o + c["seq"] + 1] for o in offs])
        return (x,), {"labels": y}

    def bert_batch(step):
        i = step % tr.BERT_DATA_BATCHES
        return (bert["input_ids"][i], bert["attention_mask"][i]), {"target": bert["target"][i]}

    npz, curves = {}, {}
    for name, (_, _, in_names, _) in mf.MODELS.items():
        for exp in tr.EXPORTERS:
            fixture = f"{name}_{exp}"
            path = os.path.join(HERE, f"{fixture}.onnx")
            # Gradients at the initial adapters, on the inputs of the grads test.
            peft_model, model, targets = lora_model(name, path)
            feeds = {k: torch.from_numpy(v) for k, v in
                     np.load(os.path.join(HERE, f"{name}_inputs.npz")).items()}
            refs = np.load(os.path.join(HERE, f"{fixture}_grads.npz"))
            extra = {k: torch.from_numpy(refs[k]) for k in ("labels", "target") if k in refs}
            loss = tr.loss_fn(peft_model(*[feeds[k] for k in in_names]), extra)
            loss.backward()
            npz[f"{fixture}/loss"] = np.float32(loss.item())
            for k, g in adapter_grads(model, targets).items():
                npz[f"{fixture}/grad.{k}"] = g
            # Again with lora_B nonzero (so that lora_A has a gradient), the
            # adapters saved by PEFT's save_pretrained for --load-adapters.
            peft_model, model, targets = lora_model(name, path)
            g = torch.Generator().manual_seed(99)
            with torch.no_grad():
                for n, m in model.named_modules():
                    if n in targets:
                        b = m.lora_B["default"].weight
                        b.copy_(0.1 * torch.randn(b.shape, generator=g))
            if exp == tr.EXPORTERS[0]:
                with tempfile.TemporaryDirectory() as tmp:
                    peft_model.save_pretrained(tmp)
                    shutil.copy(os.path.join(tmp, "adapter_model.safetensors"),
                                os.path.join(HERE, f"lora_{name}_adapters.safetensors"))
            loss = tr.loss_fn(peft_model(*[feeds[k] for k in in_names]), extra)
            loss.backward()
            npz[f"{fixture}/loaded/loss"] = np.float32(loss.item())
            for k, g in adapter_grads(model, targets).items():
                npz[f"{fixture}/loaded/grad.{k}"] = g
            # 200 AdamW steps on the adapters.
            peft_model, model, targets = lora_model(name, path)
            peft_model.train()
            params = [p for p in peft_model.parameters() if p.requires_grad]
            opt = torch.optim.AdamW(params, lr=c["lr"], betas=c["betas"], eps=c["eps"],
                                    weight_decay=c["weight_decay"])
            batches = bert_batch if name == "bert" else corpus_batch
            losses = []
            for step in range(c["steps"]):
                opt.zero_grad(set_to_none=True)
                inputs, extra = batches(step)
                loss = tr.loss_fn(peft_model(*inputs), extra)
                loss.backward()
                losses.append(float(str(np.float32(loss.item()))))
                opt.step()
            trainable = sum(p.numel() for p in params)
            total = sum(p.numel() for p in peft_model.parameters())
            curves[fixture] = {"targets": targets, "trainable_parameters": trainable,
                               "all_parameters": total, "losses": losses}
            print(f"{fixture}: {len(targets)} adapters, {trainable} of {total} "
                  f"parameters trainable; loss at init {npz[f'{fixture}/loss']:.6f}; "
                  f"200 steps {losses[0]:.6f} -> {losses[-1]:.6f}")
    np.savez_compressed(os.path.join(HERE, "lora_refs.npz"), **npz)
    ref = {
        "description": "PEFT LoRA reference loss curves: each fixture's model (weights of "
                       "its ONNX file) with LoraConfig(r=4, lora_alpha=8, lora_dropout=0, "
                       "bias='none') on every nn.Linear in a transformer layer, lora_A "
                       "set to memfit-lora's initial values (seed 0), lora_B zero, "
                       "trained 200 steps with torch.optim.AdamW on the adapters, with "
                       "train_refs_bf16.json's data and settings. losses[s] is the float32 "
                       "loss of step s's batch before step s's update. Made by "
                       "test/models/make_lora_refs.py.",
        "rank": RANK, "alpha": ALPHA, "targets": "all-linear",
        "torch_version": torch.__version__,
        "peft_version": __import__("peft").__version__,
        "fixtures": curves,
    }
    with open(os.path.join(HERE, "train_refs_lora.json"), "w") as fh:
        fh.write(tr.compact_json(ref) + "\n")


if __name__ == "__main__":
    main()
