#!/usr/bin/env python3
"""Generate the tiny transformer ONNX fixtures used by memfit's importer tests.

Regenerate (from the repository root):

    /opt/torchenv/bin/python test/models/make_fixtures.py

Everything is seeded and runs on CPU. For each model family (gpt, bert,
llama) this writes, into the directory containing this script:

    <name>_ts.onnx          TorchScript exporter (dynamo=False), opset 17
    <name>_dynamo.onnx      torch.export/dynamo exporter (dynamo=True), its default opset
    <name>_inputs.npz       fixed reference inputs (keys = ONNX input names)
    <name>_ts_ref.npz       onnxruntime outputs of <name>_ts.onnx (keys = ONNX output names)
    <name>_dynamo_ref.npz   onnxruntime outputs of <name>_dynamo.onnx
    fixtures.json           sidecar: per-file opsets, inputs/outputs with symbolic
                            dim names, op-type counts, parameter counts, ...
    README.md               human readable summary (generated from fixtures.json)

No HF transformers: the three models are defined below in plain PyTorch.
"""

import collections
import json
import math
import os
import random
import sys
import warnings

import numpy as np
import onnx
import onnx.inliner
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 0
# std of the normal init for Linear / Embedding weights and for Linear biases.
# Deliberately larger than GPT-2's 0.02 (~1/sqrt(hidden)): with 0.02 the
# activations are so small that e.g. dropping BERT's padding mask or swapping
# GELU(erf) for GELU(tanh) changes the logits by less than ATOL, so the
# reference data would not catch such bugs. With 0.2 those changes are
# ~0.5 and ~3e-4..8e-4 respectively.
INIT_STD = 0.2
BIAS_STD = 0.1
ATOL = 1e-4              # onnxruntime vs eager tolerance (max abs error)
TS_OPSET = 17
REF_BATCH, REF_SEQ = 2, 16


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


# ---------------------------------------------------------------------------
# Model 1: GPT-2 style decoder (pre-LN, learned positions, tied lm_head)
# ---------------------------------------------------------------------------
class GPTConfig:
    vocab_size = 96      # printable ASCII, character level
    max_positions = 64
    n_layer = 2
    n_embd = 32
    n_head = 4
    mlp_ratio = 4
    ln_eps = 1e-5


class GPTAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.n_embd = cfg.n_embd
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)   # fused q,k,v
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        # GPT-2's attn_dropout and resid_dropout: none in the fixture
        # (make_dropout_refs.py sets them).
        self.attn_dropout = nn.Identity()
        self.resid_dropout = nn.Identity()
        # GPT-2 style: lower-triangular buffer, sliced to the current length.
        self.register_buffer(
            "bias",
            torch.tril(torch.ones(cfg.max_positions, cfg.max_positions, dtype=torch.bool))
            .view(1, 1, cfg.max_positions, cfg.max_positions),
            persistent=False,
        )

    def forward(self, x):
        B, T, C = x.size()
        hd = C // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.bias[:, :, :T, :T], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class GPTBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.ln_eps)
        self.attn = GPTAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.ln_eps)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.n_embd, cfg.mlp_ratio * cfg.n_embd),
            nn.GELU(approximate="tanh"),
            nn.Linear(cfg.mlp_ratio * cfg.n_embd, cfg.n_embd),
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, cfg=GPTConfig()):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.max_positions, cfg.n_embd)
        self.h = nn.ModuleList([GPTBlock(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd, eps=cfg.ln_eps)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight   # weight tying

    def forward(self, input_ids):
        T = input_ids.size(1)
        pos = torch.arange(T, dtype=torch.long, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return self.lm_head(x)


# ---------------------------------------------------------------------------
# Model 2: BERT style encoder (post-LN, padding mask, pooler + classifier)
# ---------------------------------------------------------------------------
class BertConfig:
    vocab_size = 100
    max_positions = 64
    type_vocab_size = 2
    hidden = 32
    n_layer = 2
    n_head = 4
    intermediate = 128
    num_labels = 3
    ln_eps = 1e-12


class BertSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.query = nn.Linear(cfg.hidden, cfg.hidden)
        self.key = nn.Linear(cfg.hidden, cfg.hidden)
        self.value = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, x, add_mask):
        B, T, C = x.size()
        hd = C // self.n_head

        def heads(t):
            return t.view(B, T, self.n_head, hd).permute(0, 2, 1, 3)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd)
        scores = scores + add_mask
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(B, T, C)


class BertLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = BertSelfAttention(cfg)
        self.attn_out = nn.Linear(cfg.hidden, cfg.hidden)
        self.attn_ln = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)
        self.inter = nn.Linear(cfg.hidden, cfg.intermediate)
        self.act = nn.GELU()          # exact (erf) GELU
        self.out = nn.Linear(cfg.intermediate, cfg.hidden)
        self.out_ln = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)

    def forward(self, x, add_mask):
        x = self.attn_ln(x + self.attn_out(self.attn(x, add_mask)))
        x = self.out_ln(x + self.out(self.act(self.inter(x))))
        return x


