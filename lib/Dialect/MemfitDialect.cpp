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

/// The layer a name is in: its first path component `name.N` ("h.0" of
/// h.0.attn.c_attn.weight, "layers.3" of /model/layers.3/mlp) or, with
/// `loose`, failing that, a component `nameN` that more components follow
/// ("h4" of h4.proj). Empty if none.
static std::string layerInName(StringRef text, bool loose) {
  SmallVector<StringRef> parts;
  for (size_t begin = 0, i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == '.' || text[i] == '/') {
      parts.push_back(text.slice(begin, i));
      begin = i + 1;
    }
  auto word = [](StringRef t) {
    return !t.empty() &&
           llvm::all_of(t, [](char c) { return llvm::isAlpha(c) || c == '_'; });
  };
  auto number = [](StringRef t) {
    return !t.empty() &&
           llvm::all_of(t, [](char c) { return llvm::isDigit(c); });
  };
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    if (word(parts[i]) && number(parts[i + 1]))
      return (parts[i] + "." + parts[i + 1]).str();
  for (size_t i = 0; loose && i + 1 < parts.size(); ++i) {
    StringRef part = parts[i];
    StringRef digits =
        part.drop_while([](char c) { return !llvm::isDigit(c); });
    if (!digits.empty() && digits.size() < part.size() && number(digits) &&
        word(part.drop_back(digits.size())))
      return part.str();
  }
  return "";
}

std::string mlir::memfit::layerOf(Location loc,
                                  ArrayRef<StringRef> parameters) {
  SmallVector<StringRef> names;
  for (StringRef name : parameters)
    if (!name.contains("::"))
      names.push_back(name);
  llvm::sort(names);
  for (StringRef name : names)
    if (std::string layer = layerInName(name, false); !layer.empty())
      return layer;
  std::string layer;
  loc->walk([&](Location inner) {
    if (auto named = dyn_cast<NameLoc>(inner))
      layer = layerInName(named.getName().getValue(), true);
    if (auto fused = dyn_cast<FusedLoc>(inner))
      if (auto meta = dyn_cast_or_null<DictionaryAttr>(fused.getMetadata()))
        if (auto scope = meta.getAs<StringAttr>(kOnnxScopeKey))
          layer = layerInName(scope.getValue(), false);
    return layer.empty() ? WalkResult::advance() : WalkResult::interrupt();
  });
  for (StringRef name : names)
    if (layer.empty())
      layer = layerInName(name, true);
  return layer;
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
