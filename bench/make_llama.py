"""Writes a Llama-style decoder as ONNX, its weights in an external data file.

    make_llama.py OUT.onnx [--preset 7b | tiny] [--layers N] [--hidden H]
                  [--heads N] [--intermediate N] [--vocab N] [--seed S]
                  [--shapes-only]

The graph is built with onnx.helper (no PyTorch), as the TorchScript
exporter writes a Llama: token embedding, pre-norm blocks (RMSNorm written
out as Pow / ReduceMean / Add / Sqrt / Div / Mul, rotary embeddings from
Range / Cos / Sin with rotate_half as Slice / Neg / Concat, causal softmax
attention, SwiGLU MLP), a final RMSNorm and an untied LM head, with no
biases. Nodes are named by module ("/model/layers.3/self_attn/q_proj/MatMul")
and initializers as Hugging Face names the parameters
("model.layers.3.self_attn.q_proj.weight"), stored as MatMul's right operand
([in, out]). Input input_ids [batch, seq] int64; output logits
[batch, seq, vocab]; opset 17.

--preset 7b (the default) has Llama-2-7B's shape: 32 layers, hidden 4096, 32
heads, MLP 11008, vocabulary 32000: 6,738,415,616 parameters. Every float
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
    "tiny": dict(layers=2, hidden=64, heads=4, intermediate=176, vocab=128),
}


def build(layers, hidden, heads, intermediate, vocab, eps=1e-6):
    """The graph's nodes and its parameters as (name, shape, kind) with kind
    'normal' (N(0, 0.02)) or 'ones'."""
    hd = hidden // heads
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
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, hd, 2, dtype=np.float32) / hd))
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

    x = node("Gather", [param("model.embed_tokens.weight", (vocab, hidden)),
                        "input_ids"], "/model/embed_tokens/Gather", axis=0)
    heads_shape = const("/Constant_8", [0, 0, heads, hd])
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

        def project(name):
            y = linear(h, f"{s}/self_attn/{name}", f"{p}.self_attn.{name}.weight",
                       hidden, hidden)
            y = node("Reshape", [y, heads_shape], f"{s}/self_attn/{name}/Reshape")
            return node("Transpose", [y], f"{s}/self_attn/{name}/Transpose",
                        perm=[0, 2, 1, 3])

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
        k = rotary(project("k_proj"), "k")
        v = project("v_proj")
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
    logits = linear(x, "/lm_head", "lm_head.weight", hidden, vocab)
    nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/Identity"))
    return nodes, params


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("out")
    a.add_argument("--preset", choices=sorted(PRESETS), default="7b")
    for key in ("layers", "hidden", "heads", "intermediate", "vocab"):
        a.add_argument("--" + key, type=int)
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--shapes-only", action="store_true",
                   help="do not write the weights file")
    args = a.parse_args()
    config = dict(PRESETS[args.preset])
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
