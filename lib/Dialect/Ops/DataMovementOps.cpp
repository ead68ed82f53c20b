//===- DataMovementOps.cpp - views, copies, gathers, scatters -------------===//
//
// Inference, verifiers and folders of the data-movement ops: the views,
// transpose, concat, split, slice, the gathers and scatters, cumsum,
// topk_indices, expand, and gather_grad, the adjoint of gather. A folder
// re-indexes a constant operand (remapElements of ConstantFold.h).
//
// The ops are defined in include/memfit/Dialect/Ops/DataMovementOps.td.
//
//===----------------------------------------------------------------------===//

#include "ConstantFold.h"
#include "OpHelpers.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::constfold;

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferTransposeShape(shapeOf(adaptor.getInput()),
                                 adaptor.getPerm(), shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

LogicalResult RotaryOp::verify() {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  if (shape.empty() || shape.back() % 2 != 0)
    return emitOpError() << "rotates halves of a last dimension of even "
                            "size, not "
                         << (shape.empty() ? std::string("a scalar")
                                           : shapeToString(shape));
  for (Value table : {getCos(), getSin()})
    if (eltOf(table) != eltOf(getInput()) ||
        !isBroadcastableTo(shapeOf(table), shape))
      return emitOpError() << "cos and sin must broadcast to the input "
                           << getInput().getType() << ", not "
                           << table.getType();
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  bool identity = getInput().getType() == getType();
  for (auto [i, p] : llvm::enumerate(perm))
    identity &= static_cast<int64_t>(i) == p;
  if (identity)
    return getInput();
  DenseElementsAttr in = getDense(adaptor.getInput());
  if (!in)
    return {};
  SmallVector<int64_t> strides = stridesOf(shapeOf(getInput()));
  return remapElements(in, getType(), [&](ArrayRef<int64_t> idx) {
    int64_t linear = 0;
    for (auto [i, p] : llvm::enumerate(perm))
      linear += idx[i] * strides[p];
    return linear;
  });
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << in << " (" << in.getNumElements() << " elements) to " << out
           << " (" << out.getNumElements() << " elements)";
  return success();
}

LogicalResult StridedViewOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  ArrayRef<int64_t> strides = getStrides();
  if (static_cast<int64_t>(strides.size()) != out.getRank())
    return emitOpError("has ") << strides.size() << " strides for a result of "
                               << "rank " << out.getRank();
  // (ODS returns the I64Attr offset as uint64_t.)
  int64_t offset = static_cast<int64_t>(getOffset());
  if (offset < 0 || llvm::any_of(strides, [](int64_t s) { return s < 0; }))
    return emitOpError("offset and strides must not be negative");
  int64_t last = offset;
  if (out.getNumElements() > 0)
    for (auto [size, stride] : llvm::zip(out.getShape(), strides))
      last += (size - 1) * stride;
  if (out.getNumElements() > 0 && last >= in.getNumElements())
    return emitOpError("reads element ")
           << last << " of an input of " << in.getNumElements() << " elements";
  for (Operation *user : getResult().getUsers())
    if (!isa<MatMulOp, GemmOp, KernelOp>(user))
      return emitOpError("is read by '")
             << user->getName()
             << "': only memfit.matmul and memfit.gemm (their library "
                "call's strides) and memfit.kernel (its code's) read a "
                "strided view";
  return success();
}

