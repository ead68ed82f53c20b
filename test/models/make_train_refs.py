#!/usr/bin/env python3
"""PyTorch training references for the ONNX fixtures made by make_fixtures.py.

Regenerate (from the repository root; needs torch, like make_fixtures.py):

    /opt/torchenv/bin/python test/models/make_train_refs.py [grads] [curve] [bf16]

Section "grads" writes, for each of the six fixtures <name>_<exp>.onnx,

    <name>_<exp>_grads.npz
        loss               float32 scalar: the float32 PyTorch loss
        loss_fp64          float64 scalar: the same loss computed in float64
        grad.<init name>   float32: d loss / d initializer, in the ONNX
                           initializer's layout, for every float initializer of
                           rank >= 1 that is a trainable parameter
        frozen             1-D unicode: float initializers of rank >= 1 that are
                           not PyTorch parameters; pass them as --frozen
        tied               1-D unicode: "B=A" where initializer B holds
                           transpose(A) bitwise (the compiler re-ties B to A;
                           B has no grad entry, A's gradient is the sum)
        labels             int64 (gpt, llama): cross-entropy targets,
                           ignore_index -100, mean over the rest
        target             float32 (bert): MSE target, mean over all elements
        zero_grad          1-D unicode: parameters whose exact gradient is zero
                           (float64 max|g| < 1e-9 of the largest); their float32
                           entries are rounding noise, compare them absolutely
        fp64_max_rel_diff  float64 scalar: max over parameters not in zero_grad
                           of max|g32 - g64| / max|g64|
        fp64_max_abs_diff  float64 scalar: max over parameters of max|g32 - g64|

The PyTorch models are the classes of make_fixtures.py (imported, not copied),
rebuilt with the same seeds; every parameter (and buffer) is then located in the
ONNX file by bitwise equality with itself or its transpose and loaded from
there, so the weights are exactly the ONNX ones. The gradients are checked
against the ONNX graphs themselves with a central finite difference through
onnxruntime (see ort_directional_checks).

Section "curve" writes corpus.txt (generated deterministically below) and
gpt_train_ref.json: the loss of every step of 200 AdamW steps on the gpt_ts
weights, in float32 and in float64, with the batching of memfit's trainer.

Section "bf16" writes bert_train_data.npz (a seeded classification-like
regression task with noisy targets for the bert fixture, see make_bert_data)
and train_refs_bf16.json: for each of the six fixtures, the loss of every step
of 200 AdamW steps (the settings of "curve"; bert: batch 16, sequence 16) on
the fixture's weights, once with the forward pass under
torch.autocast("cpu", dtype=torch.bfloat16) (losses_bf16) and once in float32
(losses_fp32). gpt and llama train on corpus.txt as memfit-run --corpus does,
bert on bert_train_data.npz as memfit-run --data does. It reads corpus.txt, so
run "curve" first when regenerating both.
"""

import copy
import hashlib
import json
import os
import random
import re
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
# make_fixtures.py only defines things at import time (main() is guarded).
sys.path.insert(0, HERE)
import make_fixtures as mf  # noqa: E402

EXPORTERS = ("ts", "dynamo")
IGNORE_INDEX = -100


# ---------------------------------------------------------------------------
# Models and weights
# ---------------------------------------------------------------------------
def build_model(name):
    """The fixture's model, with make_fixtures.main()'s seeding and init."""
    idx = list(mf.MODELS).index(name)
    mf.seed_everything(mf.SEED + idx)
    return mf.init_weights(mf.MODELS[name][0]()).eval()


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def float_initializers(model_proto):
    """(name, array) of the float initializers of rank >= 1, in file order."""
    out = []
    for t in model_proto.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.dtype == np.float32 and a.ndim >= 1:
            out.append((t.name, a))
    return out


