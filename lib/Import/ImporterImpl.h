//===- ImporterImpl.h - ONNX importer internals --------------------*- C++ -*-===//
//
// The state one ONNX node's conversion sees (NodeContext) and the table of
// op converters, keyed by ONNX op type and the first opset each handles.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_IMPORT_IMPORTERIMPL_H
#define MEMFIT_LIB_IMPORT_IMPORTERIMPL_H

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <onnx/onnx_pb.h>
#include <optional>

namespace mlir::memfit::onnx_import {

/// ONNX TensorProto data type to an MLIR element type (null if unsupported).
Type convertElementType(int32_t onnxType, MLIRContext *ctx);
/// Name of an ONNX data type, for diagnostics.
std::string onnxTypeName(int32_t onnxType);

/// The number of elements of `shape`, or nothing when a dimension is
/// negative or the count (or its bytes at `eltSize` each) overflows int64_t.
std::optional<int64_t> checkedNumElements(ArrayRef<int64_t> shape,
                                          int64_t eltSize = 1);

/// The bytes of a tensor stored as ONNX external data (`location`, `offset`
/// and `length`; the location relative to `modelDir`), or a message that
/// names the file and why it cannot be read. The location must stay inside
/// `modelDir` (no absolute path, no '..', no symbolic link out of it), and
/// the data inside the file; with `expectedBytes`, a size that differs is
/// refused before anything is read.
llvm::Expected<std::string>
readExternalData(const onnx::TensorProto &t, llvm::StringRef modelDir,
                 std::optional<uint64_t> expectedBytes = std::nullopt);

/// Runs `fn`, capturing the first diagnostic it emits into `message` instead
/// of printing it, so the caller can report it with the ONNX node's context.
LogicalResult captureDiagnostic(MLIRContext *ctx, std::string &message,
                                function_ref<LogicalResult()> fn);

class NodeContext {
public:
  using TensorLoaderFn =
      function_ref<FailureOr<ElementsAttr>(const onnx::TensorProto &)>;
  NodeContext(const onnx::NodeProto &node, Location loc, OpBuilder &builder,
              int64_t opset, llvm::StringMap<Value> &values,
              TensorLoaderFn loader)
      : node(node), loc(loc), b(builder), opset(opset), values(values),
        loader(loader) {}

  const onnx::NodeProto &node;
  Location loc;
  OpBuilder &b;
  int64_t opset;

  /// Emits an error at the node that names it and its op type.
  InFlightDiagnostic error();
  /// The node's name, or the name its location was given when it has none.
  std::string name() const;

  /// Runs a shape rule; a failure becomes an error on the node.
  LogicalResult rule(function_ref<LogicalResult(OptLoc)> fn);

  /// Number of inputs, trailing omitted (empty-named) ones not counted.
  int64_t numInputs() const;
  bool hasInput(int64_t i) const;
  Value input(int64_t i) const;
  RankedTensorType inputType(int64_t i) const;
  /// Number of outputs that have names (that the graph may use).
  int64_t numOutputs() const;
  /// Whether output `i` exists and is used (named).
  bool hasOutput(int64_t i) const;

  /// The constant value of input `i`, if it is known at compile time.
  DenseElementsAttr constantInput(int64_t i) const;
  /// Input `i` as compile-time integers; an error naming the input when it
  /// is not a constant (shape operands must be known to specialize shapes).
  FailureOr<SmallVector<int64_t>> constantInts(int64_t i, StringRef what);
  /// Input `i` as one compile-time number (scalar or 1-element tensor).
  FailureOr<Attribute> constantScalar(int64_t i, StringRef what);
  /// Appends to `diag`, when input `i` is a graph input, how to give its
  /// value (--input-value).
  void noteGraphInput(InFlightDiagnostic &diag, int64_t i) const;

  const onnx::AttributeProto *attr(StringRef name) const;
  int64_t intAttr(StringRef name, int64_t dflt) const;
  float floatAttr(StringRef name, float dflt) const;
  std::string stringAttr(StringRef name, StringRef dflt) const;
  std::optional<SmallVector<int64_t>> intsAttr(StringRef name) const;

