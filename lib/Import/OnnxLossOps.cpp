//===- OnnxLossOps.cpp - loss converters ----------------------------------===//
//
// SoftmaxCrossEntropyLoss (and its optional log_prob output, a LogSoftmax
// over the classes) and NegativeLogLikelihoodLoss, memfit ops with the
// same reduction, weights and ignore_index.
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// The 'reduction' attribute of a loss ('mean' without it).
FailureOr<LossReduction> lossReduction(NodeContext &n) {
  std::string r = n.stringAttr("reduction", "mean");
  std::optional<LossReduction> kind = symbolizeLossReduction(r);
  if (!kind)
    return n.error() << "reduction must be 'none', 'sum' or 'mean', got '"
                     << r << "'",
           failure();
  return *kind;
}

/// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss, with their
/// optional weights and ignore_index.
template <typename OpTy>
LogicalResult convertLoss(NodeContext &n) {
  FailureOr<LossReduction> reduction = lossReduction(n);
  if (failed(reduction))
    return failure();
  SmallVector<Value> operands{n.input(0), n.input(1)};
  if (n.hasInput(2))
    operands.push_back(n.input(2));
  SmallVector<NamedAttribute> attrs{n.named(
      "reduction", LossReductionAttr::get(n.b.getContext(), *reduction))};
  if (const onnx::AttributeProto *ii = n.attr("ignore_index"))
    attrs.push_back(n.named("ignore_index", n.b.getI64IntegerAttr(ii->i())));
  FailureOr<Value> r = n.build<OpTy>(operands, attrs);
  if (failed(r))
    return failure();
  if (!n.hasOutput(1) || !std::is_same_v<OpTy, SoftmaxCrossEntropyLossOp>)
    return n.setResults(*r);
  // SoftmaxCrossEntropyLoss's optional log_prob: the log-softmax of the
  // scores over the class dimension (1).
  Value logProb = LogSoftmaxOp::create(n.b, n.loc, n.inputType(0), n.input(0),
                                       n.b.getI64IntegerAttr(1));
  return n.setResults(SmallVector<Value>{*r, logProb});
}

} // namespace

void onnx_import::populateLossConverters(OpTable &table) {
  table.onOp("SoftmaxCrossEntropyLoss", 13, 2, 3,
             convertLoss<SoftmaxCrossEntropyLossOp>);
  table.onOp("NegativeLogLikelihoodLoss", 13, 2, 3,
             convertLoss<NegativeLogLikelihoodLossOp>);
}
