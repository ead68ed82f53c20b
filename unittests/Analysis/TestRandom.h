//===- TestRandom.h - reproducible random numbers for tests -----*- C++ -*-===//
//
// The random problems of the remat unit tests, the same on every standard
// library (std::*_distribution differ between them).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_UNITTESTS_ANALYSIS_TESTRANDOM_H
#define MEMFIT_UNITTESTS_ANALYSIS_TESTRANDOM_H

#include <cstdint>
#include <random>

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

} // namespace memfit_test

#endif // MEMFIT_UNITTESTS_ANALYSIS_TESTRANDOM_H
