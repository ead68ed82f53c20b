//===- OnnxOpTable.cpp - the ONNX ops the importer converts ---------------===//
//
// The index of the importer's op converters: one populate function per
// group of ONNX ops, each in its own file, registers that group's
// converters with the op type, the first opset each handles and the input
// counts it takes; lookupConverter answers from the table they build.
//
//===----------------------------------------------------------------------===//

#include "OpTable.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <cassert>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

void OpTable::onOp(StringRef opType, int64_t since, int64_t minInputs,
                   int64_t maxInputs, Converter convert) {
  SmallVector<OpConverter, 1> &entries = ops[opType];
  auto *pos = llvm::partition_point(
      entries, [&](const OpConverter &e) { return e.sinceVersion < since; });
  assert((pos == entries.end() || pos->sinceVersion != since) &&
         "an op registered twice for one opset");
  entries.insert(pos, OpConverter{since, minInputs, maxInputs, convert});
}

const OpConverter *OpTable::lookup(StringRef domain, StringRef opType,
                                   int64_t opset) const {
  // Other domains' ops are keyed "domain.OpType".
  auto it = ops.find(domain.empty() || domain == "ai.onnx"
                         ? opType.str()
                         : (domain + "." + opType).str());
  if (it == ops.end())
    return nullptr;
  const OpConverter *found = nullptr;
  for (const OpConverter &e : it->second)
    if (e.sinceVersion <= opset)
      found = &e;
  return found;
}

const OpConverter *onnx_import::lookupConverter(StringRef domain,
                                                StringRef opType,
                                                int64_t opset) {
  static const OpTable table = [] {
    OpTable t;
    populateMathConverters(t);
    populateLogicConverters(t);
    populateCastConverters(t);
    populateContractionConverters(t);
    populateNormalizationConverters(t);
    populateReductionConverters(t);
    populateShapeConverters(t);
    populateIndexingConverters(t);
    populateConstantConverters(t);
    populateLossConverters(t);
    populateDropoutConverters(t);
    populateAttentionConverters(t);
    populateMicrosoftConverters(t);
    return t;
  }();
  return table.lookup(domain, opType, opset);
}
