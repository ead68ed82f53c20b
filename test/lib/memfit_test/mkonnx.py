#!/usr/bin/env python3
"""Builds a small ONNX model from a compact command-line description.

The importer tests use it to make one graph per case with onnx.helper:

  mkonnx.py -o t.onnx --opset 17 \
      --input x:f32:batch,16 --init w:f32:16,4=rand \
      --node "mm: MatMul(x, w) -> y" --node "Softmax(y) -> z {axis=-1}" \
      --output z

--input NAME:TYPE:DIMS    DIMS comma-separated; a name is a symbolic dimension,
                          '?' an unknown one, empty a scalar; '*' no shape at all
--init NAME:TYPE:DIMS=V   V is 'rand', 'zeros', 'ones' or a comma list
--node "[NAME:] [DOMAIN::]OP(IN, ...) -> OUT, ... {ATTR=VAL; ...}"
                          an empty input is written as nothing between commas;
                          VAL is 1, 1.5, 'str', [1,2], [1.5,2.0] or
                          tensor(TYPE:DIMS=V)
--output NAME[:TYPE:DIMS] graph output (type defaults to f32 with no shape)
"""

import argparse
import re
import zlib

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TYPES = {
    "f32": (TensorProto.FLOAT, np.float32),
    "f64": (TensorProto.DOUBLE, np.float64),
    "f16": (TensorProto.FLOAT16, np.float16),
    "bf16": (TensorProto.BFLOAT16, None),
    "i64": (TensorProto.INT64, np.int64),
    "i32": (TensorProto.INT32, np.int32),
    "i16": (TensorProto.INT16, np.int16),
    "i8": (TensorProto.INT8, np.int8),
    "u64": (TensorProto.UINT64, np.uint64),
    "u32": (TensorProto.UINT32, np.uint32),
    "u16": (TensorProto.UINT16, np.uint16),
    "u8": (TensorProto.UINT8, np.uint8),
    "bool": (TensorProto.BOOL, np.bool_),
    "str": (TensorProto.STRING, None),
    # ml_dtypes' types (onnx depends on ml_dtypes); from_array packs the
    # 4- and 2-bit ones as ONNX stores them.
    "f8e4m3fn": (TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn),
    "f8e4m3fnuz": (TensorProto.FLOAT8E4M3FNUZ, ml_dtypes.float8_e4m3fnuz),
    "f8e5m2": (TensorProto.FLOAT8E5M2, ml_dtypes.float8_e5m2),
    "f8e5m2fnuz": (TensorProto.FLOAT8E5M2FNUZ, ml_dtypes.float8_e5m2fnuz),
    "f4e2m1": (TensorProto.FLOAT4E2M1, ml_dtypes.float4_e2m1fn),
    "i4": (TensorProto.INT4, ml_dtypes.int4),
    "u4": (TensorProto.UINT4, ml_dtypes.uint4),
    "i2": (TensorProto.INT2, ml_dtypes.int2),
    "u2": (TensorProto.UINT2, ml_dtypes.uint2),
}


def parse_dims(text):
    if text == "*":
        return None
    if text == "":
        return []
    dims = []
    for d in text.split(","):
        d = d.strip()
        if d == "?":
            dims.append(None)
        elif re.fullmatch(r"-?\d+", d):
            dims.append(int(d))
        else:
            dims.append(d)
    return dims


def make_tensor(name, spec):
    decl, _, values = spec.partition("=")
    tname, dims = decl.split(":", 1)
    dims = parse_dims(dims)
    onnx_type, np_type = TYPES[tname]
    shape = tuple(dims)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if values == "rand":
        arr = rng.standard_normal(shape)
    elif values == "zeros":
        arr = np.zeros(shape)
    elif values == "ones":
        arr = np.ones(shape)
    else:
        items = values.split(",") if values else []
        # Integers stay exact (int64 extremes do not survive a float).
        if np_type is not None and np.issubdtype(np_type, np.integer):
            arr = np.array([int(v) for v in items], dtype=np_type)
        else:
            arr = np.array([float(v) for v in items])
        arr = arr.reshape(shape)
    if np_type is None:
        raise SystemExit(f"mkonnx: cannot make {tname} tensor data")
    return numpy_helper.from_array(arr.astype(np_type), name)


def parse_value(text):
    text = text.strip()
    m = re.fullmatch(r"tensor\((.*)\)", text)
    if m:
        return make_tensor("value", m.group(1))
    if text.startswith("'") or text.startswith('"'):
        return text[1:-1]
    if text.startswith("["):
        items = [t.strip() for t in text[1:-1].split(",") if t.strip()]
        if any("." in t or "e" in t.lower() for t in items):
            return [float(t) for t in items]
        return [int(t) for t in items]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return float(text)


NODE_RE = re.compile(
    r"^\s*(?:(?P<name>[\w./-]+)\s*:\s+)?(?:(?P<domain>[\w.]+)::)?(?P<op>\w+)"
    r"\s*\((?P<ins>[^)]*)\)\s*->\s*(?P<outs>[^{]*?)\s*(?:\{(?P<attrs>.*)\})?\s*$")


def parse_node(text, index):
    m = NODE_RE.match(text)
    if not m:
        raise SystemExit(f"mkonnx: cannot parse node '{text}'")
    ins = [s.strip() for s in m.group("ins").split(",")] if m.group("ins").strip() else []
    outs = [s.strip() for s in m.group("outs").split(",")]
    attrs = {}
    if m.group("attrs"):
        for item in m.group("attrs").split(";"):
            if item.strip():
                k, v = item.split("=", 1)
                attrs[k.strip()] = parse_value(v)
    name = m.group("name") or f"{m.group('op')}_{index}"
    return helper.make_node(m.group("op"), ins, outs, name=name,
                            domain=m.group("domain") or "", **attrs)


def value_info(spec, default_type="f32"):
    parts = spec.split(":", 2)
    name = parts[0]
    if len(parts) == 1:
        return helper.make_tensor_value_info(name, TYPES[default_type][0], None)
    return helper.make_tensor_value_info(name, TYPES[parts[1]][0],
                                         parse_dims(parts[2]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-o", "--output-file", required=True)
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--ir-version", type=int, default=8)
    p.add_argument("--input", action="append", default=[])
    p.add_argument("--init", action="append", default=[])
    p.add_argument("--node", action="append", default=[])
    p.add_argument("--output", action="append", default=[])
    p.add_argument("--extra-opset", action="append", default=[],
                   help="DOMAIN:VERSION of another operator set")
    a = p.parse_args()

    inits = []
    for spec in a.init:
        name, rest = spec.split(":", 1)
        inits.append(make_tensor(name, rest))
    nodes = [parse_node(t, i) for i, t in enumerate(a.node)]
    graph = helper.make_graph(nodes, "mkonnx",
                              [value_info(s) for s in a.input],
                              [value_info(s) for s in a.output], inits)
    opsets = [helper.make_opsetid("", a.opset)]
    for spec in a.extra_opset:
        d, v = spec.rsplit(":", 1)
        opsets.append(helper.make_opsetid(d, int(v)))
    model = helper.make_model(graph, opset_imports=opsets,
                              producer_name="mkonnx")
    model.ir_version = a.ir_version
    with open(a.output_file, "wb") as f:
        f.write(model.SerializeToString())


if __name__ == "__main__":
    main()
