//===- PlanQueries.cpp - what the memory plan asks of steps and values ----===//
//
// The queries the planner shares with the passes and reports: which ops are
// steps, buffer roots through views and in-place results, readers, the
// ONNX node and scope of a step, whether it is of the backward.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"

using namespace mlir;
using namespace mlir::memfit;

int64_t MemoryPlan::categoryBytes(BufferCategory category) const {
  int64_t total = 0;
  for (const PlannedBuffer &buffer : buffers)
    if (buffer.category == category)
      total += buffer.bytes;
  return total;
}

int64_t mlir::memfit::alignToPlan(int64_t bytes) {
  return (bytes + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
}

bool mlir::memfit::isScheduledStep(Operation *op) {
  auto opClass = dyn_cast<OpClassInterface>(op);
  return isa<KernelOp, MatMulOp, GemmOp>(op) ||
         (opClass && opClass.getOpClass() == OpClass::Collective);
}

bool mlir::memfit::isBufferView(Operation *op) {
  return op->hasTrait<OpTrait::memfit::BufferView>();
}

Value mlir::memfit::tiedInputOf(Value value) {
  auto result = dyn_cast<OpResult>(value);
  auto kernel = result ? dyn_cast<KernelOp>(result.getOwner()) : KernelOp();
  return kernel ? kernel.getTiedInput(result.getResultNumber()) : Value();
}

Value mlir::memfit::viewRoot(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isBufferView(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

Value mlir::memfit::bufferRoot(Value value) {
  value = viewRoot(value);
  while (Value tied = tiedInputOf(value))
    value = viewRoot(tied);
  return value;
}

void mlir::memfit::collectViewReaders(Value value,
                                      SmallVectorImpl<Operation *> &readers) {
  for (Operation *user : value.getUsers()) {
    if (isBufferView(user))
      collectViewReaders(user->getResult(0), readers);
    else
      readers.push_back(user);
  }
}

void mlir::memfit::collectBufferReaders(Value value,
                                        SmallVectorImpl<Operation *> &readers) {
  SmallVector<Operation *> direct;
  collectViewReaders(value, direct);
  Value root = bufferRoot(value);
  for (Operation *reader : direct) {
    readers.push_back(reader);
    for (OpResult result : reader->getResults())
      if (Value tied = tiedInputOf(result); tied && bufferRoot(tied) == root)
        collectBufferReaders(result, readers);
  }
}

/// `get` of the step's location, else of the first op in a kernel's body
/// that has one.
static StringRef fromStepLocation(Operation *op, StringRef (*get)(Location)) {
  if (StringRef found = get(op->getLoc()); !found.empty())
    return found;
  if (auto kernel = dyn_cast<KernelOp>(op))
    for (Operation &inner : kernel.getBodyOps())
      if (StringRef found = get(inner.getLoc()); !found.empty())
        return found;
  return "";
}

StringRef mlir::memfit::stepNodeName(Operation *op) {
  return fromStepLocation(op, onnxNodeName);
}

StringRef mlir::memfit::stepScope(Operation *op) {
  return fromStepLocation(op, onnxNodeScope);
}

std::vector<CategoryBytes>
mlir::memfit::arenaLiveByStep(const MemoryPlan &plan) {
  int64_t end = plan.schedule.size() + 1;
  std::vector<CategoryBytes> live(end + 1, CategoryBytes{});
  for (const PlannedBuffer &buffer : plan.buffers)
    if (buffer.region == BufferRegion::Arena)
      for (int64_t s = buffer.firstStep; s <= buffer.lastStep && s <= end; ++s)
        live[s][unsigned(buffer.category)] += buffer.bytes;
  return live;
}

bool mlir::memfit::isBackwardStep(Operation *op) {
  if (op->hasAttr(kBackwardAttr))
    return true;
  if (auto kernel = dyn_cast<KernelOp>(op))
    for (Operation &inner : kernel.getBodyOps())
      if (inner.hasAttr(kBackwardAttr))
        return true;
  return false;
}

std::string mlir::memfit::stepOpNames(Operation *op) {
  std::string names;
  auto append = [&](Operation *inner) {
    // Splat constants inside a kernel are literals, not work.
    if (isa<ConstantOp>(inner))
      return;
    if (!names.empty())
      names += '+';
    names += inner->getName().stripDialect();
  };
  if (auto kernel = dyn_cast<KernelOp>(op))
    for (Operation &inner : kernel.getBodyOps())
      append(&inner);
  else
    append(op);
  if (names.empty())
    names = op->getName().stripDialect();
  return names;
}

SmallVector<func::FuncOp> mlir::memfit::definedFunctions(ModuleOp module) {
  SmallVector<func::FuncOp> funcs;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      funcs.push_back(func);
  return funcs;
}

bool mlir::memfit::packedInHost(const PlannedBuffer &buffer) {
  return buffer.region == BufferRegion::Host &&
         (buffer.category == BufferCategory::OffloadedActivation ||
          buffer.category == BufferCategory::HostTransfer);
}
