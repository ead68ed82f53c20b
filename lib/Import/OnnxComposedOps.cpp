//===- OnnxComposedOps.cpp - ONNX ops built from other memfit ops ---------===//
//
// The ONNX ops that memfit has no op of its own for, written as the ops it
// has: they get shape inference, folding, kernels, fusion and gradients
// from those. Abs, Sign, Clip, Softplus, HardSigmoid, HardSwish, Mish and
// Mod are element-wise chains; Tile and Pad move data with Reshape,
// Expand, Slice, Gather and Concat; ArgMax and ArgMin reduce the positions of
// the extremes. onnxruntime's fused forms (SkipLayerNormalization,
// SkipSimplifiedLayerNormalization, FastGelu, BiasGelu, Gelu of
// com.microsoft, what its transformer optimizer writes) are the sums,
// normalizations and GELUs they fuse (its SimplifiedLayerNormalization is
// RMSNormalization's converter, in OnnxOps.cpp). Einsum is in OnnxOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "memfit/Dialect/MemfitOps.h"

#include "llvm/ADT/STLExtras.h"

#include <set>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// A rank-0 constant of element type `elt` (broadcasts to any shape).
Value scalar(NodeContext &n, Type elt, double value) {
  auto type = RankedTensorType::get({}, elt);
  Attribute attr;
  if (elt.isInteger(1))
    attr = n.b.getBoolAttr(value != 0);
  else if (isa<FloatType>(elt))
    attr = FloatAttr::get(elt, value);
  else
    attr = IntegerAttr::get(elt, static_cast<int64_t>(value));
  return n.constant(DenseElementsAttr::get(type, attr));
}

/// |x|: max(x, -x) (NaN stays NaN; the gradient at 0 is 0); unsigned
/// integers are their own magnitude.
FailureOr<Value> absOf(NodeContext &n, Value x) {
  if (eltOf(x).isUnsignedInteger())
    return x;
  FailureOr<Value> neg = n.build<NegOp>(x);
  if (failed(neg))
    return failure();
  return n.build<MaxOp>({x, *neg});
}

/// log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|)).
FailureOr<Value> softplusOf(NodeContext &n, Value x) {
  Type elt = eltOf(x);
  FailureOr<Value> a = absOf(n, x);
  if (failed(a))
    return failure();
  FailureOr<Value> e = n.build<NegOp>(*a);
  if (succeeded(e))
    e = n.build<ExpOp>(*e);
  if (succeeded(e))
    e = n.build<AddOp>({*e, scalar(n, elt, 1.0)});
  if (succeeded(e))
    e = n.build<LogOp>(*e);
  FailureOr<Value> r = n.build<ReluOp>(x);
  if (failed(e) || failed(r))
    return failure();
  return n.build<AddOp>({*r, *e});
}

/// min(max(x, lo), hi), either bound optional.
FailureOr<Value> clipOf(NodeContext &n, Value x, Value lo, Value hi) {
  FailureOr<Value> r = x;
  if (lo)
    r = n.build<MaxOp>({*r, lo});
  if (succeeded(r) && hi)
    r = n.build<MinOp>({*r, hi});
  return r;
}

FailureOr<Value> hardSigmoidOf(NodeContext &n, Value x, double alpha,
                               double beta) {
  Type elt = eltOf(x);
  FailureOr<Value> r = n.build<MulOp>({x, scalar(n, elt, alpha)});
  if (succeeded(r))
    r = n.build<AddOp>({*r, scalar(n, elt, beta)});
  if (failed(r))
    return failure();
  return clipOf(n, *r, scalar(n, elt, 0.0), scalar(n, elt, 1.0));
}

/// The bool tensor `b` as 0 and 1 of element type `elt`.
FailureOr<Value> asNumber(NodeContext &n, Value b, Type elt) {
  auto type = RankedTensorType::get(
      cast<RankedTensorType>(b.getType()).getShape(), elt);
  return n.buildTyped<CastOp>(type, b);
}

} // namespace

LogicalResult onnx_import::convertAbs(NodeContext &n) {
  FailureOr<Value> r = absOf(n, n.input(0));
  return failed(r) ? failure() : n.setResults(*r);
}

