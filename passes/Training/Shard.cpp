//===- Shard.cpp - data parallelism: gradients averaged over the ranks ----===//
//
// memfit-shard (include/memfit/Passes/DistributedPasses.td): each gradient
// memfit-autodiff returns, and the loss, become the mean over the ranks
// through memfit.all_reduce, placed where the gradient becomes final. With
// zero=1 the module also names the rank, and memfit-optimizer shards the
// optimizer states by rows (Optimizer.cpp).
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITSHARDPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// Whether result `i` of `func` is a function output called "loss".
bool isLossResult(func::FuncOp func, unsigned i) {
  auto name = func.getResultAttrOfType<StringAttr>(i, "onnx.name");
  return name && name.getValue() == "loss";
}

struct MemfitShardPass
    : public mlir::memfit::impl::MemfitShardPassBase<MemfitShardPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    if (worldSize < 1)
      return module.emitError("memfit-shard: world-size must be at least 1, "
                              "got ")
             << static_cast<int64_t>(worldSize);
    if (zero < 0 || zero > 3)
      return module.emitError("memfit-shard: ZeRO stage ")
             << static_cast<int64_t>(zero)
             << " does not exist; zero=0 (every rank holds all the states), "
                "1 (optimizer states sharded), 2 (gradients too) and 3 "
                "(parameters too) do";
    if (rank < 0 || rank >= worldSize)
      return module.emitError("memfit-shard: rank ")
             << static_cast<int64_t>(rank) << " is not a rank of "
             << static_cast<int64_t>(worldSize);
    Builder attrs(module.getContext());
    module->setAttr(kWorldSizeAttr, attrs.getI64IntegerAttr(worldSize));
    module->setAttr(kZeroStageAttr, attrs.getI64IntegerAttr(zero));
    if (zero >= 1)
      module->setAttr(kRankAttr, attrs.getI64IntegerAttr(rank));

    bool any = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!returnsGradients(func))
        continue;
      any = true;
      if (worldSize > 1)
        reduce(func);
    }
    if (!any)
      return module.emitError("memfit-shard: no function returns gradients; "
                              "run memfit-autodiff first");
    return success();
  }

  /// Every gradient and the loss of `func`, averaged over the ranks.
  void reduce(func::FuncOp func) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    OpBuilder builder(func.getContext());
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      bool gradient = !!func.getResultAttr(i, kGradientOfAttr);
      if (!gradient && !isLossResult(func, i))
        continue;
      // Stage 2: memfit-optimizer reduce-scatters each gradient's rows.
      if (gradient && zero >= 2)
        continue;
      Value value = ret.getOperand(i);
      // Right after the value is final, so that the reduction of one
      // gradient overlaps the backward of the next; the loss just before
      // the return, where nothing waits for it.
      if (gradient)
        builder.setInsertionPointAfterValue(value);
      else
        builder.setInsertionPoint(ret);
      auto reduced = AllReduceOp::create(
          builder, value.getLoc(), value, CollectiveReduction::Mean,
          static_cast<int64_t>(worldSize), DenseI64ArrayAttr());
      if (gradient)
        reduced->setAttr(kBackwardAttr, builder.getUnitAttr());
      ret.setOperand(i, reduced.getResult());
    }
  }
};

} // namespace
