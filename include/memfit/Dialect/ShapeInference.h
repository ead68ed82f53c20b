//===- ShapeInference.h - shape rules of memfit ops ----------------*- C++ -*-===//
//
// One function per shape rule, shared by the ops' type inference (and so by
// their verifiers and builders) and by the ONNX importer. Each takes static
// shapes and an optional location; on failure it emits a diagnostic there
// (when given) that names the rule that failed.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_SHAPEINFERENCE_H
#define MEMFIT_DIALECT_SHAPEINFERENCE_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::memfit {

using Shape = SmallVector<int64_t, 4>;
using OptLoc = std::optional<Location>;

/// The shape and the element type of `value`, a ranked tensor.
ArrayRef<int64_t> shapeOf(Value value);
Type eltOf(Value value);
/// Row-major strides of `shape`, in elements.
Shape stridesOf(ArrayRef<int64_t> shape);

/// Maps `axis` in [-rank, rank) to [0, rank).
FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, OptLoc loc,
                                 StringRef what = "axis");

/// Numpy-style multidirectional broadcast of all `shapes`.
LogicalResult inferBroadcastShape(ArrayRef<ArrayRef<int64_t>> shapes,
                                  Shape &result, OptLoc loc);

/// Whether `from` broadcasts to exactly `to` (unidirectional).
bool isBroadcastableTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to);

LogicalResult inferMatMulShape(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                               Shape &result, OptLoc loc);
LogicalResult inferGemmShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                             std::optional<ArrayRef<int64_t>> c, bool transA,
                             bool transB, Shape &result, OptLoc loc);
LogicalResult inferTransposeShape(ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> perm, Shape &result,
                                  OptLoc loc);
/// Empty `axes` reduces every dimension.
LogicalResult inferReduceShape(ArrayRef<int64_t> shape, ArrayRef<int64_t> axes,
                               bool keepDims, Shape &result, OptLoc loc);
LogicalResult inferFlattenShape(ArrayRef<int64_t> shape, int64_t axis,
                                Shape &result, OptLoc loc);
/// Empty `axes` removes every dimension of size 1.
LogicalResult inferSqueezeShape(ArrayRef<int64_t> shape, ArrayRef<int64_t> axes,
                                Shape &result, OptLoc loc);
LogicalResult inferUnsqueezeShape(ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> axes, Shape &result,
                                  OptLoc loc);
LogicalResult inferConcatShape(ArrayRef<ArrayRef<int64_t>> shapes, int64_t axis,
                               Shape &result, OptLoc loc);
LogicalResult inferSplitShapes(ArrayRef<int64_t> shape, int64_t axis,
                               ArrayRef<int64_t> sizes,
                               SmallVectorImpl<Shape> &results, OptLoc loc);
LogicalResult inferGatherShape(ArrayRef<int64_t> data,
                               ArrayRef<int64_t> indices, int64_t axis,
                               Shape &result, OptLoc loc);
/// ONNX GatherElements: the indices' shape, of the data's rank, no longer
/// than the data along the axes other than `axis`.
LogicalResult inferGatherElementsShape(ArrayRef<int64_t> data,
                                       ArrayRef<int64_t> indices, int64_t axis,
                                       Shape &result, OptLoc loc);
/// ONNX GatherND: `indices.shape[:-1] + data.shape[batchDims + k:]` with
/// `k = indices.shape[-1]`.
LogicalResult inferGatherNDShape(ArrayRef<int64_t> data,
                                 ArrayRef<int64_t> indices, int64_t batchDims,
                                 Shape &result, OptLoc loc);
/// ONNX ScatterElements: the data's shape; indices and updates of one
/// shape and the data's rank, no longer than the data along the axes other
/// than `axis`; `reduction` none, add, mul, max or min.
LogicalResult inferScatterElementsShape(ArrayRef<int64_t> data,
                                        ArrayRef<int64_t> indices,
                                        ArrayRef<int64_t> updates, int64_t axis,
                                        StringRef reduction, Shape &result,
                                        OptLoc loc);
/// ONNX ScatterND: the data's shape; updates of shape
/// `indices.shape[:-1] + data.shape[k:]` with `k = indices.shape[-1]`.
LogicalResult inferScatterNDShape(ArrayRef<int64_t> data,
                                  ArrayRef<int64_t> indices,
                                  ArrayRef<int64_t> updates,
                                  StringRef reduction, Shape &result,
                                  OptLoc loc);
/// ONNX TopK: the input's shape with `k` (0 to the axis's length) along
/// `axis`.
LogicalResult inferTopKShape(ArrayRef<int64_t> input, int64_t axis, int64_t k,
                             Shape &result, OptLoc loc);
/// ONNX Reshape: `target` may hold one -1 (inferred) and 0 (copy the input
/// dimension, unless `allowZero`).
LogicalResult inferReshapeShape(ArrayRef<int64_t> shape,
                                ArrayRef<int64_t> target, bool allowZero,
                                Shape &result, OptLoc loc);
/// The loss result: labels' shape for reduction "none", else a scalar.
LogicalResult inferLossShape(ArrayRef<int64_t> scores, ArrayRef<int64_t> labels,
                             std::optional<ArrayRef<int64_t>> weights,
                             bool reduced, Shape &result, OptLoc loc);
/// Scaled dot-product attention over query [B, Hq, S, D], key [B, Hkv, T, D]
/// and value [B, Hkv, T, Dv] (Hq a multiple of Hkv), with a mask of rank 4
/// at most that broadcasts to [B, Hq, S, T]: the result [B, Hq, S, Dv] and
/// the log-sum-exp [B, Hq, S].
LogicalResult inferAttentionShapes(ArrayRef<int64_t> query,
                                   ArrayRef<int64_t> key,
                                   ArrayRef<int64_t> value,
                                   std::optional<ArrayRef<int64_t>> mask,
                                   Shape &result, Shape &logsumexp, OptLoc loc);
/// `scale` (or bias) must broadcast to the normalized shape shape[axis:].
LogicalResult verifyNormParam(ArrayRef<int64_t> shape, int64_t axis,
                              ArrayRef<int64_t> param, StringRef name,
                              OptLoc loc);

/// One sliced dimension: the first index taken, the step, how many taken.
struct SliceDim {
  int64_t start = 0;
  int64_t step = 1;
  int64_t size = 0;
};
/// Resolves ONNX Slice arguments (negative and out-of-range starts and ends
/// clamped, repeated axes rejected) into one SliceDim per input dimension.
LogicalResult resolveSlice(ArrayRef<int64_t> shape, ArrayRef<int64_t> starts,
                           ArrayRef<int64_t> ends, ArrayRef<int64_t> axes,
                           ArrayRef<int64_t> steps,
                           SmallVectorImpl<SliceDim> &dims, OptLoc loc);

/// Number of elements of a static shape.
int64_t getNumElements(ArrayRef<int64_t> shape);

/// Prints a shape as "2x16x32" ("scalar" for rank 0).
std::string shapeToString(ArrayRef<int64_t> shape);

/// Bytes of one element as memfit stores it: i1 takes a byte, index 8,
/// other integers and floats their width rounded up to bytes; 0 otherwise.
int64_t elementBytes(Type type);

/// Bytes of a statically shaped tensor.
int64_t tensorBytes(RankedTensorType type);

} // namespace mlir::memfit

#endif // MEMFIT_DIALECT_SHAPEINFERENCE_H
