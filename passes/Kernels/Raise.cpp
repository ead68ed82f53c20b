//===- Raise.cpp - memfit-raise: spelled-out patterns as named ops --------===//
//-----===//
//
// Exporters write GELU, RMSNorm, LayerNorm and softmax as chains of
// element-wise ops and reductions. Each chain saves several full-size
// tensors for the backward and runs as several kernels; the named op saves
// its input and runs as one. The matchers below recognize the spellings of
// the PyTorch exporters and Hugging Face's modules: products and sums are
// flattened (any association and order, constants folded into one
// coefficient), so `0.5 * x * (1 + t)` and `(x * (1 + t)) * 0.5` match
// alike. See the pass description in Passes.td and docs/passes.md.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Passes/PassOutput.h"
#include "memfit/Passes/Passes.h"
#include "RaiseMatch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITRAISEPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::raise;

namespace {

RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// `value` as a sum: its non-constant terms (through add, and sub of a
/// constant) and the sum of its constant terms.
struct Sum {
  SmallVector<Value, 4> terms;
  double constant = 0;
};

void flattenSum(Value value, Sum &sum, bool root) {
  if (std::optional<double> c = splatValue(value)) {
    sum.constant += *c;
    return;
  }
  if (root || value.hasOneUse()) {
    if (auto add = value.getDefiningOp<AddOp>()) {
      flattenSum(add.getLhs(), sum, false);
      flattenSum(add.getRhs(), sum, false);
      return;
    }
    if (auto sub = value.getDefiningOp<SubOp>())
      if (std::optional<double> c = splatValue(sub.getRhs())) {
        flattenSum(sub.getLhs(), sum, false);
        sum.constant -= *c;
        return;
      }
  }
  sum.terms.push_back(value);
}

/// The sum `value` is, flattened as productOf.
Sum sumOf(Value value) {
  Sum sum;
  flattenSum(value, sum, /*root=*/true);
  return sum;
}

/// Whether `factors` are `x` exactly `n` times (a pow(x, n) counts n).
bool isPowerOf(ArrayRef<Value> factors, Value x, int n) {
  int count = 0;
  for (Value f : factors) {
    if (f == x) {
      ++count;
      continue;
    }
    auto pow = f.getDefiningOp<PowOp>();
    std::optional<double> e = pow ? splatValue(pow.getRhs()) : std::nullopt;
    if (!pow || pow.getLhs() != x || !e || *e != std::round(*e) || *e < 1)
      return false;
    count += static_cast<int>(*e);
  }
  return count == n;
}

/// `1 + f(arg)` where f is `T` (tanh or erf): its argument, else null.
template <typename T> Value onePlus(Value value) {
  Sum sum = sumOf(value);
  if (sum.terms.size() != 1 || !near(sum.constant, 1))
    return {};
  auto op = sum.terms[0].getDefiningOp<T>();
  return op ? op.getInput() : Value();
}

/// The GELU of `x` that `u`, the argument of its tanh, completes:
/// `sqrt(2/pi) * (x + 0.044715 x^3)` or `sqrt(2/pi) * x * (1 + 0.044715 x^2)`.
bool isTanhArgument(Value u, Value x) {
  Product p = productOf(u);
  if (!near(p.coefficient, std::sqrt(2 / M_PI)))
    return false;
  auto isCubicTerm = [&](Value term, int power) {
    Product t = productOf(term);
    return near(t.coefficient, 0.044715) && isPowerOf(t.factors, x, power);
  };
  if (p.factors.size() == 1) { // k * (x + 0.044715 x^3)
    Sum s = sumOf(p.factors[0]);
    return s.terms.size() == 2 && s.constant == 0 &&
           ((s.terms[0] == x && isCubicTerm(s.terms[1], 3)) ||
            (s.terms[1] == x && isCubicTerm(s.terms[0], 3)));
  }
  if (p.factors.size() == 2) // k * x * (1 + 0.044715 x^2)
    for (int i = 0; i < 2; ++i) {
      Sum s = sumOf(p.factors[1 - i]);
      if (p.factors[i] == x && s.terms.size() == 1 && near(s.constant, 1) &&
          isCubicTerm(s.terms[0], 2))
        return true;
    }
  return false;
}

/// `0.5 * x * (1 + erf(x / sqrt(2)))` or `0.5 * x * (1 + tanh(...))`:
/// the GELU's approximation and input.
std::optional<std::pair<GeluApproximation, Value>> matchGelu(MulOp mul) {
  Product p = productOf(mul.getResult());
  if (p.factors.size() != 2 || !near(p.coefficient, 0.5))
    return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    Value x = p.factors[i], t = p.factors[1 - i];
    if (typeOf(x) != mul.getType())
      continue;
    if (Value w = onePlus<ErfOp>(t)) {
      Product q = productOf(w);
      if (q.factors.size() == 1 && q.factors[0] == x &&
          near(q.coefficient, M_SQRT1_2))
        return std::make_pair(GeluApproximation::None, x);
    }
    if (Value u = onePlus<TanhOp>(t); u && isTanhArgument(u, x))
      return std::make_pair(GeluApproximation::Tanh, x);
  }
  return std::nullopt;
}

