//===- OnnxMathOps.cpp - element-wise math converters ---------------------===//
//
// The element-wise arithmetic of ONNX: the unary ops and activations that
// are memfit ops of their own (Neg, Exp, ..., Relu, Gelu), the broadcasting
// binary ops, the variadic Max, Min, Sum and Mean as chains of the binary
// op, and Trilu. Abs, Sign, Clip, Softplus, HardSigmoid, HardSwish, Mish and
// Mod have no memfit op: they are written as chains of the ops memfit has,
// and get shape inference, folding, kernels, fusion and gradients from
// those.
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// Gelu (opset 20): exact, or the tanh approximation by 'approximate'.
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

/// Max, Min and Sum: the chain of their binary op.
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
  Value count = n.scalar(elt, n.numInputs());
  FailureOr<Value> r = n.build<DivOp>({*sum, count});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Trilu: the upper (or lower) triangle of the last two dimensions from
/// diagonal k on, zeros elsewhere.
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

//===----------------------------------------------------------------------===//
// Written as other memfit ops
//===----------------------------------------------------------------------===//

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
    e = n.build<AddOp>({*e, n.scalar(elt, 1.0)});
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

/// HardSigmoid: max(0, min(1, alpha * x + beta)).
FailureOr<Value> hardSigmoidOf(NodeContext &n, Value x, double alpha,
                               double beta) {
  Type elt = eltOf(x);
  FailureOr<Value> r = n.build<MulOp>({x, n.scalar(elt, alpha)});
  if (succeeded(r))
    r = n.build<AddOp>({*r, n.scalar(elt, beta)});
  if (failed(r))
    return failure();
  return clipOf(n, *r, n.scalar(elt, 0.0), n.scalar(elt, 1.0));
}

/// The bool tensor `b` as 0 and 1 of element type `elt`.
FailureOr<Value> asNumber(NodeContext &n, Value b, Type elt) {
  return n.buildTyped<CastOp>(RankedTensorType::get(shapeOf(b), elt), b);
}

/// Abs: |x|.
LogicalResult convertAbs(NodeContext &n) {
  FailureOr<Value> r = absOf(n, n.input(0));
  return failed(r) ? failure() : n.setResults(*r);
}

