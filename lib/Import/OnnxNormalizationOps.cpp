//===- OnnxNormalizationOps.cpp - normalization and softmax converters ----===//
//
// Softmax and LogSoftmax over an axis; LayerNormalization and
// RMSNormalization (and onnxruntime's SimplifiedLayerNormalization, its
// RMSNormalization of the default domain at opset 1), their scale and bias
// checked against the normalized shape. layerNormStats computes
// LayerNormalization's optional Mean and InvStdDev outputs, which
// com.microsoft's SkipLayerNormalization has too.
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// Softmax and LogSoftmax (opset 13: over one axis).
template <typename OpTy>
LogicalResult convertSoftmax(NodeContext &n) {
  int64_t axis = n.intAttr("axis", -1);
  if (failed(n.rule([&](OptLoc loc) {
        return normalizeAxis(axis, n.inputType(0).getRank(), loc);
      })))
    return failure();
  Value r = OpTy::create(n.b, n.loc, n.inputType(0), n.input(0),
                         n.b.getI64IntegerAttr(axis));
  return n.setResults(r);
}

/// Checks a normalization's scale/bias against the normalized shape.
LogicalResult checkNormParam(NodeContext &n, int64_t axis, int64_t i,
                             StringRef what) {
  if (!n.hasInput(i))
    return success();
  if (failed(checkAxis(n, axis, n.inputType(0).getRank())))
    return failure();
  if (failed(verifyNormParam(n.inputType(0).getShape(), axis,
                             n.inputType(i).getShape(), what, std::nullopt)))
    return n.error() << what << " '" << n.node.input(i) << "' of shape "
                     << shapeToString(n.inputType(i).getShape())
                     << " does not fit input of shape "
                     << shapeToString(n.inputType(0).getShape())
                     << " normalized from axis " << axis;
  return success();
}

/// LayerNormalization; its Mean and InvStdDev outputs when used.
LogicalResult convertLayerNorm(NodeContext &n) {
  int64_t axis = n.intAttr("axis", -1);
  float epsilon = n.floatAttr("epsilon", 1e-5f);
  if (failed(checkNormParam(n, axis, 1, "scale")) ||
      failed(checkNormParam(n, axis, 2, "bias")))
    return failure();
  SmallVector<Value> operands{n.input(0), n.input(1)};
  if (n.hasInput(2))
    operands.push_back(n.input(2));
  Value r = LayerNormOp::create(
      n.b, n.loc, n.inputType(0), operands,
      ArrayRef<NamedAttribute>{
          n.named("axis", n.b.getI64IntegerAttr(axis)),
          n.named("epsilon", n.b.getF32FloatAttr(epsilon))});
  if (!n.hasOutput(1) && !n.hasOutput(2))
    return n.setResults(r);
  FailureOr<std::pair<Value, Value>> stats =
      layerNormStats(n, n.input(0), axis, epsilon);
  if (failed(stats))
    return failure();
  return n.setResults(SmallVector<Value>{r, stats->first, stats->second});
}

/// RMSNormalization, and onnxruntime's SimplifiedLayerNormalization with
/// the same inputs and attributes.
LogicalResult convertRMSNorm(NodeContext &n) {
  int64_t axis = n.intAttr("axis", -1);
  if (failed(checkNormParam(n, axis, 1, "scale")))
    return failure();
  Value r = RMSNormOp::create(
      n.b, n.loc, n.inputType(0), ValueRange{n.input(0), n.input(1)},
      ArrayRef<NamedAttribute>{
          n.named("axis", n.b.getI64IntegerAttr(axis)),
          n.named("epsilon",
                  n.b.getF32FloatAttr(n.floatAttr("epsilon", 1e-5f)))});
  return n.setResults(r);
}

} // namespace

FailureOr<std::pair<Value, Value>> onnx_import::layerNormStats(NodeContext &n,
                                                               Value input,
                                                               int64_t axis,
                                                               float epsilon) {
  if (int64_t stash = n.intAttr("stash_type", 1); stash != 1)
    return n.error() << "stash_type " << stash
                     << " is not supported with the Mean and InvStdDev "
                        "outputs (only 1, float)",
           failure();
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t rank = inputType.getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = axis < 0 ? axis + rank : axis; d < rank; ++d)
    axes.push_back(d);
  SmallVector<NamedAttribute> reduce{
      n.named("axes", n.b.getDenseI64ArrayAttr(axes)),
      n.named("keepdims", n.b.getBoolAttr(true))};
  Type f32 = n.b.getF32Type();
  Value x = input;
  if (inputType.getElementType() != f32)
    x = n.buildTyped<CastOp>(RankedTensorType::get(inputType.getShape(), f32),
                             x);
  FailureOr<Value> mean = n.build<ReduceMeanOp>(x, reduce);
  if (failed(mean))
    return failure();
  FailureOr<Value> d = n.build<SubOp>({x, *mean});
  if (failed(d))
    return failure();
  FailureOr<Value> sq = n.build<MulOp>({*d, *d});
  if (failed(sq))
    return failure();
  FailureOr<Value> var = n.build<ReduceMeanOp>(*sq, reduce);
  if (failed(var))
    return failure();
  Value eps = n.scalar(f32, epsilon);
  FailureOr<Value> sum = n.build<AddOp>({*var, eps});
  if (failed(sum))
    return failure();
  FailureOr<Value> std = n.build<SqrtOp>(*sum);
  if (failed(std))
    return failure();
  FailureOr<Value> inv = n.build<ReciprocalOp>(*std);
  if (failed(inv))
    return failure();
  return std::make_pair(*mean, *inv);
}

void onnx_import::populateNormalizationConverters(OpTable &table) {
  table.onOp("Softmax", 13, 1, 1, convertSoftmax<SoftmaxOp>);
  table.onOp("LogSoftmax", 13, 1, 1, convertSoftmax<LogSoftmaxOp>);
  table.onOp("LayerNormalization", 17, 2, 3, convertLayerNorm);
  table.onOp("RMSNormalization", 23, 2, 2, convertRMSNorm);
  // onnxruntime's own, registered in the default domain at opset 1 (its
  // other ops are in com.microsoft, OnnxMicrosoftOps.cpp).
  table.onOp("SimplifiedLayerNormalization", 1, 2, 2, convertRMSNorm);
}
