//===- ElementwiseOps.cpp - element-wise ops ------------------------------===//
//
// Inference, verifiers and folders of the element-wise ops: the unary ops,
// the predicates, dropout, cast (with ONNX Cast's conversion of constant
// elements), trilu, and the broadcasting binary ops and where, and pow's
// precision requirement.
//
// The ops are defined in include/memfit/Dialect/Ops/ElementwiseOps.td.
//
//===----------------------------------------------------------------------===//

#include "ConstantFold.h"
#include "OpHelpers.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/APSInt.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::constfold;

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  Type elt = getType().getElementType();
  return foldElementwise({adaptor.getInput()}, getType(),
                         [&](ArrayRef<Attribute> a) -> Attribute {
    if (auto x = dyn_cast<IntegerAttr>(a[0]); x && x.getType() == elt)
      return IntegerAttr::get(elt, -x.getValue());
    if (auto x = dyn_cast<FloatAttr>(a[0]); x && x.getType() == elt)
      return FloatAttr::get(elt, neg(x.getValue()));
    return {};
  });
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  Builder b(getContext());
  return foldElementwise({adaptor.getInput()}, getType(),
                         [&](ArrayRef<Attribute> a) -> Attribute {
    auto x = dyn_cast<IntegerAttr>(a[0]);
    return x && x.getType().isInteger(1)
               ? b.getBoolAttr(!x.getValue().getBoolValue())
               : Attribute();
  });
}

LogicalResult IsNaNOp::inferReturnTypes(MLIRContext *ctx, OptLoc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return pushTensor(types, shapeOf(adaptor.getInput()),
                    IntegerType::get(ctx, 1));
}

OpFoldResult IsNaNOp::fold(FoldAdaptor adaptor) {
  Builder b(getContext());
  return foldElementwise(
      {adaptor.getInput()}, getType(), [&](ArrayRef<Attribute> a) -> Attribute {
        auto x = dyn_cast<FloatAttr>(a[0]);
        return x ? b.getBoolAttr(x.getValue().isNaN()) : Attribute();
      });
}

LogicalResult IsInfOp::inferReturnTypes(MLIRContext *ctx, OptLoc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return pushTensor(types, shapeOf(adaptor.getInput()),
                    IntegerType::get(ctx, 1));
}

OpFoldResult IsInfOp::fold(FoldAdaptor adaptor) {
  Builder b(getContext());
  bool negative = getDetectNegative(), positive = getDetectPositive();
  return foldElementwise(
      {adaptor.getInput()}, getType(), [&](ArrayRef<Attribute> a) -> Attribute {
        auto x = dyn_cast<FloatAttr>(a[0]);
        if (!x)
          return {};
        const APFloat &v = x.getValue();
        return b.getBoolAttr(v.isInfinity() &&
                             (v.isNegative() ? negative : positive));
      });
}

/// Dropout and its mask: the ratio is a probability below 1.
template <typename OpTy> static LogicalResult verifyDropoutRatio(OpTy op) {
  float r = op.getRatio().convertToFloat();
  if (!(r >= 0.0f && r < 1.0f))
    return op.emitOpError("ratio must be in [0, 1), got ") << r;
  return success();
}

LogicalResult DropoutOp::verify() { return verifyDropoutRatio(*this); }

LogicalResult DropoutMaskOp::verify() { return verifyDropoutRatio(*this); }

