//===- FusionRules.h - memfit-fuse's rules and rewrites ---------*- C++ -*-===//
//
// Private to passes/Kernels. The legality and liveness rules that
// memfit-fuse's rewrites share (which ops compose in a pointwise kernel,
// what counts against max-ops, which buffers live outside the arena, the
// function's schedule with its live bytes at each step, a kernel assembled
// from others), and the rewrites themselves, one file each, which the pass
// in Fuse.cpp runs in this order:
//
//   FoldTransposes.cpp   transposes folded into contractions (transpose
//                        flags), also the memfit-fold-transposes pass;
//   ContractionViews.cpp matmul operands read in place as strided views,
//                        transposed results written in place (result_perm);
//   ChainsAndRows.cpp    producers merged into their consumers (element-wise
//                        chains, row kernels with their prologues and
//                        epilogues) and row kernels into their siblings;
//   MultiTensor.cpp      the optimizer's in-place updates as one kernel of
//                        several segments.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_PASSES_KERNELS_FUSIONRULES_H
#define MEMFIT_PASSES_KERNELS_FUSIONRULES_H

#include "memfit/Dialect/MemfitOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <vector>

namespace mlir::memfit::fusion {

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

/// An op that a pointwise kernel computes at its own index from its
/// operands' values there: a pure element-wise op (not dropout, whose mask
/// depends on the kernel it is in).
bool isScalarOp(Operation *op);

/// Whether every op of `kernel` composes in a pointwise kernel.
bool isPointwise(KernelOp kernel);

/// The bytes of `value`, a ranked tensor.
int64_t bytesOf(Value value);

/// `x` viewed in `shape` (a reshape), or `x` when it has that shape.
Value reshaped(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape);

/// Moves the views of `values` (and the views of those) that come before
/// `after` to just after it, in their order: a value's defining op moved
/// down past them (a merged kernel, a bias gradient's sums) keeps them
/// valid.
void moveViewsAfter(ValueRange values, Operation *after);

/// The ops of `kernel` that max-ops counts: all but its literals.
int64_t opCount(KernelOp kernel);

/// Whether `value`'s buffer is not in the arena: a function argument, a
/// parameter or a constant, which live the whole step anyway.
bool outsideArena(Value value);

/// Whether memfit.assign alone reads `value`: the memory plan puts it in
/// the parameter's bytes (an in-place update), not in the arena.
bool storedInPlace(Value value);

/// The parameters whose loads a kernel reads, and those its results are
/// assigned to.
void parametersOf(KernelOp kernel, DenseSet<StringAttr> &reads,
                  DenseSet<StringAttr> &writes);

/// Whether a kernel merged from `a` and `b` would read a parameter that
/// one of its results updates in place.
bool updatesWhatItReads(KernelOp a, KernelOp b);

/// A kernel assembled from others (fuseInto, mergeSegments, the
/// concatenation of permuted matmul results, memfit-accumulate's scatter):
/// its inputs, each once, and the body that theirs are cloned into.
struct MergedKernel {
  /// Adds `v` to the inputs unless it is one already.
  void addInput(Value v);
  /// Creates the kernel at `builder`'s point with the inputs and an empty
  /// body, and points `builder` at the body's start.
  KernelOp create(OpBuilder &builder, Location loc, TypeRange types);
  /// Clones `kernel`'s body; its arguments that `map` does not hold yet
  /// read the merged kernel's inputs. Returns the values it yields, mapped.
  SmallVector<Value> clone(OpBuilder &builder, KernelOp kernel,
                           IRMapping &map);

  SmallVector<Value> inputs;
  DenseMap<Value, unsigned> index;
  Block *body = nullptr;
};

/// What the rewrites know of a function's schedule (its op order): each
/// op's position, where in-place updates are, and the last reader of each
/// buffer (through its views and what is accumulated into it in place).
struct Schedule {
  explicit Schedule(Block &block);

  /// Records `op`'s reads at its position.
  void noteUses(Operation &op);

  /// Records the reads of `value`, a new kernel's result, by the ops that
  /// read it (through views). Its entry is set afresh: an erased value's
  /// storage may hold the new one.
  void noteReaders(Value value);

  /// Whether an in-place update of what `reads` hold (through views: a
  /// parameter's load) runs strictly between positions `from` and `to`; an
  /// impure op other than memfit.assign counts as writing everything.
  bool writeBetween(int64_t from, int64_t to, ValueRange reads) const;

  /// The arena bytes live at each position (every buffer from the op that
  /// writes it to its last reader; arguments throughout), and their most.
  void computeLive(Block &block);

  /// A change of the live bytes over positions [from, to].
  struct LiveChange {
    int64_t from, to, bytes;
  };
  /// Whether `changes` keep every position in [lo, hi] at or below the
  /// peak.
  bool fitsPeak(ArrayRef<LiveChange> changes, int64_t lo, int64_t hi) const;
  /// Adds `changes` to the live bytes.
  void apply(ArrayRef<LiveChange> changes);

