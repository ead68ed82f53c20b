//===- StepGraph.h - memfit-remat's view of a training step ------*- C++ -*-===//
//
// Shared by the pass (Rematerialize.cpp) and its report (RematReport.cpp):
// the schedule of one function, the IR-free RematProblem built from it,
// and what the pass decided for it.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_PASSES_REMAT_STEPGRAPH_H
#define MEMFIT_PASSES_REMAT_STEPGRAPH_H

#include "memfit/Analysis/RematPolicies.h"
#include "memfit/Dialect/OpCost.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <optional>
#include <string>

namespace mlir::memfit {
struct ModulePlan;
} // namespace mlir::memfit

// The pass's own types, in a namespace of their own: every memfit library
// shares mlir::memfit, and two types of one name there would break the
// one-definition rule silently.
namespace mlir::memfit::remat {

/// The IR side of a candidate of the problem.
struct CandidateOp {
  Operation *op = nullptr;
  OpCost cost;
  std::string why; // why it cannot be recomputed
  std::string name; // its ONNX node, or "<ops>@<step>"
  /// When it can be saved compressed: the results that are (the others
  /// stay whole), what quantizing them costs once and dequantizing them
  /// costs per backward step that needs them.
  SmallVector<unsigned> compressedResults;
  OpCost compressCost, decompressCost;
};

/// How memfit-remat may compress saved values (memfit-quantize's
/// `saved-activations=int8`): linear i8 codes, one absmax per `blockSize`
/// values, for float results of at least one block. Or, with `offload`
/// (offload-activations), a copy in host memory: nothing stays on the
/// device, and each copy, out and back, costs `busCost` per byte (a device
/// byte's cost being 1).
struct Compression {
  int64_t blockSize = 0;
  bool offload = false;
  double busCost = 0;
};

/// The schedule of one function and its candidates.
struct StepGraph {
  func::FuncOp func;
  SmallVector<Operation *> steps; // steps [0, numForward()) are forward
  /// The candidates, fixed bytes and caps; candidate i is ops[i].
  RematProblem problem;
  SmallVector<CandidateOp> ops;
  /// Whether candidates may be saved compressed, and how.
  std::optional<Compression> compression;
  DenseMap<Operation *, int> candidateOf;
  double stepFlops = 0; // FLOPs of the whole step before remat

  int numForward() const { return problem.numForwardSteps; }
  int numBackward() const { return problem.numBackwardSteps; }
};

/// The step graph of `func` (StepGraph.cpp): its schedule split at the
/// first backward step, a candidate for each forward step the backward
/// reads (and for each forward value a recomputation would need), their
/// layers, and with `compression` what saving each compressed or offloaded
/// takes and costs.
StepGraph buildStepGraph(func::FuncOp func,
                         std::optional<Compression> compression);

/// The codes (i8, one per value) and absmax (f32, one per `blockSize`
/// values) types of `value` saved compressed.
std::pair<RankedTensorType, RankedTensorType>
compressedTypes(Value value, int64_t blockSize);

/// What the pass decided for one function.
struct FunctionResult {
  func::FuncOp func;
  StepGraph graph;
  RematDecision decision;
  RematEvaluation before, after;
  std::string solverNote;
};

/// The kept candidates a recomputation of `c` starts from, in the order
/// its inputs reach them: its inputs, through the inputs of those that are
/// recomputed too.
llvm::SetVector<int> recomputationSources(const RematProblem &problem,
                                          const RematEvaluation &ev, int c);

/// "16.4 kFLOP", "1.20 MFLOP".
std::string formatFlops(double flops);

/// What the report's header repeats of the pass's options, and where the
/// outputs go ("" for none).
struct RematOutputOptions {
  int64_t budget = 0; // bytes; 0: none
  double activationFraction = 0;
  std::string report, timeline, timelineData;
  /// Whether the report lists a row per value (else only the totals).
  bool reportRows = true;
};

/// Writes the remat report (--remat-report) and the memory timeline of the
/// planned module.
LogicalResult writeRematOutputs(ModuleOp module,
                                ArrayRef<FunctionResult> results,
                                int64_t weightsBytes, const ModulePlan &plan,
                                double seconds,
                                const RematOutputOptions &options);

} // namespace mlir::memfit::remat

#endif // MEMFIT_PASSES_REMAT_STEPGRAPH_H
