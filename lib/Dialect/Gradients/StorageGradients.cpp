//===- StorageGradients.cpp - leaves: parameters and constants ------------===//
//
// load_parameter, constant and range are leaves of the gradient: their
// operands (none) get no gradient.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"

namespace mlir::memfit::grad {

MEMFIT_NO_GRADIENT(LoadParameterOp)
MEMFIT_NO_GRADIENT(ConstantOp)
MEMFIT_NO_GRADIENT(RangeOp)

void attachStorageGradients(MLIRContext *context) {
  attachRules<LoadParameterOp, ConstantOp, RangeOp>(context);
}

} // namespace mlir::memfit::grad