class Bert(nn.Module):
    def __init__(self, cfg=BertConfig()):
        super().__init__()
        self.cfg = cfg
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.position_embeddings = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.hidden)
        self.emb_ln = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)
        self.layers = nn.ModuleList([BertLayer(cfg) for _ in range(cfg.n_layer)])
        self.pooler = nn.Linear(cfg.hidden, cfg.hidden)
        self.classifier = nn.Linear(cfg.hidden, cfg.num_labels)

    def forward(self, input_ids, attention_mask):
        T = input_ids.size(1)
        pos = torch.arange(T, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        token_type_ids = torch.zeros_like(input_ids)
        x = (self.word_embeddings(input_ids)
             + self.position_embeddings(pos)
             + self.token_type_embeddings(token_type_ids))
        x = self.emb_ln(x)
        # [B, T] (1 keep / 0 pad) -> additive [B, 1, 1, T]
        ext = attention_mask[:, None, None, :].to(x.dtype)
        add_mask = (1.0 - ext) * -10000.0
        for layer in self.layers:
            x = layer(x, add_mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(pooled)


# ---------------------------------------------------------------------------
# Model 3: Llama style decoder (RMSNorm, RoPE, SwiGLU, no biases, untied head)
# ---------------------------------------------------------------------------
class LlamaConfig:
    vocab_size = 128
    hidden = 64
    intermediate = 176
    n_layer = 2
    n_head = 4
    rope_theta = 10000.0
    rms_eps = 1e-6


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.q_proj = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.k_proj = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.v_proj = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.o_proj = nn.Linear(cfg.hidden, cfg.hidden, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, C = x.size()
        hd = C // self.n_head
        q = self.q_proj(x).view(B, T, self.n_head, hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_head, hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_head, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(hd) + mask
        probs = F.softmax(scores, dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)


class LlamaMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden, cfg.intermediate, bias=False)
        self.up_proj = nn.Linear(cfg.hidden, cfg.intermediate, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate, cfg.hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden, cfg.rms_eps)
        self.self_attn = LlamaAttention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden, cfg.rms_eps)
        self.mlp = LlamaMLP(cfg)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x


class Llama(nn.Module):
    def __init__(self, cfg=LlamaConfig()):
        super().__init__()
        self.cfg = cfg
        hd = cfg.hidden // cfg.n_head
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.layers = nn.ModuleList([LlamaBlock(cfg) for _ in range(cfg.n_layer)])
        self.norm = RMSNorm(cfg.hidden, cfg.rms_eps)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab_size, bias=False)
        inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, input_ids):
        T = input_ids.size(1)
        x = self.embed_tokens(input_ids)
        t = torch.arange(T, device=input_ids.device, dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq)                 # [T, hd/2]
        emb = torch.cat((freqs, freqs), dim=-1)               # [T, hd]
        cos = emb.cos()[None, None, :, :]
        sin = emb.sin()[None, None, :, :]
        mask = torch.full((T, T), float("-inf"), device=input_ids.device).triu(1)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


# ---------------------------------------------------------------------------
# Initialisation / inputs
# ---------------------------------------------------------------------------
@torch.no_grad()
def init_weights(model):
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=INIT_STD)
            if getattr(m, "bias", None) is not None:
                nn.init.normal_(m.bias, mean=0.0, std=BIAS_STD)
        elif isinstance(m, nn.LayerNorm):
            # keep scale/shift away from the trivial 1/0 so tests are meaningful
            m.weight.copy_(1.0 + 0.1 * torch.randn_like(m.weight))
            m.bias.copy_(0.05 * torch.randn_like(m.bias))
        elif isinstance(m, RMSNorm):
            m.weight.copy_(1.0 + 0.1 * torch.randn_like(m.weight))
    return model


