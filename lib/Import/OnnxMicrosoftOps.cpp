//===- OnnxMicrosoftOps.cpp - com.microsoft contrib op converters ---------===//
//
// onnxruntime's fused ops of the com.microsoft domain, which its transformer
// optimizer writes: SkipLayerNormalization and
// SkipSimplifiedLayerNormalization are the sums and normalizations they
// fuse, FastGelu, BiasGelu and Gelu a GELU of the input plus an optional
// bias. (onnxruntime's SimplifiedLayerNormalization is in the default
// domain: OnnxNormalizationOps.cpp.)
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// SkipLayerNormalization and SkipSimplifiedLayerNormalization
/// (com.microsoft): s = input + skip (+ bias), then LayerNorm(s, gamma,
/// beta) or RMSNorm(s, gamma) over the last axis; the optional outputs are
/// the mean (LayerNorm only), 1/std, and s.
template <bool simplified>
LogicalResult convertSkipNorm(NodeContext &n) {
  int64_t biasIndex = simplified ? 3 : 4;
  // gamma, beta and bias are vectors over the hidden (last) dimension.
  RankedTensorType type = n.inputType(0);
  if (type.getRank() < 1)
    return n.error() << "the input must have rank >= 1";
  int64_t hidden = type.getDimSize(type.getRank() - 1);
  for (int64_t i = 2; i < n.numInputs(); ++i)
    if (n.hasInput(i) && n.inputType(i).getShape() != ArrayRef(hidden))
      return n.error() << "input " << i << " has shape "
                       << shapeToString(n.inputType(i).getShape())
                       << ", expected [" << hidden << "] (the hidden size)";
  FailureOr<Value> s = n.build<AddOp>({n.input(0), n.input(1)});
  if (succeeded(s) && n.hasInput(biasIndex))
    s = n.build<AddOp>({*s, n.input(biasIndex)});
  if (failed(s))
    return failure();
  float epsilon = n.floatAttr("epsilon", 1e-12f);
  SmallVector<NamedAttribute> attrs{
      n.named("axis", n.b.getI64IntegerAttr(-1)),
      n.named("epsilon", n.b.getF32FloatAttr(epsilon))};
  SmallVector<Value> operands{*s, n.input(2)};
  if (!simplified && n.hasInput(3))
    operands.push_back(n.input(3));
  Type resultType = s->getType();
  Value y =
      simplified
          ? Value(RMSNormOp::create(n.b, n.loc, resultType, operands, attrs))
          : Value(LayerNormOp::create(n.b, n.loc, resultType, operands, attrs));
  SmallVector<Value> results{y};
  int64_t statsOutputs = simplified ? 1 : 2;
  bool wantsStats = false;
  for (int64_t i = 1; i <= statsOutputs; ++i)
    wantsStats |= n.hasOutput(i);
  if (wantsStats) {
    if (simplified)
      return n.error() << "the inverse standard deviation output is not "
                          "supported";
    FailureOr<std::pair<Value, Value>> stats =
        layerNormStats(n, *s, -1, epsilon);
    if (failed(stats))
      return failure();
    results.append({stats->first, stats->second});
  } else {
    results.append(statsOutputs, Value());
  }
  results.push_back(*s);
  return n.setResults(results);
}

/// FastGelu (the tanh approximation), BiasGelu and Gelu (erf) of
/// com.microsoft: Gelu of the input plus the optional bias.
template <GeluApproximation approximation>
LogicalResult convertFusedGelu(NodeContext &n) {
  FailureOr<Value> x = n.input(0);
  if (n.hasInput(1))
    x = n.build<AddOp>({*x, n.input(1)});
  if (failed(x))
    return failure();
  Value r = GeluOp::create(
      n.b, n.loc, x->getType(),
      GeluApproximationAttr::get(n.b.getContext(), approximation), *x);
  return n.setResults(r);
}

} // namespace

void onnx_import::populateMicrosoftConverters(OpTable &table) {
  table.onOp("com.microsoft.SkipLayerNormalization", 1, 3, 5,
             convertSkipNorm<false>);
  table.onOp("com.microsoft.SkipSimplifiedLayerNormalization", 1, 3, 4,
             convertSkipNorm<true>);
  table.onOp("com.microsoft.FastGelu", 1, 1, 2,
             convertFusedGelu<GeluApproximation::Tanh>);
  table.onOp("com.microsoft.BiasGelu", 1, 2, 2,
             convertFusedGelu<GeluApproximation::None>);
  table.onOp("com.microsoft.Gelu", 1, 1, 1,
             convertFusedGelu<GeluApproximation::None>);
}
