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
  if (failed(verifyElementTypes(*this, scores.getElementType(),
                                "the scores'", {{"loss gradient", getDloss()}})))
    return failure();
  bool perRow = getReduction() == LossReduction::None;
  if (perRow ? dloss.getShape() != labels.getShape() : dloss.getRank() != 0)
    return emitOpError("loss gradient must be ")
           << (perRow ? "shaped like the labels" : "a scalar") << ", got "
           << dloss;
  return success();
}

/// The loss type of linear_cross_entropy: f64 for f64 hidden states, f32
/// otherwise (the logits of a 16-bit head are taken to f32 for the loss).
static Type linearLossType(Value hidden) {
  Type elt = eltOf(hidden);
  return elt.isF64() ? elt : Float32Type::get(hidden.getContext());
}

/// hidden [N, D], weight [D, V] of one float type, labels [N], and an
/// optional bias [V] of the weight's type.
static LogicalResult checkLinearLoss(OptLoc loc, Value hidden, Value weight,
                                     Value labels, Value bias) {
  ArrayRef<int64_t> h = shapeOf(hidden), w = shapeOf(weight),
                    l = shapeOf(labels);
  if (h.size() != 2 || w.size() != 2 || l.size() != 1 || w[0] != h[1] ||
      l[0] != h[0])
    return emitOptionalError(
        loc, "linear cross-entropy expects hidden [N, D], weight [D, V] and "
             "labels [N], got ",
        shapeToString(h), ", ", shapeToString(w), " and ", shapeToString(l));
  if (eltOf(hidden) != eltOf(weight))
    return emitOptionalError(loc, "linear cross-entropy hidden and weight "
                                  "element types differ: ",
                             eltOf(hidden), " and ", eltOf(weight));
  if (bias && bias.getType() != RankedTensorType::get({w[1]}, eltOf(weight)))
    return emitOptionalError(loc, "linear cross-entropy bias must be ",
                             RankedTensorType::get({w[1]}, eltOf(weight)),
                             ", got ", bias.getType());
  return success();
}

LogicalResult LinearCrossEntropyOp::inferReturnTypes(
    MLIRContext *, OptLoc loc, Adaptor adaptor, SmallVectorImpl<Type> &types) {
  if (failed(checkLinearLoss(loc, adaptor.getHidden(), adaptor.getWeight(),
                             adaptor.getLabels(), adaptor.getBias())))
    return failure();
  return pushTensor(types, {}, linearLossType(adaptor.getHidden()));
}

LogicalResult LinearCrossEntropyOp::verify() {
  if (getReduction() == LossReduction::None)
    return emitOpError("reduction must be sum or mean");
  return success();
}

LogicalResult LinearCrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, OptLoc loc, Adaptor adaptor, SmallVectorImpl<Type> &types) {
  if (failed(checkLinearLoss(loc, adaptor.getHidden(), adaptor.getWeight(),
                             adaptor.getLabels(), adaptor.getBias())))
    return failure();
  types.push_back(adaptor.getHidden().getType());
  types.push_back(adaptor.getWeight().getType());
  if (Value bias = adaptor.getBias())
    types.push_back(bias.getType());
  return success();
}

LogicalResult LinearCrossEntropyGradOp::verify() {
  if (getReduction() == LossReduction::None)
    return emitOpError("reduction must be sum or mean");
  auto expected = RankedTensorType::get({}, linearLossType(getHidden()));
  if (getDloss().getType() != expected)
    return emitOpError("dloss must be ") << expected << ", got "
                                         << getDloss().getType();
  return success();
}
