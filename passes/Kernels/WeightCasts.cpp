//===- WeightCasts.cpp - a layer's weight casts as one kernel -------------===//
//
// memfit-fuse's `multi-tensor` rewrite of the kernels that compute from
// weights alone: under mixed precision, each fp32 master weight is cast to
// bf16 or fp16 by a kernel of its own before its first use (GPT-2 small's
// step: 147 of them). The kernels of one transformer layer become one
// kernel of several segments at the first one's place: one launch a layer.
// Their inputs are weights (parameters and constants), ready from the
// step's start, so the merged kernel computes each as it did;
// only the results of the later ones live from the first one's place on,
// which the module's plan checks.
//
//===----------------------------------------------------------------------===//

#include "FusionRules.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::fusion;

namespace {

/// Whether `kernel` computes from weights alone: pointwise, of one
/// segment, its inputs parameters or constants (not the step's arguments:
/// a chunked loss's slices of the labels would live from the step's start),
/// its results arena values that memfit.assign does not store and that it
/// does not write into an input.
bool fromWeightsAlone(KernelOp kernel) {
  if (kernel.getInputs().empty() || kernel->hasAttr(kSegmentsAttr) ||
      !isPointwise(kernel))
    return false;
  for (Value input : kernel.getInputs()) {
    Operation *def = bufferRoot(input).getDefiningOp();
    if (!isa_and_nonnull<LoadParameterOp, ConstantOp>(def))
      return false;
  }
  for (unsigned r = 0; r < kernel->getNumResults(); ++r)
    if (kernel.getTiedInput(r))
      return false;
  return llvm::none_of(kernel->getUsers(),
                       [](Operation *user) { return isa<AssignOp>(user); });
}

/// The groups of `func`'s kernels that compute from weights alone, one per
/// transformer layer and kind of step (memfitAttrs), in order, each of at
/// most `maxOps` ops (0: no limit) and 400 buffers (CUDA's 4 KB of
/// parameters); a group closes when an in-place update writes a parameter
/// that a later member would read (at the first one's place it would read
/// the old value).
SmallVector<SmallVector<KernelOp>> castGroups(func::FuncOp func,
                                              int64_t maxOps) {
  constexpr int64_t kMaxPointers = 400;
  struct Open {
    SmallVector<KernelOp> kernels;
    DenseSet<StringAttr> written; // since the first member
    int64_t pointers = 0, ops = 0;
  };
  SmallVector<SmallVector<KernelOp>> groups;
  llvm::StringMap<Open> open;
  auto close = [&](StringRef key) {
    auto it = open.find(key);
    if (it == open.end())
      return;
    if (it->second.kernels.size() > 1)
      groups.push_back(std::move(it->second.kernels));
    open.erase(it);
  };
  for (Operation &op : func.getBody().front()) {
    if (auto assign = dyn_cast<AssignOp>(op)) {
      for (auto &entry : open)
        entry.second.written.insert(assign.getNameAttr().getAttr());
      continue;
    }
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel || !fromWeightsAlone(kernel))
      continue;
    DenseSet<StringAttr> reads, writes;
    parametersOf(kernel, reads, writes);
    std::string key;
    llvm::raw_string_ostream os(key);
    os << layerOf(kernel, reads) << "\n" << DictionaryAttr::get(
        kernel.getContext(), memfitAttrs(kernel));
    int64_t pointers = kernel.getInputs().size() + kernel->getNumResults();
    int64_t ops = opCount(kernel);
    if (auto it = open.find(key); it != open.end()) {
      Open &group = it->second;
      bool stale = llvm::any_of(
          reads, [&](StringAttr p) { return group.written.contains(p); });
      if (stale || group.pointers + pointers > kMaxPointers ||
          (maxOps > 0 && group.ops + ops > maxOps))
        close(key);
    }
    Open &group = open[key];
    group.kernels.push_back(kernel);
    group.pointers += pointers;
    group.ops += ops;
  }
  SmallVector<std::string> keys;
  for (auto &entry : open)
    keys.push_back(entry.getKey().str());
  for (const std::string &key : keys)
    close(key);
  // In the order of their first members, so that the rewrite does not
  // depend on the map's.
  llvm::sort(groups, [](ArrayRef<KernelOp> a, ArrayRef<KernelOp> b) {
    return a.front()->isBeforeInBlock(b.front());
  });
  return groups;
}

/// Moves the op that defines `value`, with those of its operands, before
/// `point` when it comes after it (a parameter's load, a constant, a view
/// of one: no in-place update of a member's parameter comes between,
/// castGroups saw to it).
void hoist(Value value, Operation *point) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != point->getBlock() ||
      def->isBeforeInBlock(point))
    return;
  for (Value operand : def->getOperands())
    hoist(operand, point);
  def->moveBefore(point);
}

/// One kernel at the first of `group`'s place that computes each as a
/// segment, their inputs' loads moved before it.
void mergeAtFirst(ArrayRef<KernelOp> group) {
  KernelOp first = group.front();
  for (KernelOp kernel : group)
    for (Value v : kernel.getInputs())
      hoist(v, first);
  segmentsKernel(group, first);
  for (KernelOp kernel : group)
    kernel->erase();
}

} // namespace

LogicalResult fusion::fuseWeightCasts(ModuleOp module, int64_t maxOps) {
  OwningOpRef<ModuleOp> unmerged = module.clone();
  bool merged = false;
  for (func::FuncOp func : definedFunctions(module))
    for (SmallVector<KernelOp> &group : castGroups(func, maxOps)) {
      mergeAtFirst(group);
      merged = true;
    }
  if (!merged)
    return success();
  FailureOr<int64_t> with = planTotal(module), without = planTotal(*unmerged);
  if (failed(without))
    return failure();
  // A layer's casts live from its first one on: kept when the plan grows
  // by at most kSlack of itself (first-fit placement can move a few KB;
  // GPT-2 small's plans in bf16 and fp16 come out the same), else left as
  // they were.
  constexpr double kSlack = 1e-3;
  if (failed(with) || static_cast<double>(*with) >
                          static_cast<double>(*without) * (1.0 + kSlack))
    module.getBodyRegion().takeBody(unmerged->getBodyRegion());
  return success();
}
