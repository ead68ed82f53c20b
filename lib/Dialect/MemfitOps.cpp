//===- MemfitOps.cpp - the memfit op classes ------------------------------===//
//
// Instantiates the op classes, enums and interfaces that tablegen generates
// from MemfitOps.td, and defines what every family of ops shares: the
// precision of an op class, the queries of the dialect's traits, and the
// bytes of constants. Each family's inference, verifiers and folders are in
// lib/Dialect/Ops/<Family>Ops.cpp, beside include/memfit/Dialect/Ops/.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/MemfitOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::memfit;

#include "memfit/Dialect/MemfitEnums.cpp.inc"
#include "memfit/Dialect/MemfitInterfaces.cpp.inc"

namespace mlir::memfit {
// The attention ops' optional operands, `mask %m` and `dropout_step %s`
// (custom<AttentionExtras>; lib/Dialect/Ops/AttentionOps.cpp).
ParseResult
parseAttentionExtras(OpAsmParser &parser,
                     SmallVectorImpl<OpAsmParser::UnresolvedOperand> &extras);
void printAttentionExtras(OpAsmPrinter &printer, Operation *op,
                          OperandRange extras);
} // namespace mlir::memfit

#define GET_OP_CLASSES
#include "memfit/Dialect/MemfitOps.cpp.inc"

bool mlir::memfit::kernelTakesLiterals(Operation *op) {
  auto opClass = cast<OpClassInterface>(op).getOpClass();
  return !op->hasTrait<OpTrait::memfit::KernelReadsBuffers>() &&
         (opClass == OpClass::ElementWise || opClass == OpClass::DataMovement);
}

bool mlir::memfit::isIndexMapping(Operation *op) {
  return op->hasTrait<OpTrait::memfit::IndexMapping>();
}

bool mlir::memfit::checksIndices(Operation *op) {
  return op->hasTrait<OpTrait::memfit::ChecksIndices>();
}

Precision mlir::memfit::defaultPrecision(OpClass opClass) {
  switch (opClass) {
  case OpClass::Contraction:
  case OpClass::ElementWise:
  case OpClass::Normalization:
  case OpClass::Attention:
    return Precision::Low;
  case OpClass::Reduction:
  case OpClass::Loss:
  case OpClass::Quantization:
    return Precision::Fp32;
  case OpClass::DataMovement:
  case OpClass::Constant:
  case OpClass::Collective:
    return Precision::Follow;
  }
  llvm_unreachable("unknown op class");
}

ElementsAttr mlir::memfit::elementsFromBytes(RankedTensorType type,
                                             ArrayRef<char> bytes,
                                             StringRef name,
                                             int64_t maxInline) {
  if (type.getNumElements() <= maxInline)
    return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, bytes));
  AsmResourceBlob blob =
      HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(uint64_t));
  return DenseResourceElementsAttr::get(type, name, std::move(blob));
}

ArrayRef<char> mlir::memfit::storedBytes(ElementsAttr elements) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(elements)) {
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
    return {};
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(elements))
    if (!dense.isSplat())
      return dense.getRawData();
  return {};
}

std::optional<double> mlir::memfit::splatValue(Value value) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  Attribute element = attr.getSplatValue<Attribute>();
  if (auto f = dyn_cast<FloatAttr>(element))
    return f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(element))
    return static_cast<double>(i.getValue().getSExtValue());
  return std::nullopt;
}
