//===- RematReport.cpp - memfit-remat's report and memory timeline --------===//
//
// The text of `report=` (memfit-run's --remat-report): one row per value
// the backward needs, in forward order, then totals; and the memory
// timeline of the planned step (`timeline=`, `timeline-data=`). See
// docs/remat.md.
//
//===----------------------------------------------------------------------===//

#include "StepGraph.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Analysis/MemoryTimeline.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/PassOutput.h"
#include "memfit/runtime/Bytes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::remat;
using ::memfit::formatBytes;

std::string mlir::memfit::remat::formatFlops(double flops) {
  if (flops >= 1e9)
    return llvm::formatv("{0:F2} GFLOP", flops / 1e9).str();
  if (flops >= 1e6)
    return llvm::formatv("{0:F2} MFLOP", flops / 1e6).str();
  if (flops >= 1e3)
    return llvm::formatv("{0:F1} kFLOP", flops / 1e3).str();
  return llvm::formatv("{0:F0} FLOP", flops).str();
}

static void collectSources(const RematProblem &problem,
                           const RematEvaluation &ev, int c,
                           llvm::SetVector<int> &sources) {
  for (int input : problem.candidates[c].inputs) {
    if (ev.recomputedAt[input] >= 0)
      collectSources(problem, ev, input, sources);
    else
      sources.insert(input);
  }
}

llvm::SetVector<int>
mlir::memfit::remat::recomputationSources(const RematProblem &problem,
                                   const RematEvaluation &ev, int c) {
  llvm::SetVector<int> sources;
  collectSources(problem, ev, c, sources);
  return sources;
}