def count_params(model):
    # model.parameters() de-duplicates shared (tied) tensors
    return sum(p.numel() for p in model.parameters())


def make_inputs(name, vocab):
    g = torch.Generator().manual_seed(1234 + sum(map(ord, name)))
    ids = torch.randint(0, vocab, (REF_BATCH, REF_SEQ), generator=g, dtype=torch.int64)
    if name == "bert":
        mask = torch.ones(REF_BATCH, REF_SEQ, dtype=torch.int64)
        mask[1, 11:] = 0           # second row: last 5 positions are padding
        return {"input_ids": ids, "attention_mask": mask}
    return {"input_ids": ids}


MODELS = {
    # name: (constructor, vocab, input names, output names)
    "gpt": (GPT, GPTConfig.vocab_size, ["input_ids"], ["logits"]),
    "bert": (Bert, BertConfig.vocab_size, ["input_ids", "attention_mask"], ["logits"]),
    "llama": (Llama, LlamaConfig.vocab_size, ["input_ids"], ["logits"]),
}


# ---------------------------------------------------------------------------
# Export helpers
# ---------------------------------------------------------------------------
def export_ts(model, inputs, in_names, out_names, path):
    dynamic_axes = {n: {0: "batch", 1: "seq"} for n in in_names}
    with torch.no_grad():
        out_rank = model(*inputs.values()).dim()
    for n in out_names:
        dynamic_axes[n] = {0: "batch", 1: "seq"} if out_rank == 3 else {0: "batch"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, tuple(inputs.values()), path,
            dynamo=False, opset_version=TS_OPSET,
            input_names=in_names, output_names=out_names,
            dynamic_axes=dynamic_axes, do_constant_folding=True,
        )
    return finalize(path, inline=False)


