//===- KernelEmitterInterface.cpp - the interface and its registration ----===//
//
// The generated definitions of KernelEmitterOpInterface and the extension
// that attaches its models, which the emitter files define by kernel kind
// (PointwiseEmitters, RowEmitters, LossEmitters, SpecialEmitters,
// QuantEmitters), to the memfit ops.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitterInterface.h"

#include "KernelWriter.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

#include "KernelEmitterInterface.cpp.inc"

/// Attaches every model; a named function, so that the registry and the
/// context recognize the extension when it is added again.
static void attachKernelEmitters(MLIRContext *context, MemfitDialect *) {
  attachPointwiseEmitters(context);
  attachRowEmitters(context);
  attachLossEmitters(context);
  attachSpecialEmitters(context);
  attachIndexEmitters(context);
  attachQuantEmitters(context);
  attachAttentionEmitters(context);
}

void cuda::registerKernelEmitterInterfaces(DialectRegistry &registry) {
  registry.addExtension(attachKernelEmitters);
}
