//===- RematPolicies.cpp - memfit-remat's policies on a RematProblem ------===//
//
// none, checkpoint-layers, auto (greedy + local search + perturbation) and
// the adapter of optimal to solveRematILP. Every plan is evaluated with
// RematModel. See docs/remat.md.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/RematPolicies.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>
#include <random>

using namespace mlir::memfit;
using llvm::ArrayRef;
using llvm::SmallVector;

namespace {

/// The work auto's local search may do per starting plan, in candidates and
/// steps visited by plan evaluations (an evaluation visits each once): about
/// 27,000 evaluations on a 2-layer fixture, 5,300 at 12 layers.
constexpr int64_t kLocalSearchWork = 10'000'000;
/// How many perturbations auto's iterated local search tries at most.
constexpr int kLocalSearchRounds = 2000;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

} // namespace

//===----------------------------------------------------------------------===//
// none and checkpoint-layers
//===----------------------------------------------------------------------===//

RematDecision mlir::memfit::keepEverything(const RematProblem &problem) {
  RematDecision d;
  d.policy = "none";
  d.recomputed.assign(problem.candidates.size(), 0);
  return d;
}

RematDecision mlir::memfit::checkpointLayers(const RematProblem &problem) {
  const auto &candidates = problem.candidates;
  int nC = candidates.size();
  RematDecision d;
  d.policy = "checkpoint-layers";
  d.recomputed.assign(nC, 0);
  d.keptWhy.assign(nC, "");
  bool hasLayers = llvm::any_of(candidates, [](const RematCandidate &c) {
    return c.layer != kOutsideLayers;
  });
  if (hasLayers) {
    for (int i = 0; i < nC; ++i) {
      const RematCandidate &c = candidates[i];
      if (c.layer == kOutsideLayers) {
        d.keptWhy[i] = "outside the transformer layers";
        continue;
      }
      if (c.layerInput) {
        d.keptWhy[i] = llvm::formatv("the output of layer {0}, an input of "
                                     "the next",
                                     c.layer)
                           .str();
        continue;
      }
      d.recomputed[i] = c.recomputable;
    }
    return d;
  }
  // A plain chain: cuts are candidates that no earlier value skips over.
  SmallVector<int> order(nC);
  for (int i = 0; i < nC; ++i)
    order[i] = i;
  llvm::sort(order, [&](int a, int b) {
    return candidates[a].forwardStep < candidates[b].forwardStep;
  });
  SmallVector<int> cuts;
  int reach = -1;
  for (int i : order) {
    const RematCandidate &c = candidates[i];
    if (reach <= c.forwardStep && c.recomputable)
      cuts.push_back(i);
    reach = std::max(reach, c.lastForwardUse);
  }
  int stride = std::max<int>(1, std::ceil(std::sqrt(double(cuts.size()))));
  llvm::DenseSet<int> kept;
  for (size_t k = 0; k < cuts.size(); k += stride)
    kept.insert(cuts[k]);
  for (int i = 0; i < nC; ++i) {
    if (kept.contains(i))
      d.keptWhy[i] = llvm::formatv("a segment boundary (every {0} of {1} "
                                   "cuts of the chain)",
                                   stride, cuts.size())
                         .str();
    else
      d.recomputed[i] = candidates[i].recomputable;
  }
  return d;
}

//===----------------------------------------------------------------------===//
// auto: greedy evictions
//===----------------------------------------------------------------------===//

/// Cost of the candidates that evicting `c` newly makes recomputed.
static double evictionPrice(const RematModel &model, ArrayRef<char> evicted,
                            const RematEvaluation &ev, int c) {
  const auto &candidates = model.problem().candidates;
  double price = 0;
  SmallVector<int> stack{c};
  llvm::DenseSet<int> seen;
  while (!stack.empty()) {
    int x = stack.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (ev.recomputedAt[x] >= 0)
      continue; // already recomputed, with its inputs
    price += candidates[x].cost;
    for (int input : candidates[x].inputs)
      if (evicted[input])
        stack.push_back(input);
  }
  return price;
}