  DenseMap<Operation *, int64_t> position;
  /// An in-place update: its position and the parameter it writes (null
  /// for an impure op that is not memfit.assign).
  struct Write {
    int64_t at;
    StringAttr parameter;
  };
  SmallVector<Write> writes;
  DenseMap<Value, int64_t> lastUse;
  std::vector<int64_t> live;
  int64_t peak = 0;
};

//===----------------------------------------------------------------------===//
// Rewrites (in the order memfit-fuse runs them)
//===----------------------------------------------------------------------===//

/// The pass options that the kernel merges obey.
struct FusionOptions {
  /// At most this many ops in a merged kernel (0: no limit).
  int64_t maxOps = 0;
  /// Whether reductions merge with their element-wise prologues and
  /// epilogues, and with their siblings (row kernels).
  bool rows = true;
  /// The function's arena peak as the memory plan placed it before fusion
  /// (0: unknown): merges that keep more bytes live stay under it as well
  /// as under the schedule's own count, which the plan's placement can
  /// come out below.
  int64_t planPeak = 0;
};

/// Transposes of matrices that feed contractions become the contraction's
/// transpose flags, and a contraction whose result only a transpose reads
/// computes the transpose itself (C^T = op(B)^T op(A)^T): the library
/// reads the operand in place, no transposed copy is made.
/// (FoldTransposes.cpp)
void foldTransposes(func::FuncOp func);

/// Merges producers into their consumers (element-wise chains, row kernels
/// with their prologues and epilogues) and, with `options.rows`, row
/// kernels into later siblings of the same frame, until none can be.
/// (ChainsAndRows.cpp)
void fuseChainsAndRows(func::FuncOp func, const FusionOptions &options);

/// Matmul operands that kernels only transposed or split off another
/// value (the attention heads of a QKV projection, the gradient's heads)
/// become strided views of that value, read in place by the library
/// call; a kernel that only transposes a matmul's result (the heads
/// merged back) becomes the matmul's result_perm. The copies go: a
/// rewrite is made when every reader of the kernels' results takes the
/// view, and no in-place update writes the source in between. With
/// `slices`, also slices (a chunked loss's rows), which `memfit.gemm`
/// reads at an offset too: the caller keeps that rewrite only where the
/// plan does not grow (a view of a slice keeps its whole source live).
/// (ContractionViews.cpp)
void viewContractionOperands(func::FuncOp func, bool slices = false);

/// Multi-tensor kernels: consecutive independent pointwise kernels that
/// update parameters in place (the optimizer's update of each) become
/// one launch of several segments, of at most `maxOps` ops (0: no limit).
/// The merged kernel runs where the last of them ran, so the inputs of the
/// others live until then; all of them were live at the first one's step
/// already, and the results go to the weights, so the plan cannot grow; it
/// is checked all the same (the module is left unmerged if it does). Fails
/// when a plan cannot be made. (MultiTensor.cpp)
/// Kernels a contraction computes (Epilogues.cpp): a kernel that only adds
/// a row vector to a matmul's result becomes the matmul as a gemm with that
/// vector as `c`.
void biasIntoContractions(func::FuncOp func);
/// A kernel that only takes the tanh GELU of a matmul's result plus a
/// bias becomes the gemm with that `c` and the GELU a kernel of its own
/// right after it, marked kEpilogueAttr (cuBLASLt's GELU_AUX_BIAS).
void geluIntoContractions(func::FuncOp func);
/// A kernel that only sums the rows of the operand a gemm reads as op(B)
/// [k, n] or op(A) [k, m] moves right before it, marked kEpilogueAttr.
void markBiasGradients(func::FuncOp func);

LogicalResult fuseSegments(ModuleOp module, int64_t maxOps);

/// One kernel before `at` that runs each of `group` (pointwise kernels) as
/// a segment (kSegmentsAttr: each one's result count), with the first
/// one's memfit attributes; the group's results are replaced by its. The
/// caller erases the group. (FusionRules.cpp)
KernelOp segmentsKernel(ArrayRef<KernelOp> group, Operation *at);

/// The weights and arena bytes of `module`'s plan, or failure.
/// (FusionRules.cpp)
FailureOr<int64_t> planTotal(ModuleOp module);

/// The transformer layer of `kernel` that reads or writes the parameters
/// `names` (memfit::layerOf, MemfitDialect.h); empty outside the layers.
/// (MultiTensor.cpp)
std::string layerOf(KernelOp kernel, const DenseSet<StringAttr> &names);

/// The `multi-tensor` rewrite of the kernels that compute from weights
/// alone (mixed precision's casts of the master weights before their
/// use): each transformer layer's become one kernel of several segments
/// at the first one's place, when the module's plan grows by at most 0.1%
/// (it is left as it was if it grows more). Fails when a plan cannot be
/// made.
/// (WeightCasts.cpp)
LogicalResult fuseWeightCasts(ModuleOp module, int64_t maxOps);

} // namespace mlir::memfit::fusion

#endif // MEMFIT_PASSES_KERNELS_FUSIONRULES_H
