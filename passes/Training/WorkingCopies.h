//===- WorkingCopies.h - offload-states: masters on the host ----*- C++ -*-===//

#ifndef MEMFIT_PASSES_TRAINING_WORKINGCOPIES_H
#define MEMFIT_PASSES_TRAINING_WORKINGCOPIES_H

#include "memfit/Dialect/MemfitOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::memfit {

/// Moves `master` to host memory and gives it a working copy on the device,
/// `<name>.working` (kRoleWorkingCopy, kWorkingCopyOfAttr), that every read
/// of `master` in `func` reads instead: of the 16-bit type where every read
/// casts it to one (the cast goes), else of the master's type.
ParameterOp addWorkingCopy(SymbolTable &symbols, func::FuncOp func,
                           ParameterOp master);

/// `master` (an updated value) as a working copy of `type`: itself, or its
/// cast ("working-copy").
Value workingValue(OpBuilder &b, Location loc, Value master,
                   RankedTensorType type);

} // namespace mlir::memfit

#endif // MEMFIT_PASSES_TRAINING_WORKINGCOPIES_H
