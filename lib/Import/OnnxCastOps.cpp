//===- OnnxCastOps.cpp - cast converters ----------------------------------===//
//
// Cast (to an element type named by its 'to' attribute) and CastLike (to
// the second input's), both as memfit.cast of the input's shape.
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// Cast and CastLike: saturate (opset 19; only FLOAT8 targets read it) is
/// kept where it is not the default.
Value buildCast(NodeContext &n, RankedTensorType type) {
  SmallVector<NamedAttribute> attrs;
  if (!n.intAttr("saturate", 1))
    attrs.push_back(n.named("saturate", n.b.getBoolAttr(false)));
  return n.buildTyped<CastOp>(type, n.input(0), attrs);
}

/// Cast: to the element type of attribute 'to'.
LogicalResult convertCast(NodeContext &n) {
  const onnx::AttributeProto *to = n.attr("to");
  if (!to)
    return n.error() << "missing attribute 'to'";
  Type elt = convertElementType(to->i(), n.b.getContext());
  if (!elt)
    return n.error() << "cast to unsupported " << onnxTypeName(to->i());
  auto type = RankedTensorType::get(n.inputType(0).getShape(), elt);
  return n.setResults(buildCast(n, type));
}

/// CastLike: to the element type of the second input.
LogicalResult convertCastLike(NodeContext &n) {
  auto type = RankedTensorType::get(n.inputType(0).getShape(),
                                    n.inputType(1).getElementType());
  return n.setResults(buildCast(n, type));
}

} // namespace

void onnx_import::populateCastConverters(OpTable &table) {
  table.onOp("Cast", 13, 1, 1, convertCast);
  table.onOp("CastLike", 15, 2, 2, convertCastLike);
}
