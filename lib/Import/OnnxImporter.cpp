//===- OnnxImporter.cpp - ONNX model to memfit IR ----------------------------===//
//
// Reads the protobuf, checks the model's opsets and ops up front (so that an
// unsupported graph gets one diagnostic listing what is missing), creates
// parameters and constants for initializers, specializes the graph inputs'
// dynamic dimensions, and converts the nodes in order through the op table.
//
//===----------------------------------------------------------------------===//

#include "memfit/Import/OnnxImporter.h"
#include "ImporterImpl.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/unknown_field_set.h>
#include <map>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

//===----------------------------------------------------------------------===//
// Element types and tensors
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

namespace {

/// Loads initializer and Constant tensors into attributes.
class TensorLoader {
public:
  TensorLoader(MLIRContext *ctx, StringRef fileName, int64_t maxInline,
               bool withoutWeights)
      : ctx(ctx), fileName(fileName), maxInline(maxInline),
        withoutWeights(withoutWeights) {}

  /// Converts `t`; `loc` is where errors go, after `context` (the node that
  /// holds the tensor, if any). Large tensors become dense resources named
  /// `resourceName`.
  FailureOr<ElementsAttr> load(const onnx::TensorProto &t, Location loc,
                               StringRef resourceName, StringRef context = "");

private:
  InFlightDiagnostic error(const onnx::TensorProto &t) {
    return emitError(loc) << context << "tensor '" << t.name() << "' ";
  }
  /// The data of `t` as `eltSize` bytes per element (sub-byte types
  /// unpacked to one element per byte).
  FailureOr<std::vector<char>> readBytes(const onnx::TensorProto &t,
                                         RankedTensorType type, size_t eltSize);
  FailureOr<std::vector<char>> readPackedBytes(const onnx::TensorProto &t,
                                               RankedTensorType type,
                                               unsigned bits,
                                               size_t eltSize = 1);
  MLIRContext *ctx;
  std::string fileName;
  int64_t maxInline;
  bool withoutWeights;
  // Where the tensor being loaded reports errors.
  Location loc = UnknownLoc::get(ctx);
  std::string context;
};

} // namespace

/// Whether `path` names `dir` or something inside it.
static bool isWithin(StringRef path, StringRef dir) {
  if (!path.starts_with(dir))
    return false;
  StringRef rest = path.drop_front(dir.size());
  return rest.empty() || llvm::sys::path::is_separator(rest.front()) ||
         llvm::sys::path::is_separator(dir.back());
}

llvm::Expected<std::string> mlir::memfit::onnx_import::readExternalData(
    const onnx::TensorProto &t, StringRef modelDir,
    std::optional<uint64_t> expectedBytes) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &kv : t.external_data()) {
    uint64_t *field = kv.key() == "offset"   ? &offset
                      : kv.key() == "length" ? &length.emplace()
                                             : nullptr;
    if (kv.key() == "location")
      location = kv.value();
    else if (field && StringRef(kv.value()).getAsInteger(10, *field))
      return llvm::createStringError("its " + kv.key() + " '" + kv.value() +
                                     "' is not a byte count");
  }
  if (location.empty())
    return llvm::createStringError("it has no location");
  // The data must stay inside the model's folder: a relative path without
  // '..' whose real path (symbolic links followed) is still inside it.
  if (llvm::sys::path::is_absolute(location) ||
      llvm::sys::path::has_root_name(location) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                          llvm::sys::path::end(location)),
                         ".."))
    return llvm::createStringError("location '" + location +
                                   "' is outside the model's folder (it must "
                                   "be a relative path without '..')");
  SmallString<256> dir(modelDir.empty() ? StringRef(".") : modelDir);
  SmallString<256> path(dir);
  llvm::sys::path::append(path, location);
  SmallString<256> realDir, realPath;
  if (std::error_code ec = llvm::sys::fs::real_path(dir, realDir))
    return llvm::createStringError("'" + dir.str().str() +
                                   "': " + ec.message());
  if (std::error_code ec = llvm::sys::fs::real_path(path, realPath))
    return llvm::createStringError(ec, "'" + path.str().str() +
                                           "': " + ec.message());
  if (!isWithin(realPath, realDir))
    return llvm::createStringError("location '" + location +
                                   "' leads outside the model's folder (to '" +
                                   realPath.str().str() + "')");
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(realPath, status))
    return llvm::createStringError("'" + path.str().str() +
                                   "': " + ec.message());
  if (!llvm::sys::fs::is_regular_file(status))
    return llvm::createStringError("'" + path.str().str() +
                                   "' is not a regular file");
  uint64_t size = status.getSize();
  // Overflow-safe: offset + length <= size, written without the sum.
  if (offset > size || (length && *length > size - offset))
    return llvm::createStringError(
        "'" + path.str().str() + "' has " + std::to_string(size) +
        " bytes, the tensor's data is at offset " + std::to_string(offset) +
        (length ? ", length " + std::to_string(*length) : std::string()));
  uint64_t bytes = length.value_or(size - offset);
  if (expectedBytes && bytes != *expectedBytes)
    return llvm::createStringError(
        "'" + path.str().str() + "' holds " + std::to_string(bytes) +
        " bytes for it" +
        (offset ? " from offset " + std::to_string(offset) : std::string()) +
        " but its shape needs " + std::to_string(*expectedBytes));
  auto buffer = llvm::MemoryBuffer::getFileSlice(realPath, bytes, offset,
                                                 /*IsVolatile=*/false);
  if (!buffer)
    return llvm::createStringError("'" + path.str().str() +
                                   "': " + buffer.getError().message());
  return (*buffer)->getBuffer().str();
}

