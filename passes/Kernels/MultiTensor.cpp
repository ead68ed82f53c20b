//===- MultiTensor.cpp - the optimizer's updates as one kernel ------------===//
//
// memfit-fuse's `multi-tensor` rewrite: a run of pointwise kernels whose
// results are all stored in place by memfit.assign (the optimizer's update
// of each parameter), independent of each other, becomes one kernel of
// several segments (memfit.segments) at the last kernel's place: one
// launch instead of one per parameter.
//
//===----------------------------------------------------------------------===//

#include "FusionRules.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::fusion;

/// The transformer layer an update belongs to (memfit::layerOf, over the
/// names of the parameters it writes).
std::string fusion::layerOf(KernelOp kernel,
                            const DenseSet<StringAttr> &writes) {
  SmallVector<StringRef> names;
  for (StringAttr name : writes)
    names.push_back(name.getValue());
  return mlir::memfit::layerOf(kernel->getLoc(), names);
}

namespace {

/// Whether every result of `kernel` is stored by memfit.assign: it
/// writes parameters or states in place, not the arena.
bool updatesInPlace(KernelOp kernel) {
  return llvm::all_of(kernel->getResults(), [](Value result) {
    return result.hasOneUse() && isa<AssignOp>(*result.getUsers().begin());
  });
}

/// Runs of pointwise kernels that update parameters or states in place
/// (updatesInPlace) with only parameter loads, constants and in-place
/// updates between them, none reading another's results or a
/// parameter that another updates (in one launch, the read would race
/// with the write), with the same memfit attributes, of one transformer
/// layer (layerOf: memfit-early-updates then moves each group to just
/// after its layer's last gradient, so that a group keeps at most one
/// layer's gradients live, not every gradient of the step), of at most
/// `maxOps` ops (0: no limit).
SmallVector<SmallVector<KernelOp>> segmentGroups(func::FuncOp func,
                                                 int64_t maxOps) {
  // CUDA passes at most 4 KB of kernel parameters; pointers are 8 bytes.
  constexpr int64_t kMaxPointers = 400;
  SmallVector<SmallVector<KernelOp>> groups;
  SmallVector<KernelOp> group;
  llvm::SmallPtrSet<Operation *, 16> members;
  DenseSet<StringAttr> reads, writes;
  std::string layer;
  llvm::SmallPtrSet<Value, 32> inputs;
  int64_t pointers = 0, ops = 0;
  auto close = [&] {
    if (group.size() > 1)
      groups.push_back(group);
    group.clear();
    members.clear();
    reads.clear();
    writes.clear();
    inputs.clear();
    pointers = ops = 0;
  };
  for (Operation &op : func.getBody().front()) {
    if (isa<LoadParameterOp, ConstantOp, AssignOp>(op))
      continue;
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel || !isPointwise(kernel) || !updatesInPlace(kernel)) {
      close();
      continue;
    }
    DenseSet<StringAttr> kernelReads, kernelWrites;
    parametersOf(kernel, kernelReads, kernelWrites);
    int64_t kernelOps = opCount(kernel);
    int64_t newInputs = llvm::count_if(
        kernel.getInputs(), [&](Value v) { return !inputs.contains(v); });
    bool independent =
        llvm::none_of(
            kernel.getInputs(),
            [&](Value v) { return members.contains(v.getDefiningOp()); }) &&
        llvm::none_of(kernelReads,
                      [&](StringAttr p) { return writes.contains(p); }) &&
        llvm::none_of(kernelWrites, [&](StringAttr p) {
          return reads.contains(p) || writes.contains(p);
        });
    bool fits =
        pointers + newInputs + kernel->getNumResults() <= kMaxPointers &&
        (maxOps <= 0 || ops + kernelOps <= maxOps);
    std::string kernelLayer = layerOf(kernel, kernelWrites);
    if (!group.empty() && (!independent || !fits || kernelLayer != layer ||
                           memfitAttrs(kernel) != memfitAttrs(group.front())))
      close();
    layer = kernelLayer;
    group.push_back(kernel);
    members.insert(kernel);
    reads.insert(kernelReads.begin(), kernelReads.end());
    writes.insert(kernelWrites.begin(), kernelWrites.end());
    for (Value v : kernel.getInputs())
      if (inputs.insert(v).second)
        ++pointers;
    pointers += kernel->getNumResults();
    ops += kernelOps;
  }
  close();
  return groups;
}

/// One kernel at the last of `group`'s place that runs each as a
/// segment; the updates of their results move after it.
void mergeSegments(ArrayRef<KernelOp> group) {
  KernelOp merged = segmentsKernel(group, group.back());
  // The updates of the earlier kernels' results (and anything else that
  // reads them) now follow the merged kernel, in their order.
  SmallVector<Operation *> early;
  for (Operation *user : merged->getUsers())
    if (user->isBeforeInBlock(merged))
      early.push_back(user);
  llvm::sort(early,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  early.erase(std::unique(early.begin(), early.end()), early.end());
  Operation *after = merged;
  for (Operation *op : early) {
    op->moveAfter(after);
    after = op;
  }
  for (KernelOp kernel : group)
    kernel->erase();
}

} // namespace

LogicalResult fusion::fuseSegments(ModuleOp module, int64_t maxOps) {
  OwningOpRef<ModuleOp> unmerged = module.clone();
  bool merged = false;
  for (func::FuncOp func : definedFunctions(module))
    for (SmallVector<KernelOp> &group : segmentGroups(func, maxOps)) {
      mergeSegments(group);
      merged = true;
    }
  if (!merged)
    return success();
  FailureOr<int64_t> with = planTotal(module), without = planTotal(*unmerged);
  if (failed(with) || failed(without))
    return failure();
  if (*with > *without)
    module.getBodyRegion().takeBody(unmerged->getBodyRegion());
  return success();
}
