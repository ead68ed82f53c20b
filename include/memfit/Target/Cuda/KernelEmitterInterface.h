//===- KernelEmitterInterface.h - CUDA emission per op ------------*- C++ -*-===//
//
// KernelEmitterOpInterface (see its description in
// KernelEmitterInterface.td) and the registration of its models for the
// memfit ops.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_TARGET_CUDA_KERNELEMITTERINTERFACE_H
#define MEMFIT_TARGET_CUDA_KERNELEMITTERINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include <string>

namespace mlir {
class DialectRegistry;

namespace memfit::cuda {

/// The writer of one kernel's CUDA C++ (lib/Target/Cuda/KernelWriter.h).
class KernelWriter;

/// How an op is emitted; see KernelEmitterOpInterface.
enum class EmitStyle { ElementWise, IndexMapping, Template, Blockwise };

/// Adds the extension that attaches KernelEmitterOpInterface to the memfit
/// ops. emitExecutable (and so the translations and the C++ API) appends it
/// to the module's context itself; calling it again is harmless.
void registerKernelEmitterInterfaces(DialectRegistry &registry);

} // namespace memfit::cuda
} // namespace mlir

#include "memfit/Target/Cuda/KernelEmitterInterface.h.inc"

#endif // MEMFIT_TARGET_CUDA_KERNELEMITTERINTERFACE_H