def load_from_onnx(model, path):
    """Copy every float parameter/buffer of `model` from the ONNX file.

    Returns (layout, tied, frozen):
      layout  ONNX name -> (torch parameter name, transposed?) for the
              initializers that carry a parameter's gradient
      tied    ["B=A", ...]: B == transpose(A), B gets no gradient
      frozen  float initializers of rank >= 1 that are no torch parameter
    """
    proto = onnx.load(path)
    inits = float_initializers(proto)
    order = {n: i for i, (n, _) in enumerate(inits)}
    tensors = dict(model.named_parameters())          # tied weights listed once
    params = set(tensors)
    for k, v in model.named_buffers():
        # A buffer that copies another (Llama's rotary original_inv_freq)
        # is located once, as the first.
        if v.is_floating_point() and not any(
                same_bits(v.detach().numpy(), t.detach().numpy())
                for t in tensors.values()):
            tensors[k] = v

    matches = {}   # torch name -> [(onnx name, transposed)]
    owner = {}     # onnx name -> torch name
    for tname, t in tensors.items():
        ref = t.detach().numpy()
        for oname, a in inits:
            hit = None
            if same_bits(a, ref):
                hit = False
            elif a.ndim == 2 and ref.ndim == 2 and same_bits(a, np.ascontiguousarray(ref.T)):
                hit = True
            if hit is not None:
                assert oname not in owner, f"{path}: {oname} matches {owner[oname]} and {tname}"
                owner[oname] = tname
                matches.setdefault(tname, []).append((oname, hit))
        assert tname in matches or tname not in params, f"{path}: {tname} not found in ONNX"

    layout, tied, frozen = {}, [], []
    with torch.no_grad():
        for tname, hits in matches.items():
            # The gradient goes to the untransposed copy if there is one, else the
            # first in file order; any other copy must be its transpose (re-tied
            # by the compiler), never an exact duplicate (not merged).
            hits.sort(key=lambda h: (h[1], order[h[0]]))
            keep, keep_t = hits[0]
            for oname, tr in hits[1:]:
                assert tr != keep_t, f"{path}: exact duplicates {keep} and {oname}"
                tied.append(f"{oname}={keep}")
            a = dict(inits)[keep]
            tensors[tname].copy_(torch.from_numpy(np.array(a.T if keep_t else a, order="C")))
            if tname in params:
                layout[keep] = (tname, keep_t)
            else:
                frozen.extend(o for o, _ in hits)
    frozen.extend(n for n, _ in inits if n not in owner)

    # The compiler re-ties every rank-2 pair B == transpose(A); make sure the
    # pairs it will find are exactly the tied weights above (in either direction).
    pairs = set()
    for i, (na, a) in enumerate(inits):
        for nb, b in inits[i + 1:]:
            if a.ndim == 2 and b.shape == a.shape[::-1] and same_bits(
                    b, np.ascontiguousarray(a.T)):
                pairs.add(frozenset((na, nb)))
    assert pairs == {frozenset(s.split("=")) for s in tied}, (path, pairs, tied)
    return layout, tied, sorted(frozen, key=order.get)


# ---------------------------------------------------------------------------
# Section "grads"
# ---------------------------------------------------------------------------
def loss_inputs(name, out_shape, vocab):
    """Labels (decoders) or an MSE target (bert), seeded by the model name."""
    g = torch.Generator().manual_seed(4321 + sum(map(ord, name)))
    if name == "bert":
        return {"target": torch.randn(out_shape, generator=g, dtype=torch.float32)}
    labels = torch.randint(0, vocab, out_shape[:-1], generator=g, dtype=torch.int64)
    flat = labels.view(-1)
    flat[torch.randperm(flat.numel(), generator=g)[:3]] = IGNORE_INDEX
    return {"labels": labels}


def loss_fn(out, extra):
    if "labels" in extra:
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), extra["labels"].reshape(-1),
                               ignore_index=IGNORE_INDEX, reduction="mean")
    return ((out - extra["target"].to(out.dtype)) ** 2).mean()


