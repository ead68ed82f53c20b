//===- RematILPTest.cpp - solveRematILP against brute force ---------------===//
//
// Checks the GLPK remat solver against a brute-force reference that tries
// every set of recomputed candidates of small random problems, and on a
// few hand-made problems with known answers. Plans are evaluated with the
// shared model (RematModel.h): the ILP's optimum must equal the brute
// force's in the variant it formulates (HoldToLastNeed), and its plans
// must fit the model itself, where a plan can be cheaper (counted).
//
//   memfit-remat-ilp-test [--seeds N]
//                                    the checks (600 random problems by
//                                    default); prints
//                                    "remat-ilp: N instances agree"
//   memfit-remat-ilp-test --bench [seconds [layers steps budget]]
//                                    solve times of transformer-like
//                                    problems (not part of the lit test)
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/RematModel.h"

#include "TestRandom.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace mlir::memfit;
using memfit_test::ascendingSteps;
using memfit_test::placeCandidate;
using memfit_test::Random;

namespace {

//===----------------------------------------------------------------------===//
// Plans under the shared model
//===----------------------------------------------------------------------===//

/// The variant of the model that the ILP formulates: its optimum is exact
/// there. Plans are also checked under the model itself (FreeInsideSlot).
constexpr RematModel::Slots kIlpSlots = RematModel::Slots::HoldToLastNeed;

/// The largest bytes of a plan over all steps.
struct Peaks {
  int64_t arena = 0, activations = 0;
};

/// Evaluates a plan with RematModel (RematModel.h) in `slots`. Returns
/// false with `why` set when the plan is malformed (a candidate kept and
/// recomputed, kept or recomputed but not needed, dropped but needed) or a
/// step exceeds its cap; `peaks`, when given, receives the plan's largest
/// bytes.
bool simulate(const RematProblem &p, const std::vector<bool> &kept,
              const std::vector<bool> &recomputed, std::string &why,
              Peaks *peaks = nullptr, RematModel::Slots slots = kIlpSlots) {
  RematModel model(p, slots);
  llvm::SmallVector<char> dropped(recomputed.begin(), recomputed.end());
  RematEvaluation ev = model.evaluate(dropped);
  if (peaks)
    *peaks = {ev.peakArena, ev.peakActivation};
  for (size_t c = 0; c < p.candidates.size(); ++c) {
    std::string name = "candidate " + std::to_string(c);
    if (kept[c] && recomputed[c])
      why = name + " kept and recomputed";
    else if ((kept[c] || recomputed[c]) && !ev.isNeeded(c))
      why = name + (kept[c] ? " kept" : " recomputed") + " but not needed";
    else if (!kept[c] && !recomputed[c] && ev.isNeeded(c))
      why = name + " dropped but needed at " + std::to_string(ev.firstNeed[c]);
    else
      continue;
    return false;
  }
  if (!model.fits(ev)) {
    why = "step " + std::to_string(ev.peakStep) + " (forward, then backward) "
          "or the activations overflow";
    return false;
  }
  return true;
}

/// The cheapest plan that fits under `slots`, by enumerating the sets of
/// recomputed candidates (each keeps exactly the needed candidates it does
/// not recompute); false when none.
bool bruteForce(const RematProblem &p, RematModel::Slots slots,
                double &bestCost) {
  RematModel model(p, slots);
  size_t n = p.candidates.size();
  bool found = false;
  llvm::SmallVector<char> recomputed(n);
  for (uint64_t code = 0; code < (uint64_t(1) << n); ++code) {
    double cost = 0;
    for (size_t c = 0; c < n; ++c) {
      recomputed[c] = (code >> c) & 1;
      if (recomputed[c])
        cost += p.candidates[c].cost;
    }
    if (found && cost >= bestCost)
      continue;
    RematEvaluation ev = model.evaluate(recomputed);
    bool wasted = false;
    for (size_t c = 0; c < n; ++c)
      wasted |= recomputed[c] && !ev.isRecomputed(c);
    if (wasted || !model.fits(ev))
      continue;
    bestCost = cost;
    found = true;
  }
  return found;
}

//===----------------------------------------------------------------------===//
// Problems
//===----------------------------------------------------------------------===//

RematProblem randomProblem(Random &rng) {
  RematProblem p;
  int n = int(rng.chance(0.1) ? rng.range(1, 3) : rng.range(4, 9));
  p.numForwardSteps = n + int(rng.range(0, 3));
  p.numBackwardSteps = int(rng.range(1, 12));
  std::vector<int> steps = ascendingSteps(rng, n, p.numForwardSteps);
  // Sizes: small integers, multiples of a large block, or large and
  // coprime (units of one byte in rows of 1e10: GLPK's tolerances).
  bool coprime = rng.chance(0.15);
  int64_t block = coprime           ? int64_t(1) << 28
                  : rng.chance(0.3) ? rng.range(1, 4) << 28
                                    : rng.range(1, 8);
  double readChance = 0.05 + 0.25 * double(rng.range(0, 4)) / 4;
  bool integerCosts = rng.chance(0.5);
  int64_t totalBytes = 0;
  for (int c = 0; c < n; ++c) {
    RematCandidate cand;
    cand.bytes = rng.chance(0.08) ? 0
                 : coprime        ? rng.range(block, 20 * block)
                                  : block * rng.range(1, 20);
    cand.cost = integerCosts ? double(rng.range(1, 20))
                             : double(rng.range(1, 1000000)) * 1e6;
    placeCandidate(rng, cand, c, steps[c], p, readChance);
    totalBytes += cand.bytes;
    p.candidates.push_back(cand);
  }
  int64_t fixedScale = block * 10;
  for (int t = 0; t < p.numForwardSteps; ++t)
    p.fixedForward.push_back(fixedScale * rng.range(0, 4));
  for (int b = 0; b < p.numBackwardSteps; ++b)
    p.fixedBackward.push_back(fixedScale * rng.range(0, 4));
  // Caps between what the reads alone need and what keeping every read
  // candidate needs, where the choice matters; now and then below.
  std::vector<int64_t> reads(p.numBackwardSteps, 0);
  for (const RematCandidate &c : p.candidates)
    for (int b : c.backwardReads)
      reads[b] += c.bytes;
  int64_t low = 0, high = 0, lowActivation = 0, highActivation = 0;
  for (int t = 0; t < p.numForwardSteps; ++t) {
    int64_t kept = 0;
    for (const RematCandidate &c : p.candidates)
      if (!c.backwardReads.empty() && c.lastForwardUse < t)
        kept += c.bytes;
    low = std::max(low, p.fixedForward[t]);
    high = std::max(high, p.fixedForward[t] + kept);
  }
  for (int b = 0; b < p.numBackwardSteps; ++b) {
    int64_t kept = 0;
    for (const RematCandidate &c : p.candidates)
      if (!c.backwardReads.empty() && c.backwardReads.back() >= b)
        kept += c.bytes;
    low = std::max(low, p.fixedBackward[b] + reads[b]);
    high = std::max(high, p.fixedBackward[b] + kept);
    lowActivation = std::max(lowActivation, reads[b]);
    highActivation = std::max(highActivation, kept);
  }
  for (const RematCandidate &c : p.candidates)
    if (!c.backwardReads.empty())
      highActivation = std::max(highActivation, c.bytes);
  int64_t slack = rng.chance(0.1) ? -rng.range(1, block) : 0;
  p.arenaCap = low + slack + (high - low) * rng.range(0, 110) / 100;
  if (rng.chance(0.2))
    p.arenaCap += rng.range(0, block - 1); // not a multiple of the sizes
  if (rng.chance(0.4))
    p.activationCap = lowActivation + (highActivation - lowActivation) *
                                          rng.range(0, 110) / 100;
  // Now and then, caps exactly at the peaks of some valid plan: the
  // optimum then sits on the boundary, in exact bytes.
  if (rng.chance(0.25)) {
    size_t n = p.candidates.size();
    std::vector<bool> kept(n), recomputed(n);
    for (int attempt = 0; attempt < 20; ++attempt) {
      for (size_t c = 0; c < n; ++c) {
        int64_t choice = rng.range(0, 2);
        kept[c] = choice == 1;
        recomputed[c] = choice == 2;
      }
      RematProblem open = p;
      open.arenaCap = INT64_MAX;
      open.activationCap = -1;
      Peaks peaks;
      std::string why;
      if (!simulate(open, kept, recomputed, why, &peaks))
        continue;
      p.arenaCap = peaks.arena;
      p.activationCap = rng.chance(0.5) ? peaks.activations : -1;
      break;
    }
  }
  return p;
}

/// Forward steps 0..2 produce a, b, c (a chain), step 3 reads c; the
/// backward reads c, b, a at steps 0, 1, 2. The activation cap holds two
/// of the three: the cheapest, b, is recomputed from a.
RematProblem chainOfThree() {
  RematProblem p;
  p.numForwardSteps = 4;
  p.numBackwardSteps = 3;
  p.fixedForward = {0, 0, 0, 0};
  p.fixedBackward = {0, 0, 0};
  p.arenaCap = 1000;
  p.activationCap = 20;
  p.candidates = {
      {10, 5, 0, 1, {}, {2}}, {10, 3, 1, 2, {0}, {1}}, {10, 7, 2, 3, {1}, {0}}};
  return p;
}

/// Forward a -> b -> c with c read at backward step 1 and a at step 2;
/// after the forward pass at most 10 kept bytes fit. Keeping c (10) means
/// recomputing a (cost 100); keeping a (1) means recomputing c and, as its
/// input, b (cost 1 + 1).
RematProblem recomputedInput() {
  RematProblem p;
  p.numForwardSteps = 5;
  p.numBackwardSteps = 3;
  p.fixedForward = {0, 0, 0, 0, 90};
  p.fixedBackward = {0, 0, 0};
  p.arenaCap = 100;
  p.candidates = {
      {1, 100, 0, 1, {}, {2}}, {10, 1, 1, 2, {0}, {}}, {10, 1, 2, 3, {1}, {1}}};
  return p;
}

/// u (10 bytes) is read at backward step 1, c (1 byte, computed from u) at
/// step 5, and nothing can be kept. u is recomputed at step 1 and, as c's
/// input, stays resident until c is recomputed at 5; step 3 has no room
/// for it. Recomputing c early (at 1, with u) would fit, but the model
/// recomputes at the first need: no plan fits.
RematProblem recomputeAtFirstNeed() {
  RematProblem p;
  p.numForwardSteps = 4;
  p.numBackwardSteps = 6;
  p.fixedForward = {0, 0, 0, 100};
  p.fixedBackward = {0, 0, 0, 95, 0, 0};
  p.arenaCap = 100;
  p.candidates = {{10, 1, 0, 1, {}, {1}}, {1, 1, 1, 2, {0}, {5}}};
  return p;
}

/// u (10 bytes) -> c (1) -> d (1); u and d are read at backward step 1, c
/// at step 5; one byte can be kept; step 3 has room for c, not u. Keeping
/// d and recomputing u and c at step 1 would cost 6, but nothing needs c
/// at 1: c is recomputed at 5, u lives from 1 to 5 and does not fit. The
/// plan keeps c and recomputes u and d at 1 (cost 8).
RematProblem recomputeOnlyWhenNeeded() {
  RematProblem p;
  p.numForwardSteps = 5;
  p.numBackwardSteps = 6;
  p.fixedForward = {0, 0, 0, 0, 99};
  p.fixedBackward = {0, 0, 0, 95, 0, 0};
  p.arenaCap = 100;
  p.candidates = {
      {10, 5, 0, 1, {}, {1}}, {1, 1, 1, 2, {0}, {5}}, {1, 3, 2, 3, {1}, {1}}};
  return p;
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

int failures = 0;
/// Random instances by outcome of the brute force.
int numInfeasible = 0, numFree = 0, numRecomputing = 0;
/// Random instances where the model (values freed inside a slot) admits a
/// cheaper plan than the ILP's optimum in its variant.
int numModelCheaper = 0;

void fail(const std::string &name, const std::string &message) {
  std::printf("FAIL %s: %s\n", name.c_str(), message.c_str());
  ++failures;
}

bool sameCost(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

/// Solves and checks the solver's own contract: a feasible plan, its cost
/// as reported. Returns whether a plan came back.
bool solveChecked(const std::string &name, const RematProblem &p,
                  RematSolution &solution, std::string &error) {
  SolverOptions options; // 60 s
  if (!solveRematILP(p, options, solution, error))
    return false;
  std::string why;
  if (!simulate(p, solution.kept, solution.recomputed, why))
    fail(name, "solver plan is infeasible: " + why);
  else if (!simulate(p, solution.kept, solution.recomputed, why, nullptr,
                     RematModel::Slots::FreeInsideSlot))
    fail(name, "solver plan does not fit the model: " + why);
  double cost = 0;
  for (size_t c = 0; c < p.candidates.size(); ++c)
    if (solution.recomputed[c])
      cost += p.candidates[c].cost;
  if (!sameCost(cost, solution.cost))
    fail(name, "reported cost " + std::to_string(solution.cost) +
                   ", plan costs " + std::to_string(cost));
  if (!solution.optimal)
    fail(name, "not proven optimal");
  return true;
}

std::string planText(const RematSolution &s) {
  std::string text;
  for (size_t c = 0; c < s.kept.size(); ++c)
    text += s.kept[c] ? 'K' : s.recomputed[c] ? 'R' : '-';
  return text;
}

void checkKnown(const std::string &name, const RematProblem &p,
                const char *expectedPlan, double expectedCost) {
  RematSolution solution;
  std::string error;
  bool solved = solveChecked(name, p, solution, error);
  if (!expectedPlan) {
    if (solved)
      fail(name, "expected no plan, got " + planText(solution));
    else if (error.rfind("no plan fits", 0) != 0)
      fail(name, "unexpected error: " + error);
    return;
  }
  if (!solved) {
    fail(name, "no plan: " + error);
    return;
  }
  if (planText(solution) != expectedPlan ||
      !sameCost(solution.cost, expectedCost))
    fail(name, "plan " + planText(solution) + " cost " +
                   std::to_string(solution.cost) + ", expected " +
                   expectedPlan + " cost " + std::to_string(expectedCost));
}

void checkRandom(uint64_t seed) {
  Random rng(seed);
  RematProblem p = randomProblem(rng);
  std::string name = "random seed " + std::to_string(seed);
  double bestCost = 0;
  bool feasible = bruteForce(p, kIlpSlots, bestCost);
  ++(!feasible ? numInfeasible : bestCost > 0 ? numRecomputing : numFree);
  double modelCost = 0;
  bool modelFeasible =
      bruteForce(p, RematModel::Slots::FreeInsideSlot, modelCost);
  if (feasible && !modelFeasible)
    fail(name, "a plan fits the ILP's variant but none fits the model");
  else if (modelFeasible &&
           (!feasible || (!sameCost(modelCost, bestCost) &&
                          modelCost < bestCost)))
    ++numModelCheaper;
  else if (feasible && !sameCost(modelCost, bestCost))
    fail(name, "the model's cheapest plan costs " +
                   std::to_string(modelCost) + ", more than the variant's " +
                   std::to_string(bestCost));
  RematSolution solution;
  std::string error;
  bool solved = solveChecked(name, p, solution, error);
  if (feasible && !solved)
    fail(name, "brute force costs " + std::to_string(bestCost) +
                   ", solver: " + error);
  else if (!feasible && solved)
    fail(name, "brute force finds no plan, solver: " + planText(solution));
  else if (!feasible && error.rfind("no plan fits", 0) != 0)
    fail(name, "unexpected error: " + error);
  else if (feasible && !sameCost(bestCost, solution.cost))
    fail(name, "brute force costs " + std::to_string(bestCost) + ", solver " +
                   std::to_string(solution.cost));
}

//===----------------------------------------------------------------------===//
// Benchmark
//===----------------------------------------------------------------------===//

/// A transformer-like training step: `layers` blocks of six candidates
/// (norm, qkv, attention, projection + residual, mlp up, mlp down +
/// residual), the backward in reverse with each candidate read by its own
/// and its consumers' backward steps, over `backwardSteps` backward steps
/// in all.
RematProblem benchProblem(int layers, int backwardSteps, double budget,
                          uint64_t seed) {
  Random rng(seed);
  RematProblem p;
  int n = layers * 6;
  p.numForwardSteps = n + 2;
  p.numBackwardSteps = backwardSteps;
  const int64_t mib = 1 << 20;
  // {bytes in MiB, cost (FLOPs + bytes)} per kind.
  const int64_t sizes[] = {16, 48, 64, 16, 64, 16};
  const double costs[] = {2e8, 3e11, 4e11, 1e11, 4e11, 4e11};
  int residual = -1;
  for (int c = 0; c < n; ++c) {
    RematCandidate cand;
    int kind = c % 6;
    cand.bytes = sizes[kind] * mib + rng.range(0, 63) * 4096;
    cand.cost = costs[kind] * (1 + 0.01 * double(rng.range(0, 10)));
    cand.forwardStep = c + 1;
    cand.lastForwardUse = c + 2;
    if (c > 0)
      cand.inputs.push_back(c - 1);
    if ((kind == 0 || kind == 3 || kind == 5) && residual >= 0 &&
        residual != c - 1)
      cand.inputs.push_back(residual);
    if (kind == 3 || kind == 5) {
      residual = c;
      cand.lastForwardUse = std::min(c + 6, n + 1);
    }
    p.candidates.push_back(cand);
  }
  // Backward: candidate c's gradient is around step (n - 1 - c) scaled;
  // it is read there and by its consumer's step (one earlier).
  for (int c = 0; c < n; ++c) {
    int step = int(int64_t(n - 1 - c) * backwardSteps / n);
    std::vector<int> reads = {step};
    if (c + 1 < n)
      reads.push_back(int(int64_t(n - 2 - c) * backwardSteps / n));
    if (rng.chance(0.3))
      reads.push_back(std::min(backwardSteps - 1, step + 1));
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    p.candidates[c].backwardReads = reads;
  }
  for (int t = 0; t < p.numForwardSteps; ++t)
    p.fixedForward.push_back(200 * mib + rng.range(0, 255) * 4096);
  for (int b = 0; b < backwardSteps; ++b)
    p.fixedBackward.push_back(300 * mib + rng.range(0, 1023) * 4096);
  // The cap: `budget` of the way from the reads-only peak to keeping all.
  std::vector<int64_t> reads(backwardSteps, 0);
  int64_t all = 0, peakReads = 0, peakAll = 0;
  for (const RematCandidate &c : p.candidates) {
    all += c.bytes;
    for (int b : c.backwardReads)
      reads[b] += c.bytes;
  }
  for (int b = 0; b < backwardSteps; ++b) {
    peakReads = std::max(peakReads, p.fixedBackward[b] + reads[b]);
    peakAll = std::max(peakAll, p.fixedBackward[b] + all);
  }
  for (int64_t fixed : p.fixedForward)
    peakAll = std::max(peakAll, fixed + all);
  p.arenaCap = peakReads + int64_t(budget * double(peakAll - peakReads));
  return p;
}

void benchOne(int layers, int backwardSteps, double budget,
              double timeLimitSeconds) {
  RematProblem p = benchProblem(layers, backwardSteps, budget, 7);
  SolverOptions options;
  options.timeLimitSeconds = timeLimitSeconds;
  RematSolution solution;
  std::string error;
  auto start = std::chrono::steady_clock::now();
  bool solved = solveRematILP(p, options, solution, error);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("bench: %zu candidates x %d backward steps, budget %.2f: "
              "%.3f s, ",
              p.candidates.size(), p.numBackwardSteps, budget, seconds);
  if (!solved) {
    std::printf("%s\n", error.c_str());
    return;
  }
  int numRecomputed = 0, numKept = 0;
  for (size_t c = 0; c < p.candidates.size(); ++c) {
    numRecomputed += solution.recomputed[c];
    numKept += solution.kept[c];
  }
  std::string why;
  bool valid = simulate(p, solution.kept, solution.recomputed, why);
  std::printf("%d kept, %d recomputed, cost %.4g, %s%s\n", numKept,
              numRecomputed, solution.cost,
              solution.optimal ? "optimal" : "not proven",
              valid ? "" : (", INFEASIBLE: " + why).c_str());
  if (!valid)
    ++failures;
}

/// --bench [seconds [layers backward-steps budget]]: the default sizes and
/// budgets, or one problem.
int runBench(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  double seconds = argc > 2 ? std::atof(argv[2]) : 60;
  if (argc > 5) {
    benchOne(std::atoi(argv[3]), std::atoi(argv[4]), std::atof(argv[5]),
             seconds);
  } else {
    for (auto [layers, steps] : {std::pair(10, 200), std::pair(25, 500)})
      for (double budget : {0.9, 0.6, 0.4, 0.2, 0.1})
        benchOne(layers, steps, budget, seconds);
  }
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--bench") == 0)
    return runBench(argc, argv);

  checkKnown("chain of three", chainOfThree(), "KRK", 3);
  checkKnown("recomputed input", recomputedInput(), "KRR", 2);
  checkKnown("recompute at first need", recomputeAtFirstNeed(), nullptr, 0);
  checkKnown("recompute only when needed", recomputeOnlyWhenNeeded(), "RKR", 8);
  int instances = 4;
  uint64_t seeds = 600;
  if (argc > 2 && std::strcmp(argv[1], "--seeds") == 0)
    seeds = std::strtoull(argv[2], nullptr, 10);
  for (uint64_t seed = 1; seed <= seeds; ++seed, ++instances)
    checkRandom(seed);

  if (failures) {
    std::printf("remat-ilp: %d of %d instances disagree\n", failures,
                instances);
    return 1;
  }
  std::printf("remat-ilp: %d instances agree (random: %d recompute, %d keep "
              "all they need, %d infeasible; the model admits a cheaper "
              "plan in %d)\n",
              instances, numRecomputing, numFree, numInfeasible,
              numModelCheaper);
  return 0;
}
