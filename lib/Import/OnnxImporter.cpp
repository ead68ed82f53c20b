//===- OnnxImporter.cpp - ONNX model to memfit IR -------------------------===//
//
// The entry points of OnnxImporter.h: the parsers of --input-shape and
// --input-value, the check for an ONNX file, and importOnnxModel, which
// parses the protobuf and hands the model to GraphImporter.
//
//===----------------------------------------------------------------------===//

#include "memfit/Import/OnnxImporter.h"
#include "GraphImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <google/protobuf/io/coded_stream.h>
#include <limits>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

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
