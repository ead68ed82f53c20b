//===- LossGradients.cpp - gradients of the losses ------------------------===//
//
// Ignored labels get no gradient; `mean` divides by the total weight of
// the labels not ignored. Softmax cross-entropy over [N, C] without class
// weights becomes one softmax_cross_entropy_grad, linear cross-entropy one
// linear_cross_entropy_grad. The gradient of class
// weights and second-order gradients of the loss gradient op have no rule.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"

namespace mlir::memfit::grad {

/// The loss gradient of each sample, shaped like the labels (or a scalar
/// when it is the same for all): `g * w[label]`, zero for ignored labels,
/// divided by the total weight of the labels not ignored for `mean`.
static Value sampleScale(GradBuilder &g, Value labels, Value weights,
                         std::optional<int64_t> ignoreIndex,
                         LossReduction reduction, Type elt) {
  Value weight; // per sample; null means 1
  if (weights)
    weight = GatherOp::create(g.b, g.loc, weights, labels, uint64_t(0));
  if (ignoreIndex) {
    Value ignored = g.equal(
        labels, g.scalar(static_cast<double>(*ignoreIndex), eltOf(labels)));
    Value keep = g.cast(NotOp::create(g.b, g.loc, ignored), elt);
    weight = weight ? g.mul(weight, keep) : keep;
  }
  Value dy = g.grad();
  if (reduction == LossReduction::Mean) {
    Value total =
        weight ? g.reduceSum(weight, {}, /*keepDims=*/false)
               : g.scalar(static_cast<double>(getNumElements(shapeOf(labels))),
                          elt);
    dy = g.div(dy, total);
  }
  return weight ? g.mul(dy, weight) : dy;
}

/// Whether each position of `[N, C, d...]` scores holds its sample's label:
/// labels unsqueezed at 1 compared with the class numbers `[C, 1, ...]`.
static Value labelMask(GradBuilder &g, Value scores, Value labels) {
  ArrayRef<int64_t> shape = shapeOf(scores);
  Shape classShape{shape[1]};
  classShape.append(shape.size() - 2, 1);
  auto classType = RankedTensorType::get(classShape, eltOf(labels));
  SmallVector<APInt> classes;
  unsigned width = eltOf(labels).getIntOrFloatBitWidth();
  for (int64_t c = 0; c < shape[1]; ++c)
    classes.push_back(APInt(width, c, /*isSigned=*/true));
  Value classIds = ConstantOp::create(
      g.b, g.loc, DenseElementsAttr::get(classType, classes));
  return g.equal(g.unsqueeze(labels, 1), classIds);
}

/// The per-sample scale broadcast against `[N, C, d...]`.
static Value classBroadcast(GradBuilder &g, Value scale) {
  return shapeOf(scale).empty() ? scale : g.unsqueeze(scale, 1);
}

static LogicalResult rule(SoftmaxCrossEntropyLossOp op, GradBuilder &g) {
  if (op.getWeights() && g.needs(2))
    return g.unsupported() << "its class weights (freeze them)";
  if (!g.needs(0))
    return success();
  Value scores = op.getScores(), labels = op.getLabels();
  if (shapeOf(scores).size() == 2 && !op.getWeights()) {
    g.set(0, SoftmaxCrossEntropyGradOp::create(
                 g.b, g.loc, scores.getType(), op.getReductionAttr(), scores,
                 labels, g.grad(), op.getIgnoreIndexAttr()));
    return success();
  }
  // (softmax(scores) - onehot(labels)) * scale, along the class axis 1.
  Type elt = eltOf(scores);
  Value scale = sampleScale(g, labels, op.getWeights(), op.getIgnoreIndex(),
                            op.getReduction(), elt);
  Value probs = SoftmaxOp::create(g.b, g.loc, scores, uint64_t(1));
  Value onehot = g.cast(labelMask(g, scores, labels), elt);
  g.set(0, g.mul(g.sub(probs, onehot), classBroadcast(g, scale)));
  return success();
}

static LogicalResult rule(NegativeLogLikelihoodLossOp op, GradBuilder &g) {
  if (op.getWeights() && g.needs(2))
    return g.unsupported() << "its class weights (freeze them)";
  if (!g.needs(0))
    return success();
  // -scale at each sample's label, zero elsewhere.
  Value input = op.getInput();
  Type elt = eltOf(input);
  Value scale = sampleScale(g, op.getTarget(), op.getWeights(),
                            op.getIgnoreIndex(), op.getReduction(), elt);
  g.set(0, g.select(labelMask(g, input, op.getTarget()),
                    g.neg(classBroadcast(g, scale)), g.scalar(0.0, elt)));
  return success();
}

static LogicalResult rule(SoftmaxCrossEntropyGradOp op, GradBuilder &g) {
  return g.unsupported() << "second-order gradients of a loss";
}

/// One linear_cross_entropy_grad for both operands: memfit-chunk-loss
/// computes them from the same chunks of logits.
static LogicalResult rule(LinearCrossEntropyOp op, GradBuilder &g) {
  auto grads = LinearCrossEntropyGradOp::create(
      g.b, g.loc, op.getReductionAttr(), op.getHidden(), op.getWeight(),
      op.getLabels(), g.grad(), op.getBias(), op.getIgnoreIndexAttr());
  if (g.needs(0))
    g.set(0, grads.getDhidden());
  if (g.needs(1))
    g.set(1, grads.getDweight());
  // Operand 3, the bias, after the labels.
  if (op.getBias() && g.needs(3))
    g.set(3, grads.getDbias());
  return success();
}

static LogicalResult rule(LinearCrossEntropyGradOp op, GradBuilder &g) {
  return g.unsupported() << "second-order gradients of a loss";
}

void attachLossGradients(MLIRContext *context) {
  attachRules<SoftmaxCrossEntropyLossOp, NegativeLogLikelihoodLossOp,
              SoftmaxCrossEntropyGradOp, LinearCrossEntropyOp,
              LinearCrossEntropyGradOp>(context);
}

} // namespace mlir::memfit::grad
