//===- MemfitOps.cpp - memfit op inference, verifiers, folders --------------===//

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Quantization.h"
#include "memfit/Dialect/ShapeInference.h"

#include "ConstantFold.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/APSInt.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::constfold;

#include "memfit/Dialect/MemfitEnums.cpp.inc"
#include "memfit/Dialect/MemfitInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "memfit/Dialect/MemfitOps.cpp.inc"

bool mlir::memfit::kernelTakesLiterals(Operation *op) {
  auto opClass = cast<OpClassInterface>(op).getOpClass();
  return !op->hasTrait<OpTrait::memfit::KernelReadsBuffers>() &&
         (opClass == OpClass::ElementWise || opClass == OpClass::DataMovement);
}

bool mlir::memfit::isIndexMapping(Operation *op) {
  return op->hasTrait<OpTrait::memfit::IndexMapping>();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static LogicalResult pushTensor(SmallVectorImpl<Type> &types,
                                ArrayRef<int64_t> shape, Type elt) {
  types.push_back(RankedTensorType::get(shape, elt));
  return success();
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

LogicalResult ParameterOp::verify() {
  auto type = dyn_cast<RankedTensorType>(getValue().getType());
  if (!type || !type.hasStaticShape())
    return emitOpError("value must be a statically shaped tensor, got ")
           << getValue().getType();
  return success();
}

/// A read or write of a parameter: `name` must be a memfit.parameter of
/// type `type` (the op's `what`).
static LogicalResult verifyParameterUse(Operation *op, FlatSymbolRefAttr name,
                                        Type type, StringRef what,
                                        SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<ParameterOp>(op, name);
  if (!param)
    return op->emitOpError("'")
           << name.getValue() << "' does not name a memfit.parameter";
  if (param.getType() != type)
    return op->emitOpError() << what << " type " << type
                             << " differs from parameter type "
                             << param.getType();
  return success();
}

LogicalResult
LoadParameterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParameterUse(*this, getNameAttr(), getType(), "result",
                            symbolTable);
}

LogicalResult
AssignOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParameterUse(*this, getNameAttr(), getValue().getType(),
                            "value", symbolTable);
}

LogicalResult GatherGradOp::verify() {
  auto grad = cast<RankedTensorType>(getGrad().getType());
  auto indices = cast<RankedTensorType>(getIndices().getType());
  RankedTensorType result = getType();
  if (grad.getElementType() != result.getElementType())
    return emitOpError("gradient and result element types differ");
  int64_t rank = result.getRank();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ") << axis << " out of range for rank " << rank;
  // grad is result.shape[:axis] + indices.shape + result.shape[axis+1:].
  SmallVector<int64_t> expected(result.getShape().take_front(axis));
  llvm::append_range(expected, indices.getShape());
  llvm::append_range(expected, result.getShape().drop_front(axis + 1));
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("gradient shape ") << grad
           << " does not match gather of the result along axis " << axis
           << " by indices " << indices;
  if (Value init = getInit(); init && init.getType() != result)
    return emitOpError("accumulates into ")
           << init.getType() << " but its result is " << result;
  return success();
}

ElementsAttr mlir::memfit::elementsFromBytes(RankedTensorType type,
                                             ArrayRef<char> bytes,
                                             StringRef name,
                                             int64_t maxInline) {
  if (type.getNumElements() <= maxInline)
    return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, bytes));
  AsmResourceBlob blob =
      HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(uint64_t));
  return DenseResourceElementsAttr::get(type, name, std::move(blob));
}

ArrayRef<char> mlir::memfit::storedBytes(ElementsAttr elements) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(elements)) {
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
    return {};
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(elements))
    if (!dense.isSplat())
      return dense.getRawData();
  return {};
}

std::optional<double> mlir::memfit::splatValue(Value value) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  Attribute element = attr.getSplatValue<Attribute>();
  if (auto f = dyn_cast<FloatAttr>(element))
    return f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(element))
    return static_cast<double>(i.getValue().getSExtValue());
  return std::nullopt;
}

LogicalResult QuantizeOp::verify() {
  return verifyQuantized([&] { return emitOpError(); }, getScheme(),
                         getBlockSize(),
                         cast<RankedTensorType>(getInput().getType()),
                         cast<RankedTensorType>(getCodes().getType()),
                         cast<RankedTensorType>(getAbsmax().getType()));
}

