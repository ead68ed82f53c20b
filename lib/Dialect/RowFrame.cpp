//===- RowFrame.cpp - the shape of a fused row kernel ---------------------===//

#include "memfit/Dialect/RowFrame.h"

#include "memfit/Dialect/MemfitOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::memfit;

Shape RowFrame::keptShape() const {
  Shape kept(full);
  for (auto [d, r] : llvm::enumerate(reduced))
    if (r)
      kept[d] = 1;
  return kept;
}

bool RowFrame::isRowShape(ArrayRef<int64_t> shape) const {
  if (getNumElements(shape) != rows)
    return false;
  if (shape == ArrayRef<int64_t>(keptShape()))
    return true;
  // The kept dimensions alone: right-aligned broadcasting puts them where
  // they are in `full` only when no reduced dimension follows them.
  size_t rank = full.size();
  if (shape.size() > rank)
    return false;
  for (size_t d = 0; d < rank; ++d)
    if (d < rank - shape.size()
            ? !reduced[d] && full[d] != 1
            : reduced[d] || shape[d - (rank - shape.size())] != full[d])
      return false;
  return true;
}

bool mlir::memfit::isRowOp(Operation *op) { return isa<RowOpInterface>(op); }

std::optional<RowFrame> mlir::memfit::rowFrameOf(Operation *op) {
  auto rowOp = dyn_cast<RowOpInterface>(op);
  if (!rowOp)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  FailureOr<SmallVector<int64_t>> dims = rowOp.getReducedDims();
  if (failed(dims))
    return std::nullopt;
  RowFrame frame;
  frame.full = Shape(type.getShape());
  frame.reduced.assign(type.getRank(), false);
  for (int64_t d : *dims)
    frame.reduced[d] = true;
  frame.rows = frame.length = 1;
  for (int64_t d = 0; d < type.getRank(); ++d)
    (frame.reduced[d] ? frame.length : frame.rows) *= frame.full[d];
  if (frame.length <= 1 || frame.rows == 0)
    return std::nullopt;
  return frame;
}

std::optional<RowFrame> mlir::memfit::rowFrameOf(KernelOp kernel) {
  std::optional<RowFrame> frame;
  for (Operation &op : kernel.getBodyOps()) {
    if (!isRowOp(&op))
      continue;
    std::optional<RowFrame> own = rowFrameOf(&op);
    if (!own || (frame && !(*frame == *own)))
      return std::nullopt;
    frame = own;
  }
  if (!frame)
    return std::nullopt;
  for (Operation &op : kernel.getBodyOps()) {
    if (isa<ConstantOp>(op) || isRowOp(&op))
      continue;
    auto opClass = dyn_cast<OpClassInterface>(&op);
    if (!opClass || opClass.getOpClass() != OpClass::ElementWise ||
        !isPure(&op) || op.getNumResults() != 1)
      return std::nullopt;
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(op.getResult(0).getType()).getShape();
    if (shape != ArrayRef<int64_t>(frame->full) && !frame->isRowShape(shape))
      return std::nullopt;
  }
  return frame;
}