/// Reshape-like folds: identity, or a constant with a new shape (of the
/// same element type: DenseElementsAttr::reshape keeps it).
static OpFoldResult foldReshapeLike(Value input, Attribute constant,
                                    RankedTensorType type) {
  if (input.getType() == type)
    return input;
  if (DenseElementsAttr in = getDense(constant, type.getElementType()))
    return in.reshape(type);
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  return foldReshapeLike(getInput(), adaptor.getInput(), getType());
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferFlattenShape(shapeOf(adaptor.getInput()), adaptor.getAxis(),
                               shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferSqueezeShape(shapeOf(adaptor.getInput()), adaptor.getAxes(),
                               shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

OpFoldResult SqueezeOp::fold(FoldAdaptor adaptor) {
  return foldReshapeLike(getInput(), adaptor.getInput(), getType());
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferUnsqueezeShape(shapeOf(adaptor.getInput()),
                                 adaptor.getAxes(), shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

OpFoldResult UnsqueezeOp::fold(FoldAdaptor adaptor) {
  return foldReshapeLike(getInput(), adaptor.getInput(), getType());
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : adaptor.getInputs())
    shapes.push_back(shapeOf(v));
  Shape shape;
  if (failed(inferConcatShape(shapes, adaptor.getAxis(), shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInputs().front()));
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  Type elt = eltOf(getInputs().front());
  for (auto [i, v] : llvm::enumerate(getInputs()))
    if (failed(verifyElementTypes(*this, elt, "input 0's",
                                  {{"input " + std::to_string(i), v}})))
      return failure();
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  RankedTensorType type = getType();
  if (type.getNumElements() > kMaxFoldElements)
    return {};
  int64_t axis = *normalizeAxis(getAxis(), type.getRank(), std::nullopt);
  // Walk the result in row-major order: each input contributes a run of
  // `dim * inner` elements per outer index.
  int64_t inner = getNumElements(type.getShape().drop_front(axis + 1));
  int64_t outer = getNumElements(type.getShape().take_front(axis));
  SmallVector<SmallVector<Attribute>> inputs;
  for (Attribute a : adaptor.getInputs()) {
    DenseElementsAttr d = getDense(a, type.getElementType());
    if (!d)
      return {};
    inputs.emplace_back(d.getValues<Attribute>());
  }
  SmallVector<Attribute> out;
  out.reserve(type.getNumElements());
  for (int64_t o = 0; o < outer; ++o)
    for (auto [k, v] : llvm::enumerate(getInputs())) {
      int64_t run = shapeOf(v)[axis] * inner;
      llvm::append_range(out, ArrayRef(inputs[k]).slice(o * run, run));
    }
  return DenseElementsAttr::get(type, out);
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  SmallVector<Shape> shapes;
  if (failed(inferSplitShapes(shapeOf(adaptor.getInput()), adaptor.getAxis(),
                              adaptor.getSizes(), shapes, loc)))
    return failure();
  for (const Shape &s : shapes)
    (void)pushTensor(types, s, eltOf(adaptor.getInput()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  SmallVector<SliceDim> dims;
  if (failed(resolveSlice(shapeOf(adaptor.getInput()), adaptor.getStarts(),
                          adaptor.getEnds(), adaptor.getAxes(),
                          adaptor.getSteps(), dims, loc)))
    return failure();
  Shape shape;
  for (const SliceDim &d : dims)
    shape.push_back(d.size);
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  SmallVector<SliceDim> dims;
  if (failed(resolveSlice(shapeOf(getInput()), getStarts(), getEnds(),
                          getAxes(), getSteps(), dims, std::nullopt)))
    return {};
  // Only a slice that takes every element in order is the identity (a
  // reversing slice has the same type but not the same value).
  if (getInput().getType() == getType() &&
      llvm::all_of(llvm::zip(dims, shapeOf(getInput())), [](auto p) {
        auto [d, size] = p;
        return d.start == 0 && d.step == 1 && d.size == size;
      }))
    return getInput();
  DenseElementsAttr in = getDense(adaptor.getInput());
  if (!in)
    return {};
  SmallVector<int64_t> strides = stridesOf(shapeOf(getInput()));
  return remapElements(in, getType(), [&](ArrayRef<int64_t> idx) {
    int64_t linear = 0;
    for (auto [i, d] : llvm::enumerate(dims))
      linear += (d.start + idx[i] * d.step) * strides[i];
    return linear;
  });
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferGatherShape(shapeOf(adaptor.getData()),
                              shapeOf(adaptor.getIndices()), adaptor.getAxis(),
                              shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getData()));
}

/// The values of constant `indices`, the n-th into an axis of `extentOf(n)`
/// entries, made non-negative; none when one is out of range (that is left
/// to the kernel, which reads it as zero) or the indices are not of an
/// index type (i32, i64: read as APInt only then).
static std::optional<SmallVector<int64_t>>
constantIndices(DenseElementsAttr indices,
                function_ref<int64_t(int64_t)> extentOf) {
  Type elt = indices.getElementType();
  if (!elt.isSignlessInteger(32) && !elt.isSignlessInteger(64))
    return std::nullopt;
  SmallVector<int64_t> values;
  for (auto [n, v] : llvm::enumerate(indices.getValues<APInt>())) {
    int64_t i = v.getSExtValue(), extent = extentOf(n);
    if (i < -extent || i >= extent)
      return std::nullopt;
    values.push_back(i < 0 ? i + extent : i);
  }
  return values;
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = getDense(adaptor.getData());
  DenseElementsAttr indices = getDense(adaptor.getIndices());
  if (!data || !indices)
    return {};
  ArrayRef<int64_t> dataShape = shapeOf(getData());
  int64_t axis = *normalizeAxis(getAxis(), dataShape.size(), std::nullopt);
  std::optional<SmallVector<int64_t>> idxValues =
      constantIndices(indices, [&](int64_t) { return dataShape[axis]; });
  if (!idxValues)
    return {};
  SmallVector<int64_t> strides = stridesOf(dataShape);
  SmallVector<int64_t> idxStrides = stridesOf(shapeOf(getIndices()));
  int64_t idxRank = shapeOf(getIndices()).size();
  return remapElements(data, getType(), [&](ArrayRef<int64_t> idx) {
    int64_t linear = 0, which = 0;
    for (int64_t k = 0; k < idxRank; ++k)
      which += idx[axis + k] * idxStrides[k];
    for (int64_t d = 0; d < static_cast<int64_t>(dataShape.size()); ++d) {
      int64_t pos = d < axis    ? idx[d]
                    : d == axis ? (*idxValues)[which]
                                : idx[d - 1 + idxRank];
      linear += pos * strides[d];
    }
    return linear;
  });
}

LogicalResult CumSumOp::verify() {
  int64_t rank = getType().getRank();
  auto axis = static_cast<int64_t>(getAxis());
  if (rank == 0 || axis < -rank || axis >= rank)
    return emitOpError("axis ") << axis << " is out of range for rank " << rank;
  return success();
}

OpFoldResult CumSumOp::fold(FoldAdaptor adaptor) {
  Type elt = getType().getElementType();
  DenseElementsAttr in = getDense(adaptor.getInput(), elt);
  if (!in || in.getNumElements() > kMaxFoldElements || !elt.isIntOrFloat())
    return {};
  ArrayRef<int64_t> shape = getType().getShape();
  int64_t rank = shape.size();
  if (rank == 0)
    return {};
  auto axis = static_cast<int64_t>(getAxis());
  if (axis < 0)
    axis += rank;
  int64_t stride = stridesOf(shape)[axis], extent = shape[axis];
  int64_t n = in.getNumElements();
  auto walk = [&](auto values, auto zero, auto make) -> Attribute {
    using T = decltype(zero);
    SmallVector<T> out(n, zero);
    for (int64_t i = 0; i < n; ++i) {
      if ((i / stride) % extent != 0)
        continue; // each line once, from its first element
      T acc = zero;
      for (int64_t k = 0; k < extent; ++k) {
        int64_t j = getReverse() ? extent - 1 - k : k;
        int64_t at = i + j * stride;
        if (getExclusive()) {
          out[at] = acc;
          acc = acc + values[at];
        } else {
          acc = acc + values[at];
          out[at] = acc;
        }
      }
    }
    return make(out);
  };
  if (isa<FloatType>(elt)) {
    SmallVector<APFloat> values(in.getValues<APFloat>());
    APFloat zero = APFloat::getZero(cast<FloatType>(elt).getFloatSemantics());
    return walk(values, zero, [&](ArrayRef<APFloat> out) {
      return DenseElementsAttr::get(getType(), out);
    });
  }
  SmallVector<APInt> values(in.getValues<APInt>());
  APInt zero(elt.getIntOrFloatBitWidth(), 0);
  return walk(values, zero, [&](ArrayRef<APInt> out) {
    return DenseElementsAttr::get(getType(), out);
  });
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferGatherElementsShape(shapeOf(adaptor.getData()),
                                      shapeOf(adaptor.getIndices()),
                                      adaptor.getAxis(), shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getData()));
}

OpFoldResult GatherElementsOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = getDense(adaptor.getData());
  DenseElementsAttr indices = getDense(adaptor.getIndices());
  if (!data || !indices)
    return {};
  ArrayRef<int64_t> dataShape = shapeOf(getData());
  int64_t axis = *normalizeAxis(getAxis(), dataShape.size(), std::nullopt);
  std::optional<SmallVector<int64_t>> values =
      constantIndices(indices, [&](int64_t) { return dataShape[axis]; });
  if (!values)
    return {};
  SmallVector<int64_t> strides = stridesOf(dataShape);
  SmallVector<int64_t> idxStrides = stridesOf(shapeOf(getIndices()));
  return remapElements(data, getType(), [&](ArrayRef<int64_t> idx) {
    int64_t linear = 0, which = 0;
    for (auto [d, i] : llvm::enumerate(idx))
      which += i * idxStrides[d];
    for (auto [d, i] : llvm::enumerate(idx))
      linear +=
          (static_cast<int64_t>(d) == axis ? (*values)[which] : i) * strides[d];
    return linear;
  });
}

/// A scatter's result type: the data's, when the updates have its element
/// type, `shapeRule` accepts the shapes and booleans take no reduction.
template <typename Adaptor>
static LogicalResult
inferScatter(OptLoc loc, StringRef name, Adaptor adaptor,
             function_ref<LogicalResult(Shape &)> shapeRule,
             SmallVectorImpl<Type> &types) {
  Type elt = eltOf(adaptor.getData());
  if (eltOf(adaptor.getUpdates()) != elt)
    return emitOptionalError(loc, name,
                             " needs updates of the data's "
                             "element type");
  Shape shape;
  if (failed(shapeRule(shape)))
    return failure();
  if (elt.isInteger(1) && adaptor.getReduction() != "none")
    return emitOptionalError(loc, name, " of booleans takes no reduction");
  return pushTensor(types, shape, elt);
}

LogicalResult
ScatterElementsOp::inferReturnTypes(MLIRContext *, OptLoc loc, Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  return inferScatter(
      loc, "scatter_elements", adaptor,
      [&](Shape &shape) {
        return inferScatterElementsShape(
            shapeOf(adaptor.getData()), shapeOf(adaptor.getIndices()),
            shapeOf(adaptor.getUpdates()), adaptor.getAxis(),
            adaptor.getReduction(), shape, loc);
      },
      types);
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferScatter(
      loc, "scatter_nd", adaptor,
      [&](Shape &shape) {
        return inferScatterNDShape(
            shapeOf(adaptor.getData()), shapeOf(adaptor.getIndices()),
            shapeOf(adaptor.getUpdates()), adaptor.getReduction(), shape, loc);
      },
      types);
}

LogicalResult TopKIndicesOp::inferReturnTypes(MLIRContext *ctx, OptLoc loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferTopKShape(shapeOf(adaptor.getInput()), adaptor.getAxis(),
                            adaptor.getK(), shape, loc)))
    return failure();
  return pushTensor(types, shape, IntegerType::get(ctx, 64));
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferGatherNDShape(shapeOf(adaptor.getData()),
                                shapeOf(adaptor.getIndices()),
                                adaptor.getBatchDims(), shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getData()));
}

OpFoldResult GatherNDOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = getDense(adaptor.getData());
  DenseElementsAttr indices = getDense(adaptor.getIndices());
  if (!data || !indices)
    return {};
  ArrayRef<int64_t> dataShape = shapeOf(getData());
  ArrayRef<int64_t> idxShape = shapeOf(getIndices());
  int64_t b = getBatchDims(), k = idxShape.back();
  int64_t q = idxShape.size();
  std::optional<SmallVector<int64_t>> values =
      constantIndices(indices, [&](int64_t n) { return dataShape[b + n % k]; });
  if (!values)
    return {};
  SmallVector<int64_t> strides = stridesOf(dataShape);
  SmallVector<int64_t> idxStrides = stridesOf(idxShape);
  return remapElements(data, getType(), [&](ArrayRef<int64_t> idx) {
    int64_t tuple = 0, linear = 0;
    for (int64_t t = 0; t < q - 1; ++t)
      tuple += idx[t] * idxStrides[t];
    for (int64_t d = 0; d < b; ++d)
      linear += idx[d] * strides[d];
    for (int64_t j = 0; j < k; ++j)
      linear += (*values)[tuple + j] * strides[b + j];
    for (int64_t u = b + k; u < static_cast<int64_t>(dataShape.size()); ++u)
      linear += idx[q - 1 + u - b - k] * strides[u];
    return linear;
  });
}

