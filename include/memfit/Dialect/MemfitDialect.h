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

} // namespace mlir::memfit

#endif // MEMFIT_DIALECT_MEMFITDIALECT_H
