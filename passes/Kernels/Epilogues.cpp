//===- Epilogues.cpp - memfit-fuse: kernels a contraction can compute -----===//
//
// Two of cuBLASLt's epilogues replace a kernel of a linear layer (see
// FusionRules.h):
//   - the bias: a kernel that only adds a row vector to a matmul's result
//     becomes the matmul as a memfit.gemm with that vector as `c` (beta 1),
//     which the CUDA emitter runs as the BIAS epilogue;
//   - the bias gradient: a kernel that only sums the rows of the operand a
//     weight-gradient gemm reads as op(B) [k, n] (or op(A) [k, m]) is moved
//     right before that gemm and marked `memfit.epilogue`; the emitter runs
//     it as the gemm's BGRAD epilogue, with the kernel as its fallback.
// The kernel moved before the gemm keeps the memory plan exact: its result
// is live from before the gemm, so no buffer the gemm reads or writes can
// share its bytes.
//
//===----------------------------------------------------------------------===//

#include "FusionRules.h"

#include "memfit/Analysis/Epilogues.h"
#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// The op of a kernel whose body is that one op and its yield, else null.
Operation *soleBodyOp(KernelOp kernel) {
  auto ops = kernel.getBodyOps();
  if (std::distance(ops.begin(), ops.end()) != 1)
    return nullptr;
  Operation *op = &*ops.begin();
  Operation *yield = kernel.getBodyBlock().getTerminator();
  if (yield->getNumOperands() != 1 || yield->getOperand(0) != op->getResult(0))
    return nullptr;
  return op;
}

/// The kernel input that a block argument of its body stands for.
Value inputOf(KernelOp kernel, Value arg) {
  auto block = dyn_cast<BlockArgument>(arg);
  return block ? kernel.getInputs()[block.getArgNumber()] : Value();
}

/// Whether a scheduled step (kernel, contraction, collective) lies strictly
/// between `first` and `last`, ops of one block, `first` before `last`.
bool stepBetween(Operation *first, Operation *last) {
  for (Operation *op = first->getNextNode(); op && op != last;
       op = op->getNextNode())
    if (isScheduledStep(op))
      return true;
  return false;
}

/// `x` reshaped to `shape`, or `x` when it has that shape.
Value withShape(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, type.clone(shape), x);
}

/// y = x + bias, with x a matmul's only result read by this kernel alone,
/// bias a vector of x's last dimension: y = gemm(x's operands, c = bias).
void biasIntoContraction(KernelOp kernel) {
  auto add = dyn_cast_or_null<AddOp>(soleBodyOp(kernel));
  if (!add || kernel.getNumResults() != 1)
    return;
  Value lhs = inputOf(kernel, add.getLhs()),
        rhs = inputOf(kernel, add.getRhs());
  if (!lhs || !rhs)
    return;
  auto resultType = cast<RankedTensorType>(kernel.getResult(0).getType());
  for (auto [product, bias] : {std::pair(lhs, rhs), std::pair(rhs, lhs)}) {
    auto matmul = product.getDefiningOp<MatMulOp>();
    auto biasType = cast<RankedTensorType>(bias.getType());
    auto productType = cast<RankedTensorType>(product.getType());
    if (!matmul || !product.hasOneUse() || matmul.getResultPerm() ||
        productType != resultType || biasType.getRank() != 1 ||
        biasType.getElementType() != resultType.getElementType() ||
        biasType.getDimSize(0) != resultType.getShape().back() ||
        matmul->getBlock() != kernel->getBlock() || stepBetween(matmul, kernel))
      continue;
    auto a = cast<RankedTensorType>(matmul.getLhs().getType());
    auto b = cast<RankedTensorType>(matmul.getRhs().getType());
    // A 2-D weight; the rows of a batched input flattened into the gemm's
    // m, which a transposed or viewed input cannot be.
    if (b.getRank() != 2 || a.getRank() < 2 ||
        (a.getRank() > 2 && matmul.getTransA()) ||
        matmul.getLhs().getDefiningOp<StridedViewOp>() ||
        matmul.getRhs().getDefiningOp<StridedViewOp>())
      continue;
    OpBuilder builder(kernel);
    Location loc = kernel.getLoc();
    int64_t rows = a.getNumElements() / a.getShape().back();
    Value x = matmul.getLhs();
    if (a.getRank() > 2)
      x = withShape(builder, loc, x, {rows, a.getShape().back()});
    APFloat one(1.0f);
    auto gemm = GemmOp::create(builder, loc, x, matmul.getRhs(), bias, one, one,
                               matmul.getTransA(), matmul.getTransB());
    copyMemfitAttrs(kernel, gemm);
    Value y = withShape(builder, loc, gemm, resultType.getShape());
    kernel.getResult(0).replaceAllUsesWith(y);
    kernel.erase();
    matmul.erase();
    return;
  }
}