static size_t byteWidth(Type elt) {
  if (elt.isInteger(1))
    return 1;
  return (elt.getIntOrFloatBitWidth() + 7) / 8;
}

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
    llvm::Expected<std::string> bytes = onnx_import::readExternalData(
        t, llvm::sys::path::parent_path(fileName), want);
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
    ok = fill(t.double_data(), [&](double v, char *d) { std::memcpy(d, &v, 8); });
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
// NodeContext
//===----------------------------------------------------------------------===//

std::string NodeContext::name() const {
  if (StringRef name = onnxNodeName(loc); !name.empty())
    return name.str();
  return node.name();
}

InFlightDiagnostic NodeContext::error() {
  return emitError(loc) << "ONNX node '" << name() << "' (" << node.op_type()
                        << "): ";
}

LogicalResult onnx_import::captureDiagnostic(MLIRContext *ctx,
                                             std::string &message,
                                             function_ref<LogicalResult()> fn) {
  ScopedDiagnosticHandler capture(ctx, [&](Diagnostic &diag) {
    if (message.empty())
      message = diag.str();
    return success();
  });
  return fn();
}

LogicalResult NodeContext::rule(function_ref<LogicalResult(OptLoc)> fn) {
  std::string why;
  if (succeeded(captureDiagnostic(b.getContext(), why,
                                  [&] { return fn(loc); })))
    return success();
  return error() << why;
}

int64_t NodeContext::numInputs() const {
  int64_t n = node.input_size();
  while (n > 0 && node.input(n - 1).empty())
    --n;
  return n;
}

bool NodeContext::hasInput(int64_t i) const {
  return i < node.input_size() && !node.input(i).empty();
}

Value NodeContext::input(int64_t i) const {
  return hasInput(i) ? values.lookup(node.input(i)) : Value();
}

RankedTensorType NodeContext::inputType(int64_t i) const {
  return cast<RankedTensorType>(input(i).getType());
}

int64_t NodeContext::numOutputs() const { return node.output_size(); }

bool NodeContext::hasOutput(int64_t i) const {
  return i < node.output_size() && !node.output(i).empty();
}

DenseElementsAttr NodeContext::constantInput(int64_t i) const {
  Value v = input(i);
  if (!v)
    return {};
  if (auto c = v.getDefiningOp<ConstantOp>())
    return dyn_cast<DenseElementsAttr>(c.getValue());
  return {};
}

void NodeContext::noteGraphInput(InFlightDiagnostic &diag, int64_t i) const {
  if (isa_and_present<BlockArgument>(input(i)))
    diag << "; it is a graph input: give its value with --input-value="
         << node.input(i) << "=V,V,...";
}

FailureOr<SmallVector<int64_t>> NodeContext::constantInts(int64_t i,
                                                          StringRef what) {
  DenseElementsAttr c = constantInput(i);
  if (!c || !isa<IntegerType>(c.getElementType())) {
    InFlightDiagnostic diag = error();
    diag << what << " (input " << i << ", '" << node.input(i)
         << "') must be an integer tensor known at compile time, but it is "
            "computed at run time";
    noteGraphInput(diag, i);
    return failure();
  }
  SmallVector<int64_t> out;
  for (const APInt &v : c.getValues<APInt>())
    out.push_back(v.getSExtValue());
  return out;
}

FailureOr<Attribute> NodeContext::constantScalar(int64_t i, StringRef what) {
  DenseElementsAttr c = constantInput(i);
  if (!c || c.getNumElements() != 1) {
    InFlightDiagnostic diag = error();
    diag << what << " (input " << i << ", '" << node.input(i)
         << "') must be a single value known at compile time";
    noteGraphInput(diag, i);
    return failure();
  }
  return *c.getValues<Attribute>().begin();
}

