//===- Fuse.cpp - memfit-fuse: element-wise chains into one kernel --------===//
//
// Merges a pointwise kernel into the one kernel that reads its results,
// so that the chain runs as one pass over memory and its intermediates are
// never stored. See the pass description in Passes.td and docs/passes.md.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/PassOutput.h"
#include "memfit/Passes/Passes.h"
#include "memfit/runtime/Bytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITFUSEPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// An op that a pointwise kernel computes at its own index from its
/// operands' values there: a pure element-wise op (not dropout, whose mask
/// depends on the kernel it is in).
bool isScalarOp(Operation *op) {
  auto opClass = dyn_cast<OpClassInterface>(op);
  return opClass && opClass.getOpClass() == OpClass::ElementWise &&
         isPure(op);
}

/// Data movement that a pointwise kernel writes as a read of a kernel input
/// at a mapped index (the CUDA emitter's IndexMapping ops).
bool isIndexMapping(Operation *op) {
  return isa<TransposeOp, SliceOp, GatherOp, ConcatOp, ExpandOp, RangeOp>(op);
}

/// Whether every op of `kernel` composes in a pointwise kernel.
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

/// The value whose buffer `value` uses (through views).
Value rootOf(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isBufferView(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

/// Whether `value`'s buffer is not in the arena: a function argument, a
/// parameter or a constant, which live the whole step anyway.
bool outsideArena(Value value) {
  Operation *def = rootOf(value).getDefiningOp();
  return !def || isa<LoadParameterOp, ConstantOp>(def);
}

struct MemfitFusePass
    : public mlir::memfit::impl::MemfitFusePassBase<MemfitFusePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t budgetBytes = static_cast<int64_t>(budget.getValue().bytes);
    OwningOpRef<ModuleOp> unfused;
    if (budgetBytes > 0)
      unfused = module.clone();
    int64_t before = 0, after = 0;
    for (func::FuncOp func : definedFunctions(module)) {
      before += kernelCount(func);
      fuseFunction(func);
      after += kernelCount(func);
    }
    if (budgetBytes > 0) {
      // Fusion lowers the bytes live at every step (fuseInto's rule), but
      // the arena's first-fit placement may still come out larger: keep the
      // unfused step if the fused one breaks the budget that it met.
      FailureOr<ModulePlan> fused =
          planModule(module, definedFunctions(module));
      FailureOr<ModulePlan> plain =
          planModule(*unfused, definedFunctions(*unfused));
      if (failed(fused) || failed(plain))
        return signalPassFailure();
      int64_t fusedPeak = fused->weightsBytes + fused->arenaBytes;
      int64_t plainPeak = plain->weightsBytes + plain->arenaBytes;
      if (fusedPeak > budgetBytes && plainPeak <= budgetBytes) {
        mlir::emitRemark(module.getLoc())
            << "memfit-fuse: the fused step's plan ("
            << ::memfit::formatBytes(fusedPeak) << ") exceeds the budget "
            << ::memfit::formatBytes(budgetBytes)
            << " that the unfused one meets; kept unfused";
        module.getBodyRegion().takeBody(unfused->getBodyRegion());
        after = before;
      }
    }
    if (!report.empty()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "memfit-fuse: " << before << " kernels -> " << after << "\n";
      std::unique_ptr<llvm::ToolOutputFile> file =
          openPassOutput(module, report, "memfit-fuse report");
      if (!file)
        return signalPassFailure();
      file->os() << text;
      file->keep();
    }
  }

  static int64_t kernelCount(func::FuncOp func) {
    return llvm::range_size(func.getBody().getOps<KernelOp>());
  }

  /// Merges producers into their consumers until none can be.
  void fuseFunction(func::FuncOp func) {
    Block &block = func.getBody().front();
    // Positions in the schedule; a merged kernel takes its consumer's.
    DenseMap<Operation *, int64_t> position;
    SmallVector<int64_t> writes; // positions of in-place updates
    int64_t next = 0;
    for (Operation &op : block) {
      position[&op] = next;
      if (!isPure(&op) && !isa<KernelOp>(op))
        writes.push_back(next);
      ++next;
    }
    // The last reader of each arena buffer, through its views.
    DenseMap<Value, int64_t> lastUse;
    auto noteUses = [&](Operation &op) {
      for (Value operand : op.getOperands())
        lastUse[rootOf(operand)] =
            std::max(lastUse.lookup(rootOf(operand)), position[&op]);
    };
    for (Operation &op : block)
      noteUses(op);

    bool changed = true;
    while (changed) {
      changed = false;
      // Kernels merged in this round are looked at in the next.
      SmallVector<KernelOp> kernels(block.getOps<KernelOp>());
      llvm::SmallPtrSet<Operation *, 16> erased;
      for (KernelOp producer : kernels) {
        if (erased.contains(producer))
          continue;
        KernelOp consumer = firstConsumer(producer, position);
        if (!consumer || erased.contains(consumer) ||
            !canFuse(producer, consumer, position, writes, lastUse))
          continue;
        int64_t at = position[consumer];
        position.erase(consumer);
        position.erase(producer);
        erased.insert(producer);
        erased.insert(consumer);
        KernelOp merged = fuseInto(producer, consumer);
        position[merged] = at;
        noteUses(*merged);
        changed = true;
      }
    }
  }

  /// The kernel that reads `producer`'s results first, when every other
  /// reader comes after it (so the merged kernel, at its place, can hand
  /// them the results); else null.
  static KernelOp firstConsumer(KernelOp producer,
                                DenseMap<Operation *, int64_t> &position) {
    KernelOp consumer;
    int64_t first = INT64_MAX;
    for (Operation *user : producer->getUsers())
      if (position.lookup(user) < first) {
        first = position.lookup(user);
        consumer = dyn_cast<KernelOp>(user);
      }
    if (!consumer)
      return {};
    for (Operation *user : producer->getUsers())
      if (user != consumer && position.lookup(user) <= first)
        return {};
    return consumer;
  }

  /// Whether `producer` has results that ops other than `consumer` read.
  static bool readElsewhere(KernelOp producer, KernelOp consumer) {
    return llvm::any_of(producer->getUsers(),
                        [&](Operation *user) { return user != consumer; });
  }

  bool canFuse(KernelOp producer, KernelOp consumer,
               DenseMap<Operation *, int64_t> &position,
               ArrayRef<int64_t> writes, DenseMap<Value, int64_t> &lastUse) {
    if (!isPointwise(producer) || !isPointwise(consumer))
      return false;
    auto count = [](KernelOp k) {
      return static_cast<int64_t>(llvm::count_if(
          k.getBodyOps(), [](Operation &op) { return !isa<ConstantOp>(op); }));
    };
    if (maxOps > 0 && count(producer) + count(consumer) > maxOps)
      return false;
    // The producer's results exist at the consumer's index only, so they
    // must have its shape, and only its element-wise ops may read them
    // (data movement reads kernel inputs).
    ArrayRef<int64_t> domain =
        cast<RankedTensorType>(consumer->getResult(0).getType()).getShape();
    for (Type type : producer->getResultTypes())
      if (cast<RankedTensorType>(type).getShape() != domain)
        return false;
    for (auto [i, input] : llvm::enumerate(consumer.getInputs())) {
      if (input.getDefiningOp() != producer)
        continue;
      for (Operation *user : consumer.getBodyBlock().getArgument(i).getUsers())
        if (!isScalarOp(user))
          return false;
    }
    // A result that others read too becomes the merged kernel's: the
    // memory plan tells recomputed and compressed values by their kernel's
    // attributes, which are the consumer's.
    if (readElsewhere(producer, consumer))
      for (StringRef attr : {kRecomputedFromAttr, kCompressedAttr})
        if (producer->hasAttr(attr) != consumer->hasAttr(attr))
          return false;
    // The merged kernel runs where the consumer does: no in-place update
    // of what the producer reads may come between.
    int64_t from = position[producer], to = position[consumer];
    if (llvm::any_of(writes, [&](int64_t w) { return w > from && w < to; }))
      return false;
    // Nor may it keep more bytes live: the producer's inputs that it read
    // last now live until the consumer, in place of its results that only
    // the consumer reads (results that others read too are still written,
    // by the merged kernel, and live from the consumer's step on).
    int64_t extended = 0, freed = 0;
    llvm::SmallPtrSet<Value, 8> seen;
    for (Value input : producer.getInputs()) {
      Value root = rootOf(input);
      if (!seen.insert(root).second || outsideArena(root) ||
          lastUse.lookup(root) > from)
        continue;
      extended += bytesOf(root);
    }
    for (Value result : producer->getResults())
      if (llvm::all_of(result.getUsers(),
                       [&](Operation *user) { return user == consumer; }))
        freed += bytesOf(result);
    return extended <= freed;
  }

  /// A kernel at `consumer`'s place that computes `producer`'s body, then
  /// `consumer`'s, and yields `consumer`'s results, then those of
  /// `producer`'s results that other ops read.
  static KernelOp fuseInto(KernelOp producer, KernelOp consumer) {
    SmallVector<Value> inputs;
    DenseMap<Value, unsigned> inputIndex;
    auto addInput = [&](Value v) {
      if (inputIndex.try_emplace(v, inputs.size()).second)
        inputs.push_back(v);
    };
    for (Value v : producer.getInputs())
      addInput(v);
    for (Value v : consumer.getInputs())
      if (v.getDefiningOp() != producer)
        addInput(v);

    SmallVector<OpResult> kept; // the producer's results read elsewhere
    for (OpResult result : producer->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return user != consumer; }))
        kept.push_back(result);
    SmallVector<Type> types(consumer->getResultTypes());
    for (OpResult result : kept)
      types.push_back(result.getType());

    OpBuilder builder(consumer);
    auto merged =
        KernelOp::create(builder, consumer.getLoc(), types, inputs);
    merged->setDiscardableAttrs(consumer->getDiscardableAttrDictionary());
    Block *body = builder.createBlock(&merged.getBody());
    for (Value v : inputs)
      body->addArgument(v.getType(), v.getLoc());
    builder.setInsertionPointToStart(body);

    IRMapping first;
    for (auto [i, v] : llvm::enumerate(producer.getInputs()))
      first.map(producer.getBodyBlock().getArgument(i),
                body->getArgument(inputIndex[v]));
    for (Operation &op : producer.getBodyOps())
      builder.clone(op, first);
    auto producerYield =
        cast<YieldOp>(producer.getBodyBlock().getTerminator());

    IRMapping second;
    for (auto [i, v] : llvm::enumerate(consumer.getInputs())) {
      Value arg = consumer.getBodyBlock().getArgument(i);
      if (auto result = dyn_cast<OpResult>(v); result && result.getOwner() == producer)
        second.map(arg, first.lookup(
                            producerYield.getValues()[result.getResultNumber()]));
      else
        second.map(arg, body->getArgument(inputIndex[v]));
    }
    for (Operation &op : consumer.getBodyOps())
      builder.clone(op, second);
    SmallVector<Value> yielded;
    for (Value v :
         cast<YieldOp>(consumer.getBodyBlock().getTerminator()).getValues())
      yielded.push_back(second.lookup(v));
    for (OpResult result : kept)
      yielded.push_back(
          first.lookup(producerYield.getValues()[result.getResultNumber()]));
    YieldOp::create(builder, consumer.getLoc(), yielded);

    unsigned n = consumer->getNumResults();
    consumer->replaceAllUsesWith(merged->getResults().take_front(n));
    for (auto [i, result] : llvm::enumerate(kept))
      result.replaceAllUsesWith(merged->getResult(n + i));
    consumer->erase();
    producer->erase();
    return merged;
  }
};

} // namespace
