//===- ImporterImpl.h - ONNX importer internals -----------------*- C++ -*-===//
//
// What the importer's files share below the public API: ONNX element types,
// tensor sizes, external data (also read by OnnxExport.cpp), the loader of
// initializer and Constant tensors, and diagnostics captured for a node.
//
// The import of a graph is in GraphImporter.h, the conversion of one node in
// NodeContext.h, the table of op converters in OpTable.h.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_IMPORT_IMPORTERIMPL_H
#define MEMFIT_LIB_IMPORT_IMPORTERIMPL_H

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Error.h"

#include <onnx/onnx_pb.h>
#include <optional>
#include <vector>

namespace mlir::memfit::onnx_import {

//===----------------------------------------------------------------------===//
// Element types and tensors (TensorLoader.cpp)
//===----------------------------------------------------------------------===//

/// ONNX TensorProto data type to an MLIR element type (null if unsupported).
Type convertElementType(int32_t onnxType, MLIRContext *ctx);
/// Name of an ONNX data type, for diagnostics.
std::string onnxTypeName(int32_t onnxType);

/// The number of elements of `shape`, or nothing when a dimension is
/// negative or the count (or its bytes at `eltSize` each) overflows int64_t.
std::optional<int64_t> checkedNumElements(ArrayRef<int64_t> shape,
                                          int64_t eltSize = 1);

/// The bytes one element of `elt` takes in memory (sub-byte types and i1
/// one byte each).
size_t byteWidth(Type elt);

/// Loads initializer and Constant tensors into attributes.
class TensorLoader {
public:
  TensorLoader(MLIRContext *ctx, StringRef fileName, int64_t maxInline,
               bool withoutWeights,
               std::vector<std::string> *externalFiles = nullptr)
      : ctx(ctx), fileName(fileName), maxInline(maxInline),
        withoutWeights(withoutWeights), externalFiles(externalFiles) {}

  /// Converts `t`; `loc` is where errors go, after `context` (the node that
  /// holds the tensor, if any). Large tensors become dense resources named
  /// `resourceName`.
  FailureOr<ElementsAttr> load(const onnx::TensorProto &t, Location loc,
                               StringRef resourceName, StringRef context = "");

private:
  /// An error on the tensor being loaded, which names it.
  InFlightDiagnostic error(const onnx::TensorProto &t) {
    return emitError(loc) << context << "tensor '" << t.name() << "' ";
  }
  /// The data of `t` as `eltSize` bytes per element (sub-byte types
  /// unpacked to one element per byte).
  FailureOr<std::vector<char>> readBytes(const onnx::TensorProto &t,
                                         RankedTensorType type, size_t eltSize);
  /// The data of `t` as stored: `eltSize` bytes per element, or with `bits`
  /// (4 or 2) the packed bytes of its sub-byte elements.
  FailureOr<std::vector<char>> readPackedBytes(const onnx::TensorProto &t,
                                               RankedTensorType type,
                                               unsigned bits,
                                               size_t eltSize = 1);
  MLIRContext *ctx;
  std::string fileName;
  int64_t maxInline;
  bool withoutWeights;
  // Gets each external data file read (once each), when set.
  std::vector<std::string> *externalFiles;
  // Where the tensor being loaded reports errors.
  Location loc = UnknownLoc::get(ctx);
  std::string context;
};

//===----------------------------------------------------------------------===//
// External data (ExternalData.cpp)
//===----------------------------------------------------------------------===//

/// The bytes of a tensor stored as ONNX external data (`location`, `offset`
/// and `length`; the location relative to `modelDir`), or a message that
/// names the file and why it cannot be read. The location must stay inside
/// `modelDir` (no absolute path, no '..', no symbolic link out of it), and
/// the data inside the file; with `expectedBytes`, a size that differs is
/// refused before anything is read. `readPath`, when set, gets the real
/// path of the file read.
llvm::Expected<std::string>
readExternalData(const onnx::TensorProto &t, llvm::StringRef modelDir,
                 std::optional<uint64_t> expectedBytes = std::nullopt,
                 std::string *readPath = nullptr);

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

/// Runs `fn`, capturing the first diagnostic it emits into `message` instead
/// of printing it, so the caller can report it with the ONNX node's context
/// (NodeContext.cpp).
LogicalResult captureDiagnostic(MLIRContext *ctx, std::string &message,
                                function_ref<LogicalResult()> fn);

} // namespace mlir::memfit::onnx_import

#endif // MEMFIT_LIB_IMPORT_IMPORTERIMPL_H
