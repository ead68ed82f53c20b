//===- Fuse.cpp - memfit-fuse: the pass and its report --------------------===//
//
// Runs memfit-fuse's rewrites on every function in order (FusionRules.h):
// transposes folded into contractions (FoldTransposes.cpp), producers
// merged into their consumers (ChainsAndRows.cpp), contraction operands
// and results read and written in place (ContractionViews.cpp), then the
// optimizer's updates as multi-tensor kernels (MultiTensor.cpp). Keeps the
// unfused step when the fused one's plan breaks a budget that it met, and
// writes the fusion report. See the pass description in Passes.td and
// docs/passes.md.
//
//===----------------------------------------------------------------------===//

#include "FusionRules.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Analysis/Traffic.h"
#include "memfit/Dialect/MemfitDialect.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/OpCost.h"
#include "memfit/Passes/PassOutput.h"
#include "memfit/Passes/Passes.h"
#include "memfit/runtime/Bytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITFUSEPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

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
      fusion::foldTransposes(func);
      fusion::fuseChainsAndRows(func, {maxOps, rows});
      if (views)
        fusion::viewContractionOperands(func);
    }
    if (multiTensor && failed(fusion::fuseSegments(module, maxOps)))
      return signalPassFailure();
    for (func::FuncOp func : definedFunctions(module))
      after += kernelCount(func);
    if (budgetBytes > 0) {
      // Fusion keeps the bytes live at every step at or below the step's
      // peak (canFuse's rule), but the arena's first-fit placement may
      // still come out larger: keep the unfused step if the fused one
      // breaks the budget that it met.
      // The unfused step is planned only when the fused one is over.
      auto peak = [](ModuleOp m) -> FailureOr<int64_t> {
        FailureOr<ModulePlan> plan = planModule(m, definedFunctions(m));
        if (failed(plan))
          return failure();
        return plan->weightsBytes + plan->arenaBytes;
      };
      FailureOr<int64_t> fusedPeak = peak(module);
      if (failed(fusedPeak))
        return signalPassFailure();
      FailureOr<int64_t> plainPeak =
          *fusedPeak > budgetBytes ? peak(*unfused) : FailureOr<int64_t>(0);
      if (failed(plainPeak))
        return signalPassFailure();
      if (*fusedPeak > budgetBytes && *plainPeak <= budgetBytes) {
        mlir::emitRemark(module.getLoc())
            << "memfit-fuse: the fused step's plan ("
            << ::memfit::formatBytes(*fusedPeak) << ") exceeds the budget "
            << ::memfit::formatBytes(budgetBytes)
            << " that the unfused one meets; kept unfused";
        module.getBodyRegion().takeBody(unfused->getBodyRegion());
        after = before;
      }
    }
    if (!rematReport.empty() && failed(appendRematReport(module, before)))
      return signalPassFailure();
    if (!report.empty()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "memfit-fuse: " << before << " kernels -> " << after << "\n";
      writeSteps(module, os);
      std::unique_ptr<llvm::ToolOutputFile> file =
          openPassOutput(module, report, "memfit-fuse report");
      if (!file)
        return signalPassFailure();
      file->os() << text;
      file->keep();
    }
  }

  /// Appends the fused step's plan to memfit-remat's report (which
  /// planned the step before fusion).
  LogicalResult appendRematReport(ModuleOp module, int64_t kernelsBefore) {
    FailureOr<ModulePlan> plan = planModule(module, definedFunctions(module));
    if (failed(plan))
      return failure();
    int64_t kernels = 0;
    for (func::FuncOp func : definedFunctions(module))
      kernels += kernelCount(func);
    std::string line = llvm::formatv(
        "planned after memfit-fuse ({0} kernels -> {1}): weights {2} + arena "
        "{3} = {4} bytes\n",
        kernelsBefore, kernels, plan->weightsBytes, plan->arenaBytes,
        plan->weightsBytes + plan->arenaBytes);
    if (rematReport == "-") {
      llvm::outs() << line;
      return success();
    }
    std::error_code error;
    llvm::raw_fd_ostream os(rematReport, error, llvm::sys::fs::OF_Append);
    if (!error) {
      os << line;
      os.close();
      error = os.error();
    }
    if (error)
      return module.emitError() << "cannot append to memfit-remat report '"
                                << rematReport << "': " << error.message();
    return success();
  }

  /// stepOpNames, the first few of a long list (a multi-tensor kernel's)
  /// and how many more, with the segment count.
  static std::string shortOpNames(Operation *step) {
    constexpr size_t kShown = 8;
    SmallVector<StringRef> ops;
    std::string all = stepOpNames(step);
    StringRef(all).split(ops, '+');
    std::string text = ops.size() <= kShown
                           ? all
                           : llvm::join(ArrayRef(ops).take_front(kShown), "+") +
                                 " +" + std::to_string(ops.size() - kShown) +
                                 " more ops";
    if (auto sizes = step->getAttrOfType<DenseI64ArrayAttr>(kSegmentsAttr))
      text += " (" + std::to_string(sizes.size()) + " segments)";
    return text;
  }

  /// The report's body: every step of every function with the bytes it
  /// reads and writes, its FLOPs, its ops and ONNX nodes; then the totals
  /// and the lower bound (Traffic.h). Only the counts when the module has
  /// no memory plan (a function not formed into kernels).
  static void writeSteps(ModuleOp module, raw_ostream &os) {
    FailureOr<ModulePlan> plan = failure();
    {
      ScopedDiagnosticHandler quiet(module.getContext(),
                                    [](Diagnostic &) { return success(); });
      plan = planModule(module, definedFunctions(module));
    }
    if (failed(plan))
      return;
    for (auto [func, fplan] :
         llvm::zip(definedFunctions(module), plan->functions)) {
      os << "@" << func.getSymName() << ":\n";
      os << llvm::formatv("  {0,5} {1,-11} {2,14} {3,14} {4,16}  {5}\n", "step",
                          "kind", "read", "written", "FLOPs",
                          "ops [ONNX nodes]");
      for (auto [i, step] : llvm::enumerate(fplan.schedule)) {
        OpCost cost = estimateCost(step);
        int64_t written = 0;
        for (Value result : step->getResults())
          written += fusion::bytesOf(result);
        os << llvm::formatv("  {0,5} {1,-11} {2,14} {3,14} {4,16}  {5}", i + 1,
                            isa<KernelOp>(step) ? "kernel" : "contraction",
                            ::memfit::groupDigits(cost.bytes - written),
                            ::memfit::groupDigits(written),
                            ::memfit::groupDigits(cost.flops),
                            shortOpNames(step));
        SmallVector<StringRef> nodes;
        auto note = [&](Location loc) {
          StringRef name = onnxNodeName(loc);
          if (!name.empty() && !llvm::is_contained(nodes, name))
            nodes.push_back(name);
        };
        note(step->getLoc());
        if (auto kernel = dyn_cast<KernelOp>(step))
          for (Operation &op : kernel.getBodyOps())
            note(op.getLoc());
        if (!nodes.empty()) {
          constexpr size_t kShown = 4;
          os << " [" << llvm::join(ArrayRef(nodes).take_front(kShown), " ");
          if (nodes.size() > kShown)
            os << " +" << nodes.size() - kShown << " more";
          os << "]";
        }
        os << "\n";
      }
      StepTraffic traffic = stepTraffic(fplan);
      writeTraffic(traffic, "@" + func.getSymName().str(), os);
    }
  }

  /// The kernels of `func`, which the report counts before and after.
  static int64_t kernelCount(func::FuncOp func) {
    return llvm::range_size(func.getBody().getOps<KernelOp>());
  }
};

} // namespace
