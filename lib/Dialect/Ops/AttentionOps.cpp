//===- AttentionOps.cpp - attention and its gradient ----------------------===//
//
// The type inference, verifiers and optional operands (a mask and the
// dropout's step, one variadic group `extras`) of memfit.attention and its
// two gradient ops; their costs are in lib/Dialect/CostModel.cpp.
//
// The ops are defined in include/memfit/Dialect/Ops/AttentionOps.td.
//
//===----------------------------------------------------------------------===//

#include "OpHelpers.h"

#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memfit;

//===----------------------------------------------------------------------===//
// The optional operands
//===----------------------------------------------------------------------===//

/// Whether `value` is a dropout step: a 0-d i64 tensor, which no mask is.
static bool isStep(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getRank() == 0 && type.getElementType().isInteger(64);
}

/// The mask among the extras, or null.
static Value maskOf(ValueRange extras) {
  return !extras.empty() && !isStep(extras.front()) ? extras.front() : Value();
}

/// The dropout's step among the extras, or null.
static Value stepOf(ValueRange extras) {
  return !extras.empty() && isStep(extras.back()) ? extras.back() : Value();
}

/// Replaces the step among `op`'s extras by `step`.
template <typename OpTy> static void setStep(OpTy op, Value step) {
  SmallVector<Value> extras;
  if (Value mask = op.getMask())
    extras.push_back(mask);
  if (step)
    extras.push_back(step);
  op.getExtrasMutable().assign(extras);
}

/// The extras must be a mask, a step, or a mask and a step, in that order.
static LogicalResult verifyExtras(Operation *op, ValueRange extras) {
  unsigned expected = (maskOf(extras) ? 1 : 0) + (stepOf(extras) ? 1 : 0);
  if (extras.size() != expected)
    return op->emitOpError("takes at most a mask and then a dropout step "
                           "(tensor<i64>) after its operands, got ")
           << extras.size() << " more operands";
  return success();
}

Value AttentionOp::getMask() { return maskOf(getExtras()); }
Value AttentionOp::getDropoutStep() { return stepOf(getExtras()); }
void AttentionOp::setDropoutStep(Value step) { setStep(*this, step); }
Value AttentionGradQueryOp::getMask() { return maskOf(getExtras()); }
Value AttentionGradQueryOp::getDropoutStep() { return stepOf(getExtras()); }
void AttentionGradQueryOp::setDropoutStep(Value step) { setStep(*this, step); }
Value AttentionGradKeyValueOp::getMask() { return maskOf(getExtras()); }
Value AttentionGradKeyValueOp::getDropoutStep() { return stepOf(getExtras()); }
void AttentionGradKeyValueOp::setDropoutStep(Value step) {
  setStep(*this, step);
}

namespace mlir::memfit {

// Declared in lib/Dialect/MemfitOps.cpp, where the parsers are generated.
ParseResult
parseAttentionExtras(OpAsmParser &parser,
                     SmallVectorImpl<OpAsmParser::UnresolvedOperand> &extras) {
  for (StringRef keyword : {"mask", "dropout_step"}) {
    if (failed(parser.parseOptionalKeyword(keyword)))
      continue;
    if (parser.parseOperand(extras.emplace_back()))
      return failure();
  }
  return success();
}

void printAttentionExtras(OpAsmPrinter &printer, Operation *,
                          OperandRange extras) {
  for (Value value : extras)
    printer << (isStep(value) ? " dropout_step " : " mask ") << value;
}

} // namespace mlir::memfit

//===----------------------------------------------------------------------===//
// Inference and verifiers
//===----------------------------------------------------------------------===//

/// The shapes of inferAttentionShapes for the op's operands.
static LogicalResult inferShapes(OptLoc loc, Value query, Value key,
                                 Value value, Value mask, Shape &result,
                                 Shape &logsumexp) {
  std::optional<ArrayRef<int64_t>> maskShape;
  if (mask)
    maskShape = shapeOf(mask);
  return inferAttentionShapes(shapeOf(query), shapeOf(key), shapeOf(value),
                              maskShape, result, logsumexp, loc);
}

