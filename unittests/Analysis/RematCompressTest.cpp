//===- RematCompressTest.cpp - the third remat choice: save compressed ----===//
//
// Checks the model's bytes and price of compressed candidates on a problem
// worked out by hand, auto's choice between keeping, recomputing and
// compressing on three problems whose answer is known, and auto on small
// random problems against a brute force over all 3^n plans: every plan
// auto returns fits, auto finds a plan whenever one exists, and it is
// never more expensive than the best plan without compression. Prints the
// share of problems where auto's plan is as cheap as the brute force's.
//
//   memfit-remat-compress-test [--seeds N]   (400 random problems by default)
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/RematPolicies.h"

#include "TestRandom.h"

#include <cstdint>
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

int failures = 0;

void fail(const std::string &what) {
  std::printf("FAIL: %s\n", what.c_str());
  ++failures;
}

template <typename T> std::string show(const llvm::SmallVectorImpl<T> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? " " : "") + std::to_string(values[i]);
  return text + "]";
}

void expectSeries(const char *what, const llvm::SmallVectorImpl<int64_t> &got,
                  std::vector<int64_t> want) {
  llvm::SmallVector<int64_t> expected(want.begin(), want.end());
  if (got != expected)
    fail(std::string(what) + ": " + show(got) + ", expected " + show(expected));
}

//===----------------------------------------------------------------------===//
// The model, by hand
//===----------------------------------------------------------------------===//

/// a (100 bytes, 30 compressed; quantizing costs 4, dequantizing 2) is
/// made at forward step 0, last read in the forward at step 1, and read by
/// backward steps 0 and 2; b (10 bytes, cost 1) is made from a at forward
/// step 2 and read by backward step 1. No fixed bytes.
RematProblem handMade() {
  RematProblem p;
  p.numForwardSteps = 3;
  p.numBackwardSteps = 3;
  p.fixedForward = {0, 0, 0};
  p.fixedBackward = {0, 0, 0};
  p.arenaCap = -1;
  RematCandidate a{100, 50, 0, 1, {}, {0, 2}};
  a.compressedBytes = 30;
  a.compressCost = 4;
  a.decompressCost = 2;
  RematCandidate b{10, 1, 2, 2, {0}, {1}};
  p.candidates = {a, b};
  return p;
}

void checkModel() {
  RematProblem p = handMade();
  RematModel model(p);
  // a compressed, b kept: a's codes from its last forward use on, whole
  // again at backward steps 0 and 2.
  RematEvaluation ev = model.evaluate({kCompress, kKeep});
  expectSeries("compress a: forward bytes", ev.forwardBytes, {0, 30, 30});
  expectSeries("compress a: backward bytes", ev.backwardBytes, {140, 40, 130});
  if (ev.cost != 4 + 2 * 2)
    fail("compress a: cost " + std::to_string(ev.cost) + ", expected 8");
  if (ev.decompressAt[0] != llvm::SmallVector<int>{0} ||
      !ev.decompressAt[1].empty() ||
      ev.decompressAt[2] != llvm::SmallVector<int>{0})
    fail("compress a: dequantized at the wrong steps");
  if (ev.peakActivation != 140 || ev.peakArena != 140)
    fail("compress a: peaks " + std::to_string(ev.peakArena) + ", " +
         std::to_string(ev.peakActivation) + ", expected 140, 140");
  // a compressed, b recomputed at backward step 1: a is needed there too.
  ev = model.evaluate({kCompress, kRecompute});
  expectSeries("compress a, recompute b: backward bytes", ev.backwardBytes,
               {130, 140, 130});
  if (ev.cost != 4 + 2 * 3 + 1)
    fail("compress a, recompute b: cost " + std::to_string(ev.cost) +
         ", expected 11");
  // Keeping both, for comparison.
  ev = model.evaluate({kKeep, kKeep});
  expectSeries("keep both: forward bytes", ev.forwardBytes, {0, 0, 100});
  expectSeries("keep both: backward bytes", ev.backwardBytes, {110, 110, 100});
  if (ev.cost != 0)
    fail("keep both: cost " + std::to_string(ev.cost));
}

//===----------------------------------------------------------------------===//
// auto's choice, on known answers
//===----------------------------------------------------------------------===//

/// One candidate x, 100 bytes (25 compressed), made at forward step 0 and
/// read by the last backward step. Kept, it peaks at 150 bytes (forward
/// steps 1 and 2); compressed at 125 (its codes and its dequantized copy
/// at backward step 2); recomputed at 100.
RematProblem oneValue(double recomputeCost, double compressCost, int64_t cap) {
  RematProblem p;
  p.numForwardSteps = 3;
  p.numBackwardSteps = 3;
  p.fixedForward = {60, 50, 50};
  p.fixedBackward = {40, 40, 0};
  p.arenaCap = cap;
  RematCandidate x{100, recomputeCost, 0, 0, {}, {2}};
  x.compressedBytes = 25;
  x.compressCost = compressCost;
  x.decompressCost = compressCost / 2;
  p.candidates = {x};
  return p;
}

void checkKnown(const char *name, const RematProblem &p, char want) {
  RematModel model(p);
  std::optional<RematDecision> d = decideAuto(model);
  const char *names = "KRC";
  if (!d) {
    fail(std::string(name) + ": no plan");
    return;
  }
  if (d->choice[0] != want)
    fail(std::string(name) + ": chose " + names[int(d->choice[0])] +
         ", expected " + names[int(want)]);
  else
    std::printf("%s: %c\n", name, names[int(want)]);
}

