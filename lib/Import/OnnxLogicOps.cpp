//===- OnnxLogicOps.cpp - comparison and logic converters -----------------===//
//
// The comparisons (Equal, Less, Greater, and LessOrEqual and GreaterOrEqual
// written as the strict comparison or equality), the boolean ops, the NaN
// and infinity tests, and Where, which selects by a boolean tensor.
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// LessOrEqual and GreaterOrEqual: the strict comparison or equality (false
/// for NaN, as ONNX's).
template <typename StrictOp>
LogicalResult convertCompareOrEqual(NodeContext &n) {
  FailureOr<Value> strict = n.build<StrictOp>({n.input(0), n.input(1)});
  if (failed(strict))
    return failure();
  FailureOr<Value> equal = n.build<EqualOp>({n.input(0), n.input(1)});
  if (failed(equal))
    return failure();
  FailureOr<Value> r = n.build<OrOp>({*strict, *equal});
  return failed(r) ? failure() : n.setResults(*r);
}

/// IsInf: true at the infinities of the signs that detect_negative and
/// detect_positive select.
LogicalResult convertIsInf(NodeContext &n) {
  FailureOr<Value> r = n.build<IsInfOp>(
      {n.input(0)},
      {n.named("detect_negative",
               n.b.getBoolAttr(n.intAttr("detect_negative", 1) != 0)),
       n.named("detect_positive",
               n.b.getBoolAttr(n.intAttr("detect_positive", 1) != 0))});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Where: the condition's choice between two broadcast inputs.
LogicalResult convertWhere(NodeContext &n) {
  FailureOr<Value> r = n.build<WhereOp>({n.input(0), n.input(1), n.input(2)});
  return failed(r) ? failure() : n.setResults(*r);
}

} // namespace

void onnx_import::populateLogicConverters(OpTable &table) {
  table.onOp("Equal", 13, 2, 2, convertBinary<EqualOp>);
  table.onOp("Less", 13, 2, 2, convertBinary<LessOp>);
  table.onOp("Greater", 13, 2, 2, convertBinary<GreaterOp>);
  table.onOp("LessOrEqual", 13, 2, 2, convertCompareOrEqual<LessOp>);
  table.onOp("GreaterOrEqual", 13, 2, 2, convertCompareOrEqual<GreaterOp>);
  table.onOp("Not", 13, 1, 1, convertUnary<NotOp>);
  table.onOp("And", 13, 2, 2, convertBinary<AndOp>);
  table.onOp("Or", 13, 2, 2, convertBinary<OrOp>);
  table.onOp("Xor", 13, 2, 2, convertBinary<XorOp>);
  table.onOp("IsNaN", 13, 1, 1, convertUnary<IsNaNOp>);
  table.onOp("IsInf", 13, 1, 1, convertIsInf);
  table.onOp("Where", 13, 3, 3, convertWhere);
}