def export_dynamo(model, inputs, in_names, out_names, path, max_seq):
    batch = torch.export.Dim("batch", min=1, max=1024)
    seq = torch.export.Dim("seq", min=1, max=max_seq)
    dynamic_shapes = {n: {0: batch, 1: seq} for n in in_names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = torch.onnx.export(
            model, tuple(inputs.values()), dynamo=True,
            input_names=in_names, output_names=out_names,
            dynamic_shapes=dynamic_shapes, external_data=False,
            verbose=False,
        )
    prog.save(path, external_data=False)
    return finalize(path, inline=True)


def finalize(path, inline):
    """Reload, inline local functions if any, and save as one self-contained file."""
    m = onnx.load(path, load_external_data=True)
    notes = {"functions_before_inline": [f"{f.domain}::{f.name}" for f in m.functions]}
    if inline and len(m.functions):
        m = onnx.inliner.inline_local_functions(m)
        notes["inlined"] = True
    onnx.save(m, path, save_as_external_data=False)
    for stray in (path + ".data", path + "_data"):   # external-data side files, if any
        if os.path.exists(stray):
            notes["removed_external_data_file"] = os.path.basename(stray)
            os.remove(stray)
    onnx.checker.check_model(m, full_check=True)
    return m, notes


def dim_repr(d):
    if d.HasField("dim_param"):
        return d.dim_param
    if d.HasField("dim_value"):
        return d.dim_value
    return "?"


def vi_repr(vi):
    t = vi.type.tensor_type
    return {
        "name": vi.name,
        "elem_type": onnx.TensorProto.DataType.Name(t.elem_type),
        "shape": [dim_repr(d) for d in t.shape.dim],
    }


def walk_nodes(graph):
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from walk_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from walk_nodes(g)


NOTABLE = {"Gelu", "Trilu", "Range", "ConstantOfShape", "Expand", "Where", "Softmax",
           "LayerNormalization", "Split", "Slice", "CumSum", "Erf", "Tanh",
           "Reshape", "Transpose", "Gather", "Cast", "Pow", "Sqrt", "Reciprocal",
           "ReduceMean", "Sigmoid", "Gemm", "Equal", "Not", "SimplifiedLayerNormalization",
           "RotaryEmbedding", "Attention", "Einsum", "Squeeze", "Unsqueeze", "Concat"}


def describe_model(m, path):
    counts = collections.Counter()
    attrs = collections.defaultdict(set)
    for n in walk_nodes(m.graph):
        key = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}"
        counts[key] += 1
        if n.op_type in NOTABLE or n.domain not in ("", "ai.onnx"):
            for a in n.attribute:
                v = onnx.helper.get_attribute_value(a)
                if isinstance(v, bytes):
                    v = v.decode()
                if isinstance(v, onnx.TensorProto):
                    arr = onnx.numpy_helper.to_array(v)
                    v = f"tensor<{arr.dtype}{list(arr.shape)}>" + (
                        f"={arr.ravel().tolist()}" if arr.size <= 4 else "")
                if isinstance(v, list):
                    v = tuple(v)
                attrs[key].add(f"{a.name}={v}")
    init_elems = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    ext = [t.name for t in m.graph.initializer
           if t.data_location == onnx.TensorProto.EXTERNAL]
    return {
        "file": os.path.basename(path),
        "size_bytes": os.path.getsize(path),
        "ir_version": m.ir_version,
        "producer": f"{m.producer_name} {m.producer_version}".strip(),
        "opset_imports": {(o.domain or "ai.onnx"): o.version for o in m.opset_import},
        "inputs": [vi_repr(v) for v in m.graph.input],
        "outputs": [vi_repr(v) for v in m.graph.output],
        "input_dim_names": sorted({d for v in m.graph.input for d in
                                   [dim_repr(x) for x in v.type.tensor_type.shape.dim]
                                   if isinstance(d, str)}),
        "num_nodes": sum(counts.values()),
        "op_counts": dict(sorted(counts.items())),
        "op_attributes": {k: sorted(v) for k, v in sorted(attrs.items())},
        "num_initializers": len(m.graph.initializer),
        "initializer_elements": init_elems,
        "external_data_initializers": ext,
        "functions": [f"{f.domain}::{f.name}" for f in m.functions],
        "non_default_domain_nodes": sorted(k for k in counts if "::" in k),
        "value_info_count": len(m.graph.value_info),
        "value_info_dim_params": sorted({d.dim_param for v in m.graph.value_info
                                         for d in v.type.tensor_type.shape.dim
                                         if d.HasField("dim_param")}),
        "node_metadata_keys": sorted({p.key for n in walk_nodes(m.graph)
                                      for p in n.metadata_props}),
        "model_metadata_keys": sorted(p.key for p in m.metadata_props),
    }


