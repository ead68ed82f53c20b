//===- FoldTransposes.cpp - transposes folded into contractions -----------===//
//
// memfit-fuse's first rewrite, and the memfit-fold-transposes pass that
// runs it alone before memfit-remat: a kernel that only transposes a
// matrix (or swaps the last two dimensions of a batch) and feeds a gemm or
// a matmul becomes the contraction's transpose flag, a swap back is the
// source itself, and a transpose of a contraction's result that nothing
// else reads is the contraction with its operands swapped. The library
// reads the operand in place; no transposed copy is made.
//
//===----------------------------------------------------------------------===//

#include "FusionRules.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITFOLDTRANSPOSESPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::fusion;

namespace {

/// The input of `kernel` when the kernel only transposes a matrix (a 2-D
/// float value), else null.
Value transposedMatrix(KernelOp kernel) {
  auto ops = kernel.getBodyOps();
  if (std::distance(ops.begin(), ops.end()) != 1)
    return {};
  auto transpose = dyn_cast<TransposeOp>(*ops.begin());
  if (!transpose || transpose.getPerm() != ArrayRef<int64_t>({1, 0}) ||
      !isa<FloatType>(
          cast<RankedTensorType>(transpose.getType()).getElementType()))
    return {};
  auto arg = dyn_cast<BlockArgument>(transpose.getInput());
  if (!arg)
    return {};
  return kernel.getInputs()[arg.getArgNumber()];
}

/// The input of `kernel` when the kernel only swaps the last two
/// dimensions of a float value of rank 3 or more, else null.
Value batchTransposed(KernelOp kernel) {
  auto ops = kernel.getBodyOps();
  if (std::distance(ops.begin(), ops.end()) != 1)
    return {};
  auto transpose = dyn_cast<TransposeOp>(*ops.begin());
  if (!transpose)
    return {};
  ArrayRef<int64_t> perm = transpose.getPerm();
  int64_t rank = perm.size();
  if (rank < 3 ||
      !isa<FloatType>(
          cast<RankedTensorType>(transpose.getType()).getElementType()))
    return {};
  for (int64_t d = 0; d < rank - 2; ++d)
    if (perm[d] != d)
      return {};
  if (perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return {};
  auto arg = dyn_cast<BlockArgument>(transpose.getInput());
  if (!arg)
    return {};
  return kernel.getInputs()[arg.getArgNumber()];
}

/// A 2-D contraction `op(a) op(b)` with transpose flags, as a gemm.
Value createGemm(OpBuilder &b, Location loc, Type type, Value x, Value y,
                 bool tx, bool ty, const APFloat &alpha) {
  auto gemm = GemmOp::create(b, loc, x, y, Value(), alpha,
                             APFloat(alpha.getSemantics(), 1), tx, ty);
  assert(gemm.getType() == type && "the folded gemm changes the type");
  (void)type;
  return gemm;
}

/// Whether `op` is a kernel that swaps the last two dimensions of
/// `transposed` back (and computes no gradient: those keep their ops).
bool isTransposeBack(Operation *op, Value transposed) {
  auto back = dyn_cast<KernelOp>(op);
  return back && batchTransposed(back) == transposed &&
         !back->hasAttr(kGradientOfAttr) &&
         !back.getBodyOps().begin()->hasAttr(kGradientOfAttr);
}

/// Whether `use` is a float matmul's operand of rank 3 or more, which the
/// library can read transposed in each batch (the attention's K^T and
/// the transposes of its gradients).
bool canTakeBatchTransposed(OpOperand &use) {
  auto matmul = dyn_cast<MatMulOp>(use.getOwner());
  return matmul && isa<FloatType>(matmul.getType().getElementType()) &&
         cast<RankedTensorType>(use.get().getType()).getRank() >= 3;
}

/// Rewrites `use`'s matmul to read `source` with its transpose flag
/// flipped.
void takeBatchTransposed(OpOperand &use, Value source) {
  auto matmul = cast<MatMulOp>(use.getOwner());
  use.set(source);
  if (use.getOperandNumber() == 0)
    matmul.setTransA(!matmul.getTransA());
  else
    matmul.setTransB(!matmul.getTransB());
}

/// Whether the contraction that reads `use` can read the transpose's
/// source with a flag instead: a gemm's a or b, a matmul's 2-D rhs (with
/// an lhs of rank 2 or more, flattened), or its 2-D lhs with a 2-D rhs.
bool canTakeTransposed(OpOperand &use) {
  Operation *owner = use.getOwner();
  if (auto gemm = dyn_cast<GemmOp>(owner))
    return use.getOperandNumber() < 2;
  auto matmul = dyn_cast<MatMulOp>(owner);
  if (!matmul || !isa<FloatType>(matmul.getType().getElementType()) ||
      matmul.getTransA() || matmul.getTransB())
    return false;
  int64_t lhsRank = matmul.getLhs().getType().getRank();
  int64_t rhsRank = matmul.getRhs().getType().getRank();
  if (use.getOperandNumber() == 1)
    return rhsRank == 2 && lhsRank >= 2;
  return lhsRank == 2 && rhsRank == 2;
}

/// Rewrites `use`'s contraction to read `source` (the transposed
/// operand's own matrix) with the transpose flag flipped.
void takeTransposed(OpOperand &use, Value source) {
  Operation *owner = use.getOwner();
  OpBuilder b(owner);
  if (auto gemm = dyn_cast<GemmOp>(owner)) {
    use.set(source);
    if (use.getOperandNumber() == 0)
      gemm.setTransA(!gemm.getTransA());
    else
      gemm.setTransB(!gemm.getTransB());
    return;
  }
  auto matmul = cast<MatMulOp>(owner);
  Location loc = matmul.getLoc();
  APFloat one(1.0f);
  Value lhs = matmul.getLhs(), rhs = matmul.getRhs();
  bool transA = false, transB = false;
  if (use.getOperandNumber() == 0) {
    lhs = source;
    transA = true;
  } else {
    rhs = source;
    transB = true;
  }
  // A batch of rows times a matrix is one 2-D product over the rows.
  ArrayRef<int64_t> out = matmul.getType().getShape();
  ArrayRef<int64_t> lhsShape = matmul.getLhs().getType().getShape();
  int64_t k = lhsShape.back();
  int64_t rows =
      matmul.getLhs().getType().getNumElements() / std::max<int64_t>(k, 1);
  Value flat = transA ? lhs : reshaped(b, loc, lhs, {rows, k});
  Type elt = matmul.getType().getElementType();
  Value product = createGemm(
      b, loc, RankedTensorType::get({transA ? out[0] : rows, out.back()}, elt),
      flat, rhs, transA, transB, one);
  // What the planner and the reports know of the step (backward, saved).
  copyMemfitAttrs(matmul, product.getDefiningOp());
  matmul.replaceAllUsesWith(reshaped(b, loc, product, out));
  matmul->erase();
}

/// When `kernel` transposes a contraction's result (a matrix, or each
/// matrix of a batch) that nothing else reads, computes the transposed
/// result directly and erases both.
bool foldIntoProducer(KernelOp kernel, Value source) {
  Operation *producer = source.getDefiningOp();
  if (!producer || !source.hasOneUse())
    return false;
  Value a, b;
  bool ta = false, tb = false;
  APFloat alpha(1.0f);
  if (auto gemm = dyn_cast<GemmOp>(producer)) {
    if (gemm.getC())
      return false;
    a = gemm.getA();
    b = gemm.getB();
    ta = gemm.getTransA();
    tb = gemm.getTransB();
    alpha = gemm.getAlpha();
  } else if (auto matmul = dyn_cast<MatMulOp>(producer)) {
    if (matmul.getLhs().getType().getRank() < 2 ||
        matmul.getRhs().getType().getRank() < 2)
      return false;
    a = matmul.getLhs();
    b = matmul.getRhs();
    ta = matmul.getTransA();
    tb = matmul.getTransB();
  } else {
    return false;
  }
  OpBuilder builder(producer);
  Type type = kernel->getResult(0).getType();
  Value transposed;
  if (cast<RankedTensorType>(type).getRank() == 2) {
    transposed =
        createGemm(builder, producer->getLoc(), type, b, a, !tb, !ta, alpha);
  } else {
    // (op(A) op(B))^T = op(B)^T op(A)^T in each batch.
    auto matmul = MatMulOp::create(builder, producer->getLoc(), b, a, !tb, !ta);
    transposed = matmul.getResult();
  }
  // The step's attributes, and the transpose's (a gradient's
  // memfit.gradient_of is on the op that computes it last).
  Operation *gemm = transposed.getDefiningOp();
  for (Operation *from :
       {producer, kernel.getOperation(), &*kernel.getBodyOps().begin()})
    copyMemfitAttrs(from, gemm);
  kernel->getResult(0).replaceAllUsesWith(transposed);
  kernel->erase();
  producer->erase();
  return true;
}

} // namespace

void fusion::foldTransposes(func::FuncOp func) {
  Block &block = func.getBody().front();
  std::optional<Schedule> schedule(std::in_place, block);
  llvm::SmallPtrSet<Operation *, 8> erased;
  for (KernelOp kernel : llvm::to_vector(block.getOps<KernelOp>())) {
    if (erased.contains(kernel))
      continue;
    // A fold replaces ops and values: positions and readers are taken
    // afresh (an erased value's storage may hold a new one).
    if (!schedule)
      schedule.emplace(block);
    Value source = transposedMatrix(kernel);
    bool batched = !source;
    if (batched)
      source = batchTransposed(kernel);
    if (!source)
      continue;
    Value transposed = kernel->getResult(0);
    // The contraction that made the source, when only this reads it.
    if (foldIntoProducer(kernel, source)) {
      schedule.reset();
      continue;
    }
    // A contraction after an in-place update would read the source
    // updated: those keep the copy. A transpose back is the source
    // itself, for its readers.
    int64_t at = schedule->position.lookup(kernel);
    SmallVector<OpOperand *> uses, foldable;
    int64_t lastReader = 0;
    for (OpOperand &use : transposed.getUses()) {
      uses.push_back(&use);
      Operation *owner = use.getOwner();
      bool back = batched && isTransposeBack(owner, transposed);
      if (!back &&
          !(batched ? canTakeBatchTransposed(use) : canTakeTransposed(use)))
        continue;
      int64_t reader = schedule->position.lookup(owner);
      if (back)
        for (Operation *user : owner->getUsers())
          reader = std::max(reader, schedule->position.lookup(user));
      if (schedule->writeBetween(at, reader, source))
        continue;
      foldable.push_back(&use);
      lastReader = std::max(lastReader, reader);
    }
    if (foldable.empty())
      continue;
    // The source now lives until the contractions read it: free when it
    // is not in the arena or lives that long anyway, or when the copy
    // (as many bytes) goes away.
    if (!outsideArena(source) && foldable.size() != uses.size() &&
        schedule->lastUse.lookup(bufferRoot(source)) < lastReader)
      continue;
    for (OpOperand *use : foldable) {
      Operation *owner = use->getOwner();
      if (batched && isTransposeBack(owner, transposed)) {
        owner->getResult(0).replaceAllUsesWith(source);
        erased.insert(owner);
        owner->erase();
      } else if (batched) {
        takeBatchTransposed(*use, source);
      } else {
        takeTransposed(*use, source);
      }
    }
    if (transposed.use_empty())
      kernel->erase();
    schedule.reset();
  }
}

namespace {

/// memfit-fuse's first rewrite on its own, which the training pipeline runs
/// before memfit-remat: remat then plans the step without the copies.
struct MemfitFoldTransposesPass
    : public mlir::memfit::impl::MemfitFoldTransposesPassBase<
          MemfitFoldTransposesPass> {
  void runOnOperation() override { foldTransposes(getOperation()); }
};

} // namespace