const onnx::AttributeProto *NodeContext::attr(StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::intAttr(StringRef name, int64_t dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->i() : dflt;
}

float NodeContext::floatAttr(StringRef name, float dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->f() : dflt;
}

std::string NodeContext::stringAttr(StringRef name, StringRef dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->s() : dflt.str();
}

std::optional<SmallVector<int64_t>>
NodeContext::intsAttr(StringRef name) const {
  const onnx::AttributeProto *a = attr(name);
  if (!a)
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

Value NodeContext::constant(ElementsAttr value) {
  return ConstantOp::create(b, loc, value);
}

SmallVector<Value> NodeContext::foldOp(Operation *op) {
  // Folders size their results from the result types: one whose elements
  // cannot be counted is left unfolded, for importNode to report.
  if (llvm::any_of(op->getResultTypes(), [](Type t) {
        auto type = dyn_cast<RankedTensorType>(t);
        return type && !checkedNumElements(type.getShape());
      }))
    return SmallVector<Value>(op->getResults());
  SmallVector<Value> results;
  if (succeeded(b.tryFold(op, results)) && !results.empty()) {
    op->erase();
    return results;
  }
  return SmallVector<Value>(op->getResults());
}

std::string NodeContext::describeInputs() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  for (int64_t i = 0; i < node.input_size(); ++i) {
    if (i)
      os << ", ";
    if (node.input(i).empty()) {
      os << "<omitted>";
      continue;
    }
    os << "'" << node.input(i) << "' ";
    if (Value v = input(i))
      os << v.getType();
  }
  return s;
}

LogicalResult NodeContext::setResults(ValueRange results) {
  if (static_cast<int64_t>(results.size()) < numOutputs()) {
    for (int64_t i = results.size(); i < numOutputs(); ++i)
      if (hasOutput(i))
        return error() << "output " << i << " ('" << node.output(i)
                       << "') is not supported by memfit";
  }
  for (int64_t i = 0; i < numOutputs(); ++i)
    if (hasOutput(i))
      values[node.output(i)] = results[i];
  return success();
}

//===----------------------------------------------------------------------===//
// Graph import
//===----------------------------------------------------------------------===//

namespace {

class GraphImporter {
public:
  GraphImporter(MLIRContext *ctx, StringRef fileName,
                const OnnxImportOptions &options)
      : ctx(ctx), fileName(fileName), options(options), builder(ctx),
        tensors(ctx, fileName, options.maxInlineElements,
                options.withoutWeights) {}

  OwningOpRef<ModuleOp> run(const onnx::ModelProto &model);

private:
  Location fileLoc() { return FileLineColLoc::get(ctx, fileName, 0, 0); }
  Location nodeLoc(const onnx::NodeProto &node, int64_t index);
  LogicalResult checkOpsets(const onnx::ModelProto &model);
  LogicalResult checkOps(const onnx::GraphProto &graph);
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &info);
  /// The constant --input-value gives graph input `info`, of its declared
  /// type.
  FailureOr<DenseElementsAttr> givenValue(const onnx::ValueInfoProto &info);
  LogicalResult importInitializers(const onnx::GraphProto &graph,
                                   ModuleOp module);
  LogicalResult importNode(const onnx::NodeProto &node, int64_t index);
  LogicalResult checkOutput(const onnx::ValueInfoProto &info, Value v);
  LogicalResult checkAttributes(NodeContext &nc);

  MLIRContext *ctx;
  std::string fileName;
  const OnnxImportOptions &options;
  OpBuilder builder;
  TensorLoader tensors;
  int64_t opset = 0;
  std::vector<std::pair<std::string, int64_t>> opsetImports;
  /// The opset the model imports of `domain` (0 if none); the default
  /// domain's is `opset`.
  int64_t opsetOf(StringRef domain) const {
    if (domain.empty() || domain == "ai.onnx")
      return opset;
    for (const auto &o : opsetImports)
      if (o.first == domain)
        return o.second;
    return 0;
  }
  llvm::StringMap<Value> values;
  /// Initializers, created lazily at first use in the function.
  llvm::StringMap<std::pair<ElementsAttr, bool>> initializers;
  llvm::StringMap<int64_t> dimBindings;
};

} // namespace

/// NodeProto.metadata_props in onnx.proto (IR version 10).
constexpr int kNodeMetadataPropsField = 9;

Location GraphImporter::nodeLoc(const onnx::NodeProto &node, int64_t index) {
  std::string name = node.name().empty()
                         ? node.op_type() + "_" + std::to_string(index)
                         : node.name();
  Location loc = NameLoc::get(StringAttr::get(ctx, name), fileLoc());
  // The dynamo exporter records the module path of every node as
  // "namespace": ": Model/layers.0: Block/layers.0.mlp: MLP/linear_4: op".
  // Keep the names before each ": " as the node's scope.
  // NodeProto.metadata_props (field 9, IR version 10) is newer than the
  // Debian ONNX headers, so it arrives as an unknown field.
  const auto &unknown = node.unknown_fields();
  for (int i = 0, e = unknown.field_count(); i < e; ++i) {
    const auto &field = unknown.field(i);
    onnx::StringStringEntryProto prop;
    if (field.number() != kNodeMetadataPropsField ||
        field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED ||
        !prop.ParseFromString(field.length_delimited()) ||
        prop.key() != "namespace")
      continue;
    SmallVector<StringRef> segments;
    StringRef(prop.value()).split(segments, '/');
    std::string scope;
    for (StringRef segment : segments) {
      StringRef module = segment.split(": ").first.trim();
      if (!module.empty() && !module.starts_with(":"))
        scope += "/" + module.str();
    }
    if (scope.empty())
      break;
    NamedAttribute entry(StringAttr::get(ctx, kOnnxScopeKey),
                         StringAttr::get(ctx, scope));
    return FusedLoc::get(ctx, {loc}, DictionaryAttr::get(ctx, {entry}));
  }
  return loc;
}

