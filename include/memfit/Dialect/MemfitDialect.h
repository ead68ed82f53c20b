//===- MemfitDialect.h - the memfit dialect -----------------------*- C++ -*-===//

#ifndef MEMFIT_DIALECT_MEMFITDIALECT_H
#define MEMFIT_DIALECT_MEMFITDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "memfit/Dialect/MemfitDialect.h.inc"

#endif // MEMFIT_DIALECT_MEMFITDIALECT_H