/// Sign: (x > 0) - (x < 0) in x's type; NaN stays NaN.
LogicalResult onnx_import::convertSign(NodeContext &n) {
  Value x = n.input(0);
  Type elt = eltOf(x);
  Value zero = scalar(n, elt, 0.0);
  FailureOr<Value> pos = n.build<GreaterOp>({x, zero});
  if (succeeded(pos))
    pos = asNumber(n, *pos, elt);
  if (failed(pos))
    return failure();
  if (elt.isUnsignedInteger())
    return n.setResults(*pos);
  FailureOr<Value> neg = n.build<LessOp>({x, zero});
  if (succeeded(neg))
    neg = asNumber(n, *neg, elt);
  FailureOr<Value> r =
      failed(neg) ? FailureOr<Value>(failure()) : n.build<SubOp>({*pos, *neg});
  if (succeeded(r) && isa<FloatType>(elt)) {
    FailureOr<Value> nan = n.build<IsNaNOp>(x);
    r = failed(nan) ? FailureOr<Value>(failure())
                    : n.build<WhereOp>({*nan, x, *r});
  }
  return failed(r) ? failure() : n.setResults(*r);
}

/// Clip (opset 13): optional min and max inputs, tensors of rank 0 (or of
/// one element) known at compile time or not.
LogicalResult onnx_import::convertClip(NodeContext &n) {
  Value bounds[2];
  for (int64_t i : {1, 2}) {
    if (!n.hasInput(i))
      continue;
    Value v = n.input(i);
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getNumElements() != 1)
      return n.error() << (i == 1 ? "min" : "max")
                       << " must hold one value, got " << type;
    if (type.getRank() != 0) {
      v = n.buildTyped<ReshapeOp>(
          RankedTensorType::get({}, type.getElementType()), v);
    }
    bounds[i - 1] = v;
  }
  FailureOr<Value> r = clipOf(n, n.input(0), bounds[0], bounds[1]);
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult onnx_import::convertSoftplus(NodeContext &n) {
  FailureOr<Value> r = softplusOf(n, n.input(0));
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult onnx_import::convertHardSigmoid(NodeContext &n) {
  FailureOr<Value> r = hardSigmoidOf(n, n.input(0), n.floatAttr("alpha", 0.2f),
                                     n.floatAttr("beta", 0.5f));
  return failed(r) ? failure() : n.setResults(*r);
}

/// HardSwish: x * HardSigmoid(x) with alpha 1/6, beta 1/2.
LogicalResult onnx_import::convertHardSwish(NodeContext &n) {
  FailureOr<Value> s = hardSigmoidOf(n, n.input(0), 1.0 / 6.0, 0.5);
  FailureOr<Value> r = failed(s) ? FailureOr<Value>(failure())
                                 : n.build<MulOp>({n.input(0), *s});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Mish: x * tanh(softplus(x)).
LogicalResult onnx_import::convertMish(NodeContext &n) {
  FailureOr<Value> s = softplusOf(n, n.input(0));
  if (succeeded(s))
    s = n.build<TanhOp>(*s);
  FailureOr<Value> r = failed(s) ? FailureOr<Value>(failure())
                                 : n.build<MulOp>({n.input(0), *s});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Mod: the remainder of the truncating division, a - (a/b)*b on integers
/// and memfit.fmod on floats (fmod = 1, C's % and fmod), moved by b where
/// its sign differs from b's (fmod = 0, Python's %).
LogicalResult onnx_import::convertMod(NodeContext &n) {
  Value a = n.input(0), b = n.input(1);
  Type elt = eltOf(a);
  bool fmod = n.intAttr("fmod", 0);
  if (elt.isInteger(1))
    return n.error() << "Mod of booleans is not defined";
  // The remainder with the dividend's sign: C's fmod for floats (ONNX
  // requires fmod = 1 for them), a - (a / b) * b for integers.
  FailureOr<Value> r;
  if (isa<FloatType>(elt)) {
    r = n.build<FmodOp>({a, b});
  } else {
    r = n.build<DivOp>({a, b});
    if (succeeded(r))
      r = n.build<MulOp>({*r, b});
    if (succeeded(r))
      r = n.build<SubOp>({a, *r});
  }
  if (failed(r) || fmod || elt.isUnsignedInteger())
    return failed(r) ? failure() : n.setResults(*r);
  Value zero = scalar(n, elt, 0.0);
  FailureOr<Value> nonzero = n.build<EqualOp>({*r, zero});
  if (succeeded(nonzero))
    nonzero = n.build<NotOp>(*nonzero);
  FailureOr<Value> rNeg = n.build<LessOp>({*r, zero});
  FailureOr<Value> bNeg = n.build<LessOp>({b, zero});
  if (failed(nonzero) || failed(rNeg) || failed(bNeg))
    return failure();
  FailureOr<Value> differ = n.build<XorOp>({*rNeg, *bNeg});
  if (succeeded(differ))
    differ = n.build<AndOp>({*nonzero, *differ});
  FailureOr<Value> moved = n.build<AddOp>({*r, b});
  if (failed(differ) || failed(moved))
    return failure();
  FailureOr<Value> result = n.build<WhereOp>({*differ, *moved, *r});
  return failed(result) ? failure() : n.setResults(*result);
}

/// Tile: x of shape (d0, d1, ...) as (1, d0, 1, d1, ...), expanded to
/// (r0, d0, r1, d1, ...) and reshaped to (r0*d0, r1*d1, ...).
LogicalResult onnx_import::convertTile(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> repeats = n.constantInts(1, "repeats");
  if (failed(repeats))
    return failure();
  RankedTensorType type = n.inputType(0);
  if (static_cast<int64_t>(repeats->size()) != type.getRank())
    return n.error() << "repeats has " << repeats->size()
                     << " values for an input of rank " << type.getRank();
  SmallVector<int64_t> split, expanded, out;
  for (auto [d, r] : llvm::zip(type.getShape(), *repeats)) {
    int64_t tiled;
    if (r < 0)
      return n.error() << "repeats must not be negative, got " << r;
    if (llvm::MulOverflow(r, d, tiled))
      return n.error() << "repeating a dimension of " << d << " " << r
                       << " times overflows";
    split.append({1, d});
    expanded.append({r, d});
    out.push_back(tiled);
  }
  if (!checkedNumElements(out))
    return n.error() << "the tiled shape " << shapeToString(out)
                     << " has more elements than 64-bit sizes can count";
  Type elt = type.getElementType();
  Value v =
      n.buildTyped<ReshapeOp>(RankedTensorType::get(split, elt), n.input(0));
  v = n.buildTyped<ExpandOp>(RankedTensorType::get(expanded, elt), v);
  return n.setResults(
      n.buildTyped<ReshapeOp>(RankedTensorType::get(out, elt), v));
}

/// The most positions that Pad (reflect) gathers and ArgMax or ArgMin
/// number along an axis: their index constants are held in memory.
constexpr int64_t kMaxGatheredPad = int64_t(1) << 24;

/// Pad (opsets 13, 18's axes, 19's wrap): per padded axis, what goes
/// before and after is a constant block (constant), the first or last
/// position expanded (edge), the mirror image without the edge gathered
/// (reflect), or the other end sliced (wrap; pads up to the axis' size),
/// joined with Concat; negative pads crop with Slice.
LogicalResult onnx_import::convertPad(NodeContext &n) {
  std::string mode = n.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" &&
      mode != "wrap")
    return n.error() << "mode '" << mode << "' is not one of constant, "
                     << "edge, reflect, wrap";
  FailureOr<SmallVector<int64_t>> pads = n.constantInts(1, "pads");
  if (failed(pads))
    return failure();
  RankedTensorType type = n.inputType(0);
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes;
  if (n.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = n.constantInts(3, "axes");
    if (failed(a))
      return failure();
    for (int64_t axis : *a) {
      if (axis < -rank || axis >= rank)
        return n.error() << "axis " << axis << " is out of range for rank "
                         << rank;
      axes.push_back(axis < 0 ? axis + rank : axis);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  int64_t count = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads->size()) != 2 * count)
    return n.error() << "pads has " << pads->size() << " values, expected "
                     << 2 * count;
  Type elt = type.getElementType();
  Attribute fill;
  if (n.hasInput(2) && mode == "constant") {
    FailureOr<Attribute> v = n.constantScalar(2, "constant_value");
    if (failed(v))
      return failure();
    fill = *v;
  } else {
    fill = n.b.getZeroAttr(elt);
  }
  Value x = n.input(0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t axis = axes[k], before = (*pads)[k], after = (*pads)[k + count];
    Shape shape(cast<RankedTensorType>(x.getType()).getShape());
    int64_t size = shape[axis];
    // Crop first: negative pads remove positions, at most the axis' size.
    if (before < -size || after < -size)
      return n.error() << "pads crop axis " << axis << " of size " << size
                       << " by more than its size";
    if (before < 0 || after < 0) {
      int64_t start = std::max<int64_t>(-before, 0);
      int64_t end = size - std::max<int64_t>(-after, 0);
      if (end < start)
        return n.error() << "pads crop axis " << axis << " of size " << size
                         << " below zero";
      FailureOr<Value> s = n.build<SliceOp>(
          x, {n.named("starts", n.b.getDenseI64ArrayAttr({start})),
              n.named("ends", n.b.getDenseI64ArrayAttr({end})),
              n.named("axes", n.b.getDenseI64ArrayAttr({axis})),
              n.named("steps", n.b.getDenseI64ArrayAttr({1}))});
      if (failed(s))
        return failure();
      x = *s;
      size = end - start;
      shape[axis] = size;
      before = std::max<int64_t>(before, 0);
      after = std::max<int64_t>(after, 0);
    }
    if (!before && !after)
      continue;
    int64_t padded;
    if (llvm::AddOverflow(size, before, padded) ||
        llvm::AddOverflow(padded, after, padded))
      return n.error() << "padding axis " << axis << " of size " << size
                       << " by " << before << " and " << after << " overflows";
    Shape paddedShape = shape;
    paddedShape[axis] = padded;
    if (!checkedNumElements(paddedShape))
      return n.error() << "the padded shape " << shapeToString(paddedShape)
                       << " has more elements than 64-bit sizes can count";
    if (mode != "constant" && size == 0)
      return n.error() << "mode '" << mode << "' cannot pad axis " << axis
                       << " of size 0";
    if (mode == "reflect" && (before >= size || after >= size))
      return n.error() << "mode 'reflect' pads axis " << axis << " of size "
                       << size << " by more than " << size - 1;
    if (mode == "wrap" && (before > size || after > size))
      return n.error() << "mode 'wrap' pads axis " << axis << " of size "
                       << size << " by more than its size";
    // Positions [start, start + length) of x along the axis.
    auto slice = [&](int64_t start, int64_t length) {
      return n.build<SliceOp>(
          x, {n.named("starts", n.b.getDenseI64ArrayAttr({start})),
              n.named("ends", n.b.getDenseI64ArrayAttr({start + length})),
              n.named("axes", n.b.getDenseI64ArrayAttr({axis})),
              n.named("steps", n.b.getDenseI64ArrayAttr({1}))});
    };
    auto block = [&](int64_t length, bool atEnd) -> FailureOr<Value> {
      Shape blockShape = shape;
      blockShape[axis] = length;
      auto blockType = RankedTensorType::get(blockShape, elt);
      if (mode == "constant")
        return n.constant(DenseElementsAttr::get(blockType, fill));
      if (mode == "wrap") // the other end
        return slice(atEnd ? 0 : size - length, length);
      if (mode == "edge") { // the end position, expanded
        FailureOr<Value> end = slice(atEnd ? size - 1 : 0, 1);
        if (failed(end))
          return failure();
        return n.buildTyped<ExpandOp>(blockType, *end);
      }
      // reflect: the mirror image without the edge, gathered: before the
      // input positions length, ..., 1; after it size-2, size-3, ...
      if (length > kMaxGatheredPad)
        return n.error() << "mode 'reflect' pads axis " << axis << " by "
                         << length << ", more than " << kMaxGatheredPad
                         << " positions",
               failure();
      SmallVector<int64_t> positions;
      for (int64_t i = 0; i < length; ++i)
        positions.push_back(atEnd ? size - 2 - i : length - i);
      auto indexType = RankedTensorType::get({length}, n.b.getI64Type());
      Value indices =
          n.constant(DenseElementsAttr::get(indexType, ArrayRef(positions)));
      return n.build<GatherOp>({x, indices},
                               {n.named("axis", n.b.getI64IntegerAttr(axis))});
    };
    SmallVector<Value> parts;
    if (before) {
      FailureOr<Value> b = block(before, false);
      if (failed(b))
        return failure();
      parts.push_back(*b);
    }
    parts.push_back(x);
    if (after) {
      FailureOr<Value> a = block(after, true);
      if (failed(a))
        return failure();
      parts.push_back(*a);
    }
    FailureOr<Value> joined = n.build<ConcatOp>(
        parts, {n.named("axis", n.b.getI64IntegerAttr(axis))});
    if (failed(joined))
      return failure();
    x = *joined;
  }
  return n.setResults(x);
}

/// ArgMax and ArgMin: the first (or, with select_last_index, the last)
/// position along `axis` where the input equals its maximum (minimum):
/// positions where it does not are replaced by a value that loses the
/// reduction, and ReduceMax picks the winner (of the negated positions for
/// the first).
template <bool isMax>
LogicalResult onnx_import::convertArgExtreme(NodeContext &n) {
  RankedTensorType type = n.inputType(0);
  int64_t rank = type.getRank();
  int64_t axis = n.intAttr("axis", 0);
  if (axis < -rank || axis >= rank)
    return n.error() << "axis " << axis << " is out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  bool keepdims = n.intAttr("keepdims", 1);
  bool last = n.intAttr("select_last_index", 0);
  Value x = n.input(0);
  Type elt = type.getElementType();
  // Unsigned values (and bools) compare as i64, whose negation (for the
  // minimum) does not wrap.
  if (elt.isUnsignedInteger(64))
    return n.error() << "ArgMax and ArgMin of " << elt << " are not supported";
  if (elt.isInteger(1) || elt.isUnsignedInteger())
    x = n.buildTyped<CastOp>(
        RankedTensorType::get(type.getShape(), n.b.getI64Type()), x);
  auto reduce = [&](Value v) {
    return n.build<ReduceMaxOp>(
        v, {n.named("axes", n.b.getDenseI64ArrayAttr({axis})),
            n.named("keepdims", n.b.getBoolAttr(true))});
  };
  // The extreme: max(x), or -max(-x).
  FailureOr<Value> extreme = isMax ? FailureOr<Value>(x) : n.build<NegOp>(x);
  if (succeeded(extreme))
    extreme = reduce(*extreme);
  if (succeeded(extreme) && !isMax)
    extreme = n.build<NegOp>(*extreme);
  FailureOr<Value> hit = failed(extreme) ? FailureOr<Value>(failure())
                                         : n.build<EqualOp>({x, *extreme});
  // A NaN is the extreme (the reductions propagate it), as in NumPy.
  if (succeeded(hit) && isa<FloatType>(elt)) {
    FailureOr<Value> nan = n.build<IsNaNOp>(x);
    hit =
        failed(nan) ? FailureOr<Value>(failure()) : n.build<OrOp>({*hit, *nan});
  }
  if (failed(hit))
    return failure();
  // Positions along the axis, shaped to broadcast: (1, ..., d, ..., 1);
  // negated to select the first.
  int64_t size = type.getDimSize(axis);
  if (size > kMaxGatheredPad)
    return n.error() << "axis " << axis << " has " << size
                     << " positions, more than " << kMaxGatheredPad;
  SmallVector<int64_t> positions;
  for (int64_t i = 0; i < size; ++i)
    positions.push_back(last ? i : -i);
  SmallVector<int64_t> posShape(rank, 1);
  posShape[axis] = size;
  Value pos = n.constant(DenseElementsAttr::get(
      RankedTensorType::get(posShape, n.b.getI64Type()), ArrayRef(positions)));
  Value loser = scalar(n, n.b.getI64Type(), last ? -1.0 : -double(size));
  FailureOr<Value> r = n.build<WhereOp>({*hit, pos, loser});
  if (succeeded(r))
    r = reduce(*r);
  if (succeeded(r) && !last)
    r = n.build<NegOp>(*r);
  if (failed(r))
    return failure();
  if (!keepdims) {
    SmallVector<int64_t> outShape(type.getShape());
    outShape.erase(outShape.begin() + axis);
    r = n.buildTyped<ReshapeOp>(
        RankedTensorType::get(outShape, n.b.getI64Type()), *r);
  }
  return n.setResults(*r);
}

template LogicalResult onnx_import::convertArgExtreme<true>(NodeContext &);
template LogicalResult onnx_import::convertArgExtreme<false>(NodeContext &);

//===----------------------------------------------------------------------===//
// onnxruntime's fused ops
//===----------------------------------------------------------------------===//

/// SkipLayerNormalization and SkipSimplifiedLayerNormalization
/// (com.microsoft): s = input + skip (+ bias), then LayerNorm(s, gamma,
/// beta) or RMSNorm(s, gamma) over the last axis; the optional outputs are
/// the mean (LayerNorm only), 1/std, and s.
template <bool simplified>
LogicalResult onnx_import::convertSkipNorm(NodeContext &n) {
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

template LogicalResult onnx_import::convertSkipNorm<true>(NodeContext &);
template LogicalResult onnx_import::convertSkipNorm<false>(NodeContext &);

/// FastGelu (the tanh approximation), BiasGelu and Gelu (erf) of
/// com.microsoft: Gelu of the input plus the optional bias.
template <GeluApproximation approximation>
LogicalResult onnx_import::convertFusedGelu(NodeContext &n) {
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

template LogicalResult
onnx_import::convertFusedGelu<GeluApproximation::Tanh>(NodeContext &);
template LogicalResult
onnx_import::convertFusedGelu<GeluApproximation::None>(NodeContext &);
