//===- Training.cpp - training attributes shared by passes and the planner -===//

#include "memfit/Dialect/Training.h"

using namespace mlir;
using namespace mlir::memfit;

FailureOr<func::FuncOp> mlir::memfit::findEntryFunction(ModuleOp module,
                                                        StringRef name) {
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  if (!name.empty()) {
    for (func::FuncOp func : funcs)
      if (func.getSymName() == name)
        return func;
    return module.emitError("no function named '") << name << "'";
  }
  if (funcs.size() == 1)
    return funcs.front();
  for (func::FuncOp func : funcs)
    if (func.getSymName() == "main")
      return func;
  return module.emitError("the module has ")
         << funcs.size() << " functions and none is named main; choose one";
}

bool mlir::memfit::isTrainableCandidate(ParameterOp param) {
  RankedTensorType type = param.getType();
  return type.getRank() >= 1 && isa<FloatType>(type.getElementType());
}

StringRef mlir::memfit::parameterRole(ParameterOp param) {
  if (auto role = param->getAttrOfType<StringAttr>(kRoleAttr))
    return role.getValue();
  return {};
}
