//===- EarlyUpdates.cpp - memfit-early-updates ----------------------------===//
//
// memfit-optimizer writes every update after the whole backward, so every
// parameter's gradient is live until the end of the step: under layer
// checkpoints that is where the plan's peak is (all gradients at once).
// This pass moves each op whose results are written to parameters or
// training states (memfit.assign) to just after the last op it must
// follow: the producers of its operands, and every reader of the old value
// of what it writes (the loads of those symbols and what reads them,
// through views). The state loads that only it reads move with it, its
// assigns right after it; an update whose results other updates read (the
// step counter's, the loss scale's) is pulled along just before the first
// of them, so that its results do not live through the forward. So an
// update runs as soon as its gradient is complete and its weight is read
// for the last time, and the gradient's buffer is free from there on.
// Updates that wait for every gradient (a clipped global norm, dynamic loss
// scaling's overflow check) stay where their operands put them. Values and
// their order of computation do not change, only when independent ops run.
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <vector>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITEARLYUPDATESPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// The later of `a` and `b` in their block (either may be null).
Operation *later(Operation *a, Operation *b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return a->isBeforeInBlock(b) ? b : a;
}

/// The last op but `self` that reads `value`, following views (which alias
/// it) to their readers.
Operation *lastReader(Value value, Block *block,
                      const llvm::SmallPtrSetImpl<Operation *> &moving) {
  Operation *last = nullptr;
  for (Operation *user : value.getUsers()) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (moving.contains(inBlock))
      continue;
    last = later(last, inBlock);
    if (isBufferView(user))
      for (Value result : user->getResults())
        last = later(last, lastReader(result, block, moving));
  }
  return last;
}

/// What moving one update takes: the shared updates it pulls along, the
/// ops to place (its state loads, itself, its assigns), and the op they
/// must follow (null: the block's start).
struct Move {
  std::vector<Move> pulled;
  SmallVector<Operation *> ops;
  Operation *after = nullptr;
};

/// The pass's work on one function (moveUpdatesEarly), also run by
/// memfit-fuse to plan the step as it will run.
struct EarlyUpdater {
  Block *block = nullptr;
  llvm::StringMap<SmallVector<LoadParameterOp>> loads;
  llvm::SmallPtrSet<Operation *, 16> updates;
  unsigned moved = 0;

  /// Whether an update's results are read by ops other than its assigns
  /// (the step counter's kernel, whose bias corrections every AdamW update
  /// reads): it is not moved for itself, but pulled along, just in time,
  /// by the first update that reads it, so that its results do not live
  /// through the forward.
  /// One of memfit-optimizer's ZeRO slices (kShardSliceAttr): a kernel
  /// made of them, or a reduce-scatter.
  static bool isShardSlice(Operation *op) {
    if (op->hasAttr(kShardSliceAttr))
      return true;
    auto kernel = dyn_cast<KernelOp>(op);
    return kernel && llvm::any_of(kernel.getBodyOps(), [](Operation &inner) {
             return inner.hasAttr(kShardSliceAttr);
           });
  }

  static bool isShared(Operation *update) {
    return llvm::any_of(update->getUsers(),
                        [](Operation *user) { return !isa<AssignOp>(user); });
  }

  void moveUpdates(func::FuncOp func) {
    if (func.getBody().empty())
      return;
    block = &func.getBody().front();
    loads.clear();
    updates.clear();
    SmallVector<Operation *> order;
    for (Operation &op : *block) {
      if (auto load = dyn_cast<LoadParameterOp>(op))
        loads[load.getName()].push_back(load);
      if (auto assign = dyn_cast<AssignOp>(op))
        if (Operation *def = assign.getValue().getDefiningOp();
            def && def->getBlock() == block && updates.insert(def).second)
          order.push_back(def);
    }
    for (Operation *update : order)
      if (!isShared(update))
        moveEarly(update);
  }