/// The candidates to evict next under the model's caps, each with its
/// score: those still kept whose eviction lowers the step that most
/// exceeds the caps (the arena peak, else the activation peak), scored by
/// the bytes they free per unit of recomputation cost. Skips `exclude` and
/// candidates whose eviction would bring the plan's cost to `maxPrice` or
/// more.
static SmallVector<std::pair<int, double>>
evictionChoices(const RematModel &model, ArrayRef<char> evicted,
                const RematEvaluation &ev, int exclude, double maxPrice,
                bool directFirst) {
  const RematProblem &problem = model.problem();
  int nC = model.numCandidates();
  int nF = model.numForwardSteps();
  bool arena = problem.arenaCap >= 0 && ev.peakArena > problem.arenaCap;
  int worst = ev.peakStep;
  if (!arena) {
    int64_t best = -1;
    for (int t = 0; t < nF; ++t)
      if (ev.forwardActivation[t] > best)
        best = ev.forwardActivation[t], worst = t;
    for (int b = 0; b < model.numBackwardSteps(); ++b)
      if (ev.backwardActivation[b] > best)
        best = ev.backwardActivation[b], worst = nF + b;
  }
  // First the candidates whose eviction lowers that step; when there are
  // none, or without `directFirst`, any candidate live there (its eviction
  // moves memory around, which can open new savings).
  SmallVector<std::pair<int, double>> choices;
  for (bool direct : {true, false}) {
    if (direct && !directFirst)
      continue;
    for (int c = 0; c < nC; ++c) {
      const RematCandidate &cand = problem.candidates[c];
      if (c == exclude || evicted[c] || !cand.recomputable ||
          ev.lastNeed[c] < 0)
        continue;
      // Evicting helps at a forward step past the candidate's forward
      // uses; at a backward step before its first need (it is recomputed
      // at its first need and live from there on); and at its last need
      // when only recomputations read it there (it is then freed within
      // the slot).
      int b = worst - nF;
      bool held =
          worst < nF
              ? (arena ? cand.lastForwardUse < worst && cand.forwardStep <= worst
                       : cand.forwardStep <= worst)
              : b < ev.firstNeed[c] ||
                    (b == ev.lastNeed[c] && !model.readsAt(b, c)) ||
                    (!direct && b <= ev.lastNeed[c]);
      if (!held)
        continue;
      double price = evictionPrice(model, evicted, ev, c);
      if (ev.cost + price >= maxPrice)
        continue;
      choices.push_back({c, double(cand.bytes) / (price + 1)});
    }
    if (!choices.empty())
      break;
  }
  return choices;
}

/// The best-scored of evictionChoices, or -1.
static int pickEviction(const RematModel &model, ArrayRef<char> evicted,
                        const RematEvaluation &ev, int exclude,
                        double maxPrice, bool directFirst = true) {
  int choice = -1;
  double bestScore = -1;
  for (auto [c, score] :
       evictionChoices(model, evicted, ev, exclude, maxPrice, directFirst))
    if (score > bestScore)
      bestScore = score, choice = c;
  return choice;
}

/// Greedy: while the caps are exceeded, evict what pickEviction chooses;
/// then keep again, most expensive first, every candidate the caps allow.
/// Records the lowest peak seen in `lowest` (for "the smallest peak").
static RematDecision greedy(const RematModel &model, RematDecision start,
                            RematEvaluation *lowest, bool directFirst = true) {
  const auto &candidates = model.problem().candidates;
  int nC = model.numCandidates();
  RematDecision d = std::move(start);
  RematEvaluation ev = model.evaluate(d.recomputed);
  auto track = [&](const RematEvaluation &e) {
    if (lowest && e.peakArena < lowest->peakArena)
      *lowest = e;
  };
  track(ev);
  for (int iteration = 0; !model.fits(ev) && iteration <= nC; ++iteration) {
    int choice =
        pickEviction(model, d.recomputed, ev, -1, kInfinity, directFirst);
    if (choice < 0)
      break;
    d.recomputed[choice] = 1;
    ev = model.evaluate(d.recomputed);
    track(ev);
  }
  if (!model.fits(ev))
    return d;
  // Keep again what the caps allow, the most expensive first.
  SmallVector<int> evictedList;
  for (int c = 0; c < nC; ++c)
    if (d.recomputed[c])
      evictedList.push_back(c);
  llvm::stable_sort(evictedList, [&](int a, int b) {
    return candidates[a].cost > candidates[b].cost;
  });
  for (int c : evictedList) {
    d.recomputed[c] = 0;
    RematEvaluation trial = model.evaluate(d.recomputed);
    if (model.fits(trial) && trial.cost <= ev.cost)
      ev = std::move(trial);
    else
      d.recomputed[c] = 1;
  }
  return d;
}

