//===- ConverterHelpers.h - what the op converter files share ---*- C++ -*-===//
//
// Included by every file of op converters (Onnx*Ops.cpp): the node's
// context, the table, and the helpers that more than one group of ops uses.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_IMPORT_CONVERTERHELPERS_H
#define MEMFIT_LIB_IMPORT_CONVERTERHELPERS_H

#include "NodeContext.h"
#include "OpTable.h"

namespace mlir::memfit::onnx_import {

/// An op whose result type is inferred from its one input.
template <typename OpTy>
LogicalResult convertUnary(NodeContext &n) {
  FailureOr<Value> r = n.build<OpTy>(n.input(0));
  return failed(r) ? failure() : n.setResults(*r);
}

/// An op whose result type is inferred from its two inputs.
template <typename OpTy>
LogicalResult convertBinary(NodeContext &n) {
  FailureOr<Value> r = n.build<OpTy>({n.input(0), n.input(1)});
  return failed(r) ? failure() : n.setResults(*r);
}

/// The most positions that Pad (reflect) gathers and ArgMax or ArgMin
/// number along an axis: their index constants are held in memory.
inline constexpr int64_t kMaxGatheredPositions = int64_t(1) << 24;

/// `axis` in [-rank, rank) mapped to [0, rank), or an error on the node.
inline FailureOr<int64_t> checkAxis(NodeContext &n, int64_t axis,
                                    int64_t rank) {
  if (axis < -rank || axis >= rank)
    return n.error() << "axis " << axis << " is out of range for rank "
                     << rank,
           failure();
  return axis < 0 ? axis + rank : axis;
}

/// A `memfit.slice` of `x` from `starts` to `ends` by `steps` along `axes`.
inline FailureOr<Value> buildSlice(NodeContext &n, Value x,
                                   ArrayRef<int64_t> starts,
                                   ArrayRef<int64_t> ends,
                                   ArrayRef<int64_t> axes,
                                   ArrayRef<int64_t> steps) {
  return n.build<SliceOp>(
      x, {n.named("starts", n.b.getDenseI64ArrayAttr(starts)),
          n.named("ends", n.b.getDenseI64ArrayAttr(ends)),
          n.named("axes", n.b.getDenseI64ArrayAttr(axes)),
          n.named("steps", n.b.getDenseI64ArrayAttr(steps))});
}

/// LayerNormalization's optional Mean and InvStdDev outputs of `input`
/// normalized from `axis`, as its function body computes them in
/// stash_type (float): the mean and 1/sqrt(variance + epsilon) over the
/// normalized dimensions, kept as 1s (OnnxNormalizationOps.cpp).
FailureOr<std::pair<Value, Value>> layerNormStats(NodeContext &n, Value input,
                                                  int64_t axis, float epsilon);

} // namespace mlir::memfit::onnx_import

#endif // MEMFIT_LIB_IMPORT_CONVERTERHELPERS_H