LogicalResult ExpandOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  Shape shape;
  if (failed(inferBroadcastShape({in.getShape(), out.getShape()}, shape,
                                 std::nullopt)))
    return emitOpError("input shape ")
           << shapeToString(in.getShape()) << " does not broadcast to "
           << shapeToString(out.getShape());
  if (ArrayRef<int64_t>(shape) != out.getShape())
    return emitOpError("result shape ")
           << shapeToString(out.getShape()) << " is not the broadcast "
           << shapeToString(shape) << " of the input shape";
  return success();
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  DenseElementsAttr in = getDense(adaptor.getInput());
  if (!in)
    return {};
  ArrayRef<int64_t> inShape = shapeOf(getInput());
  SmallVector<int64_t> strides = stridesOf(inShape);
  return remapElements(in, getType(), [&](ArrayRef<int64_t> idx) {
    return broadcastIndex(inShape, strides, idx);
  });
}

LogicalResult GatherGradOp::verify() {
  auto grad = cast<RankedTensorType>(getGrad().getType());
  auto indices = cast<RankedTensorType>(getIndices().getType());
  RankedTensorType result = getType();
  if (failed(verifyElementTypes(*this, result.getElementType(),
                                "the result's",
                                {{"gradient", getGrad()}, {"init", getInit()}})))
    return failure();
  int64_t rank = result.getRank();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ") << axis << " out of range for rank " << rank;
  // grad is result.shape[:axis] + indices.shape + result.shape[axis+1:].
  SmallVector<int64_t> expected(result.getShape().take_front(axis));
  llvm::append_range(expected, indices.getShape());
  llvm::append_range(expected, result.getShape().drop_front(axis + 1));
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("gradient shape ") << grad
           << " does not match gather of the result along axis " << axis
           << " by indices " << indices;
  if (Value init = getInit(); init && init.getType() != result)
    return emitOpError("accumulates into ")
           << init.getType() << " but its result is " << result;
  return success();
}