/// A mean over trailing dimensions with keepdims: the first of them, else
/// nothing.
std::optional<int64_t> trailingAxis(ReduceMeanOp mean) {
  int64_t rank = typeOf(mean.getInput()).getRank();
  if (!mean.getKeepdims() || rank == 0)
    return std::nullopt;
  SmallVector<int64_t> axes;
  for (int64_t a : mean.getAxes())
    axes.push_back(a < 0 ? a + rank : a);
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  llvm::sort(axes);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i))
      return std::nullopt;
  return axes.front();
}

/// `x * x` or `x ^ 2`: x, else null.
Value squared(Value value) {
  if (auto mul = value.getDefiningOp<MulOp>())
    return mul.getLhs() == mul.getRhs() ? mul.getLhs() : Value();
  if (auto pow = value.getDefiningOp<PowOp>()) {
    std::optional<double> e = splatValue(pow.getRhs());
    return e && *e == 2 ? pow.getLhs() : Value();
  }
  return {};
}

/// The users of `value` of type T.
template <typename T> SmallVector<T> usersOf(Value value) {
  SmallVector<T> users;
  for (Operation *user : value.getUsers())
    if (auto op = dyn_cast<T>(user))
      users.push_back(op);
  return users;
}

/// `numerator / sqrt(variance + eps)` spelled as a div by the sqrt, or a
/// mul by its reciprocal (`reciprocal(s)` or `1 / s`): the value that is
/// the normalized `numerator` and eps, found from `variance`'s users.
std::optional<std::pair<Value, double>> normalized(Value variance,
                                                   Value numerator) {
  for (AddOp add : usersOf<AddOp>(variance)) {
    Value other = add.getLhs() == variance ? add.getRhs() : add.getLhs();
    std::optional<double> eps = splatValue(other);
    if (!eps || *eps < 0 || add.getType() != variance.getType())
      continue;
    for (SqrtOp sqrt : usersOf<SqrtOp>(add.getResult())) {
      Value s = sqrt.getResult();
      for (DivOp div : usersOf<DivOp>(s))
        if (div.getRhs() == s && div.getLhs() == numerator)
          return std::make_pair(div.getResult(), *eps);
      SmallVector<Value> inverses;
      for (ReciprocalOp r : usersOf<ReciprocalOp>(s))
        inverses.push_back(r.getResult());
      for (DivOp div : usersOf<DivOp>(s)) {
        std::optional<double> one = splatValue(div.getLhs());
        if (div.getRhs() == s && one && *one == 1)
          inverses.push_back(div.getResult());
      }
      for (Value inv : inverses)
        for (MulOp mul : usersOf<MulOp>(inv))
          if ((mul.getLhs() == numerator && mul.getRhs() == inv) ||
              (mul.getRhs() == numerator && mul.getLhs() == inv))
            return std::make_pair(mul.getResult(), *eps);
    }
  }
  return std::nullopt;
}

