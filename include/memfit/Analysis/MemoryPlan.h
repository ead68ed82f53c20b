//===- MemoryPlan.h - schedule, liveness and arena offsets -------*- C++ -*-===//
//
// The memory planner of a function whose ops have been formed into kernels.
// The schedule is the function's op order: every kernel and contraction is
// one step. Parameters and constants live in a weights region, laid out one
// after another; everything else (inputs, outputs, intermediate values)
// lives in one arena where buffers whose live ranges do not overlap share
// bytes. Views (reshape, flatten, squeeze, unsqueeze) share the buffer of
// the value they view.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_ANALYSIS_MEMORYPLAN_H
#define MEMFIT_ANALYSIS_MEMORYPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <vector>

namespace mlir::memfit {

/// Alignment of every buffer, in bytes (matches the runtime's).
constexpr int64_t kPlanAlignment = 256;
/// Bytes of the index-error word (the runtime's rt::IndexError).
constexpr int64_t kIndexErrorWordBytes = 16;

/// Host: a parameter or state kept in host memory (memfit.memory_space =
/// "host", memfit-optimizer's offload-states), laid out in a region of its
/// own that the device allocation does not hold.
enum class BufferRegion { Weights, Arena, Host };
/// What a buffer holds. Weights-region categories persist across steps;
/// arena categories are live for part of one. Forward-only functions use
/// Activation; training functions (with backward ops or parameter updates)
/// split it into Gradient (of a parameter), SavedActivation (a forward
/// value the backward reads), Recomputed (a forward value that memfit-remat
/// recomputes in the backward) and Temporary.
enum class BufferCategory {
  Parameter,
  FrozenParameter,
  Constant,
  OptimizerState,
  GradientAccumulator,
  Input,
  Output,
  Activation,
  Gradient,
  SavedActivation,
  Recomputed,
  Temporary,
  /// Mixed precision: a 16-bit copy of an fp32 parameter (a cast with
  /// reason "working-copy"), saved, recomputed or temporary.
  WorkingCopy,
  /// memfit-quantize: the 8-bit codes of an optimizer state, and the
  /// absmax of its blocks.
  StateCodes,
  StateScales,
  /// memfit-remat: the codes and absmax of a saved activation kept
  /// compressed (memfit-quantize saved-activations=int8).
  CompressedActivation,
  /// memfit-quantize weights=...: the codes of a frozen weight, and its
  /// scales (absmax, or with double quantization their codes, scales and
  /// offset).
  WeightCodes,
  WeightScales,
  /// A training step's temporaries of its loss: what a loss op (class
  /// Loss) or a chunk of memfit-chunk-loss (memfit.loss) writes and the
  /// backward does not keep past the loss's gradient (its logits,
  /// probabilities and their gradient).
  Loss,
  /// memfit-shard: what a collective receives (a gradient averaged over
  /// the ranks, a gathered slice).
  Communication,
  /// memfit-remat offload-activations: a saved value's copy in host memory
  /// (the host region), from its last forward use to its last backward one.
  OffloadedActivation,
  /// offload-states: what the host's update kernels read that the device
  /// computed (memfit-host-transfers' copies), in the host region until
  /// the step's end, and what they write that no assignment stores (the
  /// new working copies before their copy to the device), by live range.
  HostTransfer,
};
constexpr unsigned kNumBufferCategories = 22;

/// Whether `buffer` is a host-region buffer packed by live range
/// (offloaded activations, host transfers), not a state at a fixed place.
bool packedInHost(const struct PlannedBuffer &buffer);
/// Bytes by buffer category.
using CategoryBytes = std::array<int64_t, kNumBufferCategories>;

llvm::StringRef stringifyBufferCategory(BufferCategory category);

struct PlannedBuffer {
  Value value; // the value that owns the storage (not a view)
  BufferRegion region = BufferRegion::Arena;
  BufferCategory category = BufferCategory::Activation;
  int64_t bytes = 0;
  int64_t offset = 0; // within its region
  /// Live range in steps, both ends included. Steps are numbered from 1;
  /// inputs are live from step 0 (set before the run) to step numSteps + 1
  /// (a session may run again on them), and outputs until step numSteps + 1
  /// (read after the run).
  int64_t firstStep = 0;
  int64_t lastStep = 0;
};

struct MemoryPlan {
  llvm::SmallVector<PlannedBuffer> buffers;
  /// Every tensor value of the function body, views included, to the index
  /// of its buffer.
  llvm::DenseMap<Value, unsigned> bufferOf;
  /// The kernels and contractions in execution order.
  llvm::SmallVector<Operation *> schedule;
  int64_t weightsBytes = 0;
  int64_t arenaBytes = 0; // the peak
  int64_t hostBytes = 0;  // the host region
  /// Bytes of the host region packed by live range past its states:
  /// offloaded activations [0] and host transfers [1].
  std::array<int64_t, 2> hostPackedBytes{};
  /// The step with the most live arena bytes (the first such step), and
  /// those bytes by category.
  int64_t peakStep = 0;
  CategoryBytes peakBytes{};
  /// The first step whose op (or one of its kernel's body ops) carries
  /// memfit.backward; 0 when there is none.
  int64_t firstBackwardStep = 0;

