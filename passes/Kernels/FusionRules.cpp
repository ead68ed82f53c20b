//===- FusionRules.cpp - the rules memfit-fuse's rewrites share -----------===//
//
// Which ops compose in a pointwise kernel, what counts against max-ops,
// which buffers live outside the arena, which parameters a kernel reads and
// updates, a kernel assembled from others, and the function's schedule
// with the bytes live at each step (FusionRules.h).
//
//===----------------------------------------------------------------------===//

#include "FusionRules.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::memfit;

namespace mlir::memfit::fusion {

bool isScalarOp(Operation *op) {
  auto opClass = dyn_cast<OpClassInterface>(op);
  return opClass && opClass.getOpClass() == OpClass::ElementWise && isPure(op);
}

bool isPointwise(KernelOp kernel) {
  if (kernel->getNumResults() == 0)
    return false;
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(kernel->getResult(0).getType()).getShape();
  if (llvm::any_of(kernel->getResultTypes(), [&](Type t) {
        return cast<RankedTensorType>(t).getShape() != shape ||
               cast<RankedTensorType>(t).getNumElements() == 0;
      }))
    return false;
  return llvm::all_of(kernel.getBodyOps(), [](Operation &op) {
    return isa<ConstantOp>(op) || isScalarOp(&op) || isIndexMapping(&op);
  });
}

int64_t bytesOf(Value value) {
  return tensorBytes(cast<RankedTensorType>(value.getType()));
}

Value reshaped(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, type.clone(shape), x);
}

void moveViewsAfter(ValueRange values, Operation *after) {
  SmallVector<Operation *> views;
  for (Value value : values)
    for (Operation *user : value.getUsers())
      if (isBufferView(user) && !llvm::is_contained(views, user))
        views.push_back(user);
  for (size_t i = 0; i < views.size(); ++i)
    for (Operation *user : views[i]->getResult(0).getUsers())
      if (isBufferView(user) && !llvm::is_contained(views, user))
        views.push_back(user);
  llvm::erase_if(views, [&](Operation *view) {
    return view->getBlock() != after->getBlock() ||
           !view->isBeforeInBlock(after);
  });
  llvm::sort(views,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *view : views) {
    view->moveAfter(after);
    after = view;
  }
}

int64_t opCount(KernelOp kernel) {
  return llvm::count_if(kernel.getBodyOps(),
                        [](Operation &op) { return !isa<ConstantOp>(op); });
}

bool storedInPlace(Value value) {
  return !value.use_empty() &&
         llvm::all_of(value.getUsers(),
                      [](Operation *user) { return isa<AssignOp>(user); });
}

bool outsideArena(Value value) {
  Operation *def = bufferRoot(value).getDefiningOp();
  return !def || isa<LoadParameterOp, ConstantOp>(def);
}

void parametersOf(KernelOp kernel, DenseSet<StringAttr> &reads,
                  DenseSet<StringAttr> &writes) {
  for (Value input : kernel.getInputs())
    if (auto load = bufferRoot(input).getDefiningOp<LoadParameterOp>())
      reads.insert(load.getNameAttr().getAttr());
  for (Operation *user : kernel->getUsers())
    if (auto assign = dyn_cast<AssignOp>(user))
      writes.insert(assign.getNameAttr().getAttr());
}

bool updatesWhatItReads(KernelOp a, KernelOp b) {
  DenseSet<StringAttr> reads, writes;
  parametersOf(a, reads, writes);
  parametersOf(b, reads, writes);
  return llvm::any_of(writes, [&](StringAttr p) { return reads.contains(p); });
}

//===----------------------------------------------------------------------===//
// MergedKernel
//===----------------------------------------------------------------------===//

void MergedKernel::addInput(Value v) {
  if (index.try_emplace(v, inputs.size()).second)
    inputs.push_back(v);
}

KernelOp MergedKernel::create(OpBuilder &builder, Location loc,
                              TypeRange types) {
  auto kernel = KernelOp::create(builder, loc, types, inputs);
  body = builder.createBlock(&kernel.getBody());
  for (Value v : inputs)
    body->addArgument(v.getType(), v.getLoc());
  builder.setInsertionPointToStart(body);
  return kernel;
}

SmallVector<Value> MergedKernel::clone(OpBuilder &builder, KernelOp kernel,
                                       IRMapping &map) {
  for (auto [i, v] : llvm::enumerate(kernel.getInputs()))
    if (!map.contains(kernel.getBodyBlock().getArgument(i)))
      map.map(kernel.getBodyBlock().getArgument(i),
              body->getArgument(index.lookup(v)));
  for (Operation &op : kernel.getBodyOps())
    builder.clone(op, map);
  SmallVector<Value> yielded;
  for (Value v :
       cast<YieldOp>(kernel.getBodyBlock().getTerminator()).getValues())
    yielded.push_back(map.lookup(v));
  return yielded;
}

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

