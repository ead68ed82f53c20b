//===- RematProblem.h - the rematerialization problem, solver-neutral -*- C++
//-*-===//
//
// The decision that memfit-remat makes, stripped of IR so that policies and
// solvers can be written and tested on their own. A training step is a
// fixed schedule: forward steps 0..F-1, then backward steps 0..B-1
// (backward ops, parameter updates). Every candidate is a forward step:
// its results are either kept from the forward pass for the backward, or
// dropped after their last forward use and recomputed in the backward
// (from kept values, or from values recomputed in turn). Parameters,
// inputs and constants are always available.
//
// Memory model (arena bytes; the weights region is outside it). One
// implementation, RematModel (RematModel.h), serves the pass's policies,
// the ILP's check of its plans and the unit tests. A plan gives each
// candidate a RematChoice: kept, dropped for recomputation, or kept
// compressed (when the candidate can be: compressedBytes >= 0).
//
//  - Needs. Backward step b needs candidate c when it reads c, or when a
//    dropped candidate that reads c is recomputed before b. A dropped
//    candidate is recomputed once, just before its first need; a kept
//    one is never recomputed, and what it reads is not needed for it. A
//    candidate that no backward step needs takes no memory beyond its own
//    forward live range, kept or dropped.
//  - Order inside a slot. The recomputations before step b run one after
//    another, in the order the needs are found: the candidates that b
//    reads by ascending index, each preceded, depth first, by the
//    recomputations of its dropped inputs (in the order of `inputs`).
//  - Forward step t: fixedForward[t] + the bytes of every kept, needed
//    candidate whose forward live range ended before t
//    (lastForwardUse < t).
//  - Backward step b: fixedBackward[b] + the bytes of every resident
//    candidate + the slot's extra:
//      * a kept, needed candidate is resident from backward step 0 to its
//        last need;
//      * a recomputed candidate is resident from its recomputation (just
//        before its first need) to its last need, except a transient one:
//        recomputed before b, last needed at b, not read by step b itself,
//        and read by a later recomputation of the same slot. A transient
//        candidate lives only from its recomputation to the last
//        recomputation of the slot that reads it, and is freed before
//        step b runs;
//      * the slot's extra is how far the bytes live during the slot's
//        recomputations (the slot's non-transient recomputations made so
//        far, plus its live transients) rise above the bytes of all of the
//        slot's non-transient recomputations, or 0.
//  - A compressed candidate is quantized after its last forward use and
//    dequantized before each backward step that needs it. Its compressed
//    bytes are resident from forward step lastForwardUse (the quantization
//    runs while the full value is still live) to its last need; at each
//    backward step that needs it, its full bytes are resident too (the
//    dequantized copy, freed after the step). What it reads is not needed
//    for it.
//  - Activation memory: at forward step t, the bytes of every kept, needed
//    candidate with forwardStep <= t (a compressed one: its compressed
//    bytes); at backward step b, the bytes of every resident candidate
//    (transients and the slot's extra are not counted). The per-step series
//    that RematEvaluation reports for the backward (backwardActivation) adds
//    the slot's extra, and the policies aim their evictions at its highest
//    step; the limit (activationCap) and peakActivation count without it.
//
// The ILP (solveRematILP) formulates a variant that holds every recomputed
// candidate from its recomputation to its last need (no transients, no
// slot extra: RematModel::Slots::HoldToLastNeed), and it has no compressed
// choice. At every step its bytes
// are at least the model's, so its plans fit the model; auto, which uses
// the model, can find cheaper plans than the ILP's optimum.
//
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

/// RematCandidate::layer of a candidate outside the transformer layers.
constexpr int kOutsideLayers = -1;

/// What a plan does with a candidate (the values of a plan's per-candidate
/// `char`s; RematModel::evaluate).
enum RematChoice : char {
  kKeep = 0,
  kRecompute = 1,
  /// Kept compressed: quantized after its forward uses, dequantized where
  /// the backward needs it.
  kCompress = 2,
};

struct RematCandidate {
  /// Arena bytes of the step's results.
  int64_t bytes = 0;
  /// What recomputing the step once costs (memfit-remat: FLOPs plus bytes
  /// moved). The policies accept >= 0; solveRematILP and
  /// validateRematProblem need > 0.
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
  /// Arena bytes of the results kept compressed, or < 0 when the candidate
  /// cannot be compressed. What compressing costs (the same units as
  /// `cost`): once to quantize, and once per backward step that needs it
  /// to dequantize.
  int64_t compressedBytes = -1;
  double compressCost = 0;
  double decompressCost = 0;

  // What the policies (RematPolicies.h) read; the ILP ignores them.
  /// False when the step's results leave the step (returned, assigned to a
  /// parameter) or it reads a value made outside the forward pass.
  bool recomputable = true;
  /// The transformer layer of the step, or kOutsideLayers.
  int layer = kOutsideLayers;
  /// A forward step of another layer reads it: a layer's input.
  bool layerInput = false;
};

struct RematProblem {
  std::vector<RematCandidate> candidates;
  int numForwardSteps = 0;
  int numBackwardSteps = 0;
  std::vector<int64_t> fixedForward;  // size numForwardSteps
  std::vector<int64_t> fixedBackward; // size numBackwardSteps
  /// Every step's arena bytes must stay at or below this; < 0: no such
  /// limit.
  int64_t arenaCap = 0;
  /// The activation memory (see above) must stay at or below this at
  /// every step; < 0: no such limit.
  int64_t activationCap = -1;
  /// A compressed candidate is made whole again this many backward steps
  /// before each step that needs it (it lives from there): 1 for offloaded
  /// values, whose copy back from host memory then overlaps the step
  /// before on the copy queue; 0 for dequantizations.
  int fetchAhead = 0;
};

struct RematSolution {
  /// For each candidate: kept from the forward pass (else dropped after its
  /// forward uses), or recomputed in the backward (once, never both); a
  /// candidate that nothing needs is neither. Residency as in the model's
  /// HoldToLastNeed variant (RematModel.h), which the ILP formulates.
  std::vector<bool> kept, recomputed;
  double cost = 0;    // sum of the costs of the recomputed candidates
  bool optimal = false; // proven optimal (else the best found in time)
};

struct SolverOptions {
  double timeLimitSeconds = 60;
};

/// Solves the problem exactly as an integer linear program (GLPK), in the
/// HoldToLastNeed variant of the model; its plan is checked in exact
/// integer arithmetic by RematModel. Returns false with `error` set when
/// the problem is infeasible, the solver fails or finds no integer
/// solution within the time limit.
bool solveRematILP(const RematProblem &problem, const SolverOptions &options,
                   RematSolution &solution, std::string &error);

} // namespace mlir::memfit

#endif // MEMFIT_ANALYSIS_REMATPROBLEM_H
