//===- MemoryPlan.cpp - print the arena plan and memory timeline ----------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Analysis/MemoryTimeline.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITMEMORYPLANPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

struct MemfitMemoryPlanPass
    : public memfit::impl::MemfitMemoryPlanPassBase<MemfitMemoryPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file) {
      module.emitError() << "cannot open memory plan output '" << output
                         << "': " << error;
      return signalPassFailure();
    }
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