LogicalResult GraphImporter::checkOpsets(const onnx::ModelProto &model) {
  for (const auto &o : model.opset_import()) {
    opsetImports.emplace_back(o.domain(), o.version());
    if (o.domain().empty() || o.domain() == "ai.onnx")
      opset = o.version();
  }
  if (opset == 0)
    return emitError(fileLoc())
           << "model imports no opset of the default ONNX domain";
  if (opset > kMaxOnnxOpset)
    return emitError(fileLoc())
           << "model uses opset " << opset << " of domain 'ai.onnx'; memfit "
           << "supports opsets " << kMinOnnxOpset << " to " << kMaxOnnxOpset
           << " (re-export with an older opset_version)";
  if (opset < kMinOnnxOpset)
    return emitError(fileLoc())
           << "model uses opset " << opset << " of domain 'ai.onnx'; memfit "
           << "supports opsets " << kMinOnnxOpset << " to " << kMaxOnnxOpset
           << " (re-export with opset_version >= " << kMinOnnxOpset << ")";
  return success();
}

LogicalResult GraphImporter::checkOps(const onnx::GraphProto &graph) {
  // Collect every unsupported (domain, op type) first, so one diagnostic
  // says how much of the graph is missing.
  const onnx::NodeProto *first = nullptr;
  int64_t firstIndex = 0;
  std::map<std::string, int64_t> unsupported;
  auto isDefaultDomain = [](const onnx::NodeProto &node) {
    return node.domain().empty() || node.domain() == "ai.onnx";
  };
  auto opKey = [&](const onnx::NodeProto &node) {
    return (isDefaultDomain(node) ? "" : node.domain() + ".") + node.op_type();
  };
  for (auto [i, node] : llvm::enumerate(graph.node())) {
    if (lookupConverter(node.domain(), node.op_type(), opsetOf(node.domain())))
      continue;
    std::string key = opKey(node);
    if (!first) {
      first = &node;
      firstIndex = i;
    }
    ++unsupported[key];
  }
  if (!first)
    return success();
  std::string domain = isDefaultDomain(*first) ? "ai.onnx" : first->domain();
  Location firstLoc = nodeLoc(*first, firstIndex);
  InFlightDiagnostic diag = emitError(firstLoc);
  int64_t domainVersion = opset;
  for (const auto &o : opsetImports)
    if (o.first == first->domain())
      domainVersion = o.second;
  diag << "unsupported ONNX op '" << first->op_type() << "' (domain '"
       << domain << "', opset " << domainVersion << ") at node '"
       << onnxNodeName(firstLoc) << "'";
  std::string firstKey = opKey(*first);
  int64_t others = -1;
  for (auto &[k, n] : unsupported)
    others += n;
  if (others == 0) {
    diag << "; it is the only unsupported op in the graph";
  } else {
    diag << "; the graph has " << others << " other unsupported op"
         << (others == 1 ? "" : "s") << ":";
    for (auto &[k, n] : unsupported) {
      int64_t count = k == firstKey ? n - 1 : n;
      if (count > 0)
        diag << " " << k << " x" << count;
    }
  }
  // onnxruntime's contrib ops come from its transformer optimizer's fusions
  // (SkipLayerNormalization, FastGelu, Attention...), not from exporters.
  if (llvm::any_of(unsupported, [](const auto &entry) {
        return StringRef(entry.first).starts_with("com.microsoft.");
      }))
    diag << "; the 'com.microsoft' ops are onnxruntime's fused kernels, which "
            "its transformer optimizer writes: give memfit the model as "
            "torch.onnx.export wrote it, before "
            "onnxruntime.transformers.optimizer";
  // Opset 23's fused attention ops, which exporters write for
  // scaled_dot_product_attention and rotary embeddings at that opset.
  if (unsupported.count("Attention") || unsupported.count("RotaryEmbedding"))
    diag << "; memfit does not convert opset 23's Attention and "
            "RotaryEmbedding: export with opset 22 or lower "
            "(torch.onnx.export(..., opset_version=18)), where attention and "
            "rotary embeddings are spelled out in MatMul, Softmax and "
            "element-wise ops";
  return failure();
}

