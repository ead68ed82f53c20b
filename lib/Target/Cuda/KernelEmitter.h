//===- KernelEmitter.h - CUDA C++ of one kernel (internal) ------*- C++ -*-===//
//
// What EmitCuda.cpp calls to write kernels, defined in KernelEmitter.cpp,
// and how the target names kernels and reports what it cannot emit. The
// ops' emitters are KernelEmitterOpInterface models (PointwiseEmitters,
// RowEmitters, LossEmitters, SpecialEmitters, QuantEmitters), which
// emitExecutable registers on the module's context before it writes the
// first kernel.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_TARGET_CUDA_KERNELEMITTER_H
#define MEMFIT_LIB_TARGET_CUDA_KERNELEMITTER_H

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/runtime/Manifest.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::memfit {
namespace rt = ::memfit::rt;
} // namespace mlir::memfit

namespace mlir::memfit::cuda {

/// Helpers every kernel may call (warp and block reductions, dropout's
/// hash): Prelude.cuh, embedded at build time and written once at the top
/// of the source. With `halfTypes`, CUDA's cuda_fp16.h and cuda_bf16.h are
/// included first (the host backend's emulation header defines the same
/// types and conversions instead).
void emitPrelude(llvm::raw_ostream &os, bool halfTypes);

/// The code tables and encoders of the quantization schemes that `module`
/// uses (QuantEmitters.cpp), written after the prelude; nothing when it
/// quantizes nothing.
void emitQuantTables(llvm::raw_ostream &os, ModuleOp module);

/// Writes the __global__ function of `kernel` (named after `index` and its
/// ops) and returns its launch description. Parameters are the kernel's
/// inputs followed by its results.
FailureOr<rt::Kernel> emitKernel(KernelOp kernel, unsigned index,
                                 llvm::raw_ostream &os);

/// A kernel that writes `from` broadcast to `to` (the bias of a gemm,
/// copied into its output before the contraction accumulates onto it).
FailureOr<rt::Kernel> emitBroadcastCopy(Operation *op, unsigned index,
                                        RankedTensorType from,
                                        RankedTensorType to,
                                        llvm::raw_ostream &os);

/// The ONNX node names in a location (NameLoc, possibly fused).
void collectNodeNames(Location loc, std::vector<std::string> &names);
/// ONNX node names for a kernel's `//` comment: control characters and
/// backslashes (which would continue the comment onto the next line) are
/// replaced.
std::string nodeList(ArrayRef<std::string> nodes);
/// The op's name without the dialect prefix, for a kernel's name.
std::string opLabel(Operation *op);

/// `cannot emit CUDA for '<op>': ` on `op`, to be continued with the
/// reason.
InFlightDiagnostic cannotEmit(Operation *op);

} // namespace mlir::memfit::cuda

#endif // MEMFIT_LIB_TARGET_CUDA_KERNELEMITTER_H
