//===- StepCosts.h - what each step of the executable costs -----*- C++ -*-===//
//
// The manifest's cost fields (rt::StepCost, rt::KernelKind): the compiler's
// cost model (memfit-op-cost) for each kernel and contraction, and the group
// a kernel belongs to in profiles and predicted times (memfit/runtime/
// Roofline.h).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_TARGET_CUDA_STEPCOSTS_H
#define MEMFIT_LIB_TARGET_CUDA_STEPCOSTS_H

#include "memfit/runtime/Manifest.h"

namespace mlir {
class Operation;
namespace memfit::cuda {
namespace rt = ::memfit::rt;

/// The bytes and FLOPs of one step (a memfit.kernel, a single op, or a
/// contraction), by estimateCost.
rt::StepCost stepCost(Operation *step);

/// What a kernel step computes, from its ops' classes (OpClassInterface):
/// attention if any op is attention; optimizer when every result is
/// stored in place by memfit.assign (updates of parameters, states and
/// accumulators); rows if any op reduces (reduction, normalization, loss);
/// element-wise otherwise.
rt::KernelKind kernelKind(Operation *step);

} // namespace memfit::cuda
} // namespace mlir

#endif // MEMFIT_LIB_TARGET_CUDA_STEPCOSTS_H
