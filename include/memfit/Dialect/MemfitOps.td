//===- MemfitOps.td - memfit op definitions ----------------*- tablegen -*-===//
//
// The file CMake's tablegen reads for the ops (one MemfitOps.h.inc and
// MemfitOps.cpp.inc): the op classes all families use, then one file per
// family of ops under Ops/. A family's C++ is in lib/Dialect/Ops/ and its
// gradient rules in lib/Dialect/Gradients/, in files of the same family
// name, so that adding an op touches one family's files.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_MEMFITOPS_TD
#define MEMFIT_DIALECT_MEMFITOPS_TD

include "memfit/Dialect/MemfitDialect.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Ops whose result types follow from operands and attributes implement
// inferReturnTypes, in their family's lib/Dialect/Ops/*Ops.cpp, with the
// functions of ShapeInference.h.
class Memfit_InferredOp<string mnemonic, string opClass, list<Trait> traits = []>
    : Memfit_Op<mnemonic, opClass, !listconcat([Pure, InferTypeOpAdaptor], traits)>;

//===----------------------------------------------------------------------===//
// Op families
//===----------------------------------------------------------------------===//

include "memfit/Dialect/Ops/StorageOps.td"
include "memfit/Dialect/Ops/ElementwiseOps.td"
include "memfit/Dialect/Ops/ContractionOps.td"
include "memfit/Dialect/Ops/ReductionOps.td"
include "memfit/Dialect/Ops/DataMovementOps.td"
include "memfit/Dialect/Ops/LossOps.td"
include "memfit/Dialect/Ops/QuantizationOps.td"
include "memfit/Dialect/Ops/AttentionOps.td"
include "memfit/Dialect/Ops/CollectiveOps.td"
include "memfit/Dialect/Ops/KernelOps.td"

#endif // MEMFIT_DIALECT_MEMFITOPS_TD
