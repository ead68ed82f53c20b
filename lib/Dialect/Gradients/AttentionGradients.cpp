//===- AttentionGradients.cpp - the gradient of attention -----------------===//
//
// memfit.attention's gradient is FlashAttention-2's backward: `delta`, each
// query row's sum of dresult * result (in f32, a row kernel), then
// memfit.attention_grad_query for the queries and
// memfit.attention_grad_key_value for the keys and values, which recompute
// the probabilities from the saved log-sum-exp. No score matrix is built.
// A float mask gets no gradient (a trained bias over the scores would need
// one the size of the scores), nor does the log-sum-exp.
//
// With dropout on the probabilities (Z = keep / (1 - ratio), result =
// (Z * P) V), the gradient ops take the forward's dropout attributes and
// step and draw the same Z: dvalue = (Z * P)^T dresult, dP = Z * (dresult value^T),
// dscores = P * (dP - delta). delta stays sum(dresult * result): the sum
// over the keys of P * dP is dresult . ((Z * P) V).
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"

namespace mlir::memfit::grad {

static LogicalResult rule(AttentionOp op, GradBuilder &g) {
  if (op.getMask() && g.needs(3))
    return g.unsupported() << "a trained float mask (freeze it)";
  if (g.grad(1))
    return g.unsupported() << "its log-sum-exp result";
  Value dresult = g.grad(0);
  // delta = sum over the head size of dresult * result, in f32.
  Type f32 = Float32Type::get(op.getContext());
  auto toF32 = [&](Value v) { return eltOf(v).isF32() ? v : g.cast(v, f32); };
  Value delta = g.reduceSum(g.mul(toF32(dresult), toF32(op.getResult())), {3},
                            /*keepDims=*/false);
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  if (g.needs(0))
    g.set(0, AttentionGradQueryOp::create(
                 g.b, g.loc, q, k, v, op.getLogsumexp(), delta, dresult,
                 AttentionOp::extrasOf(op.getMask(), op.getDropoutStep()),
                 op.getScaleAttr(), op.getCausalAttr(),
                 op.getUniformHiddenRowsAttr(), op.getDropoutRatioAttr(),
                 op.getDropoutSeedAttr(), op.getDropoutStreamAttr()));
  if (g.needs(1) || g.needs(2)) {
    auto kv = AttentionGradKeyValueOp::create(
        g.b, g.loc, q, k, v, op.getLogsumexp(), delta, dresult,
        AttentionOp::extrasOf(op.getMask(), op.getDropoutStep()),
        op.getScaleAttr(), op.getCausalAttr(), op.getUniformHiddenRowsAttr(),
        op.getDropoutRatioAttr(), op.getDropoutSeedAttr(),
        op.getDropoutStreamAttr());
    if (g.needs(1))
      g.set(1, kv.getDkey());
    if (g.needs(2))
      g.set(2, kv.getDvalue());
  }
  return success();
}

static LogicalResult rule(AttentionGradQueryOp op, GradBuilder &g) {
  return g.unsupported() << "second-order gradients of attention";
}

static LogicalResult rule(AttentionGradKeyValueOp op, GradBuilder &g) {
  return g.unsupported() << "second-order gradients of attention";
}

void attachAttentionGradients(MLIRContext *context) {
  attachRules<AttentionOp, AttentionGradQueryOp, AttentionGradKeyValueOp>(
      context);
}

} // namespace mlir::memfit::grad