//===----------------------------------------------------------------------===//
// auto: local search and perturbation
//===----------------------------------------------------------------------===//

/// Local search from a plan that fits: keep one recomputed candidate again
/// and, when that breaks the caps, repair the plan with the cheapest
/// single eviction that fits, else by evicting others the way greedy does,
/// as long as the repaired plan stays cheaper than the one it replaces.
/// Accepts every improvement and sweeps the recomputed candidates, most
/// expensive first, until a sweep finds none or the evaluation budget
/// `evaluations` is spent (it counts down).
static void improve(const RematModel &model, RematDecision &d,
                    int64_t &evaluations) {
  const auto &candidates = model.problem().candidates;
  int nC = model.numCandidates();
  RematEvaluation ev = model.evaluate(d.recomputed);
  if (!model.fits(ev))
    return;
  bool improved = true;
  while (improved && evaluations > 0) {
    improved = false;
    SmallVector<int> recomputed;
    for (int c = 0; c < nC; ++c)
      if (d.recomputed[c] && ev.recomputedAt[c] >= 0)
        recomputed.push_back(c);
    llvm::stable_sort(recomputed, [&](int a, int b) {
      return candidates[a].cost > candidates[b].cost;
    });
    for (int keep : recomputed) {
      if (evaluations <= 0)
        break;
      if (!d.recomputed[keep])
        continue;
      SmallVector<char> trial = d.recomputed;
      trial[keep] = 0;
      RematEvaluation tev = model.evaluate(trial);
      --evaluations;
      // The cheapest single eviction that repairs it, else greedy ones.
      if (!model.fits(tev) && tev.cost < ev.cost) {
        int bestRepair = -1;
        double bestPrice = ev.cost;
        for (auto [c, score] :
             evictionChoices(model, trial, tev, keep, ev.cost, true)) {
          if (evaluations <= 0)
            break;
          trial[c] = 1;
          RematEvaluation repaired = model.evaluate(trial);
          --evaluations;
          trial[c] = 0;
          if (model.fits(repaired) && repaired.cost < bestPrice)
            bestPrice = repaired.cost, bestRepair = c;
        }
        if (bestRepair >= 0) {
          trial[bestRepair] = 1;
          tev = model.evaluate(trial);
          --evaluations;
        }
      }
      while (!model.fits(tev) && tev.cost < ev.cost && evaluations > 0) {
        int evict = pickEviction(model, trial, tev, keep, ev.cost);
        if (evict < 0)
          break;
        trial[evict] = 1;
        tev = model.evaluate(trial);
        --evaluations;
      }
      if (model.fits(tev) && tev.cost < ev.cost) {
        d.recomputed = std::move(trial);
        ev = std::move(tev);
        improved = true;
      }
    }
  }
}

/// Iterated local search from a plan that fits: improve it, then
/// repeatedly keep a few random recomputed candidates of the best plan
/// again, repair with greedy evictions, improve, and keep the result when
/// it is cheaper. Deterministic (fixed seed); bounded by kLocalSearchWork.
static void search(const RematModel &model, RematDecision &d) {
  int nC = model.numCandidates();
  int64_t evaluations =
      kLocalSearchWork /
      (nC + model.numForwardSteps() + model.numBackwardSteps());
  improve(model, d, evaluations);
  RematEvaluation best = model.evaluate(d.recomputed);
  if (!model.fits(best))
    return;
  std::mt19937 random(0x6d656d66);
  for (int round = 0; evaluations > 0 && round < kLocalSearchRounds; ++round) {
    SmallVector<int> recomputed;
    for (int c = 0; c < nC; ++c)
      if (d.recomputed[c] && best.recomputedAt[c] >= 0)
        recomputed.push_back(c);
    if (recomputed.empty())
      return;
    RematDecision trial = d;
    int kicks = 1 + round % std::min<int>(4, recomputed.size());
    for (int k = 0; k < kicks; ++k)
      trial.recomputed[recomputed[random() % recomputed.size()]] = 0;
    RematEvaluation ev = model.evaluate(trial.recomputed);
    --evaluations;
    for (int i = 0; !model.fits(ev) && i <= nC && evaluations > 0; ++i) {
      int evict = pickEviction(model, trial.recomputed, ev, -1, kInfinity);
      if (evict < 0)
        break;
      trial.recomputed[evict] = 1;
      ev = model.evaluate(trial.recomputed);
      --evaluations;
    }
    if (!model.fits(ev))
      continue;
    improve(model, trial, evaluations);
    ev = model.evaluate(trial.recomputed);
    if (model.fits(ev) && ev.cost < best.cost) {
      d.recomputed = std::move(trial.recomputed);
      best = std::move(ev);
    }
  }
}

