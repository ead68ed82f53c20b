//===- MemfitTraits.h - memfit op traits --------------------------*- C++ -*-===//
//
// The native traits of MemfitDialect.td: properties that analyses query
// with Operation::hasTrait instead of lists of op names.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_MEMFITTRAITS_H
#define MEMFIT_DIALECT_MEMFITTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace mlir::OpTrait::memfit {

/// The op runs no code and moves no bytes (parameters, constants, assign,
/// views).
template <typename ConcreteType>
class RunsNothing : public TraitBase<ConcreteType, RunsNothing> {};

/// The op only reinterprets the shape of a contiguous buffer; ODS gives
/// every view RunsNothing too.
template <typename ConcreteType>
class BufferView : public TraitBase<ConcreteType, BufferView> {};

/// The op's kernel reads every operand from a buffer: no splat constant
/// operand becomes a literal in it.
template <typename ConcreteType>
class KernelReadsBuffers : public TraitBase<ConcreteType, KernelReadsBuffers> {
};

/// The op computes each result element from its index alone, reading its
/// operands at mapped indices (or none: range); see MemfitDialect.td.
template <typename ConcreteType>
class IndexMapping : public TraitBase<ConcreteType, IndexMapping> {};

/// The op's kernel checks the indices it reads at run time against their
/// axes; see MemfitDialect.td.
template <typename ConcreteType>
class ChecksIndices : public TraitBase<ConcreteType, ChecksIndices> {};

} // namespace mlir::OpTrait::memfit

#endif // MEMFIT_DIALECT_MEMFITTRAITS_H