def loss_and_grads(model, feeds, extra):
    model.zero_grad(set_to_none=True)
    loss = loss_fn(model(*feeds.values()), extra)
    loss.backward()
    return loss.detach(), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def onnx_layout(grads, layout):
    out = {}
    for oname, (tname, tr) in layout.items():
        g = grads[tname].numpy()
        out[oname] = np.ascontiguousarray(g.T if tr else g)
    return out


def ort_directional_checks(path, feeds, extra, grads, tied, zero, seed=7):
    """Check the gradients against the ONNX graph itself: central differences of
    its loss (onnxruntime, float32 graph, float64 loss) along (a) one random
    direction over all parameters and (b) for each parameter P, the direction
    grad[P]/|grad[P]| (the derivative must be |grad[P]|; a wrong layout gives ~0).
    A tied B moves with its A. Returns the worst relative error."""
    proto = onnx.load(path)
    base = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    ties = [s.split("=") for s in tied]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    np_feeds = {k: v.numpy() for k, v in feeds.items()}

    def loss_at(d, h):
        m = copy.deepcopy(proto)
        moved = dict(d)
        moved.update({b: d[a].T for b, a in ties if a in d})
        for t in m.graph.initializer:
            if t.name in moved:
                t.CopyFrom(numpy_helper.from_array(
                    np.array(base[t.name] + h * moved[t.name], order="C"), t.name))
        sess = ort.InferenceSession(m.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        return float(loss_fn(torch.from_numpy(sess.run(None, np_feeds)[0]).double(), extra))

    def derivative(d, step=1e-2):
        norm = float(np.sqrt(sum((v.astype(np.float64) ** 2).sum() for v in d.values())))
        h = step / norm
        return (loss_at(d, h) - loss_at(d, -h)) / (2 * h)

    rng = np.random.default_rng(seed)
    d = {n: rng.standard_normal(g.shape).astype(np.float32) for n, g in grads.items()}
    pred = float(sum((grads[n].astype(np.float64) * d[n]).sum() for n in grads))
    worst = abs(derivative(d) - pred) / abs(pred)
    for n, g in grads.items():
        if n in zero:
            continue
        norm = float(np.sqrt((g.astype(np.float64) ** 2).sum()))
        fd = derivative({n: (g / norm).astype(np.float32)})
        worst = max(worst, abs(fd - norm) / norm)
    return worst


def section_grads():
    torch.set_num_threads(1)
    rows = []
    for name, (_, vocab, in_names, _) in mf.MODELS.items():
        feeds = {k: torch.from_numpy(v) for k, v in
                 np.load(os.path.join(HERE, f"{name}_inputs.npz")).items()}
        feeds = {k: feeds[k] for k in in_names}
        extra = None
        for exp in EXPORTERS:
            onnx_file = f"{name}_{exp}.onnx"
            path = os.path.join(HERE, onnx_file)
            model = build_model(name)
            layout, tied, frozen = load_from_onnx(model, path)

            # the rebuilt model reproduces the onnxruntime reference outputs
            ref = np.load(os.path.join(HERE, f"{name}_{exp}_ref.npz"))["logits"]
            with torch.no_grad():
                out = model(*feeds.values())
            err = float(np.abs(out.numpy() - ref).max())
            assert err < mf.ATOL, f"{onnx_file}: torch vs onnxruntime {err}"
            if extra is None:       # the same loss inputs for both exporters
                extra = loss_inputs(name, tuple(out.shape), vocab)

            loss32, g32 = loss_and_grads(model, feeds, extra)
            model64 = copy.deepcopy(model).double()
            loss64, g64 = loss_and_grads(model64, feeds, extra)
            g32o, g64o = onnx_layout(g32, layout), onnx_layout(g64, layout)
            max_abs = max(float(np.abs(g32o[n] - g64o[n]).max()) for n in g32o)
            # Gradients that are zero in exact arithmetic (e.g. BERT's key biases:
            # softmax ignores a per-query constant q.b_k) are rounding noise in
            # float32; they are listed apart and left out of the relative measure.
            top = max(float(np.abs(g).max()) for g in g64o.values())
            zero = [n for n in g64o if np.abs(g64o[n]).max() < 1e-9 * top]
            max_rel = max(float(np.abs(g32o[n] - g64o[n]).max() / np.abs(g64o[n]).max())
                          for n in g32o if n not in zero)
            fd_rel = ort_directional_checks(path, feeds, extra, g32o, tied, zero)
            assert fd_rel < 1e-2, f"{onnx_file}: gradient vs ORT finite difference {fd_rel}"

            npz = {"loss": np.float32(loss32.item()),
                   "loss_fp64": np.float64(loss64.item()),
                   "frozen": np.array(frozen, dtype=np.str_).reshape(-1),
                   "tied": np.array(tied, dtype=np.str_).reshape(-1),
                   "zero_grad": np.array(zero, dtype=np.str_).reshape(-1),
                   "fp64_max_rel_diff": np.float64(max_rel),
                   "fp64_max_abs_diff": np.float64(max_abs)}
            npz.update({k: v.numpy() for k, v in extra.items()})
            npz.update({f"grad.{n}": g.astype(np.float32) for n, g in g32o.items()})
            out_file = os.path.join(HERE, f"{name}_{exp}_grads.npz")
            np.savez_compressed(out_file, **npz)
            rows.append((os.path.basename(out_file), float(loss32), float(loss64), len(g32o),
                         max(float(np.abs(g).max()) for g in g32o.values()),
                         max_rel, fd_rel, frozen, tied, zero))

    print(f"{'file':24s} {'loss fp32':>11s} {'loss fp64':>11s} {'#grads':>6s} "
          f"{'max|grad|':>10s} {'fp32/64 rel':>11s} {'ORT fd rel':>10s}  frozen / tied")
    for f, l32, l64, n, gmax, rel, fdr, frozen, tied, zero in rows:
        print(f"{f:24s} {l32:11.6f} {l64:11.6f} {n:6d} {gmax:10.4g} {rel:11.3g} {fdr:10.2g}  "
              f"{frozen} {tied}" + (f" zero: {zero}" if zero else ""))


# ---------------------------------------------------------------------------
# Section "curve"
# ---------------------------------------------------------------------------
CORPUS = "corpus.txt"
CURVE_REF = "gpt_train_ref.json"
CURVE = dict(steps=200, batch=4, seq=32, accum=1, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
             weight_decay=0.01)

# A deterministic little "English" generator: the corpus is synthetic, so it
# has no provenance or licence question, and this function documents it.
_WORDS = {
    "adj": "old young quiet bright small tall green grey careful tired patient busy "
           "honest cold warm heavy gentle clever narrow wide distant".split(),
    "noun": "miller farmer river bridge village garden teacher child lantern window "
            "market road forest sailor letter kitchen mountain orchard clock traveller "
            "baker horse boat harbour library".split(),
    "verb_t": "carried opened painted watched mended followed found lifted counted "
              "visited crossed cleaned remembered described closed".split(),
    "verb_i": "waited laughed slept listened wandered rested returned hurried sang "
              "paused".split(),
    "adv": "slowly quietly early again carefully together often suddenly gladly "
           "home".split() + ["once more"],
    "place": ["by the river", "in the garden", "at the market", "near the bridge",
              "under the old tree", "on the hill", "behind the mill", "in the kitchen",
              "at the edge of the forest", "by the harbour wall"],
    "time": ["In the morning", "At noon", "Before the rain", "After supper",
             "Late in the evening", "On Sunday", "That winter", "Every spring",
             "Long ago", "When the bells rang"],
    "name": "Anna Tom Maria Peter Lucy Henry Clara James Rose Walter".split(),
}


def _sentence(r):
    w = _WORDS
    the = lambda: f"the {r.choice(w['adj'])} {r.choice(w['noun'])}" if r.random() < .6 \
        else f"the {r.choice(w['noun'])}"
    who = lambda: r.choice(w["name"]) if r.random() < .4 else the()
    k = r.randrange(8)
    if k == 0:
        s = f"{r.choice(w['time'])}, {who()} {r.choice(w['verb_t'])} {the()} {r.choice(w['place'])}."
    elif k == 1:
        s = f"{who()} {r.choice(w['verb_i'])} {r.choice(w['adv'])}, and {who()} {r.choice(w['verb_i'])} too."
    elif k == 2:
        s = f"\"Have you seen {the()}?\" asked {r.choice(w['name'])}."
    elif k == 3:
        s = (f"{who()} {r.choice(w['verb_t'])} {r.randrange(2, 40)} letters; "
             f"{who()} {r.choice(w['verb_t'])} only {r.randrange(1, 9)}.")
    elif k == 4:
        s = f"It was {r.choice(w['adj'])} {r.choice(w['place'])}, and {who()} {r.choice(w['verb_i'])}."
    elif k == 5:
        s = f"\"We must go {r.choice(w['adv'])},\" said {r.choice(w['name'])}, \"before {the()} is closed!\""
    elif k == 6:
        s = f"{who()} never {r.choice(w['verb_t'])} {the()}, but {who()} {r.choice(w['verb_t'])} it {r.choice(w['adv'])}."
    else:
        s = f"Why had {who()} {r.choice(w['verb_t'])} {the()} {r.choice(w['place'])}?"
    return s[0].upper() + s[1:]


def make_corpus(target_bytes=32 * 1024, seed=2024):
    r = random.Random(seed)
    paras, size = [], 0
    while size < target_bytes:
        words = " ".join(_sentence(r) for _ in range(r.randrange(3, 8))).split(" ")
        lines, line = [], ""
        for word in words:            # wrap at 72 columns
            if line and len(line) + 1 + len(word) > 72:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
        paras.append("\n".join(lines))
        size += len(paras[-1]) + 2
    text = "\n\n".join(paras) + "\n"
    assert all(c == "\n" or " " <= c <= "~" for c in text)
    return text


def encode(text):
    """'\\n' -> 0, ' '..'~' -> ord(c) - 31 (1..95): the gpt fixture's 96 tokens."""
    return np.array([0 if c == "\n" else ord(c) - 31 for c in text], dtype=np.int64)


def batch_offsets(step, micro, n_tokens, B, T, k):
    """Start offsets of the rows of micro-batch `micro` of optimizer step `step`
    (memfit's trainer uses the same formula)."""
    return [(((step * k + micro) * B + r) * T) % (n_tokens - T - 1) for r in range(B)]


def train_curve(tokens, dtype):
    c = CURVE
    model = build_model("gpt")
    load_from_onnx(model, os.path.join(HERE, "gpt_ts.onnx"))
    model = model.to(dtype).train()
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"], betas=c["betas"], eps=c["eps"],
                            weight_decay=c["weight_decay"])
    toks = torch.from_numpy(tokens)
    losses = []
    for step in range(c["steps"]):
        opt.zero_grad(set_to_none=True)
        step_loss = 0.0
        for j in range(c["accum"]):
            offs = batch_offsets(step, j, len(tokens), c["batch"], c["seq"], c["accum"])
            x = torch.stack([toks[o:o + c["seq"]] for o in offs])
            y = torch.stack([toks[o + 1:o + c["seq"] + 1] for o in offs])
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
            (loss / c["accum"]).backward()
            step_loss += loss.item() / c["accum"]
        losses.append(float(np.float32(step_loss)) if dtype == torch.float32 else step_loss)
        opt.step()
    return losses


