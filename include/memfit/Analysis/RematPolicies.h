//===- RematPolicies.h - memfit-remat's policies on a RematProblem -*- C++
//-*-===//
//
// The policies that pick the candidates to recompute (or, where the
// problem allows it, to keep compressed), on the IR-free problem of
// RematProblem.h, evaluated with RematModel: none, checkpoint-layers, auto
// (greedy evictions, local search, perturbation) and optimal (the ILP of
// RematILP.cpp). docs/remat.md describes them.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_ANALYSIS_REMATPOLICIES_H
#define MEMFIT_ANALYSIS_REMATPOLICIES_H

#include "memfit/Analysis/RematModel.h"
#include "memfit/Support/OptionKinds.h"

#include <optional>
#include <string>

namespace mlir::memfit {

struct RematDecision {
  /// Per candidate, its RematChoice: kept, dropped after its forward uses
  /// and recomputed where the backward needs it, or kept compressed (the
  /// input of RematModel::evaluate).
  llvm::SmallVector<char> choice;
  /// The policy that made it.
  ::memfit::RematPolicy policy = ::memfit::RematPolicy::None;
  /// Per candidate, when the policy says why it keeps it (else empty).
  llvm::SmallVector<std::string> keptWhy;
};

/// none: keeps every candidate.
RematDecision keepEverything(const RematProblem &problem);

/// checkpoint-layers: keeps what is outside the layers and every layer's
/// input, recomputes the inside of every layer. Without layers, keeps
/// every ceil(sqrt(n))-th of the n cuts of the forward chain (candidates
/// that no earlier one's forward live range skips over) and recomputes in
/// between.
RematDecision checkpointLayers(const RematProblem &problem);

/// auto: greedy evictions from keeping everything (two variants) and from
/// checkpoint-layers' plan where it fits, each improved by local search
/// and perturbation; the cheapest plan within the caps, or nothing. An
/// eviction recomputes a candidate or, where it can be, compresses it,
/// whichever frees the step more bytes per unit of cost; the local search
/// tries compressing what is recomputed. Deterministic. Call it only with
/// a cap.
std::optional<RematDecision> decideAuto(const RematModel &model);

/// The evaluation with the lowest arena peak that the greedy evictions
/// (run down to nothing, compressing where candidates can be) and
/// checkpoint-layers reach, starting from keeping everything: "the
/// smallest peak reachable" of the pass's error.
RematEvaluation lowestPeak(const RematProblem &problem);

/// optimal: solveRematILP, with the candidates that cannot be recomputed
/// priced above all others together. It keeps or recomputes; it never
/// compresses. Returns nothing when the ILP finds no
/// plan (`note` says why) or when its plan recomputes a candidate that
/// cannot be (`unrecomputable` is then its index, else -1, and `note` is
/// empty: the caller names the candidate). On success `note` says whether
/// the plan is proven optimal.
std::optional<RematDecision> decideOptimal(const RematProblem &problem,
                                           double timeLimitSeconds,
                                           std::string &note,
                                           int &unrecomputable);

} // namespace mlir::memfit

#endif // MEMFIT_ANALYSIS_REMATPOLICIES_H
