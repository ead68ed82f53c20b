//===- GradBuilder.h - what the gradient rules share ------------*- C++ -*-===//
//
// Private to the gradient rules (lib/Dialect/Gradients/): GradBuilder, what
// a rule works with and builds its ops through, and GradientModel, the
// external model of GradientOpInterface that runs a rule.
//
// Each family of ops has its rules in <Family>Gradients.cpp: for each op,
// `static LogicalResult rule(OpTy op, GradBuilder &g)` in namespace
// mlir::memfit::grad (GradientModel finds it by argument-dependent lookup),
// and one attach<Family>Gradients() that attaches the family's rules with
// attachRules<...>(). attachGradientInterfaces (Gradients.cpp) calls every
// family's.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_DIALECT_GRADIENTS_GRADBUILDER_H
#define MEMFIT_LIB_DIALECT_GRADIENTS_GRADBUILDER_H

#include "memfit/Dialect/Gradients.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"

namespace mlir::memfit::grad {

/// Whether `v` has a float element type, so that it can carry a gradient.
inline bool isFloat(Value v) { return isa<FloatType>(eltOf(v)); }

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
    return unbroadcast(b, loc, x, llvm::cast<RankedTensorType>(like.getType()));
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

/// The external model of GradientOpInterface for OpTy: gives every operand
/// a null gradient, then, when some result has a gradient and some operand
/// wants one, runs the `rule` of OpTy.
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

/// Attaches the rule of each of OpTys; call it after the rules.
template <typename... OpTys> void attachRules(MLIRContext *context) {
  (OpTys::template attachInterface<GradientModel<OpTys>>(*context), ...);
}

/// The rule of an op without a float gradient: a leaf (no operands) or an
/// op with boolean or index results.
#define MEMFIT_NO_GRADIENT(OP)                                                 \
  static LogicalResult rule(OP, GradBuilder &) { return success(); }

/// Each family's rules, attached; attachGradientInterfaces calls them all.
void attachStorageGradients(MLIRContext *context);
void attachElementwiseGradients(MLIRContext *context);
void attachContractionGradients(MLIRContext *context);
void attachReductionGradients(MLIRContext *context);
void attachDataMovementGradients(MLIRContext *context);
void attachLossGradients(MLIRContext *context);
void attachAttentionGradients(MLIRContext *context);

} // namespace mlir::memfit::grad

#endif // MEMFIT_LIB_DIALECT_GRADIENTS_GRADBUILDER_H
