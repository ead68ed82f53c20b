//===- RaiseMatch.h - what the raising passes match with ----------*- C++ -*-===//
//
// Private to passes/Kernels: the matchers that memfit-raise and
// memfit-raise-attention share: constants compared with a tolerance,
// products flattened through their single-use intermediates, and the
// location of a raised op.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_PASSES_KERNELS_RAISEMATCH_H
#define MEMFIT_PASSES_KERNELS_RAISEMATCH_H

#include "memfit/Dialect/MemfitOps.h"

#include <cmath>

namespace mlir::memfit::raise {

/// Constants of the patterns, as exporters write them in f32: a relative
/// tolerance well above f32 rounding, well below any other constant.
inline bool near(double value, double expected) {
  return std::abs(value - expected) <= 1e-4 * std::abs(expected);
}

/// `value` as a product: its non-constant factors (through mul, and div by
/// a constant) and the product of its constant factors.
struct Product {
  SmallVector<Value, 4> factors;
  double coefficient = 1;
};

inline void flattenProduct(Value value, Product &product, bool root) {
  if (std::optional<double> c = splatValue(value)) {
    product.coefficient *= *c;
    return;
  }
  if (root || value.hasOneUse()) {
    if (auto mul = value.getDefiningOp<MulOp>()) {
      flattenProduct(mul.getLhs(), product, false);
      flattenProduct(mul.getRhs(), product, false);
      return;
    }
    if (auto div = value.getDefiningOp<DivOp>())
      if (std::optional<double> c = splatValue(div.getRhs()); c && *c != 0) {
        flattenProduct(div.getLhs(), product, false);
        product.coefficient /= *c;
        return;
      }
  }
  product.factors.push_back(value);
}

/// The product `value` is, flattened through the intermediates that only
/// it reads (a value read elsewhere, such as the input of a GELU, is a
/// factor).
inline Product productOf(Value value) {
  Product product;
  flattenProduct(value, product, /*root=*/true);
  return product;
}

/// The location of an op raised from `ops`: all of theirs.
inline Location fusedLoc(ArrayRef<Operation *> ops) {
  SmallVector<Location> locs;
  for (Operation *op : ops)
    locs.push_back(op->getLoc());
  return FusedLoc::get(ops.front()->getContext(), locs);
}

} // namespace mlir::memfit::raise

#endif // MEMFIT_PASSES_KERNELS_RAISEMATCH_H