LogicalResult DequantizeOp::verify() {
  return verifyQuantized([&] { return emitOpError(); }, getScheme(),
                         getBlockSize(), cast<RankedTensorType>(getType()),
                         cast<RankedTensorType>(getCodes().getType()),
                         cast<RankedTensorType>(getAbsmax().getType()));
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  auto scores = cast<RankedTensorType>(getScores().getType());
  auto labels = cast<RankedTensorType>(getLabels().getType());
  auto dloss = cast<RankedTensorType>(getDloss().getType());
  if (scores.getRank() != 2 || labels.getRank() != 1 ||
      labels.getDimSize(0) != scores.getDimSize(0))
    return emitOpError("expects scores [N, C] and labels [N], got ")
           << scores << " and " << labels;
  if (getType() != scores)
    return emitOpError("result type must equal the scores' type");
  if (dloss.getElementType() != scores.getElementType())
    return emitOpError("loss gradient element type differs from the scores'");
  bool perRow = getReduction() == LossReduction::None;
  if (perRow ? dloss.getShape() != labels.getShape() : dloss.getRank() != 0)
    return emitOpError("loss gradient must be ")
           << (perRow ? "shaped like the labels" : "a scalar") << ", got "
           << dloss;
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult RangeOp::verify() {
  RankedTensorType type = getType();
  if (type.getRank() != 1)
    return emitOpError("result must be 1-D, got ") << type;
  Type elt = type.getElementType();
  if (getStart().getType() != elt || getDelta().getType() != elt)
    return emitOpError("start and delta must be of the element type ") << elt;
  if (auto d = dyn_cast<IntegerAttr>(getDelta()); d && d.getValue().isZero())
    return emitOpError("delta must not be zero");
  if (auto d = dyn_cast<FloatAttr>(getDelta()); d && d.getValue().isZero())
    return emitOpError("delta must not be zero");
  return success();
}

OpFoldResult RangeOp::fold(FoldAdaptor) {
  RankedTensorType type = getType();
  int64_t n = type.getNumElements();
  if (n > kMaxFoldElements)
    return {};
  SmallVector<Attribute> values;
  Type elt = type.getElementType();
  for (int64_t i = 0; i < n; ++i) {
    if (auto s = dyn_cast<IntegerAttr>(getStart())) {
      APInt v = s.getValue() + cast<IntegerAttr>(getDelta()).getValue() *
                                   APInt(s.getValue().getBitWidth(), i, true);
      values.push_back(IntegerAttr::get(elt, v));
    } else {
      double start = cast<FloatAttr>(getStart()).getValueAsDouble();
      double delta = cast<FloatAttr>(getDelta()).getValueAsDouble();
      values.push_back(
          FloatAttr::get(elt, start + delta * static_cast<double>(i)));
    }
  }
  return DenseElementsAttr::get(type, values);
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  Type elt = getType().getElementType();
  return foldElementwise({adaptor.getInput()}, getType(),
                         [&](ArrayRef<Attribute> a) -> Attribute {
    if (auto x = dyn_cast<IntegerAttr>(a[0]))
      return IntegerAttr::get(elt, -x.getValue());
    return FloatAttr::get(elt, neg(cast<FloatAttr>(a[0]).getValue()));
  });
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  Builder b(getContext());
  return foldElementwise({adaptor.getInput()}, getType(),
                         [&](ArrayRef<Attribute> a) -> Attribute {
    return b.getBoolAttr(!cast<IntegerAttr>(a[0]).getValue().getBoolValue());
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

template <typename OpTy> static LogicalResult verifyDropoutRatio(OpTy op) {
  float r = op.getRatio().convertToFloat();
  if (!(r >= 0.0f && r < 1.0f))
    return op.emitOpError("ratio must be in [0, 1), got ") << r;
  return success();
}

LogicalResult DropoutOp::verify() { return verifyDropoutRatio(*this); }

LogicalResult DropoutMaskOp::verify() { return verifyDropoutRatio(*this); }

/// Converts one constant element to `to` with ONNX Cast semantics.
static Attribute castElement(Attribute a, Type from, Type to) {
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
  APFloat v = cast<FloatAttr>(a).getValue();
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

Precision mlir::memfit::defaultPrecision(OpClass opClass) {
  switch (opClass) {
  case OpClass::Contraction:
  case OpClass::ElementWise:
  case OpClass::Normalization:
    return Precision::Low;
  case OpClass::Reduction:
  case OpClass::Loss:
  case OpClass::Quantization:
    return Precision::Fp32;
  case OpClass::DataMovement:
  case OpClass::Constant:
    return Precision::Follow;
  }
  llvm_unreachable("unknown op class");
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
  DenseElementsAttr in = getDense(adaptor.getInput());
  RankedTensorType type = getType();
  if (!in || type.getNumElements() > kMaxFoldElements)
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
// Broadcasting element-wise ops
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
        if (b.isZero())
          return std::nullopt;
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
    auto base = dyn_cast<FloatAttr>(a[0]);
    if (!base)
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
  return foldElementwise(adaptor.getOperands(), getType(),
                         [](ArrayRef<Attribute> a) -> Attribute {
    return cast<IntegerAttr>(a[0]).getValue().getBoolValue() ? a[1] : a[2];
  });
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
  if (eltOf(lhs) != eltOf(rhs))
    return emitOptionalError(loc, "matmul operands have different element "
                             "types ", eltOf(lhs), " and ", eltOf(rhs));
  // A transposed operand is read with its last two dimensions swapped.
  auto operand = [&](Value v, bool transposed) -> FailureOr<Shape> {
    Shape s(shapeOf(v));
    if (!transposed)
      return s;
    if (s.size() < 2)
      return emitOptionalError(loc,
                               "a transposed matmul operand needs rank "
                               ">= 2, got ",
                               shapeToString(s));
    std::swap(s[s.size() - 2], s[s.size() - 1]);
    return s;
  };
  // (The flags are absent, not false, while an op is being built.)
  auto flag = [](BoolAttr attr) { return attr && attr.getValue(); };
  FailureOr<Shape> a = operand(lhs, flag(adaptor.getTransAAttr()));
  FailureOr<Shape> b = operand(rhs, flag(adaptor.getTransBAttr()));
  if (failed(a) || failed(b))
    return failure();
  Shape shape;
  if (failed(inferMatMulShape(*a, *b, shape, loc)))
    return failure();
  if (DenseI64ArrayAttr permAttr = adaptor.getResultPermAttr()) {
    ArrayRef<int64_t> perm = permAttr.asArrayRef();
    int64_t rank = shape.size();
    SmallVector<bool> seen(rank, false);
    bool valid = static_cast<int64_t>(perm.size()) == rank;
    for (int64_t d : perm) {
      valid = valid && d >= 0 && d < rank && !seen[d];
      if (valid)
        seen[d] = true;
    }
    if (!valid || a->size() < 2 || b->size() < 2 || perm.back() != rank - 1)
      return emitOptionalError(
          loc, "result_perm must permute the ", rank,
          " dimensions of a product of operands of rank 2 or more and keep "
          "the last one last, got [",
          perm, "]");
    Shape permuted;
    for (int64_t d : perm)
      permuted.push_back(shape[d]);
    shape = std::move(permuted);
  }
  return pushTensor(types, shape, eltOf(lhs));
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  Type elt = eltOf(adaptor.getA());
  std::optional<ArrayRef<int64_t>> c;
  if (Value bias = adaptor.getC())
    c = shapeOf(bias);
  for (Value v : adaptor.getOperands())
    if (eltOf(v) != elt)
      return emitOptionalError(loc, "gemm operands have different element "
                               "types ", elt, " and ", eltOf(v));
  Shape shape;
  if (failed(inferGemmShape(shapeOf(adaptor.getA()), shapeOf(adaptor.getB()),
                            c, adaptor.getTransA(), adaptor.getTransB(), shape,
                            loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getA()));
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

template <typename OpTy>
static LogicalResult verifySoftmaxAxis(OpTy op) {
  int64_t rank = op.getType().getRank();
  if (failed(normalizeAxis(op.getAxis(), rank, std::nullopt)))
    return op.emitOpError("axis ")
           << static_cast<int64_t>(op.getAxis()) << " is out of range for rank "
           << rank;
  return success();
}

/// A normalization's scale (or bias): same element type as the input, and
/// broadcastable to the normalized shape.
static LogicalResult verifyNormOperand(Operation *op, Value input, Value param,
                                       int64_t axis, StringRef name) {
  // (ODS returns I64Attr values as uint64_t; `axis` is signed again here.)
  auto type = cast<RankedTensorType>(input.getType());
  if (eltOf(param) != type.getElementType())
    return op->emitOpError()
           << name << " element type " << eltOf(param)
           << " differs from the input's " << type.getElementType();
  if (failed(normalizeAxis(axis, type.getRank(), std::nullopt)))
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << type.getRank();
  if (failed(verifyNormParam(type.getShape(), axis, shapeOf(param), name,
                             std::nullopt)))
    return op->emitOpError()
           << name << " of shape " << shapeToString(shapeOf(param))
           << " does not broadcast to the normalized shape "
           << shapeToString(type.getShape().drop_front(
                  axis < 0 ? axis + type.getRank() : axis));
  return success();
}
LogicalResult SoftmaxOp::verify() { return verifySoftmaxAxis(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifySoftmaxAxis(*this); }

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNormOperand(*this, getInput(), getScale(), getAxis(),
                               "scale")))
    return failure();
  if (getBias() && failed(verifyNormOperand(*this, getInput(), getBias(),
                                            getAxis(), "bias")))
    return failure();
  return success();
}

LogicalResult RMSNormOp::verify() {
  return verifyNormOperand(*this, getInput(), getScale(), getAxis(), "scale");
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

#define MEMFIT_REDUCE_INFER(OP)                                                \
  LogicalResult OP::inferReturnTypes(MLIRContext *, OptLoc loc,                \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    Shape shape;                                                               \
    if (failed(inferReduceShape(shapeOf(adaptor.getInput()), adaptor.getAxes(), \
                                adaptor.getKeepdims(), shape, loc)))           \
      return failure();                                                        \
    return pushTensor(types, shape, eltOf(adaptor.getInput()));                \
  }
MEMFIT_REDUCE_INFER(ReduceSumOp)
MEMFIT_REDUCE_INFER(ReduceMeanOp)
MEMFIT_REDUCE_INFER(ReduceMaxOp)
#undef MEMFIT_REDUCE_INFER

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferTransposeShape(shapeOf(adaptor.getInput()),
                                 adaptor.getPerm(), shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(perm))
    identity &= static_cast<int64_t>(i) == p;
  if (identity)
    return getInput();
  DenseElementsAttr in = getDense(adaptor.getInput());
  if (!in)
    return {};
  SmallVector<int64_t> strides = stridesOf(shapeOf(getInput()));
  return remapElements(in, getType(), [&](ArrayRef<int64_t> idx) {
    int64_t linear = 0;
    for (auto [i, p] : llvm::enumerate(perm))
      linear += idx[i] * strides[p];
    return linear;
  });
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << in << " (" << in.getNumElements() << " elements) to " << out
           << " (" << out.getNumElements() << " elements)";
  return success();
}

LogicalResult StridedViewOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  ArrayRef<int64_t> strides = getStrides();
  if (static_cast<int64_t>(strides.size()) != out.getRank())
    return emitOpError("has ") << strides.size() << " strides for a result of "
                               << "rank " << out.getRank();
  if (getOffset() < 0 || llvm::any_of(strides, [](int64_t s) { return s < 0; }))
    return emitOpError("offset and strides must not be negative");
  int64_t last = getOffset();
  if (out.getNumElements() > 0)
    for (auto [size, stride] : llvm::zip(out.getShape(), strides))
      last += (size - 1) * stride;
  if (out.getNumElements() > 0 && last >= in.getNumElements())
    return emitOpError("reads element ")
           << last << " of an input of " << in.getNumElements() << " elements";
  for (Operation *user : getResult().getUsers())
    if (!isa<MatMulOp>(user))
      return emitOpError("is read by '")
             << user->getName()
             << "': only memfit.matmul reads a strided view (its library "
                "call's strides)";
  return success();
}

/// Reshape-like folds: identity, or a constant with a new shape.
static OpFoldResult foldReshapeLike(Value input, Attribute constant,
                                    RankedTensorType type) {
  if (input.getType() == type)
    return input;
  if (DenseElementsAttr in = getDense(constant))
    return in.reshape(type);
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  return foldReshapeLike(getInput(), adaptor.getInput(), getType());
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferFlattenShape(shapeOf(adaptor.getInput()), adaptor.getAxis(),
                               shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferSqueezeShape(shapeOf(adaptor.getInput()), adaptor.getAxes(),
                               shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

OpFoldResult SqueezeOp::fold(FoldAdaptor adaptor) {
  return foldReshapeLike(getInput(), adaptor.getInput(), getType());
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferUnsqueezeShape(shapeOf(adaptor.getInput()),
                                 adaptor.getAxes(), shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

OpFoldResult UnsqueezeOp::fold(FoldAdaptor adaptor) {
  return foldReshapeLike(getInput(), adaptor.getInput(), getType());
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : adaptor.getInputs())
    shapes.push_back(shapeOf(v));
  Shape shape;
  if (failed(inferConcatShape(shapes, adaptor.getAxis(), shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getInputs().front()));
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  Type elt = eltOf(getInputs().front());
  for (Value v : getInputs())
    if (eltOf(v) != elt)
      return emitOpError("inputs have different element types ")
             << elt << " and " << eltOf(v);
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  RankedTensorType type = getType();
  if (type.getNumElements() > kMaxFoldElements)
    return {};
  int64_t axis = *normalizeAxis(getAxis(), type.getRank(), std::nullopt);
  // Walk the result in row-major order: each input contributes a run of
  // `dim * inner` elements per outer index.
  int64_t inner = getNumElements(type.getShape().drop_front(axis + 1));
  int64_t outer = getNumElements(type.getShape().take_front(axis));
  SmallVector<SmallVector<Attribute>> inputs;
  for (Attribute a : adaptor.getInputs()) {
    DenseElementsAttr d = getDense(a);
    if (!d)
      return {};
    inputs.emplace_back(d.getValues<Attribute>());
  }
  SmallVector<Attribute> out;
  out.reserve(type.getNumElements());
  for (int64_t o = 0; o < outer; ++o)
    for (auto [k, v] : llvm::enumerate(getInputs())) {
      int64_t run = shapeOf(v)[axis] * inner;
      llvm::append_range(out, ArrayRef(inputs[k]).slice(o * run, run));
    }
  return DenseElementsAttr::get(type, out);
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  SmallVector<Shape> shapes;
  if (failed(inferSplitShapes(shapeOf(adaptor.getInput()), adaptor.getAxis(),
                              adaptor.getSizes(), shapes, loc)))
    return failure();
  for (const Shape &s : shapes)
    (void)pushTensor(types, s, eltOf(adaptor.getInput()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  SmallVector<SliceDim> dims;
  if (failed(resolveSlice(shapeOf(adaptor.getInput()), adaptor.getStarts(),
                          adaptor.getEnds(), adaptor.getAxes(),
                          adaptor.getSteps(), dims, loc)))
    return failure();
  Shape shape;
  for (const SliceDim &d : dims)
    shape.push_back(d.size);
  return pushTensor(types, shape, eltOf(adaptor.getInput()));
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  SmallVector<SliceDim> dims;
  if (failed(resolveSlice(shapeOf(getInput()), getStarts(), getEnds(),
                          getAxes(), getSteps(), dims, std::nullopt)))
    return {};
  // Only a slice that takes every element in order is the identity (a
  // reversing slice has the same type but not the same value).
  if (llvm::all_of(llvm::zip(dims, shapeOf(getInput())), [](auto p) {
        auto [d, size] = p;
        return d.start == 0 && d.step == 1 && d.size == size;
      }))
    return getInput();
  DenseElementsAttr in = getDense(adaptor.getInput());
  if (!in)
    return {};
  SmallVector<int64_t> strides = stridesOf(shapeOf(getInput()));
  return remapElements(in, getType(), [&](ArrayRef<int64_t> idx) {
    int64_t linear = 0;
    for (auto [i, d] : llvm::enumerate(dims))
      linear += (d.start + idx[i] * d.step) * strides[i];
    return linear;
  });
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferGatherShape(shapeOf(adaptor.getData()),
                              shapeOf(adaptor.getIndices()), adaptor.getAxis(),
                              shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getData()));
}

/// The values of constant `indices`, the n-th into an axis of `extentOf(n)`
/// entries, made non-negative; none when one is out of range (that is left
/// to the kernel, which reads it as zero).
static std::optional<SmallVector<int64_t>>
constantIndices(DenseElementsAttr indices,
                function_ref<int64_t(int64_t)> extentOf) {
  SmallVector<int64_t> values;
  for (auto [n, v] : llvm::enumerate(indices.getValues<APInt>())) {
    int64_t i = v.getSExtValue(), extent = extentOf(n);
    if (i < -extent || i >= extent)
      return std::nullopt;
    values.push_back(i < 0 ? i + extent : i);
  }
  return values;
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = getDense(adaptor.getData());
  DenseElementsAttr indices = getDense(adaptor.getIndices());
  if (!data || !indices)
    return {};
  ArrayRef<int64_t> dataShape = shapeOf(getData());
  int64_t axis = *normalizeAxis(getAxis(), dataShape.size(), std::nullopt);
  std::optional<SmallVector<int64_t>> idxValues =
      constantIndices(indices, [&](int64_t) { return dataShape[axis]; });
  if (!idxValues)
    return {};
  SmallVector<int64_t> strides = stridesOf(dataShape);
  SmallVector<int64_t> idxStrides = stridesOf(shapeOf(getIndices()));
  int64_t idxRank = shapeOf(getIndices()).size();
  return remapElements(data, getType(), [&](ArrayRef<int64_t> idx) {
    int64_t linear = 0, which = 0;
    for (int64_t k = 0; k < idxRank; ++k)
      which += idx[axis + k] * idxStrides[k];
    for (int64_t d = 0; d < static_cast<int64_t>(dataShape.size()); ++d) {
      int64_t pos = d < axis    ? idx[d]
                    : d == axis ? (*idxValues)[which]
                                : idx[d - 1 + idxRank];
      linear += pos * strides[d];
    }
    return linear;
  });
}

LogicalResult CumSumOp::verify() {
  int64_t rank = getType().getRank();
  auto axis = static_cast<int64_t>(getAxis());
  if (rank == 0 || axis < -rank || axis >= rank)
    return emitOpError("axis ") << axis << " is out of range for rank " << rank;
  return success();
}

OpFoldResult CumSumOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr in = getDense(adaptor.getInput());
  if (!in || in.getNumElements() > kMaxFoldElements)
    return {};
  ArrayRef<int64_t> shape = getType().getShape();
  int64_t rank = shape.size();
  if (rank == 0)
    return {};
  auto axis = static_cast<int64_t>(getAxis());
  if (axis < 0)
    axis += rank;
  int64_t stride = stridesOf(shape)[axis], extent = shape[axis];
  int64_t n = in.getNumElements();
  Type elt = getType().getElementType();
  auto walk = [&](auto values, auto zero, auto make) -> Attribute {
    using T = decltype(zero);
    SmallVector<T> out(n, zero);
    for (int64_t i = 0; i < n; ++i) {
      if ((i / stride) % extent != 0)
        continue; // each line once, from its first element
      T acc = zero;
      for (int64_t k = 0; k < extent; ++k) {
        int64_t j = getReverse() ? extent - 1 - k : k;
        int64_t at = i + j * stride;
        if (getExclusive()) {
          out[at] = acc;
          acc = acc + values[at];
        } else {
          acc = acc + values[at];
          out[at] = acc;
        }
      }
    }
    return make(out);
  };
  if (isa<FloatType>(elt)) {
    SmallVector<APFloat> values(in.getValues<APFloat>());
    APFloat zero = APFloat::getZero(cast<FloatType>(elt).getFloatSemantics());
    return walk(values, zero, [&](ArrayRef<APFloat> out) {
      return DenseElementsAttr::get(getType(), out);
    });
  }
  SmallVector<APInt> values(in.getValues<APInt>());
  APInt zero(elt.getIntOrFloatBitWidth(), 0);
  return walk(values, zero, [&](ArrayRef<APInt> out) {
    return DenseElementsAttr::get(getType(), out);
  });
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferGatherElementsShape(shapeOf(adaptor.getData()),
                                      shapeOf(adaptor.getIndices()),
                                      adaptor.getAxis(), shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getData()));
}

OpFoldResult GatherElementsOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = getDense(adaptor.getData());
  DenseElementsAttr indices = getDense(adaptor.getIndices());
  if (!data || !indices)
    return {};
  ArrayRef<int64_t> dataShape = shapeOf(getData());
  int64_t axis = *normalizeAxis(getAxis(), dataShape.size(), std::nullopt);
  std::optional<SmallVector<int64_t>> values =
      constantIndices(indices, [&](int64_t) { return dataShape[axis]; });
  if (!values)
    return {};
  SmallVector<int64_t> strides = stridesOf(dataShape);
  SmallVector<int64_t> idxStrides = stridesOf(shapeOf(getIndices()));
  return remapElements(data, getType(), [&](ArrayRef<int64_t> idx) {
    int64_t linear = 0, which = 0;
    for (auto [d, i] : llvm::enumerate(idx))
      which += i * idxStrides[d];
    for (auto [d, i] : llvm::enumerate(idx))
      linear +=
          (static_cast<int64_t>(d) == axis ? (*values)[which] : i) * strides[d];
    return linear;
  });
}

/// A scatter's result type: the data's, when the updates have its element
/// type, `shapeRule` accepts the shapes and booleans take no reduction.
template <typename Adaptor>
static LogicalResult
inferScatter(OptLoc loc, StringRef name, Adaptor adaptor,
             function_ref<LogicalResult(Shape &)> shapeRule,
             SmallVectorImpl<Type> &types) {
  Type elt = eltOf(adaptor.getData());
  if (eltOf(adaptor.getUpdates()) != elt)
    return emitOptionalError(loc, name,
                             " needs updates of the data's "
                             "element type");
  Shape shape;
  if (failed(shapeRule(shape)))
    return failure();
  if (elt.isInteger(1) && adaptor.getReduction() != "none")
    return emitOptionalError(loc, name, " of booleans takes no reduction");
  return pushTensor(types, shape, elt);
}

LogicalResult
ScatterElementsOp::inferReturnTypes(MLIRContext *, OptLoc loc, Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  return inferScatter(
      loc, "scatter_elements", adaptor,
      [&](Shape &shape) {
        return inferScatterElementsShape(
            shapeOf(adaptor.getData()), shapeOf(adaptor.getIndices()),
            shapeOf(adaptor.getUpdates()), adaptor.getAxis(),
            adaptor.getReduction(), shape, loc);
      },
      types);
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferScatter(
      loc, "scatter_nd", adaptor,
      [&](Shape &shape) {
        return inferScatterNDShape(
            shapeOf(adaptor.getData()), shapeOf(adaptor.getIndices()),
            shapeOf(adaptor.getUpdates()), adaptor.getReduction(), shape, loc);
      },
      types);
}

LogicalResult TopKIndicesOp::inferReturnTypes(MLIRContext *ctx, OptLoc loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferTopKShape(shapeOf(adaptor.getInput()), adaptor.getAxis(),
                            adaptor.getK(), shape, loc)))
    return failure();
  return pushTensor(types, shape, IntegerType::get(ctx, 64));
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  Shape shape;
  if (failed(inferGatherNDShape(shapeOf(adaptor.getData()),
                                shapeOf(adaptor.getIndices()),
                                adaptor.getBatchDims(), shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getData()));
}

OpFoldResult GatherNDOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = getDense(adaptor.getData());
  DenseElementsAttr indices = getDense(adaptor.getIndices());
  if (!data || !indices)
    return {};
  ArrayRef<int64_t> dataShape = shapeOf(getData());
  ArrayRef<int64_t> idxShape = shapeOf(getIndices());
  int64_t b = getBatchDims(), k = idxShape.back();
  int64_t q = idxShape.size();
  std::optional<SmallVector<int64_t>> values =
      constantIndices(indices, [&](int64_t n) { return dataShape[b + n % k]; });
  if (!values)
    return {};
  SmallVector<int64_t> strides = stridesOf(dataShape);
  SmallVector<int64_t> idxStrides = stridesOf(idxShape);
  return remapElements(data, getType(), [&](ArrayRef<int64_t> idx) {
    int64_t tuple = 0, linear = 0;
    for (int64_t t = 0; t < q - 1; ++t)
      tuple += idx[t] * idxStrides[t];
    for (int64_t d = 0; d < b; ++d)
      linear += idx[d] * strides[d];
    for (int64_t j = 0; j < k; ++j)
      linear += (*values)[tuple + j] * strides[b + j];
    for (int64_t u = b + k; u < static_cast<int64_t>(dataShape.size()); ++u)
      linear += idx[q - 1 + u - b - k] * strides[u];
    return linear;
  });
}

LogicalResult ExpandOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  Shape shape;
  if (failed(inferBroadcastShape({in.getShape(), out.getShape()}, shape,
                                 std::nullopt)))
    return emitOpError("input shape ")
           << shapeToString(in.getShape()) << " does not broadcast to "
           << shapeToString(out.getShape());
  if (ArrayRef<int64_t>(shape) != out.getShape())
    return emitOpError("result shape ")
           << shapeToString(out.getShape()) << " is not the broadcast "
           << shapeToString(shape) << " of the input shape";
  return success();
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  DenseElementsAttr in = getDense(adaptor.getInput());
  if (!in)
    return {};
  ArrayRef<int64_t> inShape = shapeOf(getInput());
  SmallVector<int64_t> strides = stridesOf(inShape);
  return remapElements(in, getType(), [&](ArrayRef<int64_t> idx) {
    return broadcastIndex(inShape, strides, idx);
  });
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

static LogicalResult inferLoss(OptLoc loc, Value scores, Value labels,
                               Value weights, LossReduction reduction,
                               SmallVectorImpl<Type> &types) {
  std::optional<ArrayRef<int64_t>> w;
  if (weights) {
    if (eltOf(weights) != eltOf(scores))
      return emitOptionalError(loc, "loss weights element type ",
                               eltOf(weights), " differs from the scores' ",
                               eltOf(scores));
    w = shapeOf(weights);
  }
  Shape shape;
  if (failed(inferLossShape(shapeOf(scores), shapeOf(labels), w,
                            reduction != LossReduction::None, shape, loc)))
    return failure();
  return pushTensor(types, shape, eltOf(scores));
}

LogicalResult SoftmaxCrossEntropyLossOp::inferReturnTypes(
    MLIRContext *, OptLoc loc, Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferLoss(loc, adaptor.getScores(), adaptor.getLabels(),
                            adaptor.getWeights(), adaptor.getReduction(),
                            types);
}

LogicalResult NegativeLogLikelihoodLossOp::inferReturnTypes(
    MLIRContext *, OptLoc loc, Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferLoss(loc, adaptor.getInput(), adaptor.getTarget(),
                            adaptor.getWeights(), adaptor.getReduction(),
                            types);
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

LogicalResult KernelOp::verify() {
  Block &body = getBodyBlock();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size()
                         << " inputs but its body takes "
                         << body.getNumArguments() << " arguments";
  for (auto [index, input, arg] :
       llvm::enumerate(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError() << "input " << index << " has type "
                           << input.getType() << " but body argument "
                           << index << " has type " << arg.getType();
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(&body.back());
  if (!yield)
    return emitOpError() << "body must end with memfit.yield";
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " values of types (" << yield.getValues().getTypes()
                         << ") but has results of types (" << getResultTypes()
                         << ")";
  if (Attribute attr = (*this)->getAttr(kSegmentsAttr)) {
    auto sizes = dyn_cast<DenseI64ArrayAttr>(attr);
    if (!sizes)
      return emitOpError() << kSegmentsAttr << " must be an array of i64";
    int64_t first = 0;
    for (int64_t size : sizes.asArrayRef()) {
      if (size <= 0 || first + size > getNumResults())
        return emitOpError()
               << kSegmentsAttr << " " << sizes << " does not split its "
               << getNumResults() << " results";
      for (int64_t i = first + 1; i < first + size; ++i)
        if (shapeOf(getResult(i)) != shapeOf(getResult(first)))
          return emitOpError() << "results " << first << " and " << i
                               << " of one segment differ in shape";
      first += size;
    }
    if (first != static_cast<int64_t>(getNumResults()))
      return emitOpError() << kSegmentsAttr << " " << sizes
                           << " does not split its " << getNumResults()
                           << " results";
  }
  for (Operation &op : getBodyOps()) {
    auto opClass = dyn_cast<OpClassInterface>(&op);
    if (!opClass || opClass.getOpClass() == OpClass::Contraction ||
        isa<ParameterOp, LoadParameterOp>(op))
      return emitOpError() << "cannot contain '" << op.getName()
                           << "': kernels hold element-wise, normalization, "
                              "reduction, data-movement and loss ops";
    // An in-place accumulation needs a buffer to write into: a kernel
    // input, whose buffer becomes the result's.
    if (auto scatter = dyn_cast<GatherGradOp>(op); scatter && scatter.getInit())
      if (!isa<BlockArgument>(scatter.getInit()) ||
          !llvm::hasSingleElement(scatter->getUses()) ||
          !isa<YieldOp>(*scatter->user_begin()))
        return emitOpError() << "a gather_grad into another value must "
                                "accumulate into a kernel input and be "
                                "yielded, nothing else reading it";
  }
  return success();
}

Value KernelOp::getTiedInput(unsigned index) {
  Value yielded = getBodyBlock().getTerminator()->getOperand(index);
  auto scatter = yielded.getDefiningOp<GatherGradOp>();
  if (!scatter || !scatter.getInit())
    return {};
  auto arg = dyn_cast<BlockArgument>(scatter.getInit());
  return arg ? getInputs()[arg.getArgNumber()] : Value();
}
