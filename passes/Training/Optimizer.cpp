//===- Optimizer.cpp - SGD and AdamW updates, gradient accumulation --------===//
//
// Consumes the gradients that memfit-autodiff returns. Each parameter's
// update is built directly as one memfit.kernel (the parameter, its
// gradient and its states in; the new values out), and memfit.assign
// writes the new values over the old ones; the scalars every update shares
// (bias corrections, the step counter, the clipping factor) are one small
// kernel too.
//
//===----------------------------------------------------------------------===//

#include "ShardParameters.h"
#include "WorkingCopies.h"

#include "memfit/Dialect/Gradients.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include <functional>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITOPTIMIZERPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// Builds a memfit.kernel over `inputs` whose body `body` computes the
/// results from the block arguments.
SmallVector<Value>
buildKernel(OpBuilder &builder, Location loc, ValueRange inputs,
            const std::function<SmallVector<Value>(OpBuilder &, ValueRange)>
                &body) {
  // Build the body first in a detached block to learn the result types.
  auto block = std::make_unique<Block>();
  for (Value input : inputs)
    block->addArgument(input.getType(), loc);
  OpBuilder inner(builder.getContext());
  inner.setInsertionPointToStart(block.get());
  SmallVector<Value> results = body(inner, block->getArguments());
  YieldOp::create(inner, loc, results);
  auto kernel = KernelOp::create(builder, loc, ValueRange(results).getTypes(),
                                 inputs);
  kernel.getBody().push_back(block.release());
  return SmallVector<Value>(kernel.getResults());
}

/// Scalar f32 splat constant.
Value scalar(OpBuilder &b, Location loc, double value) {
  return splatConstant(b, loc, RankedTensorType::get({}, b.getF32Type()),
                       value);
}

