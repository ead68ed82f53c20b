//===- OnnxImporter.h - ONNX to memfit IR --------------------------*- C++ -*-===//
//
// Imports an ONNX model (protobuf) into a module of the memfit dialect:
// initializers become `memfit.parameter` symbols (float tensors of rank >= 1)
// or constants, graph inputs become arguments of `func.func @main` whose
// dynamic dimensions are specialized from user-given shapes, shape
// computations fold to constants, and every op carries the location of its
// ONNX node. Errors are reported as diagnostics on the given context.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_IMPORT_ONNXIMPORTER_H
#define MEMFIT_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
class DialectRegistry;
namespace memfit {

/// The ONNX opsets of the default domain that the importer understands.
/// Opsets 24 to 28 only add element types (float8e8m0, int2, float6, ...)
/// to the ops of the importer's table (lib/Import/OnnxOpTable.cpp), and
/// Range 27 a stash_type for 16-bit floats; raise the bound only after
/// checking every op of that table against the new opset's changes.
inline constexpr int64_t kMinOnnxOpset = 13;
inline constexpr int64_t kMaxOnnxOpset = 28;

struct OnnxImportOptions {
  /// Shapes of graph inputs, by input name. A graph input's dimensions that
  /// the model leaves symbolic must come from here, directly or through a
  /// symbolic dimension name another input binds.
  llvm::StringMap<std::vector<int64_t>> inputShapes;
  /// Values of symbolic dimensions by name (e.g. batch=2, sequence=16).
  llvm::StringMap<int64_t> dimValues;
  /// Values of graph inputs that must be known at compile time (a Reshape's
  /// shape, a Slice's starts...), by input name, as written: the input
  /// becomes a constant of its element type and leaves the signature.
  llvm::StringMap<std::vector<std::string>> inputValues;
  /// Name of the imported function.
  std::string funcName = "main";
  /// Initializers and constants with at most this many elements are printed
  /// inline; larger ones are stored as dense resources.
  int64_t maxInlineElements = 64;
  /// Plan from shapes: float tensors whose data is in external files are
  /// not read (the files may be absent) and import as zeros. Other external
  /// tensors (integers that may decide shapes) are still read.
  bool withoutWeights = false;
  /// When set, gets the path of each external data file the import reads,
  /// once each (what a cached compile of the model depends on besides the
  /// model file).
  std::vector<std::string> *externalFiles = nullptr;
};

/// Parses `name=2x16,other=2x16` into `options.inputShapes`, and `name=2`
/// entries (no `x`, naming no input) into `options.dimValues`. Returns an
/// error message on malformed input, else the empty string.
std::string parseInputShapes(llvm::StringRef spec, OnnxImportOptions &options);

/// Parses `name=1,2,3` (one input's values, row-major; `name=` for none)
/// into
/// `options.inputValues`. Returns an error message on malformed input, else
/// the empty string.
std::string parseInputValue(llvm::StringRef spec, OnnxImportOptions &options);

/// Imports the ONNX model in `bytes`; `fileName` is used in locations and
/// diagnostics and to find external tensor data. Returns null after emitting
/// diagnostics on failure.
OwningOpRef<ModuleOp> importOnnxModel(llvm::StringRef bytes,
                                      llvm::StringRef fileName,
                                      MLIRContext *context,
                                      const OnnxImportOptions &options);

/// Whether `bytes` looks like a serialized ONNX model rather than MLIR text
/// or bytecode (used to choose the parser for an input file).
bool looksLikeOnnx(llvm::StringRef fileName, llvm::StringRef bytes);

/// Registers the dialects imported IR uses.
void registerOnnxImportDialects(DialectRegistry &registry);

} // namespace memfit
} // namespace mlir

#endif // MEMFIT_IMPORT_ONNXIMPORTER_H
