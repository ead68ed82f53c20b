//===- TensorLoader.cpp - ONNX tensors and initializers -------------------===//
//
// ONNX element types (those newer than Debian's onnx.proto by number),
// tensor sizes checked against 64 bits, and TensorLoader: an initializer's
// or a Constant's TensorProto (raw, typed fields, or external data; sub-byte
// types unpacked) as an attribute, inline when small and a dense resource
// otherwise. The graph's initializers become `memfit.parameter`s (float
// weights) or constants here.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

//===----------------------------------------------------------------------===//
// Element types and sizes
//===----------------------------------------------------------------------===//

namespace {
/// The element types that onnx.proto gained after the version that Debian's
/// libonnx ships (1.13): their numbers in TensorProto.DataType.
enum NewerDataType : int32_t {
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUint2 = 25,
  kInt2 = 26,
};
} // namespace

Type onnx_import::convertElementType(int32_t t, MLIRContext *ctx) {
  Builder b(ctx);
  switch (t) {
  case onnx::TensorProto::FLOAT: return b.getF32Type();
  case onnx::TensorProto::DOUBLE: return b.getF64Type();
  case onnx::TensorProto::FLOAT16: return b.getF16Type();
  case onnx::TensorProto::BFLOAT16: return b.getBF16Type();
  case onnx::TensorProto::BOOL: return b.getI1Type();
  case onnx::TensorProto::INT8: return b.getIntegerType(8);
  case onnx::TensorProto::INT16: return b.getIntegerType(16);
  case onnx::TensorProto::INT32: return b.getI32Type();
  case onnx::TensorProto::INT64: return b.getI64Type();
  case onnx::TensorProto::UINT8: return b.getIntegerType(8, false);
  case onnx::TensorProto::UINT16: return b.getIntegerType(16, false);
  case onnx::TensorProto::UINT32: return b.getIntegerType(32, false);
  case onnx::TensorProto::UINT64: return b.getIntegerType(64, false);
  // Stored one element per byte (sub-byte types unpacked): see
  // memfit::rt::DType.
  case kFloat8E4M3FN:
    return b.getType<Float8E4M3FNType>();
  case kFloat8E4M3FNUZ:
    return b.getType<Float8E4M3FNUZType>();
  case kFloat8E5M2:
    return b.getType<Float8E5M2Type>();
  case kFloat8E5M2FNUZ:
    return b.getType<Float8E5M2FNUZType>();
  case kFloat4E2M1:
    return b.getType<Float4E2M1FNType>();
  case kInt4:
    return b.getIntegerType(4);
  case kUint4:
    return b.getIntegerType(4, false);
  case kInt2:
    return b.getIntegerType(2);
  case kUint2:
    return b.getIntegerType(2, false);
  default: return {};
  }
}

std::string onnx_import::onnxTypeName(int32_t t) {
  static const std::pair<int32_t, const char *> kNewer[] = {
      {kFloat8E4M3FN, "FLOAT8E4M3FN"},
      {kFloat8E4M3FNUZ, "FLOAT8E4M3FNUZ"},
      {kFloat8E5M2, "FLOAT8E5M2"},
      {kFloat8E5M2FNUZ, "FLOAT8E5M2FNUZ"},
      {kUint4, "UINT4"},
      {kInt4, "INT4"},
      {kFloat4E2M1, "FLOAT4E2M1"},
      {kFloat8E8M0, "FLOAT8E8M0"},
      {kUint2, "UINT2"},
      {kInt2, "INT2"}};
  for (auto [code, name] : kNewer)
    if (t == code)
      return name;
  if (onnx::TensorProto_DataType_IsValid(t))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(t));
  return "data type " + std::to_string(t);
}

std::optional<int64_t> onnx_import::checkedNumElements(ArrayRef<int64_t> shape,
                                                       int64_t eltSize) {
  // The product of the non-zero dimensions must fit too: with a zero
  // dimension there are no elements, but strides still multiply the rest.
  int64_t n = 1, bytes;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    empty |= d == 0;
    if (d != 0 && llvm::MulOverflow(n, d, n))
      return std::nullopt;
  }
  if (llvm::MulOverflow(n, std::max<int64_t>(eltSize, 1), bytes))
    return std::nullopt;
  return empty ? 0 : n;
}