struct MemfitOptimizerPass
    : public mlir::memfit::impl::MemfitOptimizerPassBase<MemfitOptimizerPass> {
  using Base::Base;

  /// One trained parameter and the values its update reads.
  struct Trained {
    ParameterOp param;
    Value grad; // in the function that updates
  };

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  Value load(OpBuilder &b, Location loc, ParameterOp param) {
    return LoadParameterOp::create(b, loc, param.getType(),
                                   FlatSymbolRefAttr::get(param.getSymNameAttr()));
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    // The update rules; adamw8bit's states are memfit-quantize's.
    if (optimizer != ::memfit::OptimizerKind::AdamW &&
        optimizer != ::memfit::OptimizerKind::Sgd)
      return module.emitError("optimizer ")
             << ::memfit::nameOf(optimizer.getValue())
             << " is not an update rule of memfit-optimizer; expected adamw "
                "or sgd";
    if (accumulate < 1)
      return module.emitError("accumulate must be at least 1, got ")
             << static_cast<int64_t>(accumulate);
    if (clipNorm < 0)
      return module.emitError("clip-norm must not be negative");

    // The function memfit-autodiff produced: results (loss, grads...).
    func::FuncOp func;
    for (auto candidate : module.getOps<func::FuncOp>())
      if (returnsGradients(candidate))
        func = candidate;
    if (!func)
      return module.emitError("no function returns gradients; run "
                              "memfit-autodiff first");
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    MLIRContext *ctx = &getContext();
    OpBuilder builder(ctx);
    Location loc = func.getLoc();

    SmallVector<Trained> trained;
    SmallVector<Value> kept;
    SmallVector<DictionaryAttr> keptAttrs;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto of = func.getResultAttrOfType<FlatSymbolRefAttr>(i, kGradientOfAttr);
      if (!of) {
        kept.push_back(ret.getOperand(i));
        keptAttrs.push_back(func.getResultAttrDict(i));
        continue;
      }
      auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(func, of);
      if (!param)
        return func.emitError("gradient of unknown parameter ") << of;
      // The updates compute in f32 with f32 hyperparameters and states.
      if (!param.getType().getElementType().isF32())
        return param.emitError("parameter '")
               << param.getSymName() << "' is " << param.getType()
               << ": the optimizer updates f32 parameters (freeze it with "
                  "frozen=..., or export the model in fp32)";
      trained.push_back({param, ret.getOperand(i)});
    }

    // Loss scaling: the states memfit-autodiff made.
    ParameterOp scaleParam, trackerParam;
    for (auto param : module.getOps<ParameterOp>())
      if (auto kind = param->getAttrOfType<StringAttr>(kLossScaleAttr))
        (kind.getValue() == "scale" ? scaleParam : trackerParam) = param;
    if (trackerParam && !scaleParam)
      return module.emitError("a loss-scale growth tracker without a scale");
    if (trackerParam && (lossScaleInterval < 1 || !(lossScaleGrowth >= 1) ||
                         !(lossScaleBackoff > 0 && lossScaleBackoff < 1)))
      return module.emitError("dynamic loss scaling needs loss-scale-interval "
                              ">= 1, loss-scale-growth >= 1 and "
                              "loss-scale-backoff in (0, 1)");

    bool adam = optimizer == ::memfit::OptimizerKind::AdamW;
    bool momentumBuffer = !adam && momentum != 0.0;

    // ZeRO stage 1 (memfit-shard's module attributes): this rank keeps and
    // updates one slice of each parameter's rows (dimension 0, padded with
    // zero rows to a multiple of the ranks), and the updated slices are
    // all-gathered into the parameter.
    auto attrInt = [&](StringRef name, int64_t otherwise) {
      auto attr = module->getAttrOfType<IntegerAttr>(name);
      return attr ? attr.getInt() : otherwise;
    };
    // Stage 2 also averages each gradient by a reduce-scatter of its rows
    // instead of memfit-shard's all-reduce: the rank receives only the rows
    // it updates.
    int64_t shards = 1, shardRank = attrInt(kRankAttr, 0);
    int64_t stage = attrInt(kZeroStageAttr, 0);
    if (stage >= 1)
      shards = attrInt(kWorldSizeAttr, 1);
    bool scatterGrads = stage >= 2 && shards > 1;
    // Stage 3 also keeps only the rank's rows of each trained parameter
    // (ShardParameters.cpp): the update reads and writes those rows.
    bool shardParams = stage >= 3 && shards > 1;
    // With accumulation, stage 1 accumulates whole gradients (each
    // micro-batch's averaged over the ranks, as stage 0 does) and updates
    // the rank's rows of the sum; stage 2 accumulates the rank's rows of
    // each micro-batch's reduce-scattered gradient.
    // Rows of each rank's slice of a parameter of `type`.
    auto sliceRows = [&](RankedTensorType type) {
      return (type.getDimSize(0) + shards - 1) / shards;
    };
    if (nesterov && (adam || momentum == 0.0))
      return module.emitError("nesterov needs SGD with momentum");

    // States, placed after their parameter.
    SymbolTable symbols(module);
    auto counterType = RankedTensorType::get({}, builder.getF32Type());
    ParameterOp counter = addTrainingState(symbols, trained.back().param,
                                           "step", counterType, kRoleCounter);
    // Skipped steps count for the data and the schedule but not for AdamW's
    // bias correction, as when GradScaler skips optimizer.step().
    ParameterOp adamCounter;
    if (adam && trackerParam)
      adamCounter = addTrainingState(symbols, counter, "adamw_step",
                                     counterType, kRoleCounter);
    struct States {
      ParameterOp first, second, accumulator;
    };
    SmallVector<States> states(trained.size());
    for (auto [t, s] : llvm::zip(trained, states)) {
      StringRef name = t.param.getSymName();
      RankedTensorType type = t.param.getType();
      if (shards > 1)
        type = withRows(type, sliceRows(type));
      Operation *after = t.param;
      if (adam) {
        s.first = addTrainingState(symbols, after, (name + ".exp_avg").str(),
                                   type, kRoleOptimizerState);
        s.second =
            addTrainingState(symbols, s.first, (name + ".exp_avg_sq").str(),
                             type, kRoleOptimizerState);
        after = s.second;
      } else if (momentumBuffer) {
        s.first =
            addTrainingState(symbols, after, (name + ".momentum_buffer").str(),
                             type, kRoleOptimizerState);
        after = s.first;
      }
      // The accumulator holds the whole gradient under stage 1, the rank's
      // rows under stage 2.
      if (accumulate > 1)
        s.accumulator = addTrainingState(
            symbols, after, (name + ".grad").str(),
            scatterGrads ? type : t.param.getType(), kRoleGradientAccumulator);
      auto owner = FlatSymbolRefAttr::get(t.param.getSymNameAttr());
      for (ParameterOp state : {s.first, s.second})
        if (state) {
          state->setAttr(kStateOfAttr, owner);
          if (offloadStates)
            keepInHostMemory(state);
        }
      if (s.second)
        s.second->setAttr(kNonNegativeAttr, UnitAttr::get(ctx));
    }

    // Offload (ZeRO-Offload): the masters join their states in host memory
    // and the device reads working copies; the updates run on the host.
    SmallVector<ParameterOp> working(trained.size());
    if (offloadStates)
      for (auto [t, copy] : llvm::zip(trained, working))
        copy = addWorkingCopy(symbols, func, t.param);

    // Stage 3: what the step reads (the parameter, or its working copy) is
    // gathered per layer; a master kept in host memory, which only the
    // update reads, is cut to the rank's rows alone.
    if (shardParams) {
      SmallVector<ParameterOp> read, masters;
      for (auto [t, copy] : llvm::zip(trained, working)) {
        read.push_back(copy ? copy : t.param);
        if (copy)
          masters.push_back(t.param);
      }
      if (failed(shardParameterRows(module, read, shards, shardRank,
                                    zero3Prefetch)) ||
          failed(shardParameterRows(module, masters, shards, shardRank,
                                    zero3Prefetch)))
        return failure();
    }

    // This rank's slice of a parameter-shaped value: rows [r c, (r + 1) c)
    // of it padded with zero rows to N c; with `scatter`, of its mean over
    // the ranks (a reduce-scatter of the rank's own gradient).
    auto shardOf = [&](Location ploc, Value value,
                       bool scatter = false) -> Value {
      auto type = cast<RankedTensorType>(value.getType());
      int64_t rows = type.getDimSize(0), c = sliceRows(type);
      // Marked, so that memfit-early-updates moves them with the update
      // that alone reads them.
      auto mark = [&](Operation *op) {
        op->setAttr(kShardSliceAttr, builder.getUnitAttr());
        return op->getResult(0);
      };
      if (c * shards > rows) {
        Value zeros = mark(ExpandOp::create(builder, ploc,
                                            withRows(type, c * shards - rows),
                                            scalar(builder, ploc, 0.0)));
        value = mark(ConcatOp::create(builder, ploc, ValueRange{value, zeros},
                                      builder.getI64IntegerAttr(0)));
      }
      if (scatter)
        return mark(ReduceScatterOp::create(builder, ploc, value,
                                            CollectiveReduction::Mean, shards,
                                            DenseI64ArrayAttr()));
      return mark(SliceOp::create(builder, ploc, value,
                                  ArrayRef<int64_t>{shardRank * c},
                                  ArrayRef<int64_t>{(shardRank + 1) * c},
                                  ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1}));
    };
    // Where the update goes: the end of the function (k = 1) or a new
    // `apply` function reading the accumulators.
    func::FuncOp updateFunc = func;
    builder.setInsertionPoint(ret);
    if (accumulate > 1) {
      double scale = 1.0 / double(accumulate);
      for (auto [t, s] : llvm::zip(trained, states)) {
        Location ploc = t.grad.getLoc();
        Value acc = load(builder, ploc, s.accumulator);
        Value grad = scatterGrads ? shardOf(ploc, t.grad, /*scatter=*/true)
                                  : t.grad;
        SmallVector<Value> sum = buildKernel(
            builder, ploc, {acc, grad}, [&](OpBuilder &b, ValueRange args) {
              Value scaled = MulOp::create(b, ploc, args[1],
                                           scalar(b, ploc, scale));
              return SmallVector<Value>{
                  AddOp::create(b, ploc, args[0], scaled).getResult()};
            });
        AssignOp::create(builder, ploc,
                         FlatSymbolRefAttr::get(s.accumulator.getSymNameAttr()),
                         sum[0]);
      }
      func.setSymName("accumulate");
      builder.setInsertionPointAfter(func);
      updateFunc = func::FuncOp::create(builder, loc, "apply",
                                        FunctionType::get(ctx, {}, {}));
      Block *block = updateFunc.addEntryBlock();
      builder.setInsertionPointToStart(block);
      for (auto [t, s] : llvm::zip(trained, states))
        t.grad = load(builder, t.grad.getLoc(), s.accumulator);
    } else {
      func.setSymName("train_step");
    }

    // The learning rate input.
    Value lr = appendNamedArgument(updateFunc, counterType, "lr");

    // Stage 2: each gradient reduce-scattered to the rank's rows of its
    // mean, before the sums over the gradients that clipping and loss
    // scaling take (then of the rank's rows, added up over the ranks).
    if (scatterGrads && accumulate == 1)
      for (Trained &t : trained)
        t.grad = shardOf(t.grad.getLoc(), t.grad, /*scatter=*/true);
    // A sum over every gradient's elements: over the ranks' rows under
    // stage 2.
    auto overRanks = [&](Value total) -> Value {
      if (!scatterGrads)
        return total;
      return AllReduceOp::create(builder, total.getLoc(), total,
                                 CollectiveReduction::Sum, shards,
                                 DenseI64ArrayAttr());
    };

    // Loss scaling: the scale's reciprocal and, when dynamic, whether this
    // step applies and the scale's update.
    Value invScale, applied, usedScale, skipped;
    if (scaleParam) {
      usedScale = load(builder, loc, scaleParam);
      if (!trackerParam) {
        invScale = buildKernel(
            builder, loc, {usedScale}, [&](OpBuilder &b, ValueRange args) {
              return SmallVector<Value>{
                  DivOp::create(b, loc, scalar(b, loc, 1.0), args[0])};
            })[0];
      } else {
        // An inf or NaN anywhere makes the sum of all gradients inf or NaN.
        Value total;
        for (Trained &t : trained) {
          Location ploc = t.grad.getLoc();
          Value sum = ReduceSumOp::create(builder, ploc, t.grad,
                                          builder.getDenseI64ArrayAttr({}),
                                          builder.getBoolAttr(false));
          total = total ? AddOp::create(builder, ploc, total, sum).getResult()
                        : sum;
        }
        total = overRanks(total);
        Value tracker = load(builder, loc, trackerParam);
        SmallVector<Value> scaling = buildKernel(
            builder, loc, {usedScale, tracker, total},
            [&](OpBuilder &b, ValueRange args) {
              auto c = [&](double v) { return scalar(b, loc, v); };
              auto finite = [&](Value x) {
                return EqualOp::create(b, loc, SubOp::create(b, loc, x, x),
                                       c(0.0))
                    .getResult();
              };
              auto select = [&](Value cond, Value x, Value y) {
                return WhereOp::create(b, loc, cond, x, y).getResult();
              };
              Value scale = args[0], good = args[1];
              Value ok = finite(args[2]);
              Value good1 = AddOp::create(b, loc, good, c(1.0));
              Value due = EqualOp::create(
                  b, loc, good1, c(static_cast<double>(lossScaleInterval)));
              Value grown = MulOp::create(b, loc, scale, c(lossScaleGrowth));
              Value whenGood =
                  select(due, select(finite(grown), grown, scale), scale);
              Value newScale =
                  select(ok, whenGood,
                         MulOp::create(b, loc, scale, c(lossScaleBackoff)));
              Value newGood = select(ok, select(due, c(0.0), good1), c(0.0));
              // The scale this step used, copied before the assign below
              // overwrites its buffer.
              return SmallVector<Value>{
                  DivOp::create(b, loc, c(1.0), scale), ok,   newScale, newGood,
                  select(ok, c(0.0), c(1.0)),           scale};
            });
        invScale = scaling[0];
        applied = scaling[1];
        skipped = scaling[4];
        usedScale = scaling[5];
        AssignOp::create(builder, loc,
                         FlatSymbolRefAttr::get(scaleParam.getSymNameAttr()),
                         scaling[2]);
        AssignOp::create(builder, loc,
                         FlatSymbolRefAttr::get(trackerParam.getSymNameAttr()),
                         scaling[3]);
      }
    }

    // Clipping by the global norm (of the unscaled gradients).
    Value clipCoef, gradNorm;
    if (clipNorm > 0) {
      Value total;
      for (Trained &t : trained) {
        Location ploc = t.grad.getLoc();
        Value square = MulOp::create(builder, ploc, t.grad, t.grad);
        Value sum = ReduceSumOp::create(builder, ploc, square,
                                        builder.getDenseI64ArrayAttr({}),
                                        builder.getBoolAttr(false));
        total = total ? AddOp::create(builder, ploc, total, sum).getResult()
                      : sum;
      }
      total = overRanks(total);
      SmallVector<Value> clipInputs{total};
      if (invScale)
        clipInputs.push_back(invScale);
      SmallVector<Value> clip = buildKernel(
          builder, loc, clipInputs, [&](OpBuilder &b, ValueRange args) {
            Value norm = SqrtOp::create(b, loc, args[0]);
            if (invScale)
              norm = MulOp::create(b, loc, norm, args[1]);
            Value coef = DivOp::create(
                b, loc, scalar(b, loc, clipNorm),
                AddOp::create(b, loc, norm, scalar(b, loc, 1e-6)));
            Value one = scalar(b, loc, 1.0);
            Value below = LessOp::create(b, loc, coef, one);
            return SmallVector<Value>{
                norm, WhereOp::create(b, loc, below, coef, one).getResult()};
          });
      gradNorm = clip[0];
      clipCoef = clip[1];
    }
    // What every gradient is multiplied by before its update.
    Value gradScale = clipCoef;
    if (invScale && clipCoef)
      gradScale = buildKernel(builder, loc, {invScale, clipCoef},
                              [&](OpBuilder &b, ValueRange args) {
                                return SmallVector<Value>{
                                    MulOp::create(b, loc, args[0], args[1])};
                              })[0];
    else if (invScale)
      gradScale = invScale;

    // Shared scalars: the step counter and, for AdamW, the bias
    // corrections folded into a step size, and the weight decay factor.
    Value step = load(builder, loc, counter);
    SmallVector<Value> sharedInputs{step, lr};
    if (adamCounter)
      sharedInputs.append({load(builder, loc, adamCounter), applied});
    SmallVector<Value> shared = buildKernel(
        builder, loc, sharedInputs, [&](OpBuilder &b, ValueRange args) {
          Value t = AddOp::create(b, loc, args[0], scalar(b, loc, 1.0));
          SmallVector<Value> out{t};
          if (!adam)
            return out;
          Value one = scalar(b, loc, 1.0);
          if (adamCounter) {
            // The bias corrections of the steps applied.
            t = AddOp::create(b, loc, args[2], one);
            out.push_back(WhereOp::create(b, loc, args[3], t, args[2]));
          }
          Value bc1 = SubOp::create(
              b, loc, one, PowOp::create(b, loc, scalar(b, loc, beta1), t));
          Value bc2 = SubOp::create(
              b, loc, one, PowOp::create(b, loc, scalar(b, loc, beta2), t));
          out.push_back(DivOp::create(b, loc, args[1], bc1));
          out.push_back(SqrtOp::create(b, loc, bc2));
          out.push_back(SubOp::create(
              b, loc, one,
              MulOp::create(b, loc, args[1], scalar(b, loc, weightDecay))));
          return out;
        });
    AssignOp::create(builder, loc,
                     FlatSymbolRefAttr::get(counter.getSymNameAttr()),
                     shared[0]);
    if (adamCounter) {
      AssignOp::create(builder, loc,
                       FlatSymbolRefAttr::get(adamCounter.getSymNameAttr()),
                       shared[1]);
      shared.erase(shared.begin() + 1);
    }

    // The parameter from every rank's updated slice, written by the gather
    // (or, past padding, by the slice of its rows) into a buffer of its own
    // that the assignment puts in place.
    auto gathered = [&](Location ploc, Value slice, RankedTensorType type) {
      Value whole = AllGatherOp::create(builder, ploc, slice, shards,
                                        DenseI64ArrayAttr());
      if (sliceRows(type) * shards > type.getDimSize(0))
        whole = SliceOp::create(builder, ploc, whole, ArrayRef<int64_t>{0},
                                ArrayRef<int64_t>{type.getDimSize(0)},
                                ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1});
      return whole;
    };

    // Where an accumulator is cleared: in the update's kernel, unless the
    // kernel runs over the rank's rows of a whole accumulator (stage 1).
    bool clearInKernel = accumulate > 1 && (shards == 1 || scatterGrads);
    for (auto [t, s, copy] : llvm::zip(trained, states, working)) {
      Location ploc = t.grad.getLoc();
      SmallVector<Value> inputs{load(builder, ploc, t.param), t.grad};
      if (shards > 1)
        inputs = {shardParams ? inputs[0] : shardOf(ploc, inputs[0]),
                  scatterGrads ? inputs[1] : shardOf(ploc, inputs[1])};
      if (s.first)
        inputs.push_back(load(builder, ploc, s.first));
      if (s.second)
        inputs.push_back(load(builder, ploc, s.second));
      unsigned scalarsAt = inputs.size();
      if (adam)
        inputs.append({shared[1], shared[2], shared[3]});
      else
        inputs.push_back(lr);
      unsigned extraAt = inputs.size();
      if (gradScale)
        inputs.push_back(gradScale);
      if (applied)
        inputs.push_back(applied);
      SmallVector<Value> updated = buildKernel(
          builder, ploc, inputs, [&](OpBuilder &b, ValueRange args) {
            auto c = [&](double v) { return scalar(b, ploc, v); };
            Value w = args[0], g = args[1];
            if (gradScale)
              g = MulOp::create(b, ploc, g, args[extraAt]);
            SmallVector<Value> out;
            if (adam) {
              Value m = args[2], v = args[3];
              Value stepSize = args[scalarsAt], bc2Sqrt = args[scalarsAt + 1],
                    decay = args[scalarsAt + 2];
              // m + (1 - beta1) * (g - m), as torch's lerp.
              Value m1 = AddOp::create(
                  b, ploc, m,
                  MulOp::create(b, ploc, SubOp::create(b, ploc, g, m),
                                c(1.0 - beta1)));
              Value v1 = AddOp::create(
                  b, ploc, MulOp::create(b, ploc, v, c(beta2)),
                  MulOp::create(b, ploc, MulOp::create(b, ploc, g, g),
                                c(1.0 - beta2)));
              Value denom = AddOp::create(
                  b, ploc,
                  DivOp::create(b, ploc, SqrtOp::create(b, ploc, v1), bc2Sqrt),
                  c(eps));
              Value w1 = SubOp::create(
                  b, ploc, MulOp::create(b, ploc, w, decay),
                  MulOp::create(b, ploc, DivOp::create(b, ploc, m1, denom),
                                stepSize));
              out = {w1, m1, v1};
            } else {
              Value rate = args[scalarsAt];
              if (weightDecay != 0.0)
                g = AddOp::create(b, ploc, g,
                                  MulOp::create(b, ploc, w, c(weightDecay)));
              Value direction = g;
              Value buf;
              if (momentumBuffer) {
                buf = AddOp::create(b, ploc,
                                    MulOp::create(b, ploc, args[2], c(momentum)),
                                    g);
                direction = nesterov
                                ? AddOp::create(
                                      b, ploc, g,
                                      MulOp::create(b, ploc, buf, c(momentum)))
                                      .getResult()
                                : buf;
              }
              out.push_back(SubOp::create(
                  b, ploc, w, MulOp::create(b, ploc, direction, rate)));
              if (buf)
                out.push_back(buf);
            }
            // A skipped step leaves the parameter and its states as they
            // were.
            if (applied)
              for (unsigned i = 0; i < out.size(); ++i)
                out[i] = WhereOp::create(b, ploc, args.back(), out[i],
                                         args[i == 0 ? 0 : 1 + i]);
            // The accumulator starts again from zero; a whole one (stage
            // 1) that the kernel over the rank's rows cannot write is
            // cleared after it.
            if (clearInKernel)
              out.push_back(ExpandOp::create(
                  b, ploc, cast<RankedTensorType>(w.getType()), c(0.0)));
            // The device's new working copy, from the new master.
            if (copy) {
              auto rows = cast<RankedTensorType>(w.getType());
              out.push_back(workingValue(
                  b, ploc, out[0],
                  RankedTensorType::get(rows.getShape(),
                                        copy.getType().getElementType())));
            }
            return out;
          });
      if (copy)
        updated[0].getDefiningOp()->setAttr(kOnHostAttr, builder.getUnitAttr());
      if (shards > 1 && !shardParams) {
        updated[0] = gathered(ploc, updated[0], t.param.getType());
        if (copy)
          updated.back() = gathered(ploc, updated.back(), copy.getType());
      }
      SmallVector<ParameterOp> targets{t.param};
      if (s.first)
        targets.push_back(s.first);
      if (s.second)
        targets.push_back(s.second);
      if (s.accumulator && clearInKernel)
        targets.push_back(s.accumulator);
      if (copy)
        targets.push_back(copy);
      for (auto [target, value] : llvm::zip(targets, updated))
        AssignOp::create(builder, ploc,
                         FlatSymbolRefAttr::get(target.getSymNameAttr()),
                         value);
      if (s.accumulator && !clearInKernel) {
        Value zeros =
            buildKernel(builder, ploc, {}, [&](OpBuilder &b, ValueRange) {
              return SmallVector<Value>{
                  ExpandOp::create(b, ploc, t.param.getType(),
                                   scalar(b, ploc, 0.0))
                      .getResult()};
            })[0];
        // Named after what it clears, so that CSE does not make one kernel
        // (one buffer) of two accumulators' equal zeros.
        zeros.getDefiningOp()->setAttr(
            "memfit.clears",
            FlatSymbolRefAttr::get(s.accumulator.getSymNameAttr()));
        AssignOp::create(builder, ploc,
                         FlatSymbolRefAttr::get(s.accumulator.getSymNameAttr()),
                         zeros);
      }
    }

    // Results: the function keeps its non-gradient results (the loss); the
    // gradient norm joins the updating function's results.
    SmallVector<Value> updateResults;
    SmallVector<DictionaryAttr> updateAttrs;
    if (gradNorm) {
      updateResults.push_back(gradNorm);
      updateAttrs.push_back(namedValueAttrs(ctx, "grad_norm"));
    }
    if (skipped) {
      updateResults.append({usedScale, skipped});
      updateAttrs.push_back(namedValueAttrs(ctx, "loss_scale"));
      updateAttrs.push_back(namedValueAttrs(ctx, "skipped"));
    }
    if (updateFunc == func) {
      llvm::append_range(kept, updateResults);
      llvm::append_range(keptAttrs, updateAttrs);
    } else {
      func::ReturnOp::create(builder, loc, ValueRange());
      setResults(updateFunc, updateResults, updateAttrs);
    }
    setResults(func, kept, keptAttrs);
    return success();
  }
};

} // namespace
