//===- MemfitOps.h - memfit ops -----------------------------------*- C++
//-*-===//

#ifndef MEMFIT_DIALECT_MEMFITOPS_H
#define MEMFIT_DIALECT_MEMFITOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "memfit/Dialect/MemfitDialect.h"
#include "memfit/Dialect/MemfitEnums.h.inc"
#include "memfit/Dialect/MemfitTraits.h"
#include "memfit/Dialect/OpCost.h"

namespace mlir::memfit {
/// The precision requirement of an op of class `opClass` that does not
/// state its own (OpClassInterface::getPrecision).
Precision defaultPrecision(OpClass opClass);
} // namespace mlir::memfit

#include "memfit/Dialect/MemfitInterfaces.h.inc"

#define GET_OP_CLASSES
#include "memfit/Dialect/MemfitOps.h.inc"

namespace mlir::memfit {
/// Whether the kernel of `op` computes element by element, so that a splat
/// constant operand can be a literal in it: element-wise and data-movement
/// ops but those with KernelReadsBuffers (split). Row, reduction and loss
/// kernels read their operands as buffers.
bool kernelTakesLiterals(Operation *op);

/// Whether `op` computes each result element from its index alone
/// (IndexMapping: transpose, slice, gathers, scatters, concat, expand,
/// range, ...), so that a pointwise kernel composes it at its own index.
bool isIndexMapping(Operation *op);
/// Whether `op` has the ChecksIndices trait: its kernel checks the indices
/// it reads at run time (and the memory plan reserves the index-error
/// word).
bool checksIndices(Operation *op);

/// On a memfit.kernel that runs several independent pointwise kernels as
/// one launch (memfit-fuse's multi-tensor kernels): how many results each
/// segment yields, in order. A segment's results share one shape, its
/// domain; its ops are those its results depend on.
constexpr char kSegmentsAttr[] = "memfit.segments";

/// On a memfit.kernel that only sums the rows of an operand of the
/// memfit.gemm right after it (memfit-fuse: a linear layer's bias
/// gradient): the CUDA emitter runs it as that gemm's epilogue where the
/// library has one, the kernel being the fallback.
constexpr char kEpilogueAttr[] = "memfit.epilogue";

/// Tensors of more elements than this are stored as dense resource blobs,
/// so that the IR never prints weights as literals.
constexpr int64_t kMaxInlineElements = 64;

/// Elements of `type` (any element type but i1) holding `bytes`: an inline
/// dense attribute up to `maxInline` elements, else a dense resource blob
/// named `name`.
ElementsAttr elementsFromBytes(RankedTensorType type, ArrayRef<char> bytes,
                               StringRef name,
                               int64_t maxInline = kMaxInlineElements);

/// The bytes of `elements` as stored: a resource's blob or a dense
/// attribute's raw data; empty for splats and for a resource without its
/// blob.
ArrayRef<char> storedBytes(ElementsAttr elements);

/// The value of every element of `value` when it is a splat constant (an
/// integer as a double), else nothing.
std::optional<double> splatValue(Value value);
} // namespace mlir::memfit

#endif // MEMFIT_DIALECT_MEMFITOPS_H
