//===- RowFrame.h - the shape of a fused row kernel -------------*- C++ -*-===//
//
// A row kernel (memfit-fuse's reductions with their element-wise prologue
// and epilogue) runs one thread block per row: its reductions all read one
// shape and reduce the same axes; its element-wise ops compute either full
// values (that shape) or row values (one element per row). memfit-fuse
// decides with it which kernels merge; the CUDA emitter writes the kernel
// from it.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_ROWFRAME_H
#define MEMFIT_DIALECT_ROWFRAME_H

#include "memfit/Dialect/ShapeInference.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir::memfit {

class KernelOp;

struct RowFrame {
  /// The shape the reductions read.
  Shape full;
  /// Per dimension of `full`: whether the reductions reduce it.
  SmallVector<bool, 4> reduced;
  /// Kept and reduced element counts: blocks and elements per block.
  int64_t rows = 0, length = 0;

  /// `full` with the reduced dimensions as 1 (keepdims).
  Shape keptShape() const;
  /// Whether a value of `shape` holds one element per row and broadcasts
  /// to `full` by row: the keepdims shape, or the kept dimensions alone
  /// when they are the trailing ones of `full` (or a scalar, one row).
  bool isRowShape(ArrayRef<int64_t> shape) const;
  bool operator==(const RowFrame &other) const {
    return full == other.full && reduced == other.reduced;
  }
};

/// Whether `op` computes over rows (RowOpInterface: the reductions, the
/// normalizations, the softmaxes).
bool isRowOp(Operation *op);

/// The frame of a row op over a float value (the dimensions it reduces by
/// RowOpInterface::getReducedDims); nothing for other ops or when it
/// reduces no element or one.
std::optional<RowFrame> rowFrameOf(Operation *op);

/// The frame of a row kernel: its row ops share one frame, its other ops
/// (but constants) are pure element-wise ops whose results are full (the
/// frame's shape) or row values; nothing otherwise. A kernel without row
/// ops has none.
std::optional<RowFrame> rowFrameOf(KernelOp kernel);

} // namespace mlir::memfit

#endif // MEMFIT_DIALECT_ROWFRAME_H
