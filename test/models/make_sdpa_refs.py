#!/usr/bin/env python3
"""Writes sdpa_refs.npz: PyTorch's scaled_dot_product_attention and its
gradients for memfit_test.check_sdpa (test/Training/sdpa.test).

  TORCH_PYTHON test/models/make_sdpa_refs.py [--out sdpa_refs.npz]

Each case is one attention call with queries, keys and values as the
parameters and a mean-squared-error loss against a fixed target, the loss
memfit-run --gradients --loss=mse computes: L = mean((Y - target)^2). For
each case the file holds the inputs (`<case>.q`, `.k`, `.v`, `.target`, and
`.mask` where the case has one), the flags (`.flags`: causal, scale or 0 for
1/sqrt(head size)), and PyTorch's results on the CPU:

  - `<case>.loss`, `<case>.grad.q|k|v`: fp32 SDPA, the references;
  - `<case>.bf16_err`: PyTorch's own bf16 error, max |bf16 - fp32| /
    max |fp32| of each of the three gradients, SDPA run in bf16 (what
    autocast runs) on the same inputs;
  - `<case>.fp32_err`: the same for fp32 SDPA against float64 SDPA.

Queries, keys and values are N(0, 1) rounded to bf16 (so that bf16 runs,
PyTorch's and memfit's, start from the same values), the target N(0, 1).
Cases: causal; causal with a padded batch (boolean key mask [B, 1, 1, T]);
grouped-query heads (8 over 2, causal; 6 over 2, padded, non-causal);
a non-causal encoder with padding; an additive float mask per head with an
explicit scale and head size 256; cross-attention (fewer queries than keys).
Head sizes 32 to 256; lengths that are not multiples of memfit's key tile
of 32.
"""

import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F

CASES = [
    # name, batch, query heads, kv heads, queries, keys, head size, causal,
    # mask ("keep": boolean padding, "bias": additive per head), scale
    ("causal", 1, 4, 4, 40, 40, 64, True, None, 0.0),
    ("causal_padded", 2, 2, 2, 37, 37, 32, True, "keep", 0.0),
    ("gqa_causal", 1, 4, 2, 35, 35, 128, True, None, 0.0),
    ("gqa_padded", 2, 6, 2, 33, 33, 32, False, "keep", 0.0),
    ("encoder_padded", 2, 2, 2, 35, 35, 32, False, "keep", 0.0),
    ("bias_d256", 1, 2, 2, 20, 20, 256, False, "bias", 0.05),
    ("cross", 1, 2, 2, 12, 50, 64, False, None, 0.0),
]


def bf16_round(a):
    return torch.from_numpy(a).bfloat16().float().numpy()


def sdpa_grads(q, k, v, target, mask, causal, scale, dtype):
    t = {n: torch.tensor(a, dtype=dtype, requires_grad=True)
         for n, a in (("q", q), ("k", k), ("v", v))}
    m = None
    if mask is not None:
        m = torch.tensor(mask) if mask.dtype == bool else torch.tensor(mask, dtype=dtype)
        if causal:  # SDPA takes a mask or is_causal: the two as one mask
            s, t_ = q.shape[2], k.shape[2]
            m, causal = m & torch.ones(s, t_, dtype=torch.bool).tril(), False
    y = F.scaled_dot_product_attention(
        t["q"], t["k"], t["v"], attn_mask=m, is_causal=causal,
        scale=scale or None, enable_gqa=q.shape[1] != k.shape[1])
    loss = F.mse_loss(y.double(), torch.tensor(target, dtype=torch.float64))
    loss.backward()
    return float(loss.detach()), {n: x.grad.double().numpy() for n, x in t.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "sdpa_refs.npz"))
    a = ap.parse_args()
    rng = np.random.default_rng(31)
    out = {}
    for name, b, hq, hkv, s, t, d, causal, mask_kind, scale in CASES:
        q = bf16_round(rng.standard_normal((b, hq, s, d), dtype=np.float32))
        k = bf16_round(rng.standard_normal((b, hkv, t, d), dtype=np.float32))
        v = bf16_round(rng.standard_normal((b, hkv, t, d), dtype=np.float32))
        target = rng.standard_normal((b, hq, s, d), dtype=np.float32)
        mask = None
        if mask_kind == "keep":  # the last batch entry's last third is padding
            mask = np.ones((b, 1, 1, t), bool)
            mask[-1, ..., t - t // 3:] = False
        elif mask_kind == "bias":
            mask = rng.uniform(-2, 2, (1, hq, s, t)).astype(np.float32)
        loss, grads = sdpa_grads(q, k, v, target, mask, causal, scale, torch.float32)
        _, grads16 = sdpa_grads(q, k, v, target, mask, causal, scale,
                                torch.bfloat16)
        _, grads64 = sdpa_grads(q, k, v, target, mask, causal, scale, torch.float64)
        out.update({f"{name}.q": q, f"{name}.k": k, f"{name}.v": v,
                    f"{name}.target": target,
                    f"{name}.flags": np.array([causal, scale], np.float32),
                    f"{name}.loss": np.array(loss, np.float64)})
        if mask is not None:
            out[f"{name}.mask"] = mask
        for n in "qkv":
            out[f"{name}.grad.{n}"] = grads[n].astype(np.float32)

        def rel(got, ref):
            return [np.abs(got[n] - ref[n]).max() / np.abs(ref[n]).max()
                    for n in "qkv"]
        out[f"{name}.fp32_err"] = np.array(rel(grads, grads64), np.float32)
        out[f"{name}.bf16_err"] = np.array(rel(grads16, grads), np.float32)
        print(f"{name}: loss {loss:.6f}; PyTorch fp32 vs f64 "
              f"{max(out[name + '.fp32_err']):.1e}, bf16 vs fp32 "
              f"{max(out[name + '.bf16_err']):.1e}")
    np.savez_compressed(a.out, **out)
    print(f"{a.out}: {len(CASES)} cases, torch {torch.__version__}")


if __name__ == "__main__":
    main()
