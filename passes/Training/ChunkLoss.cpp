//===- ChunkLoss.cpp - memfit-chunk-loss ----------------------------------===//
//
// Linear cross-entropy (an LM head's contraction and its softmax
// cross-entropy) and its gradients, a chunk of rows at a time, so that the
// [N, V] logits are never held. Each linear_cross_entropy_grad, with the
// linear_cross_entropy of its operands, becomes one unrolled pass over
// chunks of ordinary ops (slice, matmul, cast, the loss and its gradient
// with reduction `sum`, the two gradient contractions, adds); the memory
// plan gives every chunk the same few buffers in turn. See the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/Gradients.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITCHUNKLOSSPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// The most chunks a loss is split into when the pass chooses the size.
constexpr int64_t kMaxChunks = 16;

/// Rows per chunk: `requested`, or logits the size of the hidden states
/// (N * D / V rows) in at most kMaxChunks chunks. Chunks add a [D, V]
/// buffer, the running sum of the weight's gradient, and save the [N, V]
/// logits and their gradient: with no more rows than D, the chosen size
/// is one chunk.
int64_t chunkRows(int64_t requested, int64_t n, int64_t d, int64_t v) {
  if (requested > 0)
    return std::min(requested, n);
  if (n <= d)
    return n;
  int64_t rows = std::max<int64_t>({1, (n * d + v - 1) / v,
                                    (n + kMaxChunks - 1) / kMaxChunks});
  return std::min(rows, n);
}

/// Builds the chunks of one linear cross-entropy: its loss, and with
/// `dloss` its gradients.
struct ChunkedLoss {
  Value loss, dhidden, dweight, dbias;
};

