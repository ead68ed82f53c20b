//===- MemfitDialect.cpp - the memfit dialect -------------------------------===//

#include "memfit/Dialect/MemfitDialect.h"
#include "memfit/Dialect/Gradients.h"
#include "memfit/Dialect/MemfitOps.h"

using namespace mlir;
using namespace mlir::memfit;

#include "memfit/Dialect/MemfitDialect.cpp.inc"

void MemfitDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "memfit/Dialect/MemfitOps.cpp.inc"
      >();
  attachGradientInterfaces(getContext());
}

Operation *MemfitDialect::materializeConstant(OpBuilder &builder,
                                              Attribute value, Type type,
                                              Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

StringRef mlir::memfit::onnxNodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      if (StringRef name = onnxNodeName(inner); !name.empty())
        return name;
    return {};
  }
  if (auto callSite = dyn_cast<CallSiteLoc>(loc)) {
    if (StringRef name = onnxNodeName(callSite.getCallee()); !name.empty())
      return name;
    return onnxNodeName(callSite.getCaller());
  }
  return {};
}

StringRef mlir::memfit::onnxNodeScope(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return onnxNodeScope(name.getChildLoc());
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    if (auto meta = dyn_cast_or_null<DictionaryAttr>(fused.getMetadata()))
      if (auto scope = meta.getAs<StringAttr>(kOnnxScopeKey))
        return scope.getValue();
    for (Location inner : fused.getLocations())
      if (StringRef scope = onnxNodeScope(inner); !scope.empty())
        return scope;
    return {};
  }
  if (auto callSite = dyn_cast<CallSiteLoc>(loc)) {
    if (StringRef scope = onnxNodeScope(callSite.getCallee()); !scope.empty())
      return scope;
    return onnxNodeScope(callSite.getCaller());
  }
  return {};
}