/// What every attention op checks: one float type for query, key and value,
/// a boolean mask or one of that type, a finite nonzero scale, a dropout
/// ratio that is a probability below 1 (as memfit.dropout's).
static LogicalResult verifyCommon(Operation *op, Value query, Value key,
                                  Value value, Value mask, APFloat scale,
                                  APFloat dropoutRatio) {
  Type elt = eltOf(query);
  if (failed(verifyElementTypes(op, elt, "the query's",
                                {{"key", key}, {"value", value}})))
    return failure();
  if (mask && !eltOf(mask).isInteger(1) && eltOf(mask) != elt)
    return op->emitOpError("mask must be boolean or of the query's type ")
           << elt << ", got " << eltOf(mask);
  double s = scale.convertToDouble();
  if (!std::isfinite(s) || s == 0)
    return op->emitOpError("scale must be finite and nonzero, got ") << s;
  float r = dropoutRatio.convertToFloat();
  if (!(r >= 0.0f && r < 1.0f))
    return op->emitOpError("dropout_ratio must be in [0, 1), got ") << r;
  return success();
}

/// `value` must be `[B, Hq, S]` in f32 (the log-sum-exp and delta of the
/// gradient ops).
static LogicalResult verifyRowStatistic(Operation *op, Value value,
                                        ArrayRef<int64_t> shape,
                                        StringRef name) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getShape() != shape || !type.getElementType().isF32())
    return op->emitOpError() << name << " must be tensor<"
                             << shapeToString(shape) << "xf32>, got " << type;
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *context, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Shape result, logsumexp;
  if (failed(inferShapes(loc, adaptor.getQuery(), adaptor.getKey(),
                         adaptor.getValue(), maskOf(adaptor.getExtras()),
                         result, logsumexp)))
    return failure();
  (void)pushTensor(types, result, eltOf(adaptor.getQuery()));
  return pushTensor(types, logsumexp, Float32Type::get(context));
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyExtras(*this, getExtras())))
    return failure();
  return verifyCommon(*this, getQuery(), getKey(), getValue(), getMask(),
                      getScale(), getDropoutRatio());
}

/// The gradient ops' results: each operand's gradient in its type.
static LogicalResult inferGradTypes(OptLoc loc, Value query, Value key,
                                    Value value, Value mask,
                                    ArrayRef<Value> gradsOf,
                                    SmallVectorImpl<Type> &types) {
  Shape result, logsumexp;
  if (failed(inferShapes(loc, query, key, value, mask, result, logsumexp)))
    return failure();
  for (Value operand : gradsOf)
    types.push_back(operand.getType());
  return success();
}

/// The gradient ops' extra operands: log-sum-exp and delta [B, Hq, S] f32,
/// dresult shaped as the forward's result.
static LogicalResult verifyGrad(Operation *op, Value query, Value key,
                                Value value, Value mask, Value logsumexp,
                                Value delta, Value dresult, APFloat scale,
                                APFloat dropoutRatio) {
  if (failed(verifyCommon(op, query, key, value, mask, scale, dropoutRatio)))
    return failure();
  Shape result, rows;
  if (failed(inferShapes(op->getLoc(), query, key, value, mask, result, rows)))
    return failure();
  if (failed(verifyRowStatistic(op, logsumexp, rows, "logsumexp")) ||
      failed(verifyRowStatistic(op, delta, rows, "delta")))
    return failure();
  auto expected = RankedTensorType::get(result, eltOf(query));
  if (dresult.getType() != expected)
    return op->emitOpError("dresult must be ")
           << expected << " (the result's type), got " << dresult.getType();
  return success();
}

LogicalResult AttentionGradQueryOp::inferReturnTypes(
    MLIRContext *, OptLoc loc, Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferGradTypes(loc, adaptor.getQuery(), adaptor.getKey(),
                        adaptor.getValue(), maskOf(adaptor.getExtras()),
                        {adaptor.getQuery()}, types);
}

LogicalResult AttentionGradQueryOp::verify() {
  if (failed(verifyExtras(*this, getExtras())))
    return failure();
  return verifyGrad(*this, getQuery(), getKey(), getValue(), getMask(),
                    getLogsumexp(), getDelta(), getDresult(), getScale(),
                    getDropoutRatio());
}

LogicalResult AttentionGradKeyValueOp::inferReturnTypes(
    MLIRContext *, OptLoc loc, Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferGradTypes(loc, adaptor.getQuery(), adaptor.getKey(),
                        adaptor.getValue(), maskOf(adaptor.getExtras()),
                        {adaptor.getKey(), adaptor.getValue()}, types);
}

LogicalResult AttentionGradKeyValueOp::verify() {
  if (failed(verifyExtras(*this, getExtras())))
    return failure();
  return verifyGrad(*this, getQuery(), getKey(), getValue(), getMask(),
                    getLogsumexp(), getDelta(), getDresult(), getScale(),
                    getDropoutRatio());
}