  /// Builds `OpTy` with result types inferred from operands and attributes,
  /// then folds it; an inference failure becomes an error on the node that
  /// names its inputs and their types.
  template <typename OpTy>
  FailureOr<SmallVector<Value>> buildMulti(ValueRange operands,
                                           ArrayRef<NamedAttribute> attrs = {});
  template <typename OpTy>
  FailureOr<Value> build(ValueRange operands,
                         ArrayRef<NamedAttribute> attrs = {}) {
    FailureOr<SmallVector<Value>> r = buildMulti<OpTy>(operands, attrs);
    if (failed(r))
      return failure();
    return r->front();
  }
  /// Builds `OpTy` with the given result type, then folds it.
  template <typename OpTy>
  Value buildTyped(Type type, ValueRange operands,
                   ArrayRef<NamedAttribute> attrs = {}) {
    auto op = OpTy::create(b, loc, TypeRange{type}, operands, attrs);
    return foldOp(op)[0];
  }
  /// Converts a tensor attribute (of a Constant node, say).
  FailureOr<ElementsAttr> loadTensor(const onnx::TensorProto &t) {
    return loader(t);
  }
  /// A `memfit.constant`.
  Value constant(ElementsAttr value);

  /// Binds the node's outputs, in order, to `results`.
  LogicalResult setResults(ValueRange results);

  NamedAttribute named(StringRef name, Attribute value) {
    return b.getNamedAttr(name, value);
  }

  /// "'a' tensor<2x3xf32>, 'b' ...": the node's inputs, for diagnostics.
  std::string describeInputs() const;

private:
  SmallVector<Value> foldOp(Operation *op);
  llvm::StringMap<Value> &values;
  TensorLoaderFn loader;
};

template <typename OpTy>
FailureOr<SmallVector<Value>>
NodeContext::buildMulti(ValueRange operands, ArrayRef<NamedAttribute> attrs) {
  MLIRContext *ctx = b.getContext();
  SmallVector<Type> types;
  // Capture the rule's message so the error can carry the node's context.
  std::string why;
  if (failed(captureDiagnostic(ctx, why, [&] {
        return OpTy::inferReturnTypes(ctx, loc, operands,
                                      DictionaryAttr::get(ctx, attrs),
                                      OpaqueProperties(nullptr), RegionRange(),
                                      types);
      }))) {
    error() << (why.empty() ? "invalid operands" : why)
            << " (inputs: " << describeInputs() << ")";
    return failure();
  }
  auto op = OpTy::create(b, loc, types, operands, attrs);
  return foldOp(op);
}

using Converter = LogicalResult (*)(NodeContext &);

struct OpConverter {
  /// The first opset of the default domain this entry handles.
  int64_t sinceVersion;
  int64_t minInputs, maxInputs;
  Converter convert;
};

/// The converter of `opType` of `domain` ("" for the default domain) at
/// that domain's `opset`, or null when unsupported.
const OpConverter *lookupConverter(StringRef domain, StringRef opType,
                                   int64_t opset);

/// LayerNormalization's optional Mean and InvStdDev outputs of `input`
/// normalized from `axis`, as its function body computes them in
/// stash_type (float): the mean and 1/sqrt(variance + epsilon) over the
/// normalized dimensions, kept as 1s.
FailureOr<std::pair<Value, Value>> layerNormStats(NodeContext &n, Value input,
                                                  int64_t axis, float epsilon);

// OnnxComposedOps.cpp: ops written as other memfit ops.
LogicalResult convertAbs(NodeContext &n);
LogicalResult convertSign(NodeContext &n);
LogicalResult convertClip(NodeContext &n);
LogicalResult convertSoftplus(NodeContext &n);
LogicalResult convertHardSigmoid(NodeContext &n);
LogicalResult convertHardSwish(NodeContext &n);
LogicalResult convertMish(NodeContext &n);
LogicalResult convertMod(NodeContext &n);
LogicalResult convertTile(NodeContext &n);
LogicalResult convertPad(NodeContext &n);
template <bool isMax> LogicalResult convertArgExtreme(NodeContext &n);
template <bool simplified> LogicalResult convertSkipNorm(NodeContext &n);
template <GeluApproximation approximation>
LogicalResult convertFusedGelu(NodeContext &n);

} // namespace mlir::memfit::onnx_import

#endif // MEMFIT_LIB_IMPORT_IMPORTERIMPL_H
