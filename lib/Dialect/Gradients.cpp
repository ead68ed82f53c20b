//===- Gradients.cpp - per-op gradient rules ------------------------------===//
//
// The vector-Jacobian product of every memfit op that can carry a float
// gradient, attached as an external model of GradientOpInterface. A rule
// reads the gradients of the op's results and builds ordinary memfit ops for
// the gradients of its operands; it may use the op's forward results (the
// autodiff pass inserts the rules after the forward ops). Edge cases follow
// PyTorch's autograd:
//
//  - relu: zero at x <= 0 (and at NaN).
//  - pow: d/dbase is zero where the exponent is zero; d/dexponent is
//    y * log(x), zero where x == 0. (PyTorch gives -inf there for a negative
//    exponent; the loss is infinite then anyway.)
//  - reduce_max: the gradient is shared equally between tied maxima, as
//    torch.amax.
//  - losses: ignored labels get no gradient; `mean` divides by the total
//    weight of the labels not ignored.
//
// Cases a rule does not cover are diagnosed on the op ("has no gradient rule
// for ..."): training-mode dropout (it needs its mask), the gradient of loss
// class weights, and second-order gradients of the loss gradient op.
//
// The ops a rule builds carry the forward op's location fused with a "grad"
// marker, so diagnostics and kernel comments still name the ONNX node.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/Gradients.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memfit;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

Value mlir::memfit::unbroadcast(OpBuilder &builder, Location loc, Value grad,
                                RankedTensorType type) {
  auto gradType = cast<RankedTensorType>(grad.getType());
  ArrayRef<int64_t> from = gradType.getShape(), to = type.getShape();
  if (from == to)
    return grad;
  // Broadcasting aligns the trailing dimensions; the gradient is summed over
  // the leading ones the operand lacks and over those where it has a 1.
  int64_t lead = static_cast<int64_t>(from.size()) - to.size();
  SmallVector<int64_t> axes;
  Shape dropped;
  for (int64_t d = 0, e = from.size(); d < e; ++d) {
    int64_t target = d < lead ? 1 : to[d - lead];
    if (target == 1 && from[d] != 1)
      axes.push_back(d);
    else
      dropped.push_back(from[d]);
  }
  Value v = grad;
  if (!axes.empty()) {
    // Without keepdims when that already gives the operand's shape.
    bool keepDims = ArrayRef<int64_t>(dropped) != to;
    v = ReduceSumOp::create(builder, loc, grad, axes, keepDims);
  }
  if (cast<RankedTensorType>(v.getType()).getShape() != to)
    v = ReshapeOp::create(
        builder, loc, RankedTensorType::get(to, gradType.getElementType()), v);
  return v;
}

Value mlir::memfit::splatConstant(OpBuilder &builder, Location loc,
                                  RankedTensorType type, double value) {
  Type elt = type.getElementType();
  Attribute element;
  if (isa<FloatType>(elt))
    element = FloatAttr::get(elt, value);
  else if (elt.isInteger(1))
    element = IntegerAttr::get(elt, value != 0);
  else
    element = IntegerAttr::get(elt, static_cast<int64_t>(value));
  return ConstantOp::create(builder, loc,
                            DenseElementsAttr::get(type, element));
}

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }
bool isFloat(Value v) { return isa<FloatType>(eltOf(v)); }

/// Normalized reduction axes; empty `axes` means all of them.
SmallVector<int64_t> reductionAxes(ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> result;
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      result.push_back(d);
    return result;
  }
  for (int64_t a : axes)
    result.push_back(*normalizeAxis(a, rank, std::nullopt));
  llvm::sort(result);
  return result;
}

/// What a rule works with: the op's result gradients, which operands want
/// a gradient, and builders for the ops the rules share. Every op it builds
/// gets the forward op's location marked "grad".
class GradBuilder {
public:
  GradBuilder(Operation *op, OpBuilder &builder, ArrayRef<Value> resultGrads,
              ArrayRef<bool> needsGrad, SmallVectorImpl<Value> &operandGrads)
      : b(builder),
        loc(builder.getFusedLoc({op->getLoc()}, builder.getStringAttr("grad"))),
        op(op), resultGrads(resultGrads), needsGrad(needsGrad),
        operandGrads(operandGrads) {}

  /// The gradient of result `i`, or null.
  Value grad(unsigned i = 0) const {
    return i < resultGrads.size() ? resultGrads[i] : Value();
  }
  /// Whether operand `i` wants a gradient and can carry one.
  bool needs(unsigned i) const {
    return i < needsGrad.size() && needsGrad[i] && isFloat(op->getOperand(i));
  }
  bool needsAny() const {
    for (unsigned i = 0, e = op->getNumOperands(); i < e; ++i)
      if (needs(i))
        return true;
    return false;
  }
  bool hasResultGrad() const {
    return llvm::any_of(resultGrads,
                        [](Value v) { return static_cast<bool>(v); });
  }
  void set(unsigned i, Value v) { operandGrads[i] = v; }

  /// The error a rule returns for a case it does not cover.
  InFlightDiagnostic unsupported() {
    return op->emitOpError("has no gradient rule for ");
  }

