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
  if (failed(verifyElementTypes(op, type.getElementType(), "the input's",
                                {{name, param}})))
    return failure();
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

//===----------------------------------------------------------------------===//
// RowOpInterface: the dimensions each row op reduces
//===----------------------------------------------------------------------===//

/// Dimension `axis` (negative from the back) alone, or with every one after
/// it when `toEnd`.
static FailureOr<SmallVector<int64_t>> fromAxis(int64_t axis, Value input,
                                                bool toEnd) {
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  FailureOr<int64_t> first = normalizeAxis(axis, rank, std::nullopt);
  if (failed(first))
    return failure();
  SmallVector<int64_t> dims;
  for (int64_t d = *first; d < (toEnd ? rank : *first + 1); ++d)
    dims.push_back(d);
  return dims;
}

/// A reduction's axes (empty: every dimension), each once, in order.
static FailureOr<SmallVector<int64_t>> reducedAxes(ArrayRef<int64_t> axes,
                                                   Value input) {
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    FailureOr<int64_t> axis = normalizeAxis(a, rank, std::nullopt);
    if (failed(axis))
      return failure();
    reduced[*axis] = true;
  }
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d])
      dims.push_back(d);
  return dims;
}

// A softmax reduces its axis, a normalization the dimensions from its axis
// on (ODS returns the I64Attr axes as uint64_t: cast back).
FailureOr<SmallVector<int64_t>> SoftmaxOp::getReducedDims() {
  return fromAxis(static_cast<int64_t>(getAxis()), getInput(), false);
}
FailureOr<SmallVector<int64_t>> LogSoftmaxOp::getReducedDims() {
  return fromAxis(static_cast<int64_t>(getAxis()), getInput(), false);
}
FailureOr<SmallVector<int64_t>> LayerNormOp::getReducedDims() {
  return fromAxis(static_cast<int64_t>(getAxis()), getInput(), true);
}
FailureOr<SmallVector<int64_t>> RMSNormOp::getReducedDims() {
  return fromAxis(static_cast<int64_t>(getAxis()), getInput(), true);
}
FailureOr<SmallVector<int64_t>> ReduceSumOp::getReducedDims() {
  return reducedAxes(getAxes(), getInput());
}
FailureOr<SmallVector<int64_t>> ReduceMeanOp::getReducedDims() {
  return reducedAxes(getAxes(), getInput());
}
FailureOr<SmallVector<int64_t>> ReduceMaxOp::getReducedDims() {
  return reducedAxes(getAxes(), getInput());
}
