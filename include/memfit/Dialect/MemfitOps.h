//===- MemfitOps.h - memfit ops -----------------------------------*- C++ -*-===//

#ifndef MEMFIT_DIALECT_MEMFITOPS_H
#define MEMFIT_DIALECT_MEMFITOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "memfit/Dialect/MemfitDialect.h"
#include "memfit/Dialect/MemfitTraits.h"
#include "memfit/Dialect/OpCost.h"
#include "memfit/Dialect/MemfitEnums.h.inc"

namespace mlir::memfit {
/// The precision requirement of an op of class `opClass` that does not
/// state its own (OpClassInterface::getPrecision).
Precision defaultPrecision(OpClass opClass);
} // namespace mlir::memfit

#include "memfit/Dialect/MemfitInterfaces.h.inc"

#define GET_OP_CLASSES
#include "memfit/Dialect/MemfitOps.h.inc"

namespace mlir::memfit {
/// Whether the kernel of `op` computes element by element, so that a splat
/// constant operand can be a literal in it: element-wise and data-movement
/// ops but those with KernelReadsBuffers (split). Row, reduction and loss
/// kernels read their operands as buffers.
bool kernelTakesLiterals(Operation *op);
} // namespace mlir::memfit

#endif // MEMFIT_DIALECT_MEMFITOPS_H
