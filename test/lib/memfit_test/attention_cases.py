"""Opset 23's Attention for memfit_test.op_numerics: the node as exporters
write it for scaled_dot_product_attention at that opset, which memfit
imports as memfit.attention, against onnxruntime's Attention kernel.

Grouped-query heads (4 query heads over 2 key heads), the causal flag with
as many and with fewer queries than keys (upper-left alignment), boolean
padding and additive masks (broadcast over heads; onnxruntime takes no
mask broadcast over the queries), an explicit scale, a
value head size other than the key's, and 3-D inputs with q_num_heads and
kv_num_heads.
"""

import numpy as np

F32 = np.float32


def attention_opset23(g, r):
    b, hq, hkv, d = 2, 4, 2, r.dim(4, 9)

    def qkv(c, s, t, dv=None):
        q = c.input(r.f([b, hq, s, d], -2, 2), "q")
        k = c.input(r.f([b, hkv, t, d], -2, 2), "k")
        v = c.input(r.f([b, hkv, t, dv or d]), "v")
        return q, k, v

    s = r.dim(5, 12)
    c = g.case("gqa_causal")
    c.output(c.op("Attention", list(qkv(c, s, s)), is_causal=1))
    c = g.case("causal_fewer_queries")
    c.output(c.op("Attention", list(qkv(c, 3, s)), is_causal=1))
    c = g.case("padding_mask")  # every row keeps key 0
    # onnxruntime wants the mask's query dimension in full.
    keep = np.broadcast_to(r.b([b, 1, 1, s], 0.6), [b, 1, s, s]).copy()
    keep[..., 0] = True
    c.output(c.op("Attention", list(qkv(c, s, s)) + [c.input(keep, "mask")]))
    c = g.case("additive_mask_scale")  # a bias per head, another value size
    q, k, v = qkv(c, s, s, dv=d + 3)
    bias = c.input(r.f([1, hq, s, s], -1, 1), "bias")
    c.output(c.op("Attention", [q, k, v, bias], scale=0.3))
    c = g.case("causal_padding_3d")  # [B, S, heads * size]
    q = c.input(r.f([b, s, hq * d], -2, 2), "q")
    k = c.input(r.f([b, s, hkv * d], -2, 2), "k")
    v = c.input(r.f([b, s, hkv * d]), "v")
    keep = np.broadcast_to(r.b([b, 1, 1, s], 0.6), [b, 1, s, s]).copy()
    keep[..., 0] = True
    c.output(c.op("Attention", [q, k, v, c.input(keep, "mask")], is_causal=1,
                  q_num_heads=hq, kv_num_heads=hkv))