/// `needHidden`, `needWeight` and `needBias` say which gradients something
/// reads (a frozen head's weight, LoRA's, has none to compute).
ChunkedLoss buildChunks(OpBuilder &b, Location loc, LossReduction reduction,
                        Value hidden, Value weight, Value bias, Value labels,
                        IntegerAttr ignoreIndex, Value dloss,
                        int64_t requestedRows, bool needHidden = true,
                        bool needWeight = true, bool needBias = true) {
  ArrayRef<int64_t> h = shapeOf(hidden);
  int64_t n = h[0], d = h[1], v = shapeOf(weight)[1];
  Type elt = eltOf(hidden);
  Type lossElt = elt.isF64() ? elt : b.getF32Type();
  auto scalar = RankedTensorType::get({}, lossElt);
  int64_t rows = chunkRows(requestedRows, n, d, v);
  bool several = rows < n;
  // One chunk is the loss as it was: its own reduction, no divisor.
  auto sum = LossReductionAttr::get(
      b.getContext(), several ? LossReduction::Sum : reduction);

  // The divisor of `mean` over several chunks: the labels not ignored.
  Value count;
  if (several && reduction == LossReduction::Mean) {
    if (ignoreIndex) {
      Value ignored = EqualOp::create(
          b, loc, labels,
          splatConstant(b, loc, RankedTensorType::get({}, eltOf(labels)),
                        static_cast<double>(ignoreIndex.getInt())));
      Value kept = CastOp::create(
          b, loc, RankedTensorType::get({n}, lossElt),
          NotOp::create(b, loc, ignored), StringAttr());
      count = ReduceSumOp::create(b, loc, kept, ArrayRef<int64_t>{},
                                  /*keepDims=*/false);
    } else {
      count = splatConstant(b, loc, scalar, static_cast<double>(n));
    }
  }
  Value scale = dloss && count ? Value(DivOp::create(b, loc, dloss, count))
                               : dloss;

  ChunkedLoss out;
  SmallVector<Value> dhiddenChunks;
  for (int64_t begin = 0; begin < n; begin += rows) {
    int64_t end = std::min(n, begin + rows);
    auto slice = [&](Value x) -> Value {
      if (begin == 0 && end == n)
        return x;
      return SliceOp::create(b, loc, x, ArrayRef<int64_t>{begin},
                             ArrayRef<int64_t>{end}, ArrayRef<int64_t>{0},
                             ArrayRef<int64_t>{1});
    };
    Value hc = slice(hidden), lc = slice(labels);
    Value logits = MatMulOp::create(b, loc, hc, weight);
    if (bias)
      logits = AddOp::create(b, loc, logits, bias);
    Value scores = logits;
    if (elt != lossElt)
      scores = CastOp::create(
          b, loc, RankedTensorType::get(shapeOf(logits), lossElt), logits,
          StringAttr());
    Value chunkLoss = SoftmaxCrossEntropyLossOp::create(
        b, loc, sum, scores, lc, Value(), ignoreIndex);
    out.loss = out.loss ? Value(AddOp::create(b, loc, out.loss, chunkLoss))
                        : chunkLoss;
    if (!scale)
      continue;
    Value dscores = SoftmaxCrossEntropyGradOp::create(
        b, loc, scores.getType(), sum, scores, lc, scale, ignoreIndex);
    Value dlogits = dscores;
    if (elt != lossElt)
      dlogits = CastOp::create(b, loc, logits.getType(), dscores,
                               b.getStringAttr("gradient"));
    if (needHidden)
      dhiddenChunks.push_back(
          GemmOp::create(b, loc, dlogits, weight, Value(), APFloat(1.0f),
                         APFloat(1.0f), false, true));
    // The bias's shares: the rows' sum of the loss gradient, added up in
    // the loss's type (f32 for a 16-bit head), rounded once at the end.
    if (bias && needBias) {
      Value db = ReduceSumOp::create(b, loc, dscores, ArrayRef<int64_t>{0},
                                     /*keepDims=*/false);
      out.dbias = out.dbias ? Value(AddOp::create(b, loc, out.dbias, db)) : db;
    }
    if (!needWeight)
      continue;
    // The weight's shares: each chunk's contraction adds the running sum
    // (its C, beta 1). A 16-bit weight's shares add up in f32 instead,
    // rounded once at the end.
    bool wide = elt != lossElt && several;
    Value dw = GemmOp::create(b, loc, hc, dlogits,
                              wide ? Value() : out.dweight, APFloat(1.0f),
                              APFloat(1.0f), true, false);
    if (wide) {
      dw = CastOp::create(b, loc, RankedTensorType::get({d, v}, lossElt), dw,
                          StringAttr());
      out.dweight =
          out.dweight ? Value(AddOp::create(b, loc, out.dweight, dw)) : dw;
    } else {
      out.dweight = dw;
    }
  }
  if (out.dweight && eltOf(out.dweight) != elt)
    out.dweight = CastOp::create(b, loc, weight.getType(), out.dweight,
                                 b.getStringAttr("gradient"));
  if (out.dbias && eltOf(out.dbias) != elt)
    out.dbias = CastOp::create(b, loc, bias.getType(), out.dbias,
                               b.getStringAttr("gradient"));
  if (count)
    out.loss = DivOp::create(b, loc, out.loss, count);
  if (!dhiddenChunks.empty())
    out.dhidden = dhiddenChunks.size() == 1
                      ? dhiddenChunks.front()
                      : Value(ConcatOp::create(b, loc, dhiddenChunks,
                                               b.getI64IntegerAttr(0)));
  return out;
}

/// Marks the ops after `before` (null: from the block's start) up to (not
/// including) `end` as the loss's (kLossAttr: the memory plan's loss
/// category), but those that compute what the chunks hand on: the hidden
/// states', weight's and bias's gradients. With `backward`, also as
/// backward ops (they run where the backward starts).
void markChunks(Operation *before, Operation *end, const ChunkedLoss &chunks,
                bool backward) {
  Builder b(end->getContext());
  Operation *first = before ? before->getNextNode() : &end->getBlock()->front();
  for (Operation *op = first; op != end; op = op->getNextNode()) {
    if (backward)
      op->setAttr(kBackwardAttr, b.getUnitAttr());
    bool handedOn = llvm::any_of(op->getResults(), [&](Value v) {
      return v == chunks.dhidden || v == chunks.dweight || v == chunks.dbias;
    });
    if (!handedOn)
      op->setAttr(kLossAttr, b.getUnitAttr());
  }
}

