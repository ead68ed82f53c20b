//===- OnnxIndexingOps.cpp - gather, scatter, slice, TopK, CumSum ---------===//
//
// The ops that read or write elements at positions: Slice (its starts,
// ends, axes and steps known at compile time), the Gather and Scatter
// family, TopK (its positions, then the values gathered at them) and CumSum.
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// Slice by starts, ends, axes and steps known at compile time.
LogicalResult convertSlice(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> starts = n.constantInts(1, "starts");
  if (failed(starts))
    return failure();
  FailureOr<SmallVector<int64_t>> ends = n.constantInts(2, "ends");
  if (failed(ends))
    return failure();
  SmallVector<int64_t> axes, steps;
  if (n.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = n.constantInts(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (n.hasInput(4)) {
    FailureOr<SmallVector<int64_t>> s = n.constantInts(4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  } else {
    steps.assign(starts->size(), 1);
  }
  FailureOr<Value> r = buildSlice(n, n.input(0), *starts, *ends, axes, steps);
  return failed(r) ? failure() : n.setResults(*r);
}

/// Refuses indices (input 1) known at compile time of which one is outside
/// the axis of the data (input 0) it indexes, [-extent, extent): ONNX leaves
/// such an index undefined and onnxruntime fails the node; memfit names it
/// here (and at run time, for indices computed then, fails the run:
/// docs/robustness.md). `axisOf(p)` is the data axis of the index at flat
/// position p; a splat is checked at the first positions, over which
/// axisOf takes every value it takes.
LogicalResult checkConstantIndices(NodeContext &n,
                                   function_ref<int64_t(int64_t)> axisOf) {
  DenseElementsAttr indices = n.constantInput(1);
  if (!indices || !isa<IntegerType>(indices.getElementType()))
    return success();
  ArrayRef<int64_t> shape = n.inputType(0).getShape();
  int64_t count = indices.getNumElements();
  if (indices.isSplat())
    count = std::min<int64_t>(count, 1024);
  auto values = indices.getValues<APInt>();
  for (int64_t p = 0; p < count; ++p) {
    int64_t i = values[p].getSExtValue();
    int64_t axis = axisOf(p), extent = shape[axis];
    if (i >= -extent && i < extent)
      continue;
    return n.error() << "index " << i << " (element " << p << " of '"
                     << n.node.input(1) << "') is out of range for axis "
                     << axis << " of '" << n.node.input(0) << "' ("
                     << shapeToString(shape) << "): it must be within ["
                     << -extent << ", " << extent - 1 << "]",
           failure();
  }
  return success();
}

/// checkConstantIndices of an op whose indices all index attribute 'axis'.
LogicalResult checkIndicesAlongAxis(NodeContext &n) {
  int64_t rank = n.inputType(0).getRank();
  int64_t axis = n.intAttr("axis", 0);
  axis += axis < 0 ? rank : 0;
  return checkConstantIndices(n, [&](int64_t) { return axis; });
}

/// Gather along 'axis'.
LogicalResult convertGather(NodeContext &n) {
  FailureOr<Value> r = n.build<GatherOp>(
      {n.input(0), n.input(1)},
      {n.named("axis", n.b.getI64IntegerAttr(n.intAttr("axis", 0)))});
  if (failed(r) || failed(checkIndicesAlongAxis(n)))
    return failure();
  return n.setResults(*r);
}

/// GatherElements along 'axis'.
LogicalResult convertGatherElements(NodeContext &n) {
  FailureOr<Value> r = n.build<GatherElementsOp>(
      {n.input(0), n.input(1)},
      {n.named("axis", n.b.getI64IntegerAttr(n.intAttr("axis", 0)))});
  if (failed(r) || failed(checkIndicesAlongAxis(n)))
    return failure();
  return n.setResults(*r);
}

/// checkConstantIndices of GatherND and ScatterND: tuples of the indices'
/// last dimension address the data's axes from `batch`.
LogicalResult checkIndexTuples(NodeContext &n, int64_t batch) {
  int64_t k = n.inputType(1).getShape().back();
  return checkConstantIndices(n, [&](int64_t p) { return batch + p % k; });
}

/// GatherND with 'batch_dims'.
LogicalResult convertGatherND(NodeContext &n) {
  int64_t batch = n.intAttr("batch_dims", 0);
  FailureOr<Value> r = n.build<GatherNDOp>(
      {n.input(0), n.input(1)},
      {n.named("batch_dims", n.b.getI64IntegerAttr(batch))});
  if (failed(r) || failed(checkIndexTuples(n, batch)))
    return failure();
  return n.setResults(*r);
}

/// ScatterElements along 'axis', with its reduction.
LogicalResult convertScatterElements(NodeContext &n) {
  FailureOr<Value> r = n.build<ScatterElementsOp>(
      {n.input(0), n.input(1), n.input(2)},
      {n.named("axis", n.b.getI64IntegerAttr(n.intAttr("axis", 0))),
       n.named("reduction",
               n.b.getStringAttr(n.stringAttr("reduction", "none")))});
  if (failed(r) || failed(checkIndicesAlongAxis(n)))
    return failure();
  return n.setResults(*r);
}

/// ScatterND with its reduction.
LogicalResult convertScatterND(NodeContext &n) {
  FailureOr<Value> r = n.build<ScatterNDOp>(
      {n.input(0), n.input(1), n.input(2)},
      {n.named("reduction",
               n.b.getStringAttr(n.stringAttr("reduction", "none")))});
  if (failed(r) || failed(checkIndexTuples(n, 0)))
    return failure();
  return n.setResults(*r);
}

/// TopK: the positions, then the values gathered at them. Always sorted
/// (`sorted = 0` lets any order do).
LogicalResult convertTopK(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> k = n.constantInts(1, "k");
  if (failed(k))
    return failure();
  if (k->size() != 1)
    return n.error() << "k must hold one value, got " << k->size();
  int64_t axis = n.intAttr("axis", -1);
  FailureOr<Value> indices = n.build<TopKIndicesOp>(
      {n.input(0)},
      {n.named("axis", n.b.getI64IntegerAttr(axis)),
       n.named("k", n.b.getI64IntegerAttr(k->front())),
       n.named("largest", n.b.getBoolAttr(n.intAttr("largest", 1) != 0))});
  if (failed(indices))
    return failure();
  FailureOr<Value> values = n.build<GatherElementsOp>(
      {n.input(0), *indices}, {n.named("axis", n.b.getI64IntegerAttr(axis))});
  if (failed(values))
    return failure();
  return n.setResults(SmallVector<Value>{*values, *indices});
}

/// CumSum along an axis known at compile time.
LogicalResult convertCumSum(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> axis = n.constantInts(1, "axis");
  if (failed(axis))
    return failure();
  int64_t rank = n.inputType(0).getRank();
  if (axis->size() != 1 || (*axis)[0] < -rank || (*axis)[0] >= rank)
    return n.error() << "CumSum's axis must be one value in [" << -rank << ", "
                     << rank << ")",
           failure();
  FailureOr<Value> r = n.build<CumSumOp>(
      {n.input(0)},
      {n.named("axis", n.b.getI64IntegerAttr((*axis)[0])),
       n.named("exclusive", n.b.getBoolAttr(n.intAttr("exclusive", 0) != 0)),
       n.named("reverse", n.b.getBoolAttr(n.intAttr("reverse", 0) != 0))});
  return failed(r) ? failure() : n.setResults(*r);
}

} // namespace

void onnx_import::populateIndexingConverters(OpTable &table) {
  table.onOp("Slice", 13, 3, 5, convertSlice);
  table.onOp("Gather", 13, 2, 2, convertGather);
  table.onOp("GatherElements", 13, 2, 2, convertGatherElements);
  table.onOp("GatherND", 13, 2, 2, convertGatherND);
  table.onOp("ScatterElements", 13, 3, 3, convertScatterElements);
  table.onOp("ScatterND", 13, 3, 3, convertScatterND);
  table.onOp("TopK", 13, 2, 2, convertTopK);
  table.onOp("CumSum", 14, 2, 2, convertCumSum);
}
