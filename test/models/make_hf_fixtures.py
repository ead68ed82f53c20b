#!/usr/bin/env python3
"""Hugging Face models as users export them, with PyTorch references.

Regenerate (from the repository root; needs torch, transformers, onnxscript):

    /opt/torchenv/bin/python test/models/make_hf_fixtures.py

For each of GPT2LMHeadModel, BertForMaskedLM and LlamaForCausalLM with a small
random config (2 layers, hidden size 64, 4 heads, vocabulary 128, every
dropout 0, the library's default attention; every parameter moved by
N(0, 0.02) noise so that none is all zeros or ones), exported the ordinary way by
torch.onnx.export with both exporters (TorchScript at opset 17, dynamo at
opset 18), once with input ids and a 2-D attention mask and once with input
ids alone, this writes under test/models/hf/:

    <family>_<inputs>_<exporter>.onnx
        the exported model (<family> gpt2, bert or llama; <inputs> mask or
        ids; <exporter> ts or dynamo), batch and sequence dynamic (named
        batch and seq)
    <family>_<inputs>_inputs.npz
        input_ids (and attention_mask: row 1 padded from position 12)
    <family>_<inputs>_<exporter>_grads.npz
        make_train_refs.py's gradient reference format (loss, grad.<init>,
        frozen, tied, labels, zero_grad...): the cross-entropy of the logits
        against `labels` (next tokens for the decoders, the tokens themselves
        for BERT; -100 at padded positions), mean over the rest
    <family>_<inputs>_train.npz
        20 AdamW steps (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay
        0.01) on fixed batches of learnable runs (ids counting up by a
        stride of 1 to 3), with padding: input_ids, attention_mask (for
        mask), labels as [20 * 2, 16] arrays (memfit-run --data), and
        losses_fp32, PyTorch's loss of each step before its update
    manifest.json
        what was exported, and the exports that failed with the exporter's
        message (the TorchScript exporter cannot export the decoders without
        a mask: transformers' mask code calls aten::diff)

The PyTorch model's weights are located in each ONNX file as
make_train_refs.load_from_onnx does, so references and files agree bitwise.
"""

import json
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_train_refs as tr  # noqa: E402

OUT = os.path.join(HERE, "hf")
BATCH, SEQ, VOCAB, STEPS = 2, 16, 128, 20
PAD_FROM = 12  # row 1 of every masked batch is padding from here on
ADAMW = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}
FAMILIES = ("gpt2", "bert", "llama")


def build(family):
    """The family's model, seeded, in eval mode (every dropout is 0)."""
    from transformers import (BertConfig, BertForMaskedLM, GPT2Config,
                              GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM)
    torch.manual_seed({"gpt2": 11, "bert": 12, "llama": 13}[family])
    if family == "gpt2":
        config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB,
                            n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0,
                            attn_pdrop=0.0)
        model = GPT2LMHeadModel(config)
    elif family == "bert":
        config = BertConfig(num_hidden_layers=2, hidden_size=64,
                            num_attention_heads=4, intermediate_size=128,
                            vocab_size=VOCAB, max_position_embeddings=64,
                            hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0)
        model = BertForMaskedLM(config)
    else:
        config = LlamaConfig(num_hidden_layers=2, hidden_size=64,
                             num_attention_heads=4, num_key_value_heads=2,
                             intermediate_size=128, vocab_size=VOCAB,
                             max_position_embeddings=64)
        model = LlamaForCausalLM(config)
    model.config.use_cache = False
    # Every parameter distinct (the library starts biases at 0 and norms at
    # 1): the references find each in the ONNX file by its bits.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    return model.eval()


class Logits(torch.nn.Module):
    """The model's logits from input ids and, with `mask`, the mask."""

    def __init__(self, model, mask):
        super().__init__()
        self.model, self.mask = model, mask

    def forward(self, input_ids, attention_mask=None):
        if self.mask:
            return self.model(input_ids=input_ids,
                              attention_mask=attention_mask).logits
        return self.model(input_ids=input_ids).logits


def batch(rng, mask, learnable=False):
    """One batch: random ids (or, `learnable`, runs that count up from a
    random start by a random stride of 1 to 3, which the next-token loss can
    learn in a few steps) and the mask (row 1 padded)."""
    if learnable:
        start = rng.integers(0, VOCAB, (BATCH, 1))
        stride = rng.integers(1, 4, (BATCH, 1))
        ids = ((start + stride * np.arange(SEQ)) % VOCAB).astype(np.int64)
    else:
        ids = rng.integers(1, VOCAB, (BATCH, SEQ)).astype(np.int64)
    feeds = {"input_ids": ids}
    if mask:
        m = np.ones((BATCH, SEQ), np.int64)
        m[1, PAD_FROM:] = 0
        feeds["attention_mask"] = m
    return feeds


def labels_for(family, feeds):
    """Next tokens (decoders) or the tokens (BERT), -100 where padded and
    at each decoder row's last position."""
    ids = feeds["input_ids"]
    if family == "bert":
        labels = ids.copy()
    else:
        labels = np.full_like(ids, tr.IGNORE_INDEX)
        labels[:, :-1] = ids[:, 1:]
    if "attention_mask" in feeds:
        labels[feeds["attention_mask"] == 0] = tr.IGNORE_INDEX
        if family != "bert":  # the token after the last real one is padding
            labels[1, PAD_FROM - 1] = tr.IGNORE_INDEX
    return labels


