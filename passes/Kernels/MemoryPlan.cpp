//===- MemoryPlan.cpp - print the arena plan and memory timeline ----------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Analysis/MemoryTimeline.h"
#include "memfit/Passes/PassOutput.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITMEMORYPLANPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

struct MemfitMemoryPlanPass
    : public mlir::memfit::impl::MemfitMemoryPlanPassBase<MemfitMemoryPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::unique_ptr<llvm::ToolOutputFile> file =
        openPassOutput(module, output, "memory plan");
    if (!file)
      return signalPassFailure();
    SmallVector<func::FuncOp> funcs = definedFunctions(module);
    FailureOr<ModulePlan> plan = planModule(module, funcs);
    if (failed(plan))
      return signalPassFailure();
    for (auto [func, functionPlan] : llvm::zip(funcs, plan->functions))
      printMemoryPlan(functionPlan, func, file->os(), buffers);
    file->keep();
    if (failed(writeMemoryTimelineFiles(*plan, module, funcs, timeline,
                                        timelineData)))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
