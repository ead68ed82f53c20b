//===- ContractionOps.cpp - matmul and gemm -------------------------------===//
//
// The type inference of matmul (numpy's matmul, transposed operands,
// a permuted result) and gemm.
//
// The ops are defined in include/memfit/Dialect/Ops/ContractionOps.td.
//
//===----------------------------------------------------------------------===//

#include "OpHelpers.h"

using namespace mlir;
using namespace mlir::memfit;

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
  if (eltOf(lhs) != eltOf(rhs))
    return emitOptionalError(loc, "matmul operands have different element "
                             "types ", eltOf(lhs), " and ", eltOf(rhs));
  // A transposed operand is read with its last two dimensions swapped.
  auto operand = [&](Value v, bool transposed) -> FailureOr<Shape> {
    Shape s(shapeOf(v));
    if (!transposed)
      return s;
    if (s.size() < 2)
      return emitOptionalError(loc,
                               "a transposed matmul operand needs rank "
                               ">= 2, got ",
                               shapeToString(s));
    std::swap(s[s.size() - 2], s[s.size() - 1]);
    return s;
  };
  // (The flags are absent, not false, while an op is being built.)
  auto flag = [](BoolAttr attr) { return attr && attr.getValue(); };
  FailureOr<Shape> a = operand(lhs, flag(adaptor.getTransAAttr()));
  FailureOr<Shape> b = operand(rhs, flag(adaptor.getTransBAttr()));
  if (failed(a) || failed(b))
    return failure();
  Shape shape;
  if (failed(inferMatMulShape(*a, *b, shape, loc)))
    return failure();
  if (DenseI64ArrayAttr permAttr = adaptor.getResultPermAttr()) {
    ArrayRef<int64_t> perm = permAttr.asArrayRef();
    int64_t rank = shape.size();
    SmallVector<bool> seen(rank, false);
    bool valid = static_cast<int64_t>(perm.size()) == rank;
    for (int64_t d : perm) {
      valid = valid && d >= 0 && d < rank && !seen[d];
      if (valid)
        seen[d] = true;
    }
    if (!valid || a->size() < 2 || b->size() < 2 || perm.back() != rank - 1)
      return emitOptionalError(
          loc, "result_perm must permute the ", rank,
          " dimensions of a product of operands of rank 2 or more and keep "
          "the last one last, got [",
          perm, "]");
    Shape permuted;
    for (int64_t d : perm)
      permuted.push_back(shape[d]);
    shape = std::move(permuted);
  }
  return pushTensor(types, shape, eltOf(lhs));
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  Type elt = eltOf(adaptor.getA());
  std::optional<ArrayRef<int64_t>> c;
  if (Value bias = adaptor.getC())
    c = shapeOf(bias);
  for (Value v : adaptor.getOperands())
    if (eltOf(v) != elt)
      return emitOptionalError(loc, "gemm operands have different element "
                               "types ", elt, " and ", eltOf(v));
  Shape shape;
  if (failed(inferGemmShape(shapeOf(adaptor.getA()), shapeOf(adaptor.getB()),
                            c, adaptor.getTransA(), adaptor.getTransB(), shape,
                            loc)))
    return failure();
  return pushTensor(types, shape, eltOf(adaptor.getA()));
}
