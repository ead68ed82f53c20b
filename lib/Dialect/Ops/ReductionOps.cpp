//===- ReductionOps.cpp - normalizations and reductions -------------------===//
//
// The verifiers of softmax, log_softmax, layer_norm and rms_norm (axis,
// scale and bias) and the type inference of the reductions.
//
// The ops are defined in include/memfit/Dialect/Ops/ReductionOps.td.
//
//===----------------------------------------------------------------------===//

#include "OpHelpers.h"

using namespace mlir;
using namespace mlir::memfit;

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

/// Softmax and log_softmax: the axis is one of the input's.
template <typename OpTy>
static LogicalResult verifySoftmaxAxis(OpTy op) {
  int64_t rank = op.getType().getRank();
  if (failed(normalizeAxis(op.getAxis(), rank, std::nullopt)))
    return op.emitOpError("axis ")
           << static_cast<int64_t>(op.getAxis()) << " is out of range for rank "
           << rank;
  return success();
}

/// A normalization's scale (or bias): same element type as the input, and
/// broadcastable to the normalized shape.
static LogicalResult verifyNormOperand(Operation *op, Value input, Value param,
                                       int64_t axis, StringRef name) {
  // (ODS returns I64Attr values as uint64_t; `axis` is signed again here.)
  auto type = cast<RankedTensorType>(input.getType());
  if (eltOf(param) != type.getElementType())
    return op->emitOpError()
           << name << " element type " << eltOf(param)
           << " differs from the input's " << type.getElementType();
  if (failed(normalizeAxis(axis, type.getRank(), std::nullopt)))
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << type.getRank();
  if (failed(verifyNormParam(type.getShape(), axis, shapeOf(param), name,
                             std::nullopt)))
    return op->emitOpError()
           << name << " of shape " << shapeToString(shapeOf(param))
           << " does not broadcast to the normalized shape "
           << shapeToString(type.getShape().drop_front(
                  axis < 0 ? axis + type.getRank() : axis));
  return success();
}
LogicalResult SoftmaxOp::verify() { return verifySoftmaxAxis(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifySoftmaxAxis(*this); }

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNormOperand(*this, getInput(), getScale(), getAxis(),
                               "scale")))
    return failure();
  if (getBias() && failed(verifyNormOperand(*this, getInput(), getBias(),
                                            getAxis(), "bias")))
    return failure();
  return success();
}

LogicalResult RMSNormOp::verify() {
  return verifyNormOperand(*this, getInput(), getScale(), getAxis(), "scale");
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

#define MEMFIT_REDUCE_INFER(OP)                                                \
  LogicalResult OP::inferReturnTypes(MLIRContext *, OptLoc loc,                \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    Shape shape;                                                               \
    if (failed(inferReduceShape(shapeOf(adaptor.getInput()), adaptor.getAxes(), \
                                adaptor.getKeepdims(), shape, loc)))           \
      return failure();                                                        \
    return pushTensor(types, shape, eltOf(adaptor.getInput()));                \
  }
MEMFIT_REDUCE_INFER(ReduceSumOp)
MEMFIT_REDUCE_INFER(ReduceMeanOp)
MEMFIT_REDUCE_INFER(ReduceMaxOp)
#undef MEMFIT_REDUCE_INFER
