//===- Epilogues.cpp - memfit-fuse: kernels a contraction can compute -----===//
//
// Three of cuBLASLt's epilogues replace a kernel of a linear layer (see
// FusionRules.h):
//   - the bias: a kernel that only adds a row vector to a matmul's result
//     becomes the matmul as a memfit.gemm with that vector as `c` (beta 1),
//     which the CUDA emitter runs as the BIAS epilogue;
//   - the GELU: a kernel that adds the bias and takes the tanh GELU becomes
//     that gemm and a GELU kernel right after it, marked `memfit.epilogue`,
//     which the emitter runs as GELU_AUX_BIAS (the sum as the auxiliary
//     output); the memory planner keeps the GELU live from the gemm's step;
//   - the bias gradient: a kernel that only sums the rows of the operand a
//     weight-gradient gemm reads as op(B) [k, n] (or op(A) [k, m]) is moved
//     right before that gemm and marked `memfit.epilogue`; the emitter runs
//     it as the gemm's BGRAD epilogue.
// Each marked kernel is also the epilogue's fallback. The sums moved before
// the gemm keep the memory plan exact: they are live from before the gemm,
// so no buffer the gemm reads or writes can share their bytes.
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

/// The kernel input that a block argument of its body stands for.
Value inputOf(KernelOp kernel, Value arg) {
  auto block = dyn_cast<BlockArgument>(arg);
  return block ? kernel.getInputs()[block.getArgNumber()] : Value();
}

/// Whether an op strictly between `from` and `to` (ops of one block, in
/// either order) writes in place: a kernel's result tied to `root`'s buffer
/// or, with `root` null, any tied result or any other step or op with
/// effects (what a matmul may not move down past: a weight cast of mixed
/// precision, the bias's own, it may).
bool writesInPlaceBetween(Operation *from, Operation *to, Value root) {
  if (to->isBeforeInBlock(from))
    std::swap(from, to);
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel) {
      if (!root && (isScheduledStep(op) || !isPure(op)))
        return true;
      continue;
    }
    for (unsigned r = 0; r < kernel.getNumResults(); ++r)
      if (Value tied = kernel.getTiedInput(r);
          tied && (!root || bufferRoot(tied) == root))
        return true;
  }
  return false;
}

/// The matmul whose only result `product` is, read by `kernel` alone (the
/// gemm takes the kernel's place), that a gemm with `bias` as `c` can
/// compute: a 2-D weight, no
/// result_perm, an input neither viewed nor (when batched) transposed;
/// `bias` a vector of the result's last dimension. Else null.
MatMulOp biasedMatMul(KernelOp kernel, Value product, Value bias) {
  auto matmul = product.getDefiningOp<MatMulOp>();
  auto biasType = cast<RankedTensorType>(bias.getType());
  auto type = cast<RankedTensorType>(product.getType());
  if (!matmul || !product.hasOneUse() || matmul.getResultPerm() ||
      biasType.getRank() != 1 ||
      biasType.getElementType() != type.getElementType() ||
      biasType.getDimSize(0) != type.getShape().back() ||
      matmul->getBlock() != kernel->getBlock() ||
      writesInPlaceBetween(matmul, kernel, Value()))
    return {};
  auto a = cast<RankedTensorType>(matmul.getLhs().getType());
  auto b = cast<RankedTensorType>(matmul.getRhs().getType());
  // The rows of a batched input are flattened into the gemm's m, which a
  // transposed or viewed input cannot be.
  if (b.getRank() != 2 || a.getRank() < 2 ||
      (a.getRank() > 2 && matmul.getTransA()) ||
      matmul.getLhs().getDefiningOp<StridedViewOp>() ||
      matmul.getRhs().getDefiningOp<StridedViewOp>())
    return {};
  return matmul;
}

/// `matmul`'s product plus `bias` as a gemm with `c` at `builder`'s point,
/// in the matmul's result shape, with the memfit attributes of `attrs`.
Value biasedGemm(OpBuilder &builder, Location loc, MatMulOp matmul, Value bias,
                 Operation *attrs) {
  auto a = cast<RankedTensorType>(matmul.getLhs().getType());
  int64_t rows = a.getNumElements() / a.getShape().back();
  Value x = matmul.getLhs();
  if (a.getRank() > 2)
    x = fusion::reshaped(builder, loc, x, {rows, a.getShape().back()});
  APFloat one(1.0f);
  auto gemm = GemmOp::create(builder, loc, x, matmul.getRhs(), bias, one, one,
                             matmul.getTransA(), matmul.getTransB());
  copyMemfitAttrs(attrs, gemm);
  return fusion::reshaped(builder, loc, gemm, matmul.getType().getShape());
}

