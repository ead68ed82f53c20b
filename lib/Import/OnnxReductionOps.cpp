//===- OnnxReductionOps.cpp - reduction converters ------------------------===//
//
// ReduceSum, ReduceMean and ReduceMax (their axes an attribute or, from the
// opset that made it one, an input known at compile time), and ArgMax and
// ArgMin, written as a ReduceMax of the positions where the input equals its
// extreme.
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// Reductions: axes are an attribute before `axesInputSince` and an
/// optional input from it on.
template <typename OpTy, int64_t axesInputSince>
LogicalResult convertReduce(NodeContext &n) {
  SmallVector<int64_t> axes;
  if (n.opset >= axesInputSince && n.attr("axes"))
    return n.error() << "axes is an input from opset " << axesInputSince
                     << " on, not an attribute";
  if (n.opset < axesInputSince && n.hasInput(1))
    return n.error() << "axes is an attribute before opset "
                     << axesInputSince << ", not an input";
  if (n.opset >= axesInputSince) {
    if (n.hasInput(1)) {
      FailureOr<SmallVector<int64_t>> a = n.constantInts(1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else if (auto a = n.intsAttr("axes")) {
    axes = *a;
  }
  if (axes.empty() && n.intAttr("noop_with_empty_axes", 0))
    return n.setResults(n.input(0));
  FailureOr<Value> r = n.build<OpTy>(
      n.input(0),
      {n.named("axes", n.b.getDenseI64ArrayAttr(axes)),
       n.named("keepdims", n.b.getBoolAttr(n.intAttr("keepdims", 1)))});
  return failed(r) ? failure() : n.setResults(*r);
}

/// ArgMax and ArgMin: the first (or, with select_last_index, the last)
/// position along `axis` where the input equals its maximum (minimum):
/// positions where it does not are replaced by a value that loses the
/// reduction, and ReduceMax picks the winner (of the negated positions for
/// the first). The minimum is a ReduceMax of an order-reversing map of the
/// input that does not overflow.
template <bool isMax>
LogicalResult convertArgExtreme(NodeContext &n) {
  RankedTensorType type = n.inputType(0);
  int64_t rank = type.getRank();
  FailureOr<int64_t> checked = checkAxis(n, n.intAttr("axis", 0), rank);
  if (failed(checked))
    return failure();
  int64_t axis = *checked;
  bool keepdims = n.intAttr("keepdims", 1);
  bool last = n.intAttr("select_last_index", 0);
  Value x = n.input(0);
  Type elt = type.getElementType();
  // Unsigned values (and bools) compare as i64, whose negation (for the
  // minimum) does not wrap.
  if (elt.isUnsignedInteger(64))
    return n.error() << "ArgMax and ArgMin of " << elt << " are not supported";
  if (elt.isInteger(1) || elt.isUnsignedInteger())
    x = n.buildTyped<CastOp>(
        RankedTensorType::get(type.getShape(), n.b.getI64Type()), x);
  auto reduce = [&](Value v) {
    return n.build<ReduceMaxOp>(
        v, {n.named("axes", n.b.getDenseI64ArrayAttr({axis})),
            n.named("keepdims", n.b.getBoolAttr(true))});
  };
  // The extreme: max(x), or for the minimum the maximum of an order-reversing
  // map: -max(-x) for floats, -1 - max(-1 - x) for integers, which unlike
  // negation does not wrap at the lowest value (-(-2^63) is -2^63).
  auto reverse = [&](Value v) -> FailureOr<Value> {
    if (isa<FloatType>(eltOf(v)))
      return n.build<NegOp>(v);
    return n.build<SubOp>({n.scalar(eltOf(v), -1.0), v});
  };
  FailureOr<Value> extreme = isMax ? FailureOr<Value>(x) : reverse(x);
  if (succeeded(extreme))
    extreme = reduce(*extreme);
  if (succeeded(extreme) && !isMax)
    extreme = reverse(*extreme);
  FailureOr<Value> hit = failed(extreme) ? FailureOr<Value>(failure())
                                         : n.build<EqualOp>({x, *extreme});
  // A NaN is the extreme (the reductions propagate it), as in NumPy.
  if (succeeded(hit) && isa<FloatType>(elt)) {
    FailureOr<Value> nan = n.build<IsNaNOp>(x);
    hit =
        failed(nan) ? FailureOr<Value>(failure()) : n.build<OrOp>({*hit, *nan});
  }
  if (failed(hit))
    return failure();
  // Positions along the axis, shaped to broadcast: (1, ..., d, ..., 1);
  // negated to select the first.
  int64_t size = type.getDimSize(axis);
  if (size > kMaxGatheredPositions)
    return n.error() << "axis " << axis << " has " << size
                     << " positions, more than " << kMaxGatheredPositions;
  SmallVector<int64_t> positions;
  for (int64_t i = 0; i < size; ++i)
    positions.push_back(last ? i : -i);
  SmallVector<int64_t> posShape(rank, 1);
  posShape[axis] = size;
  Value pos = n.constant(DenseElementsAttr::get(
      RankedTensorType::get(posShape, n.b.getI64Type()), ArrayRef(positions)));
  Value loser = n.scalar(n.b.getI64Type(), last ? -1.0 : -double(size));
  FailureOr<Value> r = n.build<WhereOp>({*hit, pos, loser});
  if (succeeded(r))
    r = reduce(*r);
  if (succeeded(r) && !last)
    r = n.build<NegOp>(*r);
  if (failed(r))
    return failure();
  if (!keepdims) {
    SmallVector<int64_t> outShape(type.getShape());
    outShape.erase(outShape.begin() + axis);
    r = n.buildTyped<ReshapeOp>(
        RankedTensorType::get(outShape, n.b.getI64Type()), *r);
  }
  return n.setResults(*r);
}

} // namespace

void onnx_import::populateReductionConverters(OpTable &table) {
  table.onOp("ReduceSum", 13, 1, 2, convertReduce<ReduceSumOp, 13>);
  table.onOp("ReduceMean", 13, 1, 2, convertReduce<ReduceMeanOp, 18>);
  table.onOp("ReduceMax", 13, 1, 2, convertReduce<ReduceMaxOp, 18>);
  table.onOp("ArgMax", 13, 1, 1, convertArgExtreme<true>);
  table.onOp("ArgMin", 13, 1, 1, convertArgExtreme<false>);
}