  /// What moving `update` takes: it must follow the producers of its
  /// operands (but the shared updates it pulls along and the state loads
  /// only it reads, which go with it) and every reader of the old value of
  /// what it writes.
  Move plan(Operation *update) {
    Move move;
    SmallVector<AssignOp> assigns;
    for (Operation *user : update->getUsers())
      if (auto assign = dyn_cast<AssignOp>(user))
        assigns.push_back(assign);
    llvm::SmallPtrSet<Operation *, 4> seen, carried;
    std::function<void(Operation *)> operandsOf = [&](Operation *op) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != block || !seen.insert(def).second)
          continue;
        auto load = dyn_cast<LoadParameterOp>(def);
        if (load && load->hasOneUse()) {
          carried.insert(def);
          move.ops.push_back(def);
        } else if (updates.contains(def) && isShared(def)) {
          move.pulled.push_back(plan(def));
        } else if (def->hasOneUse() && isShardSlice(def)) {
          // ZeRO stage 1's rows of the parameter or gradient: they go with
          // the update, after what they read.
          operandsOf(def);
          carried.insert(def);
          move.ops.push_back(def);
        } else {
          move.after = later(move.after, def);
        }
      }
    };
    operandsOf(update);
    // Every reader of the old value of what it overwrites comes first, but
    // for what moves with it (the update, and ZeRO's slices of the
    // parameter that it and the updates it pulls read).
    llvm::SmallPtrSet<Operation *, 8> moving{update};
    std::function<void(const Move &)> collect = [&](const Move &m) {
      moving.insert(m.ops.begin(), m.ops.end());
      for (const Move &pulled : m.pulled)
        collect(pulled);
    };
    collect(move);
    for (AssignOp assign : assigns)
      for (LoadParameterOp load : loads.lookup(assign.getName())) {
        if (carried.contains(load))
          continue;
        move.after = later(move.after, load);
        move.after = later(move.after,
                           lastReader(load.getResult(), block, moving));
      }
    move.ops.push_back(update);
    move.ops.append(assigns.begin(), assigns.end());
    return move;
  }

  /// Moves `update`, the state loads only it reads and its assigns as early
  /// as what they read and overwrite allows; a shared update it reads that
  /// comes later goes just before it.
  void moveEarly(Operation *update) {
    Move move = plan(update);
    // The point after which everything goes: the latest of what it and
    // everything it pulls along (and what those pull) must follow.
    std::function<Operation *(const Move &)> latest = [&](const Move &m) {
      Operation *point = m.after;
      for (const Move &pulled : m.pulled)
        point = later(point, latest(pulled));
      return point;
    };
    Operation *point = latest(move);
    // A bias gradient's column sum runs as the next gemm's epilogue
    // (memfit-fuse's memfit.epilogue): nothing goes between the two.
    if (point && point->hasAttr(kEpilogueAttr))
      for (Operation *next = point->getNextNode(); next && next != update;
           next = next->getNextNode()) {
        point = next;
        if (isa<GemmOp>(next))
          break;
      }
    // A pulled update already before the point stays there, and so does
    // what it reads; the others go first, what they pull before them.
    // Each once: two updates may pull the same one (AdamW's read both the
    // loss scale's kernel and the step counter's, which reads it too).
    SmallVector<Operation *> ops;
    llvm::SmallPtrSet<Operation *, 8> collected;
    std::function<void(const Move &)> collect = [&](const Move &m) {
      for (const Move &pulled : m.pulled) {
        Operation *shared = *llvm::find_if(
            pulled.ops, [&](Operation *op) { return updates.contains(op); });
        if ((!point || !shared->isBeforeInBlock(point)) &&
            !collected.contains(shared))
          collect(pulled);
      }
      for (Operation *op : m.ops)
        if (collected.insert(op).second)
          ops.push_back(op);
    };
    collect(move);
    // Nothing earlier to go to.
    if (point ? point == update || !point->isBeforeInBlock(update)
              : ops.front() == &block->front())
      return;
    for (Operation *op : ops) {
      if (point)
        op->moveAfter(point);
      else
        op->moveBefore(&block->front());
      point = op;
    }
    ++moved;
  }
};

struct MemfitEarlyUpdatesPass
    : public mlir::memfit::impl::MemfitEarlyUpdatesPassBase<
          MemfitEarlyUpdatesPass> {
  using Base::Base;

  void runOnOperation() override {
    EarlyUpdater updater;
    getOperation().walk(
        [&](func::FuncOp func) { updater.moveUpdates(func); });
    numMoved += updater.moved;
  }
};

} // namespace

unsigned mlir::memfit::moveUpdatesEarly(func::FuncOp func) {
  EarlyUpdater updater;
  updater.moveUpdates(func);
  return updater.moved;
}