/// Converts one constant element to `to` with ONNX Cast semantics; null
/// (no fold) for an element that is not of type `from` or a type that is
/// neither integer nor float.
static Attribute castElement(Attribute a, Type from, Type to) {
  auto typed = dyn_cast<TypedAttr>(a);
  if (!typed || typed.getType() != from ||
      !(isa<IntegerType>(to) || isa<FloatType>(to)))
    return {};
  bool toBool = to.isInteger(1);
  if (auto i = dyn_cast<IntegerAttr>(a)) {
    const APInt &v = i.getValue();
    bool srcSigned = !from.isUnsignedInteger() && !from.isInteger(1);
    if (toBool)
      return IntegerAttr::get(to, APInt(1, !v.isZero()));
    if (auto intTo = dyn_cast<IntegerType>(to))
      return IntegerAttr::get(to, srcSigned ? v.sextOrTrunc(intTo.getWidth())
                                            : v.zextOrTrunc(intTo.getWidth()));
    APFloat f(cast<FloatType>(to).getFloatSemantics());
    (void)f.convertFromAPInt(v, srcSigned, APFloat::rmNearestTiesToEven);
    return FloatAttr::get(to, f);
  }
  auto f = dyn_cast<FloatAttr>(a);
  if (!f)
    return {};
  APFloat v = f.getValue();
  if (toBool)
    return IntegerAttr::get(to, APInt(1, !v.isZero()));
  if (auto intTo = dyn_cast<IntegerType>(to)) {
    if (v.isNaN() || v.isInfinity())
      return {};
    APSInt r(intTo.getWidth(), intTo.isUnsigned());
    bool exact;
    (void)v.convertToInteger(r, APFloat::rmTowardZero, &exact);
    return IntegerAttr::get(to, r);
  }
  bool losesInfo;
  (void)v.convert(cast<FloatType>(to).getFloatSemantics(),
                  APFloat::rmNearestTiesToEven, &losesInfo);
  return FloatAttr::get(to, v);
}

/// Whether every value of float type `narrow` is a value of `wide`: f16
/// and bf16 in f32 and f64, f32 in f64.
static bool floatHoldsExactly(Type wide, Type narrow) {
  auto w = dyn_cast<FloatType>(wide), n = dyn_cast<FloatType>(narrow);
  if (!w || !n)
    return false;
  if (w == n)
    return true;
  if (n.isF16() || n.isBF16())
    return w.isF32() || w.isF64();
  return n.isF32() && w.isF64();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  Type from = eltOf(getInput()), to = getType().getElementType();
  // cast(cast(x : A -> B) : B -> C) is cast(x : A -> C) when B holds A
  // exactly: the first cast changes no value.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Value source = inner.getInput();
    if (floatHoldsExactly(from, eltOf(source))) {
      if (source.getType() == getType())
        return source;
      getInputMutable().assign(source);
      return getResult();
    }
  }
  // Casts to and from the 8- and 4-bit floats and the 4- and 2-bit
  // integers are left to the kernel, whose rounding and saturation are
  // ONNX's (APFloat's conversions do not saturate).
  auto isNarrow = [](Type t) {
    return (isa<FloatType>(t) && cast<FloatType>(t).getWidth() < 16) ||
           (t.isInteger() && !t.isInteger(1) && t.getIntOrFloatBitWidth() < 8);
  };
  if (isNarrow(from) || isNarrow(to))
    return {};
  return foldElementwise({adaptor.getInput()}, getType(),
                         [&](ArrayRef<Attribute> a) {
                           return castElement(a[0], from, to);
                         });
}

LogicalResult TriluOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("input must have rank >= 2, got ") << getType();
  return success();
}

OpFoldResult TriluOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  DenseElementsAttr in = getDense(adaptor.getInput(), type.getElementType());
  if (!in || type.getNumElements() > kMaxFoldElements ||
      !type.getElementType().isIntOrFloat() || type.getRank() < 2)
    return {};
  SmallVector<Attribute> values(in.getValues<Attribute>());
  Attribute zero = Builder(getContext()).getZeroAttr(type.getElementType());
  int64_t rows = type.getDimSize(type.getRank() - 2);
  int64_t cols = type.getDimSize(type.getRank() - 1);
  int64_t k = getK();
  for (auto [linear, v] : llvm::enumerate(values)) {
    int64_t j = linear % cols, i = (linear / cols) % rows;
    bool keep = getUpper() ? j - i >= k : j - i <= k;
    if (!keep)
      v = zero;
  }
  return DenseElementsAttr::get(type, values);
}

//===----------------------------------------------------------------------===//
// Ops with broadcasting
//===----------------------------------------------------------------------===//