size_t onnx_import::byteWidth(Type elt) {
  if (elt.isInteger(1))
    return 1;
  return (elt.getIntOrFloatBitWidth() + 7) / 8;
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

/// The bits of a sub-byte element type (ONNX packs INT4, UINT4 and
/// FLOAT4E2M1 two to a byte, INT2 and UINT2 four, the first in the low
/// bits); 0 for other types.
static unsigned packedBits(Type elt) {
  if (isa<Float4E2M1FNType>(elt))
    return 4;
  if (auto integer = dyn_cast<IntegerType>(elt))
    if (integer.getWidth() == 4 || integer.getWidth() == 2)
      return integer.getWidth();
  return 0;
}

FailureOr<std::vector<char>> TensorLoader::readBytes(const onnx::TensorProto &t,
                                                     RankedTensorType type,
                                                     size_t eltSize) {
  unsigned bits = packedBits(type.getElementType());
  if (bits) {
    FailureOr<std::vector<char>> packed = readPackedBytes(t, type, bits);
    if (failed(packed))
      return failure();
    // One element per byte, in its low bits.
    int64_t n = type.getNumElements();
    unsigned perByte = 8 / bits, mask = (1u << bits) - 1;
    std::vector<char> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<char>(
          (static_cast<unsigned char>((*packed)[i / perByte]) >>
           (bits * (i % perByte))) &
          mask);
    return out;
  }
  return readPackedBytes(t, type, 0, eltSize);
}

FailureOr<std::vector<char>>
TensorLoader::readPackedBytes(const onnx::TensorProto &t, RankedTensorType type,
                              unsigned bits, size_t eltSize) {
  // load() checked that n * eltSize does not overflow; nothing is allocated
  // before the data is known to hold that many bytes. Sub-byte elements
  // (`bits` 4 or 2) come packed: their bytes are read as uint8 elements.
  int64_t n = type.getNumElements();
  if (bits) {
    int64_t perByte = 8 / bits;
    n = n / perByte + (n % perByte != 0);
    eltSize = 1;
  }
  size_t want = static_cast<size_t>(n) * eltSize;
  std::vector<char> out;
  auto sizeError = [&](size_t got) {
    return error(t) << "of shape " << shapeToString(type.getShape())
                    << " needs " << want << " bytes of data but has " << got;
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string readPath;
    llvm::Expected<std::string> bytes = onnx_import::readExternalData(
        t, llvm::sys::path::parent_path(fileName), want, &readPath);
    if (bytes && externalFiles && !llvm::is_contained(*externalFiles, readPath))
      externalFiles->push_back(readPath);
    if (!bytes) {
      std::string why;
      std::error_code code;
      llvm::handleAllErrors(bytes.takeError(),
                            [&](const llvm::ErrorInfoBase &e) {
                              why = e.message();
                              code = e.convertToErrorCode();
                            });
      InFlightDiagnostic diag =
          emitError(loc) << context << "cannot read external data of tensor '"
                         << t.name() << "': " << why;
      // A missing weight file is what --plan-only is for.
      if (isa<FloatType>(type.getElementType()) &&
          code == std::errc::no_such_file_or_directory)
        diag << " (to plan from shapes without the weight files: "
                "memfit-run --plan-only, memfit-opt --without-weights)";
      return diag;
    }
    if (bytes->size() != want)
      return sizeError(bytes->size()), failure();
    out.assign(bytes->begin(), bytes->end());
    return out;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != want)
      return sizeError(t.raw_data().size()), failure();
    out.assign(t.raw_data().begin(), t.raw_data().end());
    return out;
  }
  auto fill = [&](const auto &field, auto convert) -> LogicalResult {
    if (static_cast<size_t>(field.size()) != static_cast<size_t>(n))
      return sizeError(field.size() * eltSize), failure();
    out.resize(want);
    for (int64_t i = 0; i < n; ++i)
      convert(field.Get(i), out.data() + i * eltSize);
    return success();
  };
  auto store = [eltSize](auto v, char *dst) {
    std::memcpy(dst, &v, eltSize); // little-endian low bytes
  };
  LogicalResult ok = success();
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    ok = fill(t.float_data(), [&](float v, char *d) { std::memcpy(d, &v, 4); });
    break;
  case onnx::TensorProto::DOUBLE:
    ok = fill(t.double_data(),
              [&](double v, char *d) { std::memcpy(d, &v, 8); });
    break;
  case onnx::TensorProto::INT64:
    ok = fill(t.int64_data(), [&](int64_t v, char *d) { store(v, d); });
    break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    ok = fill(t.uint64_data(), [&](uint64_t v, char *d) { store(v, d); });
    break;
  default: // int32_data carries every narrower type, f16 and bf16 as bits
    ok = fill(t.int32_data(), [&](int32_t v, char *d) { store(v, d); });
    break;
  }
  if (failed(ok))
    return failure();
  return out;
}