  // Element-wise builders.
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value exp(Value x) { return ExpOp::create(b, loc, x); }
  Value log(Value x) { return LogOp::create(b, loc, x); }
  Value pow(Value x, Value y) { return PowOp::create(b, loc, x, y); }
  Value equal(Value x, Value y) { return EqualOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) {
    return WhereOp::create(b, loc, c, x, y);
  }
  /// `x` converted to `elt`; `reason` (CastOp's) when the gradient itself
  /// changes type.
  Value cast(Value x, Type elt, StringRef reason = {}) {
    return CastOp::create(b, loc, RankedTensorType::get(shapeOf(x), elt), x,
                          reason.empty() ? StringAttr()
                                         : b.getStringAttr(reason));
  }
  /// A scalar (rank-0) constant of element type `elt`, built once per rule.
  Value scalar(double value, Type elt) {
    for (auto [v, t, constant] : scalars)
      if (v == value && t == elt)
        return constant;
    Value constant =
        splatConstant(b, loc, RankedTensorType::get({}, elt), value);
    scalars.push_back({value, elt, constant});
    return constant;
  }
  Value zeros(ArrayRef<int64_t> shape, Type elt) {
    return splatConstant(b, loc, RankedTensorType::get(shape, elt), 0.0);
  }

  // Shape builders; each returns its input when there is nothing to do.
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    if (shapeOf(x) == shape)
      return x;
    return ReshapeOp::create(b, loc, RankedTensorType::get(shape, eltOf(x)), x);
  }
  Value unbroadcastTo(Value x, Value like) {
    return unbroadcast(b, loc, x, typeOf(like));
  }
  Value reduceSum(Value x, ArrayRef<int64_t> axes, bool keepDims) {
    return ReduceSumOp::create(b, loc, x, axes, keepDims);
  }
  Value unsqueeze(Value x, int64_t axis) {
    return UnsqueezeOp::create(b, loc, x, ArrayRef<int64_t>{axis});
  }
  Value reduceMean(Value x, ArrayRef<int64_t> axes) {
    return ReduceMeanOp::create(b, loc, x, axes, /*keepdims=*/true);
  }
  /// Swaps the last two dimensions (a reshape when one of them is 1).
  Value transposeLast2(Value x) {
    ArrayRef<int64_t> s = shapeOf(x);
    int64_t r = s.size();
    Shape swapped(s);
    std::swap(swapped[r - 1], swapped[r - 2]);
    if (s[r - 1] == 1 || s[r - 2] == 1)
      return reshape(x, swapped);
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < r; ++d)
      perm.push_back(d);
    std::swap(perm[r - 1], perm[r - 2]);
    return TransposeOp::create(b, loc, x, perm);
  }

  OpBuilder &b;
  Location loc;

private:
  Operation *op;
  ArrayRef<Value> resultGrads;
  ArrayRef<bool> needsGrad;
  SmallVectorImpl<Value> &operandGrads;
  SmallVector<std::tuple<double, Type, Value>> scalars;
};

//===----------------------------------------------------------------------===//
// Element-wise rules
//===----------------------------------------------------------------------===//

/// Ops without a float gradient: the leaves (no operands) and the ops with
/// boolean or index results.
#define MEMFIT_NO_GRADIENT(OP)                                                 \
  LogicalResult rule(OP, GradBuilder &) { return success(); }
MEMFIT_NO_GRADIENT(LoadParameterOp)
MEMFIT_NO_GRADIENT(ConstantOp)
MEMFIT_NO_GRADIENT(RangeOp)
MEMFIT_NO_GRADIENT(NotOp)
MEMFIT_NO_GRADIENT(EqualOp)
MEMFIT_NO_GRADIENT(LessOp)
MEMFIT_NO_GRADIENT(GreaterOp)
MEMFIT_NO_GRADIENT(AndOp)
MEMFIT_NO_GRADIENT(OrOp)
MEMFIT_NO_GRADIENT(XorOp)
MEMFIT_NO_GRADIENT(IsNaNOp)
MEMFIT_NO_GRADIENT(IsInfOp)
MEMFIT_NO_GRADIENT(DropoutMaskOp)
MEMFIT_NO_GRADIENT(TopKIndicesOp)
#undef MEMFIT_NO_GRADIENT

/// Unary ops whose gradient is `g * f(x, y)`.
template <typename OpTy, typename Fn>
LogicalResult unaryRule(OpTy op, GradBuilder &g, Fn derivative) {
  g.set(0, g.mul(g.grad(), derivative(op.getInput(), op.getResult())));
  return success();
}

LogicalResult rule(NegOp, GradBuilder &g) {
  g.set(0, g.neg(g.grad()));
  return success();
}

LogicalResult rule(ExpOp op, GradBuilder &g) {
  return unaryRule(op, g, [](Value, Value y) { return y; });
}

LogicalResult rule(LogOp op, GradBuilder &g) {
  g.set(0, g.div(g.grad(), op.getInput()));
  return success();
}

LogicalResult rule(SqrtOp op, GradBuilder &g) {
  // g / (2 * sqrt(x)).
  Type elt = eltOf(op.getInput());
  g.set(0, g.div(g.mul(g.grad(), g.scalar(0.5, elt)), op.getResult()));
  return success();
}

LogicalResult rule(ReciprocalOp op, GradBuilder &g) {
  // -g * y^2.
  return unaryRule(op, g, [&](Value, Value y) { return g.neg(g.mul(y, y)); });
}

LogicalResult rule(ErfOp op, GradBuilder &g) {
  // g * 2/sqrt(pi) * exp(-x^2).
  Type elt = eltOf(op.getInput());
  return unaryRule(op, g, [&](Value x, Value) {
    return g.mul(g.exp(g.neg(g.mul(x, x))),
                 g.scalar(2.0 / std::sqrt(M_PI), elt));
  });
}

LogicalResult rule(TanhOp op, GradBuilder &g) {
  // g * (1 - y^2).
  Type elt = eltOf(op.getInput());
  return unaryRule(op, g, [&](Value, Value y) {
    return g.sub(g.scalar(1.0, elt), g.mul(y, y));
  });
}

