//===- ManifestValues.cpp - what the manifest records of values -----------===//
//
// See ManifestValues.h.
//
//===----------------------------------------------------------------------===//

#include "ManifestValues.h"

#include "KernelEmitter.h"
#include "memfit/Dialect/MemfitOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>
#include <vector>

using namespace mlir;
using namespace mlir::memfit;

FailureOr<::memfit::rt::DType> cuda::toDType(Type type) {
  if (type.isF32())
    return rt::DType::f32;
  if (type.isF64())
    return rt::DType::f64;
  if (type.isF16())
    return rt::DType::f16;
  if (type.isBF16())
    return rt::DType::bf16;
  if (isa<Float8E4M3FNType>(type))
    return rt::DType::f8e4m3fn;
  if (isa<Float8E4M3FNUZType>(type))
    return rt::DType::f8e4m3fnuz;
  if (isa<Float8E5M2Type>(type))
    return rt::DType::f8e5m2;
  if (isa<Float8E5M2FNUZType>(type))
    return rt::DType::f8e5m2fnuz;
  if (isa<Float4E2M1FNType>(type))
    return rt::DType::f4e2m1;
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer)
    return failure();
  if (integer.getWidth() == 1)
    return rt::DType::i1;
  bool isUnsigned = integer.isUnsigned();
  switch (integer.getWidth()) {
  case 64:
    return isUnsigned ? rt::DType::u64 : rt::DType::i64;
  case 32:
    return isUnsigned ? rt::DType::u32 : rt::DType::i32;
  case 16:
    return isUnsigned ? rt::DType::u16 : rt::DType::i16;
  case 8:
    return isUnsigned ? rt::DType::u8 : rt::DType::i8;
  case 4:
    return isUnsigned ? rt::DType::u4 : rt::DType::i4;
  case 2:
    return isUnsigned ? rt::DType::u2 : rt::DType::i2;
  default:
    return failure();
  }
}

LogicalResult cuda::writeElements(ElementsAttr attr, Operation *op,
                                  uint8_t *dst, int64_t bytes) {
  auto type = cast<ShapedType>(attr.getType());
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return op->emitError() << "the data of this tensor is not available "
                                "(a resource without a blob)";
    ArrayRef<char> data = blob->getData();
    if (static_cast<int64_t>(data.size()) != bytes)
      return op->emitError() << "resource holds " << data.size()
                             << " bytes, expected " << bytes << " for " << type;
    std::memcpy(dst, data.data(), bytes);
    return success();
  }
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return op->emitError() << "unsupported elements attribute for weights";
  if (type.getElementType().isInteger(1)) {
    int64_t i = 0;
    for (bool b : dense.getValues<bool>())
      dst[i++] = b ? 1 : 0;
    return success();
  }
  ArrayRef<char> raw = dense.getRawData();
  int64_t count = type.getNumElements();
  if (count == 0)
    return success();
  int64_t eltBytes = bytes / count;
  if (dense.isSplat()) {
    if (static_cast<int64_t>(raw.size()) < eltBytes)
      return op->emitError() << "malformed splat constant";
    for (int64_t i = 0; i < count; ++i)
      std::memcpy(dst + i * eltBytes, raw.data(), eltBytes);
    return success();
  }
  if (static_cast<int64_t>(raw.size()) != bytes)
    return op->emitError() << "constant holds " << raw.size()
                           << " bytes, expected " << bytes;
  std::memcpy(dst, raw.data(), bytes);
  return success();
}

std::string cuda::describeValue(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "onnx.name"))
        return name.str();
    return llvm::formatv("arg{0}", arg.getArgNumber()).str();
  }
  Operation *op = value.getDefiningOp();
  if (auto load = dyn_cast<LoadParameterOp>(op))
    return load.getName().str();
  std::vector<std::string> nodes;
  cuda::collectNodeNames(op->getLoc(), nodes);
  std::string name =
      nodes.empty() ? op->getName().getStringRef().str() : nodes.front();
  if (op->getNumResults() > 1)
    name += "#" + std::to_string(cast<OpResult>(value).getResultNumber());
  return name;
}