def section_curve():
    torch.set_num_threads(1)
    text = make_corpus()
    corpus_path = os.path.join(HERE, CORPUS)
    with open(corpus_path, "w", newline="\n") as fh:
        fh.write(text)
    data = open(corpus_path, "rb").read()
    tokens = encode(data.decode("ascii"))
    l32 = train_curve(tokens, torch.float32)
    l64 = train_curve(tokens, torch.float64)
    rel = [abs(a - b) / abs(b) for a, b in zip(l32, l64)]
    c = CURVE
    ref = {
        "description": "PyTorch reference loss curve: gpt fixture (weights of gpt_ts.onnx, "
                       "tied embeddings) trained with torch.optim.AdamW on corpus.txt; "
                       "losses[s] is the mean cross-entropy of step s's batch before "
                       "step s's update. Made by test/models/make_train_refs.py.",
        "onnx_file": "gpt_ts.onnx",
        "corpus_file": CORPUS,
        "corpus_sha256": hashlib.sha256(data).hexdigest(),
        "corpus_bytes": len(data),
        "num_tokens": int(len(tokens)),
        "encoding": "'\\n' -> 0, ' '..'~' -> ord(c) - 31",
        "batching": "for step s, micro-batch j in 0..accum-1, row r in 0..batch-1: "
                    "idx = (s*accum + j)*batch + r; offset = (idx*seq) % (num_tokens - seq - 1); "
                    "input = tokens[offset:offset+seq], labels = tokens[offset+1:offset+seq+1]",
        "first_offsets": {str(s): batch_offsets(s, 0, len(tokens), c["batch"], c["seq"], 1)
                          for s in range(3)},
        "steps": c["steps"], "batch": c["batch"], "seq": c["seq"], "accum": c["accum"],
        "loss": "cross_entropy, mean over batch*seq tokens, no ignore_index in the data",
        "optimizer": {"name": "AdamW", "lr": c["lr"], "schedule": "constant",
                      "beta1": c["betas"][0], "beta2": c["betas"][1], "eps": c["eps"],
                      "weight_decay": c["weight_decay"],
                      "weight_decay_applies_to": "all parameters (biases, LayerNorm, embeddings)",
                      "grad_clip": None},
        "dropout": "none in the model",
        "torch_version": torch.__version__,
        "losses_fp32": l32,
        "losses_fp64": l64,
        "max_rel_diff_fp32_vs_fp64": max(rel),
        "final_loss_fp32": l32[-1],
        "final_loss_fp64": l64[-1],
    }
    with open(os.path.join(HERE, CURVE_REF), "w") as fh:
        json.dump(ref, fh, indent=1)
        fh.write("\n")
    print(f"corpus: {len(data)} bytes, {len(tokens)} tokens, sha256 {ref['corpus_sha256']}")
    print(f"loss fp32: step 0 {l32[0]:.6f}, step 99 {l32[99]:.6f}, step 199 {l32[-1]:.6f}")
    print(f"loss fp64: step 0 {l64[0]:.6f}, step 99 {l64[99]:.6f}, step 199 {l64[-1]:.6f}")
    print(f"max rel diff fp32 vs fp64 over {c['steps']} steps: {max(rel):.3g} "
          f"(at step {rel.index(max(rel))})")