/// The single user of `value` that is a T with `value` as one operand and,
/// as the other, a parameter that broadcasts to the normalized shape
/// shape[axis:] without changing the type: that user and the parameter.
template <typename T>
std::optional<std::pair<T, Value>> affine(Value value, int64_t axis) {
  if (!value.hasOneUse())
    return std::nullopt;
  auto op = dyn_cast<T>(*value.getUsers().begin());
  if (!op || op.getType() != value.getType())
    return std::nullopt;
  Value param = op.getLhs() == value ? op.getRhs() : op.getLhs();
  if (typeOf(param).getElementType() != typeOf(value).getElementType() ||
      failed(verifyNormParam(typeOf(value).getShape(), axis,
                             typeOf(param).getShape(), "", std::nullopt)))
    return std::nullopt;
  return std::make_pair(op, param);
}

/// A constant of ones of the normalized shape of `x` from `axis` on.
Value onesScale(OpBuilder &b, Location loc, Value x, int64_t axis) {
  auto type = typeOf(x);
  auto scaleType = RankedTensorType::get(type.getShape().drop_front(axis),
                                         type.getElementType());
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(scaleType,
                             FloatAttr::get(type.getElementType(), 1.0)));
}

/// The location of a raised op: the fused locations of the ops it
/// replaces (the anchor's and the reduction's), so that kernels still list
/// the ONNX nodes.
struct MemfitRaisePass
    : public mlir::memfit::impl::MemfitRaisePassBase<MemfitRaisePass> {
  using MemfitRaisePassBase::MemfitRaisePassBase;

  int64_t numGelu = 0, numRmsNorm = 0, numLayerNorm = 0, numSoftmax = 0,
          numRotary = 0;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> candidates;
    module.walk([&](Operation *op) {
      if (isa<MulOp, ReduceMeanOp, DivOp, AddOp>(op))
        candidates.push_back(op);
    });
    // Erased ops are only ever ones that the raised op made dead, never a
    // candidate not yet visited: dead ops go at the end.
    for (Operation *op : candidates) {
      if (auto mul = dyn_cast<MulOp>(op))
        raiseGelu(mul);
      else if (auto mean = dyn_cast<ReduceMeanOp>(op))
        raiseNorm(mean);
      else if (auto add = dyn_cast<AddOp>(op))
        raiseRotary(add);
      else
        raiseSoftmax(cast<DivOp>(op));
    }
    IRRewriter rewriter(&getContext());
    for (auto func : module.getOps<func::FuncOp>())
      (void)runRegionDCE(rewriter, func->getRegions());
    if (!report.empty())
      writeReport(module);
  }

  void writeReport(ModuleOp module) {
    auto file = openPassOutput(module, report, "memfit-raise report");
    if (!file)
      return signalPassFailure();
    file->os() << "memfit-raise: " << numGelu << " gelu, " << numLayerNorm
               << " layer_norm, " << numRmsNorm << " rms_norm, " << numSoftmax
               << " softmax, " << numRotary << " rotary raised\n";
    file->keep();
  }

  void replace(Operation *anchor, Value raised) {
    anchor->getResult(0).replaceAllUsesWith(raised);
  }

  void raiseGelu(MulOp mul) {
    if (mul->use_empty() || !isa<FloatType>(mul.getType().getElementType()))
      return;
    auto gelu = matchGelu(mul);
    if (!gelu)
      return;
    OpBuilder b(mul);
    replace(mul, GeluOp::create(b, mul.getLoc(), gelu->first, gelu->second));
    ++numGelu;
  }

  /// RMSNorm `x / sqrt(mean(x^2) + eps) [* scale]` and LayerNorm
  /// `(x - m) / sqrt(mean((x - m)^2) + eps) [* scale] [+ bias]` with
  /// `m = mean(x)`, anchored at the mean of the squares for RMSNorm and at
  /// `m` for LayerNorm.
  void raiseNorm(ReduceMeanOp mean) {
    if (mean->use_empty() ||
        !isa<FloatType>(typeOf(mean.getInput()).getElementType()))
      return;
    std::optional<int64_t> axis = trailingAxis(mean);
    if (!axis)
      return;
    // A LayerNorm's variance normalizes `x - m` as an RMSNorm would; its
    // mean `m` comes first and raises the whole LayerNorm.
    if (Value x = squared(mean.getInput()))
      if (auto y = normalized(mean.getResult(), x))
        return raiseRms(mean, x, y->first, y->second, *axis);
    Value x = mean.getInput();
    for (SubOp centered : usersOf<SubOp>(mean.getResult())) {
      if (centered.getLhs() != x || centered.getRhs() != mean.getResult() ||
          centered.getType() != x.getType())
        continue;
      Value d = centered.getResult();
      for (Operation *user : d.getUsers()) {
        if (user->getNumResults() != 1 || squared(user->getResult(0)) != d)
          continue;
        for (ReduceMeanOp variance : usersOf<ReduceMeanOp>(user->getResult(0)))
          if (trailingAxis(variance) == axis)
            if (auto y = normalized(variance.getResult(), d))
              return raiseLayerNorm(mean, x, y->first, y->second, *axis);
      }
    }
  }

  void raiseRms(ReduceMeanOp mean, Value x, Value y, double eps, int64_t axis) {
    if (y.getType() != x.getType() || y.use_empty())
      return;
    Operation *anchor = y.getDefiningOp();
    Value scale;
    if (auto scaled = affine<MulOp>(y, axis)) {
      anchor = scaled->first;
      scale = scaled->second;
    }
    OpBuilder b(anchor);
    Location loc = fusedLoc({mean, anchor});
    if (!scale)
      scale = onesScale(b, loc, x, axis);
    replace(anchor, RMSNormOp::create(b, loc, x, scale, axis,
                                      APFloat(static_cast<float>(eps))));
    ++numRmsNorm;
  }

  void raiseLayerNorm(ReduceMeanOp mean, Value x, Value y, double eps,
                      int64_t axis) {
    if (y.getType() != x.getType() || y.use_empty())
      return;
    Operation *anchor = y.getDefiningOp();
    Value scale, bias;
    if (auto scaled = affine<MulOp>(y, axis)) {
      anchor = scaled->first;
      scale = scaled->second;
    }
    if (auto shifted = affine<AddOp>(anchor->getResult(0), axis)) {
      anchor = shifted->first;
      bias = shifted->second;
    }
    OpBuilder b(anchor);
    Location loc = fusedLoc({mean, anchor});
    if (!scale)
      scale = onesScale(b, loc, x, axis);
    replace(anchor, LayerNormOp::create(b, loc, x, scale, bias, axis,
                                        APFloat(static_cast<float>(eps))));
    ++numLayerNorm;
  }

  /// The x of `concat(-x[..., h:], x[..., :h])` along x's last axis of 2h
  /// elements (rotate_half), else null.
  static Value rotatedHalves(ConcatOp concat) {
    if (concat.getInputs().size() != 2)
      return {};
    auto neg = concat.getInputs()[0].getDefiningOp<NegOp>();
    auto low = concat.getInputs()[1].getDefiningOp<SliceOp>();
    auto high = neg ? neg.getInput().getDefiningOp<SliceOp>() : SliceOp();
    if (!low || !high || low.getInput() != high.getInput())
      return {};
    Value x = low.getInput();
    ArrayRef<int64_t> shape = typeOf(x).getShape();
    int64_t rank = shape.size(), width = rank ? shape.back() : 0;
    auto lastAxis = [&](int64_t a) { return a == rank - 1 || a == -1; };
    auto sliced = [&](SliceOp slice, int64_t begin, int64_t end) {
      return slice.getAxes().size() == 1 && lastAxis(slice.getAxes()[0]) &&
             slice.getStarts().size() == 1 && slice.getStarts()[0] == begin &&
             slice.getEnds().size() == 1 && slice.getEnds()[0] >= end &&
             (begin == 0 ? slice.getEnds()[0] == end : true) &&
             llvm::all_of(slice.getSteps(), [](int64_t s) { return s == 1; });
    };
    int64_t half = width / 2;
    if (rank < 1 || width % 2 || !lastAxis(concat.getAxis()) ||
        !sliced(low, 0, half) || !sliced(high, half, width) ||
        typeOf(concat.getResult()) != typeOf(x))
      return {};
    return x;
  }

  /// `x * cos + rotate_half(x) * sin` (either order of the sum and of each
  /// product), with cos and sin broadcast to x: Hugging Face's
  /// apply_rotary_pos_emb, anchored at the sum.
  void raiseRotary(AddOp add) {
    if (add->use_empty() || !isa<FloatType>(add.getType().getElementType()))
      return;
    for (auto [first, second] : {std::pair(add.getLhs(), add.getRhs()),
                                 std::pair(add.getRhs(), add.getLhs())}) {
      auto byCos = first.getDefiningOp<MulOp>();
      auto bySin = second.getDefiningOp<MulOp>();
      if (!byCos || !bySin || !byCos->hasOneUse() || !bySin->hasOneUse())
        continue;
      for (auto [rotated, sin] : {std::pair(bySin.getLhs(), bySin.getRhs()),
                                  std::pair(bySin.getRhs(), bySin.getLhs())}) {
        auto concat = rotated.getDefiningOp<ConcatOp>();
        Value x = concat ? rotatedHalves(concat) : Value();
        if (!x || typeOf(x) != add.getType())
          continue;
        Value cos = byCos.getLhs() == x   ? byCos.getRhs()
                    : byCos.getRhs() == x ? byCos.getLhs()
                                          : Value();
        if (!cos)
          continue;
        // The tables broadcast to x (memfit.rotary's rule).
        auto fits = [&](Value table) {
          return typeOf(table).getElementType() ==
                     typeOf(x).getElementType() &&
                 isBroadcastableTo(typeOf(table).getShape(),
                                   typeOf(x).getShape());
        };
        if (!fits(cos) || !fits(sin))
          continue;
        OpBuilder b(add);
        replace(add, RotaryOp::create(b, fusedLoc({byCos, bySin, concat, add}),
                                      x, cos, sin, false));
        ++numRotary;
        return;
      }
    }
  }

  /// `exp(x - max(x)) / sum(exp(x - max(x)))` (or without the max) along
  /// one axis, anchored at the division.
  void raiseSoftmax(DivOp div) {
    if (div->use_empty() || !isa<FloatType>(div.getType().getElementType()))
      return;
    auto sum = div.getRhs().getDefiningOp<ReduceSumOp>();
    auto exp = div.getLhs().getDefiningOp<ExpOp>();
    if (!sum || !exp || sum.getInput() != exp.getResult() ||
        !sum.getKeepdims() || sum.getAxes().size() != 1 ||
        exp.getType() != div.getType())
      return;
    int64_t rank = div.getType().getRank();
    auto normalize = [&](int64_t a) { return a < 0 ? a + rank : a; };
    int64_t axis = normalize(sum.getAxes()[0]);
    Value x = exp.getInput();
    if (auto shifted = x.getDefiningOp<SubOp>())
      if (auto max = shifted.getRhs().getDefiningOp<ReduceMaxOp>())
        if (max.getInput() == shifted.getLhs() && max.getKeepdims() &&
            max.getAxes().size() == 1 && normalize(max.getAxes()[0]) == axis)
          x = shifted.getLhs();
    OpBuilder b(div);
    replace(div, SoftmaxOp::create(b, fusedLoc({sum, div}), x, axis));
    ++numSoftmax;
  }
};

} // namespace
