//===- ContractionGradients.cpp - gradients of matmul and gemm ------------===//
//
// dA = dY B^T and dB = A^T dY as gemms over the flattened batch when B is
// a matrix, as batched matmuls otherwise; a matmul with transposed
// operands or a permuted result (memfit-fuse's, after autodiff) has no
// rule.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"

namespace mlir::memfit::grad {

/// alpha op(x) op(y), without C (beta 1 in alpha's semantics).
static Value gemm(GradBuilder &g, Value x, Value y, bool tx, bool ty,
                  const APFloat &alpha = APFloat(1.0f)) {
  return GemmOp::create(g.b, g.loc, x, y, Value(), alpha,
                        APFloat(alpha.getSemantics(), 1), tx, ty);
}

static LogicalResult rule(MatMulOp op, GradBuilder &g) {
  if (op.getTransA() || op.getTransB())
    return op.emitOpError("has transposed operands (memfit-fuse sets them, "
                          "after autodiff): no gradient rule");
  Value a = op.getLhs(), b = op.getRhs();
  ArrayRef<int64_t> as = shapeOf(a), bs = shapeOf(b);
  Type elt = eltOf(a);
  // 1-D operands are promoted to matrices, and the gradient with them.
  bool vecA = as.size() == 1, vecB = bs.size() == 1;
  Shape a2s(as), b2s(bs), gs(shapeOf(g.grad()));
  if (vecA) {
    a2s.insert(a2s.begin(), 1);
    gs.insert(gs.end() - (vecB ? 0 : 1), 1);
  }
  if (vecB) {
    b2s.push_back(1);
    gs.push_back(1);
  }
  Value g2 = g.reshape(g.grad(), gs);
  int64_t k = a2s.back(), n = b2s.back();

  if (b2s.size() == 2) {
    // A matrix B (a weight): one gemm per gradient over the flattened
    // batch, dA = dY B^T and dB = A^T dY, without transpose kernels.
    int64_t rows = getNumElements(gs) / std::max<int64_t>(n, 1);
    Value gFlat = g.reshape(g2, {rows, n});
    if (g.needs(0))
      g.set(0, g.reshape(gemm(g, gFlat, g.reshape(b, b2s), false, true), as));
    if (g.needs(1))
      g.set(1, g.reshape(gemm(g, g.reshape(a, {rows, k}), gFlat, true, false),
                         bs));
    return success();
  }
  // Batched: matmuls with transposed operands, summed over the batch
  // dimensions each operand was broadcast in.
  if (g.needs(0)) {
    Value da =
        MatMulOp::create(g.b, g.loc, g2, g.transposeLast2(g.reshape(b, b2s)));
    da = unbroadcast(g.b, g.loc, da, RankedTensorType::get(a2s, elt));
    g.set(0, g.reshape(da, as));
  }
  if (g.needs(1)) {
    Value db =
        MatMulOp::create(g.b, g.loc, g.transposeLast2(g.reshape(a, a2s)), g2);
    db = unbroadcast(g.b, g.loc, db, RankedTensorType::get(b2s, elt));
    g.set(1, g.reshape(db, bs));
  }
  return success();
}

static LogicalResult rule(GemmOp op, GradBuilder &g) {
  // Y = alpha op(A) op(B) + beta C.
  Value a = op.getA(), b = op.getB(), dy = g.grad();
  bool ta = op.getTransA(), tb = op.getTransB();
  APFloat alpha = op.getAlpha();
  if (g.needs(0))
    // dop(A) = alpha dY op(B)^T; dA is its transpose when trans_a.
    g.set(0, ta ? gemm(g, b, dy, tb, true, alpha)
                : gemm(g, dy, b, false, !tb, alpha));
  if (g.needs(1))
    // dop(B) = alpha op(A)^T dY; dB is its transpose when trans_b.
    g.set(1, tb ? gemm(g, dy, a, true, ta, alpha)
                : gemm(g, a, dy, !ta, false, alpha));
  if (op.getC() && g.needs(2)) {
    Value dc = g.unbroadcastTo(dy, op.getC());
    double beta = op.getBeta().convertToDouble();
    if (beta != 1.0)
      dc = g.mul(dc, g.scalar(beta, eltOf(dc)));
    g.set(2, dc);
  }
  return success();
}

void attachContractionGradients(MLIRContext *context) {
  attachRules<MatMulOp, GemmOp>(context);
}

} // namespace mlir::memfit::grad