FailureOr<ElementsAttr> TensorLoader::load(const onnx::TensorProto &t,
                                           Location where,
                                           StringRef resourceName,
                                           StringRef holder) {
  loc = where;
  context = holder.str();
  Type elt = convertElementType(t.data_type(), ctx);
  if (!elt)
    return error(t) << "has unsupported " << onnxTypeName(t.data_type());
  SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return error(t) << "has a negative dimension";
  size_t eltSize = byteWidth(elt);
  if (!checkedNumElements(shape, eltSize))
    return error(t) << "of shape " << shapeToString(shape)
                    << " has more elements than 64-bit sizes can count";
  auto type = RankedTensorType::get(shape, elt);
  // Planning without the weights: float data in external files is not read
  // (the files may be absent); the tensor is zeros of its shape, one splat
  // value in memory however large it is.
  if (withoutWeights && isa<FloatType>(elt) &&
      t.data_location() == onnx::TensorProto::EXTERNAL)
    return cast<ElementsAttr>(
        DenseElementsAttr::get(type, FloatAttr::get(elt, 0.0)));
  FailureOr<std::vector<char>> bytes = readBytes(t, type, eltSize);
  if (failed(bytes))
    return failure();
  if (elt.isInteger(1) && type.getNumElements() <= maxInline) {
    SmallVector<bool> bits;
    for (char c : *bytes)
      bits.push_back(c != 0);
    return cast<ElementsAttr>(DenseElementsAttr::get(type, bits));
  }
  // A dense attribute reads i1 raw data as packed bits: larger i1 tensors
  // keep their bytes in a blob.
  return elementsFromBytes(type, ArrayRef<char>(bytes->data(), bytes->size()),
                           resourceName, elt.isInteger(1) ? 0 : maxInline);
}

//===----------------------------------------------------------------------===//
// Initializers
//===----------------------------------------------------------------------===//

LogicalResult GraphImporter::importInitializers(const onnx::GraphProto &graph,
                                                ModuleOp module) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  for (const auto &t : graph.initializer()) {
    Location loc = NameLoc::get(StringAttr::get(ctx, t.name()), fileLoc());
    FailureOr<ElementsAttr> value = tensors.load(t, loc, t.name());
    if (failed(value))
      return failure();
    auto type = cast<RankedTensorType>(value->getType());
    // Float tensors of rank >= 1 are model weights; scalars and integer or
    // boolean tensors are constants (exporters lift those out of the graph
    // as initializers too), and so are 8- and 4-bit floats: data that a
    // model converts, not weights that memfit can train.
    auto floatType = dyn_cast<FloatType>(type.getElementType());
    bool isParameter =
        floatType && floatType.getWidth() >= 16 && type.getRank() >= 1;
    if (isParameter)
      ParameterOp::create(builder, loc, t.name(), *value);
    initializers[t.name()] = {*value, isParameter};
  }
  return success();
}