def run_ort(path, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


# ---------------------------------------------------------------------------
# README
# ---------------------------------------------------------------------------
DESCRIPTIONS = {
    "gpt": (
        "GPT-2 style decoder. Token embedding (vocab 96 = printable ASCII, char level), "
        "learned position embeddings (max 64 positions, `torch.arange(T)` inside forward), "
        "2 pre-LayerNorm blocks, hidden 32, 4 heads (head_dim 8), fused q/k/v Linear "
        "(32 -> 96) + split, causal mask from a registered `tril(ones(64,64))` bool buffer "
        "sliced to `[:T,:T]` and applied with `masked_fill(-inf)`, MLP 32 -> 128 -> 32 with "
        "`nn.GELU(approximate='tanh')`, final LayerNorm (eps 1e-5), lm_head tied to the token "
        "embedding (shared weight, no bias). Note the fused qkv width (96) equals the vocab size."),
    "bert": (
        "BERT style encoder. Word (vocab 100) + position (max 64, `arange` inside forward) + "
        "token-type (2 types; token_type_ids = `zeros_like(input_ids)` inside forward) "
        "embeddings, embedding LayerNorm (eps 1e-12), 2 post-LN layers, hidden 32, 4 heads "
        "(head_dim 8), separate q/k/v Linears, additive mask `(1 - mask[:,None,None,:].float()) "
        "* -10000`, FFN 32 -> 128 -> 32 with exact erf `nn.GELU()`, pooler = tanh(Linear(x[:,0])), "
        "classifier Linear 32 -> 3."),
    "llama": (
        "Llama style decoder. Vocab 128, hidden 64, 2 layers, 4 heads (head_dim 16), no biases "
        "anywhere. RMSNorm written as `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * "
        "weight` (eps 1e-6), rotary embeddings computed in forward (`outer(arange(T), inv_freq)`, "
        "theta 10000, rotate_half style, `inv_freq` is a non-persistent buffer and becomes a "
        "constant), causal mask `full((T,T), -inf).triu(1)` added to the scores, SwiGLU MLP "
        "`down(silu(gate(x)) * up(x))` with intermediate 176, final RMSNorm, untied lm_head "
        "64 -> 128."),
}


IMPORTER_NOTES = """## Notes for importer authors

Observed with the package versions listed at the top; re-check after regenerating.

* No file has model-local functions, external data, or nodes outside the default
  `ai.onnx` domain (the tables below would show `domain::Op` otherwise). The
  dynamo exporter's nodes carry `metadata_props` (`pkg.torch.onnx.*` stack traces,
  `namespace`, `pkg.onnxscript.rewriter.rule_name`), which is most of the size
  difference between the `_ts` and `_dynamo` files; they can be ignored.
* TorchScript files (opset 17): small constants are `Constant` nodes (including the
  GPT causal mask, a bool `[1,1,64,64]` Constant shared by both layers); only
  parameters are initializers; no `value_info`. Shape arithmetic is spelled out with
  `Shape`/`Gather`/`Unsqueeze`/`Concat` chains. GELU(tanh) is decomposed
  (`Mul`/`Add`/`Tanh`, no `Pow`), GELU(erf) is `Div`/`Erf`/`Add`/`Mul`;
  `torch.outer` becomes `Einsum` (`i,j->ij`) in `llama_ts`; `ReduceMean` has an `axes`
  attribute; `Split` has a `split` input; `Reshape` has `allowzero=0`.
* Dynamo files (opset 20): no `Constant` nodes; every constant, including scalars,
  is an initializer (named `val_N`). `Linear` weights are stored pre-transposed
  (`[in, out]`, named `val_N`) and fed to `MatMul`; original names survive only for
  biases, norms, embeddings and weights used without a transpose. GELU is the
  opset-20 `Gelu` op with `approximate` = `tanh` (gpt) or `none` (bert).
  `ReduceMean` takes axes as an input; `Split` uses `num_outputs`; `Reshape` has
  `allowzero=1`; `LayerNormalization` has `stash_type=1`. `value_info` is populated
  and uses only the input dim names `batch` and `seq`. The GPT mask buffer appears
  as a bool `[1,1,64,64]` initializer per layer.
* GPT weight tying is not preserved by either exporter: the token embedding
  `[96,32]` is used by `Gather`, and a separate transposed `[32,96]` copy feeds the
  lm_head `MatMul` (initializer element counts exceed the parameter count by
  3,072 for that reason, plus the constant initializers in the dynamo files).
* Masks: GPT uses `Where(Not(mask_slice), -inf, scores)` with a bool condition (ts adds a `Cast` to bool);
  Llama builds `-inf` with `ConstantOfShape` (ts) or `Expand` of a scalar
  initializer (dynamo) followed by `Trilu(upper=1, k=1)` and adds it to the scores;
  BERT computes `(1 - Cast(mask)) * -10000` and adds it. Positions come from `Range`.
"""


def write_readme(manifest):
    L = []
    L.append("# memfit test model fixtures\n")
    L.append("Tiny, randomly initialised transformer models exported to ONNX with both PyTorch "
             "exporters, plus reference inputs/outputs. **Generated files - do not edit by hand.**\n")
    L.append("Regenerate (from the repository root; deterministic, CPU only, ~15 s on 2 cores):\n")
    L.append("```sh\n/opt/torchenv/bin/python test/models/make_fixtures.py\n```\n")
    v = manifest["versions"]
    L.append(f"Generated with torch {v['torch']}, onnx {v['onnx']}, onnxruntime {v['onnxruntime']}, "
             f"onnxscript {v['onnxscript']}, numpy {v['numpy']} (seed {SEED}). "
             "Byte-level output may differ across versions of these packages.\n")
    L.append("## Conventions\n")
    L.append(f"* Weights: `Linear`/`Embedding` weights ~ N(0, {INIT_STD}), Linear biases ~ N(0, {BIAS_STD}) "
             "(larger than GPT-2's 0.02 on purpose so that masking / GELU-variant / eps bugs "
             "change the logits by much more than the tolerance); "
             "LayerNorm/RMSNorm scales = 1 + N(0, 0.1), LayerNorm biases ~ N(0, 0.05).")
    L.append("* `<name>_ts.onnx`: TorchScript exporter, `torch.onnx.export(..., dynamo=False, "
             f"opset_version={TS_OPSET}, dynamic_axes=...)`; dynamic dims are named `batch` and `seq`.")
    L.append("* `<name>_dynamo.onnx`: `torch.onnx.export(..., dynamo=True, dynamic_shapes=...)` with "
             "`torch.export.Dim('batch', min=1, max=1024)` and `Dim('seq', min=1, max=64)`, "
             "default opset. Saved as a single file (weights embedded, no external data).")
    L.append(f"* `<name>_inputs.npz`: reference inputs, batch {REF_BATCH}, seq {REF_SEQ}, "
             "keys = ONNX input names (int64). For bert, row 1 of `attention_mask` has its last "
             "5 positions = 0 (padding).")
    L.append("* `<name>_<exporter>_ref.npz`: onnxruntime (CPUExecutionProvider) outputs for those "
             "inputs, keys = ONNX output names. The script asserts each matches PyTorch eager to "
             f"within {ATOL} (max abs error is listed below).")
    L.append("* `fixtures.json`: machine-readable sidecar with everything in this README "
             "(per file: opset imports, inputs/outputs with symbolic dim names, op counts, "
             "attributes of notable ops, initializer counts).\n")

    for name, info in manifest["models"].items():
        L.append(f"## `{name}`\n")
        L.append(DESCRIPTIONS[name] + "\n")
        L.append(f"* Parameters (unique, tied weights counted once): **{info['params']:,}**")
        L.append(f"* Config: `{json.dumps(info['config'])}`")
        L.append(f"* Reference inputs: `{name}_inputs.npz`\n")
        for exp, f in info["files"].items():
            L.append(f"### `{f['file']}` ({exp})\n")
            L.append(f"* exporter: {f['exporter_call']}")
            L.append(f"* opset imports: `{json.dumps(f['opset_imports'])}`, IR version "
                     f"{f['ir_version']}, producer `{f['producer']}`, "
                     f"{f['size_bytes']:,} bytes")
            for i in f["inputs"]:
                L.append(f"* input `{i['name']}`: {i['elem_type']} {i['shape']}")
            for o in f["outputs"]:
                L.append(f"* output `{o['name']}`: {o['elem_type']} {o['shape']}")
            L.append(f"* symbolic input dims: {', '.join('`%s`' % d for d in f['input_dim_names'])}")
            L.append(f"* initializers: {f['num_initializers']} tensors, "
                     f"{f['initializer_elements']:,} elements; external data: "
                     f"{'none' if not f['external_data_initializers'] else f['external_data_initializers']}")
            L.append(f"* model-local functions: "
                     f"{'none' if not f['functions_before_inline'] else ', '.join(f['functions_before_inline']) + ' (inlined)'}")
            L.append(f"* nodes in non-default domains: "
                     f"{', '.join(f['non_default_domain_nodes']) or 'none'}")
            L.append(f"* value_info entries: {f['value_info_count']} (dim params used: "
                     f"{', '.join('`%s`' % d for d in f['value_info_dim_params']) or 'none'}); "
                     f"node metadata_props keys: "
                     f"{', '.join('`%s`' % k for k in f['node_metadata_keys']) or 'none'}")
            L.append(f"* reference: `{f['ref_file']}`; ORT vs eager max abs error "
                     f"{f['max_abs_err']:.3g} (batch {REF_BATCH}, seq {REF_SEQ}) and "
                     f"{f['max_abs_err_batch3_seq7']:.3g} (batch 3, seq 7)")
            L.append(f"* nodes: {f['num_nodes']}\n")
            L.append("| op type | count | notable attributes |")
            L.append("|---|---:|---|")
            for op, c in f["op_counts"].items():
                at = "; ".join(f["op_attributes"].get(op, []))
                L.append(f"| {op} | {c} | {at.replace('|', '/')} |")
            L.append("")

    L.append(IMPORTER_NOTES)
    L.append("## Union of op types\n")
    allops = collections.Counter()
    for info in manifest["models"].values():
        for f in info["files"].values():
            for op in f["op_counts"]:
                allops[op] += 1
    L.append("Op types (domain-qualified if not the default `ai.onnx` domain) and in how many of "
             "the six files they occur:\n")
    L.append(", ".join(f"`{op}` ({n})" for op, n in sorted(allops.items())) + "\n")
    with open(os.path.join(HERE, "README.md"), "w") as fh:
        fh.write("\n".join(L))


# ---------------------------------------------------------------------------
def main():
    torch.set_num_threads(1)
    import onnxscript
    manifest = {
        "versions": {"torch": torch.__version__, "onnx": onnx.__version__,
                     "onnxruntime": ort.__version__, "onnxscript": onnxscript.__version__,
                     "numpy": np.__version__, "python": sys.version.split()[0]},
        "seed": SEED, "init_std": INIT_STD, "bias_std": BIAS_STD, "atol": ATOL,
        "models": {},
    }
    for idx, (name, (ctor, vocab, in_names, out_names)) in enumerate(MODELS.items()):
        seed_everything(SEED + idx)
        model = init_weights(ctor()).eval()
        cfg = {k: v for k, v in vars(type(model.cfg)).items() if not k.startswith("_")}
        inputs = make_inputs(name, vocab)
        with torch.no_grad():
            eager = model(*inputs.values()).numpy()
        feeds = {k: v.numpy() for k, v in inputs.items()}
        np.savez(os.path.join(HERE, f"{name}_inputs.npz"), **feeds)
        info = {"params": count_params(model), "config": cfg, "inputs_file": f"{name}_inputs.npz",
                "files": {}}
        print(f"[{name}] params={info['params']}  eager logits {eager.shape} "
              f"std={eager.std():.4f}")
        max_seq = getattr(model.cfg, "max_positions", 64)
        for exp in ("ts", "dynamo"):
            path = os.path.join(HERE, f"{name}_{exp}.onnx")
            with torch.no_grad():
                if exp == "ts":
                    m, notes = export_ts(model, inputs, in_names, out_names, path)
                    call = (f"`torch.onnx.export(dynamo=False, opset_version={TS_OPSET}, "
                            "dynamic_axes={...})`")
                else:
                    m, notes = export_dynamo(model, inputs, in_names, out_names, path, max_seq)
                    call = "`torch.onnx.export(dynamo=True, dynamic_shapes={...})`"
            desc = describe_model(m, path)
            desc.update(notes)
            desc["exporter_call"] = call
            outs = run_ort(path, feeds)
            assert list(outs) == out_names, (list(outs), out_names)
            err = float(np.abs(outs["logits"] - eager).max())
            print(f"  {exp:7s} {desc['file']}: opsets={desc['opset_imports']} "
                  f"nodes={desc['num_nodes']} size={desc['size_bytes']} "
                  f"in_dims={desc['input_dim_names']} max_abs_err={err:.3g}")
            assert err < ATOL, f"{path}: ORT vs eager max abs error {err} >= {ATOL}"
            # second check at a different (batch, seq) to prove the dims really are dynamic
            g = torch.Generator().manual_seed(99)
            alt = {k: (torch.randint(0, vocab, (3, 7), generator=g) if k == "input_ids"
                       else torch.ones(3, 7, dtype=torch.int64)) for k in in_names}
            with torch.no_grad():
                e2 = model(*alt.values()).numpy()
            o2 = run_ort(path, {k: v.numpy() for k, v in alt.items()})["logits"]
            err2 = float(np.abs(o2 - e2).max())
            assert err2 < ATOL, f"{path}: dynamic-shape check error {err2}"
            ref = f"{name}_{exp}_ref.npz"
            np.savez(os.path.join(HERE, ref), **outs)
            desc["ref_file"] = ref
            desc["max_abs_err"] = err
            desc["max_abs_err_batch3_seq7"] = err2
            info["files"][exp] = desc
        manifest["models"][name] = info
    with open(os.path.join(HERE, "fixtures.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    write_readme(manifest)
    print("wrote", os.path.join(HERE, "README.md"), "and fixtures.json")


if __name__ == "__main__":
    main()
