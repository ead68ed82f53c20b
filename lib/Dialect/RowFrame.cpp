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

std::optional<RowFrame> mlir::memfit::rowFrameOf(Operation *reduction) {
  ArrayRef<int64_t> axes;
  if (auto sum = dyn_cast<ReduceSumOp>(reduction))
    axes = sum.getAxes();
  else if (auto mean = dyn_cast<ReduceMeanOp>(reduction))
    axes = mean.getAxes();
  else if (auto max = dyn_cast<ReduceMaxOp>(reduction))
    axes = max.getAxes();
  else
    return std::nullopt;
  auto type = cast<RankedTensorType>(reduction->getOperand(0).getType());
  if (!isa<FloatType>(type.getElementType()))
    return std::nullopt;
  RowFrame frame;
  frame.full = Shape(type.getShape());
  int64_t rank = type.getRank();
  frame.reduced.assign(rank, axes.empty());
  for (int64_t a : axes) {
    FailureOr<int64_t> axis = normalizeAxis(a, rank, std::nullopt);
    if (failed(axis))
      return std::nullopt;
    frame.reduced[*axis] = true;
  }
  frame.rows = frame.length = 1;
  for (int64_t d = 0; d < rank; ++d)
    (frame.reduced[d] ? frame.length : frame.rows) *= frame.full[d];
  if (frame.length <= 1 || frame.rows == 0)
    return std::nullopt;
  return frame;
}

std::optional<RowFrame> mlir::memfit::rowFrameOf(KernelOp kernel) {
  std::optional<RowFrame> frame;
  for (Operation &op : kernel.getBodyOps()) {
    if (!isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op))
      continue;
    std::optional<RowFrame> own = rowFrameOf(&op);
    if (!own || (frame && !(*frame == *own)))
      return std::nullopt;
    frame = own;
  }
  if (!frame)
    return std::nullopt;
  for (Operation &op : kernel.getBodyOps()) {
    if (isa<ConstantOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op))
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
