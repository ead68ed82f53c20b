"""Writes a Llama-style decoder as ONNX, its weights in an external data file.

    make_llama.py OUT.onnx [--preset 7b | 1b | tiny] [--layers N] [--hidden H]
                  [--heads N] [--kv-heads N] [--intermediate N] [--vocab N]
                  [--rope-theta T] [--tied | --untied] [--seed S]
                  [--shapes-only]

The graph is built with onnx.helper (no PyTorch), as the TorchScript
exporter writes a Llama: token embedding, pre-norm blocks (RMSNorm written
out as Pow / ReduceMean / Add / Sqrt / Div / Mul, rotary embeddings from
Range / Cos / Sin with rotate_half as Slice / Neg / Concat, causal softmax
attention, SwiGLU MLP), a final RMSNorm and an LM head, with no biases.
With fewer key/value heads than query heads (--kv-heads), keys and values
are repeated to every query head as Hugging Face's repeat_kv exports
(Unsqueeze, Expand, Reshape). A tied head (--tied) multiplies by the
transposed token embedding (Transpose, MatMul), as the exporters write
tie_word_embeddings. Nodes are named by module ("/model/layers.3/self_attn/q_proj/MatMul")
and initializers as Hugging Face names the parameters
("model.layers.3.self_attn.q_proj.weight"), stored as MatMul's right operand
([in, out]). Input input_ids [batch, seq] int64; output logits
[batch, seq, vocab]; opset 17.

--preset 7b (the default) has Llama-2-7B's shape: 32 layers, hidden 4096, 32
heads, MLP 11008, vocabulary 32000: 6,738,415,616 parameters. --preset 1b has Llama-3.2-1B's: 16 layers, hidden
2048, 32 query and 8 key/value heads, MLP 8192, vocabulary 128,256, rotary
base 500,000, tied head: 1,235,814,400 parameters. Every float
parameter is external data in OUT.weights. With --shapes-only that file is
not written (the model names it, with each tensor's offset and length): the
model is what a user has before downloading the weights, and what
memfit-run --plan-only reads. Otherwise the weights are N(0, 0.02) (norms
1), written to OUT.weights.
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

PRESETS = {
    "7b": dict(layers=32, hidden=4096, heads=32, intermediate=11008,
               vocab=32000),
    "1b": dict(layers=16, hidden=2048, heads=32, kv_heads=8, intermediate=8192,
               vocab=128256, rope_theta=500000.0, tied=True),
    "tiny": dict(layers=2, hidden=64, heads=4, intermediate=176, vocab=128),
}
DEFAULTS = dict(kv_heads=None, rope_theta=10000.0, tied=False)


def build(layers, hidden, heads, intermediate, vocab, kv_heads=None,
          rope_theta=10000.0, tied=False, eps=1e-6):
    """The graph's nodes and its parameters as (name, shape, kind) with kind
    'normal' (N(0, 0.02)) or 'ones'."""
    hd = hidden // heads
    kv_heads = kv_heads or heads
    assert heads % kv_heads == 0, "query heads must be a multiple of kv heads"
    nodes, params = [], []

    def param(name, shape, kind="normal"):
        params.append((name, tuple(shape), kind))
        return name

    def node(op, inputs, name, **attrs):
        out = name + "_output_0"
        nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def const(name, value, dtype=np.int64):
        array = np.array(value, dtype=dtype)
        return node("Constant", [], name,
                    value=onnx.numpy_helper.from_array(array, name))

    def rms_norm(x, scope, weight):
        sq = node("Pow", [x, const(scope + "/Constant", 2.0, np.float32)],
                  scope + "/Pow")
        mean = node("ReduceMean", [sq], scope + "/ReduceMean", axes=[-1],
                    keepdims=1)
        var = node("Add", [mean, const(scope + "/Constant_1", eps, np.float32)],
                   scope + "/Add")
        inv = node("Div", [const(scope + "/Constant_2", 1.0, np.float32),
                           node("Sqrt", [var], scope + "/Sqrt")], scope + "/Div")
        return node("Mul", [node("Mul", [x, inv], scope + "/Mul"), weight],
                    scope + "/Mul_1")

    def linear(x, scope, name, n_in, n_out):
        return node("MatMul", [x, param(name, (n_in, n_out))],
                    scope + "/MatMul")

    # Positions, rotary tables [1, 1, seq, hd] and the causal mask [seq, seq]
    # from the input's shape, as exporters write them.
    seq = node("Gather", [node("Shape", ["input_ids"], "/Shape"),
                          const("/Constant", 1)], "/Gather", axis=0)
    pos = node("Cast", [node("Range", [const("/Constant_1", 0), seq,
                                       const("/Constant_2", 1)], "/Range")],
               "/Cast", to=TensorProto.FLOAT)
    inv_freq = 1.0 / (rope_theta ** (np.arange(0, hd, 2, dtype=np.float32) / hd))
    freqs = node("Mul", [node("Unsqueeze", [pos, const("/Constant_3", [1])],
                              "/Unsqueeze"),
                         const("/Constant_4", inv_freq[None, :], np.float32)],
                 "/Mul")
    emb = node("Concat", [freqs, freqs], "/Concat", axis=-1)
    axes01 = const("/Constant_5", [0, 1])
    cos = node("Unsqueeze", [node("Cos", [emb], "/Cos"), axes01], "/Unsqueeze_1")
    sin = node("Unsqueeze", [node("Sin", [emb], "/Sin"), axes01], "/Unsqueeze_2")
    square = node("Concat", [node("Unsqueeze", [seq, const("/Constant_6", [0])],
                                  "/Unsqueeze_3")] * 2, "/Concat_1", axis=0)
    low = float(np.finfo(np.float32).min)
    full = node("ConstantOfShape", [square], "/ConstantOfShape",
                value=helper.make_tensor("v", TensorProto.FLOAT, [1], [low]))
    mask = node("Trilu", [full, const("/Constant_7", 1)], "/Trilu", upper=1)

    embed = param("model.embed_tokens.weight", (vocab, hidden))
    x = node("Gather", [embed, "input_ids"], "/model/embed_tokens/Gather", axis=0)
    heads_shape = const("/Constant_8", [0, 0, heads, hd])
    kv_shape = const("/Constant_15", [0, 0, kv_heads, hd])
    repeat = const("/Constant_16", [1, 1, heads // kv_heads, 1, 1])
    repeated_shape = const("/Constant_17", [0, heads, -1, hd])
    merged_shape = const("/Constant_9", [0, 0, hidden])
    half_starts, half_ends = const("/Constant_10", [0]), const("/Constant_11", [hd // 2])
    half_ends2 = const("/Constant_12", [hd])
    last = const("/Constant_13", [-1])
    scale = const("/Constant_14", np.sqrt(hd), np.float32)
    for i in range(layers):
        s = f"/model/layers.{i}"
        p = f"model.layers.{i}"
        h = rms_norm(x, s + "/input_layernorm",
                     param(p + ".input_layernorm.weight", (hidden,), "ones"))

        def project(name, n_heads=heads):
            y = linear(h, f"{s}/self_attn/{name}", f"{p}.self_attn.{name}.weight",
                       hidden, n_heads * hd)
            y = node("Reshape", [y, heads_shape if n_heads == heads else kv_shape],
                     f"{s}/self_attn/{name}/Reshape")
            return node("Transpose", [y], f"{s}/self_attn/{name}/Transpose",
                        perm=[0, 2, 1, 3])

        def repeat_kv(t, name):  # [B, kv, S, hd] -> [B, heads, S, hd]
            if kv_heads == heads:
                return t
            scope = f"{s}/self_attn/repeat_kv_{name}"
            t = node("Unsqueeze", [t, const(scope + "/Constant", [2])],
                     scope + "/Unsqueeze")
            t = node("Expand", [t, repeat], scope + "/Expand")
            return node("Reshape", [t, repeated_shape], scope + "/Reshape")

        def rotary(t, name):
            scope = f"{s}/self_attn/rotary_{name}"
            x1 = node("Slice", [t, half_starts, half_ends, last], scope + "/Slice")
            x2 = node("Slice", [t, half_ends, half_ends2, last], scope + "/Slice_1")
            rotated = node("Concat", [node("Neg", [x2], scope + "/Neg"), x1],
                           scope + "/Concat", axis=-1)
            return node("Add", [node("Mul", [t, cos], scope + "/Mul"),
                                node("Mul", [rotated, sin], scope + "/Mul_1")],
                        scope + "/Add")

        q = rotary(project("q_proj"), "q")
        k = repeat_kv(rotary(project("k_proj", kv_heads), "k"), "k")
        v = repeat_kv(project("v_proj", kv_heads), "v")
        kt = node("Transpose", [k], f"{s}/self_attn/Transpose", perm=[0, 1, 3, 2])
        scores = node("Div", [node("MatMul", [q, kt], f"{s}/self_attn/MatMul"),
                              scale], f"{s}/self_attn/Div")
        probs = node("Softmax", [node("Add", [scores, mask], f"{s}/self_attn/Add")],
                     f"{s}/self_attn/Softmax", axis=-1)
        ctx = node("MatMul", [probs, v], f"{s}/self_attn/MatMul_1")
        ctx = node("Reshape", [node("Transpose", [ctx], f"{s}/self_attn/Transpose_1",
                                    perm=[0, 2, 1, 3]), merged_shape],
                   f"{s}/self_attn/Reshape")
        attn = linear(ctx, f"{s}/self_attn/o_proj", f"{p}.self_attn.o_proj.weight",
                      hidden, hidden)
        x = node("Add", [x, attn], f"{s}/Add")
        h = rms_norm(x, s + "/post_attention_layernorm",
                     param(p + ".post_attention_layernorm.weight", (hidden,), "ones"))
        gate = linear(h, f"{s}/mlp/gate_proj", f"{p}.mlp.gate_proj.weight",
                      hidden, intermediate)
        act = node("Mul", [gate, node("Sigmoid", [gate], f"{s}/mlp/act_fn/Sigmoid")],
                   f"{s}/mlp/act_fn/Mul")
        up = linear(h, f"{s}/mlp/up_proj", f"{p}.mlp.up_proj.weight",
                    hidden, intermediate)
        down = linear(node("Mul", [act, up], f"{s}/mlp/Mul"), f"{s}/mlp/down_proj",
                      f"{p}.mlp.down_proj.weight", intermediate, hidden)
        x = node("Add", [x, down], f"{s}/Add_1")
    x = rms_norm(x, "/model/norm", param("model.norm.weight", (hidden,), "ones"))
    if tied:
        head = node("Transpose", [embed], "/lm_head/Transpose", perm=[1, 0])
        logits = node("MatMul", [x, head], "/lm_head/MatMul")
    else:
        logits = linear(x, "/lm_head", "lm_head.weight", hidden, vocab)
    nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/Identity"))
    return nodes, params


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("out")
    a.add_argument("--preset", choices=sorted(PRESETS), default="7b")
    for key in ("layers", "hidden", "heads", "kv_heads", "intermediate", "vocab"):
        a.add_argument("--" + key.replace("_", "-"), type=int)
    a.add_argument("--rope-theta", type=float)
    a.add_argument("--tied", action="store_true", default=None)
    a.add_argument("--untied", dest="tied", action="store_false")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--shapes-only", action="store_true",
                   help="do not write the weights file")
    args = a.parse_args()
    config = dict(DEFAULTS, **PRESETS[args.preset])
    for key in config:
        if getattr(args, key) is not None:
            config[key] = getattr(args, key)
    nodes, params = build(**config)

    location = os.path.basename(args.out) + ".weights"
    weights_path = os.path.join(os.path.dirname(os.path.abspath(args.out)), location)
    rng = np.random.default_rng(args.seed)
    initializers, offset, count = [], 0, 0
    weights = None if args.shapes_only else open(weights_path + ".tmp", "wb")
    for name, shape, kind in params:
        size = int(np.prod(shape))
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", offset),
                           ("length", 4 * size)):
            entry = t.external_data.add()
            entry.key, entry.value = key, str(value)
        if weights:
            values = (np.ones(shape, np.float32) if kind == "ones" else
                      (rng.standard_normal(shape, dtype=np.float32) * 0.02))
            weights.write(values.astype("<f4").tobytes())
        initializers.append(t)
        offset += 4 * size
        count += size
    if weights:
        weights.close()
        os.replace(weights_path + ".tmp", weights_path)

    graph = helper.make_graph(
        nodes, "llama", [helper.make_tensor_value_info(
            "input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", "seq", config["vocab"]])],
        initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="memfit bench/make_llama.py")
    model.ir_version = 8
    onnx.save(model, args.out)
    if not args.shapes_only:  # the checker opens the external data file
        onnx.checker.check_model(args.out)
    print(f"{args.out}: {count:,} parameters in {len(params)} tensors; weights "
          + ("not written (shapes only)" if args.shapes_only else
             f"in {weights_path} ({offset:,} bytes)"))


if __name__ == "__main__":
    main()
