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

} // namespace mlir::memfit

#endif // MEMFIT_DIALECT_MEMFITDIALECT_H
