//===- WorkingCopies.cpp - offload-states: masters on the host ------------===//
//
// ZeRO-Offload's layout of a trained parameter: its fp32 master lives in
// host memory with its optimizer states, and the device keeps a working
// copy that the forward and the backward read: f32, or the 16-bit type that
// mixed precision casts every read to (2 bytes a parameter on the device
// instead of 4). The update, on the host, writes the master and the new
// working copy.
//
//===----------------------------------------------------------------------===//

#include "WorkingCopies.h"

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// The type every read of `loads` casts to for mixed precision (a cast
/// with reason "working-copy"), else the loads' own type.
RankedTensorType readType(ArrayRef<LoadParameterOp> loads,
                          RankedTensorType master) {
  RankedTensorType common;
  for (LoadParameterOp load : loads)
    for (Operation *user : load->getUsers()) {
      auto castOp = dyn_cast<CastOp>(user);
      if (!castOp || castOp.getReason() != "working-copy")
        return master;
      auto type = cast<RankedTensorType>(castOp.getType());
      if (common && common != type)
        return master;
      common = type;
    }
  return common ? common : master;
}

} // namespace

ParameterOp mlir::memfit::addWorkingCopy(SymbolTable &symbols,
                                         func::FuncOp func,
                                         ParameterOp master) {
  SmallVector<LoadParameterOp> loads;
  func.walk([&](LoadParameterOp load) {
    if (load.getName() == master.getSymName())
      loads.push_back(load);
  });
  RankedTensorType type = readType(loads, master.getType());
  ParameterOp copy =
      addTrainingState(symbols, master, (master.getSymName() + ".working").str(),
                       type, kRoleWorkingCopy);
  copy->setAttr(kWorkingCopyOfAttr,
                FlatSymbolRefAttr::get(master.getSymNameAttr()));
  keepInHostMemory(master);
  auto ref = FlatSymbolRefAttr::get(copy.getSymNameAttr());
  for (LoadParameterOp load : loads) {
    OpBuilder b(load);
    auto read = LoadParameterOp::create(b, load.getLoc(), type, ref);
    if (type == master.getType()) {
      load.getResult().replaceAllUsesWith(read.getResult());
    } else {
      // Each cast to the 16-bit type is the copy itself.
      for (Operation *user : llvm::make_early_inc_range(load->getUsers())) {
        user->getResult(0).replaceAllUsesWith(read.getResult());
        user->erase();
      }
    }
    load->erase();
  }
  return copy;
}

Value mlir::memfit::workingValue(OpBuilder &b, Location loc, Value master,
                                 RankedTensorType type) {
  if (master.getType() == type)
    return master;
  return CastOp::create(b, loc, type, master, b.getStringAttr("working-copy"));
}