Schedule::Schedule(Block &block) {
  int64_t next = 0;
  for (Operation &op : block) {
    if (!isPure(&op) && !isa<KernelOp>(op)) {
      auto assign = dyn_cast<AssignOp>(op);
      writes.push_back(
          {next, assign ? assign.getNameAttr().getAttr() : StringAttr()});
    }
    position[&op] = next++;
  }
  for (Operation &op : block)
    noteUses(op);
}

void Schedule::noteUses(Operation &op) {
  for (Value operand : op.getOperands())
    lastUse[bufferRoot(operand)] =
        std::max(lastUse.lookup(bufferRoot(operand)), position.lookup(&op));
}

void Schedule::noteReaders(Value value) {
  SmallVector<Operation *> readers;
  collectBufferReaders(value, readers);
  lastUse[value] = 0;
  for (Operation *reader : readers)
    lastUse[value] = std::max(lastUse[value], position.lookup(reader));
}

bool Schedule::writeBetween(int64_t from, int64_t to, ValueRange reads) const {
  SmallVector<StringAttr> read;
  for (Value value : reads)
    if (auto load = bufferRoot(value).getDefiningOp<LoadParameterOp>())
      read.push_back(load.getNameAttr().getAttr());
  return llvm::any_of(writes, [&](const Write &w) {
    return w.at > from && w.at < to &&
           (!w.parameter || llvm::is_contained(read, w.parameter));
  });
}

void Schedule::computeLive(Block &block) {
  live.assign(position.size() + 1, 0);
  auto add = [&](int64_t from, int64_t to, int64_t bytes) {
    for (int64_t p = std::max<int64_t>(from, 0);
         p <= std::min<int64_t>(to, live.size() - 1); ++p)
      live[p] += bytes;
  };
  for (BlockArgument arg : block.getArguments())
    if (isa<RankedTensorType>(arg.getType()))
      add(0, live.size() - 1, bytesOf(arg));
  for (Operation &op : block) {
    if (op.getNumResults() == 0 || isBufferView(&op) ||
        outsideArena(op.getResult(0)))
      continue;
    int64_t at = position.lookup(&op);
    // A result written in place into an input is in that input's bytes,
    // which live until its last reader; one that memfit.assign stores is
    // in its parameter's bytes in the weights region (an in-place update),
    // as the memory plan places it.
    for (Value result : op.getResults())
      if (isa<RankedTensorType>(result.getType()) &&
          bufferRoot(result) == result && !storedInPlace(result))
        add(at, std::max(at, lastUse.lookup(result)), bytesOf(result));
  }
  peak = live.empty() ? 0 : *llvm::max_element(live);
}

bool Schedule::fitsPeak(ArrayRef<LiveChange> changes, int64_t lo,
                        int64_t hi) const {
  for (int64_t p = lo; p <= hi; ++p) {
    int64_t bytes = live[p];
    for (const LiveChange &c : changes)
      if (p >= c.from && p <= c.to)
        bytes += c.bytes;
    if (bytes > peak)
      return false;
  }
  return true;
}

void Schedule::apply(ArrayRef<LiveChange> changes) {
  for (const LiveChange &c : changes)
    for (int64_t p = c.from; p <= c.to; ++p)
      live[p] += c.bytes;
}

//===----------------------------------------------------------------------===//
// Kernels of segments
//===----------------------------------------------------------------------===//

KernelOp segmentsKernel(ArrayRef<KernelOp> group, Operation *at) {
  MergedKernel parts;
  SmallVector<Type> types;
  SmallVector<int64_t> sizes;
  for (KernelOp kernel : group) {
    for (Value v : kernel.getInputs())
      parts.addInput(v);
    llvm::append_range(types, kernel->getResultTypes());
    sizes.push_back(kernel->getNumResults());
  }
  OpBuilder builder(at);
  KernelOp merged = parts.create(builder, at->getLoc(), types);
  copyMemfitAttrs(group.front(), merged);
  merged->setAttr(kSegmentsAttr, builder.getDenseI64ArrayAttr(sizes));
  SmallVector<Value> yielded;
  for (KernelOp kernel : group) {
    IRMapping map;
    llvm::append_range(yielded, parts.clone(builder, kernel, map));
  }
  YieldOp::create(builder, at->getLoc(), yielded);
  unsigned next = 0;
  for (KernelOp kernel : group)
    for (OpResult result : kernel->getResults())
      result.replaceAllUsesWith(merged->getResult(next++));
  return merged;
}

FailureOr<int64_t> planTotal(ModuleOp module) {
  FailureOr<ModulePlan> plan = planModule(module, definedFunctions(module));
  if (failed(plan))
    return failure();
  return plan->weightsBytes + plan->arenaBytes;
}

} // namespace mlir::memfit::fusion
