//===- MemoryTimeline.h - bytes live over a planned step -----------*- C++ -*-===//
//
// The memory timeline of a planned function: for every step of its
// schedule, the arena bytes live by category, on top of the weights region
// (which is live throughout). Written as CSV data and as an SVG stacked
// area chart. Live bytes follow the memory plan's own rule: an arena buffer
// counts at every step from its first to its last, both included, so the
// largest step is the plan's peak.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_ANALYSIS_MEMORYTIMELINE_H
#define MEMFIT_ANALYSIS_MEMORYTIMELINE_H

#include "memfit/Analysis/MemoryPlan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir::memfit {

struct MemoryTimeline {
  std::string function;
  /// The weights region (alignment padding included) and its bytes by
  /// category; live at every step.
  int64_t weightsBytes = 0;
  CategoryBytes weightsByCategory{};
  /// Indexed by step, 0 (before the first kernel) to N + 1 (after the
  /// last): the arena bytes live at that step by category.
  std::vector<CategoryBytes> arena;
  /// Per step: the op names (a kernel's body ops joined by '+', or
  /// matmul/gemm) and the ONNX node name from the location; "start" and
  /// "end" for steps 0 and N + 1.
  std::vector<std::string> stepLabels;
  /// The first step whose op (or one of its kernel's body ops) carries
  /// memfit.backward; 0 when there is none.
  int64_t firstBackwardStep = 0;
  /// The step with the most live arena bytes (the first such step).
  int64_t peakStep = 0;
  /// The arena as planned (first-fit offsets); at least the largest live
  /// sum, more where placement leaves holes.
  int64_t arenaBytes = 0;

  int64_t numSteps() const { return arena.size(); }
  /// Arena bytes live at `step`, all categories.
  int64_t arenaLive(int64_t step) const;
};

/// The timeline of `func` planned as `plan`, with the weights region split
/// as `weightsByCategory` (from the module plan).
MemoryTimeline buildMemoryTimeline(const MemoryPlan &plan, func::FuncOp func,
                                   const CategoryBytes &weightsByCategory);

/// CSV: `# key value` comment lines (function, weights and its categories,
/// arena_planned, peak_step, first_backward_step), then the header
/// `step,op,<arena categories ever live>,arena_live,total` and one row per
/// step; total is weights plus arena_live.
void writeMemoryTimelineCsv(const MemoryTimeline &timeline,
                            llvm::raw_ostream &os);

/// A self-contained SVG stacked area chart of the timeline: the weights
/// categories as the bottom bands, the arena categories above, a legend
/// with each category's bytes at the peak, the peak marked, a dashed line
/// at the first backward step and one at the allocated total (weights plus
/// planned arena). Long timelines are reduced to at most 2000 points, each
/// the step of its bucket with the most live bytes.
void writeMemoryTimelineSvg(const MemoryTimeline &timeline,
                            llvm::StringRef title, llvm::raw_ostream &os);

/// Writes the timeline of the function of `plan` (the module plan of
/// `funcs`) with the largest arena peak to `svgPath` and `csvPath`, each
/// skipped when empty. Files are written to a temporary next to them and
/// renamed; on error, emits a diagnostic on `module` and leaves no file.
LogicalResult writeMemoryTimelineFiles(const ModulePlan &plan, ModuleOp module,
                                       llvm::ArrayRef<func::FuncOp> funcs,
                                       llvm::StringRef svgPath,
                                       llvm::StringRef csvPath);

} // namespace mlir::memfit

#endif // MEMFIT_ANALYSIS_MEMORYTIMELINE_H
