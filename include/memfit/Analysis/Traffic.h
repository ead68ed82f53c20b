//===- Traffic.h - bytes a step moves, and the least it could ---*- C++ -*-===//
//
// What a function's kernels and contractions read and write (the op cost
// interface's bytes: a kernel moves its inputs and results, its
// intermediates stay in registers), set against a lower bound from its
// memory plan: every input, parameter and state read once, every output
// and update written once, every saved activation written once and read
// once. memfit-fuse's report and memfit-op-cost print it.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_ANALYSIS_TRAFFIC_H
#define MEMFIT_ANALYSIS_TRAFFIC_H

#include "memfit/Analysis/MemoryPlan.h"

namespace mlir::memfit {

struct StepTraffic {
  int64_t kernels = 0, contractions = 0;
  int64_t flops = 0;
  /// What the steps read and write, by the op cost interface (each kernel
  /// input counted once), and the contractions' part of it.
  int64_t bytesMoved = 0, contractionBytes = 0;
  /// The lower bound's terms.
  int64_t inputs = 0, weightsRead = 0, outputs = 0, updates = 0,
          savedActivations = 0;
  /// inputs + weightsRead + outputs + updates + 2 * savedActivations.
  int64_t lowerBound() const {
    return inputs + weightsRead + outputs + updates + 2 * savedActivations;
  }
};

/// The traffic of the function that `plan` plans.
StepTraffic stepTraffic(const MemoryPlan &plan);

/// Two lines, each starting with `label`: the step counts, FLOPs and bytes
/// moved; the lower bound, its terms and the ratio of the two.
void writeTraffic(const StepTraffic &traffic, StringRef label, raw_ostream &os);

} // namespace mlir::memfit

#endif // MEMFIT_ANALYSIS_TRAFFIC_H