/// Sign: (x > 0) - (x < 0) in x's type; NaN stays NaN.
LogicalResult convertSign(NodeContext &n) {
  Value x = n.input(0);
  Type elt = eltOf(x);
  Value zero = n.scalar(elt, 0.0);
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
LogicalResult convertClip(NodeContext &n) {
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

/// Softplus: log(1 + exp(x)).
LogicalResult convertSoftplus(NodeContext &n) {
  FailureOr<Value> r = softplusOf(n, n.input(0));
  return failed(r) ? failure() : n.setResults(*r);
}

/// HardSigmoid with the node's alpha (0.2) and beta (0.5).
LogicalResult convertHardSigmoid(NodeContext &n) {
  FailureOr<Value> r = hardSigmoidOf(n, n.input(0), n.floatAttr("alpha", 0.2f),
                                     n.floatAttr("beta", 0.5f));
  return failed(r) ? failure() : n.setResults(*r);
}

/// HardSwish: x * HardSigmoid(x) with alpha 1/6, beta 1/2.
LogicalResult convertHardSwish(NodeContext &n) {
  FailureOr<Value> s = hardSigmoidOf(n, n.input(0), 1.0 / 6.0, 0.5);
  FailureOr<Value> r = failed(s) ? FailureOr<Value>(failure())
                                 : n.build<MulOp>({n.input(0), *s});
  return failed(r) ? failure() : n.setResults(*r);
}

/// Mish: x * tanh(softplus(x)).
LogicalResult convertMish(NodeContext &n) {
  FailureOr<Value> s = softplusOf(n, n.input(0));
  if (succeeded(s))
    s = n.build<TanhOp>(*s);
  FailureOr<Value> r = failed(s) ? FailureOr<Value>(failure())
                                 : n.build<MulOp>({n.input(0), *s});
  return failed(r) ? failure() : n.setResults(*r);
}

/// An integer Mod's result `r` where the divisor `b` is not zero, and 0
/// where it is (NumPy's x % 0; memfit.div gives x / 0 = 0, so a - (a/b)*b
/// alone would be a).
FailureOr<Value> zeroWhereDivisorIsZero(NodeContext &n, Value b, Value r) {
  Value zero = n.scalar(eltOf(b), 0.0);
  FailureOr<Value> byZero = n.build<EqualOp>({b, zero});
  if (failed(byZero))
    return failure();
  return n.build<WhereOp>({*byZero, zero, r});
}

/// Mod: the remainder of the truncating division, a - (a/b)*b on integers
/// and memfit.fmod on floats (fmod = 1, C's % and fmod), moved by b where
/// its sign differs from b's (fmod = 0, Python's %). An integer Mod by
/// zero is 0, as NumPy's.
LogicalResult convertMod(NodeContext &n) {
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
  bool integer = !isa<FloatType>(elt);
  if (succeeded(r) && integer && (fmod || elt.isUnsignedInteger()))
    r = zeroWhereDivisorIsZero(n, b, *r);
  if (failed(r) || fmod || elt.isUnsignedInteger())
    return failed(r) ? failure() : n.setResults(*r);
  Value zero = n.scalar(elt, 0.0);
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
  if (succeeded(result) && !isa<FloatType>(elt))
    result = zeroWhereDivisorIsZero(n, b, *result);
  return failed(result) ? failure() : n.setResults(*result);
}

} // namespace

void onnx_import::populateMathConverters(OpTable &table) {
  table.onOp("Neg", 13, 1, 1, convertUnary<NegOp>);
  table.onOp("Exp", 13, 1, 1, convertUnary<ExpOp>);
  table.onOp("Log", 13, 1, 1, convertUnary<LogOp>);
  table.onOp("Sqrt", 13, 1, 1, convertUnary<SqrtOp>);
  table.onOp("Reciprocal", 13, 1, 1, convertUnary<ReciprocalOp>);
  table.onOp("Erf", 13, 1, 1, convertUnary<ErfOp>);
  table.onOp("Tanh", 13, 1, 1, convertUnary<TanhOp>);
  table.onOp("Sigmoid", 13, 1, 1, convertUnary<SigmoidOp>);
  table.onOp("Relu", 13, 1, 1, convertUnary<ReluOp>);
  table.onOp("Sin", 13, 1, 1, convertUnary<SinOp>);
  table.onOp("Cos", 13, 1, 1, convertUnary<CosOp>);
  table.onOp("Gelu", 20, 1, 1, convertGelu);
  table.onOp("Add", 13, 2, 2, convertBinary<AddOp>);
  table.onOp("Sub", 13, 2, 2, convertBinary<SubOp>);
  table.onOp("Mul", 13, 2, 2, convertBinary<MulOp>);
  table.onOp("Div", 13, 2, 2, convertBinary<DivOp>);
  table.onOp("Pow", 13, 2, 2, convertBinary<PowOp>);
  table.onOp("Max", 13, 1, kVariadic, convertVariadic<MaxOp>);
  table.onOp("Min", 13, 1, kVariadic, convertVariadic<MinOp>);
  table.onOp("Sum", 13, 1, kVariadic, convertVariadic<AddOp>);
  table.onOp("Mean", 13, 1, kVariadic, convertMean);
  table.onOp("Trilu", 14, 1, 2, convertTrilu);
  // Written as other memfit ops.
  table.onOp("Abs", 13, 1, 1, convertAbs);
  table.onOp("Sign", 13, 1, 1, convertSign);
  table.onOp("Clip", 13, 1, 3, convertClip);
  table.onOp("Softplus", 13, 1, 1, convertSoftplus);
  table.onOp("HardSigmoid", 13, 1, 1, convertHardSigmoid);
  table.onOp("HardSwish", 14, 1, 1, convertHardSwish);
  table.onOp("Mish", 18, 1, 1, convertMish);
  table.onOp("Mod", 13, 2, 2, convertMod);
}