std::optional<RematDecision>
mlir::memfit::decideAuto(const RematModel &model) {
  const RematProblem &problem = model.problem();
  RematDecision none = keepEverything(problem);
  // Cost-aware greedy from keeping everything, and the classic layer
  // checkpoints made cost-aware; the cheapest plan that fits wins.
  SmallVector<RematDecision> plans;
  for (bool directFirst : {true, false}) {
    RematDecision fromNone = greedy(model, none, nullptr, directFirst);
    fromNone.policy = "auto";
    plans.push_back(std::move(fromNone));
  }
  RematDecision layers = checkpointLayers(problem);
  if (model.fits(model.evaluate(layers.recomputed))) {
    RematDecision refined = greedy(model, layers, nullptr);
    refined.policy = "auto";
    plans.push_back(std::move(refined));
  }
  for (RematDecision &plan : plans)
    search(model, plan);
  std::optional<RematDecision> best;
  double bestPrice = 0;
  for (RematDecision &plan : plans) {
    RematEvaluation ev = model.evaluate(plan.recomputed);
    if (!model.fits(ev))
      continue;
    if (!best || ev.cost < bestPrice) {
      bestPrice = ev.cost;
      best = std::move(plan);
    }
  }
  if (best)
    best->keptWhy.assign(problem.candidates.size(), "");
  return best;
}

RematEvaluation mlir::memfit::lowestPeak(const RematProblem &problem) {
  // The greedy run down to nothing, and the layer checkpoints.
  RematModel model(problem);
  RematEvaluation lowest =
      model.evaluate(keepEverything(problem).recomputed);
  RematProblem impossible = problem;
  impossible.arenaCap = 0;
  impossible.activationCap = -1;
  RematModel downToNothing(impossible);
  RematDecision start = keepEverything(problem);
  start.policy = "auto";
  (void)greedy(downToNothing, start, &lowest, /*directFirst=*/true);
  (void)greedy(downToNothing, start, &lowest, /*directFirst=*/false);
  RematEvaluation layers =
      model.evaluate(checkpointLayers(problem).recomputed);
  if (layers.peakArena < lowest.peakArena)
    lowest = layers;
  return lowest;
}

//===----------------------------------------------------------------------===//
// optimal
//===----------------------------------------------------------------------===//

std::optional<RematDecision>
mlir::memfit::decideOptimal(const RematProblem &problem,
                            double timeLimitSeconds, std::string &note,
                            int &unrecomputable) {
  unrecomputable = -1;
  RematProblem ilp = problem;
  // The solver may not recompute what cannot be: price it above every
  // other recomputation together.
  double unrecomputableCost = 1;
  for (const RematCandidate &c : problem.candidates)
    unrecomputableCost += std::max(c.cost, 1.0);
  for (RematCandidate &c : ilp.candidates)
    c.cost = c.recomputable ? std::max(c.cost, 1.0) : unrecomputableCost;
  SolverOptions options;
  options.timeLimitSeconds = timeLimitSeconds;
  RematSolution solution;
  if (!solveRematILP(ilp, options, solution, note))
    return std::nullopt;
  int nC = problem.candidates.size();
  RematDecision d;
  d.policy = "optimal";
  d.recomputed.assign(nC, 0);
  d.keptWhy.assign(nC, "");
  for (int c = 0; c < nC; ++c) {
    d.recomputed[c] = solution.recomputed[c] ? 1 : 0;
    if (d.recomputed[c] && !problem.candidates[c].recomputable) {
      unrecomputable = c;
      note.clear();
      return std::nullopt;
    }
  }
  note = solution.optimal ? "ILP (GLPK): proven optimal"
                          : "ILP (GLPK): time limit reached, best found";
  return d;
}
