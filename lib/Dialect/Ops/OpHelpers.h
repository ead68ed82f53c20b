//===- OpHelpers.h - what the op families' C++ shares -----------*- C++ -*-===//
//
// Private to lib/Dialect/Ops: the includes and helpers that the inference,
// verifiers and folders of more than one family of ops use. A helper that
// one family needs stays in that family's file.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_DIALECT_OPS_OPHELPERS_H
#define MEMFIT_LIB_DIALECT_OPS_OPHELPERS_H

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"

namespace mlir::memfit {

/// Appends the tensor type of `shape` and `elt` to an op's inferred result
/// `types`; returns success, for inferReturnTypes to return.
inline LogicalResult pushTensor(SmallVectorImpl<Type> &types,
                                ArrayRef<int64_t> shape, Type elt) {
  types.push_back(RankedTensorType::get(shape, elt));
  return success();
}

} // namespace mlir::memfit

#endif // MEMFIT_LIB_DIALECT_OPS_OPHELPERS_H
