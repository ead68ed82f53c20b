//===- StorageOps.cpp - parameters, constants, assign ---------------------===//
//
// The verifiers and folders of the ops of class Constant: a parameter's
// value, the symbol uses of load_parameter and assign, constant and range.
//
// The ops are defined in include/memfit/Dialect/Ops/StorageOps.td.
//
//===----------------------------------------------------------------------===//

#include "ConstantFold.h"

#include "memfit/Dialect/MemfitOps.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::constfold;

LogicalResult ParameterOp::verify() {
  auto type = dyn_cast<RankedTensorType>(getValue().getType());
  if (!type || !type.hasStaticShape())
    return emitOpError("value must be a statically shaped tensor, got ")
           << getValue().getType();
  return success();
}

/// A read or write of a parameter: `name` must be a memfit.parameter of
/// type `type` (the op's `what`).
static LogicalResult verifyParameterUse(Operation *op, FlatSymbolRefAttr name,
                                        Type type, StringRef what,
                                        SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<ParameterOp>(op, name);
  if (!param)
    return op->emitOpError("'")
           << name.getValue() << "' does not name a memfit.parameter";
  if (param.getType() != type)
    return op->emitOpError() << what << " type " << type
                             << " differs from parameter type "
                             << param.getType();
  return success();
}

LogicalResult
LoadParameterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParameterUse(*this, getNameAttr(), getType(), "result",
                            symbolTable);
}

LogicalResult
AssignOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParameterUse(*this, getNameAttr(), getValue().getType(),
                            "value", symbolTable);
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult RangeOp::verify() {
  RankedTensorType type = getType();
  if (type.getRank() != 1)
    return emitOpError("result must be 1-D, got ") << type;
  Type elt = type.getElementType();
  if (getStart().getType() != elt || getDelta().getType() != elt)
    return emitOpError("start and delta must be of the element type ") << elt;
  if (auto d = dyn_cast<IntegerAttr>(getDelta()); d && d.getValue().isZero())
    return emitOpError("delta must not be zero");
  if (auto d = dyn_cast<FloatAttr>(getDelta()); d && d.getValue().isZero())
    return emitOpError("delta must not be zero");
  return success();
}

OpFoldResult RangeOp::fold(FoldAdaptor) {
  RankedTensorType type = getType();
  int64_t n = type.getNumElements();
  if (n > kMaxFoldElements)
    return {};
  SmallVector<Attribute> values;
  Type elt = type.getElementType();
  // start and delta of the result's element type, as the verifier requires.
  auto intStart = dyn_cast<IntegerAttr>(getStart());
  auto intDelta = dyn_cast<IntegerAttr>(getDelta());
  auto floatStart = dyn_cast<FloatAttr>(getStart());
  auto floatDelta = dyn_cast<FloatAttr>(getDelta());
  bool isInt = intStart && intDelta && intStart.getType() == elt &&
               intDelta.getType() == elt;
  bool isFloat = floatStart && floatDelta && floatStart.getType() == elt &&
                 floatDelta.getType() == elt;
  if (!isInt && !isFloat)
    return {};
  for (int64_t i = 0; i < n; ++i) {
    if (isInt) {
      const APInt &s = intStart.getValue();
      APInt v = s + intDelta.getValue() * APInt(s.getBitWidth(), i, true);
      values.push_back(IntegerAttr::get(elt, v));
    } else {
      double start = floatStart.getValueAsDouble();
      double delta = floatDelta.getValueAsDouble();
      values.push_back(
          FloatAttr::get(elt, start + delta * static_cast<double>(i)));
    }
  }
  return DenseElementsAttr::get(type, values);
}
