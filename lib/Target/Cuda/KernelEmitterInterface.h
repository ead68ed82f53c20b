//===- KernelEmitterInterface.h - CUDA emission per op ----------*- C++ -*-===//
//
// Internal to the CUDA target. KernelEmitterOpInterface (see its
// description in KernelEmitterInterface.td) and the registration of its
// models for the memfit ops. The interface is private to the target: its
// methods take the target's KernelWriter, and only the target's emitters
// implement it and only its writer calls it.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_TARGET_CUDA_KERNELEMITTERINTERFACE_H
#define MEMFIT_LIB_TARGET_CUDA_KERNELEMITTERINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include <string>

namespace mlir {
class DialectRegistry;

namespace memfit::cuda {

/// The writer of one kernel's CUDA C++ (KernelWriter.h).
class KernelWriter;

/// How an op is emitted; see KernelEmitterOpInterface.
enum class EmitStyle { ElementWise, IndexMapping, Template, Blockwise };

/// Adds the extension that attaches KernelEmitterOpInterface to the memfit
/// ops. emitExecutable (and so the translations and the C++ API) appends it
/// to the module's context itself; calling it again is harmless.
void registerKernelEmitterInterfaces(DialectRegistry &registry);

} // namespace memfit::cuda
} // namespace mlir

/// Generated from KernelEmitterInterface.td into this directory's build
/// tree.
#include "KernelEmitterInterface.h.inc"

#endif // MEMFIT_LIB_TARGET_CUDA_KERNELEMITTERINTERFACE_H
