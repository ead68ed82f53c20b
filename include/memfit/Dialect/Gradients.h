//===- Gradients.h - per-op gradient rules ------------------------*- C++ -*-===//
//
// The vector-Jacobian products of the memfit ops, attached to them as
// external models of GradientOpInterface, and the helpers the rules share
// (also used by memfit-autodiff to sum and reshape gradients).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_GRADIENTS_H
#define MEMFIT_DIALECT_GRADIENTS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

namespace mlir::memfit {

/// Attaches the gradient rules to every op that has one; called by the
/// dialect's initialize().
void attachGradientInterfaces(MLIRContext *context);

/// Sums `grad` (of a broadcast result) down to `type`, the shape of the
/// operand that was broadcast: reduce_sum over the broadcast axes, then a
/// reshape. Returns `grad` itself when the shapes already agree.
Value unbroadcast(OpBuilder &builder, Location loc, Value grad,
                  RankedTensorType type);

/// A tensor of `type` filled with `value` (a splat memfit.constant).
Value splatConstant(OpBuilder &builder, Location loc, RankedTensorType type,
                    double value);

} // namespace mlir::memfit

#endif // MEMFIT_DIALECT_GRADIENTS_H