  /// Sum of the sizes of a category's buffers (arena categories add up to
  /// more than the peak when they share space).
  int64_t categoryBytes(BufferCategory category) const;
  const PlannedBuffer &bufferFor(Value value) const {
    return buffers[bufferOf.lookup(value)];
  }
};

/// The arena bytes live at every step of `plan`, 0 (before the first
/// kernel) to N + 1 (after the last), by category: a buffer is live at every
/// step of firstStep..lastStep.
std::vector<CategoryBytes> arenaLiveByStep(const MemoryPlan &plan);

/// `bytes` rounded up to the planner's alignment.
int64_t alignToPlan(int64_t bytes);

/// The ops a plan schedules as steps: kernels and contractions.
bool isScheduledStep(Operation *op);

/// Ops that only reinterpret the shape of a contiguous buffer (reshape,
/// flatten, squeeze, unsqueeze: the BufferView trait): no kernel, no buffer
/// of their own.
bool isBufferView(Operation *op);

/// The input that `value`, a kernel's result, is written into in place,
/// else null.
Value tiedInputOf(Value value);

/// The value that `value` views, through views only.
Value viewRoot(Value value);

/// The value whose buffer `value` shares: through views, and through the
/// results that kernels write in place into an input
/// (KernelOp::getTiedInput, memfit-accumulate's).
Value bufferRoot(Value value);

/// The ops that read `value` or a view of it (views themselves excluded).
void collectViewReaders(Value value, SmallVectorImpl<Operation *> &readers);

/// The ops that read `value`'s buffer while it holds `value` or what is
/// written into it in place: collectViewReaders, and for a kernel that
/// writes a result in place into `value` (or a view of it), that result's
/// readers in turn.
void collectBufferReaders(Value value, SmallVectorImpl<Operation *> &readers);

/// The ONNX node of a step (onnxNodeName of its location, else of the
/// first op of a kernel's body that has one), or "".
StringRef stepNodeName(Operation *op);

/// The module scope of a step's ONNX node, found as stepNodeName finds the
/// node (see onnxNodeScope), or "".
StringRef stepScope(Operation *op);

/// Whether a scheduled op (or, for a kernel, one of its body ops) belongs
/// to the backward pass: it carries `memfit.backward`.
bool isBackwardStep(Operation *op);

/// The ops a step runs: its op name without the dialect, or for a kernel
/// its body ops' names joined by '+' (splat constants left out).
std::string stepOpNames(Operation *op);

/// The functions of `module` that have a body.
SmallVector<func::FuncOp> definedFunctions(ModuleOp module);

/// Plans `func` alone; emits an error on the first op that has no place in
/// a plan (an op not yet formed into a kernel, a dynamic shape).
FailureOr<MemoryPlan> planMemory(func::FuncOp func);

/// The plan of several functions that share one weights region and one
/// arena (the entries of a training step: `accumulate` and `apply`).
/// Weights are laid out once: parameters and constants with data first,
/// then the zero-initialized training states, so that only the first
/// `initializedWeightsBytes` need storing. Parameters keep one offset in
/// every function. A `memfit.assign` makes the kernel result it stores
/// live in the parameter's own bytes (an in-place update).
struct ModulePlan {
  std::vector<MemoryPlan> functions;
  llvm::StringMap<int64_t> parameterOffsets;
  int64_t weightsBytes = 0;
  int64_t initializedWeightsBytes = 0;
  int64_t arenaBytes = 0; // the largest function's peak
  /// Bytes of the weights region by category (parameters, states...).
  CategoryBytes weightsByCategory{};
  /// The host region (parameters and states kept in host memory: masters
  /// with data first, then zero-initialized states), its parameters'
  /// offsets in it and its bytes by category; its first
  /// `initializedHostBytes` need storing.
  llvm::StringMap<int64_t> hostOffsets;
  int64_t hostBytes = 0;
  int64_t initializedHostBytes = 0;
  CategoryBytes hostByCategory{};
  /// The function whose arena peak is the largest.
  unsigned peakFunction = 0;
  /// Where the index-error word (16 bytes) lies in the weights region, past
  /// the zero-initialized states: reserved when an op checks the indices it
  /// reads (checksIndices); -1 otherwise.
  int64_t indexErrorOffset = -1;
};
FailureOr<ModulePlan> planModule(ModuleOp module,
                                 llvm::ArrayRef<func::FuncOp> funcs);

/// The category of a module parameter from its memfit.role.
BufferCategory parameterCategory(ParameterOp param);

/// Human-readable report; with `listBuffers`, one line per buffer.
void printMemoryPlan(const MemoryPlan &plan, func::FuncOp func,
                     llvm::raw_ostream &os, bool listBuffers);

} // namespace mlir::memfit

#endif // MEMFIT_ANALYSIS_MEMORYPLAN_H
