//===- Autodiff.cpp - reverse-mode differentiation of a memfit function ----===//
//
// Turns a forward function into one that returns the loss and the gradient
// of the loss with respect to every trainable parameter. The gradient ops
// come from each op's GradientOpInterface rule (lib/Dialect/Gradients.cpp);
// this pass decides what to differentiate, seeds and sums the gradients,
// and rewrites the function's signature.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/Gradients.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"
#include "memfit/Support/GlobList.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITAUTODIFFPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

struct MemfitAutodiffPass
    : public mlir::memfit::impl::MemfitAutodiffPassBase<MemfitAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> entry = findEntryFunction(module, this->entry);
    if (failed(entry) || failed(differentiate(module, *entry)))
      return signalPassFailure();
  }

  /// Marks each candidate parameter trainable or frozen; returns the
  /// trainable ones by name.
  LogicalResult chooseParameters(ModuleOp module, llvm::StringSet<> &chosen) {
    GlobList include, exclude;
    std::string error;
    if (!include.parse(trainable, "trainable", error) ||
        !exclude.parse(frozen, "frozen", error))
      return module.emitError(error);
    Builder builder(module.getContext());
    for (auto param : module.getOps<ParameterOp>()) {
      // An earlier pass's freeze (memfit-lora's base weights) stands.
      if (!isTrainableCandidate(param) || parameterRole(param) == kRoleFrozen)
        continue;
      StringRef name = param.getSymName();
      bool train =
          (include.empty() || include.match(name)) && !exclude.match(name);
      param->setAttr(kRoleAttr,
                     builder.getStringAttr(train ? kRoleParameter : kRoleFrozen));
      if (train)
        chosen.insert(name);
    }
    return success();
  }

  /// Cross-entropy of `output` against flat `labels` as
  /// linear_cross_entropy when `output` is an LM head's contraction that
  /// nothing else reads: `hidden . weight` ([..., D] x [D, V], a MatMul, or
  /// a Gemm whose weight may be transposed), plus an optional bias [V] (a
  /// Gemm's C with beta 1, or an add of the contraction and the bias),
  /// taken to f32 by a cast or f32 already; null otherwise.
  Value buildLinearLoss(OpBuilder &builder, Location loc, Value output,
                        Value labels) {
    if (!eltOf(output).isF32() || !output.hasOneUse())
      return {};
    Value logits = output;
    if (auto cast = logits.getDefiningOp<CastOp>())
      if (isa<FloatType>(eltOf(cast.getInput())) &&
          cast.getInput().hasOneUse())
        logits = cast.getInput();
    Value hidden, weight, bias;
    // A bias [V] added to the contraction.
    auto isBias = [&](Value b, Value x) {
      return shapeOf(b).size() == 1 && !shapeOf(x).empty() &&
             shapeOf(b)[0] == shapeOf(x).back() && eltOf(b) == eltOf(x);
    };
    if (auto add = logits.getDefiningOp<AddOp>()) {
      for (unsigned i : {0u, 1u}) {
        Value x = add->getOperand(i), b = add->getOperand(1 - i);
        if (x.hasOneUse() && isBias(b, x) &&
            shapeOf(x) == shapeOf(add.getResult()) &&
            (x.getDefiningOp<MatMulOp>() || x.getDefiningOp<GemmOp>())) {
          logits = x;
          bias = b;
          break;
        }
      }
    }
    if (auto mm = logits.getDefiningOp<MatMulOp>()) {
      if (mm.getTransA() || mm.getTransB() || mm.getResultPerm() ||
          shapeOf(mm.getRhs()).size() != 2 || shapeOf(mm.getLhs()).size() < 2)
        return {};
      hidden = mm.getLhs();
      weight = mm.getRhs();
    } else if (auto gemm = logits.getDefiningOp<GemmOp>()) {
      if (gemm.getTransA() || gemm.getAlpha().convertToDouble() != 1.0)
        return {};
      if (Value c = gemm.getC()) {
        if (bias || !isBias(c, logits) ||
            gemm.getBeta().convertToDouble() != 1.0)
          return {};
        bias = c;
      }
      hidden = gemm.getA();
      weight = gemm.getB();
      if (gemm.getTransB())
        weight = TransposeOp::create(builder, loc, weight,
                                     ArrayRef<int64_t>{1, 0});
    } else {
      return {};
    }
    ArrayRef<int64_t> h = shapeOf(hidden);
    int64_t rows = getNumElements(h.drop_back());
    if (rows != shapeOf(labels)[0])
      return {};
    if (h.size() != 2)
      hidden = ReshapeOp::create(
          builder, loc, RankedTensorType::get({rows, h.back()}, eltOf(hidden)),
          hidden);
    return LinearCrossEntropyOp::create(
        builder, loc,
        LossReductionAttr::get(builder.getContext(), LossReduction::Mean),
        hidden, weight, labels, bias, builder.getI64IntegerAttr(ignoreIndex));
  }

  /// The scalar loss, built at the end of the function when attached.
  FailureOr<Value> buildLoss(func::FuncOp func, func::ReturnOp ret) {
    Location loc = func.getLoc();
    if (ret.getNumOperands() == 0)
      return func.emitError("the function has no output to take a loss of");
    if (loss == ::memfit::LossKind::Output) {
      SmallVector<Value> scalars;
      for (Value value : ret.getOperands()) {
        auto type = cast<RankedTensorType>(value.getType());
        if (type.getRank() == 0 && isa<FloatType>(type.getElementType()))
          scalars.push_back(value);
      }
      if (scalars.size() != 1)
        return func.emitError("loss=output needs exactly one float scalar "
                              "output, the function has ")
               << scalars.size()
               << "; attach one with loss=cross-entropy or loss=mse";
      return scalars.front();
    }

    Value output = ret.getOperand(0);
    auto outType = cast<RankedTensorType>(output.getType());
    if (!isa<FloatType>(outType.getElementType()))
      return func.emitError("the first output is ")
             << outType << ", not a float tensor to take a loss of";
    OpBuilder builder(ret);
    MLIRContext *ctx = func.getContext();
    for (BlockArgument arg : func.getArguments())
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "onnx.name"))
        if (name.getValue() == "labels" || name.getValue() == "target")
          return func.emitError("the function already has an input named '")
                 << name.getValue() << "'";

    if (loss == ::memfit::LossKind::Mse) {
      Value target = appendNamedArgument(func, outType, "target");
      Value diff = SubOp::create(builder, loc, output, target);
      Value square = MulOp::create(builder, loc, diff, diff);
      return ReduceMeanOp::create(builder, loc, square,
                                  builder.getDenseI64ArrayAttr({}),
                                  builder.getBoolAttr(false))
          .getResult();
    }
    if (outType.getRank() < 1)
      return func.emitError("cross-entropy needs class scores, the output is ")
             << outType;
    ArrayRef<int64_t> shape = outType.getShape();
    int64_t classes = shape.back();
    int64_t rows = 1;
    for (int64_t d : shape.drop_back())
      rows *= d;
    auto labelsType =
        RankedTensorType::get(shape.drop_back(), builder.getI64Type());
    Value labels = appendNamedArgument(func, labelsType, "labels");
    auto flatLabelsType = RankedTensorType::get({rows}, builder.getI64Type());
    if (labelsType != flatLabelsType)
      labels = ReshapeOp::create(builder, loc, flatLabelsType, labels);
    if (linearLoss)
      if (Value loss = buildLinearLoss(builder, loc, output, labels))
        return loss;
    Value scores = output;
    auto scoresType =
        RankedTensorType::get({rows, classes}, outType.getElementType());
    if (outType != scoresType)
      scores = ReshapeOp::create(builder, loc, scoresType, output);
    return SoftmaxCrossEntropyLossOp::create(
               builder, loc,
               LossReductionAttr::get(ctx, LossReduction::Mean), scores, labels,
               Value(), builder.getI64IntegerAttr(ignoreIndex))
        .getResult();
  }

  /// The gradient the backward starts from: 1, or the loss scale, a
  /// training state this creates.
  FailureOr<Value> buildSeed(ModuleOp module, OpBuilder &builder,
                             Value lossVal) {
    auto lossType = cast<RankedTensorType>(lossVal.getType());
    Location loc = lossVal.getLoc();
    if (lossScale == "none")
      return splatConstant(builder, loc, lossType, 1.0);
    double init = lossScaleInit;
    bool dynamic = lossScale == "dynamic";
    if (!dynamic) {
      StringRef text = lossScale;
      if (text.getAsDouble(init) || !(init > 0) || std::isinf(init))
        return module.emitError("loss-scale must be none, dynamic or a "
                                "positive number, not '")
               << lossScale << "'";
    } else if (!(lossScaleInit > 0) || std::isinf(lossScaleInit)) {
      return module.emitError("loss-scale-init must be a positive number");
    }
    SymbolTable symbols(module);
    auto scalarType = RankedTensorType::get({}, builder.getF32Type());
    Operation *after = nullptr;
    for (auto param : module.getOps<ParameterOp>())
      after = param;
    if (!after)
      return module.emitError("loss scaling needs a parameter to train");
    ParameterOp scale = addTrainingState(symbols, after, "loss_scale",
                                         scalarType, kRoleCounter, init);
    scale->setAttr(kLossScaleAttr, builder.getStringAttr("scale"));
    if (dynamic) {
      ParameterOp tracker =
          addTrainingState(symbols, scale, "loss_scale_growth_tracker",
                           scalarType, kRoleCounter);
      tracker->setAttr(kLossScaleAttr, builder.getStringAttr("growth_tracker"));
    }
    Value seed =
        LoadParameterOp::create(builder, loc, scalarType,
                                FlatSymbolRefAttr::get(scale.getSymNameAttr()));
    if (lossType != scalarType)
      seed = CastOp::create(builder, loc, lossType, seed,
                            builder.getStringAttr("gradient"));
    return seed;
  }

  LogicalResult differentiate(ModuleOp module, func::FuncOp func) {
    if (!func.getBody().hasOneBlock())
      return func.emitError("cannot differentiate a function with ")
             << func.getBody().getBlocks().size() << " blocks";
    llvm::StringSet<> chosen;
    if (failed(chooseParameters(module, chosen)))
      return failure();
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    FailureOr<Value> lossValue = buildLoss(func, ret);
    if (failed(lossValue))
      return failure();
    Value lossVal = *lossValue;
    if (!isa<FloatType>(getElementTypeOrSelf(lossVal.getType())))
      return func.emitError("the loss must be a float scalar");

    Block &body = func.getBody().front();
    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      forward.push_back(&op);

    // Values that depend on a trainable parameter.
    llvm::DenseSet<Value> varied;
    for (Operation *op : forward) {
      if (auto load = dyn_cast<LoadParameterOp>(op)) {
        if (chosen.contains(load.getName()))
          varied.insert(load.getResult());
        continue;
      }
      if (llvm::none_of(op->getOperands(),
                        [&](Value v) { return varied.contains(v); }))
        continue;
      for (Value result : op->getResults())
        if (isa<FloatType>(getElementTypeOrSelf(result.getType())))
          varied.insert(result);
    }

    OpBuilder builder(ret);
    llvm::DenseMap<Value, Value> grads;
    // Adds `grad` into a running sum (null while empty).
    auto addInto = [&](Value &sum, Value grad) {
      sum = sum ? AddOp::create(builder, grad.getLoc(), sum, grad).getResult()
                : grad;
    };
    Operation *lastForward = ret->getPrevNode();
    FailureOr<Value> seed = buildSeed(module, builder, lossVal);
    if (failed(seed))
      return failure();
    grads[lossVal] = *seed;

    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value result : op->getResults()) {
        resultGrads.push_back(grads.lookup(result));
        any |= bool(resultGrads.back());
      }
      if (!any || isa<LoadParameterOp>(op))
        continue;
      SmallVector<bool> needsGrad;
      for (Value operand : op->getOperands())
        needsGrad.push_back(varied.contains(operand));
      if (llvm::none_of(needsGrad, [](bool b) { return b; }))
        continue;
      auto rule = dyn_cast<GradientOpInterface>(op);
      if (!rule)
        return op->emitError("'")
               << op->getName() << "' has no gradient rule, but a trainable "
               << "parameter reaches the loss through it";
      SmallVector<Value> operandGrads;
      if (failed(rule.buildGradients(builder, resultGrads, needsGrad,
                                     operandGrads)))
        return failure();
      operandGrads.resize(op->getNumOperands());
      for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
        if (!needsGrad[i] || !operandGrads[i])
          continue;
        if (operandGrads[i].getType() != operand.getType())
          return op->emitError("gradient rule of '")
                 << op->getName() << "' gave " << operandGrads[i].getType()
                 << " for operand " << i << " of type " << operand.getType();
        addInto(grads[operand], operandGrads[i]);
      }
    }

    // Sum the gradients of every read of a parameter.
    llvm::StringMap<Value> paramGrads;
    for (Operation *op : forward)
      if (auto load = dyn_cast<LoadParameterOp>(op))
        if (Value grad = grads.lookup(load.getResult())) {
          addInto(paramGrads[load.getName()], grad);
        }

    for (Operation *op = lastForward ? lastForward->getNextNode()
                                     : &body.front();
         op && op != ret.getOperation(); op = op->getNextNode())
      op->setAttr(kBackwardAttr, builder.getUnitAttr());

    // The new results: the loss, then one gradient per trained parameter.
    MLIRContext *ctx = func.getContext();
    SmallVector<Value> results{lossVal};
    SmallVector<DictionaryAttr> resultAttrs{namedValueAttrs(ctx, "loss")};
    for (auto param : module.getOps<ParameterOp>()) {
      if (parameterRole(param) != kRoleParameter)
        continue;
      Value grad = paramGrads.lookup(param.getSymName());
      if (!grad) {
        param.emitWarning("parameter '")
            << param.getSymName()
            << "' does not affect the loss; it is frozen";
        param->setAttr(kRoleAttr, builder.getStringAttr(kRoleFrozen));
        continue;
      }
      // The memory plan files the value under "gradients".
      if (Operation *def = grad.getDefiningOp();
          def && def->hasAttr(kBackwardAttr))
        def->setAttr(kGradientOfAttr,
                     FlatSymbolRefAttr::get(param.getSymNameAttr()));
      results.push_back(grad);
      resultAttrs.push_back(DictionaryAttr::get(
          ctx, {builder.getNamedAttr(
                    "onnx.name", builder.getStringAttr(
                                     "grad." + param.getSymName().str())),
                builder.getNamedAttr(kGradientOfAttr,
                                     FlatSymbolRefAttr::get(
                                         param.getSymNameAttr()))}));
    }
    if (results.size() == 1)
      return func.emitError("no trainable parameter reaches the loss");
    setResults(func, results, resultAttrs);
    return success();
  }
};

} // namespace
