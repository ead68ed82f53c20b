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
