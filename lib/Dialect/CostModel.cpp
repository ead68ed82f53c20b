//===- CostModel.cpp - FLOPs and bytes of the memfit ops ------------------===//
//
// The cost model of CostOpInterface: the class-based default and the ops
// with a formula of their own. The model is documented with the interface
// in MemfitInterfaces.td; keep the two in step.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/OpCost.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/MemfitOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::memfit;

/// Elements of a statically shaped ranked tensor; 0 for anything else.
static int64_t numElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements();
}

/// Bytes of a statically shaped ranked tensor; 0 for anything else.
static int64_t typeBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? memfit::tensorBytes(tensor) : 0;
}

/// A splat constant inside a kernel: the generated code holds it as a
/// literal and reads no memory for it.
static bool isLiteral(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  return constant && isa<KernelOp>(constant->getParentOp()) &&
         constant.getValue().isSplat();
}

static int64_t readBytes(Value value) {
  return isLiteral(value) ? 0 : typeBytes(value.getType());
}

static int64_t resultElements(Operation *op) {
  int64_t elements = 0;
  for (Type type : op->getResultTypes())
    elements += numElements(type);
  return elements;
}

/// Bytes of reading every operand and writing every result once.
static int64_t movedBytes(Operation *op) {
  int64_t bytes = 0;
  for (Value operand : op->getOperands())
    bytes += readBytes(operand);
  for (Type type : op->getResultTypes())
    bytes += typeBytes(type);
  return bytes;
}

bool mlir::memfit::isFreeOp(Operation *op) {
  return op->hasTrait<OpTrait::memfit::RunsNothing>();
}

OpCost mlir::memfit::defaultOpCost(Operation *op) {
  // A view shares its source's buffer; weights and constants sit in the
  // weights region; an assign is planned in place. None of them runs.
  if (isFreeOp(op))
    return {};

  OpCost cost;
  cost.bytes = movedBytes(op);
  auto opClass = dyn_cast<OpClassInterface>(op);
  if (!opClass)
    return cost;
  auto costOp = dyn_cast<CostOpInterface>(op);
  int64_t factor = costOp ? costOp.getFlopsPerElement() : 1;
  switch (opClass.getOpClass()) {
  case OpClass::ElementWise:
    cost.flops = factor * resultElements(op);
    break;
  case OpClass::Reduction:
  case OpClass::Normalization:
  case OpClass::Loss:
    cost.flops = factor * numElements(op->getOperand(0).getType());
    break;
  case OpClass::Quantization: // per element of the unquantized side
    cost.flops = factor * std::max(numElements(op->getOperand(0).getType()),
                                   resultElements(op));
    break;
  case OpClass::Contraction: // every contraction has its own formula
  case OpClass::Attention:   // so has attention
  case OpClass::Collective:  // and collectives (bytes on the wire)
  case OpClass::DataMovement:
  case OpClass::Constant:
    break;
  }
  return cost;
}

OpCost mlir::memfit::estimateCost(Operation *op) {
  if (auto costOp = dyn_cast<CostOpInterface>(op))
    return costOp.getCost();
  OpCost cost;
  cost.bytes = movedBytes(op);
  return cost;
}

//===----------------------------------------------------------------------===//
// Ops with a formula of their own
//===----------------------------------------------------------------------===//

OpCost MatMulOp::getCost() {
  // Every result element is a dot product of length K; broadcast batch
  // dimensions and promoted 1-D operands are in the result's shape.
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  int64_t k = lhs.getShape()[lhs.getRank() - (getTransA() ? 2 : 1)];
  return {2 * resultElements(*this) * k, movedBytes(*this)};
}

OpCost GemmOp::getCost() {
  auto a = cast<RankedTensorType>(getA().getType());
  int64_t k = a.getDimSize(getTransA() ? 0 : 1);
  int64_t mn = resultElements(*this);
  int64_t flops = 2 * mn * k;
  if (getAlpha().convertToFloat() != 1.0f)
    flops += mn;
  if (getC()) {
    flops += mn;
    if (getBeta().convertToFloat() != 1.0f)
      flops += mn;
  }
  return {flops, movedBytes(*this)};
}

OpCost RotaryOp::getCost() {
  // Two products and a sum an element.
  return {3 * resultElements(*this), movedBytes(*this)};
}