/// The report of one function.
static void writeFunctionReport(raw_ostream &os, const FunctionResult &result,
                                int64_t weightsBytes,
                                const RematOutputOptions &options) {
  const StepGraph &graph = result.graph;
  const RematProblem &problem = graph.problem;
  const RematEvaluation &ev = result.after;
  os << "remat report for @" << func::FuncOp(result.func).getSymName()
     << ": policy " << ::memfit::nameOf(result.decision.policy);
  if (options.budget > 0)
    os << ", budget " << options.budget;
  if (options.activationFraction > 0)
    os << ", activation-fraction " << options.activationFraction;
  os << "\n";
  if (options.reportRows)
    os << llvm::formatv("{0,-8} {1,-26} {2,-40} {3,-18} {4,12} {5,-10} {6}\n",
                        "value", "op", "onnx node", "shape", "bytes",
                        "decision", "reason");
  int64_t savedBytes = 0, recomputedBytes = 0, compressedWhole = 0,
          compressedBytes = 0;
  int saved = 0, recomputed = 0, compressed = 0;
  SmallVector<int> order;
  for (int c = 0, e = problem.candidates.size(); c < e; ++c)
    order.push_back(c);
  llvm::sort(order, [&](int a, int b) {
    return problem.candidates[a].forwardStep <
           problem.candidates[b].forwardStep;
  });
  for (int c : order) {
    const RematCandidate &cand = problem.candidates[c];
    const CandidateOp &candOp = graph.ops[c];
    if (ev.lastNeed[c] < 0)
      continue;
    bool isRecomputed = ev.recomputedAt[c] >= 0;
    std::string shape;
    for (Value r : candOp.op->getResults())
      shape += (shape.empty() ? "" : ",") +
               shapeToString(cast<RankedTensorType>(r.getType()).getShape());
    std::string reason;
    StringRef decision = isRecomputed ? "recompute" : "save";
    if (ev.isCompressed(c)) {
      ++compressed;
      compressedWhole += cand.bytes;
      compressedBytes += cand.compressedBytes;
      decision = graph.compression->offload ? "offload" : "compress";
      SmallVector<int> steps;
      for (int b = 0, e = ev.decompressAt.size(); b < e; ++b)
        if (llvm::is_contained(ev.decompressAt[b], c))
          steps.push_back(b);
      std::string list = llvm::join(
          llvm::map_range(steps, [](int b) { return std::to_string(b); }),
          ", ");
      reason =
          graph.compression->offload
              ? llvm::formatv("to host memory after its last forward use "
                              "({0} bytes over the bus), back before "
                              "backward step{1} {2}",
                              candOp.compressCost.bytes / 2,
                              steps.size() > 1 ? "s" : "", list)
                    .str()
              : llvm::formatv("int8, block {0}: kept in {1} bytes; quantize "
                              "{2}, dequantize before backward step{3} {4}",
                              graph.compression->blockSize,
                              cand.compressedBytes,
                              formatFlops(candOp.compressCost.flops),
                              steps.size() > 1 ? "s" : "", list)
                    .str();
    } else if (isRecomputed) {
      ++recomputed;
      recomputedBytes += cand.bytes;
      llvm::SetVector<int> from = recomputationSources(problem, ev, c);
      reason = llvm::formatv("before backward step {0}, {1}; from ",
                             ev.recomputedAt[c],
                             formatFlops(candOp.cost.flops))
                   .str();
      if (from.empty())
        reason += "parameters and inputs";
      for (auto [i, s] : llvm::enumerate(from)) {
        if (i == 3) {
          reason += llvm::formatv(" and {0} more", from.size() - 3).str();
          break;
        }
        reason += (i ? ", " : "") + graph.ops[s].name;
      }
    } else {
      ++saved;
      savedBytes += cand.bytes;
      auto why = candOp.op->getAttrOfType<StringAttr>(kSavedAttr);
      reason = why ? why.str() : "";
    }
    StringRef node = stepNodeName(candOp.op);
    if (options.reportRows)
      os << llvm::formatv("{0,-8} {1,-26} {2,-40} {3,-18} {4,12} {5,-10} {6}\n",
                          llvm::formatv("f{0}", cand.forwardStep).str(),
                          stepOpNames(candOp.op), node.empty() ? "-" : node,
                          shape, cand.bytes, decision, reason);
  }
  // What the recomputations, quantizations and dequantizations add, in
  // FLOPs and bytes moved.
  double extra = 0;
  int64_t bytesMoved = 0;
  for (int b = 0, e = ev.decompressAt.size(); b < e; ++b)
    for (int c : ev.decompressAt[b]) {
      extra += graph.ops[c].decompressCost.flops;
      bytesMoved += graph.ops[c].decompressCost.bytes;
    }
  for (int c = 0, e = problem.candidates.size(); c < e; ++c) {
    const CandidateOp &candOp = graph.ops[c];
    if (ev.isNeeded(c) && ev.isRecomputed(c)) {
      extra += candOp.cost.flops;
      bytesMoved += candOp.cost.bytes;
    }
    if (ev.isNeeded(c) && ev.isCompressed(c)) {
      extra += candOp.compressCost.flops;
      bytesMoved += candOp.compressCost.bytes;
    }
  }
  os << llvm::formatv("totals: {0} saved ({1} bytes), {2} recomputed ({3} "
                      "bytes)",
                      saved, savedBytes, recomputed, recomputedBytes);
  if (graph.compression && graph.compression->offload)
    os << llvm::formatv(", {0} offloaded ({1} bytes to host memory)",
                        compressed, compressedWhole - compressedBytes);
  else if (graph.compression)
    os << llvm::formatv(", {0} compressed ({1} -> {2} bytes)", compressed,
                        compressedWhole, compressedBytes);
  os << "\n";
  os << llvm::formatv("  extra FLOPs: {0} ({1:F2}% of the step's {2}); "
                      "extra bytes moved: {3}\n",
                      formatFlops(extra),
                      graph.stepFlops > 0 ? 100.0 * extra / graph.stepFlops
                                          : 0.0,
                      formatFlops(graph.stepFlops), formatBytes(bytesMoved));
  os << llvm::formatv("  activation memory: {0} -> {1} bytes ({2:F1}%)\n",
                      result.before.peakActivation, ev.peakActivation,
                      result.before.peakActivation
                          ? 100.0 * ev.peakActivation /
                                result.before.peakActivation
                          : 100.0);
  os << llvm::formatv("  modelled peak: {0} -> {1} bytes (weights {2} + "
                      "arena {3} -> {4})\n",
                      weightsBytes + result.before.peakArena,
                      weightsBytes + ev.peakArena, weightsBytes,
                      result.before.peakArena, ev.peakArena);
  if (!result.solverNote.empty())
    os << "  solver: " << result.solverNote << "\n";
}

LogicalResult mlir::memfit::remat::writeRematOutputs(
    ModuleOp module, ArrayRef<FunctionResult> results, int64_t weightsBytes,
    const ModulePlan &plan, double seconds, const RematOutputOptions &options) {
  // Every output is opened or written before the report is kept, so a
  // failing timeline leaves no report of a compile that failed.
  std::string text;
  std::unique_ptr<llvm::ToolOutputFile> file;
  if (!options.report.empty()) {
    llvm::raw_string_ostream os(text);
    for (const FunctionResult &result : results)
      writeFunctionReport(os, result, weightsBytes, options);
    os << llvm::formatv("planned: weights {0} + arena {1} = {2} bytes\n",
                        plan.weightsBytes, plan.arenaBytes,
                        plan.weightsBytes + plan.arenaBytes);
    os << llvm::formatv("remat pass time: {0:F3} s\n", seconds);
    file = openPassOutput(module, options.report, "memfit-remat report");
    if (!file)
      return failure();
  }
  if (failed(writeMemoryTimelineFiles(plan, module, definedFunctions(module),
                                      options.timeline, options.timelineData)))
    return failure();
  if (file) {
    file->os() << text;
    file->keep();
  }
  return success();
}
