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

/// A value that a verifier checks, with the name its messages give it.
using NamedValue = std::pair<StringRef, Value>;

/// The element-type rule that ODS cannot state for optional and variadic
/// operands (or for operands that must agree with one another as well as
/// satisfy their constraint): each present value of `values` (an absent
/// optional operand is null) has element type `elt`; otherwise an error on
/// `op`, "<name> element type X differs from <reference> Y", where
/// `reference` says whose `elt` is ("the input's").
inline LogicalResult verifyElementTypes(Operation *op, Type elt,
                                        StringRef reference,
                                        ArrayRef<NamedValue> values) {
  for (auto [name, value] : values)
    if (value && eltOf(value) != elt)
      return op->emitOpError()
             << name << " element type " << eltOf(value) << " differs from "
             << reference << " " << elt;
  return success();
}

} // namespace mlir::memfit

#endif // MEMFIT_LIB_DIALECT_OPS_OPHELPERS_H
