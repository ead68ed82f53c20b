//===- ReductionGradients.cpp - normalizations and reductions -------------===//
//
// Softmax and log_softmax from their results; layer_norm and rms_norm
// recompute their statistics; reduce_max shares the gradient equally
// between tied maxima, as torch.amax.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"

namespace mlir::memfit::grad {

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

static LogicalResult rule(SoftmaxOp op, GradBuilder &g) {
  // dx = y * (g - sum(g * y)).
  int64_t axis = static_cast<int64_t>(op.getAxis());
  Value y = op.getResult();
  Value dot = g.reduceSum(g.mul(g.grad(), y), {axis}, /*keepDims=*/true);
  g.set(0, g.mul(y, g.sub(g.grad(), dot)));
  return success();
}

static LogicalResult rule(LogSoftmaxOp op, GradBuilder &g) {
  // dx = g - exp(y) * sum(g).
  int64_t axis = static_cast<int64_t>(op.getAxis());
  Value total = g.reduceSum(g.grad(), {axis}, /*keepDims=*/true);
  g.set(0, g.sub(g.grad(), g.mul(g.exp(op.getResult()), total)));
  return success();
}

/// The rule of layer_norm (with `centered`) and rms_norm: recomputes the
/// statistics over the normalized dimensions [axis, rank), then
///   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
/// with dxhat = g * scale (rms_norm has no mean(dxhat) term).
static LogicalResult normRule(GradBuilder &g, Value x, Value scale, Value bias,
                              int64_t axisAttr, double epsilon, bool centered) {
  int64_t rank = shapeOf(x).size();
  int64_t axis = *normalizeAxis(axisAttr, rank, std::nullopt);
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  Type elt = eltOf(x);
  Value dy = g.grad();

  Value xc = centered ? g.sub(x, g.reduceMean(x, axes)) : x;
  Value var = g.reduceMean(g.mul(xc, xc), axes);
  Value rstd = ReciprocalOp::create(
      g.b, g.loc,
      SqrtOp::create(g.b, g.loc, g.add(var, g.scalar(epsilon, elt))));
  Value xhat = g.mul(xc, rstd);

  // The input's gradient first: its row reductions are of the
  // statistics' frame, so fusion makes one row kernel of both; the scale's
  // and bias's gradients, column sums, come after it.
  // Both of its reductions come before the element-wise ops that use
  // them (sibling reductions of the frame, then one epilogue).
  if (g.needs(0)) {
    Value dxhat = g.mul(dy, scale);
    Value projection = g.reduceMean(g.mul(dxhat, xhat), axes);
    Value mean = centered ? g.reduceMean(dxhat, axes) : Value();
    Value inner = g.sub(dxhat, g.mul(xhat, projection));
    if (centered)
      inner = g.sub(inner, mean);
    g.set(0, g.mul(inner, rstd));
  }
  if (bias && g.needs(2))
    g.set(2, g.unbroadcastTo(dy, bias));
  if (g.needs(1))
    g.set(1, g.unbroadcastTo(g.mul(dy, xhat), scale));
  return success();
}

static LogicalResult rule(LayerNormOp op, GradBuilder &g) {
  return normRule(g, op.getInput(), op.getScale(), op.getBias(),
                  static_cast<int64_t>(op.getAxis()),
                  op.getEpsilon().convertToDouble(), /*centered=*/true);
}

static LogicalResult rule(RMSNormOp op, GradBuilder &g) {
  return normRule(g, op.getInput(), op.getScale(), Value(),
                  static_cast<int64_t>(op.getAxis()),
                  op.getEpsilon().convertToDouble(), /*centered=*/false);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Normalized reduction axes; empty `axes` means all of them.
static SmallVector<int64_t> reductionAxes(ArrayRef<int64_t> axes,
                                          int64_t rank) {
  SmallVector<int64_t> result;
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      result.push_back(d);
    return result;
  }
  for (int64_t a : axes)
    result.push_back(*normalizeAxis(a, rank, std::nullopt));
  llvm::sort(result);
  return result;
}

/// The shape of `x` with the reduced dimensions `axes` kept as 1.
static Shape keptShape(Value x, ArrayRef<int64_t> axes) {
  Shape kept(shapeOf(x));
  for (int64_t a : axes)
    kept[a] = 1;
  return kept;
}

/// The result gradient with the reduced dimensions kept as 1, so that it
/// broadcasts against the input.
static Value keptGrad(GradBuilder &g, Value input, ArrayRef<int64_t> axes) {
  if (shapeOf(g.grad()).empty())
    return g.grad(); // a scalar broadcasts as it is
  return g.reshape(g.grad(), keptShape(input, axes));
}

static LogicalResult rule(ReduceSumOp op, GradBuilder &g) {
  Value x = op.getInput();
  SmallVector<int64_t> axes = reductionAxes(op.getAxes(), shapeOf(x).size());
  Value kept = keptGrad(g, x, axes);
  g.set(0, kept.getType() == x.getType()
               ? kept
               : ExpandOp::create(g.b, g.loc, x.getType(), kept).getResult());
  return success();
}

static LogicalResult rule(ReduceMeanOp op, GradBuilder &g) {
  // g / n broadcast back: one multiplication by a splat of the input's
  // shape.
  Value x = op.getInput();
  SmallVector<int64_t> axes = reductionAxes(op.getAxes(), shapeOf(x).size());
  int64_t n = 1;
  for (int64_t a : axes)
    n *= shapeOf(x)[a];
  Value kept = keptGrad(g, x, axes);
  g.set(0, g.mul(kept, splatConstant(g.b, g.loc, op.getInput().getType(),
                                     n ? 1.0 / static_cast<double>(n) : 0.0)));
  return success();
}

static LogicalResult rule(ReduceMaxOp op, GradBuilder &g) {
  // Shared equally between the elements equal to the maximum.
  Value x = op.getInput();
  SmallVector<int64_t> axes = reductionAxes(op.getAxes(), shapeOf(x).size());
  Type elt = eltOf(x);
  Value mask = g.equal(x, g.reshape(op.getResult(), keptShape(x, axes)));
  Value count = g.reduceSum(g.cast(mask, elt), axes, /*keepDims=*/true);
  Value share = g.div(keptGrad(g, x, axes), count);
  g.set(0, g.select(mask, share, g.scalar(0.0, elt)));
  return success();
}

void attachReductionGradients(MLIRContext *context) {
  attachRules<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RMSNormOp, ReduceSumOp,
              ReduceMeanOp, ReduceMaxOp>(context);
}

} // namespace mlir::memfit::grad
