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
  d.policy = ::memfit::RematPolicy::None;
  d.choice.assign(problem.candidates.size(), kKeep);
  return d;
}

RematDecision mlir::memfit::checkpointLayers(const RematProblem &problem) {
  const auto &candidates = problem.candidates;
  int nC = candidates.size();
  RematDecision d;
  d.policy = ::memfit::RematPolicy::CheckpointLayers;
  d.choice.assign(nC, kKeep);
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
      d.choice[i] = c.recomputable ? kRecompute : kKeep;
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
      d.choice[i] = candidates[i].recomputable ? kRecompute : kKeep;
  }
  return d;
}

//===----------------------------------------------------------------------===//
// auto: greedy evictions
//===----------------------------------------------------------------------===//

/// Cost of the candidates that evicting `c` newly makes recomputed.
static double evictionPrice(const RematModel &model, ArrayRef<char> choice,
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
      if (choice[input] == kRecompute)
        stack.push_back(input);
  }
  return price;
}

/// A change to one candidate's RematChoice.
struct Eviction {
  int candidate;
  char choice; // kRecompute or kCompress
};

/// What compressing `c` costs: a quantization, and a dequantization per
/// backward step that reads it (recomputations that read it may add more).
static double compressionPrice(const RematCandidate &c) {
  return c.compressCost + c.decompressCost * double(c.backwardReads.size());
}

/// What a local move may turn evicted candidate `c` into instead of
/// `current`: kept, or the other of recomputed and compressed where the
/// candidate allows it.
static SmallVector<char, 2> alternatives(const RematCandidate &c,
                                         char current) {
  SmallVector<char, 2> choices{kKeep};
  if (current == kRecompute && c.compressedBytes >= 0)
    choices.push_back(kCompress);
  if (current == kCompress && c.recomputable)
    choices.push_back(kRecompute);
  return choices;
}

/// The evictions to make next under the model's caps, each with its
/// score: recomputing or compressing a candidate still kept, or
/// recomputing a compressed one, where that lowers the step that most exceeds
/// the caps (the arena peak, else the activation peak), scored by the bytes it
/// frees per unit of cost. Skips `exclude` and evictions that would bring the
/// plan's cost to `maxPrice` or more.
static SmallVector<std::pair<Eviction, double>>
evictionChoices(const RematModel &model, ArrayRef<char> choice,
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
  // First the evictions that lower that step; when there are none, or
  // without `directFirst`, any of a candidate live there (its eviction
  // moves memory around, which can open new savings).
  SmallVector<std::pair<Eviction, double>> choices;
  for (bool direct : {true, false}) {
    if (direct && !directFirst)
      continue;
    for (int c = 0; c < nC; ++c) {
      const RematCandidate &cand = problem.candidates[c];
      if (c == exclude || ev.lastNeed[c] < 0)
        continue;
      int b = worst - nF;
      if (choice[c] == kCompress) {
        // Recomputing instead frees its codes past its forward uses and in
        // the backward up to its first need.
        bool held = worst < nF ? (arena ? cand.lastForwardUse <= worst
                                        : cand.forwardStep <= worst)
                               : b <= ev.firstNeed[c] ||
                                     (!direct && b <= ev.lastNeed[c]);
        double price = evictionPrice(model, choice, ev, c);
        if (held && cand.recomputable && ev.cost + price < maxPrice)
          choices.push_back(
              {{c, kRecompute}, double(cand.compressedBytes) / (price + 1)});
        continue;
      }
      if (choice[c] != kKeep)
        continue;
      // Recomputing helps at a forward step past the candidate's forward
      // uses; at a backward step before its first need (it is recomputed
      // at its first need and live from there on); and at its last need
      // when only recomputations read it there (it is then freed within
      // the slot).
      bool held =
          worst < nF
              ? (arena ? cand.lastForwardUse < worst && cand.forwardStep <= worst
                       : cand.forwardStep <= worst)
              : b < ev.firstNeed[c] ||
                    (b == ev.lastNeed[c] && !model.readsAt(b, c)) ||
                    (!direct && b <= ev.lastNeed[c]);
      if (held && cand.recomputable) {
        double price = evictionPrice(model, choice, ev, c);
        if (ev.cost + price < maxPrice)
          choices.push_back(
              {{c, kRecompute}, double(cand.bytes) / (price + 1)});
      }
      // Compressing helps past its forward uses and at the backward steps
      // that do not read it (where it is not dequantized).
      int64_t freed = cand.bytes - cand.compressedBytes;
      if (cand.compressedBytes < 0 || freed <= 0)
        continue;
      bool smaller =
          worst < nF ? (arena ? cand.lastForwardUse < worst
                              : cand.forwardStep <= worst)
                     : b <= ev.lastNeed[c] && (!direct || !model.readsAt(b, c));
      double price = compressionPrice(cand);
      if (smaller && ev.cost + price < maxPrice)
        choices.push_back({{c, kCompress}, double(freed) / (price + 1)});
    }
    if (!choices.empty())
      break;
  }
  return choices;
}

