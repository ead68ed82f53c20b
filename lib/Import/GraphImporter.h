//===- GraphImporter.h - one ONNX graph into a memfit module ----*- C++ -*-===//
//
// The state of one model's import. Its parts are defined by what they do:
// GraphImporter.cpp checks the model's opsets and ops and assembles the
// function (its arguments, body and results); GraphInputs.cpp types the
// graph inputs; TensorLoader.cpp imports the initializers; NodeImport.cpp
// converts one node through the op table.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_IMPORT_GRAPHIMPORTER_H
#define MEMFIT_LIB_IMPORT_GRAPHIMPORTER_H

#include "ImporterImpl.h"

#include "memfit/Import/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::memfit::onnx_import {

class NodeContext;

class GraphImporter {
public:
  GraphImporter(MLIRContext *ctx, StringRef fileName,
                const OnnxImportOptions &options)
      : ctx(ctx), fileName(fileName), options(options), builder(ctx),
        tensors(ctx, fileName, options.maxInlineElements,
                options.withoutWeights, options.externalFiles) {}

  /// Imports `model`, which has a graph; null after emitting diagnostics.
  OwningOpRef<ModuleOp> run(const onnx::ModelProto &model);

private:
  /// The location of the model file, of what belongs to no node.
  Location fileLoc() { return FileLineColLoc::get(ctx, fileName, 0, 0); }
  /// The location of `node`, the `index`th of the graph: its name (or op
  /// type and index), with the exporter's module scope where it has one.
  Location nodeLoc(const onnx::NodeProto &node, int64_t index);
  /// Reads the model's opset imports; an error unless the default domain's
  /// is one memfit supports.
  LogicalResult checkOpsets(const onnx::ModelProto &model);
  /// One error that lists every op of `graph` the table cannot convert.
  LogicalResult checkOps(const onnx::GraphProto &graph);
  /// The type of graph input `info`, its dynamic dimensions specialized from
  /// the options (GraphInputs.cpp).
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &info);
  /// The constant --input-value gives graph input `info`, of its declared
  /// type (GraphInputs.cpp).
  FailureOr<DenseElementsAttr> givenValue(const onnx::ValueInfoProto &info);
  /// Loads the initializers of `graph`; those that are weights become
  /// `memfit.parameter`s of `module` (TensorLoader.cpp).
  LogicalResult importInitializers(const onnx::GraphProto &graph,
                                   ModuleOp module);
  /// Converts `node`, the `index`th of the graph (NodeImport.cpp).
  LogicalResult importNode(const onnx::NodeProto &node, int64_t index);
  /// Checks the value `v` computed for graph output `info` against the
  /// shape the model declares for it.
  LogicalResult checkOutput(const onnx::ValueInfoProto &info, Value v);
  /// Refuses an attribute whose type is not the one converters read.
  LogicalResult checkAttributes(NodeContext &nc);

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

  MLIRContext *ctx;
  std::string fileName;
  const OnnxImportOptions &options;
  OpBuilder builder;
  TensorLoader tensors;
  int64_t opset = 0;
  std::vector<std::pair<std::string, int64_t>> opsetImports;
  llvm::StringMap<Value> values;
  /// Initializers, created lazily at first use in the function.
  llvm::StringMap<std::pair<ElementsAttr, bool>> initializers;
  llvm::StringMap<int64_t> dimBindings;
};

} // namespace mlir::memfit::onnx_import

#endif // MEMFIT_LIB_IMPORT_GRAPHIMPORTER_H
