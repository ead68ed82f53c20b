//===- LossOps.cpp - losses and the loss gradient -------------------------===//
//
// The type inference of the ONNX losses and the verifier of
// softmax_cross_entropy_grad.
//
// The ops are defined in include/memfit/Dialect/Ops/LossOps.td.
//
//===----------------------------------------------------------------------===//

#include "OpHelpers.h"

using namespace mlir;
using namespace mlir::memfit;

/// Infers a loss's type: weights of the scores' element type, and the
/// shapes of inferLossShape.
static LogicalResult inferLoss(OptLoc loc, Value scores, Value labels,
                               Value weights, LossReduction reduction,
                               SmallVectorImpl<Type> &types) {
  std::optional<ArrayRef<int64_t>> w;
  if (weights) {
    if (eltOf(weights) != eltOf(scores))
      return emitOptionalError(loc, "loss weights element type ",
                               eltOf(weights), " differs from the scores' ",
                               eltOf(scores));
    w = shapeOf(weights);
  }
  Shape shape;
  if (failed(inferLossShape(shapeOf(scores), shapeOf(labels), w,
                            reduction != LossReduction::None, shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(scores));
}

LogicalResult SoftmaxCrossEntropyLossOp::inferReturnTypes(
    MLIRContext *, OptLoc loc, Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferLoss(loc, adaptor.getScores(), adaptor.getLabels(),
                            adaptor.getWeights(), adaptor.getReduction(),
                            types);
}

LogicalResult NegativeLogLikelihoodLossOp::inferReturnTypes(
    MLIRContext *, OptLoc loc, Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferLoss(loc, adaptor.getInput(), adaptor.getTarget(),
                            adaptor.getWeights(), adaptor.getReduction(),
                            types);
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  auto scores = cast<RankedTensorType>(getScores().getType());
  auto labels = cast<RankedTensorType>(getLabels().getType());
  auto dloss = cast<RankedTensorType>(getDloss().getType());
  if (scores.getRank() != 2 || labels.getRank() != 1 ||
      labels.getDimSize(0) != scores.getDimSize(0))
    return emitOpError("expects scores [N, C] and labels [N], got ")
           << scores << " and " << labels;
  if (getType() != scores)
    return emitOpError("result type must equal the scores' type");
  if (dloss.getElementType() != scores.getElementType())
    return emitOpError("loss gradient element type differs from the scores'");
  bool perRow = getReduction() == LossReduction::None;
  if (perRow ? dloss.getShape() != labels.getShape() : dloss.getRank() != 0)
    return emitOpError("loss gradient must be ")
           << (perRow ? "shaped like the labels" : "a scalar") << ", got "
           << dloss;
  return success();
}
