//===- KernelEmitter.cpp - the target's kernel entry points ---------------===//
//
// What EmitCuda.cpp calls to write the kernel source (KernelEmitter.h):
// the prelude, a memfit.kernel's __global__ function (through
// KernelWriter), a gemm bias's broadcast copy; and the names and
// diagnostics every kernel shares.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "KernelWriter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

//===----------------------------------------------------------------------===//
// Names and diagnostics
//===----------------------------------------------------------------------===//

void cuda::collectNodeNames(Location loc, std::vector<std::string> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    names.push_back(name.getName().str());
    return;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      collectNodeNames(inner, names);
}

std::string cuda::nodeList(ArrayRef<std::string> nodes) {
  if (nodes.empty())
    return "(no ONNX node)";
  std::string text;
  for (auto [i, node] : llvm::enumerate(nodes)) {
    if (i)
      text += ", ";
    for (char c : node)
      text += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\')
                  ? '?'
                  : c;
  }
  return text;
}

std::string cuda::opLabel(Operation *op) {
  StringRef name = op->getName().getStringRef();
  name.consume_front("memfit.");
  return name.str();
}

InFlightDiagnostic cuda::cannotEmit(Operation *op) {
  return op->emitError() << "cannot emit CUDA for '" << op->getName() << "': ";
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

namespace mlir::memfit::cuda {
/// The text of Prelude.cuh (the generated Prelude.cpp).
extern const char kCudaPrelude[];
} // namespace mlir::memfit::cuda

void cuda::emitPrelude(raw_ostream &os, bool halfTypes) {
  if (halfTypes)
    os << "// __half and __nv_bfloat16; the host backend's emulation header "
          "defines them.\n#ifndef MEMFIT_CUDA_HOST_H\n#include "
          "<cuda_fp16.h>\n#include <cuda_bf16.h>\n#endif\n\n";
  // A blank line between the helpers and the first kernel.
  os << kCudaPrelude << "\n";
}

FailureOr<rt::Kernel> cuda::emitKernel(KernelOp kernel, unsigned index,
                                       raw_ostream &os) {
  return KernelWriter(kernel, index).emit(os);
}

FailureOr<rt::Kernel> cuda::emitBroadcastCopy(Operation *op, unsigned index,
                                              RankedTensorType from,
                                              RankedTensorType to,
                                              raw_ostream &os) {
  FailureOr<std::string> t = cType(from.getElementType());
  if (failed(t) || from.getElementType() != to.getElementType())
    return cannotEmit(op) << "unsupported bias type " << from, failure();
  rt::Kernel info;
  info.name = llvm::formatv("k{0}_{1}_bias", index, opLabel(op)).str();
  collectNodeNames(op->getLoc(), info.onnxNodes);
  int64_t n = to.getNumElements();
  int64_t blocks = gridFor(n, kPointwiseBlock);
  if (failed(checkGridLimit(op, blocks)))
    return failure();
  os << "// " << info.name << ": bias of " << nodeList(info.onnxNodes)
     << "\nextern \"C\" __global__ void " << info.name << "(const " << *t
     << "* __restrict__ in0, " << *t << "* __restrict__ out0) {\n";
  openThreadLoop(os, "idx", n);
  emitThreadLoopCoords(os, to.getShape(), "idx", "c", kPointwiseBlock);
  os << "  out0[idx] = in0["
     << broadcastOffset(from.getShape(), to.getRank(), "c")
     << "];\n  }\n}\n\n";
  info.block = {static_cast<uint32_t>(kPointwiseBlock), 1, 1};
  info.grid = {static_cast<uint32_t>(blocks), 1, 1};
  info.threadLoops = true;
  return info;
}
