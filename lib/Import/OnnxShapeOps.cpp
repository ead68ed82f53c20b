//===- OnnxShapeOps.cpp - shape and view converters -----------------------===//
//
// The ops that rearrange or replicate elements without computing on them:
// Identity, Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Expand, Concat
// and Split are memfit ops, their shapes (and shape operands) known at
// compile time; Tile is a Reshape, Expand and Reshape, Pad blocks of
// constants, edges, mirror images or the other end joined with Concat. (The
// Shape op itself, a constant, is in OnnxConstantOps.cpp.)
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// Identity: the input itself.
LogicalResult convertIdentity(NodeContext &n) {
  return n.setResults(n.input(0));
}

/// Transpose: by 'perm', or reversing the dimensions without it.
LogicalResult convertTranspose(NodeContext &n) {
  SmallVector<int64_t> perm;
  if (auto p = n.intsAttr("perm"))
    perm = *p;
  else
    for (int64_t i = n.inputType(0).getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  FailureOr<Value> r = n.build<TransposeOp>(
      n.input(0), {n.named("perm", n.b.getDenseI64ArrayAttr(perm))});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Reshape to a shape known at compile time (0 copies the input's
/// dimension unless allowzero, -1 is inferred).
LogicalResult convertReshape(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> target = n.constantInts(1, "shape");
  if (failed(target))
    return failure();
  Shape shape;
  if (failed(n.rule([&](OptLoc loc) {
        return inferReshapeShape(n.inputType(0).getShape(), *target,
                                 n.intAttr("allowzero", 0) != 0, shape, loc);
      })))
    return failure();
  auto type = RankedTensorType::get(shape, n.inputType(0).getElementType());
  return n.setResults(n.buildTyped<ReshapeOp>(type, n.input(0)));
}

/// Flatten: to 2-D at 'axis'.
LogicalResult convertFlatten(NodeContext &n) {
  FailureOr<Value> r = n.build<FlattenOp>(
      n.input(0),
      {n.named("axis", n.b.getI64IntegerAttr(n.intAttr("axis", 1)))});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Axes of Squeeze/Unsqueeze: an input from opset 13 on.
FailureOr<SmallVector<int64_t>> axesOperand(NodeContext &n) {
  if (!n.hasInput(1))
    return SmallVector<int64_t>();
  return n.constantInts(1, "axes");
}

/// Squeeze and Unsqueeze, by the axes of their second input.
template <typename OpTy>
LogicalResult convertSqueezeLike(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> axes = axesOperand(n);
  if (failed(axes))
    return failure();
  FailureOr<Value> r = n.build<OpTy>(
      n.input(0), {n.named("axes", n.b.getDenseI64ArrayAttr(*axes))});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Expand: the input broadcast to (and with) a shape known at compile time.
LogicalResult convertExpand(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> shape = n.constantInts(1, "shape");
  if (failed(shape))
    return failure();
  Shape out;
  if (failed(n.rule([&](OptLoc loc) {
        return inferBroadcastShape({n.inputType(0).getShape(), *shape}, out,
                                   loc);
      })))
    return failure();
  auto type = RankedTensorType::get(out, n.inputType(0).getElementType());
  return n.setResults(n.buildTyped<ExpandOp>(type, n.input(0)));
}

/// Concat of the inputs along 'axis'.
LogicalResult convertConcat(NodeContext &n) {
  const onnx::AttributeProto *axis = n.attr("axis");
  if (!axis)
    return n.error() << "missing attribute 'axis'";
  SmallVector<Value> inputs;
  for (int64_t i = 0; i < n.numInputs(); ++i)
    inputs.push_back(n.input(i));
  FailureOr<Value> r = n.build<ConcatOp>(
      inputs, {n.named("axis", n.b.getI64IntegerAttr(axis->i()))});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Split along 'axis', by sizes known at compile time or in equal parts.
LogicalResult convertSplit(NodeContext &n) {
  int64_t axis = n.intAttr("axis", 0);
  RankedTensorType type = n.inputType(0);
  FailureOr<int64_t> a = failure();
  if (failed(n.rule([&](OptLoc loc) {
        a = normalizeAxis(axis, type.getRank(), loc);
        return LogicalResult(a);
      })))
    return failure();
  SmallVector<int64_t> sizes;
  if (n.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> s = n.constantInts(1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else {
    // Equal parts; from opset 18 num_outputs may leave a smaller last part.
    bool hasNum = n.opset >= 18 && n.attr("num_outputs");
    int64_t parts = hasNum ? n.intAttr("num_outputs", 1) : n.numOutputs();
    if (parts <= 0)
      return n.error() << "cannot split into " << parts << " parts";
    if (hasNum && parts != n.numOutputs())
      return n.error() << "num_outputs is " << parts << " but the node has "
                       << n.numOutputs() << " outputs";
    int64_t dim = type.getDimSize(*a);
    if (!hasNum && dim % parts != 0)
      return n.error() << "cannot split dimension " << *a << " of size "
                       << dim << " into " << parts
                       << " equal parts (give the split sizes)";
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  FailureOr<SmallVector<Value>> r = n.buildMulti<SplitOp>(
      n.input(0), {n.named("axis", n.b.getI64IntegerAttr(axis)),
                   n.named("sizes", n.b.getDenseI64ArrayAttr(sizes))});
  return failed(r) ? failure() : n.setResults(*r);
}

//===----------------------------------------------------------------------===//
// Written as other memfit ops
//===----------------------------------------------------------------------===//

/// Tile: x of shape (d0, d1, ...) as (1, d0, 1, d1, ...), expanded to
/// (r0, d0, r1, d1, ...) and reshaped to (r0*d0, r1*d1, ...).
LogicalResult convertTile(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> repeats = n.constantInts(1, "repeats");
  if (failed(repeats))
    return failure();
  RankedTensorType type = n.inputType(0);
  if (static_cast<int64_t>(repeats->size()) != type.getRank())
    return n.error() << "repeats has " << repeats->size()
                     << " values for an input of rank " << type.getRank();
  SmallVector<int64_t> split, expanded, out;
  for (auto [d, r] : llvm::zip(type.getShape(), *repeats)) {
    int64_t tiled;
    if (r < 0)
      return n.error() << "repeats must not be negative, got " << r;
    if (llvm::MulOverflow(r, d, tiled))
      return n.error() << "repeating a dimension of " << d << " " << r
                       << " times overflows";
    split.append({1, d});
    expanded.append({r, d});
    out.push_back(tiled);
  }
  if (!checkedNumElements(out))
    return n.error() << "the tiled shape " << shapeToString(out)
                     << " has more elements than 64-bit sizes can count";
  Type elt = type.getElementType();
  Value v =
      n.buildTyped<ReshapeOp>(RankedTensorType::get(split, elt), n.input(0));
  v = n.buildTyped<ExpandOp>(RankedTensorType::get(expanded, elt), v);
  return n.setResults(
      n.buildTyped<ReshapeOp>(RankedTensorType::get(out, elt), v));
}

/// Pad (opsets 13, 18's axes, 19's wrap): per padded axis, what goes
/// before and after is a constant block (constant), the first or last
/// position expanded (edge), the mirror image without the edge gathered
/// (reflect), or the other end sliced (wrap; pads up to the axis' size),
/// joined with Concat; negative pads crop with Slice.
LogicalResult convertPad(NodeContext &n) {
  std::string mode = n.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" &&
      mode != "wrap")
    return n.error() << "mode '" << mode << "' is not one of constant, "
                     << "edge, reflect, wrap";
  FailureOr<SmallVector<int64_t>> pads = n.constantInts(1, "pads");
  if (failed(pads))
    return failure();
  RankedTensorType type = n.inputType(0);
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes;
  if (n.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = n.constantInts(3, "axes");
    if (failed(a))
      return failure();
    for (int64_t axis : *a) {
      FailureOr<int64_t> checked = checkAxis(n, axis, rank);
      if (failed(checked))
        return failure();
      axes.push_back(*checked);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  int64_t count = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads->size()) != 2 * count)
    return n.error() << "pads has " << pads->size() << " values, expected "
                     << 2 * count;
  Type elt = type.getElementType();
  Attribute fill;
  if (n.hasInput(2) && mode == "constant") {
    FailureOr<Attribute> v = n.constantScalar(2, "constant_value");
    if (failed(v))
      return failure();
    // The blocks are constants of the input's element type.
    if (auto typed = dyn_cast<TypedAttr>(*v); !typed || typed.getType() != elt)
      return n.error() << "constant_value must be of the input's element "
                       << "type " << elt << " (inputs: " << n.describeInputs()
                       << ")";
    fill = *v;
  } else {
    fill = n.b.getZeroAttr(elt);
  }
  Value x = n.input(0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t axis = axes[k], before = (*pads)[k], after = (*pads)[k + count];
    Shape shape(shapeOf(x));
    int64_t size = shape[axis];
    // Crop first: negative pads remove positions, at most the axis' size.
    if (before < -size || after < -size)
      return n.error() << "pads crop axis " << axis << " of size " << size
                       << " by more than its size";
    if (before < 0 || after < 0) {
      int64_t start = std::max<int64_t>(-before, 0);
      int64_t end = size - std::max<int64_t>(-after, 0);
      if (end < start)
        return n.error() << "pads crop axis " << axis << " of size " << size
                         << " below zero";
      FailureOr<Value> s = buildSlice(n, x, {start}, {end}, {axis}, {1});
      if (failed(s))
        return failure();
      x = *s;
      size = end - start;
      shape[axis] = size;
      before = std::max<int64_t>(before, 0);
      after = std::max<int64_t>(after, 0);
    }
    if (!before && !after)
      continue;
    int64_t padded;
    if (llvm::AddOverflow(size, before, padded) ||
        llvm::AddOverflow(padded, after, padded))
      return n.error() << "padding axis " << axis << " of size " << size
                       << " by " << before << " and " << after << " overflows";
    Shape paddedShape = shape;
    paddedShape[axis] = padded;
    if (!checkedNumElements(paddedShape))
      return n.error() << "the padded shape " << shapeToString(paddedShape)
                       << " has more elements than 64-bit sizes can count";
    if (mode != "constant" && size == 0)
      return n.error() << "mode '" << mode << "' cannot pad axis " << axis
                       << " of size 0";
    if (mode == "reflect" && (before >= size || after >= size))
      return n.error() << "mode 'reflect' pads axis " << axis << " of size "
                       << size << " by more than " << size - 1;
    if (mode == "wrap" && (before > size || after > size))
      return n.error() << "mode 'wrap' pads axis " << axis << " of size "
                       << size << " by more than its size";
    // Positions [start, start + length) of x along the axis.
    auto slice = [&](int64_t start, int64_t length) {
      return buildSlice(n, x, {start}, {start + length}, {axis}, {1});
    };
    auto block = [&](int64_t length, bool atEnd) -> FailureOr<Value> {
      Shape blockShape = shape;
      blockShape[axis] = length;
      auto blockType = RankedTensorType::get(blockShape, elt);
      if (mode == "constant")
        return n.constant(DenseElementsAttr::get(blockType, fill));
      if (mode == "wrap") // the other end
        return slice(atEnd ? 0 : size - length, length);
      if (mode == "edge") { // the end position, expanded
        FailureOr<Value> end = slice(atEnd ? size - 1 : 0, 1);
        if (failed(end))
          return failure();
        return n.buildTyped<ExpandOp>(blockType, *end);
      }
      // reflect: the mirror image without the edge, gathered: before the
      // input positions length, ..., 1; after it size-2, size-3, ...
      if (length > kMaxGatheredPositions)
        return n.error() << "mode 'reflect' pads axis " << axis << " by "
                         << length << ", more than " << kMaxGatheredPositions
                         << " positions",
               failure();
      SmallVector<int64_t> positions;
      for (int64_t i = 0; i < length; ++i)
        positions.push_back(atEnd ? size - 2 - i : length - i);
      auto indexType = RankedTensorType::get({length}, n.b.getI64Type());
      Value indices =
          n.constant(DenseElementsAttr::get(indexType, ArrayRef(positions)));
      return n.build<GatherOp>({x, indices},
                               {n.named("axis", n.b.getI64IntegerAttr(axis))});
    };
    SmallVector<Value> parts;
    if (before) {
      FailureOr<Value> b = block(before, false);
      if (failed(b))
        return failure();
      parts.push_back(*b);
    }
    parts.push_back(x);
    if (after) {
      FailureOr<Value> a = block(after, true);
      if (failed(a))
        return failure();
      parts.push_back(*a);
    }
    FailureOr<Value> joined = n.build<ConcatOp>(
        parts, {n.named("axis", n.b.getI64IntegerAttr(axis))});
    if (failed(joined))
      return failure();
    x = *joined;
  }
  return n.setResults(x);
}

} // namespace

void onnx_import::populateShapeConverters(OpTable &table) {
  table.onOp("Identity", 13, 1, 1, convertIdentity);
  table.onOp("Transpose", 13, 1, 1, convertTranspose);
  table.onOp("Reshape", 13, 2, 2, convertReshape);
  table.onOp("Flatten", 13, 1, 1, convertFlatten);
  table.onOp("Squeeze", 13, 1, 2, convertSqueezeLike<SqueezeOp>);
  table.onOp("Unsqueeze", 13, 2, 2, convertSqueezeLike<UnsqueezeOp>);
  table.onOp("Expand", 13, 2, 2, convertExpand);
  table.onOp("Concat", 13, 1, kVariadic, convertConcat);
  table.onOp("Split", 13, 1, 2, convertSplit);
  table.onOp("Tile", 13, 2, 2, convertTile);
  table.onOp("Pad", 13, 2, 4, convertPad);
}