/// Infers a binary broadcasting op's type; `resultElt` null means the lhs
/// element type, and `sameElt` requires equal operand element types.
static LogicalResult inferBinary(OptLoc loc, StringRef opName, Value lhs,
                                 Value rhs, Type resultElt, bool sameElt,
                                 SmallVectorImpl<Type> &types) {
  if (sameElt && eltOf(lhs) != eltOf(rhs))
    return emitOptionalError(loc, opName, " operands have different element "
                             "types ", eltOf(lhs), " and ", eltOf(rhs));
  Shape shape;
  if (failed(inferBroadcastShape({shapeOf(lhs), shapeOf(rhs)}, shape, loc)))
    return failure();
  return pushTensor(types, shape, resultElt ? resultElt : eltOf(lhs));
}

#define MEMFIT_BINARY_INFER(OP, NAME, RESULT_ELT, SAME_ELT)                    \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx, OptLoc loc,             \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferBinary(loc, NAME, adaptor.getLhs(), adaptor.getRhs(),          \
                       RESULT_ELT, SAME_ELT, types);                           \
  }
MEMFIT_BINARY_INFER(AddOp, "add", Type(), true)
MEMFIT_BINARY_INFER(SubOp, "sub", Type(), true)
MEMFIT_BINARY_INFER(MulOp, "mul", Type(), true)
MEMFIT_BINARY_INFER(DivOp, "div", Type(), true)
MEMFIT_BINARY_INFER(PowOp, "pow", Type(), false)
MEMFIT_BINARY_INFER(FmodOp, "fmod", Type(), true)
MEMFIT_BINARY_INFER(EqualOp, "equal", IntegerType::get(ctx, 1), true)
MEMFIT_BINARY_INFER(LessOp, "less", IntegerType::get(ctx, 1), true)
MEMFIT_BINARY_INFER(GreaterOp, "greater", IntegerType::get(ctx, 1), true)
MEMFIT_BINARY_INFER(MaxOp, "max", Type(), true)
MEMFIT_BINARY_INFER(MinOp, "min", Type(), true)
MEMFIT_BINARY_INFER(AndOp, "and", IntegerType::get(ctx, 1), true)
MEMFIT_BINARY_INFER(OrOp, "or", IntegerType::get(ctx, 1), true)
MEMFIT_BINARY_INFER(XorOp, "xor", IntegerType::get(ctx, 1), true)
#undef MEMFIT_BINARY_INFER

using IntResult = std::optional<APInt>;

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b, bool) -> IntResult { return a + b; },
      [](APFloat a, const APFloat &b) {
        a.add(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b, bool) -> IntResult { return a - b; },
      [](APFloat a, const APFloat &b) {
        a.subtract(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b, bool) -> IntResult { return a * b; },
      [](APFloat a, const APFloat &b) {
        a.multiply(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b, bool isUnsigned) -> IntResult {
        // As the kernels' memfit_idiv: x / 0 is 0, and the lowest signed
        // value divided by -1 wraps to itself (APInt::sdiv wraps).
        if (b.isZero())
          return APInt::getZero(a.getBitWidth());
        return isUnsigned ? a.udiv(b) : a.sdiv(b);
      },
      [](APFloat a, const APFloat &b) {
        a.divide(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult FmodOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &, const APInt &, bool) -> IntResult {
        return std::nullopt;
      },
      [](APFloat a, const APFloat &b) {
        a.mod(b); // the remainder with a's sign, exact: C's fmod
        return a;
      });
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  Type elt = getType().getElementType();
  return foldElementwise(adaptor.getOperands(), getType(),
                         [&](ArrayRef<Attribute> a) -> Attribute {
    // A float base of the result's type; integer powers are left to the
    // kernel.
    auto base = dyn_cast<FloatAttr>(a[0]);
    if (!base || base.getType() != elt)
      return {};
    double e;
    if (auto f = dyn_cast<FloatAttr>(a[1]))
      e = f.getValueAsDouble();
    else if (auto i = dyn_cast<IntegerAttr>(a[1]))
      e = static_cast<double>(i.getValue().getSExtValue());
    else
      return {};
    return FloatAttr::get(elt, std::pow(base.getValueAsDouble(), e));
  });
}

Precision PowOp::getPrecision() {
  DenseElementsAttr exponent;
  if (!matchPattern(getRhs(), m_Constant(&exponent)) || !exponent.isSplat())
    return Precision::Fp32;
  Attribute value = exponent.getSplatValue<Attribute>();
  double n = -1;
  if (auto f = dyn_cast<FloatAttr>(value))
    n = f.getValueAsDouble();
  else if (auto i = dyn_cast<IntegerAttr>(value))
    n = static_cast<double>(i.getValue().getSExtValue());
  if (n == 1)
    return Precision::Low;
  return (n == 2 || n == 3 || n == 4) ? Precision::LowWideRange
                                      : Precision::Fp32;
}

OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      adaptor.getOperands(), getType(), eltOf(getLhs()),
      [](const APInt &a, const APInt &b, bool) { return a == b; },
      [](const APFloat &a, const APFloat &b) {
        return a.compare(b) == APFloat::cmpEqual;
      });
}