FailureOr<DenseElementsAttr>
GraphImporter::givenValue(const onnx::ValueInfoProto &info) {
  const std::vector<std::string> &texts =
      options.inputValues.lookup(info.name());
  auto fail = [&]() {
    return emitError(fileLoc()) << "--input-value=" << info.name() << ": ";
  };
  if (!info.type().has_tensor_type())
    return fail() << "the input is not a tensor", failure();
  const auto &tensor = info.type().tensor_type();
  Type elt = convertElementType(tensor.elem_type(), ctx);
  if (!elt)
    return fail() << "the input has unsupported "
                  << onnxTypeName(tensor.elem_type()),
           failure();
  // The declared shape; a rank-1 input of unknown length takes the count.
  SmallVector<int64_t> shape;
  int64_t count = static_cast<int64_t>(texts.size()), elements = 1;
  for (const auto &d : tensor.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0)
      shape.push_back(d.dim_value());
    else if (tensor.shape().dim_size() == 1)
      shape.push_back(count);
    else
      return fail() << "the input's shape is not static; only a vector may "
                       "take its length from the values",
             failure();
    if (shape.back() > 0 && elements > count / shape.back() + 1)
      elements = count + 1; // more than given, without overflowing
    else
      elements *= shape.back();
  }
  if (elements != count)
    return fail() << "the input of shape " << shapeToString(shape)
                  << " does not hold the " << count << " values given",
           failure();
  auto type = RankedTensorType::get(shape, elt);
  SmallVector<Attribute> attrs;
  for (const std::string &text : texts) {
    StringRef t(text);
    if (auto it = dyn_cast<IntegerType>(elt)) {
      int64_t v;
      if (it.getWidth() == 1 && (t == "true" || t == "false"))
        v = t == "true";
      else if (t.getAsInteger(10, v))
        return fail() << "'" << t << "' is not an integer", failure();
      unsigned width = it.getWidth();
      bool fits = width >= 64       ? (!it.isUnsigned() || v >= 0)
                  : width == 1      ? (v == 0 || v == 1)
                  : it.isUnsigned() ? v >= 0 && v < (int64_t(1) << width)
                                    : v >= -(int64_t(1) << (width - 1)) &&
                                          v < (int64_t(1) << (width - 1));
      if (!fits)
        return fail() << t << " does not fit " << elt, failure();
      attrs.push_back(IntegerAttr::get(
          elt, APInt(width, v, !it.isUnsigned(), /*implicitTrunc=*/true)));
      continue;
    }
    double v;
    if (!isa<FloatType>(elt) || t.getAsDouble(v))
      return fail() << "'" << t << "' is not a " << elt << " value", failure();
    attrs.push_back(FloatAttr::get(elt, v));
  }
  return DenseElementsAttr::get(type, attrs);
}

FailureOr<RankedTensorType>
GraphImporter::inputType(const onnx::ValueInfoProto &info) {
  const onnx::TypeProto &tp = info.type();
  if (!tp.has_tensor_type())
    return emitError(fileLoc()) << "graph input '" << info.name()
                                << "' is not a tensor", failure();
  const auto &tt = tp.tensor_type();
  Type elt = convertElementType(tt.elem_type(), ctx);
  if (!elt)
    return emitError(fileLoc())
               << "graph input '" << info.name() << "' has unsupported "
               << onnxTypeName(tt.elem_type()),
           failure();
  auto given = options.inputShapes.find(info.name());
  if (!tt.has_shape()) {
    if (given == options.inputShapes.end())
      return emitError(fileLoc())
                 << "graph input '" << info.name()
                 << "' has no shape in the model; give one with "
                    "--input-shape="
                 << info.name() << "=DxD...",
             failure();
    if (!checkedNumElements(given->second, byteWidth(elt)))
      return emitError(fileLoc())
                 << "--input-shape gives '" << info.name() << "' shape "
                 << shapeToString(given->second)
                 << ", more elements than 64-bit sizes can count",
             failure();
    return RankedTensorType::get(given->second, elt);
  }
  const auto &dims = tt.shape().dim();
  if (given != options.inputShapes.end() &&
      given->second.size() != static_cast<size_t>(dims.size()))
    return emitError(fileLoc())
               << "--input-shape gives '" << info.name() << "' rank "
               << given->second.size() << " but the model declares rank "
               << dims.size(),
           failure();
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(dims)) {
    std::optional<int64_t> fromUser;
    if (given != options.inputShapes.end())
      fromUser = given->second[i];
    if (d.has_dim_value() && d.dim_value() >= 0) {
      if (fromUser && *fromUser != d.dim_value())
        return emitError(fileLoc())
                   << "--input-shape gives dimension " << i << " of '"
                   << info.name() << "' as " << *fromUser
                   << " but the model fixes it to " << d.dim_value(),
               failure();
      shape.push_back(d.dim_value());
      continue;
    }
    std::string param = d.has_dim_param() ? d.dim_param() : "";
    if (!fromUser && !param.empty()) {
      auto bound = dimBindings.find(param);
      if (bound != dimBindings.end())
        fromUser = bound->second;
      else if (auto v = options.dimValues.find(param);
               v != options.dimValues.end())
        fromUser = v->second;
    }
    if (!fromUser)
      return emitError(fileLoc())
                 << "dimension " << i << " of graph input '" << info.name()
                 << "' is dynamic"
                 << (param.empty() ? "" : " ('" + param + "')")
                 << " and no size was given; pass --input-shape="
                 << info.name() << "=" << [&] {
                      std::string s;
                      for (int k = 0; k < dims.size(); ++k)
                        s += (k ? "x" : "") +
                             (dims[k].has_dim_value()
                                  ? std::to_string(dims[k].dim_value())
                                  : std::string("N"));
                      return s;
                    }(),
             failure();
    if (!param.empty()) {
      auto [it, inserted] = dimBindings.try_emplace(param, *fromUser);
      if (!inserted && it->second != *fromUser)
        return emitError(fileLoc())
                   << "dimension '" << param << "' is " << it->second
                   << " for an earlier input but " << *fromUser << " for '"
                   << info.name() << "'",
               failure();
    }
    shape.push_back(*fromUser);
  }
  if (!checkedNumElements(shape, byteWidth(elt)))
    return emitError(fileLoc())
               << "graph input '" << info.name() << "' of shape "
               << shapeToString(shape)
               << " has more elements than 64-bit sizes can count",
           failure();
  return RankedTensorType::get(shape, elt);
}

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

