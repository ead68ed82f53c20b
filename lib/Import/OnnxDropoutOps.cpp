//===- OnnxDropoutOps.cpp - Dropout converter -----------------------------===//
//
// Dropout in inference mode (the default, and what eval() exports) is the
// identity, with an all-true mask; in training mode (training_mode a
// constant true) it is memfit.dropout and memfit.dropout_mask, each node
// drawing its own stream of random numbers named by its output.
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// Dropout: the identity in inference mode, else memfit.dropout of a
/// ratio known at compile time and a random stream of its own.
LogicalResult convertDropout(NodeContext &n) {
  // Inference-mode dropout (the default, and what eval() exports) is the
  // identity; training-mode dropout needs a known ratio.
  bool training = false;
  if (n.hasInput(2)) {
    FailureOr<Attribute> t = n.constantScalar(2, "training_mode");
    if (failed(t))
      return failure();
    auto flag = dyn_cast<IntegerAttr>(*t);
    if (!flag)
      return n.error() << "training_mode must be a boolean";
    training = flag.getValue().getBoolValue();
  }
  float ratio = 0.5f;
  if (training && n.hasInput(1)) {
    FailureOr<Attribute> r = n.constantScalar(1, "ratio");
    if (failed(r))
      return failure();
    auto value = dyn_cast<FloatAttr>(*r);
    if (!value)
      return n.error() << "ratio must be a floating-point scalar";
    ratio = value.getValueAsDouble();
  }
  // Inference mode, or a zero ratio, keeps every element: the identity,
  // and a mask (the optional second output) of all true.
  if (!training || ratio == 0.0f) {
    if (!n.hasOutput(1))
      return n.setResults(n.input(0));
    auto maskType =
        RankedTensorType::get(n.inputType(0).getShape(), n.b.getI1Type());
    Value mask = n.constant(DenseElementsAttr::get(maskType, true));
    return n.setResults(SmallVector<Value>{n.input(0), mask});
  }
  // Each dropout of a graph draws its own stream of random numbers, named
  // by its (unique) output so that it does not depend on the node order
  // (a node without outputs, which nothing reads, by its name).
  std::string named = n.node.output_size() ? n.node.output(0) : n.name();
  SmallVector<NamedAttribute> attrs{
      n.named("ratio", n.b.getF32FloatAttr(ratio)),
      n.named("stream", n.b.getI64IntegerAttr(static_cast<int64_t>(
                            llvm::xxh3_64bits(named) >> 1)))};
  if (const onnx::AttributeProto *seed = n.attr("seed"))
    attrs.push_back(n.named("seed", n.b.getI64IntegerAttr(seed->i())));
  Value r = DropoutOp::create(n.b, n.loc, n.inputType(0), n.input(0), attrs);
  if (!n.hasOutput(1))
    return n.setResults(r);
  auto maskType =
      RankedTensorType::get(n.inputType(0).getShape(), n.b.getI1Type());
  Value mask = DropoutMaskOp::create(n.b, n.loc, maskType, n.input(0), attrs);
  return n.setResults(SmallVector<Value>{r, mask});
}

} // namespace

void onnx_import::populateDropoutConverters(OpTable &table) {
  table.onOp("Dropout", 13, 1, 3, convertDropout);
}
