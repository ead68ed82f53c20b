//===- RematProblem.h - the rematerialization problem, solver-neutral -*- C++ -*-===//
//
// The decision that memfit-remat makes, stripped of IR so that solvers can
// be written and tested on their own. A training step is a fixed schedule:
// forward steps 0..F-1, then backward steps 0..B-1 (backward ops, parameter
// updates). Every forward step is a candidate: its results are either kept
// from the forward pass for the backward, or dropped after their last
// forward use and recomputed before the backward step that first needs
// them (from kept values, or from values recomputed in turn). Parameters,
// inputs and constants are always available.
//
// Memory model (arena bytes; the weights region is outside it):
//  - forward step t: fixedForward[t] + the bytes of every kept candidate
//    produced at or before t whose forward live range ended before t;
//  - backward step b: fixedBackward[b] + the bytes of every candidate that
//    is resident at b (kept from the forward pass and still needed, or
//    recomputed at or before b and still needed). A candidate recomputed
//    "at b" is computed just before step b runs and counts at b.
// fixedForward/fixedBackward hold everything that does not depend on the
// decision (inputs, outputs, backward values, and each candidate during its
// own forward live range).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_ANALYSIS_REMATPROBLEM_H
#define MEMFIT_ANALYSIS_REMATPROBLEM_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::memfit {

struct RematCandidate {
  /// Arena bytes of the step's results.
  int64_t bytes = 0;
  /// What recomputing the step once costs (FLOPs plus bytes moved; see
  /// memfit-remat), > 0.
  double cost = 0;
  /// Forward step that produces it, and the last forward step that reads
  /// it (== forwardStep when no forward step reads it).
  int forwardStep = 0;
  int lastForwardUse = 0;
  /// Candidates whose results the step reads (all have a smaller
  /// forwardStep); parameters, inputs and constants are not listed.
  std::vector<int> inputs;
  /// Backward steps that read the results, ascending.
  std::vector<int> backwardReads;
};

struct RematProblem {
  std::vector<RematCandidate> candidates;
  int numForwardSteps = 0;
  int numBackwardSteps = 0;
  std::vector<int64_t> fixedForward;  // size numForwardSteps
  std::vector<int64_t> fixedBackward; // size numBackwardSteps
  /// Every step's arena bytes must stay at or below this.
  int64_t arenaCap = 0;
  /// Activation memory: the bytes of candidates held for the backward at a
  /// step (at forward step t, every kept candidate with forwardStep <= t;
  /// at backward step b, every resident candidate) must stay at or below
  /// this at every step; < 0: no such limit.
  int64_t activationCap = -1;
};

struct RematSolution {
  /// For each candidate: kept from the forward pass (else dropped after its
  /// forward uses), or recomputed in the backward (once, never both). A
  /// kept candidate stays resident until its last backward read or the
  /// last recomputation that reads it; a recomputed one from just before
  /// the first backward step that needs it (directly or through another
  /// recomputation) to its last such use.
  std::vector<bool> kept, recomputed;
  double cost = 0;    // sum of the costs of the recomputed candidates
  bool optimal = false; // proven optimal (else the best found in time)
};

struct SolverOptions {
  double timeLimitSeconds = 60;
};

/// Solves the problem exactly as an integer linear program (GLPK). Returns
/// false with `error` set when the problem is infeasible, the solver fails
/// or finds no integer solution within the time limit.
bool solveRematILP(const RematProblem &problem, const SolverOptions &options,
                   RematSolution &solution, std::string &error);

} // namespace mlir::memfit

#endif // MEMFIT_ANALYSIS_REMATPROBLEM_H