LogicalResult GraphImporter::checkOutput(const onnx::ValueInfoProto &info,
                                         Value v) {
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
    return success();
  auto type = cast<RankedTensorType>(v.getType());
  const auto &dims = info.type().tensor_type().shape().dim();
  bool mismatch = dims.size() != type.getRank();
  for (int i = 0; !mismatch && i < dims.size(); ++i)
    mismatch = dims[i].has_dim_value() && dims[i].dim_value() != type.getDimSize(i);
  if (!mismatch)
    return success();
  std::string declared;
  for (int i = 0; i < dims.size(); ++i)
    declared += (i ? "x" : "") + (dims[i].has_dim_value()
                                      ? std::to_string(dims[i].dim_value())
                                      : dims[i].dim_param().empty()
                                            ? std::string("?")
                                            : dims[i].dim_param());
  return emitError(v.getLoc())
         << "graph output '" << info.name() << "' is declared "
         << (declared.empty() ? "scalar" : declared) << " but computes "
         << shapeToString(type.getShape());
  return success();
}

/// The types of the attributes that the converters read, by name (ONNX's
/// operator schemas agree on each across the ops memfit converts). A
/// converter reads an attribute's field without looking at its type, so a
/// value of another type is refused before conversion.
static std::optional<onnx::AttributeProto::AttributeType>
expectedAttributeType(StringRef name) {
  using A = onnx::AttributeProto;
  static const std::pair<StringRef, A::AttributeType> table[] = {
      {"allowzero", A::INT},
      {"alpha", A::FLOAT},
      {"approximate", A::STRING},
      {"axes", A::INTS},
      {"axis", A::INT},
      {"beta", A::FLOAT},
      {"end", A::INT},
      {"epsilon", A::FLOAT},
      {"equation", A::STRING},
      {"ignore_index", A::INT},
      {"keepdims", A::INT},
      {"noop_with_empty_axes", A::INT},
      {"num_outputs", A::INT},
      {"perm", A::INTS},
      {"reduction", A::STRING},
      {"seed", A::INT},
      {"start", A::INT},
      {"to", A::INT},
      {"transA", A::INT},
      {"transB", A::INT},
      {"upper", A::INT},
      {"value", A::TENSOR},
      {"value_float", A::FLOAT},
      {"value_floats", A::FLOATS},
      {"value_int", A::INT},
      {"value_ints", A::INTS}};
  for (auto [key, type] : table)
    if (key == name)
      return type;
  return std::nullopt;
}

static std::string attributeTypeName(int type) {
  if (onnx::AttributeProto_AttributeType_IsValid(type))
    return onnx::AttributeProto_AttributeType_Name(
        static_cast<onnx::AttributeProto::AttributeType>(type));
  return "type " + std::to_string(type);
}

