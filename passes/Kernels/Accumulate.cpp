//===- Accumulate.cpp - memfit-accumulate: scattered rows added in place --===//
//
// A tied embedding's gradient is the LM head's weight gradient plus the
// rows that the embedding's gather scatters: the rows are added in place
// into the LM head's gradient (memfit.gather_grad ... into), so neither the
// zeroed full-size scatter nor the sum is stored. See the pass description
// in Passes.td and docs/passes.md.
//
//===----------------------------------------------------------------------===//

#include "FusionRules.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITACCUMULATEPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// A kernel that only adds a scatter of rows (a kernel holding one
/// gather_grad) to another step's result, which nothing else reads,
/// becomes the gather_grad accumulating into that result in place, at the
/// scatter's place: a tied embedding's gradient is the LM head's gradient
/// with the embedding's rows added, and neither the zeros the rows were
/// scattered into nor the sum is stored. Not for a sum that memfit.assign
/// stores (the memory plan updates a parameter in a buffer of its own).
void accumulateScatters(func::FuncOp func) {
  for (KernelOp add :
       llvm::make_early_inc_range(func.getBody().getOps<KernelOp>())) {
    auto ops = add.getBodyOps();
    if (!llvm::hasSingleElement(ops) || add->getNumResults() != 1 ||
        llvm::any_of(add->getUsers(),
                     [](Operation *user) { return isa<AssignOp>(user); }))
      continue;
    auto sum = dyn_cast<AddOp>(*ops.begin());
    Type type = add->getResult(0).getType();
    if (!sum || sum.getLhs().getType() != type ||
        sum.getRhs().getType() != type)
      continue;
    for (unsigned side : {0u, 1u}) {
      auto rowsArg = dyn_cast<BlockArgument>(sum->getOperand(side));
      auto otherArg = dyn_cast<BlockArgument>(sum->getOperand(1 - side));
      if (!rowsArg || !otherArg)
        break;
      Value rows = add.getInputs()[rowsArg.getArgNumber()];
      Value other = add.getInputs()[otherArg.getArgNumber()];
      auto scatterKernel = rows.getDefiningOp<KernelOp>();
      if (!scatterKernel || !rows.hasOneUse() ||
          !llvm::hasSingleElement(scatterKernel.getBodyOps()))
        continue;
      auto scatter =
          dyn_cast<GatherGradOp>(*scatterKernel.getBodyOps().begin());
      Operation *def = other.getDefiningOp();
      if (!scatter || scatter.getInit() || !def || !other.hasOneUse() ||
          isBufferView(def) || isa<LoadParameterOp, ConstantOp>(def) ||
          !def->isBeforeInBlock(scatterKernel))
        continue;
      OpBuilder b(scatterKernel);
      fusion::MergedKernel parts;
      for (Value input : scatterKernel.getInputs())
        parts.addInput(input);
      parts.addInput(other);
      Location loc = b.getFusedLoc({scatterKernel.getLoc(), add.getLoc()});
      KernelOp merged = parts.create(b, loc, TypeRange{type});
      copyMemfitAttrs(add, merged);
      IRMapping map;
      parts.clone(b, scatterKernel, map);
      auto accumulated =
          map.lookup(scatter.getResult()).getDefiningOp<GatherGradOp>();
      accumulated.getInitMutable().assign(
          parts.body->getArgument(parts.index.lookup(other)));
      accumulated->setLoc(b.getFusedLoc({scatter.getLoc(), sum.getLoc()}));
      copyMemfitAttrs(sum, accumulated);
      YieldOp::create(b, loc, accumulated.getResult());
      add->getResult(0).replaceAllUsesWith(merged->getResult(0));
      add->erase();
      scatterKernel->erase();
      break;
    }
  }
}

struct MemfitAccumulatePass
    : public mlir::memfit::impl::MemfitAccumulatePassBase<
          MemfitAccumulatePass> {
  void runOnOperation() override { accumulateScatters(getOperation()); }
};

} // namespace