OpCost SliceOp::getCost() {
  // Reads only the selected elements.
  int64_t bytes = typeBytes(getType());
  return {0, (isLiteral(getInput()) ? 0 : bytes) + bytes};
}

OpCost GatherOp::getCost() {
  // Reads the indices and the selected rows, not the whole table.
  int64_t bytes = typeBytes(getType());
  return {0,
          readBytes(getIndices()) + (isLiteral(getData()) ? 0 : bytes) + bytes};
}

OpCost NegativeLogLikelihoodLossOp::getCost() {
  // Picks one log-probability per target.
  int64_t targets = numElements(getTarget().getType());
  int64_t bytes =
      readBytes(getTarget()) +
      targets * elementBytes(getInput().getType().getElementType()) +
      typeBytes(getType());
  if (getWeights())
    bytes += readBytes(getWeights());
  return {getFlopsPerElement() * targets, bytes};
}

/// The bytes a gather_grad into another value reads (and as many it
/// writes) of it: the rows it adds to, one per index and at most every row
/// of the axis (a repeated index adds to a row in cache).
static int64_t accumulatedBytes(GatherGradOp op) {
  ArrayRef<int64_t> shape = op.getType().getShape();
  int64_t axis = op.getAxis();
  int64_t rows = std::min(numElements(op.getIndices().getType()), shape[axis]);
  int64_t perRow =
      numElements(op.getType()) / std::max<int64_t>(shape[axis], 1);
  return rows * perRow * elementBytes(op.getType().getElementType());
}

OpCost GatherGradOp::getCost() {
  // One addition per gradient element. Accumulating in place reads and
  // writes only the rows it adds to.
  int64_t flops = numElements(getGrad().getType());
  if (!getInit())
    return {flops, movedBytes(*this)};
  return {flops, readBytes(getGrad()) + readBytes(getIndices()) +
                     2 * accumulatedBytes(*this)};
}

/// Bytes a kernel reads of one of its inputs: all of them, unless the body
/// only gathers or slices from it, which reads the selected elements.
static int64_t kernelInputBytes(BlockArgument input) {
  int64_t all = typeBytes(input.getType());
  int64_t selected = 0;
  for (OpOperand &use : input.getUses()) {
    Operation *user = use.getOwner();
    // The rows a gather_grad adds to in place.
    if (auto scatter = dyn_cast<GatherGradOp>(user);
        scatter && &use == &scatter.getInitMutable()[0]) {
      selected += accumulatedBytes(scatter);
      continue;
    }
    auto gather = dyn_cast<GatherOp>(user);
    bool selects =
        (gather && &use == &gather.getDataMutable()) || isa<SliceOp>(user);
    if (!selects)
      return all;
    selected += typeBytes(user->getResult(0).getType());
  }
  return std::min(all, selected);
}

/// Attention's pairs of a query and a key that the query sees: all S * T,
/// or under `causal` those with j <= i. Per pair, a dot product of the
/// query and key head size and one of the value head size, plus the online
/// softmax's few operations; the backward recomputes the scores.
static int64_t attentionPairs(Value query, Value key, bool causal) {
  ArrayRef<int64_t> q = shapeOf(query);
  int64_t s = q[2], t = shapeOf(key)[2];
  int64_t pairs = s * t;
  if (causal) {
    int64_t full = std::max<int64_t>(0, s - t); // rows that see all T keys
    int64_t partial = s - full;                  // rows i < T: i + 1 keys
    pairs = full * t + partial * (partial + 1) / 2;
  }
  return q[0] * q[1] * pairs;
}

/// A dropout on the probabilities draws a random number per pair, each of
/// the three ops again: memfit.dropout's 4 FLOPs per element.
static int64_t dropoutFlops(APFloat ratio) {
  return ratio.convertToDouble() > 0 ? 4 : 0;
}

OpCost AttentionOp::getCost() {
  int64_t d = shapeOf(getQuery())[3], dv = shapeOf(getValue())[3];
  return {attentionPairs(getQuery(), getKey(), getCausal()) *
              (2 * d + 2 * dv + 5 + dropoutFlops(getDropoutRatio())),
          movedBytes(*this)};
}