LogicalResult GraphImporter::checkAttributes(NodeContext &nc) {
  for (const onnx::AttributeProto &a : nc.node.attribute()) {
    std::optional<onnx::AttributeProto::AttributeType> want =
        expectedAttributeType(a.name());
    if (want && a.type() != *want)
      return nc.error() << "attribute '" << a.name() << "' is "
                        << (a.type() == onnx::AttributeProto::UNDEFINED
                                ? std::string("untyped")
                                : "of type " + attributeTypeName(a.type()))
                        << " but must be of type " << attributeTypeName(*want);
  }
  return success();
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        int64_t index) {
  Location loc = nodeLoc(node, index);
  const OpConverter *conv =
      lookupConverter(node.domain(), node.op_type(), opsetOf(node.domain()));
  std::string holder;
  auto loadConstant = [&](const onnx::TensorProto &t) {
    return tensors.load(t, loc, node.name().empty() ? "constant" : node.name(),
                        holder);
  };
  NodeContext nc(node, loc, builder, opset, values, loadConstant);
  holder = "ONNX node '" + nc.name() + "' (" + node.op_type() + "): ";
  // Resolve inputs: earlier results, graph inputs, or initializers.
  for (const std::string &name : node.input()) {
    if (name.empty() || values.count(name))
      continue;
    auto init = initializers.find(name);
    if (init == initializers.end())
      return nc.error() << "input '" << name
                        << "' is neither a graph input, an initializer nor "
                           "the output of an earlier node";
    auto [value, isParameter] = init->second;
    Location iloc = NameLoc::get(StringAttr::get(ctx, name), fileLoc());
    if (isParameter)
      values[name] = LoadParameterOp::create(
          builder, iloc, cast<RankedTensorType>(value.getType()),
          FlatSymbolRefAttr::get(ctx, name));
    else
      values[name] = ConstantOp::create(builder, iloc, value);
  }
  int64_t n = nc.numInputs();
  if (n < conv->minInputs || n > conv->maxInputs) {
    InFlightDiagnostic d = nc.error();
    d << "has " << n << " input" << (n == 1 ? "" : "s") << " but "
      << node.op_type() << " takes ";
    if (conv->minInputs == conv->maxInputs)
      d << conv->minInputs;
    else
      d << conv->minInputs << " to " << conv->maxInputs;
    return failure();
  }
  for (int64_t i = 0; i < n; ++i) {
    if (i < conv->minInputs && !nc.hasInput(i))
      return nc.error() << "input " << i << " has an empty name, but "
                        << node.op_type() << " needs it";
    Value v = nc.input(i);
    if (v && !isa<RankedTensorType>(v.getType()))
      return nc.error() << "input '" << node.input(i) << "' is not a tensor";
  }
  if (failed(checkAttributes(nc)))
    return failure();
  Block *block = builder.getInsertionBlock();
  Operation *last = block->empty() ? nullptr : &block->back();
  if (failed(conv->convert(nc)))
    return failure();
  // Check every op the node became (element types, say) now, so that a
  // problem is reported on the node rather than by the module verifier.
  auto it = last ? std::next(last->getIterator()) : block->begin();
  for (Operation &op : llvm::make_range(it, block->end())) {
    // Every later size computation assumes that a tensor's elements and
    // bytes can be counted in 64 bits; a shape computed from the model's
    // constants (Reshape, Expand, ConstantOfShape, ...) may not.
    for (Type t : op.getResultTypes())
      if (auto type = dyn_cast<RankedTensorType>(t);
          type && type.getElementType().isIntOrFloat() &&
          !checkedNumElements(type.getShape(),
                              byteWidth(type.getElementType())))
        return nc.error() << "result of shape "
                          << shapeToString(type.getShape())
                          << " has more elements than 64-bit sizes can count"
                          << " (inputs: " << nc.describeInputs() << ")";
    std::string why;
    if (failed(captureDiagnostic(ctx, why, [&] {
          return verify(&op, /*verifyRecursively=*/false);
        })))
      return nc.error() << why << " (inputs: " << nc.describeInputs() << ")";
  }
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::run(const onnx::ModelProto &model) {
  if (!model.has_graph())
    return emitError(fileLoc()) << "not an ONNX model: it has no graph", nullptr;
  if (failed(checkOpsets(model)))
    return nullptr;
  const onnx::GraphProto &graph = model.graph();
  if (failed(checkOps(graph)))
    return nullptr;

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc());
  if (failed(importInitializers(graph, *module)))
    return nullptr;

  // Graph inputs that are not initializers become function arguments, or
  // constants when --input-value gives their values.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  SmallVector<std::pair<std::string, DenseElementsAttr>> givenValues;
  for (const auto &in : graph.input()) {
    if (initializers.count(in.name()))
      continue;
    if (options.inputValues.count(in.name())) {
      FailureOr<DenseElementsAttr> value = givenValue(in);
      if (failed(value))
        return nullptr;
      givenValues.push_back({in.name(), *value});
      continue;
    }
    FailureOr<RankedTensorType> t = inputType(in);
    if (failed(t))
      return nullptr;
    argTypes.push_back(*t);
    argNames.push_back(in.name());
  }
  // A --input-value entry must name a graph input.
  for (const auto &entry : options.inputValues) {
    StringRef key = entry.getKey();
    if (llvm::any_of(graph.input(), [&](const onnx::ValueInfoProto &in) {
          return in.name() == key && !initializers.count(in.name());
        }))
      continue;
    std::string names;
    for (const auto &in : graph.input())
      if (!initializers.count(in.name()))
        names += (names.empty() ? "" : ", ") + in.name();
    return emitError(fileLoc())
               << "--input-value names '" << key
               << "', which is not a graph input (inputs: " << names << ")",
           nullptr;
  }
  // A --input-shape entry must name a graph input or a symbolic dimension.
  for (const auto &entry : options.inputShapes) {
    StringRef key = entry.getKey();
    if (llvm::is_contained(argNames, key.str()) || dimBindings.count(key))
      continue;
    std::string names;
    for (const auto &n : argNames)
      names += (names.empty() ? "" : ", ") + n;
    for (const auto &d : dimBindings)
      names += ", " + d.getKey().str();
    return emitError(fileLoc())
               << "--input-shape names '" << key
               << "', which is neither a graph input nor a symbolic "
                  "dimension of one (known: "
               << names << ")",
           nullptr;
  }
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc(), options.funcName,
                                   builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, "onnx.name", builder.getStringAttr(name));
    values[name] = entry->getArgument(i);
  }
  builder.setInsertionPointToStart(entry);
  for (auto &[name, value] : givenValues)
    values[name] = ConstantOp::create(
        builder, NameLoc::get(builder.getStringAttr(name), fileLoc()), value);

  for (auto [i, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, i)))
      return nullptr;

  SmallVector<Value> results;
  for (const auto &out : graph.output()) {
    Value v = values.lookup(out.name());
    if (!v) {
      auto init = initializers.find(out.name());
      if (init == initializers.end())
        return emitError(fileLoc()) << "graph output '" << out.name()
                                    << "' is not computed by any node",
               nullptr;
      v = ConstantOp::create(builder, fileLoc(), init->second.first);
    }
    if (failed(checkOutput(out, v)))
      return nullptr;
    results.push_back(v);
  }
  func::ReturnOp::create(builder, fileLoc(), results);
  func.setFunctionType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "onnx.name", builder.getStringAttr(out.name()));

  // Shape computations folded to constants leave their inputs unused.
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