/// The best-scored of evictionChoices, or a candidate of -1.
static Eviction pickEviction(const RematModel &model, ArrayRef<char> choice,
                             const RematEvaluation &ev, int exclude,
                             double maxPrice, bool directFirst = true) {
  Eviction pick{-1, kKeep};
  double bestScore = -1;
  for (auto [eviction, score] :
       evictionChoices(model, choice, ev, exclude, maxPrice, directFirst))
    if (score > bestScore)
      bestScore = score, pick = eviction;
  return pick;
}

/// Greedy: while the caps are exceeded, make the eviction pickEviction
/// chooses; then, most expensive first, keep again every evicted candidate
/// that the caps allow, else switch it between recomputed and compressed
/// where that fits and costs less. Records the lowest peak seen in `lowest`
/// (for "the smallest peak").
static RematDecision greedy(const RematModel &model, RematDecision start,
                            RematEvaluation *lowest, bool directFirst = true) {
  const auto &candidates = model.problem().candidates;
  int nC = model.numCandidates();
  RematDecision d = std::move(start);
  RematEvaluation ev = model.evaluate(d.choice);
  auto track = [&](const RematEvaluation &e) {
    if (lowest && e.peakArena < lowest->peakArena)
      *lowest = e;
  };
  track(ev);
  // A candidate changes at most twice: kept, compressed, recomputed.
  for (int iteration = 0; !model.fits(ev) && iteration <= 2 * nC; ++iteration) {
    Eviction pick =
        pickEviction(model, d.choice, ev, -1, kInfinity, directFirst);
    if (pick.candidate < 0)
      break;
    d.choice[pick.candidate] = pick.choice;
    ev = model.evaluate(d.choice);
    track(ev);
  }
  if (!model.fits(ev))
    return d;
  SmallVector<int> evictedList;
  for (int c = 0; c < nC; ++c)
    if (d.choice[c] != kKeep)
      evictedList.push_back(c);
  llvm::stable_sort(evictedList, [&](int a, int b) {
    return candidates[a].cost > candidates[b].cost;
  });
  for (int c : evictedList) {
    char was = d.choice[c];
    for (char instead : alternatives(candidates[c], was)) {
      d.choice[c] = instead;
      RematEvaluation trial = model.evaluate(d.choice);
      if (model.fits(trial) &&
          (instead == kKeep ? trial.cost <= ev.cost : trial.cost < ev.cost)) {
        ev = std::move(trial);
        was = instead;
        break;
      }
      d.choice[c] = was;
    }
  }
  return d;
}

//===----------------------------------------------------------------------===//
// auto: local search and perturbation
//===----------------------------------------------------------------------===//

/// The candidates a plan evicts (recomputed or compressed, and needed).
static SmallVector<int> evictedCandidates(const RematDecision &d,
                                          const RematEvaluation &ev) {
  SmallVector<int> evicted;
  for (int c = 0, e = d.choice.size(); c < e; ++c)
    if (d.choice[c] != kKeep && (ev.isRecomputed(c) || ev.isCompressed(c)))
      evicted.push_back(c);
  return evicted;
}

/// Local search from a plan that fits: keep one evicted candidate again
/// (or switch it between recomputed and compressed) and, when that breaks the
/// caps, repair the plan with the cheapest single eviction that fits, else by
/// evicting others the way greedy does, as long as the repaired plan stays
/// cheaper than the one it replaces. Accepts every improvement and sweeps
/// the evicted candidates, most expensive first, until a sweep finds none
/// or the evaluation budget `evaluations` is spent (it counts down).
static void improve(const RematModel &model, RematDecision &d,
                    int64_t &evaluations) {
  const auto &candidates = model.problem().candidates;
  RematEvaluation ev = model.evaluate(d.choice);
  if (!model.fits(ev))
    return;
  bool improved = true;
  while (improved && evaluations > 0) {
    improved = false;
    SmallVector<int> evicted = evictedCandidates(d, ev);
    llvm::stable_sort(evicted, [&](int a, int b) {
      return candidates[a].cost > candidates[b].cost;
    });
    for (int changed : evicted) {
      for (char instead :
           alternatives(candidates[changed], d.choice[changed])) {
        if (evaluations <= 0 || d.choice[changed] == kKeep)
          break;
        SmallVector<char> trial = d.choice;
        trial[changed] = instead;
        RematEvaluation tev = model.evaluate(trial);
        --evaluations;
        // The cheapest single eviction that repairs it, else greedy ones.
        if (!model.fits(tev) && tev.cost < ev.cost) {
          Eviction bestRepair{-1, kKeep};
          double bestPrice = ev.cost;
          for (auto [eviction, score] :
               evictionChoices(model, trial, tev, changed, ev.cost, true)) {
            if (evaluations <= 0)
              break;
            char was = trial[eviction.candidate];
            trial[eviction.candidate] = eviction.choice;
            RematEvaluation repaired = model.evaluate(trial);
            --evaluations;
            trial[eviction.candidate] = was;
            if (model.fits(repaired) && repaired.cost < bestPrice)
              bestPrice = repaired.cost, bestRepair = eviction;
          }
          if (bestRepair.candidate >= 0) {
            trial[bestRepair.candidate] = bestRepair.choice;
            tev = model.evaluate(trial);
            --evaluations;
          }
        }
        while (!model.fits(tev) && tev.cost < ev.cost && evaluations > 0) {
          Eviction evict = pickEviction(model, trial, tev, changed, ev.cost);
          if (evict.candidate < 0)
            break;
          trial[evict.candidate] = evict.choice;
          tev = model.evaluate(trial);
          --evaluations;
        }
        if (model.fits(tev) && tev.cost < ev.cost) {
          d.choice = std::move(trial);
          ev = std::move(tev);
          improved = true;
        }
      }
    }
  }
}

