//===- RematModel.h - the memory model of a remat plan -----------*- C++
//-*-===//
//
// The one implementation of the memory model that RematProblem.h
// documents: given what a plan does with each candidate (keep, recompute,
// compress), where each is recomputed or dequantized, the arena and
// activation bytes at every step, the peaks and the price. memfit-remat's
// policies, the ILP's check of its plans and the unit tests all evaluate plans
// with it.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_ANALYSIS_REMATMODEL_H
#define MEMFIT_ANALYSIS_REMATMODEL_H

#include "memfit/Analysis/RematProblem.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::memfit {

/// A plan under the model.
struct RematEvaluation {
  /// Per candidate: the backward step it is recomputed before, or -1 (kept,
  /// or not needed); the first and last backward step that needs it, or -1.
  llvm::SmallVector<int> recomputedAt, firstNeed, lastNeed;
  /// Per backward step: the candidates recomputed before it, in order;
  /// the compressed candidates dequantized before it (before the
  /// recomputations), ascending.
  llvm::SmallVector<llvm::SmallVector<int>> recomputeAt, decompressAt;
  /// Per candidate: kept compressed (and needed).
  llvm::SmallVector<char> compressed;
  /// Arena bytes and activation bytes per forward and per backward step
  /// (backwardActivation includes the slot's extra; see RematProblem.h).
  llvm::SmallVector<int64_t> forwardBytes, backwardBytes;
  llvm::SmallVector<int64_t> forwardActivation, backwardActivation;
  int64_t peakArena = 0;
  /// The activation memory that RematProblem::activationCap limits.
  int64_t peakActivation = 0;
  /// The first step with peakArena bytes, over forward then backward steps
  /// (numForwardSteps + b for backward step b).
  int peakStep = 0;
  /// The sum of the costs of the recomputed candidates and of the
  /// compressed ones (a quantization each, a dequantization per need).
  double cost = 0;

  bool isRecomputed(int c) const { return recomputedAt[c] >= 0; }
  bool isCompressed(int c) const { return compressed[c]; }
  bool isNeeded(int c) const { return lastNeed[c] >= 0; }
};

class RematModel {
public:
  /// FreeInsideSlot is the model; HoldToLastNeed the ILP's variant, which
  /// keeps every recomputed candidate live to its last need.
  enum class Slots { FreeInsideSlot, HoldToLastNeed };

  /// The problem must outlive the model.
  explicit RematModel(const RematProblem &problem,
                      Slots slots = Slots::FreeInsideSlot);

  const RematProblem &problem() const { return *p; }
  int numCandidates() const { return p->candidates.size(); }
  int numForwardSteps() const { return p->numForwardSteps; }
  int numBackwardSteps() const { return p->numBackwardSteps; }
  /// The candidates that backward step b reads, ascending.
  llvm::ArrayRef<int> readsAt(int b) const { return reads[b]; }
  bool readsAt(int b, int c) const;

  /// The plan that gives candidate c the RematChoice choice[c]: drops (and
  /// recomputes where needed) those with kRecompute, compresses those with
  /// kCompress, keeps the others.
  RematEvaluation evaluate(llvm::ArrayRef<char> choice) const;

  /// Whether the plan stays within the problem's caps.
  bool fits(const RematEvaluation &evaluation) const;

private:
  const RematProblem *p;
  Slots slots;
  llvm::SmallVector<llvm::SmallVector<int>> reads;
};

/// Checks the problem's invariants (sizes of the step arrays, candidates'
/// steps, inputs and reads in range, bytes and fixed bytes in [0, 2^52],
/// costs > 0); returns a message, or "" when it is valid.
std::string validateRematProblem(const RematProblem &problem);

} // namespace mlir::memfit

#endif // MEMFIT_ANALYSIS_REMATMODEL_H
