#!/usr/bin/env python3
"""PyTorch references for training with dropout (test/Training/dropout-curve.test).

Regenerate (from the repository root; needs torch and onnx, like
make_train_refs.py, whose helpers it imports; ~1 minute on 2 cores):

    /work/torchenv/bin/python test/models/make_dropout_refs.py

Writes, next to this script:

    gpt_dropout_ts.onnx      the gpt fixture (the weights of gpt_ts.onnx) with
                             GPT-2's dropouts of p = 0.1: after the embeddings
                             (embd_pdrop), on the attention probabilities
                             (attn_pdrop), after the attention's and the MLP's
                             output projections (resid_pdrop). TorchScript
                             exporter in training mode (TrainingMode.TRAINING),
                             opset 17: every Dropout has training_mode true.
    dropout_train_refs.json  the loss of every step of STEPS AdamW steps with
                             gpt_train_ref.json's settings and corpus batches
                             (memfit-run --corpus), for SEEDS seeds
                             (torch.manual_seed(seed) before the first step),
                             and two controls a correct dropout must be told
                             apart from: one mask for every step (the
                             generator re-seeded before each step's forward)
                             and no dropout at all (the dropouts in eval mode).

The masks are PyTorch's (Philox), not memfit's, so no run equals another:
the test checks that memfit's curve lies within the seeds' spread.
"""

import json
import os
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixtures as mf  # noqa: E402
import make_train_refs as tr  # noqa: E402

P = 0.1
STEPS = 40
SEEDS = list(range(10))
FIXED_MASK_SEED = 1000
ONNX_FILE = "gpt_dropout_ts.onnx"
REF_FILE = "dropout_train_refs.json"


class DropoutAttention(mf.GPTAttention):
    """The fixture's attention with dropout on the probabilities and on the
    output projection, as GPT-2's attn_dropout and resid_dropout."""

    def __init__(self, cfg, p):
        super().__init__(cfg)
        self.attn_dropout = nn.Dropout(p)
        self.resid_dropout = nn.Dropout(p)


class DropoutBlock(mf.GPTBlock):
    def __init__(self, cfg, p):
        super().__init__(cfg)
        self.attn = DropoutAttention(cfg, p)
        self.mlp_dropout = nn.Dropout(p)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_dropout(self.mlp(self.ln_2(x)))


class DropoutGPT(mf.GPT):
    """The gpt fixture with GPT-2's dropouts; the same parameter names."""

    def __init__(self, p=P, cfg=mf.GPTConfig()):
        super().__init__(cfg)
        self.h = nn.ModuleList([DropoutBlock(cfg, p) for _ in range(cfg.n_layer)])
        self.drop = nn.Dropout(p)

    def forward(self, input_ids):
        T = input_ids.size(1)
        pos = torch.arange(T, dtype=torch.long, device=input_ids.device)
        x = self.drop(self.wte(input_ids) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def build():
    """DropoutGPT with exactly gpt_ts.onnx's weights."""
    base = tr.build_model("gpt")
    tr.load_from_onnx(base, os.path.join(HERE, "gpt_ts.onnx"))
    model = DropoutGPT()
    model.load_state_dict(base.state_dict())
    return model


def export(model, path):
    x = torch.zeros(2, 16, dtype=torch.long)
    names = {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), path, dynamo=False,
                          opset_version=mf.TS_OPSET,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False,
                          input_names=["input_ids"], output_names=["logits"],
                          dynamic_axes=names)
    m = onnx.load(path)
    drops = [n for n in m.graph.node if n.op_type == "Dropout"]
    assert len(drops) == 1 + 3 * mf.GPTConfig.n_layer, len(drops)
    return len(drops)


def train(initial, tokens, mode, seed=None):
    """STEPS AdamW steps of gpt_train_ref.json's settings from the weights
    `initial`; `mode` "seed" (dropout, seeded once), "fixed" (one mask every
    step) or "none"."""
    c = tr.CURVE
    model = DropoutGPT()
    model.load_state_dict(initial)
    model.train(mode != "none")
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"], betas=c["betas"],
                            eps=c["eps"], weight_decay=c["weight_decay"])
    toks = torch.from_numpy(tokens)
    if mode == "seed":
        torch.manual_seed(seed)
    losses = []
    for step in range(STEPS):
        if mode == "fixed":
            torch.manual_seed(FIXED_MASK_SEED)
        opt.zero_grad(set_to_none=True)
        offs = tr.batch_offsets(step, 0, len(tokens), c["batch"], c["seq"], 1)
        x = torch.stack([toks[o:o + c["seq"]] for o in offs])
        y = torch.stack([toks[o + 1:o + c["seq"] + 1] for o in offs])
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        losses.append(float(str(np.float32(loss.item()))))
        opt.step()
    return losses


def main():
    torch.set_num_threads(1)
    model = build()
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    drops = export(model, os.path.join(HERE, ONNX_FILE))
    data = open(os.path.join(HERE, tr.CORPUS), "rb").read()
    tokens = tr.encode(data.decode("ascii"))
    curves = {str(s): train(initial, tokens, "seed", s) for s in SEEDS}
    c = tr.CURVE
    ref = {
        "description": "PyTorch loss curves of the gpt fixture with GPT-2's dropouts "
                       f"(p = {P}, {drops} Dropout nodes in {ONNX_FILE}, its weights "
                       "those of gpt_ts.onnx) trained with torch.optim.AdamW on "
                       "corpus.txt; losses[s] is the mean cross-entropy of step s's "
                       "batch before step s's update. losses_by_seed: "
                       "torch.manual_seed(seed) before the first step; "
                       "losses_fixed_mask: the generator re-seeded before every step "
                       "(one mask for all steps); losses_no_dropout: the dropouts in "
                       "eval mode. Made by test/models/make_dropout_refs.py.",
        "onnx_file": ONNX_FILE,
        "dropout": P,
        "corpus_file": tr.CORPUS,
        "batching": "memfit-run --corpus, as gpt_train_ref.json",
        "steps": STEPS, "batch": c["batch"], "seq": c["seq"],
        "optimizer": {"name": "AdamW", "lr": c["lr"], "beta1": c["betas"][0],
                      "beta2": c["betas"][1], "eps": c["eps"],
                      "weight_decay": c["weight_decay"]},
        "torch_version": torch.__version__,
        "losses_by_seed": curves,
        "losses_fixed_mask": train(initial, tokens, "fixed"),
        "losses_no_dropout": train(initial, tokens, "none"),
    }
    with open(os.path.join(HERE, REF_FILE), "w") as fh:
        fh.write(tr.compact_json(ref) + "\n")
    table = np.array(list(curves.values()))
    print(f"{len(SEEDS)} seeds, {STEPS} steps: step 1 {table[:, 0].min():.4f}.."
          f"{table[:, 0].max():.4f}, last {table[:, -1].min():.4f}.."
          f"{table[:, -1].max():.4f}; fixed mask last "
          f"{ref['losses_fixed_mask'][-1]:.4f}, no dropout last "
          f"{ref['losses_no_dropout'][-1]:.4f}")


if __name__ == "__main__":
    main()
