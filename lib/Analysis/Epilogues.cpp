//===- Epilogues.cpp - kernels a contraction can compute ------------------===//
//
// See Epilogues.h.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/Epilogues.h"

#include "memfit/Analysis/MemoryPlan.h"

using namespace mlir;
using namespace mlir::memfit;

Operation *mlir::memfit::soleBodyOp(KernelOp kernel) {
  auto ops = kernel.getBodyOps();
  if (!llvm::hasSingleElement(ops))
    return nullptr;
  Operation *op = &*ops.begin();
  Operation *yield = kernel.getBodyBlock().getTerminator();
  if (op->getNumResults() != 1 || yield->getNumOperands() != 1 ||
      yield->getOperand(0) != op->getResult(0))
    return nullptr;
  return op;
}

bool mlir::memfit::sumsRows(KernelOp kernel) {
  auto sum = dyn_cast_or_null<ReduceSumOp>(soleBodyOp(kernel));
  if (!sum || kernel.getInputs().size() != 1 ||
      sum.getInput() != kernel.getBodyBlock().getArgument(0))
    return false;
  auto type = cast<RankedTensorType>(kernel.getInputs()[0].getType());
  auto result = cast<RankedTensorType>(kernel.getResult(0).getType());
  int64_t rank = type.getRank();
  if (rank < 2 || result.getElementType() != type.getElementType() ||
      result.getNumElements() != type.getShape().back())
    return false;
  // Every leading axis summed, or of extent 1 (autodiff sums a bias's
  // broadcast over [1, 128, 768] over axis 1 alone); the last one kept.
  ArrayRef<int64_t> axes = sum.getAxes();
  for (int64_t d = 0; d < rank; ++d) {
    bool summed =
        llvm::is_contained(axes, d) || llvm::is_contained(axes, d - rank);
    if (d == rank - 1 ? summed : !summed && type.getDimSize(d) != 1)
      return false;
  }
  return true;
}

SummedOperand mlir::memfit::summedOperand(KernelOp kernel, GemmOp gemm) {
  if (!sumsRows(kernel) || gemm.getC())
    return SummedOperand::None;
  Value summed = kernel.getInputs()[0];
  if (summed.getDefiningOp<StridedViewOp>())
    return SummedOperand::None;
  auto type = cast<RankedTensorType>(summed.getType());
  int64_t width = type.getShape().back();
  int64_t rows = width > 0 ? type.getNumElements() / width : 0;
  Value root = bufferRoot(summed);
  auto packed = [&](Value operand) {
    auto shape = cast<RankedTensorType>(operand.getType()).getShape();
    return !operand.getDefiningOp<StridedViewOp>() &&
           bufferRoot(operand) == root &&
           shape == ArrayRef<int64_t>{rows, width};
  };
  if (!gemm.getTransB() && packed(gemm.getB()))
    return SummedOperand::B;
  if (gemm.getTransA() && packed(gemm.getA()))
    return SummedOperand::A;
  return SummedOperand::None;
}

bool mlir::memfit::activatesGemm(KernelOp kernel, Operation *gemm) {
  auto contraction = dyn_cast_or_null<GemmOp>(gemm);
  if (!contraction || !kernel->hasAttr(kEpilogueAttr) ||
      kernel.getInputs().size() != 1)
    return false;
  auto gelu = dyn_cast_or_null<GeluOp>(soleBodyOp(kernel));
  return gelu && gelu.getApproximate() == GeluApproximation::Tanh &&
         gelu.getInput() == kernel.getBodyBlock().getArgument(0) &&
         bufferRoot(kernel.getInputs()[0]) == contraction.getResult() &&
         kernel.getInputs()[0].getDefiningOp() != nullptr &&
         !kernel.getInputs()[0].getDefiningOp<StridedViewOp>();
}
