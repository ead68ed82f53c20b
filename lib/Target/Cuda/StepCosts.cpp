//===- StepCosts.cpp - what each step of the executable costs -------------===//

#include "StepCosts.h"

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/OpCost.h"

namespace mlir::memfit::cuda {

rt::StepCost stepCost(Operation *step) {
  OpCost cost = estimateCost(step);
  return {uint64_t(std::max<int64_t>(cost.bytes, 0)),
          uint64_t(std::max<int64_t>(cost.flops, 0))};
}

rt::KernelKind kernelKind(Operation *step) {
  SmallVector<Operation *> ops;
  if (auto kernel = dyn_cast<KernelOp>(step))
    for (Operation &op : kernel.getBodyOps())
      ops.push_back(&op);
  else
    ops.push_back(step);
  bool rows = false;
  for (Operation *op : ops) {
    auto classed = dyn_cast<OpClassInterface>(op);
    if (!classed)
      continue;
    switch (classed.getOpClass()) {
    case OpClass::Attention:
      return rt::KernelKind::Attention;
    case OpClass::Reduction:
    case OpClass::Normalization:
    case OpClass::Loss:
      rows = true;
      break;
    default:
      break;
    }
  }
  bool updates = step->getNumResults() > 0 &&
                 llvm::all_of(step->getResults(), [](Value result) {
                   return !result.use_empty() &&
                          llvm::all_of(result.getUsers(), [](Operation *user) {
                            return isa<AssignOp>(user);
                          });
                 });
  if (updates)
    return rt::KernelKind::Optimizer;
  return rows ? rt::KernelKind::Rows : rt::KernelKind::ElementWise;
}

} // namespace mlir::memfit::cuda
