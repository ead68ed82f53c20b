//===- TestRandom.h - reproducible random numbers for tests -----*- C++ -*-===//
//
// The random problems of the remat unit tests, the same on every standard
// library (std::*_distribution differ between them), and the pieces of
// them the tests share.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_UNITTESTS_ANALYSIS_TESTRANDOM_H
#define MEMFIT_UNITTESTS_ANALYSIS_TESTRANDOM_H

#include "memfit/Analysis/RematProblem.h"

#include <cstdint>
#include <random>
#include <vector>

namespace memfit_test {

class Random {
public:
  explicit Random(uint64_t seed) : engine(seed) {}
  int64_t range(int64_t lo, int64_t hi) { // inclusive
    return lo + int64_t(engine() % uint64_t(hi - lo + 1));
  }
  bool chance(double p) { return double(engine() >> 11) * 0x1p-53 < p; }

private:
  std::mt19937_64 engine;
};

/// `n` distinct forward steps of `total`, ascending.
inline std::vector<int> ascendingSteps(Random &rng, int n, int total) {
  std::vector<int> steps(total);
  for (int t = 0; t < total; ++t)
    steps[t] = t;
  while ((int)steps.size() > n)
    steps.erase(steps.begin() + rng.range(0, steps.size() - 1));
  return steps;
}

/// Candidate `c`'s place in the problem `p` being built, at `forwardStep`:
/// its last forward use, its inputs (earlier candidates, each with chance
/// 0.3) and the backward steps that read it (each with `readChance`).
inline void placeCandidate(Random &rng, mlir::memfit::RematCandidate &cand,
                           int c, int forwardStep,
                           const mlir::memfit::RematProblem &p,
                           double readChance) {
  cand.forwardStep = forwardStep;
  cand.lastForwardUse = int(rng.range(forwardStep, p.numForwardSteps - 1));
  for (int u = 0; u < c; ++u)
    if (rng.chance(0.3))
      cand.inputs.push_back(u);
  for (int b = 0; b < p.numBackwardSteps; ++b)
    if (rng.chance(readChance))
      cand.backwardReads.push_back(b);
}

} // namespace memfit_test

#endif // MEMFIT_UNITTESTS_ANALYSIS_TESTRANDOM_H
