//===- EmitCuda.h - CUDA C++ and manifest emission ---------------*- C++ -*-===//
//
// Translates a function whose ops have been formed into kernels (see
// memfit-form-kernels) into the runtime's executable: one CUDA C++
// __global__ function per memfit.kernel, a contraction per matmul or gemm,
// the memory plan's buffers and the call sequence.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_TARGET_CUDA_EMITCUDA_H
#define MEMFIT_TARGET_CUDA_EMITCUDA_H

#include "memfit/runtime/Manifest.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::memfit {

namespace rt = ::memfit::rt;

struct CudaEmitOptions {
  /// Recorded in the manifest's `model` field.
  std::string modelName;
  /// The function to emit; empty means the module's only function with a
  /// body (or `main`).
  std::string entry;
  /// Leave the weights out: the executable has the plan, the manifest and
  /// the kernels, and is marked planOnly (sessions refuse it).
  bool planOnly = false;
};

/// Emits `module`'s entry function as an executable. Diagnostics go to the
/// context's handler and name the op that cannot be emitted. The first call
/// on a context attaches the ops' CUDA emitters to it (the target's
/// external models, a registry append): do not call it from a pass or from
/// several threads on one context.
LogicalResult emitExecutable(ModuleOp module, const CudaEmitOptions &options,
                             rt::Executable &executable);

/// Registers the translations `memfit-to-cuda` (the kernel source) and
/// `memfit-to-manifest` (the manifest as JSON) for memfit-translate.
void registerCudaTranslations();

} // namespace mlir::memfit

#endif // MEMFIT_TARGET_CUDA_EMITCUDA_H