/// Whether every use of `value` comes after `op` in its block.
bool usedOnlyAfter(Value value, Operation *op) {
  return llvm::all_of(value.getUsers(), [&](Operation *user) {
    return op->isBeforeInBlock(user);
  });
}

struct MemfitChunkLossPass
    : public mlir::memfit::impl::MemfitChunkLossPassBase<MemfitChunkLossPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (rows < 0) {
      func.emitError("memfit-chunk-loss: rows must be >= 0, got ")
          << static_cast<int64_t>(rows);
      return signalPassFailure();
    }
    SmallVector<LinearCrossEntropyGradOp> grads(
        func.getOps<LinearCrossEntropyGradOp>());
    for (LinearCrossEntropyGradOp grad : grads) {
      // The loss of the same operands, if the step computes it too.
      LinearCrossEntropyOp loss;
      for (Operation *user : grad.getHidden().getUsers())
        if (auto l = dyn_cast<LinearCrossEntropyOp>(user);
            l && l.getWeight() == grad.getWeight() &&
            l.getLabels() == grad.getLabels() &&
            l.getBias() == grad.getBias() &&
            l.getReduction() == grad.getReduction() &&
            l.getIgnoreIndexAttr() == grad.getIgnoreIndexAttr() &&
            usedOnlyAfter(l.getResult(), grad))
          loss = l;
      OpBuilder b(grad);
      Operation *before = grad->getPrevNode();
      ChunkedLoss chunks = buildChunks(
          b, grad.getLoc(), grad.getReduction(), grad.getHidden(),
          grad.getWeight(), grad.getBias(), grad.getLabels(),
          grad.getIgnoreIndexAttr(), grad.getDloss(), rows,
          !grad.getDhidden().use_empty(), !grad.getDweight().use_empty(),
          grad.getDbias() && !grad.getDbias().use_empty());
      // The chunks run where the backward starts.
      markChunks(before, grad.getOperation(), chunks, /*backward=*/true);
      // The memory plan files a parameter's gradient by this attribute
      // (its presence: the grad op had it, for the weight or the bias).
      if (Attribute of = grad->getAttr(kGradientOfAttr))
        for (Value g : {chunks.dweight, chunks.dbias})
          if (Operation *def = g ? g.getDefiningOp() : nullptr)
            def->setAttr(kGradientOfAttr, of);
      if (chunks.dhidden)
        grad.getDhidden().replaceAllUsesWith(chunks.dhidden);
      if (chunks.dweight)
        grad.getDweight().replaceAllUsesWith(chunks.dweight);
      if (chunks.dbias)
        grad.getDbias().replaceAllUsesWith(chunks.dbias);
      grad.erase();
      if (loss) {
        loss.getResult().replaceAllUsesWith(chunks.loss);
        loss.erase();
      }
    }
    // A loss without a gradient: the chunks of the loss alone.
    SmallVector<LinearCrossEntropyOp> losses(
        func.getOps<LinearCrossEntropyOp>());
    for (LinearCrossEntropyOp loss : losses) {
      OpBuilder b(loss);
      Operation *before = loss->getPrevNode();
      ChunkedLoss chunks = buildChunks(
          b, loss.getLoc(), loss.getReduction(), loss.getHidden(),
          loss.getWeight(), loss.getBias(), loss.getLabels(),
          loss.getIgnoreIndexAttr(), Value(), rows);
      markChunks(before, loss.getOperation(), chunks, /*backward=*/false);
      loss.getResult().replaceAllUsesWith(chunks.loss);
      loss.erase();
    }
  }
};

} // namespace