//===----------------------------------------------------------------------===//
// Random problems against brute force
//===----------------------------------------------------------------------===//

RematProblem randomProblem(Random &rng) {
  RematProblem p;
  int n = int(rng.range(2, 7));
  p.numForwardSteps = n + int(rng.range(0, 2));
  p.numBackwardSteps = int(rng.range(2, 10));
  std::vector<int> steps = ascendingSteps(rng, n, p.numForwardSteps);
  for (int c = 0; c < n; ++c) {
    RematCandidate cand;
    cand.bytes = 64 * rng.range(1, 16);
    // Contractions (expensive to recompute) and element-wise ops (cheap).
    cand.cost = double(cand.bytes) *
                (rng.chance(0.4) ? rng.range(20, 60) : rng.range(1, 4));
    placeCandidate(rng, cand, c, steps[c], p, 0.2);
    if (rng.chance(0.8)) {
      cand.compressedBytes = cand.bytes / 4 + 16;
      cand.compressCost = double(cand.bytes) * 3;
      cand.decompressCost = double(cand.bytes) * 1.5;
    }
    p.candidates.push_back(cand);
  }
  for (int t = 0; t < p.numForwardSteps; ++t)
    p.fixedForward.push_back(64 * rng.range(0, 8));
  for (int b = 0; b < p.numBackwardSteps; ++b)
    p.fixedBackward.push_back(64 * rng.range(0, 8));
  RematModel model(p);
  int64_t none = model.evaluate(keepEverything(p).choice).peakArena;
  p.arenaCap = none * rng.range(40, 100) / 100;
  return p;
}

/// The cheapest plan that fits among those whose choices are in
/// [0, choices): the cost, or -1 when none fits.
double bruteForce(const RematProblem &p, int choices) {
  RematModel model(p);
  size_t n = p.candidates.size();
  double best = -1;
  std::vector<int> digits(n, 0);
  llvm::SmallVector<char> plan(n, kKeep);
  while (true) {
    bool valid = true;
    for (size_t c = 0; c < n; ++c) {
      plan[c] = char(digits[c]);
      valid &= plan[c] != kCompress || p.candidates[c].compressedBytes >= 0;
    }
    if (valid) {
      RematEvaluation ev = model.evaluate(plan);
      if (model.fits(ev) && (best < 0 || ev.cost < best))
        best = ev.cost;
    }
    size_t k = 0;
    while (k < n && ++digits[k] == choices)
      digits[k++] = 0;
    if (k == n)
      break;
  }
  return best;
}

int numOptimal = 0, numFeasible = 0, numCompressing = 0, numSolvable = 0;

void checkRandom(uint64_t seed) {
  Random rng(seed);
  RematProblem p = randomProblem(rng);
  std::string label = "seed " + std::to_string(seed);
  RematModel model(p);
  double best3 = bruteForce(p, 3), best2 = bruteForce(p, 2);
  numSolvable += best3 >= 0;
  std::optional<RematDecision> d = decideAuto(model);
  if (!d) {
    // auto may miss a plan that only a cleverer search finds; it must not
    // miss one where keeping or compressing everything it can fits.
    RematDecision all = keepEverything(p);
    for (size_t c = 0; c < p.candidates.size(); ++c)
      if (p.candidates[c].compressedBytes >= 0)
        all.choice[c] = kCompress;
    if (model.fits(model.evaluate(all.choice)))
      fail(label + ": no plan, but compressing everything fits");
    return;
  }
  RematEvaluation ev = model.evaluate(d->choice);
  if (!model.fits(ev)) {
    fail(label + ": auto's plan does not fit");
    return;
  }
  ++numFeasible;
  if (best3 < 0 || ev.cost < best3 - 1e-9) {
    fail(label + ": auto beats the brute force");
    return;
  }
  if (best2 >= 0 && ev.cost > best2 + 1e-9)
    fail(label + ": auto costs " + std::to_string(ev.cost) +
         ", more than the best plan without compression, " +
         std::to_string(best2));
  if (ev.cost <= best3 + 1e-9)
    ++numOptimal;
  for (char choice : d->choice)
    if (choice == kCompress) {
      ++numCompressing;
      break;
    }
}

} // namespace

int main(int argc, char **argv) {
  checkModel();
  // Recomputing is dear (a contraction), compressing cheap: compress.
  checkKnown("contraction", oneValue(10000, 300, 130), kCompress);
  // Recomputing is cheaper than quantizing and dequantizing: recompute.
  checkKnown("element-wise", oneValue(100, 300, 130), kRecompute);
  // The compressed value does not fit: recompute.
  checkKnown("too tight", oneValue(10000, 300, 110), kRecompute);
  // It all fits: keep.
  checkKnown("room", oneValue(10000, 300, 200), kKeep);
  uint64_t seeds = 400;
  if (argc > 2 && std::strcmp(argv[1], "--seeds") == 0)
    seeds = std::strtoull(argv[2], nullptr, 10);
  for (uint64_t seed = 1; seed <= seeds; ++seed)
    checkRandom(seed);
  if (failures) {
    std::printf("remat-compress: %d failures\n", failures);
    return 1;
  }
  std::printf("remat-compress: %llu random problems, %d with plans, auto "
              "finds %d: optimal in %d (%.1f%%), compressing in %d\n",
              (unsigned long long)seeds, numSolvable, numFeasible, numOptimal,
              numFeasible ? 100.0 * numOptimal / numFeasible : 0.0,
              numCompressing);
  return 0;
}
