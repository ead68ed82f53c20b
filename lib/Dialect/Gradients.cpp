//===- Gradients.cpp - per-op gradient rules ------------------------------===//
//
// The vector-Jacobian product of every memfit op that can carry a float
// gradient, attached as an external model of GradientOpInterface. A rule
// reads the gradients of the op's results and builds ordinary memfit ops for
// the gradients of its operands; it may use the op's forward results (the
// autodiff pass inserts the rules after the forward ops). Edge cases follow
// PyTorch's autograd.
//
// Each family of ops has its rules in lib/Dialect/Gradients/
// <Family>Gradients.cpp, built with the GradBuilder of GradBuilder.h; this
// file attaches them all, and holds the helpers that memfit-autodiff uses
// too. Cases a rule does not cover are diagnosed on the op ("has no gradient
// rule for ...").
//
// The ops a rule builds carry the forward op's location fused with a "grad"
// marker, so diagnostics and kernel comments still name the ONNX node.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/Gradients.h"
#include "memfit/Dialect/MemfitOps.h"

#include "Gradients/GradBuilder.h"

using namespace mlir;
using namespace mlir::memfit;

Value mlir::memfit::unbroadcast(OpBuilder &builder, Location loc, Value grad,
                                RankedTensorType type) {
  auto gradType = cast<RankedTensorType>(grad.getType());
  ArrayRef<int64_t> from = gradType.getShape(), to = type.getShape();
  if (from == to)
    return grad;
  // Broadcasting aligns the trailing dimensions; the gradient is summed over
  // the leading ones the operand lacks and over those where it has a 1.
  int64_t lead = static_cast<int64_t>(from.size()) - to.size();
  SmallVector<int64_t> axes;
  Shape dropped;
  for (int64_t d = 0, e = from.size(); d < e; ++d) {
    int64_t target = d < lead ? 1 : to[d - lead];
    if (target == 1 && from[d] != 1)
      axes.push_back(d);
    else
      dropped.push_back(from[d]);
  }
  Value v = grad;
  if (!axes.empty()) {
    // Without keepdims when that already gives the operand's shape.
    bool keepDims = ArrayRef<int64_t>(dropped) != to;
    v = ReduceSumOp::create(builder, loc, grad, axes, keepDims);
  }
  if (shapeOf(v) != to)
    v = ReshapeOp::create(
        builder, loc, RankedTensorType::get(to, gradType.getElementType()), v);
  return v;
}

Value mlir::memfit::splatConstant(OpBuilder &builder, Location loc,
                                  RankedTensorType type, double value) {
  Type elt = type.getElementType();
  Attribute element;
  if (isa<FloatType>(elt))
    element = FloatAttr::get(elt, value);
  else if (elt.isInteger(1))
    element = IntegerAttr::get(elt, value != 0);
  else
    element = IntegerAttr::get(elt, static_cast<int64_t>(value));
  return ConstantOp::create(builder, loc,
                            DenseElementsAttr::get(type, element));
}

void mlir::memfit::attachGradientInterfaces(MLIRContext *context) {
  grad::attachStorageGradients(context);
  grad::attachElementwiseGradients(context);
  grad::attachContractionGradients(context);
  grad::attachReductionGradients(context);
  grad::attachDataMovementGradients(context);
  grad::attachLossGradients(context);
  grad::attachAttentionGradients(context);
}
