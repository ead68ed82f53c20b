//===- NodeContext.h - what one ONNX node's conversion sees -----*- C++ -*-===//
//
// A converter gets one NodeContext: the ONNX node, its location, the builder,
// the default domain's opset, the node's inputs as values (and as constants
// where they are known), its attributes, and builders that infer result
// types, fold, and turn a failed shape rule into an error on the node.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_IMPORT_NODECONTEXT_H
#define MEMFIT_LIB_IMPORT_NODECONTEXT_H

#include "ImporterImpl.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::memfit::onnx_import {

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
  /// Whether input `i` exists and is not omitted (empty-named).
  bool hasInput(int64_t i) const;
  /// The value of input `i`, or null when it is omitted.
  Value input(int64_t i) const;
  /// The type of input `i`, which must be present.
  RankedTensorType inputType(int64_t i) const;
  /// Number of outputs that have names (that the graph may use).
  int64_t numOutputs() const;
  /// Whether output `i` exists and is used (named).
  bool hasOutput(int64_t i) const;

  /// The constant value of input `i`, if it is known at compile time.
  DenseElementsAttr constantInput(int64_t i) const;
  /// Input `i` as compile-time integers; an error naming the input when it
  /// is not an integer tensor (a float or boolean one) or not a constant
  /// (shape operands must be known to specialize shapes).
  FailureOr<SmallVector<int64_t>> constantInts(int64_t i, StringRef what);
  /// Input `i` as one compile-time number (scalar or 1-element tensor).
  FailureOr<Attribute> constantScalar(int64_t i, StringRef what);
  /// Appends to `diag`, when input `i` is a graph input, how to give its
  /// value (--input-value).
  void noteGraphInput(InFlightDiagnostic &diag, int64_t i) const;

  /// The node's attribute `name`, or null.
  const onnx::AttributeProto *attr(StringRef name) const;
  /// Attribute `name` as an int, float or string, or `dflt` without it.
  int64_t intAttr(StringRef name, int64_t dflt) const;
  float floatAttr(StringRef name, float dflt) const;
  std::string stringAttr(StringRef name, StringRef dflt) const;
  /// Attribute `name` as a list of ints, or nothing without it.
  std::optional<SmallVector<int64_t>> intsAttr(StringRef name) const;

  /// Builds `OpTy` with result types inferred from operands and attributes,
  /// then folds it if it verifies; an inference failure becomes an error on
  /// the node that names its inputs and their types.
  template <typename OpTy>
  FailureOr<SmallVector<Value>> buildMulti(ValueRange operands,
                                           ArrayRef<NamedAttribute> attrs = {});
  /// buildMulti of an op with one result.
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
  /// A rank-0 `memfit.constant` of element type `elt` (which broadcasts to
  /// any shape): `value` as a bool, a float or an integer of that type.
  Value scalar(Type elt, double value);

  /// Binds the node's outputs, in order, to `results`.
  LogicalResult setResults(ValueRange results);

  /// The attribute `name` = `value`, for the builders.
  NamedAttribute named(StringRef name, Attribute value) {
    return b.getNamedAttr(name, value);
  }

  /// "'a' tensor<2x3xf32>, 'b' ...": the node's inputs, for diagnostics.
  std::string describeInputs() const;

private:
  /// Folds `op` where its operands allow, erasing it; its results, or the
  /// values it folded to.
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

} // namespace mlir::memfit::onnx_import

#endif // MEMFIT_LIB_IMPORT_NODECONTEXT_H
