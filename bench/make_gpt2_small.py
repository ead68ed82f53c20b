"""Writes a GPT-2-small-sized ONNX model with random weights, for benchmarks.

    make_gpt2_small.py OUT.onnx [--layers 12] [--hidden 768] [--heads 12]
                       [--vocab 50257] [--positions 1024] [--seed 0]

The graph is built directly with onnx.helper (no PyTorch): token and
position embeddings, pre-norm blocks (LayerNormalization, fused QKV MatMul,
causal softmax attention, tanh-GELU MLP written out as ONNX ops the way the
TorchScript exporter does), a final LayerNorm and a tied LM head. Inputs:
input_ids [batch, seq] int64; output: logits [batch, seq, vocab]. The
weights are N(0, 0.02) and are not committed: the benchmark generates them.
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--positions", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    h, nh = a.hidden, a.heads
    hd = h // nh
    nodes, inits = [], []
    count = [0]

    def w(name, shape, std=0.02):
        t = (rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float32)
        inits.append(numpy_helper.from_array(t, name))
        count[0] += t.size
        return name

    def c(name, value, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    wte = w("wte", (a.vocab, h))
    wpe = w("wpe", (a.positions, h))
    # Positions 0..seq-1 from the input's shape, as exporters write it.
    shape = node("Shape", ["input_ids"], "ids_shape")
    seq = node("Gather", [shape, c("one", 1)], "seq_len", axis=0)
    pos = node("Range", [c("zero", 0), seq, c("step", 1)], "positions")
    x = node("Add", [node("Gather", [wte, "input_ids"], "tok_emb"),
                     node("Gather", [wpe, pos], "pos_emb")], "emb")
    # Causal mask: lower triangle of ones over [seq, seq].
    sq = node("Concat", [node("Unsqueeze", [seq, c("ax0", [0])], "seq_1d"),
                         node("Unsqueeze", [seq, c("ax0b", [0])], "seq_1d_b")],
              "mask_shape", axis=0)
    ones = node("ConstantOfShape", [sq], "mask_ones",
                value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]))
    tril = node("Trilu", [ones], "mask_tril", upper=0)
    causal = node("Cast", [tril], "mask", to=TensorProto.BOOL)
    neg = c("neg_inf", -1e9, np.float32)
    qkv_shape = c("qkv_shape", [0, 0, 3, nh, hd])
    merge_shape = c("merge_shape", [0, 0, h])
    scale = c("scale", 1.0 / np.sqrt(hd), np.float32)

    for i in range(a.layers):
        p_ = f"h{i}"
        ln1 = node("LayerNormalization", [x, w(f"{p_}.ln1.g", (h,), 1.0),
                                          w(f"{p_}.ln1.b", (h,), 0.0)],
                   f"{p_}.ln1", axis=-1, epsilon=1e-5)
        qkv = node("Add", [node("MatMul", [ln1, w(f"{p_}.attn.w", (h, 3 * h))],
                                f"{p_}.qkv_mm"), w(f"{p_}.attn.b", (3 * h,), 0.0)],
                   f"{p_}.qkv")
        qkv5 = node("Reshape", [qkv, qkv_shape], f"{p_}.qkv5")
        qkvt = node("Transpose", [qkv5], f"{p_}.qkvt", perm=[2, 0, 3, 1, 4])
        q, k, v = (f"{p_}.q", f"{p_}.k", f"{p_}.v")
        nodes.append(helper.make_node("Split", [qkvt], [q + "3", k + "3", v + "3"],
                                      name=f"{p_}.split", axis=0, num_outputs=3))
        q = node("Squeeze", [q + "3", c(f"{p_}.sq0", [0])], q)
        k = node("Squeeze", [k + "3", c(f"{p_}.sq1", [0])], k)
        v = node("Squeeze", [v + "3", c(f"{p_}.sq2", [0])], v)
        kt = node("Transpose", [k], f"{p_}.kt", perm=[0, 1, 3, 2])
        att = node("Mul", [node("MatMul", [q, kt], f"{p_}.qk"), scale], f"{p_}.att")
        att = node("Where", [causal, att, neg], f"{p_}.masked")
        att = node("Softmax", [att], f"{p_}.probs", axis=-1)
        y = node("MatMul", [att, v], f"{p_}.ctx")
        y = node("Transpose", [y], f"{p_}.ctx_t", perm=[0, 2, 1, 3])
        y = node("Reshape", [y, merge_shape], f"{p_}.ctx_merged")
        y = node("Add", [node("MatMul", [y, w(f"{p_}.proj.w", (h, h))], f"{p_}.proj_mm"),
                         w(f"{p_}.proj.b", (h,), 0.0)], f"{p_}.proj")
        x = node("Add", [x, y], f"{p_}.res1")
        ln2 = node("LayerNormalization", [x, w(f"{p_}.ln2.g", (h,), 1.0),
                                          w(f"{p_}.ln2.b", (h,), 0.0)],
                   f"{p_}.ln2", axis=-1, epsilon=1e-5)
        m = node("Add", [node("MatMul", [ln2, w(f"{p_}.fc.w", (h, 4 * h))], f"{p_}.fc_mm"),
                         w(f"{p_}.fc.b", (4 * h,), 0.0)], f"{p_}.fc")
        # tanh GELU spelled out: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = node("Pow", [m, c(f"{p_}.three", 3.0, np.float32)], f"{p_}.cube")
        inner = node("Add", [m, node("Mul", [cube, c(f"{p_}.gelu_c", 0.044715, np.float32)],
                                     f"{p_}.cube_k")], f"{p_}.inner")
        t = node("Tanh", [node("Mul", [inner, c(f"{p_}.s2pi", np.sqrt(2 / np.pi), np.float32)],
                               f"{p_}.scaled")], f"{p_}.tanh")
        g = node("Mul", [node("Mul", [m, c(f"{p_}.half", 0.5, np.float32)], f"{p_}.halfx"),
                         node("Add", [t, c(f"{p_}.onef", 1.0, np.float32)], f"{p_}.onep")],
                 f"{p_}.gelu")
        m = node("Add", [node("MatMul", [g, w(f"{p_}.mproj.w", (4 * h, h))], f"{p_}.mproj_mm"),
                         w(f"{p_}.mproj.b", (h,), 0.0)], f"{p_}.mproj")
        x = node("Add", [x, m], f"{p_}.res2")

    x = node("LayerNormalization", [x, w("lnf.g", (h,), 1.0), w("lnf.b", (h,), 0.0)],
             "lnf", axis=-1, epsilon=1e-5)
    head = node("Transpose", [wte], "lm_head_w", perm=[1, 0])
    nodes.append(helper.make_node("MatMul", [x, head], ["logits"], name="lm_head"))

    graph = helper.make_graph(
        nodes, "gpt2_small",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", a.vocab])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, a.out)
    print(f"{a.out}: {a.layers} layers, hidden {h}, {count[0]:,} parameters")


if __name__ == "__main__":
    main()
