//===- OnnxOps.cpp - ONNX op converters ---------------------------------------===//
//
// One converter per ONNX op type, registered in a table keyed by op type and
// the first opset the converter handles (torch-mlir's ONNX pattern table in
// miniature). A converter reads the node's inputs and attributes, builds
// memfit ops (folded where the inputs are constants) and binds the outputs.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/xxhash.h"

#include <cctype>
#include <limits>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

template <typename OpTy>
LogicalResult convertUnary(NodeContext &n) {
  FailureOr<Value> r = n.build<OpTy>(n.input(0));
  return failed(r) ? failure() : n.setResults(*r);
}

template <typename OpTy>
LogicalResult convertBinary(NodeContext &n) {
  FailureOr<Value> r = n.build<OpTy>({n.input(0), n.input(1)});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertIdentity(NodeContext &n) {
  return n.setResults(n.input(0));
}

LogicalResult convertDropout(NodeContext &n) {
  // Inference-mode dropout (the default, and what eval() exports) is the
  // identity; training-mode dropout needs a known ratio.
  bool training = false;
  if (n.hasInput(2)) {
    FailureOr<Attribute> t = n.constantScalar(2, "training_mode");
    if (failed(t))
      return failure();
    auto flag = dyn_cast<IntegerAttr>(*t);
    if (!flag)
      return n.error() << "training_mode must be a boolean";
    training = flag.getValue().getBoolValue();
  }
  float ratio = 0.5f;
  if (training && n.hasInput(1)) {
    FailureOr<Attribute> r = n.constantScalar(1, "ratio");
    if (failed(r))
      return failure();
    auto value = dyn_cast<FloatAttr>(*r);
    if (!value)
      return n.error() << "ratio must be a floating-point scalar";
    ratio = value.getValueAsDouble();
  }
  // Inference mode, or a zero ratio, keeps every element: the identity,
  // and a mask (the optional second output) of all true.
  if (!training || ratio == 0.0f) {
    if (!n.hasOutput(1))
      return n.setResults(n.input(0));
    auto maskType =
        RankedTensorType::get(n.inputType(0).getShape(), n.b.getI1Type());
    Value mask = n.constant(DenseElementsAttr::get(maskType, true));
    return n.setResults(SmallVector<Value>{n.input(0), mask});
  }
  // Each dropout of a graph draws its own stream of random numbers, named
  // by its (unique) output so that it does not depend on the node order
  // (a node without outputs, which nothing reads, by its name).
  std::string named = n.node.output_size() ? n.node.output(0) : n.name();
  SmallVector<NamedAttribute> attrs{
      n.named("ratio", n.b.getF32FloatAttr(ratio)),
      n.named("stream", n.b.getI64IntegerAttr(static_cast<int64_t>(
                            llvm::xxh3_64bits(named) >> 1)))};
  if (const onnx::AttributeProto *seed = n.attr("seed"))
    attrs.push_back(n.named("seed", n.b.getI64IntegerAttr(seed->i())));
  Value r = DropoutOp::create(n.b, n.loc, n.inputType(0), n.input(0), attrs);
  if (!n.hasOutput(1))
    return n.setResults(r);
  auto maskType =
      RankedTensorType::get(n.inputType(0).getShape(), n.b.getI1Type());
  Value mask = DropoutMaskOp::create(n.b, n.loc, maskType, n.input(0), attrs);
  return n.setResults(SmallVector<Value>{r, mask});
}

LogicalResult convertGelu(NodeContext &n) {
  std::string approx = n.stringAttr("approximate", "none");
  std::optional<GeluApproximation> kind = symbolizeGeluApproximation(approx);
  if (!kind)
    return n.error() << "approximate must be 'none' or 'tanh', got '"
                     << approx << "'";
  Value r = GeluOp::create(n.b, n.loc, n.inputType(0),
                           GeluApproximationAttr::get(n.b.getContext(), *kind),
                           n.input(0));
  return n.setResults(r);
}

/// Cast and CastLike: saturate (opset 19; only FLOAT8 targets read it) is
/// kept where it is not the default.
Value buildCast(NodeContext &n, RankedTensorType type) {
  SmallVector<NamedAttribute> attrs;
  if (!n.intAttr("saturate", 1))
    attrs.push_back(n.named("saturate", n.b.getBoolAttr(false)));
  return n.buildTyped<CastOp>(type, n.input(0), attrs);
}

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

LogicalResult convertCastLike(NodeContext &n) {
  auto type = RankedTensorType::get(n.inputType(0).getShape(),
                                    n.inputType(1).getElementType());
  return n.setResults(buildCast(n, type));
}

LogicalResult convertWhere(NodeContext &n) {
  FailureOr<Value> r = n.build<WhereOp>({n.input(0), n.input(1), n.input(2)});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertGemm(NodeContext &n) {
  SmallVector<Value> operands{n.input(0), n.input(1)};
  if (n.hasInput(2))
    operands.push_back(n.input(2));
  SmallVector<NamedAttribute> attrs{
      n.named("alpha", n.b.getF32FloatAttr(n.floatAttr("alpha", 1.0f))),
      n.named("beta", n.b.getF32FloatAttr(n.floatAttr("beta", 1.0f))),
      n.named("trans_a", n.b.getBoolAttr(n.intAttr("transA", 0))),
      n.named("trans_b", n.b.getBoolAttr(n.intAttr("transB", 0)))};
  FailureOr<Value> r = n.build<GemmOp>(operands, attrs);
  return failed(r) ? failure() : n.setResults(*r);
}

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
  if (failed(normalizeAxis(axis, n.inputType(0).getRank(), std::nullopt)))
    return n.error() << "axis " << axis << " is out of range for rank "
                     << n.inputType(0).getRank();
  if (
      failed(verifyNormParam(n.inputType(0).getShape(), axis,
                             n.inputType(i).getShape(), what, std::nullopt)))
    return n.error() << what << " '" << n.node.input(i) << "' of shape "
                     << shapeToString(n.inputType(i).getShape())
                     << " does not fit input of shape "
                     << shapeToString(n.inputType(0).getShape())
                     << " normalized from axis " << axis;
  return success();
}

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

/// Reductions: axes are an attribute before `axesInputSince` and an
/// optional input from it on.
template <typename OpTy, int64_t axesInputSince>
LogicalResult convertReduce(NodeContext &n) {
  SmallVector<int64_t> axes;
  if (n.opset >= axesInputSince && n.attr("axes"))
    return n.error() << "axes is an input from opset " << axesInputSince
                     << " on, not an attribute";
  if (n.opset < axesInputSince && n.hasInput(1))
    return n.error() << "axes is an attribute before opset "
                     << axesInputSince << ", not an input";
  if (n.opset >= axesInputSince) {
    if (n.hasInput(1)) {
      FailureOr<SmallVector<int64_t>> a = n.constantInts(1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else if (auto a = n.intsAttr("axes")) {
    axes = *a;
  }
  if (axes.empty() && n.intAttr("noop_with_empty_axes", 0))
    return n.setResults(n.input(0));
  FailureOr<Value> r = n.build<OpTy>(
      n.input(0),
      {n.named("axes", n.b.getDenseI64ArrayAttr(axes)),
       n.named("keepdims", n.b.getBoolAttr(n.intAttr("keepdims", 1)))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertTranspose(NodeContext &n) {
  SmallVector<int64_t> perm;
  if (auto p = n.intsAttr("perm"))
    perm = *p;
  else
    for (int64_t i = n.inputType(0).getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  FailureOr<Value> r = n.build<TransposeOp>(
      n.input(0), {n.named("perm", n.b.getDenseI64ArrayAttr(perm))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertReshape(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> target = n.constantInts(1, "shape");
  if (failed(target))
    return failure();
  Shape shape;
  if (failed(n.rule([&](OptLoc loc) {
        return inferReshapeShape(n.inputType(0).getShape(), *target,
                                 n.intAttr("allowzero", 0) != 0, shape, loc);
      })))
    return failure();
  auto type = RankedTensorType::get(shape, n.inputType(0).getElementType());
  return n.setResults(n.buildTyped<ReshapeOp>(type, n.input(0)));
}

LogicalResult convertFlatten(NodeContext &n) {
  FailureOr<Value> r = n.build<FlattenOp>(
      n.input(0), {n.named("axis", n.b.getI64IntegerAttr(n.intAttr("axis", 1)))});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Axes of Squeeze/Unsqueeze: an input from opset 13 on.
FailureOr<SmallVector<int64_t>> axesOperand(NodeContext &n) {
  if (!n.hasInput(1))
    return SmallVector<int64_t>();
  return n.constantInts(1, "axes");
}

template <typename OpTy>
LogicalResult convertSqueezeLike(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> axes = axesOperand(n);
  if (failed(axes))
    return failure();
  FailureOr<Value> r = n.build<OpTy>(
      n.input(0), {n.named("axes", n.b.getDenseI64ArrayAttr(*axes))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertConcat(NodeContext &n) {
  const onnx::AttributeProto *axis = n.attr("axis");
  if (!axis)
    return n.error() << "missing attribute 'axis'";
  SmallVector<Value> inputs;
  for (int64_t i = 0; i < n.numInputs(); ++i)
    inputs.push_back(n.input(i));
  FailureOr<Value> r = n.build<ConcatOp>(
      inputs, {n.named("axis", n.b.getI64IntegerAttr(axis->i()))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertSplit(NodeContext &n) {
  int64_t axis = n.intAttr("axis", 0);
  RankedTensorType type = n.inputType(0);
  FailureOr<int64_t> a = failure();
  if (failed(n.rule([&](OptLoc loc) {
        a = normalizeAxis(axis, type.getRank(), loc);
        return LogicalResult(a);
      })))
    return failure();
  SmallVector<int64_t> sizes;
  if (n.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> s = n.constantInts(1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else {
    // Equal parts; from opset 18 num_outputs may leave a smaller last part.
    bool hasNum = n.opset >= 18 && n.attr("num_outputs");
    int64_t parts = hasNum ? n.intAttr("num_outputs", 1) : n.numOutputs();
    if (parts <= 0)
      return n.error() << "cannot split into " << parts << " parts";
    if (hasNum && parts != n.numOutputs())
      return n.error() << "num_outputs is " << parts << " but the node has "
                       << n.numOutputs() << " outputs";
    int64_t dim = type.getDimSize(*a);
    if (!hasNum && dim % parts != 0)
      return n.error() << "cannot split dimension " << *a << " of size "
                       << dim << " into " << parts
                       << " equal parts (give the split sizes)";
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  FailureOr<SmallVector<Value>> r = n.buildMulti<SplitOp>(
      n.input(0), {n.named("axis", n.b.getI64IntegerAttr(axis)),
                   n.named("sizes", n.b.getDenseI64ArrayAttr(sizes))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertSlice(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> starts = n.constantInts(1, "starts");
  if (failed(starts))
    return failure();
  FailureOr<SmallVector<int64_t>> ends = n.constantInts(2, "ends");
  if (failed(ends))
    return failure();
  SmallVector<int64_t> axes, steps;
  if (n.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = n.constantInts(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (n.hasInput(4)) {
    FailureOr<SmallVector<int64_t>> s = n.constantInts(4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  } else {
    steps.assign(starts->size(), 1);
  }
  FailureOr<Value> r = n.build<SliceOp>(
      n.input(0), {n.named("starts", n.b.getDenseI64ArrayAttr(*starts)),
                   n.named("ends", n.b.getDenseI64ArrayAttr(*ends)),
                   n.named("axes", n.b.getDenseI64ArrayAttr(axes)),
                   n.named("steps", n.b.getDenseI64ArrayAttr(steps))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertGather(NodeContext &n) {
  FailureOr<Value> r = n.build<GatherOp>(
      {n.input(0), n.input(1)},
      {n.named("axis", n.b.getI64IntegerAttr(n.intAttr("axis", 0)))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertGatherElements(NodeContext &n) {
  FailureOr<Value> r = n.build<GatherElementsOp>(
      {n.input(0), n.input(1)},
      {n.named("axis", n.b.getI64IntegerAttr(n.intAttr("axis", 0)))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertGatherND(NodeContext &n) {
  FailureOr<Value> r = n.build<GatherNDOp>(
      {n.input(0), n.input(1)},
      {n.named("batch_dims",
               n.b.getI64IntegerAttr(n.intAttr("batch_dims", 0)))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertScatterElements(NodeContext &n) {
  FailureOr<Value> r = n.build<ScatterElementsOp>(
      {n.input(0), n.input(1), n.input(2)},
      {n.named("axis", n.b.getI64IntegerAttr(n.intAttr("axis", 0))),
       n.named("reduction",
               n.b.getStringAttr(n.stringAttr("reduction", "none")))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertScatterND(NodeContext &n) {
  FailureOr<Value> r = n.build<ScatterNDOp>(
      {n.input(0), n.input(1), n.input(2)},
      {n.named("reduction",
               n.b.getStringAttr(n.stringAttr("reduction", "none")))});
  return failed(r) ? failure() : n.setResults(*r);
}

/// TopK: the positions, then the values gathered at them. Always sorted
/// (`sorted = 0` lets any order do).
LogicalResult convertTopK(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> k = n.constantInts(1, "k");
  if (failed(k))
    return failure();
  if (k->size() != 1)
    return n.error() << "k must hold one value, got " << k->size();
  int64_t axis = n.intAttr("axis", -1);
  FailureOr<Value> indices = n.build<TopKIndicesOp>(
      {n.input(0)},
      {n.named("axis", n.b.getI64IntegerAttr(axis)),
       n.named("k", n.b.getI64IntegerAttr(k->front())),
       n.named("largest", n.b.getBoolAttr(n.intAttr("largest", 1) != 0))});
  if (failed(indices))
    return failure();
  FailureOr<Value> values = n.build<GatherElementsOp>(
      {n.input(0), *indices}, {n.named("axis", n.b.getI64IntegerAttr(axis))});
  if (failed(values))
    return failure();
  return n.setResults(SmallVector<Value>{*values, *indices});
}

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

LogicalResult convertIsInf(NodeContext &n) {
  FailureOr<Value> r = n.build<IsInfOp>(
      {n.input(0)},
      {n.named("detect_negative",
               n.b.getBoolAttr(n.intAttr("detect_negative", 1) != 0)),
       n.named("detect_positive",
               n.b.getBoolAttr(n.intAttr("detect_positive", 1) != 0))});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Max, Min and Sum of one or more inputs (broadcasting): a chain of the
/// binary op.
template <typename OpTy> FailureOr<Value> chain(NodeContext &n) {
  Value acc = n.input(0);
  for (int64_t i = 1; i < n.numInputs(); ++i) {
    FailureOr<Value> r = n.build<OpTy>({acc, n.input(i)});
    if (failed(r))
      return failure();
    acc = *r;
  }
  return acc;
}

template <typename OpTy> LogicalResult convertVariadic(NodeContext &n) {
  FailureOr<Value> r = chain<OpTy>(n);
  return failed(r) ? failure() : n.setResults(*r);
}

/// Mean: the Sum over the input count (ONNX defines it for floats).
LogicalResult convertMean(NodeContext &n) {
  Type elt = n.inputType(0).getElementType();
  if (!isa<FloatType>(elt))
    return n.error() << "Mean of " << elt
                     << " values: ONNX defines it for floats only",
           failure();
  FailureOr<Value> sum = chain<AddOp>(n);
  if (failed(sum) || n.numInputs() == 1)
    return failed(sum) ? failure() : n.setResults(*sum);
  Value count = ConstantOp::create(
      n.b, n.loc,
      DenseElementsAttr::get(RankedTensorType::get({}, elt),
                             n.b.getFloatAttr(elt, n.numInputs())));
  FailureOr<Value> r = n.build<DivOp>({*sum, count});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertCumSum(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> axis = n.constantInts(1, "axis");
  if (failed(axis))
    return failure();
  int64_t rank = n.inputType(0).getRank();
  if (axis->size() != 1 || (*axis)[0] < -rank || (*axis)[0] >= rank)
    return n.error() << "CumSum's axis must be one value in [" << -rank << ", "
                     << rank << ")",
           failure();
  FailureOr<Value> r = n.build<CumSumOp>(
      {n.input(0)},
      {n.named("axis", n.b.getI64IntegerAttr((*axis)[0])),
       n.named("exclusive", n.b.getBoolAttr(n.intAttr("exclusive", 0) != 0)),
       n.named("reverse", n.b.getBoolAttr(n.intAttr("reverse", 0) != 0))});
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertExpand(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> shape = n.constantInts(1, "shape");
  if (failed(shape))
    return failure();
  Shape out;
  if (failed(n.rule([&](OptLoc loc) {
        return inferBroadcastShape({n.inputType(0).getShape(), *shape}, out,
                                   loc);
      })))
    return failure();
  auto type = RankedTensorType::get(out, n.inputType(0).getElementType());
  return n.setResults(n.buildTyped<ExpandOp>(type, n.input(0)));
}

LogicalResult convertShape(NodeContext &n) {
  ArrayRef<int64_t> shape = n.inputType(0).getShape();
  int64_t rank = shape.size();
  int64_t start = n.intAttr("start", 0), end = n.intAttr("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  SmallVector<int64_t> dims(shape.begin() + start, shape.begin() + end);
  auto type = RankedTensorType::get({end - start}, n.b.getI64Type());
  return n.setResults(
      n.constant(DenseElementsAttr::get(type, ArrayRef<int64_t>(dims))));
}

LogicalResult convertSize(NodeContext &n) {
  auto type = RankedTensorType::get({}, n.b.getI64Type());
  return n.setResults(n.constant(DenseElementsAttr::get(
      type, ArrayRef<int64_t>{n.inputType(0).getNumElements()})));
}

LogicalResult convertConstant(NodeContext &n) {
  Builder &b = n.b;
  for (const auto &a : n.node.attribute()) {
    StringRef name = a.name();
    if (name == "value") {
      FailureOr<ElementsAttr> value = n.loadTensor(a.t());
      return failed(value) ? failure() : n.setResults(n.constant(*value));
    }
    if (name == "value_float")
      return n.setResults(n.constant(DenseElementsAttr::get(
          RankedTensorType::get({}, b.getF32Type()), a.f())));
    if (name == "value_floats") {
      SmallVector<float> v(a.floats().begin(), a.floats().end());
      return n.setResults(n.constant(DenseElementsAttr::get(
          RankedTensorType::get({(int64_t)v.size()}, b.getF32Type()),
          ArrayRef<float>(v))));
    }
    if (name == "value_int")
      return n.setResults(n.constant(DenseElementsAttr::get(
          RankedTensorType::get({}, b.getI64Type()), a.i())));
    if (name == "value_ints") {
      SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
      return n.setResults(n.constant(DenseElementsAttr::get(
          RankedTensorType::get({(int64_t)v.size()}, b.getI64Type()),
          ArrayRef<int64_t>(v))));
    }
  }
  return n.error() << "has no supported value attribute (value, value_float, "
                      "value_floats, value_int, value_ints)";
}

LogicalResult convertConstantOfShape(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> shape = n.constantInts(0, "shape");
  if (failed(shape))
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return n.error() << "shape " << shapeToString(*shape)
                     << " has a negative dimension";
  Attribute fill = n.b.getZeroAttr(n.b.getF32Type());
  Type elt = n.b.getF32Type();
  if (const onnx::AttributeProto *v = n.attr("value")) {
    FailureOr<ElementsAttr> t = n.loadTensor(v->t());
    if (failed(t))
      return failure();
    auto dense = dyn_cast<DenseElementsAttr>(*t);
    if (!dense || dense.getNumElements() != 1)
      return n.error() << "value must hold exactly one element";
    fill = *dense.getValues<Attribute>().begin();
    elt = dense.getElementType();
  }
  auto type = RankedTensorType::get(*shape, elt);
  return n.setResults(n.constant(DenseElementsAttr::get(type, fill)));
}

LogicalResult convertRange(NodeContext &n) {
  FailureOr<Attribute> start = n.constantScalar(0, "start");
  if (failed(start))
    return failure();
  FailureOr<Attribute> limit = n.constantScalar(1, "limit");
  if (failed(limit))
    return failure();
  FailureOr<Attribute> delta = n.constantScalar(2, "delta");
  if (failed(delta))
    return failure();
  Type elt = n.inputType(0).getElementType();
  // From opset 27 on, 16-bit ranges are computed in stash_type; memfit
  // computes them in wider floats and rounds once, as float (1) does.
  if (int64_t stash = n.intAttr("stash_type", 1);
      stash != 1 && isa<Float16Type, BFloat16Type>(elt))
    return n.error() << "stash_type " << stash
                     << " is not supported (only 1, float)";
  // ONNX gives the three one type; the op's folder relies on it.
  for (Attribute a : {*start, *limit, *delta})
    if (auto typed = dyn_cast<TypedAttr>(a); !typed || typed.getType() != elt ||
                                             !elt.isIntOrFloat() ||
                                             elt.isInteger(1))
      return n.error() << "start, limit and delta must be numbers of one type"
                       << " (inputs: " << n.describeInputs() << ")";
  auto asDouble = [](Attribute a) {
    if (auto f = dyn_cast<FloatAttr>(a))
      return f.getValueAsDouble();
    return static_cast<double>(cast<IntegerAttr>(a).getValue().getSExtValue());
  };
  double s = asDouble(*start), l = asDouble(*limit), d = asDouble(*delta);
  if (d == 0)
    return n.error() << "delta is zero";
  double steps = std::ceil((l - s) / d);
  // NaN or infinite bounds, or more elements than a size can count.
  if (!std::isfinite(steps) || steps >= 0x1p62)
    return n.error() << "start " << s << ", limit " << l << " and delta " << d
                     << " do not give a countable number of elements";
  int64_t count = steps > 0 ? static_cast<int64_t>(steps) : 0;
  auto type = RankedTensorType::get({count}, elt);
  return n.setResults(n.buildTyped<RangeOp>(
      type, {}, {n.named("start", *start), n.named("delta", *delta)}));
}

LogicalResult convertTrilu(NodeContext &n) {
  int64_t k = 0;
  if (n.hasInput(1)) {
    FailureOr<Attribute> kAttr = n.constantScalar(1, "k");
    if (failed(kAttr))
      return failure();
    auto value = dyn_cast<IntegerAttr>(*kAttr);
    if (!value)
      return n.error() << "k must be an integer scalar";
    k = value.getValue().getSExtValue();
  }
  if (n.inputType(0).getRank() < 2)
    return n.error() << "input must have rank >= 2, got "
                     << n.inputType(0);
  return n.setResults(n.buildTyped<TriluOp>(
      n.inputType(0), n.input(0),
      {n.named("upper", n.b.getBoolAttr(n.intAttr("upper", 1))),
       n.named("k", n.b.getI64IntegerAttr(k))}));
}

/// Einsum without summed indices (an outer or element-wise product, as
/// torch.outer exports): each operand is transposed into output order,
/// unsqueezed where it lacks an output index, and the results multiplied.
/// Einsum whose every index is in the output: each operand's indices in
/// the output's order, broadcast and multiplied.
LogicalResult convertEinsumProduct(NodeContext &n, ArrayRef<StringRef> terms,
                                   StringRef out) {
  Value acc;
  for (auto [i, term] : llvm::enumerate(terms)) {
    // Order this operand's indices as in the output, then add the missing.
    SmallVector<int64_t> perm;
    std::string ordered;
    for (char c : out)
      if (size_t p = term.find(c); p != StringRef::npos) {
        perm.push_back(p);
        ordered += c;
      }
    FailureOr<Value> v = n.build<TransposeOp>(
        n.input(i), {n.named("perm", n.b.getDenseI64ArrayAttr(perm))});
    if (failed(v))
      return failure();
    SmallVector<int64_t> missing;
    for (auto [k, c] : llvm::enumerate(out))
      if (ordered.find(c) == std::string::npos)
        missing.push_back(k);
    if (!missing.empty()) {
      v = n.build<UnsqueezeOp>(
          *v, {n.named("axes", n.b.getDenseI64ArrayAttr(missing))});
      if (failed(v))
        return failure();
    }
    if (!acc) {
      acc = *v;
      continue;
    }
    FailureOr<Value> m = n.build<MulOp>({acc, *v});
    if (failed(m))
      return failure();
    acc = *m;
  }
  return n.setResults(acc);
}

/// An Einsum operand or partial result: its value and its index letters.
struct EinsumTerm {
  Value value;
  std::string letters;
};

/// Sums `t` over its letters that are not in `keep`.
FailureOr<EinsumTerm> sumOut(NodeContext &n, EinsumTerm t, StringRef keep) {
  SmallVector<int64_t> axes;
  std::string rest;
  for (auto [i, c] : llvm::enumerate(t.letters)) {
    if (keep.contains(c))
      rest += c;
    else
      axes.push_back(i);
  }
  if (axes.empty())
    return t;
  FailureOr<Value> r = n.build<ReduceSumOp>(
      t.value, {n.named("axes", n.b.getDenseI64ArrayAttr(axes)),
                n.named("keepdims", n.b.getBoolAttr(false))});
  if (failed(r))
    return failure();
  return EinsumTerm{*r, rest};
}

/// `t` with its letters in the order of `order` (a permutation of them).
FailureOr<Value> permuted(NodeContext &n, const EinsumTerm &t,
                          StringRef order) {
  SmallVector<int64_t> perm;
  for (char c : order)
    perm.push_back(t.letters.find(c));
  return n.build<TransposeOp>(
      t.value, {n.named("perm", n.b.getDenseI64ArrayAttr(perm))});
}

/// a * b summed over the letters they share that are not in `keep`: a
/// batched MatMul of a as (batch, a's own, shared) and b as (batch,
/// shared, b's own), where batch are the shared letters kept.
FailureOr<EinsumTerm> contract(NodeContext &n, EinsumTerm a, EinsumTerm b,
                               StringRef keep,
                               const llvm::DenseMap<char, int64_t> &size) {
  std::string batch, own, shared, other;
  for (char c : a.letters) {
    if (b.letters.find(c) == std::string::npos)
      own += c;
    else if (keep.contains(c))
      batch += c;
    else
      shared += c;
  }
  for (char c : b.letters)
    if (a.letters.find(c) == std::string::npos)
      other += c;
  bool overflow = false;
  auto extent = [&](StringRef letters) {
    int64_t p = 1;
    for (char c : letters)
      overflow |= llvm::MulOverflow(p, size.lookup(c), p);
    return p;
  };
  Type elt = cast<RankedTensorType>(a.value.getType()).getElementType();
  auto reshaped = [&](const EinsumTerm &t, StringRef order,
                      ArrayRef<int64_t> dims) -> FailureOr<Value> {
    FailureOr<Value> v = permuted(n, t, order);
    if (failed(v))
      return failure();
    return n.buildTyped<ReshapeOp>(RankedTensorType::get(dims, elt), *v);
  };
  int64_t bt = extent(batch), m = extent(own), k = extent(shared),
          nn = extent(other);
  extent(batch + own + other);
  if (overflow)
    return n.error() << "the contraction's sizes overflow 64 bits", failure();
  FailureOr<Value> lhs = reshaped(a, batch + own + shared, {bt, m, k});
  FailureOr<Value> rhs = reshaped(b, batch + shared + other, {bt, k, nn});
  if (failed(lhs) || failed(rhs))
    return failure();
  FailureOr<Value> product = n.build<MatMulOp>({*lhs, *rhs});
  if (failed(product))
    return failure();
  std::string letters = batch + own + other;
  SmallVector<int64_t> dims;
  for (char c : letters)
    dims.push_back(size.lookup(c));
  return EinsumTerm{
      n.buildTyped<ReshapeOp>(RankedTensorType::get(dims, elt), *product),
      letters};
}

/// Einsum: an explicit '->' output, or the implicit one (the letters used
/// once, in alphabetical order); no ellipsis, no letter repeated within a
/// term (a diagonal). Products without summation broadcast and multiply;
/// otherwise each operand is summed over the letters no one else uses,
/// then operands are contracted pairwise, left to right, with MatMul.
LogicalResult convertEinsum(NodeContext &n) {
  std::string eq = n.stringAttr("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find("...") != std::string::npos)
    return n.error() << "equation '" << eq
                     << "' is not supported (an ellipsis)";
  auto arrow = eq.find("->");
  SmallVector<StringRef> terms;
  StringRef(eq).substr(0, arrow).split(terms, ',');
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    std::map<char, int> uses;
    for (StringRef term : terms)
      for (char c : term)
        ++uses[c];
    for (auto [c, k] : uses)
      if (k == 1)
        out += c;
  }
  if (static_cast<int64_t>(terms.size()) != n.numInputs())
    return n.error() << "equation '" << eq << "' names " << terms.size()
                     << " operands but the node has " << n.numInputs();
  llvm::DenseMap<char, int64_t> size;
  bool product = true;
  SmallVector<EinsumTerm> operands;
  for (auto [i, term] : llvm::enumerate(terms)) {
    if (static_cast<int64_t>(term.size()) != n.inputType(i).getRank())
      return n.error() << "equation term '" << term << "' does not match the "
                       << "rank of input " << i;
    for (auto [d, c] : llvm::enumerate(term)) {
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return n.error() << "equation '" << eq << "' has '" << c
                         << "', not a letter";
      if (term.count(c) != 1)
        return n.error()
               << "equation '" << eq << "' repeats index '" << c
               << "' in one term (a diagonal), which is not supported";
      int64_t dim = n.inputType(i).getDimSize(d);
      auto [it, inserted] = size.try_emplace(c, dim);
      if (!inserted && it->second != dim)
        return n.error() << "equation '" << eq << "': index '" << c
                         << "' has sizes " << it->second << " and " << dim;
      product &= out.find(c) != std::string::npos;
    }
    operands.push_back({n.input(i), term.str()});
  }
  for (char c : out)
    if (!size.count(c) || llvm::count(out, c) != 1)
      return n.error() << "equation '" << eq << "': output index '" << c
                       << "' is not an input index or is repeated";
  if (product)
    return convertEinsumProduct(n, terms, out);
  // Each operand summed over the letters that neither the output nor
  // another operand has, then contracted left to right, keeping what the
  // output or a later operand needs.
  EinsumTerm acc;
  for (auto [i, t] : llvm::enumerate(operands)) {
    std::string keep = out;
    for (auto [j, u] : llvm::enumerate(operands))
      if (j != i)
        keep += u.letters;
    FailureOr<EinsumTerm> summed = sumOut(n, t, keep);
    if (failed(summed))
      return failure();
    if (i == 0) {
      acc = *summed;
      continue;
    }
    keep = out;
    for (size_t j = i + 1; j < operands.size(); ++j)
      keep += operands[j].letters;
    FailureOr<EinsumTerm> next = contract(n, acc, *summed, keep, size);
    if (failed(next))
      return failure();
    acc = *next;
  }
  FailureOr<EinsumTerm> last = sumOut(n, acc, out);
  if (failed(last))
    return failure();
  FailureOr<Value> r = permuted(n, *last, out);
  return failed(r) ? failure() : n.setResults(*r);
}

FailureOr<LossReduction> lossReduction(NodeContext &n) {
  std::string r = n.stringAttr("reduction", "mean");
  std::optional<LossReduction> kind = symbolizeLossReduction(r);
  if (!kind)
    return n.error() << "reduction must be 'none', 'sum' or 'mean', got '"
                     << r << "'",
           failure();
  return *kind;
}

template <typename OpTy>
LogicalResult convertLoss(NodeContext &n) {
  FailureOr<LossReduction> reduction = lossReduction(n);
  if (failed(reduction))
    return failure();
  SmallVector<Value> operands{n.input(0), n.input(1)};
  if (n.hasInput(2))
    operands.push_back(n.input(2));
  SmallVector<NamedAttribute> attrs{n.named(
      "reduction", LossReductionAttr::get(n.b.getContext(), *reduction))};
  if (const onnx::AttributeProto *ii = n.attr("ignore_index"))
    attrs.push_back(n.named("ignore_index", n.b.getI64IntegerAttr(ii->i())));
  FailureOr<Value> r = n.build<OpTy>(operands, attrs);
  if (failed(r))
    return failure();
  if (!n.hasOutput(1) || !std::is_same_v<OpTy, SoftmaxCrossEntropyLossOp>)
    return n.setResults(*r);
  // SoftmaxCrossEntropyLoss's optional log_prob: the log-softmax of the
  // scores over the class dimension (1).
  Value logProb = LogSoftmaxOp::create(n.b, n.loc, n.inputType(0), n.input(0),
                                       n.b.getI64IntegerAttr(1));
  return n.setResults(SmallVector<Value>{*r, logProb});
}

struct Entry {
  const char *opType;
  OpConverter converter;
};

constexpr int64_t kAny = std::numeric_limits<int64_t>::max();

const Entry kTable[] = {
    // Element-wise.
    {"Neg", {13, 1, 1, convertUnary<NegOp>}},
    {"Exp", {13, 1, 1, convertUnary<ExpOp>}},
    {"Log", {13, 1, 1, convertUnary<LogOp>}},
    {"Sqrt", {13, 1, 1, convertUnary<SqrtOp>}},
    {"Reciprocal", {13, 1, 1, convertUnary<ReciprocalOp>}},
    {"Erf", {13, 1, 1, convertUnary<ErfOp>}},
    {"Tanh", {13, 1, 1, convertUnary<TanhOp>}},
    {"Sigmoid", {13, 1, 1, convertUnary<SigmoidOp>}},
    {"Relu", {13, 1, 1, convertUnary<ReluOp>}},
    {"Sin", {13, 1, 1, convertUnary<SinOp>}},
    {"Cos", {13, 1, 1, convertUnary<CosOp>}},
    {"Not", {13, 1, 1, convertUnary<NotOp>}},
    {"IsNaN", {13, 1, 1, convertUnary<IsNaNOp>}},
    {"IsInf", {13, 1, 1, convertIsInf}},
    {"Gelu", {20, 1, 1, convertGelu}},
    {"Dropout", {13, 1, 3, convertDropout}},
    {"Identity", {13, 1, 1, convertIdentity}},
    {"Cast", {13, 1, 1, convertCast}},
    {"CastLike", {15, 2, 2, convertCastLike}},
    {"Trilu", {14, 1, 2, convertTrilu}},
    {"Add", {13, 2, 2, convertBinary<AddOp>}},
    {"Sub", {13, 2, 2, convertBinary<SubOp>}},
    {"Mul", {13, 2, 2, convertBinary<MulOp>}},
    {"Div", {13, 2, 2, convertBinary<DivOp>}},
    {"Pow", {13, 2, 2, convertBinary<PowOp>}},
    {"Equal", {13, 2, 2, convertBinary<EqualOp>}},
    {"Less", {13, 2, 2, convertBinary<LessOp>}},
    {"Greater", {13, 2, 2, convertBinary<GreaterOp>}},
    {"LessOrEqual", {13, 2, 2, convertCompareOrEqual<LessOp>}},
    {"GreaterOrEqual", {13, 2, 2, convertCompareOrEqual<GreaterOp>}},
    {"Max", {13, 1, kAny, convertVariadic<MaxOp>}},
    {"Min", {13, 1, kAny, convertVariadic<MinOp>}},
    {"Sum", {13, 1, kAny, convertVariadic<AddOp>}},
    {"Mean", {13, 1, kAny, convertMean}},
    {"CumSum", {14, 2, 2, convertCumSum}},
    {"And", {13, 2, 2, convertBinary<AndOp>}},
    {"Or", {13, 2, 2, convertBinary<OrOp>}},
    {"Xor", {13, 2, 2, convertBinary<XorOp>}},
    {"Where", {13, 3, 3, convertWhere}},
    // Written as other ops (OnnxComposedOps.cpp).
    {"Abs", {13, 1, 1, convertAbs}},
    {"Sign", {13, 1, 1, convertSign}},
    {"Clip", {13, 1, 3, convertClip}},
    {"Softplus", {13, 1, 1, convertSoftplus}},
    {"HardSigmoid", {13, 1, 1, convertHardSigmoid}},
    {"HardSwish", {14, 1, 1, convertHardSwish}},
    {"Mish", {18, 1, 1, convertMish}},
    {"Mod", {13, 2, 2, convertMod}},
    {"Tile", {13, 2, 2, convertTile}},
    {"Pad", {13, 2, 4, convertPad}},
    {"ArgMax", {13, 1, 1, convertArgExtreme<true>}},
    {"ArgMin", {13, 1, 1, convertArgExtreme<false>}},
    // onnxruntime's own: SimplifiedLayerNormalization (RMSNormalization's
    // inputs and attributes) is registered in the default domain at opset
    // 1, the rest in com.microsoft.
    {"SimplifiedLayerNormalization", {1, 2, 2, convertRMSNorm}},
    {"com.microsoft.SkipLayerNormalization", {1, 3, 5, convertSkipNorm<false>}},
    {"com.microsoft.SkipSimplifiedLayerNormalization",
     {1, 3, 4, convertSkipNorm<true>}},
    {"com.microsoft.FastGelu",
     {1, 1, 2, convertFusedGelu<GeluApproximation::Tanh>}},
    {"com.microsoft.BiasGelu",
     {1, 2, 2, convertFusedGelu<GeluApproximation::None>}},
    {"com.microsoft.Gelu",
     {1, 1, 1, convertFusedGelu<GeluApproximation::None>}},
    // Contractions.
    {"MatMul", {13, 2, 2, convertBinary<MatMulOp>}},
    {"Gemm", {13, 2, 3, convertGemm}},
    {"Einsum", {13, 1, kAny, convertEinsum}},
    // Normalizations.
    {"Softmax", {13, 1, 1, convertSoftmax<SoftmaxOp>}},
    {"LogSoftmax", {13, 1, 1, convertSoftmax<LogSoftmaxOp>}},
    {"LayerNormalization", {17, 2, 3, convertLayerNorm}},
    {"RMSNormalization", {23, 2, 2, convertRMSNorm}},
    // Reductions.
    {"ReduceSum", {13, 1, 2, convertReduce<ReduceSumOp, 13>}},
    {"ReduceMean", {13, 1, 2, convertReduce<ReduceMeanOp, 18>}},
    {"ReduceMax", {13, 1, 2, convertReduce<ReduceMaxOp, 18>}},
    // Data movement.
    {"Transpose", {13, 1, 1, convertTranspose}},
    {"Reshape", {13, 2, 2, convertReshape}},
    {"Flatten", {13, 1, 1, convertFlatten}},
    {"Squeeze", {13, 1, 2, convertSqueezeLike<SqueezeOp>}},
    {"Unsqueeze", {13, 2, 2, convertSqueezeLike<UnsqueezeOp>}},
    {"Concat", {13, 1, kAny, convertConcat}},
    {"Split", {13, 1, 2, convertSplit}},
    {"Slice", {13, 3, 5, convertSlice}},
    {"Gather", {13, 2, 2, convertGather}},
    {"GatherElements", {13, 2, 2, convertGatherElements}},
    {"GatherND", {13, 2, 2, convertGatherND}},
    {"ScatterElements", {13, 3, 3, convertScatterElements}},
    {"ScatterND", {13, 3, 3, convertScatterND}},
    {"TopK", {13, 2, 2, convertTopK}},
    {"Expand", {13, 2, 2, convertExpand}},
    // Shapes and constants.
    {"Shape", {13, 1, 1, convertShape}},
    {"Size", {13, 1, 1, convertSize}},
    {"Constant", {13, 0, 0, convertConstant}},
    {"ConstantOfShape", {13, 1, 1, convertConstantOfShape}},
    {"Range", {13, 3, 3, convertRange}},
    // Losses.
    {"SoftmaxCrossEntropyLoss",
     {13, 2, 3, convertLoss<SoftmaxCrossEntropyLossOp>}},
    {"NegativeLogLikelihoodLoss",
     {13, 2, 3, convertLoss<NegativeLogLikelihoodLossOp>}},
};

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
  Value eps = n.constant(
      DenseElementsAttr::get(RankedTensorType::get({}, f32), epsilon));
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

const OpConverter *onnx_import::lookupConverter(StringRef domain,
                                                StringRef opType,
                                                int64_t opset) {
  static const llvm::StringMap<const OpConverter *> table = [] {
    llvm::StringMap<const OpConverter *> t;
    for (const Entry &e : kTable)
      t[e.opType] = &e.converter;
    return t;
  }();
  // Other domains' ops are keyed "domain.OpType".
  const OpConverter *c = table.lookup(domain.empty() || domain == "ai.onnx"
                                          ? opType.str()
                                          : (domain + "." + opType).str());
  return c && c->sinceVersion <= opset ? c : nullptr;
}