OpFoldResult LessOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      adaptor.getOperands(), getType(), eltOf(getLhs()),
      [](const APInt &a, const APInt &b, bool u) {
        return u ? a.ult(b) : a.slt(b);
      },
      [](const APFloat &a, const APFloat &b) {
        return a.compare(b) == APFloat::cmpLessThan;
      });
}

OpFoldResult GreaterOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      adaptor.getOperands(), getType(), eltOf(getLhs()),
      [](const APInt &a, const APInt &b, bool u) {
        return u ? a.ugt(b) : a.sgt(b);
      },
      [](const APFloat &a, const APFloat &b) {
        return a.compare(b) == APFloat::cmpGreaterThan;
      });
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b, bool u) -> IntResult {
        return (u ? a.ugt(b) : a.sgt(b)) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) { return maximum(a, b); });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](const APInt &a, const APInt &b, bool u) -> IntResult {
        return (u ? a.ult(b) : a.slt(b)) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) { return minimum(a, b); });
}

/// Folds a logical op of two boolean tensors.
static OpFoldResult foldLogical(ArrayRef<Attribute> operands, Type type,
                                function_ref<bool(bool, bool)> fn) {
  Builder b(type.getContext());
  return foldElementwise(
      operands, cast<RankedTensorType>(type),
      [&](ArrayRef<Attribute> a) -> Attribute {
        auto x = dyn_cast<IntegerAttr>(a[0]);
        auto y = dyn_cast<IntegerAttr>(a[1]);
        if (!x || !y)
          return {};
        return b.getBoolAttr(
            fn(x.getValue().getBoolValue(), y.getValue().getBoolValue()));
      });
}

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldLogical(adaptor.getOperands(), getType(),
                     [](bool x, bool y) { return x && y; });
}

OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldLogical(adaptor.getOperands(), getType(),
                     [](bool x, bool y) { return x || y; });
}

OpFoldResult XorOp::fold(FoldAdaptor adaptor) {
  return foldLogical(adaptor.getOperands(), getType(),
                     [](bool x, bool y) { return x != y; });
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
  if (eltOf(lhs) != eltOf(rhs))
    return emitOptionalError(loc, "where branches have different element "
                             "types ", eltOf(lhs), " and ", eltOf(rhs));
  Shape shape;
  if (failed(inferBroadcastShape(
          {shapeOf(adaptor.getCondition()), shapeOf(lhs), shapeOf(rhs)}, shape,
          loc)))
    return failure();
  return pushTensor(types, shape, eltOf(lhs));
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  Type elt = getType().getElementType();
  return foldElementwise(adaptor.getOperands(), getType(),
                         [&](ArrayRef<Attribute> a) -> Attribute {
    // A boolean condition, branches of the result's element type.
    auto cond = dyn_cast<IntegerAttr>(a[0]);
    auto pick = dyn_cast<TypedAttr>(a[1]), other = dyn_cast<TypedAttr>(a[2]);
    if (!cond || !cond.getType().isInteger(1) || !pick || !other ||
        pick.getType() != elt || other.getType() != elt)
      return {};
    return cond.getValue().getBoolValue() ? a[1] : a[2];
  });
}
