//===- LossEmitters.cpp - losses and their gradients ------------------------===//
//
// The KernelEmitterOpInterface models of the loss templates:
//  - softmax_cross_entropy_loss and negative_log_likelihood_loss: one
//    thread per (sample, position) for reduction `none`; otherwise one
//    block whose threads add up the losses and weights;
//  - softmax_cross_entropy_grad: the row template of softmax, one block per
//    sample.
//
//===----------------------------------------------------------------------===//

#include "KernelWriter.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

namespace {

/// The loss of `scores` [N, C, d...] against integer `labels` [N, d...],
/// with optional per-class `weights`: from logits (softmax cross-entropy)
/// or from log-probabilities (negative log-likelihood).
LogicalResult emitLoss(KernelWriter &w, Operation *op, Value scores,
                       Value labels, Value weights,
                       std::optional<int64_t> ignoreIndex,
                       LossReduction reduction, bool fromLogits) {
  Shape shape(shapeOf(scores));
  if (shape.size() < 2)
    return w.error(op) << "scores need rank >= 2", failure();
  Type type = eltOf(scores);
  FailureOr<std::string> acc = accType(op, type);
  if (failed(acc))
    return failure();
  raw_ostream &os = w.body();
  bool d = type.isF64();
  int64_t classes = shape[1];
  int64_t inner = getNumElements(ArrayRef<int64_t>(shape).drop_front(2));
  int64_t rows = shape[0] * inner;
  std::string x = w.param(scores);
  auto xAt = [&](StringRef c) {
    return loadAs(
        *acc, type,
        llvm::formatv("{0}[base + ({1}) * {2}LL]", x, c, inner).str());
  };

  auto writeRow = [&](StringRef indent) {
    std::string i = indent.str();
    os << i << "const long long base = (r / " << inner << "LL) * "
       << classes * inner << "LL + r % " << inner << "LL;\n";
    os << i << "const long long label = (long long)" << w.param(labels)
       << "[r];\n";
    os << i << *acc << " loss = 0, w = 0;\n";
    std::string ii = i;
    if (ignoreIndex) {
      os << i << "if (label != " << intLiteral(*ignoreIndex) << ") {\n";
      ii += "  ";
    }
    os << ii << "if (label < 0 || label >= " << classes << "LL) {\n";
    os << ii << "  loss = " << floatLiteral(NAN, d) << ";\n";
    os << ii << "  w = 1;\n";
    os << ii << "} else {\n";
    os << ii << "  w = "
       << (weights ? loadAs(*acc, eltOf(weights), w.param(weights) + "[label]")
                   : floatLiteral(1.0, d))
       << ";\n";
    if (fromLogits) {
      os << ii << "  " << *acc << " m = " << floatLiteral(-INFINITY, d)
         << ";\n";
      os << ii << "  for (long long c = 0; c < " << classes
         << "LL; ++c) m = memfit_max(m, " << xAt("c") << ");\n";
      os << ii << "  " << *acc << " s = 0;\n";
      os << ii << "  for (long long c = 0; c < " << classes << "LL; ++c) s += "
         << mathFn("exp", type) << "(" << xAt("c") << " - m);\n";
      os << ii << "  loss = (m + " << mathFn("log", type) << "(s) - "
         << xAt("label") << ") * w;\n";
    } else {
      os << ii << "  loss = -" << xAt("label") << " * w;\n";
    }
    os << ii << "}\n";
    if (ignoreIndex)
      os << i << "}\n";
  };

  if (reduction == LossReduction::None) {
    w.threadLoop("r", rows);
    writeRow("  ");
    os << "  (void)w;\n";
    os << "  out0[r] = " << narrow(eltOf(op->getResult(0)), "loss") << ";\n";
    w.setPointwiseLaunch(rows);
    return success();
  }
  w.writeScratch(*acc);
  os << "  MEMFIT_PARTIAL(" << *acc << ", totals, 0);\n";
  os << "  MEMFIT_PARTIAL(" << *acc << ", weights, 0);\n";
  os << blockStrideLoop("r", rows) << " {\n";
  writeRow("    ");
  os << "    MEMFIT_LANE(totals, r) += loss;\n"
        "    MEMFIT_LANE(weights, r) += w;\n"
        "  }\n";
  os << "  const " << *acc << " total = memfit_block_sum(totals, scratch);\n";
  os << "  const " << *acc
     << " weight = memfit_block_sum(weights, scratch);\n";
  os << "  if (threadIdx.x == 0) out0[0] = "
     << narrow(eltOf(op->getResult(0)),
               reduction == LossReduction::Mean ? "total / weight" : "total")
     << ";\n";
  w.setSingleBlockLaunch();
  return success();
}

LogicalResult emitLossTemplate(SoftmaxCrossEntropyLossOp op, KernelWriter &w) {
  return emitLoss(w, op, op.getScores(), op.getLabels(), op.getWeights(),
                  op.getIgnoreIndex(), op.getReduction(),
                  /*fromLogits=*/true);
}

LogicalResult emitLossTemplate(NegativeLogLikelihoodLossOp op,
                               KernelWriter &w) {
  return emitLoss(w, op, op.getInput(), op.getTarget(), op.getWeights(),
                  op.getIgnoreIndex(), op.getReduction(),
                  /*fromLogits=*/false);
}

/// (softmax(scores[n]) - onehot(labels[n])) * g, one block per row.
LogicalResult emitLossTemplate(SoftmaxCrossEntropyGradOp op, KernelWriter &w) {
  Shape shape(shapeOf(op.getScores()));
  int64_t rows = shape[0], classes = shape[1];
  Type type = eltOf(op.getScores());
  FailureOr<std::string> acc = accType(op, type);
  if (failed(acc) || !isa<FloatType>(type))
    return w.error(op) << "unsupported element type " << type, failure();
  raw_ostream &os = w.body();
  bool d = type.isF64();
  std::string x = w.param(op.getScores());
  std::string labels = w.param(op.getLabels());
  std::string dloss = w.param(op.getDloss());
  std::optional<int64_t> ignoreIndex;
  if (op.getIgnoreIndex())
    ignoreIndex = static_cast<int64_t>(*op.getIgnoreIndex());
  std::string e = mathFn("exp", type);
  std::string at = loadAs(*acc, type, x + "[base + j]");
  std::string loop = blockStrideLoop("j", classes);

  w.writeScratch(*acc);
  os << "  const long long row = blockIdx.x;\n";
  os << "  const long long base = row * " << classes << "LL;\n";
  os << "  const long long label = (long long)" << labels << "[row];\n";
  // The loss gradient of this row; `mean` divides by the number of labels
  // not ignored, which every block counts for itself.
  std::string g = loadAs(
      *acc, eltOf(op.getDloss()),
      dloss + (op.getReduction() == LossReduction::None ? "[row]" : "[0]"));
  if (op.getReduction() == LossReduction::Mean) {
    if (ignoreIndex) {
      std::string count = w.writeReduction(
          *acc, /*isMax=*/false, "0", "r", rows,
          "((long long)" + labels + "[r] != " + intLiteral(*ignoreIndex) +
              " ? " + floatLiteral(1.0, d) + " : " + floatLiteral(0.0, d) +
              ")");
      os << "  const " << *acc << " count = " << count << ";\n";
      g += " / count";
    } else {
      g += " / " + floatLiteral(static_cast<double>(rows), d);
    }
  }
  if (ignoreIndex) {
    // The whole block takes this branch or none of it.
    os << "  if (label == " << intLiteral(*ignoreIndex) << ") {\n";
    os << "  " << loop << " out0[base + j] = " << narrow(type, "0") << ";\n";
    os << "    return;\n  }\n";
  }
  w.writeRowMaxSum(*acc, type, classes, at);
  os << "  const " << *acc << " g = " << g << ";\n";
  // A label out of range makes the loss NaN, and so its gradient.
  os << "  const bool valid = label >= 0 && label < " << classes << "LL;\n";
  os << loop << "\n    out0[base + j] = "
     << narrow(type, "valid ? (" + e + "(" + at + " - m) / s - (j == label ? " +
                         floatLiteral(1.0, d) + " : " + floatLiteral(0.0, d) +
                         ")) * g : " + floatLiteral(NAN, d))
     << ";\n";
  w.setRowLaunch(classes, rows);
  return success();
}

} // namespace

void cuda::attachLossEmitters(MLIRContext *context) {
  SoftmaxCrossEntropyLossOp::attachInterface<
      TemplateModel<SoftmaxCrossEntropyLossOp, emitLossTemplate>>(*context);
  NegativeLogLikelihoodLossOp::attachInterface<
      TemplateModel<NegativeLogLikelihoodLossOp, emitLossTemplate>>(*context);
  SoftmaxCrossEntropyGradOp::attachInterface<
      TemplateModel<SoftmaxCrossEntropyGradOp, emitLossTemplate>>(*context);
}
