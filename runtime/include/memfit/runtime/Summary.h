//===- Summary.h - plans and tensors in a few lines for people --*- C++ -*-===//
//
// What memfit-run prints about an executable's memory plan and about each
// output; the C++ API prints the same.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SUMMARY_H
#define MEMFIT_RUNTIME_SUMMARY_H

#include "memfit/runtime/Session.h"
#include "memfit/runtime/Tensor.h"

#include <string>

namespace memfit::rt {

/// The one allocation and the bytes per category of the manifest:
///
///   memory plan: 194,816 bytes in one allocation (weights 141,056, arena
///   peak 53,760)
///     by category (each buffer counted once; arena buffers share space):
///       parameters                    134,656 bytes
///       ...
std::string formatPlanSummary(const Manifest &manifest);

/// Two lines: the name, dtype and shape with the finite elements' minimum,
/// maximum and mean (and how many are not finite), then the first six
/// elements (fixed, two decimals; half types print "nan"):
///
///     logits: 2x16x96xf32  min -4.12 max 3.47 mean 0.08
///       [-1.64, -0.45, 0.29, 0.18, 2.05, -0.63, ...]
std::string formatTensorSummary(const std::string &name, const Tensor &tensor);

/// Where a profiled session's time went (Session::stepProfile), per run of
/// each entry that ran: by kind (contractions, element-wise kernels, row
/// kernels in thread loops, kernels run as fibers; kinds that did not run
/// are left out) and by the op a kernel computes (its name
/// without the leading "k<n>_"), the `top` largest first:
///
///   profile of entry 'train_step': 10 runs, 31.20 ms a run (each step
///   timed alone)
///     by kind:
///       contractions                21 steps   12.30 ms  39.4%
///       ...
///     by op:
///       layer_norm                   5 steps    4.10 ms  13.1%
///       ...
std::string formatStepProfile(const Manifest &manifest,
                              const std::vector<StepTime> &times,
                              size_t top = 12);

/// A file name for a tensor: every character other than letters, digits,
/// '_', '-' and '.' becomes '_' ("grad./h.0/attn" -> "grad._h.0_attn").
std::string tensorFileName(const std::string &name);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SUMMARY_H
