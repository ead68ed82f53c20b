//===- Shard.cpp - data parallelism: gradients averaged over the ranks ----===//
//
// memfit-shard (include/memfit/Passes/DistributedPasses.td): each gradient
// memfit-autodiff returns, and the loss, become the mean over the ranks
// through memfit.all_reduce, placed where the gradient becomes final, in
// buckets of gradients that become final one after another. With
// zero=1 the module also names the rank, and memfit-optimizer shards the
// optimizer states by rows (Optimizer.cpp).
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"
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

  /// Every gradient and the loss of `func`, averaged over the ranks: the
  /// gradients in buckets (stages 0 and 1), the loss just before the return.
  void reduce(func::FuncOp func) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    OpBuilder builder(func.getContext());
    SmallVector<unsigned> gradients;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      if (func.getResultAttr(i, kGradientOfAttr)) {
        // Stage 2: memfit-optimizer reduce-scatters each gradient's rows.
        if (zero < 2)
          gradients.push_back(i);
        continue;
      }
      if (!isLossResult(func, i))
        continue;
      builder.setInsertionPoint(ret);
      ret.setOperand(i, allReduce(builder, ret.getOperand(i)));
    }
    for (ArrayRef<unsigned> bucket : buckets(func, gradients))
      reduceBucket(func, bucket);
  }

  Value allReduce(OpBuilder &builder, Value value) {
    return AllReduceOp::create(builder, value.getLoc(), value,
                               CollectiveReduction::Mean,
                               static_cast<int64_t>(worldSize),
                               DenseI64ArrayAttr())
        .getResult();
  }

  /// The gradient results `gradients` of `func` in the order they become
  /// final, cut into buckets: of one element type, at most bucket-bytes
  /// each (a larger gradient alone).
  SmallVector<SmallVector<unsigned>> buckets(func::FuncOp func,
                                             ArrayRef<unsigned> gradients) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    DenseMap<Operation *, unsigned> position;
    for (Operation &op : func.getBody().front())
      position[&op] = position.size() + 1;
    auto finalAt = [&](unsigned i) {
      Operation *def = ret.getOperand(i).getDefiningOp();
      return def ? position.lookup(def) : 0u;
    };
    SmallVector<unsigned> order(gradients);
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      return finalAt(a) < finalAt(b);
    });
    SmallVector<SmallVector<unsigned>> cut;
    int64_t bytes = 0;
    Type element;
    for (unsigned i : order) {
      auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
      int64_t size = tensorBytes(type);
      if (cut.empty() || bucketBytes <= 0 || type.getElementType() != element ||
          bytes + size > bucketBytes) {
        cut.emplace_back();
        bytes = 0;
        element = type.getElementType();
      }
      cut.back().push_back(i);
      bytes += size;
    }
    return cut;
  }

  /// One all-reduce for the gradient results `bucket` (in the order they
  /// become final), right after the last of them is final, so that it
  /// overlaps the rest of the backward; several are flattened into one
  /// buffer and read back as slices of its mean.
  void reduceBucket(func::FuncOp func, ArrayRef<unsigned> bucket) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    Value last = ret.getOperand(bucket.back());
    OpBuilder builder(func.getContext());
    builder.setInsertionPointAfterValue(last);
    auto backward = [&](Value value) {
      value.getDefiningOp()->setAttr(kBackwardAttr, builder.getUnitAttr());
      return value;
    };
    if (bucket.size() == 1) {
      ret.setOperand(bucket[0], backward(allReduce(builder, last)));
      return;
    }
    Location loc = last.getLoc();
    SmallVector<Value> flat;
    for (unsigned i : bucket) {
      auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
      flat.push_back(backward(ReshapeOp::create(
          builder, loc,
          RankedTensorType::get({type.getNumElements()},
                                type.getElementType()),
          ret.getOperand(i))));
    }
    Value joined = backward(
        ConcatOp::create(builder, loc, flat, builder.getI64IntegerAttr(0)));
    Value mean = backward(allReduce(builder, joined));
    int64_t offset = 0;
    for (auto [i, piece] : llvm::zip(bucket, flat)) {
      auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
      int64_t n = type.getNumElements();
      Value slice = backward(SliceOp::create(
          builder, loc, mean, ArrayRef<int64_t>{offset},
          ArrayRef<int64_t>{offset + n}, ArrayRef<int64_t>{0},
          ArrayRef<int64_t>{1}));
      ret.setOperand(i, backward(ReshapeOp::create(builder, loc, type, slice)));
      offset += n;
    }
  }
};

} // namespace
