//===- HostTransfers.cpp - what the host's kernels read, copied there -----===//
//
// Under offload-states the optimizer's updates are kernels that run on the
// host's cores (memfit.on_host), beside the device and after it has gone
// on. They may read host memory only: a gradient, a clipping factor or the
// step size that the device computed is copied to host memory first, by a
// kernel marked memfit.to_host, right before the first on-host kernel that
// reads it (the gradient's copy right after the gradient is final, where
// memfit-early-updates put its update). The memory plan keeps the copies in
// the host region until the step's end.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITHOSTTRANSFERSPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// Whether `value`'s buffer is in host memory: a parameter kept there, or
/// what an on-host or to-host kernel wrote.
bool inHostMemory(Value value) {
  Value root = bufferRoot(value);
  if (auto load = root.getDefiningOp<LoadParameterOp>()) {
    auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
        load, load.getNameAttr());
    return param && keptInHostMemory(param);
  }
  Operation *def = root.getDefiningOp();
  return def && (def->hasAttr(kOnHostAttr) || def->hasAttr(kToHostAttr));
}

struct MemfitHostTransfersPass
    : public mlir::memfit::impl::MemfitHostTransfersPassBase<
          MemfitHostTransfersPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<KernelOp> onHost;
    getOperation().walk([&](KernelOp kernel) {
      if (kernel->hasAttr(kOnHostAttr))
        onHost.push_back(kernel);
    });
    DenseMap<Value, Value> copies;
    for (KernelOp kernel : onHost) {
      OpBuilder builder(kernel);
      for (OpOperand &operand : kernel->getOpOperands()) {
        Value value = operand.get();
        if (inHostMemory(value))
          continue;
        Value &copy = copies[value];
        if (!copy) {
          KernelOp transfer = copyKernel(builder, kernel.getLoc(), value);
          transfer->setAttr(kToHostAttr, builder.getUnitAttr());
          copy = transfer->getResult(0);
          ++numCopies;
        }
        operand.set(copy);
      }
    }
    for (KernelOp kernel : onHost)
      copyResultsToDevice(kernel);
  }

  /// Where an on-host kernel's result is read or stored outside host
  /// memory (the new working copy, stored into the device's), the kernel
  /// writes host memory and a copy kernel marked to_device brings it to the
  /// device, right after it: the host cannot write device memory.
  void copyResultsToDevice(KernelOp kernel) {
    OpBuilder builder(kernel->getContext());
    builder.setInsertionPointAfter(kernel);
    for (Value result : kernel->getResults()) {
      SmallVector<OpOperand *> deviceUses;
      for (OpOperand &use : result.getUses())
        if (!readsInHostMemory(use.getOwner()))
          deviceUses.push_back(&use);
      if (deviceUses.empty())
        continue;
      KernelOp transfer = copyKernel(builder, kernel.getLoc(), result);
      transfer->setAttr(kToDeviceAttr, builder.getUnitAttr());
      for (OpOperand *use : deviceUses)
        use->set(transfer->getResult(0));
      ++numDeviceCopies;
    }
  }

  /// Whether `user` reads its operand in host memory: a host kernel, or the
  /// store into a parameter kept there.
  static bool readsInHostMemory(Operation *user) {
    if (user->hasAttr(kOnHostAttr))
      return true;
    auto assign = dyn_cast<AssignOp>(user);
    if (!assign)
      return false;
    auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
        assign, assign.getNameAttr());
    return param && keptInHostMemory(param);
  }
};

} // namespace