/// Iterated local search from a plan that fits: improve it, then
/// repeatedly keep a few random evicted candidates of the best plan
/// again, repair with greedy evictions, improve, and keep the result when
/// it is cheaper. Deterministic (fixed seed); bounded by kLocalSearchWork.
static void search(const RematModel &model, RematDecision &d) {
  int nC = model.numCandidates();
  int64_t evaluations =
      kLocalSearchWork /
      (nC + model.numForwardSteps() + model.numBackwardSteps());
  improve(model, d, evaluations);
  RematEvaluation best = model.evaluate(d.choice);
  if (!model.fits(best))
    return;
  std::mt19937 random(0x6d656d66);
  for (int round = 0; evaluations > 0 && round < kLocalSearchRounds; ++round) {
    SmallVector<int> evicted = evictedCandidates(d, best);
    if (evicted.empty())
      return;
    RematDecision trial = d;
    int kicks = 1 + round % std::min<int>(4, evicted.size());
    for (int k = 0; k < kicks; ++k)
      trial.choice[evicted[random() % evicted.size()]] = kKeep;
    RematEvaluation ev = model.evaluate(trial.choice);
    --evaluations;
    for (int i = 0; !model.fits(ev) && i <= 2 * nC && evaluations > 0; ++i) {
      Eviction evict = pickEviction(model, trial.choice, ev, -1, kInfinity);
      if (evict.candidate < 0)
        break;
      trial.choice[evict.candidate] = evict.choice;
      ev = model.evaluate(trial.choice);
      --evaluations;
    }
    if (!model.fits(ev))
      continue;
    improve(model, trial, evaluations);
    ev = model.evaluate(trial.choice);
    if (model.fits(ev) && ev.cost < best.cost) {
      d.choice = std::move(trial.choice);
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
    fromNone.policy = ::memfit::RematPolicy::Auto;
    plans.push_back(std::move(fromNone));
  }
  RematDecision layers = checkpointLayers(problem);
  if (model.fits(model.evaluate(layers.choice))) {
    RematDecision refined = greedy(model, layers, nullptr);
    refined.policy = ::memfit::RematPolicy::Auto;
    plans.push_back(std::move(refined));
  }
  // With compression: from compressing everything that can be, where that
  // fits.
  RematDecision compressAll = none;
  bool compressible = false;
  for (auto [c, cand] : llvm::enumerate(problem.candidates))
    if (cand.compressedBytes >= 0) {
      compressAll.choice[c] = kCompress;
      compressible = true;
    }
  if (compressible && model.fits(model.evaluate(compressAll.choice))) {
    RematDecision refined = greedy(model, compressAll, nullptr);
    refined.policy = ::memfit::RematPolicy::Auto;
    plans.push_back(std::move(refined));
  }
  for (RematDecision &plan : plans)
    search(model, plan);
  std::optional<RematDecision> best;
  double bestPrice = 0;
  for (RematDecision &plan : plans) {
    RematEvaluation ev = model.evaluate(plan.choice);
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
  RematEvaluation lowest = model.evaluate(keepEverything(problem).choice);
  RematProblem impossible = problem;
  impossible.arenaCap = 0;
  impossible.activationCap = -1;
  RematModel downToNothing(impossible);
  RematDecision start = keepEverything(problem);
  start.policy = ::memfit::RematPolicy::Auto;
  (void)greedy(downToNothing, start, &lowest, /*directFirst=*/true);
  (void)greedy(downToNothing, start, &lowest, /*directFirst=*/false);
  RematEvaluation layers = model.evaluate(checkpointLayers(problem).choice);
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
  d.policy = ::memfit::RematPolicy::Optimal;
  d.choice.assign(nC, kKeep);
  d.keptWhy.assign(nC, "");
  for (int c = 0; c < nC; ++c) {
    d.choice[c] = solution.recomputed[c] ? kRecompute : kKeep;
    if (d.choice[c] == kRecompute && !problem.candidates[c].recomputable) {
      unrecomputable = c;
      note.clear();
      return std::nullopt;
    }
  }
  note = solution.optimal ? "ILP (GLPK): proven optimal"
                          : "ILP (GLPK): time limit reached, best found";
  return d;
}