# ---------------------------------------------------------------------------
# Section "bf16"
# ---------------------------------------------------------------------------
BF16_REF = "train_refs_bf16.json"
BERT_DATA = "bert_train_data.npz"
# bert's batches: one fresh micro-batch per step (step s reads index s), so the
# model cannot memorize the targets' noise. 16 rows of 16 tokens: a bert step
# costs about twice what it costs at 4 x 32 on the host backend.
BERT_DATA_BATCHES = 200
BERT_BATCH, BERT_SEQ = 16, 16
BERT_TARGET_NOISE = 1.0


def make_bert_data(n, B, T, noise=BERT_TARGET_NOISE):
    """A learnable sequence regression for the bert fixture: every row has a
    class c in {0, 1, 2}; each of its tokens is drawn from the class's band of
    ids (1..33, 34..66, 67..99) with probability 1/2, else from 1..99; the
    row is padded (id 0, attention_mask 0) after a random length in T/2..T;
    the target is one_hot(c) + noise * (a random sign per component),
    regressed with mean squared error.

    The noise is unpredictable and the same size in every row, so every
    batch's loss stays above noise^2 = 1: without it the loss falls to
    0.01..0.05 and the relative difference between PyTorch's own bf16 and
    fp32 curves reaches 1e-1 (rounding of a near-zero residual)."""
    vocab = mf.BertConfig.vocab_size
    band = (vocab - 1) // mf.BertConfig.num_labels
    g = torch.Generator().manual_seed(8765)
    label = torch.randint(0, mf.BertConfig.num_labels, (n, B), generator=g)
    banded = 1 + label[..., None] * band + torch.randint(0, band, (n, B, T), generator=g)
    uniform = torch.randint(1, vocab, (n, B, T), generator=g)
    ids = torch.where(torch.rand(n, B, T, generator=g) < 0.5, banded, uniform)
    lengths = torch.randint(T // 2, T + 1, (n, B), generator=g)
    mask = (torch.arange(T) < lengths[..., None]).to(torch.int64)
    target = F.one_hot(label, mf.BertConfig.num_labels).to(torch.float32)
    signs = 2 * torch.randint(0, 2, target.shape, generator=g) - 1
    return {"input_ids": (ids * mask).numpy(), "attention_mask": mask.numpy(),
            "target": (target + noise * signs.to(torch.float32)).numpy()}


def train_fixture(name, path, batches, autocast):
    """200 AdamW steps (CURVE's settings) on the fixture's weights; the forward
    pass under torch.autocast("cpu", bfloat16) when `autocast`, the loss in
    float32 on the float32 copy of the output either way. batches(step) gives
    (inputs, loss inputs) of the step."""
    c = CURVE
    model = build_model(name)
    load_from_onnx(model, path)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"], betas=c["betas"], eps=c["eps"],
                            weight_decay=c["weight_decay"])
    losses = []
    for step in range(c["steps"]):
        opt.zero_grad(set_to_none=True)
        feeds, extra = batches(step)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(*feeds)
        loss = loss_fn(out.float(), extra)
        loss.backward()
        losses.append(float(np.float32(loss.item())))
        opt.step()
    return losses


