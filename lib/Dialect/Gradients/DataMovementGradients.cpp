//===- DataMovementGradients.cpp - gradients of data movement -------------===//
//
// The adjoints of the data-movement ops: the inverse view or permutation,
// the pieces of a concat, zero padding or a gather_grad for a slice, a
// gather_grad or a scatter for the gathers, a gather for the scatters and
// for gather_grad. Scatters with a reduction other than `none` and `add`
// and gather_nd with batch dimensions have no rule; topk_indices has no
// gradient.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"

namespace mlir::memfit::grad {

/// Index results.
MEMFIT_NO_GRADIENT(TopKIndicesOp)

static LogicalResult rule(CumSumOp op, GradBuilder &g) {
  // Each input element reaches the outputs after it (before it, reversed).
  g.set(0, CumSumOp::create(g.b, g.loc, g.grad(), op.getAxis(),
                            op.getExclusive(), !op.getReverse()));
  return success();
}

static LogicalResult rule(TransposeOp op, GradBuilder &g) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  g.set(0, TransposeOp::create(g.b, g.loc, g.grad(), inverse));
  return success();
}

static LogicalResult rule(RotaryOp op, GradBuilder &g) {
  // Linear in the input: its adjoint is the transposed map.
  if (g.needs(0))
    g.set(0, RotaryOp::create(g.b, g.loc, g.grad(), op.getCos(), op.getSin(),
                              !op.getInverse()));
  if (!g.needs(1) && !g.needs(2))
    return success();
  if (op.getInverse())
    return g.unsupported() << "cos and sin of the inverse rotation",
           failure();
  // d cos = g x and d sin = g rotate_half(x), summed over their broadcast;
  // g rotate_half(x) is the rotation of x with cos 0 and sin g.
  Value x = op.getInput();
  if (g.needs(1))
    g.set(1, g.unbroadcastTo(g.mul(g.grad(), x), op.getCos()));
  if (g.needs(2)) {
    Value rotated = RotaryOp::create(g.b, g.loc, x, g.scalar(0.0, eltOf(x)),
                                     g.grad(), false);
    g.set(2, g.unbroadcastTo(rotated, op.getSin()));
  }
  return success();
}

/// Reshape-like ops: the gradient takes the input's shape back.
template <typename OpTy>
static LogicalResult reshapeRule(OpTy op, GradBuilder &g) {
  g.set(0, g.reshape(g.grad(), shapeOf(op.getInput())));
  return success();
}
static LogicalResult rule(ReshapeOp op, GradBuilder &g) {
  return reshapeRule(op, g);
}
static LogicalResult rule(FlattenOp op, GradBuilder &g) {
  return reshapeRule(op, g);
}
static LogicalResult rule(SqueezeOp op, GradBuilder &g) {
  return reshapeRule(op, g);
}
static LogicalResult rule(UnsqueezeOp op, GradBuilder &g) {
  return reshapeRule(op, g);
}

static LogicalResult rule(ExpandOp op, GradBuilder &g) {
  g.set(0, g.unbroadcastTo(g.grad(), op.getInput()));
  return success();
}

static LogicalResult rule(ConcatOp op, GradBuilder &g) {
  // The pieces of the gradient: one split, or a slice when one input
  // wants a gradient.
  int64_t rank = shapeOf(op.getResult()).size();
  int64_t axis = *normalizeAxis(op.getAxis(), rank, std::nullopt);
  SmallVector<int64_t> sizes;
  SmallVector<unsigned> wanted;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    sizes.push_back(shapeOf(input)[axis]);
    if (g.needs(i))
      wanted.push_back(i);
  }
  if (wanted.size() == 1) {
    unsigned i = wanted.front();
    int64_t begin = 0;
    for (unsigned k = 0; k < i; ++k)
      begin += sizes[k];
    int64_t end = begin + sizes[i], step = 1;
    g.set(i, SliceOp::create(g.b, g.loc, g.grad(), ArrayRef(begin),
                             ArrayRef(end), ArrayRef(axis), ArrayRef(step)));
    return success();
  }
  auto split = SplitOp::create(g.b, g.loc, g.grad(), axis, sizes);
  for (unsigned i : wanted)
    g.set(i, split.getResult(i));
  return success();
}

static LogicalResult rule(SplitOp op, GradBuilder &g) {
  SmallVector<Value> pieces;
  for (auto [i, result] : llvm::enumerate(op.getResults())) {
    Value piece = g.grad(i);
    pieces.push_back(piece ? piece : g.zeros(shapeOf(result), eltOf(result)));
  }
  g.set(0, pieces.size() == 1
               ? pieces.front()
               : ConcatOp::create(g.b, g.loc, pieces,
                                  static_cast<uint64_t>(op.getAxis()))
                     .getResult());
  return success();
}