/// y = x + bias, with x a matmul's only result read by this kernel alone,
/// bias a vector of x's last dimension: y = gemm(x's operands, c = bias).
void biasIntoContraction(KernelOp kernel) {
  auto add = dyn_cast_or_null<AddOp>(soleBodyOp(kernel));
  if (!add || kernel.getNumResults() != 1)
    return;
  Value lhs = inputOf(kernel, add.getLhs());
  Value rhs = inputOf(kernel, add.getRhs());
  if (!lhs || !rhs)
    return;
  for (auto [product, bias] : {std::pair(lhs, rhs), std::pair(rhs, lhs)}) {
    MatMulOp matmul = biasedMatMul(kernel, product, bias);
    if (!matmul || product.getType() != kernel.getResult(0).getType())
      continue;
    OpBuilder builder(kernel);
    Value y = biasedGemm(builder, kernel.getLoc(), matmul, bias, kernel);
    kernel.getResult(0).replaceAllUsesWith(y);
    kernel.erase();
    matmul.erase();
    return;
  }
}

/// h = gelu_tanh(x + bias) (and x + bias, which the backward reads), with x
/// a matmul's only result: the sum a gemm with `c` = bias, and the GELU a
/// kernel of its own right after it, marked kEpilogueAttr, which the CUDA
/// emitter runs as the gemm's GELU_AUX_BIAS.
void geluIntoContraction(KernelOp kernel) {
  auto ops = kernel.getBodyOps();
  if (std::distance(ops.begin(), ops.end()) != 2 || kernel.getNumResults() > 2)
    return;
  auto add = dyn_cast<AddOp>(&*ops.begin());
  auto gelu = dyn_cast<GeluOp>(&*std::next(ops.begin()));
  if (!add || !gelu || gelu.getInput() != add.getResult() ||
      gelu.getApproximate() != GeluApproximation::Tanh)
    return;
  Value lhs = inputOf(kernel, add.getLhs());
  Value rhs = inputOf(kernel, add.getRhs());
  Operation *yield = kernel.getBodyBlock().getTerminator();
  if (!lhs || !rhs ||
      !llvm::is_contained(yield->getOperands(), gelu.getResult()) ||
      !llvm::all_of(yield->getOperands(), [&](Value v) {
        return v == add.getResult() || v == gelu.getResult();
      }))
    return;
  for (auto [product, bias] : {std::pair(lhs, rhs), std::pair(rhs, lhs)}) {
    MatMulOp matmul = biasedMatMul(kernel, product, bias);
    if (!matmul || product.getType() != add.getType())
      continue;
    OpBuilder builder(kernel);
    Location loc = kernel.getLoc();
    Value sum = biasedGemm(builder, loc, matmul, bias, kernel);
    fusion::MergedKernel parts;
    parts.addInput(sum);
    KernelOp activation = parts.create(builder, loc, TypeRange{gelu.getType()});
    Value h = GeluOp::create(builder, gelu.getLoc(), GeluApproximation::Tanh,
                             parts.body->getArgument(0));
    YieldOp::create(builder, loc, ValueRange{h});
    copyMemfitAttrs(kernel, activation);
    activation->setAttr(kEpilogueAttr, UnitAttr::get(kernel.getContext()));
    for (auto [i, v] : llvm::enumerate(yield->getOperands()))
      kernel.getResult(i).replaceAllUsesWith(
          v == gelu.getResult() ? activation.getResult(0) : sum);
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
  if (writesInPlaceBetween(kernel, gemm, bufferRoot(kernel.getInputs()[0])))
    return;
  kernel->moveBefore(gemm);
  fusion::moveViewsAfter(kernel->getResults(), kernel);
  kernel->setAttr(kEpilogueAttr, UnitAttr::get(kernel.getContext()));
}

} // namespace

void fusion::biasIntoContractions(func::FuncOp func) {
  SmallVector<KernelOp> kernels(func.getBody().getOps<KernelOp>());
  for (KernelOp kernel : kernels)
    biasIntoContraction(kernel);
}

void fusion::geluIntoContractions(func::FuncOp func) {
  SmallVector<KernelOp> kernels(func.getBody().getOps<KernelOp>());
  for (KernelOp kernel : kernels)
    geluIntoContraction(kernel);
}

void fusion::markBiasGradients(func::FuncOp func) {
  SmallVector<KernelOp> kernels(func.getBody().getOps<KernelOp>());
  for (KernelOp kernel : kernels)
    markBiasGradient(kernel);
}