def compact_json(obj):
    """json.dumps(indent=1) with every list of scalars on one line."""
    text = json.dumps(obj, indent=1)
    return re.sub(r"\[\n\s*([^\[\]{}]*?)\n\s*\]",
                  lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]", text)


def section_bf16():
    torch.set_num_threads(1)
    c = CURVE
    B, T = c["batch"], c["seq"]
    data = open(os.path.join(HERE, CORPUS), "rb").read()
    toks = torch.from_numpy(encode(data.decode("ascii")))

    def corpus_batch(step):
        offs = batch_offsets(step, 0, len(toks), B, T, 1)
        x = torch.stack([toks[o:o + T] for o in offs])
        y = torch.stack([toks[o + 1:o + T + 1] for o in offs])
        return (x,), {"labels": y}

    bert = make_bert_data(BERT_DATA_BATCHES, BERT_BATCH, BERT_SEQ)
    np.savez_compressed(os.path.join(HERE, BERT_DATA), **bert)
    bert = {k: torch.from_numpy(v) for k, v in bert.items()}

    def bert_batch(step):
        i = step % BERT_DATA_BATCHES
        return (bert["input_ids"][i], bert["attention_mask"][i]), {"target": bert["target"][i]}

    optimizer = {"name": "AdamW", "lr": c["lr"], "schedule": "constant",
                 "beta1": c["betas"][0], "beta2": c["betas"][1], "eps": c["eps"],
                 "weight_decay": c["weight_decay"],
                 "weight_decay_applies_to": "all parameters", "grad_clip": None}
    corpus_data = {
        "loss": "cross-entropy", "corpus_file": CORPUS,
        "batching": "memfit-run --corpus (as gpt_train_ref.json): step s, row r: offset = "
                    "((s*batch + r)*seq) % (num_tokens - seq - 1); input = "
                    "tokens[offset:offset+seq], labels = tokens[offset+1:offset+seq+1]; "
                    "mean cross-entropy over batch*seq tokens"}
    bert_data = {
        "loss": "mse", "data_file": BERT_DATA, "data_batches": BERT_DATA_BATCHES,
        "target_noise": BERT_TARGET_NOISE,
        "batching": "memfit-run --data=NAME=FILE.npy for each array of data_file "
                    "(input_ids, attention_mask: [data_batches, batch, seq] int64; "
                    "target: [data_batches, batch, 3] float32, one_hot(class) + "
                    "target_noise * random signs): step s reads index "
                    "s % data_batches; mean squared error over batch*3"}

    fixtures = {}
    for name in mf.MODELS:
        for exp in EXPORTERS:
            onnx_file = f"{name}_{exp}.onnx"
            path = os.path.join(HERE, onnx_file)
            _, tied, frozen = load_from_onnx(build_model(name), path)
            batches = bert_batch if name == "bert" else corpus_batch
            fb, ft = (BERT_BATCH, BERT_SEQ) if name == "bert" else (B, T)
            # float32 losses, written with the fewest digits that read back to them
            l16 = [float(str(np.float32(v))) for v in train_fixture(name, path, batches, True)]
            l32 = [float(str(np.float32(v))) for v in train_fixture(name, path, batches, False)]
            rel = [abs(a - b) / abs(b) for a, b in zip(l16, l32)]
            inputs = ["input_ids", "attention_mask"] if name == "bert" else ["input_ids"]
            settings = {"onnx_file": onnx_file,
                        **(bert_data if name == "bert" else corpus_data),
                        "input_shape": ",".join(f"{i}={fb}x{ft}" for i in inputs),
                        "frozen": frozen, "tied": tied, "steps": c["steps"], "batch": fb,
                        "seq": ft, "accum": c["accum"], "optimizer": optimizer,
                        "dropout": "none in the model"}
            fixtures[f"{name}_{exp}"] = {
                "settings": settings, "torch_version": torch.__version__,
                "losses_bf16": l16, "losses_fp32": l32,
                "final_loss_bf16": l16[-1], "final_loss_fp32": l32[-1],
                "max_rel_diff_bf16_vs_fp32": float(f"{max(rel):.4g}")}
            print(f"{onnx_file:18s} bf16 {l16[0]:.6f} -> {l16[-1]:.6f}  fp32 {l32[0]:.6f} -> "
                  f"{l32[-1]:.6f}  max rel bf16 vs fp32 {max(rel):.3g} "
                  f"(step {rel.index(max(rel))})")
    ref = {
        "description": "PyTorch reference loss curves for bf16 mixed-precision training of "
                       "the six fixtures: each model (weights of its ONNX file) trained "
                       "200 steps with torch.optim.AdamW, the forward pass under "
                       "torch.autocast('cpu', dtype=torch.bfloat16) (losses_bf16) and in "
                       "float32 (losses_fp32). losses[s] is the float32 loss of step s's "
                       "batch before step s's update. Made by test/models/make_train_refs.py.",
        "autocast": "the forward pass only; the loss in float32 on the output cast to "
                    "float32, and backward outside it; parameters, gradients and AdamW "
                    "states float32",
        "fixtures": fixtures,
    }
    with open(os.path.join(HERE, BF16_REF), "w") as fh:
        fh.write(compact_json(ref) + "\n")


def main(argv):
    sections = argv or ["grads", "curve", "bf16"]
    for s in sections:
        {"grads": section_grads, "curve": section_curve, "bf16": section_bf16}[s]()


if __name__ == "__main__":
    main(sys.argv[1:])