static LogicalResult rule(SliceOp op, GradBuilder &g) {
  // The adjoint puts the gradient back at the sliced positions, axis by
  // axis: zero padding on both sides for a step of 1, a gather_grad by the
  // constant positions for any other step.
  Value x = op.getInput();
  ArrayRef<int64_t> xs = shapeOf(x);
  Type elt = eltOf(x);
  SmallVector<SliceDim> dims;
  if (failed(resolveSlice(xs, op.getStarts(), op.getEnds(), op.getAxes(),
                          op.getSteps(), dims, op.getLoc())))
    return failure();
  if (getNumElements(shapeOf(op.getResult())) == 0) {
    g.set(0, g.zeros(xs, elt));
    return success();
  }
  Value v = g.grad();
  for (auto [d, dim] : llvm::enumerate(dims)) {
    int64_t extent = xs[d];
    if (dim.start == 0 && dim.step == 1 && dim.size == extent)
      continue;
    Shape shape(shapeOf(v));
    if (dim.step == 1) {
      SmallVector<Value> parts;
      int64_t after = extent - dim.start - dim.size;
      if (dim.start > 0) {
        shape[d] = dim.start;
        parts.push_back(g.zeros(shape, elt));
      }
      parts.push_back(v);
      if (after > 0) {
        shape[d] = after;
        parts.push_back(g.zeros(shape, elt));
      }
      v = ConcatOp::create(g.b, g.loc, parts, static_cast<uint64_t>(d));
      continue;
    }
    SmallVector<int64_t> positions;
    for (int64_t k = 0; k < dim.size; ++k)
      positions.push_back(dim.start + k * dim.step);
    auto indexType = RankedTensorType::get({dim.size}, g.b.getIntegerType(64));
    Value indices = ConstantOp::create(
        g.b, g.loc, DenseElementsAttr::get(indexType, ArrayRef(positions)));
    shape[d] = extent;
    v = GatherGradOp::create(g.b, g.loc, RankedTensorType::get(shape, elt), v,
                             indices, static_cast<uint64_t>(d), Value());
  }
  g.set(0, v);
  return success();
}

static LogicalResult rule(GatherOp op, GradBuilder &g) {
  int64_t axis =
      *normalizeAxis(op.getAxis(), shapeOf(op.getData()).size(), std::nullopt);
  RankedTensorType dataType = op.getData().getType();
  Type elt = dataType.getElementType();
  // Repeated indices add up: 16-bit floats accumulate in f32, rounded once.
  if (elt.isF16() || elt.isBF16()) {
    Type f32 = g.b.getF32Type();
    Value sum = GatherGradOp::create(
        g.b, g.loc, RankedTensorType::get(dataType.getShape(), f32),
        g.cast(g.grad(), f32, "gradient"), op.getIndices(),
        static_cast<uint64_t>(axis), Value());
    g.set(0, g.cast(sum, elt, "gradient"));
    return success();
  }
  g.set(0, GatherGradOp::create(g.b, g.loc, dataType, g.grad(), op.getIndices(),
                                static_cast<uint64_t>(axis), Value()));
  return success();
}

/// The gradient of scatter_elements and scatter_nd: with `none` each
/// updated entry's gradient goes to its update and the data's gradient
/// there is zero; with `add` both get it.
template <typename ScatterOp, typename GatherOp, typename... Attrs>
static LogicalResult scatterRule(ScatterOp op, GradBuilder &g, Attrs... attrs) {
  StringRef reduction = op.getReduction();
  if (reduction != "none" && reduction != "add")
    return g.unsupported() << op->getName() << " with reduction '" << reduction
                           << "'";
  Value grad = g.grad();
  if (g.needs(0))
    g.set(0, reduction == "add"
                 ? grad
                 : ScatterOp::create(
                       g.b, g.loc, grad, op.getIndices(),
                       g.zeros(shapeOf(op.getUpdates()), eltOf(grad)), attrs...,
                       op.getReductionAttr()));
  if (g.needs(2))
    g.set(2, GatherOp::create(g.b, g.loc, grad, op.getIndices(), attrs...));
  return success();
}

static LogicalResult rule(ScatterElementsOp op, GradBuilder &g) {
  return scatterRule<ScatterElementsOp, GatherElementsOp>(op, g,
                                                          op.getAxisAttr());
}

static LogicalResult rule(ScatterNDOp op, GradBuilder &g) {
  return scatterRule<ScatterNDOp, GatherNDOp>(op, g);
}

/// The gradient of gather_elements and gather_nd: each gathered entry's
/// gradient added into a zero tensor of the data's shape at its index.
static LogicalResult rule(GatherElementsOp op, GradBuilder &g) {
  Value zeros = g.zeros(shapeOf(op.getData()), eltOf(g.grad()));
  g.set(0,
        ScatterElementsOp::create(g.b, g.loc, zeros, op.getIndices(), g.grad(),
                                  op.getAxisAttr(), g.b.getStringAttr("add")));
  return success();
}

static LogicalResult rule(GatherNDOp op, GradBuilder &g) {
  if (op.getBatchDims() != 0)
    return g.unsupported() << "gather_nd with batch_dims " << op.getBatchDims();
  Value zeros = g.zeros(shapeOf(op.getData()), eltOf(g.grad()));
  g.set(0, ScatterNDOp::create(g.b, g.loc, zeros, op.getIndices(), g.grad(),
                               g.b.getStringAttr("add")));
  return success();
}

static LogicalResult rule(GatherGradOp op, GradBuilder &g) {
  // gather_grad is linear in its gradient operand; its adjoint is gather.
  // What it accumulates into passes through.
  g.set(0,
        GatherOp::create(g.b, g.loc, g.grad(), op.getIndices(), op.getAxis()));
  if (op.getInit())
    g.set(2, g.grad());
  return success();
}

void attachDataMovementGradients(MLIRContext *context) {
  attachRules<TopKIndicesOp, CumSumOp, TransposeOp, RotaryOp, ReshapeOp,
              FlattenOp,
              SqueezeOp, UnsqueezeOp, ExpandOp, ConcatOp, SplitOp, SliceOp,
              GatherOp, GatherGradOp, GatherElementsOp, GatherNDOp,
              ScatterElementsOp, ScatterNDOp>(context);
}

} // namespace mlir::memfit::grad
