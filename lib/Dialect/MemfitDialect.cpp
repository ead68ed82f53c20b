//===- MemfitDialect.cpp - the memfit dialect -------------------------------===//

#include "memfit/Dialect/MemfitDialect.h"
#include "memfit/Dialect/Gradients.h"
#include "memfit/Dialect/MemfitOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

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

/// The first non-empty `match` of `loc` or a location inside it (the child
/// of a name, the parts of a fusion, callee before caller).
static StringRef firstInLocation(Location loc,
                                 function_ref<StringRef(Location)> match) {
  if (StringRef found = match(loc); !found.empty())
    return found;
  if (auto name = dyn_cast<NameLoc>(loc))
    return firstInLocation(name.getChildLoc(), match);
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      if (StringRef found = firstInLocation(inner, match); !found.empty())
        return found;
    return {};
  }
  if (auto callSite = dyn_cast<CallSiteLoc>(loc)) {
    if (StringRef found = firstInLocation(callSite.getCallee(), match);
        !found.empty())
      return found;
    return firstInLocation(callSite.getCaller(), match);
  }
  return {};
}

StringRef mlir::memfit::onnxNodeName(Location loc) {
  return firstInLocation(loc, [](Location l) -> StringRef {
    if (auto name = dyn_cast<NameLoc>(l))
      return name.getName().getValue();
    return {};
  });
}

std::string mlir::memfit::onnxModulePath(Location loc) {
  // "/a/b/c/op": the modules a, b, c. A component that extends the one
  // before it ("h.0.attn" after "h.0", "mlp.0" after "mlp": a child named
  // with its parent's path) replaces it.
  auto path = [](StringRef text) {
    SmallVector<StringRef> parts, modules;
    text.split(parts, '/', -1, /*KeepEmpty=*/false);
    if (!parts.empty())
      parts.pop_back();
    for (StringRef part : parts) {
      if (!modules.empty() && part.starts_with(modules.back()) &&
          part.drop_front(modules.back().size()).starts_with("."))
        modules.back() = part;
      else
        modules.push_back(part);
    }
    return llvm::join(modules, ".");
  };
  StringRef scope = onnxNodeScope(loc);
  return path(scope.empty() ? onnxNodeName(loc) : scope);
}

int mlir::memfit::layerIndex(StringRef name) {
  static llvm::Regex pattern(
      "(^|[./_:])(h|layer|layers|block|blocks|blk)[._]?([0-9]+)([./_:]|$)");
  SmallVector<StringRef> groups;
  if (!pattern.match(name, &groups))
    return -1;
  int index;
  if (groups[3].getAsInteger(10, index))
    return -1;
  return index;
}

StringRef mlir::memfit::onnxNodeScope(Location loc) {
  return firstInLocation(loc, [](Location l) -> StringRef {
    if (auto fused = dyn_cast<FusedLoc>(l))
      if (auto meta = dyn_cast_or_null<DictionaryAttr>(fused.getMetadata()))
        if (auto scope = meta.getAs<StringAttr>(kOnnxScopeKey))
          return scope.getValue();
    return {};
  });
}