LogicalResult rule(SigmoidOp op, GradBuilder &g) {
  // g * y * (1 - y).
  Type elt = eltOf(op.getInput());
  return unaryRule(op, g, [&](Value, Value y) {
    return g.mul(y, g.sub(g.scalar(1.0, elt), y));
  });
}

LogicalResult rule(ReluOp op, GradBuilder &g) {
  Type elt = eltOf(op.getInput());
  Value positive =
      GreaterOp::create(g.b, g.loc, op.getInput(), g.scalar(0.0, elt));
  g.set(0, g.select(positive, g.grad(), g.scalar(0.0, elt)));
  return success();
}

LogicalResult rule(SinOp op, GradBuilder &g) {
  return unaryRule(
      op, g, [&](Value x, Value) { return CosOp::create(g.b, g.loc, x); });
}

LogicalResult rule(CosOp op, GradBuilder &g) {
  return unaryRule(op, g, [&](Value x, Value) {
    return g.neg(SinOp::create(g.b, g.loc, x));
  });
}

LogicalResult rule(GeluOp op, GradBuilder &g) {
  Type elt = eltOf(op.getInput());
  auto c = [&](double v) { return g.scalar(v, elt); };
  return unaryRule(op, g, [&](Value x, Value) -> Value {
    if (op.getApproximate() == GeluApproximation::Tanh) {
      // y = x/2 (1 + t), t = tanh(u), u = sqrt(2/pi) (x + 0.044715 x^3):
      // dy/dx = (1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
      constexpr double kBeta = 0.7978845608028654, kKappa = 0.044715;
      Value x2 = g.mul(x, x);
      Value u = g.mul(g.mul(x, g.add(c(1.0), g.mul(x2, c(kKappa)))), c(kBeta));
      Value t = TanhOp::create(g.b, g.loc, u);
      Value du = g.mul(g.add(c(1.0), g.mul(x2, c(3.0 * kKappa))), c(kBeta));
      Value left = g.mul(g.add(c(1.0), t), c(0.5));
      Value right =
          g.mul(g.mul(g.mul(x, c(0.5)), g.sub(c(1.0), g.mul(t, t))), du);
      return g.add(left, right);
    }
    // y = x Phi(x): dy/dx = Phi(x) + x phi(x).
    Value cdf =
        g.mul(g.add(c(1.0), ErfOp::create(g.b, g.loc, g.mul(x, c(M_SQRT1_2)))),
              c(0.5));
    Value pdf = g.mul(g.exp(g.mul(g.mul(x, x), c(-0.5))),
                      c(1.0 / std::sqrt(2.0 * M_PI)));
    return g.add(cdf, g.mul(x, pdf));
  });
}

LogicalResult rule(DropoutOp op, GradBuilder &g) {
  if (op.getRatio().isZero()) {
    g.set(0, g.grad());
    return success();
  }
  // The same dropout of the gradient: its mask depends on the attributes
  // and the element's index alone, so the same elements are kept.
  g.set(0, DropoutOp::create(g.b, g.loc, g.grad().getType(), g.grad(),
                             op.getRatioAttr(), op.getSeedAttr(),
                             op.getStreamAttr()));
  return success();
}

LogicalResult rule(CastOp op, GradBuilder &g) {
  // Only float-to-float casts pass a gradient; the operand is float here.
  if (isFloat(op.getResult()))
    g.set(0, g.cast(g.grad(), eltOf(op.getInput()), "gradient"));
  return success();
}