/// The gemm after `kernel` that reads the kernel's input as the operand
/// whose rows the kernel sums (summedOperand); else null.
GemmOp summingGemm(KernelOp kernel) {
  SmallVector<Operation *> readers;
  collectViewReaders(kernel.getInputs()[0], readers);
  for (Operation *reader : readers)
    if (auto gemm = dyn_cast<GemmOp>(reader))
      if (gemm->getBlock() == kernel->getBlock() &&
          summedOperand(kernel, gemm) != SummedOperand::None)
        return gemm;
  return {};
}

/// Whether an op between `from` and `to` (exclusive, either order) writes
/// `root`'s buffer in place.
bool writesBetween(Operation *from, Operation *to, Value root) {
  if (to->isBeforeInBlock(from))
    std::swap(from, to);
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (auto kernel = dyn_cast<KernelOp>(op))
      for (unsigned i = 0; i < kernel.getNumResults(); ++i)
        if (Value tied = kernel.getTiedInput(i);
            tied && bufferRoot(tied) == root)
          return true;
  return false;
}

/// The column sums of a weight gradient's operand as that gemm's epilogue.
void markBiasGradient(KernelOp kernel) {
  if (!sumsRows(kernel))
    return;
  GemmOp gemm = summingGemm(kernel);
  if (!gemm)
    return;
  // The sums move to right before the gemm: every reader of them after it
  // (through views: a bias's [1, 1, n] sums reshaped to [n]), and no
  // in-place write of what they sum on the way.
  SmallVector<Operation *> readers;
  collectViewReaders(kernel.getResult(0), readers);
  for (Operation *reader : readers)
    if (reader->getBlock() != gemm->getBlock() || reader->isBeforeInBlock(gemm))
      return;
  if (writesBetween(kernel, gemm, bufferRoot(kernel.getInputs()[0])))
    return;
  // The views of the sums follow them, in their order.
  SmallVector<Operation *> views;
  for (Operation *user : kernel.getResult(0).getUsers())
    if (isBufferView(user))
      views.push_back(user);
  for (size_t i = 0; i < views.size(); ++i)
    for (Operation *user : views[i]->getResult(0).getUsers())
      if (isBufferView(user))
        views.push_back(user);
  llvm::sort(views,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  kernel->moveBefore(gemm);
  Operation *after = kernel;
  for (Operation *view : views) {
    view->moveAfter(after);
    after = view;
  }
  kernel->setAttr(kEpilogueAttr, UnitAttr::get(kernel.getContext()));
}

} // namespace

void fusion::biasIntoContractions(func::FuncOp func) {
  SmallVector<KernelOp> kernels(func.getBody().getOps<KernelOp>());
  for (KernelOp kernel : kernels)
    biasIntoContraction(kernel);
}

void fusion::markBiasGradients(func::FuncOp func) {
  SmallVector<KernelOp> kernels(func.getBody().getOps<KernelOp>());
  for (KernelOp kernel : kernels)
    markBiasGradient(kernel);
}
