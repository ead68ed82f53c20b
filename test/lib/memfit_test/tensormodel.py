#!/usr/bin/env python3
"""Builds a one-node ONNX model around one tensor stored in a chosen way,
for the tests of malformed tensors (the importer must refuse each with a
diagnostic, never crash or allocate what the data cannot back):

  tensormodel.py -o m.onnx --dims 2,3 --raw 24            raw_data of 24 bytes
  tensormodel.py -o m.onnx --dims 1000000000000 --floats 0 float_data
  tensormodel.py -o m.onnx --dims 4 --external w.bin --offset 8 --length 16
  tensormodel.py -o m.onnx --dims 4 --raw 16 --in-node    in a Constant node

The model computes y = x + w (x a graph input of w's shape, unless the
shape's elements overflow, then of shape 1); with --in-node, w is the value
of a Constant node named 'const' instead of an initializer. Dims, offsets
and lengths are written as given, unchecked.
"""

import argparse

import onnx
from onnx import TensorProto, helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-o", "--output-file", required=True)
    p.add_argument("--name", default="w")
    p.add_argument("--dims", default="4")
    p.add_argument("--raw", type=int, help="raw_data of this many bytes")
    p.add_argument("--floats", type=int, help="float_data of this many values")
    p.add_argument("--external", help="external data location ('' for none)")
    p.add_argument("--offset")
    p.add_argument("--length")
    p.add_argument("--in-node", action="store_true")
    a = p.parse_args()

    dims = [int(d) for d in a.dims.split(",")] if a.dims else []
    t = TensorProto()
    t.name = a.name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    if a.raw is not None:
        t.raw_data = bytes(a.raw)
    if a.floats is not None:
        t.float_data.extend([1.0] * a.floats)
    if a.external is not None:
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", a.external), ("offset", a.offset),
                           ("length", a.length)):
            if value is not None and (key != "location" or value):
                entry = t.external_data.add()
                entry.key, entry.value = key, value

    n = 1
    for d in dims:
        n *= d
    shape = dims if 0 <= n < 2**31 else [1]
    nodes, inits = [], [t]
    if a.in_node:
        nodes.append(helper.make_node("Constant", [], [a.name], name="const",
                                      value=t))
        inits = []
    nodes.append(helper.make_node("Add", ["x", a.name], ["y"], name="add"))
    graph = helper.make_graph(
        nodes, "tensormodel",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="tensormodel")
    model.ir_version = 8
    with open(a.output_file, "wb") as f:
        f.write(model.SerializeToString())


if __name__ == "__main__":
    main()