def export(model, mask, path, dynamo):
    wrapper = Logits(model, mask).eval()
    feeds = batch(np.random.default_rng(0), mask)
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    # Batch and sequence dynamic, as users export for serving.
    axes = {0: "batch", 1: "seq"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            dims = {0: torch.export.Dim("batch", min=1, max=64),
                    1: torch.export.Dim("seq", min=2, max=64)}
            torch.onnx.export(wrapper, args, path, input_names=list(feeds),
                              output_names=["logits"], dynamo=True,
                              opset_version=18,
                              dynamic_shapes={k: dims for k in feeds})
        else:
            torch.onnx.export(wrapper, args, path, input_names=list(feeds),
                              output_names=["logits"], dynamo=False,
                              opset_version=17,
                              dynamic_axes={k: axes for k in
                                            list(feeds) + ["logits"]})


def grads_reference(family, model, mask, path, feeds):
    """make_train_refs' gradient record for one exported file; checks first
    that the model, with the file's weights, gives onnxruntime's logits."""
    import copy
    import onnxruntime as ort
    layout, tied, frozen = tr.load_from_onnx(model, path)
    torch_feeds = {k: torch.from_numpy(v) for k, v in feeds.items()}
    with torch.no_grad():
        out = Logits(model, mask)(*torch_feeds.values()).numpy()
    ref = ort.InferenceSession(path).run(None, feeds)[0]
    assert np.abs(out - ref).max() < 1e-4, (path, np.abs(out - ref).max())
    extra = {"labels": torch.from_numpy(labels_for(family, feeds))}

    def grads_of(m):
        loss, grads = tr.loss_and_grads(Logits(m, mask), torch_feeds, extra)
        return loss, tr.onnx_layout(
            {k.removeprefix("model."): v for k, v in grads.items()}, layout)

    loss32, g32 = grads_of(model)
    loss64, g64 = grads_of(copy.deepcopy(model).double())
    top = max(float(np.abs(g).max()) for g in g64.values())
    zero = sorted(n for n, g in g64.items() if np.abs(g).max() < 1e-9 * top)
    rel = max((float(np.abs(g32[n] - g64[n]).max() / np.abs(g64[n]).max())
               for n in g64 if n not in zero), default=0.0)
    record = {"loss": np.float32(loss32.item()),
              "loss_fp64": np.float64(loss64.item()),
              "frozen": np.array(frozen, dtype=np.str_).reshape(-1),
              "tied": np.array(tied, dtype=np.str_).reshape(-1),
              "labels": extra["labels"].numpy(),
              "zero_grad": np.array(zero, dtype=np.str_).reshape(-1),
              "fp64_max_rel_diff": np.float64(rel)}
    record.update({f"grad.{n}": g.astype(np.float32) for n, g in g32.items()})
    return record, len(g32), rel


def train_reference(family, model, mask, path):
    """20 AdamW steps on fixed padded batches, from the file's weights."""
    tr.load_from_onnx(model, path)
    wrapper = Logits(model, mask)
    opt = torch.optim.AdamW(model.parameters(), **ADAMW)
    rng = np.random.default_rng(100 + FAMILIES.index(family))
    data = {"input_ids": [], "labels": []}
    if mask:
        data["attention_mask"] = []
    losses = []
    for _ in range(STEPS):
        feeds = batch(rng, mask, learnable=True)
        labels = labels_for(family, feeds)
        for k, v in feeds.items():
            data[k].append(v)
        data["labels"].append(labels)
        opt.zero_grad(set_to_none=True)
        out = wrapper(*(torch.from_numpy(v) for v in feeds.values()))
        loss = F.cross_entropy(out.reshape(-1, VOCAB),
                               torch.from_numpy(labels).reshape(-1),
                               ignore_index=tr.IGNORE_INDEX)
        loss.backward()
        losses.append(float(np.float32(loss.item())))
        opt.step()
    record = {k: np.concatenate(v) for k, v in data.items()}
    record["losses_fp32"] = np.array(losses, np.float32)
    return record


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    manifest = {"description": __doc__.split("\n\n")[0].replace("\n", " "),
                "batch": BATCH, "seq": SEQ, "steps": STEPS,
                "adamw": {k: list(v) if isinstance(v, tuple) else v
                          for k, v in ADAMW.items()},
                "fixtures": [], "failed": {}}
    for family in FAMILIES:
        for mask in (True, False):
            inputs = "mask" if mask else "ids"
            feeds = batch(np.random.default_rng(1), mask)
            np.savez(os.path.join(OUT, f"{family}_{inputs}_inputs.npz"),
                     **feeds)
            trained = False
            for exporter in ("ts", "dynamo"):
                name = f"{family}_{inputs}_{exporter}"
                path = os.path.join(OUT, name + ".onnx")
                try:
                    export(build(family), mask, path, exporter == "dynamo")
                except Exception as e:  # the exporter's own limits
                    manifest["failed"][name] = str(e).splitlines()[0][:200]
                    print(f"{name}: export failed: "
                          f"{manifest['failed'][name]}")
                    continue
                record, count, rel = grads_reference(family, build(family),
                                                     mask, path, feeds)
                np.savez_compressed(os.path.join(OUT, name + "_grads.npz"),
                                    **record)
                if not trained:  # the weights are the same for both files
                    np.savez(os.path.join(OUT, f"{family}_{inputs}_train.npz"),
                             **train_reference(family, build(family), mask,
                                               path))
                    trained = True
                manifest["fixtures"].append(name)
                print(f"{name}: {count} gradients, loss {record['loss']:.6f}"
                      f", fp32 vs fp64 {rel:.1e}, tied {list(record['tied'])}"
                      f", frozen {list(record['frozen'])}")
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
