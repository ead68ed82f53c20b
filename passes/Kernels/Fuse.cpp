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

/// How much larger than the unfused step's plan a fused one may come out
/// (the first-fit placement of a different set of buffers).
constexpr double kPlanSlack = 0.02;

struct MemfitFusePass
    : public mlir::memfit::impl::MemfitFusePassBase<MemfitFusePass> {
  using Base::Base;

  /// The rewrites, in order, on `module`. With `strict`, a merge that
  /// keeps any bytes live longer than before is not made.
  LogicalResult fuseModule(ModuleOp module, bool strict) {
    // Each function's arena peak as planned before fusion: merges that keep
    // more bytes live must stay under it (strict: none may; no plan needed).
    FailureOr<ModulePlan> unfusedPlan =
        strict ? FailureOr<ModulePlan>(failure()) : planQuietly(module);
    for (auto [index, func] : llvm::enumerate(definedFunctions(module))) {
      fusion::foldTransposes(func);
      int64_t planPeak = strict ? 1
                         : succeeded(unfusedPlan)
                             ? unfusedPlan->functions[index].arenaBytes
                             : 0;
      fusion::fuseChainsAndRows(func, {maxOps, rows, planPeak});
      if (views)
        fusion::viewContractionOperands(func);
      // cuBLASLt's epilogues: the bias into its matmul; its GELU and the
      // bias gradient marked beside their gemms (their results then live
      // one step longer: not when strict).
      if (epilogues) {
        fusion::biasIntoContractions(func);
        if (!strict) {
          fusion::geluIntoContractions(func);
          fusion::markBiasGradients(func);
        }
      }
    }
    // Slices as views too (gemm operands at an offset, kernels' element
    // reads), where the plan does not grow: a view keeps its whole source
    // live until its last reader.
    if (views) {
      OwningOpRef<ModuleOp> sliced = module.clone();
      for (func::FuncOp func : definedFunctions(*sliced))
        fusion::viewContractionOperands(func, /*slices=*/true);
      FailureOr<int64_t> with = fusion::planTotal(*sliced),
                         without = fusion::planTotal(module);
      if (succeeded(with) && succeeded(without) && *with <= *without)
        module.getBodyRegion().takeBody(sliced->getBodyRegion());
    }
    if (multiTensor && failed(fusion::fuseSegments(module, maxOps)))
      return failure();
    // The weight casts' merge keeps bytes live longer: not when strict.
    if (multiTensor && !strict &&
        failed(fusion::fuseWeightCasts(module, maxOps)))
      return failure();
    return success();
  }

  static FailureOr<ModulePlan> planQuietly(ModuleOp module) {
    ScopedDiagnosticHandler quiet(module.getContext(),
                                  [](Diagnostic &) { return success(); });
    return planModule(module, definedFunctions(module));
  }

  /// Weights and arena of `module`'s plan (after memfit-early-updates'
  /// moves, with `early-updates`), or failure.
  FailureOr<int64_t> planBytes(ModuleOp module) {
    OwningOpRef<ModuleOp> moved;
    if (earlyUpdates) {
      moved = module.clone();
      module = *moved;
      for (func::FuncOp func : definedFunctions(module))
        moveUpdatesEarly(func);
    }
    FailureOr<ModulePlan> plan = planQuietly(module);
    if (failed(plan))
      return failure();
    return plan->weightsBytes + plan->arenaBytes;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OwningOpRef<ModuleOp> unfused = module.clone();
    int64_t before = 0, after = 0;
    for (func::FuncOp func : definedFunctions(module))
      before += kernelCount(func);
    if (failed(fuseModule(module, /*strict=*/false)))
      return signalPassFailure();
    // The schedule's count of live bytes and the plan's placement differ:
    // where the fused step's plan comes out more than kPlanSlack larger
    // than the unfused one's, or over a budget that the unfused one meets,
    // fuse again without the merges that keep bytes live longer (a running
    // sum's adds merged into one kernel keeps every addend until it), and
    // keep the unfused step if even that is over. The slack keeps a few
    // bytes of first-fit packing from costing every merge (GPT-2 small's
    // fused step planned 220 KB, 0.01%, over).
    FailureOr<int64_t> fusedBytes = planBytes(module);
    FailureOr<int64_t> unfusedBytes = planBytes(*unfused);
    int64_t budgetBytes = static_cast<int64_t>(budget.getValue().bytes);
    auto fits = [&](int64_t bytes) {
      bool overBudget = budgetBytes > 0 && bytes > budgetBytes &&
                        *unfusedBytes <= budgetBytes;
      return !overBudget &&
             double(bytes) <= double(*unfusedBytes) * (1.0 + kPlanSlack);
    };
    if (succeeded(fusedBytes) && succeeded(unfusedBytes) &&
        !fits(*fusedBytes)) {
      OwningOpRef<ModuleOp> strict = unfused->clone();
      FailureOr<int64_t> strictBytes =
          succeeded(fuseModule(*strict, /*strict=*/true))
              ? planBytes(*strict)
              : FailureOr<int64_t>(failure());
      bool keepStrict = succeeded(strictBytes) && fits(*strictBytes);
      mlir::emitRemark(module.getLoc())
          << "memfit-fuse: the fused step's plan ("
          << ::memfit::groupDigits(*fusedBytes)
          << " bytes) is larger than the unfused one's ("
          << ::memfit::groupDigits(*unfusedBytes) << " bytes); "
          << (keepStrict ? "fused again without the merges that keep bytes "
                           "live longer: " +
                               ::memfit::groupDigits(*strictBytes) + " bytes"
                         : std::string("kept unfused"));
      ModuleOp kept = keepStrict ? *strict : *unfused;
      module.getBodyRegion().takeBody(kept.getBodyRegion());
    }
    for (func::FuncOp func : definedFunctions(module))
      after += kernelCount(func);
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
        if (step->hasAttr(kEpilogueAttr))
          os << ", the next contraction's epilogue";
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
