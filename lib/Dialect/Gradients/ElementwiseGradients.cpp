//===- ElementwiseGradients.cpp - gradients of element-wise ops -----------===//
//
// The rules of the element-wise ops. Edge cases follow PyTorch's autograd:
//
//  - relu: zero at x <= 0 (and at NaN).
//  - pow: d/dbase is zero where the exponent is zero; d/dexponent is
//    y * log(x), zero where x == 0. (PyTorch gives -inf there for a negative
//    exponent; the loss is infinite then anyway.)
//  - max and min: split in half between tied operands.
//  - dropout: the same dropout of the gradient (its mask depends on its
//    attributes, its step operand and the element's index alone).
//
// The predicates and the ops with boolean results carry no gradient.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"

#include <cmath>

namespace mlir::memfit::grad {

/// Ops with boolean results.
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

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

/// Unary ops whose gradient is `g * f(x, y)`.
template <typename OpTy, typename Fn>
static LogicalResult unaryRule(OpTy op, GradBuilder &g, Fn derivative) {
  g.set(0, g.mul(g.grad(), derivative(op.getInput(), op.getResult())));
  return success();
}

static LogicalResult rule(NegOp, GradBuilder &g) {
  g.set(0, g.neg(g.grad()));
  return success();
}

static LogicalResult rule(ExpOp op, GradBuilder &g) {
  return unaryRule(op, g, [](Value, Value y) { return y; });
}

static LogicalResult rule(LogOp op, GradBuilder &g) {
  g.set(0, g.div(g.grad(), op.getInput()));
  return success();
}

static LogicalResult rule(SqrtOp op, GradBuilder &g) {
  // g / (2 * sqrt(x)).
  Type elt = eltOf(op.getInput());
  g.set(0, g.div(g.mul(g.grad(), g.scalar(0.5, elt)), op.getResult()));
  return success();
}

static LogicalResult rule(ReciprocalOp op, GradBuilder &g) {
  // -g * y^2.
  return unaryRule(op, g, [&](Value, Value y) { return g.neg(g.mul(y, y)); });
}

static LogicalResult rule(ErfOp op, GradBuilder &g) {
  // g * 2/sqrt(pi) * exp(-x^2).
  Type elt = eltOf(op.getInput());
  return unaryRule(op, g, [&](Value x, Value) {
    return g.mul(g.exp(g.neg(g.mul(x, x))),
                 g.scalar(2.0 / std::sqrt(M_PI), elt));
  });
}

static LogicalResult rule(TanhOp op, GradBuilder &g) {
  // g * (1 - y^2).
  Type elt = eltOf(op.getInput());
  return unaryRule(op, g, [&](Value, Value y) {
    return g.sub(g.scalar(1.0, elt), g.mul(y, y));
  });
}

static LogicalResult rule(SigmoidOp op, GradBuilder &g) {
  // g * y * (1 - y).
  Type elt = eltOf(op.getInput());
  return unaryRule(op, g, [&](Value, Value y) {
    return g.mul(y, g.sub(g.scalar(1.0, elt), y));
  });
}

static LogicalResult rule(ReluOp op, GradBuilder &g) {
  Type elt = eltOf(op.getInput());
  Value positive =
      GreaterOp::create(g.b, g.loc, op.getInput(), g.scalar(0.0, elt));
  g.set(0, g.select(positive, g.grad(), g.scalar(0.0, elt)));
  return success();
}

static LogicalResult rule(SinOp op, GradBuilder &g) {
  return unaryRule(
      op, g, [&](Value x, Value) { return CosOp::create(g.b, g.loc, x); });
}

static LogicalResult rule(CosOp op, GradBuilder &g) {
  return unaryRule(op, g, [&](Value x, Value) {
    return g.neg(SinOp::create(g.b, g.loc, x));
  });
}

static LogicalResult rule(GeluOp op, GradBuilder &g) {
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

static LogicalResult rule(DropoutOp op, GradBuilder &g) {
  if (op.getRatio().isZero()) {
    g.set(0, g.grad());
    return success();
  }
  // The same dropout of the gradient: its mask depends on the attributes,
  // the step and the element's index alone, so the same elements are kept.
  g.set(0, DropoutOp::create(g.b, g.loc, g.grad().getType(), g.grad(),
                             op.getDropoutStep(), op.getRatioAttr(),
                             op.getSeedAttr(), op.getStreamAttr()));
  return success();
}

static LogicalResult rule(CastOp op, GradBuilder &g) {
  // Only float-to-float casts pass a gradient; the operand is float here.
  if (isFloat(op.getResult()))
    g.set(0, g.cast(g.grad(), eltOf(op.getInput()), "gradient"));
  return success();
}

static LogicalResult rule(TriluOp op, GradBuilder &g) {
  g.set(0, TriluOp::create(g.b, g.loc, g.grad(), op.getUpperAttr(),
                           op.getKAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Ops with broadcasting
//===----------------------------------------------------------------------===//

static LogicalResult rule(AddOp op, GradBuilder &g) {
  if (g.needs(0))
    g.set(0, g.unbroadcastTo(g.grad(), op.getLhs()));
  if (g.needs(1))
    g.set(1, g.unbroadcastTo(g.grad(), op.getRhs()));
  return success();
}

static LogicalResult rule(SubOp op, GradBuilder &g) {
  if (g.needs(0))
    g.set(0, g.unbroadcastTo(g.grad(), op.getLhs()));
  if (g.needs(1))
    g.set(1, g.neg(g.unbroadcastTo(g.grad(), op.getRhs())));
  return success();
}

static LogicalResult rule(MulOp op, GradBuilder &g) {
  if (g.needs(0))
    g.set(0, g.unbroadcastTo(g.mul(g.grad(), op.getRhs()), op.getLhs()));
  if (g.needs(1))
    g.set(1, g.unbroadcastTo(g.mul(g.grad(), op.getLhs()), op.getRhs()));
  return success();
}

static LogicalResult rule(DivOp op, GradBuilder &g) {
  // d/da = g / b; d/db = -g a / b^2 = -(g / b) * y.
  Value scaled = g.div(g.grad(), op.getRhs());
  if (g.needs(0))
    g.set(0, g.unbroadcastTo(scaled, op.getLhs()));
  if (g.needs(1))
    g.set(1,
          g.neg(g.unbroadcastTo(g.mul(scaled, op.getResult()), op.getRhs())));
  return success();
}

static LogicalResult rule(FmodOp op, GradBuilder &g) {
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

static LogicalResult rule(PowOp op, GradBuilder &g) {
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
static LogicalResult extremumRule(Value lhs, Value rhs, GradBuilder &g) {
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

static LogicalResult rule(MaxOp op, GradBuilder &g) {
  return extremumRule<GreaterOp>(op.getLhs(), op.getRhs(), g);
}

static LogicalResult rule(MinOp op, GradBuilder &g) {
  return extremumRule<LessOp>(op.getLhs(), op.getRhs(), g);
}

static LogicalResult rule(WhereOp op, GradBuilder &g) {
  Value zero = g.scalar(0.0, eltOf(op.getResult()));
  if (g.needs(1))
    g.set(1, g.unbroadcastTo(g.select(op.getCondition(), g.grad(), zero),
                             op.getLhs()));
  if (g.needs(2))
    g.set(2, g.unbroadcastTo(g.select(op.getCondition(), zero, g.grad()),
                             op.getRhs()));
  return success();
}

void attachElementwiseGradients(MLIRContext *context) {
  attachRules<NotOp, EqualOp, LessOp, GreaterOp, AndOp, OrOp, XorOp, IsNaNOp,
              IsInfOp, DropoutMaskOp, NegOp, ExpOp, LogOp, SqrtOp, ReciprocalOp,
              ErfOp, TanhOp, SigmoidOp, ReluOp, SinOp, CosOp, GeluOp, DropoutOp,
              CastOp, TriluOp, AddOp, SubOp, MulOp, DivOp, PowOp, FmodOp, MaxOp,
              MinOp, WhereOp>(context);
}

} // namespace mlir::memfit::grad