OpCost AttentionGradQueryOp::getCost() {
  // The score, dresult . value, and dquery's update.
  int64_t d = shapeOf(getQuery())[3], dv = shapeOf(getValue())[3];
  return {attentionPairs(getQuery(), getKey(), getCausal()) *
              (4 * d + 2 * dv + 5 + dropoutFlops(getDropoutRatio())),
          movedBytes(*this)};
}

OpCost AttentionGradKeyValueOp::getCost() {
  // The score, dvalue's update, dresult . value, and dkey's update.
  int64_t d = shapeOf(getQuery())[3], dv = shapeOf(getValue())[3];
  return {attentionPairs(getQuery(), getKey(), getCausal()) *
              (4 * d + 4 * dv + 5 + dropoutFlops(getDropoutRatio())),
          movedBytes(*this)};
}

/// linear_cross_entropy: the head's contraction, 2 * N * D * V, and the
/// loss's 5 per logit (6 with a bias to add); its gradient recomputes the
/// logits and adds the two contractions of the backward and the loss
/// gradient's 7 per logit (8 with the bias's sum). The bytes are the
/// operands and results: the logits are never stored.
OpCost LinearCrossEntropyOp::getCost() {
  ArrayRef<int64_t> h = shapeOf(getHidden());
  int64_t logits = h[0] * shapeOf(getWeight())[1];
  return {logits * (2 * h[1] + 5 + (getBias() ? 1 : 0)), movedBytes(*this)};
}

OpCost LinearCrossEntropyGradOp::getCost() {
  ArrayRef<int64_t> h = shapeOf(getHidden());
  int64_t logits = h[0] * shapeOf(getWeight())[1];
  return {logits * (6 * h[1] + 7 + (getBias() ? 2 : 0)), movedBytes(*this)};
}

OpCost KernelOp::getCost() {
  // The body's intermediate values stay in registers: the kernel moves its
  // inputs and results only.
  OpCost cost;
  for (Operation &op : getBodyOps())
    cost.flops += estimateCost(&op).flops;
  for (BlockArgument input : getBodyBlock().getArguments())
    cost.bytes += kernelInputBytes(input);
  // A result accumulated in place (a yielded gather_grad into a kernel
  // input, as the verifier requires) writes only the rows it adds to.
  for (auto [type, yielded] : llvm::zip(
           getResultTypes(), getBodyBlock().getTerminator()->getOperands())) {
    auto scatter = yielded.getDefiningOp<GatherGradOp>();
    cost.bytes += scatter && scatter.getInit() ? accumulatedBytes(scatter)
                                               : typeBytes(type);
  }
  return cost;
}

//===----------------------------------------------------------------------===//
// Collectives: the bytes a rank sends in the ring algorithms NCCL and MPI
// use for large messages, for a tensor of B bytes over a group of N: an
// all-reduce is a reduce-scatter then an all-gather, 2 (N - 1) / N * B; a
// reduce-scatter or an all-gather of the whole (N - 1) / N * B; a
// broadcast B (the root's, pipelined along the ring). Memory traffic is the
// operand read and the result written.
//===----------------------------------------------------------------------===//

static OpCost collectiveCost(Operation *op, int64_t groupSize,
                             int64_t wholeBytes, int64_t numerator,
                             bool broadcast) {
  OpCost cost;
  cost.bytes = movedBytes(op);
  if (groupSize > 1)
    cost.wireBytes = broadcast ? wholeBytes
                               : numerator * (groupSize - 1) * wholeBytes /
                                     groupSize;
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    cost.flops = numElements(reduce.getType()) * (groupSize - 1);
  else if (auto scatter = dyn_cast<ReduceScatterOp>(op))
    cost.flops = numElements(scatter.getInput().getType()) * (groupSize - 1);
  return cost;
}

OpCost AllReduceOp::getCost() {
  return collectiveCost(*this, getGroupSize(), typeBytes(getType()), 2, false);
}

OpCost ReduceScatterOp::getCost() {
  return collectiveCost(*this, getGroupSize(),
                        typeBytes(getInput().getType()), 1, false);
}

OpCost AllGatherOp::getCost() {
  return collectiveCost(*this, getGroupSize(), typeBytes(getType()), 1,
                        false);
}

OpCost BroadcastOp::getCost() {
  return collectiveCost(*this, getGroupSize(), typeBytes(getType()), 1, true);
}
