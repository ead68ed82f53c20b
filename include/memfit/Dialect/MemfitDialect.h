//===- MemfitDialect.h - the memfit dialect -----------------------*- C++ -*-===//

#ifndef MEMFIT_DIALECT_MEMFITDIALECT_H
#define MEMFIT_DIALECT_MEMFITDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "memfit/Dialect/MemfitDialect.h.inc"

namespace mlir::memfit {

/// The ONNX node an op comes from: the first name in its location (the
/// importer names every op after its node; gradients and clones keep it,
/// possibly inside fused or call-site locations). Empty when there is none.
StringRef onnxNodeName(Location loc);

/// The key under which the importer records an ONNX node's module scope in
/// its location's fused metadata (a dictionary attribute).
constexpr StringLiteral kOnnxScopeKey = "onnx.scope";

/// The module scope of the ONNX node an op comes from, as a '/'-separated
/// path such as "/layers.0/layers.0.mlp/layers.0.mlp.gate_proj/linear_4"
/// (the importer takes it from the node's "namespace" metadata, which the
/// PyTorch dynamo exporter writes). Empty when the model carries none.
StringRef onnxNodeScope(Location loc);

/// The PyTorch module path of the ONNX node an op comes from, such as
/// "h.0.attn.c_attn": from its module scope when there is one
/// ("/h.0/h.0.attn/h.0.attn.c_attn/linear", the dynamo exporter's), else
/// from its node name ("/h.0/attn/c_attn/MatMul", TorchScript's;
/// "/h.0/mlp/mlp.0/MatMul" is "h.0.mlp.0"): the components but the last,
/// where one that extends the one before it with "." replaces it. Empty
/// when neither has one.
std::string onnxModulePath(Location loc);

/// The index of a transformer layer in a name such as "h.3.attn.weight",
/// "/layers.1/mlp/MatMul" or "encoder.layer.0.attention", or -1.
int layerIndex(StringRef name);

/// The transformer layer of an op at `loc` that reads or writes the
/// parameters named `parameters`, as a name: the first path component
/// `name.N` of a parameter's name ("h.0" of h.0.attn.c_attn.weight), else
/// of its location: the ONNX nodes' names ("h.0" of /h.0/attn/MatMul) and
/// module scopes (onnx.scope, "/layers.3/layers.3.mlp/..." of the dynamo
/// exporter, whose pre-transposed weights are named val_9), else a looser
/// `nameN` in the parameters' names ("h4" of h4.proj). Names with "::"
/// (the TorchScript exporter's onnx::MatMul_12, named after no module)
/// are skipped: the nodes that read them name the module. Empty outside
/// the layers.
std::string layerOf(Location loc, ArrayRef<StringRef> parameters);

} // namespace mlir::memfit

#endif // MEMFIT_DIALECT_MEMFITDIALECT_H