LogicalResult rule(TriluOp op, GradBuilder &g) {
  g.set(0, TriluOp::create(g.b, g.loc, g.grad(), op.getUpperAttr(),
                           op.getKAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Broadcasting element-wise rules
//===----------------------------------------------------------------------===//

LogicalResult rule(AddOp op, GradBuilder &g) {
  if (g.needs(0))
    g.set(0, g.unbroadcastTo(g.grad(), op.getLhs()));
  if (g.needs(1))
    g.set(1, g.unbroadcastTo(g.grad(), op.getRhs()));
  return success();
}

LogicalResult rule(SubOp op, GradBuilder &g) {
  if (g.needs(0))
    g.set(0, g.unbroadcastTo(g.grad(), op.getLhs()));
  if (g.needs(1))
    g.set(1, g.neg(g.unbroadcastTo(g.grad(), op.getRhs())));
  return success();
}

LogicalResult rule(MulOp op, GradBuilder &g) {
  if (g.needs(0))
    g.set(0, g.unbroadcastTo(g.mul(g.grad(), op.getRhs()), op.getLhs()));
  if (g.needs(1))
    g.set(1, g.unbroadcastTo(g.mul(g.grad(), op.getLhs()), op.getRhs()));
  return success();
}

LogicalResult rule(DivOp op, GradBuilder &g) {
  // d/da = g / b; d/db = -g a / b^2 = -(g / b) * y.
  Value scaled = g.div(g.grad(), op.getRhs());
  if (g.needs(0))
    g.set(0, g.unbroadcastTo(scaled, op.getLhs()));
  if (g.needs(1))
    g.set(1,
          g.neg(g.unbroadcastTo(g.mul(scaled, op.getResult()), op.getRhs())));
  return success();
}

LogicalResult rule(FmodOp op, GradBuilder &g) {
  // d/da = g; d/db = -g trunc(a / b), trunc(a / b) = (a - y) / b.
  Value a = op.getLhs(), b = op.getRhs();
  if (g.needs(0))
    g.set(0, g.unbroadcastTo(g.grad(), a));
  if (g.needs(1)) {
    Value quotient = g.div(g.sub(a, op.getResult()), b);
    g.set(1, g.neg(g.unbroadcastTo(g.mul(g.grad(), quotient), b)));
  }
  return success();
}

LogicalResult rule(PowOp op, GradBuilder &g) {
  Value x = op.getLhs(), e = op.getRhs(), y = op.getResult();
  Type elt = eltOf(x);
  if (!isFloat(x))
    return success(); // an integer power carries no gradient
  if (g.needs(0)) {
    Value dx;
    if (std::optional<double> c = splatValue(e)) {
      // A constant exponent (x^2, x^0.5, ...) folds into the rule.
      if (*c == 0) {
        dx = g.zeros(shapeOf(y), elt);
      } else if (*c == 1) {
        dx = g.grad();
      } else {
        Value p = *c == 2 ? x : g.pow(x, g.scalar(*c - 1, elt));
        dx = g.mul(g.mul(g.grad(), g.scalar(*c, elt)), p);
      }
    } else {
      // e * x^(e-1), zero where e == 0 (PyTorch's masked_fill).
      Value ef = isFloat(e) ? e : g.cast(e, elt);
      Value d = g.mul(ef, g.pow(x, g.sub(ef, g.scalar(1.0, elt))));
      d = g.select(g.equal(ef, g.scalar(0.0, elt)), g.scalar(0.0, elt), d);
      dx = g.mul(g.grad(), d);
    }
    g.set(0, g.unbroadcastTo(dx, x));
  }
  if (g.needs(1)) {
    // y * log(x), zero where x == 0.
    Value d = g.mul(g.grad(), g.mul(y, g.log(x)));
    d = g.select(g.equal(x, g.scalar(0.0, elt)), g.scalar(0.0, elt), d);
    g.set(1, g.unbroadcastTo(d, e));
  }
  return success();
}

/// Max and Min: the gradient goes to the operand that is taken, split in
/// half at ties (as torch.maximum and torch.minimum).
template <typename CompareOp>
LogicalResult extremumRule(Value lhs, Value rhs, GradBuilder &g) {
  Type elt = eltOf(lhs);
  Value zero = g.scalar(0.0, elt);
  Value half = g.mul(g.grad(), g.scalar(0.5, elt));
  Value tie = g.select(EqualOp::create(g.b, g.loc, lhs, rhs), half, zero);
  if (g.needs(0))
    g.set(0, g.unbroadcastTo(g.select(CompareOp::create(g.b, g.loc, lhs, rhs),
                                      g.grad(), tie),
                             lhs));
  if (g.needs(1))
    g.set(1, g.unbroadcastTo(g.select(CompareOp::create(g.b, g.loc, rhs, lhs),
                                      g.grad(), tie),
                             rhs));
  return success();
}

LogicalResult rule(MaxOp op, GradBuilder &g) {
  return extremumRule<GreaterOp>(op.getLhs(), op.getRhs(), g);
}

LogicalResult rule(MinOp op, GradBuilder &g) {
  return extremumRule<LessOp>(op.getLhs(), op.getRhs(), g);
}

LogicalResult rule(CumSumOp op, GradBuilder &g) {
  // Each input element reaches the outputs after it (before it, reversed).
  g.set(0, CumSumOp::create(g.b, g.loc, g.grad(), op.getAxis(),
                            op.getExclusive(), !op.getReverse()));
  return success();
}

LogicalResult rule(WhereOp op, GradBuilder &g) {
  Value zero = g.scalar(0.0, eltOf(op.getResult()));
  if (g.needs(1))
    g.set(1, g.unbroadcastTo(g.select(op.getCondition(), g.grad(), zero),
                             op.getLhs()));
  if (g.needs(2))
    g.set(2, g.unbroadcastTo(g.select(op.getCondition(), zero, g.grad()),
                             op.getRhs()));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// alpha op(x) op(y), without C (beta 1 in alpha's semantics).
Value gemm(GradBuilder &g, Value x, Value y, bool tx, bool ty,
           const APFloat &alpha = APFloat(1.0f)) {
  return GemmOp::create(g.b, g.loc, x, y, Value(), alpha,
                        APFloat(alpha.getSemantics(), 1), tx, ty);
}

LogicalResult rule(MatMulOp op, GradBuilder &g) {
  if (op.getTransA() || op.getTransB())
    return op.emitOpError("has transposed operands (memfit-fuse sets them, "
                          "after autodiff): no gradient rule");
  Value a = op.getLhs(), b = op.getRhs();
  ArrayRef<int64_t> as = shapeOf(a), bs = shapeOf(b);
  Type elt = eltOf(a);
  // 1-D operands are promoted to matrices, and the gradient with them.
  bool vecA = as.size() == 1, vecB = bs.size() == 1;
  Shape a2s(as), b2s(bs), gs(shapeOf(g.grad()));
  if (vecA) {
    a2s.insert(a2s.begin(), 1);
    gs.insert(gs.end() - (vecB ? 0 : 1), 1);
  }
  if (vecB) {
    b2s.push_back(1);
    gs.push_back(1);
  }
  Value g2 = g.reshape(g.grad(), gs);
  int64_t k = a2s.back(), n = b2s.back();

  if (b2s.size() == 2) {
    // A matrix B (a weight): one gemm per gradient over the flattened
    // batch, dA = dY B^T and dB = A^T dY, without transpose kernels.
    int64_t rows = getNumElements(gs) / std::max<int64_t>(n, 1);
    Value gFlat = g.reshape(g2, {rows, n});
    if (g.needs(0))
      g.set(0, g.reshape(gemm(g, gFlat, g.reshape(b, b2s), false, true), as));
    if (g.needs(1))
      g.set(1, g.reshape(gemm(g, g.reshape(a, {rows, k}), gFlat, true, false),
                         bs));
    return success();
  }
  // Batched: matmuls with transposed operands, summed over the batch
  // dimensions each operand was broadcast in.
  if (g.needs(0)) {
    Value da =
        MatMulOp::create(g.b, g.loc, g2, g.transposeLast2(g.reshape(b, b2s)));
    da = unbroadcast(g.b, g.loc, da, RankedTensorType::get(a2s, elt));
    g.set(0, g.reshape(da, as));
  }
  if (g.needs(1)) {
    Value db =
        MatMulOp::create(g.b, g.loc, g.transposeLast2(g.reshape(a, a2s)), g2);
    db = unbroadcast(g.b, g.loc, db, RankedTensorType::get(b2s, elt));
    g.set(1, g.reshape(db, bs));
  }
  return success();
}

LogicalResult rule(GemmOp op, GradBuilder &g) {
  // Y = alpha op(A) op(B) + beta C.
  Value a = op.getA(), b = op.getB(), dy = g.grad();
  bool ta = op.getTransA(), tb = op.getTransB();
  APFloat alpha = op.getAlpha();
  if (g.needs(0))
    // dop(A) = alpha dY op(B)^T; dA is its transpose when trans_a.
    g.set(0, ta ? gemm(g, b, dy, tb, true, alpha)
                : gemm(g, dy, b, false, !tb, alpha));
  if (g.needs(1))
    // dop(B) = alpha op(A)^T dY; dB is its transpose when trans_b.
    g.set(1, tb ? gemm(g, dy, a, true, ta, alpha)
                : gemm(g, a, dy, !ta, false, alpha));
  if (op.getC() && g.needs(2)) {
    Value dc = g.unbroadcastTo(dy, op.getC());
    double beta = op.getBeta().convertToDouble();
    if (beta != 1.0)
      dc = g.mul(dc, g.scalar(beta, eltOf(dc)));
    g.set(2, dc);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

LogicalResult rule(SoftmaxOp op, GradBuilder &g) {
  // dx = y * (g - sum(g * y)).
  int64_t axis = static_cast<int64_t>(op.getAxis());
  Value y = op.getResult();
  Value dot = g.reduceSum(g.mul(g.grad(), y), {axis}, /*keepDims=*/true);
  g.set(0, g.mul(y, g.sub(g.grad(), dot)));
  return success();
}

LogicalResult rule(LogSoftmaxOp op, GradBuilder &g) {
  // dx = g - exp(y) * sum(g).
  int64_t axis = static_cast<int64_t>(op.getAxis());
  Value total = g.reduceSum(g.grad(), {axis}, /*keepDims=*/true);
  g.set(0, g.sub(g.grad(), g.mul(g.exp(op.getResult()), total)));
  return success();
}

/// The rule of layer_norm (with `centered`) and rms_norm: recomputes the
/// statistics over the normalized dimensions [axis, rank), then
///   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
/// with dxhat = g * scale (rms_norm has no mean(dxhat) term).
LogicalResult normRule(GradBuilder &g, Value x, Value scale, Value bias,
                       int64_t axisAttr, double epsilon, bool centered) {
  int64_t rank = shapeOf(x).size();
  int64_t axis = *normalizeAxis(axisAttr, rank, std::nullopt);
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  Type elt = eltOf(x);
  Value dy = g.grad();

  Value xc = centered ? g.sub(x, g.reduceMean(x, axes)) : x;
  Value var = g.reduceMean(g.mul(xc, xc), axes);
  Value rstd = ReciprocalOp::create(
      g.b, g.loc,
      SqrtOp::create(g.b, g.loc, g.add(var, g.scalar(epsilon, elt))));
  Value xhat = g.mul(xc, rstd);

  if (bias && g.needs(2))
    g.set(2, g.unbroadcastTo(dy, bias));
  if (g.needs(1))
    g.set(1, g.unbroadcastTo(g.mul(dy, xhat), scale));
  if (g.needs(0)) {
    Value dxhat = g.mul(dy, scale);
    Value inner =
        g.sub(dxhat, g.mul(xhat, g.reduceMean(g.mul(dxhat, xhat), axes)));
    if (centered)
      inner = g.sub(inner, g.reduceMean(dxhat, axes));
    g.set(0, g.mul(inner, rstd));
  }
  return success();
}

LogicalResult rule(LayerNormOp op, GradBuilder &g) {
  return normRule(g, op.getInput(), op.getScale(), op.getBias(),
                  static_cast<int64_t>(op.getAxis()),
                  op.getEpsilon().convertToDouble(), /*centered=*/true);
}

LogicalResult rule(RMSNormOp op, GradBuilder &g) {
  return normRule(g, op.getInput(), op.getScale(), Value(),
                  static_cast<int64_t>(op.getAxis()),
                  op.getEpsilon().convertToDouble(), /*centered=*/false);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// The shape of `x` with the reduced dimensions `axes` kept as 1.
Shape keptShape(Value x, ArrayRef<int64_t> axes) {
  Shape kept(shapeOf(x));
  for (int64_t a : axes)
    kept[a] = 1;
  return kept;
}

/// The result gradient with the reduced dimensions kept as 1, so that it
/// broadcasts against the input.
Value keptGrad(GradBuilder &g, Value input, ArrayRef<int64_t> axes) {
  if (shapeOf(g.grad()).empty())
    return g.grad(); // a scalar broadcasts as it is
  return g.reshape(g.grad(), keptShape(input, axes));
}

LogicalResult rule(ReduceSumOp op, GradBuilder &g) {
  Value x = op.getInput();
  SmallVector<int64_t> axes = reductionAxes(op.getAxes(), shapeOf(x).size());
  Value kept = keptGrad(g, x, axes);
  g.set(0, kept.getType() == x.getType()
               ? kept
               : ExpandOp::create(g.b, g.loc, x.getType(), kept).getResult());
  return success();
}

LogicalResult rule(ReduceMeanOp op, GradBuilder &g) {
  // g / n broadcast back: one multiplication by a splat of the input's
  // shape.
  Value x = op.getInput();
  SmallVector<int64_t> axes = reductionAxes(op.getAxes(), shapeOf(x).size());
  int64_t n = 1;
  for (int64_t a : axes)
    n *= shapeOf(x)[a];
  Value kept = keptGrad(g, x, axes);
  g.set(0, g.mul(kept, splatConstant(g.b, g.loc, typeOf(x),
                                     n ? 1.0 / static_cast<double>(n) : 0.0)));
  return success();
}

LogicalResult rule(ReduceMaxOp op, GradBuilder &g) {
  // Shared equally between the elements equal to the maximum.
  Value x = op.getInput();
  SmallVector<int64_t> axes = reductionAxes(op.getAxes(), shapeOf(x).size());
  Type elt = eltOf(x);
  Value mask = g.equal(x, g.reshape(op.getResult(), keptShape(x, axes)));
  Value count = g.reduceSum(g.cast(mask, elt), axes, /*keepDims=*/true);
  Value share = g.div(keptGrad(g, x, axes), count);
  g.set(0, g.select(mask, share, g.scalar(0.0, elt)));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult rule(TransposeOp op, GradBuilder &g) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  g.set(0, TransposeOp::create(g.b, g.loc, g.grad(), inverse));
  return success();
}

/// Reshape-like ops: the gradient takes the input's shape back.
template <typename OpTy> LogicalResult reshapeRule(OpTy op, GradBuilder &g) {
  g.set(0, g.reshape(g.grad(), shapeOf(op.getInput())));
  return success();
}
LogicalResult rule(ReshapeOp op, GradBuilder &g) { return reshapeRule(op, g); }
LogicalResult rule(FlattenOp op, GradBuilder &g) { return reshapeRule(op, g); }
LogicalResult rule(SqueezeOp op, GradBuilder &g) { return reshapeRule(op, g); }
LogicalResult rule(UnsqueezeOp op, GradBuilder &g) {
  return reshapeRule(op, g);
}

LogicalResult rule(ExpandOp op, GradBuilder &g) {
  g.set(0, g.unbroadcastTo(g.grad(), op.getInput()));
  return success();
}

LogicalResult rule(ConcatOp op, GradBuilder &g) {
  // The pieces of the gradient: one split, or a slice when one input
  // wants a gradient.
  int64_t rank = shapeOf(op.getResult()).size();
  int64_t axis = *normalizeAxis(op.getAxis(), rank, std::nullopt);
  SmallVector<int64_t> sizes;
  SmallVector<unsigned> wanted;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    sizes.push_back(shapeOf(input)[axis]);
    if (g.needs(i))
      wanted.push_back(i);
  }
  if (wanted.size() == 1) {
    unsigned i = wanted.front();
    int64_t begin = 0;
    for (unsigned k = 0; k < i; ++k)
      begin += sizes[k];
    int64_t end = begin + sizes[i], step = 1;
    g.set(i, SliceOp::create(g.b, g.loc, g.grad(), ArrayRef(begin),
                             ArrayRef(end), ArrayRef(axis), ArrayRef(step)));
    return success();
  }
  auto split = SplitOp::create(g.b, g.loc, g.grad(), axis, sizes);
  for (unsigned i : wanted)
    g.set(i, split.getResult(i));
  return success();
}

LogicalResult rule(SplitOp op, GradBuilder &g) {
  SmallVector<Value> pieces;
  for (auto [i, result] : llvm::enumerate(op.getResults())) {
    Value piece = g.grad(i);
    pieces.push_back(piece ? piece : g.zeros(shapeOf(result), eltOf(result)));
  }
  g.set(0, pieces.size() == 1
               ? pieces.front()
               : ConcatOp::create(g.b, g.loc, pieces,
                                  static_cast<uint64_t>(op.getAxis()))
                     .getResult());
  return success();
}

LogicalResult rule(SliceOp op, GradBuilder &g) {
  // The adjoint puts the gradient back at the sliced positions, axis by
  // axis: zero padding on both sides for a step of 1, a gather_grad by the
  // constant positions for any other step.
  Value x = op.getInput();
  ArrayRef<int64_t> xs = shapeOf(x);
  Type elt = eltOf(x);
  SmallVector<SliceDim> dims;
  if (failed(resolveSlice(xs, op.getStarts(), op.getEnds(), op.getAxes(),
                          op.getSteps(), dims, op.getLoc())))
    return failure();
  if (getNumElements(shapeOf(op.getResult())) == 0) {
    g.set(0, g.zeros(xs, elt));
    return success();
  }
  Value v = g.grad();
  for (auto [d, dim] : llvm::enumerate(dims)) {
    int64_t extent = xs[d];
    if (dim.start == 0 && dim.step == 1 && dim.size == extent)
      continue;
    Shape shape(shapeOf(v));
    if (dim.step == 1) {
      SmallVector<Value> parts;
      int64_t after = extent - dim.start - dim.size;
      if (dim.start > 0) {
        shape[d] = dim.start;
        parts.push_back(g.zeros(shape, elt));
      }
      parts.push_back(v);
      if (after > 0) {
        shape[d] = after;
        parts.push_back(g.zeros(shape, elt));
      }
      v = ConcatOp::create(g.b, g.loc, parts, static_cast<uint64_t>(d));
      continue;
    }
    SmallVector<int64_t> positions;
    for (int64_t k = 0; k < dim.size; ++k)
      positions.push_back(dim.start + k * dim.step);
    auto indexType = RankedTensorType::get({dim.size}, g.b.getIntegerType(64));
    Value indices = ConstantOp::create(
        g.b, g.loc, DenseElementsAttr::get(indexType, ArrayRef(positions)));
    shape[d] = extent;
    v = GatherGradOp::create(g.b, g.loc, RankedTensorType::get(shape, elt), v,
                             indices, static_cast<uint64_t>(d), Value());
  }
  g.set(0, v);
  return success();
}

LogicalResult rule(GatherOp op, GradBuilder &g) {
  int64_t axis =
      *normalizeAxis(op.getAxis(), shapeOf(op.getData()).size(), std::nullopt);
  RankedTensorType dataType = op.getData().getType();
  Type elt = dataType.getElementType();
  // Repeated indices add up: 16-bit floats accumulate in f32, rounded once.
  if (elt.isF16() || elt.isBF16()) {
    Type f32 = g.b.getF32Type();
    Value sum = GatherGradOp::create(
        g.b, g.loc, RankedTensorType::get(dataType.getShape(), f32),
        g.cast(g.grad(), f32, "gradient"), op.getIndices(),
        static_cast<uint64_t>(axis), Value());
    g.set(0, g.cast(sum, elt, "gradient"));
    return success();
  }
  g.set(0, GatherGradOp::create(g.b, g.loc, dataType, g.grad(), op.getIndices(),
                                static_cast<uint64_t>(axis), Value()));
  return success();
}

/// The gradient of scatter_elements and scatter_nd: with `none` each
/// updated entry's gradient goes to its update and the data's gradient
/// there is zero; with `add` both get it.
template <typename ScatterOp, typename GatherOp, typename... Attrs>
LogicalResult scatterRule(ScatterOp op, GradBuilder &g, Attrs... attrs) {
  StringRef reduction = op.getReduction();
  if (reduction != "none" && reduction != "add")
    return g.unsupported() << op->getName() << " with reduction '" << reduction
                           << "'";
  Value grad = g.grad();
  if (g.needs(0))
    g.set(0, reduction == "add"
                 ? grad
                 : ScatterOp::create(
                       g.b, g.loc, grad, op.getIndices(),
                       g.zeros(shapeOf(op.getUpdates()), eltOf(grad)), attrs...,
                       op.getReductionAttr()));
  if (g.needs(2))
    g.set(2, GatherOp::create(g.b, g.loc, grad, op.getIndices(), attrs...));
  return success();
}

LogicalResult rule(ScatterElementsOp op, GradBuilder &g) {
  return scatterRule<ScatterElementsOp, GatherElementsOp>(op, g,
                                                          op.getAxisAttr());
}

LogicalResult rule(ScatterNDOp op, GradBuilder &g) {
  return scatterRule<ScatterNDOp, GatherNDOp>(op, g);
}

/// The gradient of gather_elements and gather_nd: each gathered entry's
/// gradient added into a zero tensor of the data's shape at its index.
LogicalResult rule(GatherElementsOp op, GradBuilder &g) {
  Value zeros = g.zeros(shapeOf(op.getData()), eltOf(g.grad()));
  g.set(0,
        ScatterElementsOp::create(g.b, g.loc, zeros, op.getIndices(), g.grad(),
                                  op.getAxisAttr(), g.b.getStringAttr("add")));
  return success();
}

LogicalResult rule(GatherNDOp op, GradBuilder &g) {
  if (op.getBatchDims() != 0)
    return g.unsupported() << "gather_nd with batch_dims " << op.getBatchDims();
  Value zeros = g.zeros(shapeOf(op.getData()), eltOf(g.grad()));
  g.set(0, ScatterNDOp::create(g.b, g.loc, zeros, op.getIndices(), g.grad(),
                               g.b.getStringAttr("add")));
  return success();
}

LogicalResult rule(GatherGradOp op, GradBuilder &g) {
  // gather_grad is linear in its gradient operand; its adjoint is gather.
  // What it accumulates into passes through.
  g.set(0,
        GatherOp::create(g.b, g.loc, g.grad(), op.getIndices(), op.getAxis()));
  if (op.getInit())
    g.set(2, g.grad());
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The loss gradient of each sample, shaped like the labels (or a scalar
/// when it is the same for all): `g * w[label]`, zero for ignored labels,
/// divided by the total weight of the labels not ignored for `mean`.
Value sampleScale(GradBuilder &g, Value labels, Value weights,
                  std::optional<int64_t> ignoreIndex, LossReduction reduction,
                  Type elt) {
  Value weight; // per sample; null means 1
  if (weights)
    weight = GatherOp::create(g.b, g.loc, weights, labels, uint64_t(0));
  if (ignoreIndex) {
    Value ignored = g.equal(
        labels, g.scalar(static_cast<double>(*ignoreIndex), eltOf(labels)));
    Value keep = g.cast(NotOp::create(g.b, g.loc, ignored), elt);
    weight = weight ? g.mul(weight, keep) : keep;
  }
  Value dy = g.grad();
  if (reduction == LossReduction::Mean) {
    Value total =
        weight ? g.reduceSum(weight, {}, /*keepDims=*/false)
               : g.scalar(static_cast<double>(getNumElements(shapeOf(labels))),
                          elt);
    dy = g.div(dy, total);
  }
  return weight ? g.mul(dy, weight) : dy;
}

/// Whether each position of `[N, C, d...]` scores holds its sample's label:
/// labels unsqueezed at 1 compared with the class numbers `[C, 1, ...]`.
Value labelMask(GradBuilder &g, Value scores, Value labels) {
  ArrayRef<int64_t> shape = shapeOf(scores);
  Shape classShape{shape[1]};
  classShape.append(shape.size() - 2, 1);
  auto classType = RankedTensorType::get(classShape, eltOf(labels));
  SmallVector<APInt> classes;
  unsigned width = eltOf(labels).getIntOrFloatBitWidth();
  for (int64_t c = 0; c < shape[1]; ++c)
    classes.push_back(APInt(width, c, /*isSigned=*/true));
  Value classIds = ConstantOp::create(
      g.b, g.loc, DenseElementsAttr::get(classType, classes));
  return g.equal(g.unsqueeze(labels, 1), classIds);
}

/// The per-sample scale broadcast against `[N, C, d...]`.
Value classBroadcast(GradBuilder &g, Value scale) {
  return shapeOf(scale).empty() ? scale : g.unsqueeze(scale, 1);
}

LogicalResult rule(SoftmaxCrossEntropyLossOp op, GradBuilder &g) {
  if (op.getWeights() && g.needs(2))
    return g.unsupported() << "its class weights (freeze them)";
  if (!g.needs(0))
    return success();
  Value scores = op.getScores(), labels = op.getLabels();
  if (shapeOf(scores).size() == 2 && !op.getWeights()) {
    g.set(0, SoftmaxCrossEntropyGradOp::create(
                 g.b, g.loc, scores.getType(), op.getReductionAttr(), scores,
                 labels, g.grad(), op.getIgnoreIndexAttr()));
    return success();
  }
  // (softmax(scores) - onehot(labels)) * scale, along the class axis 1.
  Type elt = eltOf(scores);
  Value scale = sampleScale(g, labels, op.getWeights(), op.getIgnoreIndex(),
                            op.getReduction(), elt);
  Value probs = SoftmaxOp::create(g.b, g.loc, scores, uint64_t(1));
  Value onehot = g.cast(labelMask(g, scores, labels), elt);
  g.set(0, g.mul(g.sub(probs, onehot), classBroadcast(g, scale)));
  return success();
}

LogicalResult rule(NegativeLogLikelihoodLossOp op, GradBuilder &g) {
  if (op.getWeights() && g.needs(2))
    return g.unsupported() << "its class weights (freeze them)";
  if (!g.needs(0))
    return success();
  // -scale at each sample's label, zero elsewhere.
  Value input = op.getInput();
  Type elt = eltOf(input);
  Value scale = sampleScale(g, op.getTarget(), op.getWeights(),
                            op.getIgnoreIndex(), op.getReduction(), elt);
  g.set(0, g.select(labelMask(g, input, op.getTarget()),
                    g.neg(classBroadcast(g, scale)), g.scalar(0.0, elt)));
  return success();
}

LogicalResult rule(SoftmaxCrossEntropyGradOp op, GradBuilder &g) {
  return g.unsupported() << "second-order gradients of a loss";
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

template <typename OpTy>
struct GradientModel
    : GradientOpInterface::ExternalModel<GradientModel<OpTy>, OpTy> {
  LogicalResult buildGradients(Operation *op, OpBuilder &builder,
                               ArrayRef<Value> resultGrads,
                               ArrayRef<bool> needsGrad,
                               SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(op->getNumOperands(), Value());
    GradBuilder g(op, builder, resultGrads, needsGrad, operandGrads);
    if (!g.hasResultGrad() || !g.needsAny())
      return success();
    return rule(cast<OpTy>(op), g);
  }
};

template <typename... OpTys> void attach(MLIRContext *context) {
  (OpTys::template attachInterface<GradientModel<OpTys>>(*context), ...);
}

} // namespace

void mlir::memfit::attachGradientInterfaces(MLIRContext *context) {
  attach<
      // Leaves and ops with boolean results: no gradient.
      LoadParameterOp, ConstantOp, RangeOp, NotOp, EqualOp, LessOp, GreaterOp,
      AndOp, OrOp, XorOp, IsNaNOp, IsInfOp, DropoutMaskOp, TopKIndicesOp,
      // Element-wise.
      NegOp, ExpOp, LogOp, SqrtOp, ReciprocalOp, ErfOp, TanhOp, SigmoidOp,
      ReluOp, SinOp, CosOp, GeluOp, DropoutOp, CastOp, TriluOp, AddOp, SubOp,
      MulOp, DivOp, PowOp, FmodOp, MaxOp, MinOp, WhereOp, CumSumOp,
      // Contractions and normalizations.
      MatMulOp, GemmOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp, RMSNormOp,
      // Reductions and data movement.
      ReduceSumOp, ReduceMeanOp, ReduceMaxOp, TransposeOp, ReshapeOp, FlattenOp,
      SqueezeOp, UnsqueezeOp, ExpandOp, ConcatOp, SplitOp, SliceOp, GatherOp,
      GatherGradOp, GatherElementsOp, GatherNDOp, ScatterElementsOp,
      ScatterNDOp,
      // Losses.
      SoftmaxCrossEntropyLossOp, NegativeLogLikelihoodLossOp,
      SoftmaxCrossEntropyGradOp>(context);
}