std::string mlir::memfit::parseInputValue(StringRef spec,
                                          OnnxImportOptions &options) {
  auto [name, list] = spec.trim().split('=');
  if (name.empty() || !spec.contains('='))
    return ("malformed value '" + spec + "': expected name=V,V,...").str();
  // `name=` gives an empty tensor (a reduction's empty axes).
  SmallVector<StringRef> parts;
  if (!list.trim().empty())
    list.split(parts, ',');
  std::vector<std::string> values;
  for (StringRef p : parts) {
    if (p.trim().empty())
      return ("empty value in '" + spec + "'").str();
    values.push_back(p.trim().str());
  }
  options.inputValues[name] = std::move(values);
  return "";
}

std::string mlir::memfit::parseInputShapes(StringRef spec,
                                           OnnxImportOptions &options) {
  SmallVector<StringRef> entries;
  spec.split(entries, ',', -1, /*KeepEmpty=*/false);
  for (StringRef entry : entries) {
    auto [name, dims] = entry.trim().rsplit('=');
    if (name.empty() || dims.empty())
      return ("malformed shape '" + entry + "': expected name=DxD...").str();
    std::vector<int64_t> shape;
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef p : parts) {
      int64_t d;
      if (p.getAsInteger(10, d) || d < 0)
        return ("malformed dimension '" + p + "' in '" + entry + "'").str();
      shape.push_back(d);
    }
    options.inputShapes[name] = shape;
    if (shape.size() == 1 && !dims.contains('x'))
      options.dimValues[name] = shape.front();
  }
  return "";
}

bool mlir::memfit::looksLikeOnnx(StringRef fileName, StringRef bytes) {
  if (fileName.ends_with_insensitive(".onnx"))
    return true;
  if (fileName.ends_with_insensitive(".mlir") ||
      fileName.ends_with_insensitive(".mlirbc") || bytes.starts_with("ML\xEFR"))
    return false;
  // A serialized ModelProto starts with field 1 (ir_version, varint): 0x08.
  return !bytes.empty() && bytes.front() == 0x08;
}

OwningOpRef<ModuleOp>
mlir::memfit::importOnnxModel(StringRef bytes, StringRef fileName,
                              MLIRContext *context,
                              const OnnxImportOptions &options) {
  context->loadDialect<MemfitDialect, func::FuncDialect>();
  Location loc = FileLineColLoc::get(context, fileName, 0, 0);
  if (bytes.empty())
    return emitError(loc) << "not an ONNX model: the file is empty", nullptr;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return emitError(loc) << "the model is " << bytes.size()
                          << " bytes, over protobuf's 2 GiB limit; save "
                             "its weights as external data",
           nullptr;
  onnx::ModelProto model;
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(bytes.data()),
      static_cast<int>(bytes.size()));
  stream.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (!model.ParseFromCodedStream(&stream) ||
      !stream.ConsumedEntireMessage())
    return emitError(loc) << "not an ONNX model, or a truncated one: the "
                             "protobuf does not parse ("
                          << bytes.size() << " bytes)",
           nullptr;
  if (model.ir_version() <= 0 || !model.has_graph())
    return emitError(loc) << "not an ONNX model: "
                          << (model.ir_version() <= 0 ? "no IR version"
                                                      : "no graph"),
           nullptr;
  GraphImporter importer(context, fileName, options);
  return importer.run(model);
}

void mlir::memfit::registerOnnxImportDialects(DialectRegistry &registry) {
  registry.insert<MemfitDialect, func::FuncDialect>();
}
