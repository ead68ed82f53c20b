//===- OpTable.h - ONNX op converters by name and opset ---------*- C++ -*-===//
//
// The table of op converters, keyed by domain-qualified op type and the
// first opset of that domain each converter handles (torch-mlir's
// OnnxCustomOpConversionPattern and its `onOp("Gemm", 1, ...)` in
// miniature). Each group of ONNX ops has a file of converters with a
// populate function that registers them; OnnxOpTable.cpp builds the table
// from those functions, and is the index of what the importer converts.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_IMPORT_OPTABLE_H
#define MEMFIT_LIB_IMPORT_OPTABLE_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <limits>

namespace mlir::memfit::onnx_import {

class NodeContext;

/// Converts one node: reads its inputs and attributes, builds memfit ops and
/// binds its outputs; an error on the node when it cannot.
using Converter = LogicalResult (*)(NodeContext &);

/// The upper bound of the input count of an op that takes any number.
inline constexpr int64_t kVariadic = std::numeric_limits<int64_t>::max();

struct OpConverter {
  /// The first opset of the op's domain this entry handles.
  int64_t sinceVersion;
  /// The inputs a node must have, trailing omitted ones not counted; the
  /// first `minInputs` must not be omitted (GraphImporter checks both
  /// before `convert` runs).
  int64_t minInputs, maxInputs;
  Converter convert;
};

/// The op converters, by op type. An op outside the default domain is
/// named "domain.OpType" (e.g. "com.microsoft.FastGelu").
class OpTable {
public:
  /// Registers `convert` for `opType` from opset `since` of its domain on,
  /// for nodes with `minInputs` to `maxInputs` inputs.
  void onOp(StringRef opType, int64_t since, int64_t minInputs,
            int64_t maxInputs, Converter convert);

  /// The converter of `opType` of `domain` ("" or "ai.onnx" for the default
  /// domain) at that domain's `opset`: of the entries for the op, the one
  /// with the latest since-opset not after `opset`; null when there is none.
  const OpConverter *lookup(StringRef domain, StringRef opType,
                            int64_t opset) const;

private:
  /// Each op's entries, by increasing since-opset.
  llvm::StringMap<SmallVector<OpConverter, 1>> ops;
};

/// The converter of `opType` of `domain` at that domain's `opset` in the
/// importer's table (OnnxOpTable.cpp), or null when unsupported.
const OpConverter *lookupConverter(StringRef domain, StringRef opType,
                                   int64_t opset);

// The groups of ops, one file each: each registers its converters.

/// Element-wise math (OnnxMathOps.cpp): unary and binary arithmetic,
/// activations, variadic Max/Min/Sum/Mean, Trilu, and the ops composed of
/// them (Abs, Sign, Clip, Softplus, HardSigmoid, HardSwish, Mish, Mod).
void populateMathConverters(OpTable &table);
/// Comparison and logic (OnnxLogicOps.cpp): Equal, Less, Greater and their
/// OrEqual forms, Not, And, Or, Xor, IsNaN, IsInf, Where.
void populateLogicConverters(OpTable &table);
/// Casts (OnnxCastOps.cpp): Cast, CastLike.
void populateCastConverters(OpTable &table);
/// Contractions (OnnxContractionOps.cpp): MatMul, Gemm, Einsum.
void populateContractionConverters(OpTable &table);
/// Normalizations and softmax (OnnxNormalizationOps.cpp): Softmax,
/// LogSoftmax, LayerNormalization, RMSNormalization and onnxruntime's
/// SimplifiedLayerNormalization.
void populateNormalizationConverters(OpTable &table);
/// Reductions (OnnxReductionOps.cpp): ReduceSum, ReduceMean, ReduceMax,
/// ArgMax, ArgMin.
void populateReductionConverters(OpTable &table);
/// Shape and view ops (OnnxShapeOps.cpp): Identity, Transpose, Reshape,
/// Flatten, Squeeze, Unsqueeze, Expand, Concat, Split, Tile, Pad.
void populateShapeConverters(OpTable &table);
/// Indexing (OnnxIndexingOps.cpp): Gather, GatherElements, GatherND,
/// ScatterElements, ScatterND, Slice, TopK, CumSum.
void populateIndexingConverters(OpTable &table);
/// Constants and generators (OnnxConstantOps.cpp): Constant,
/// ConstantOfShape, Range, Shape, Size.
void populateConstantConverters(OpTable &table);
/// Losses (OnnxLossOps.cpp): SoftmaxCrossEntropyLoss,
/// NegativeLogLikelihoodLoss.
void populateLossConverters(OpTable &table);
/// Dropout (OnnxDropoutOps.cpp).
void populateDropoutConverters(OpTable &table);
/// Attention (OnnxAttentionOps.cpp): opset 23's Attention as
/// memfit.attention.
void populateAttentionConverters(OpTable &table);
/// onnxruntime's contrib domain, com.microsoft (OnnxMicrosoftOps.cpp):
/// SkipLayerNormalization, SkipSimplifiedLayerNormalization, FastGelu,
/// BiasGelu, Gelu.
void populateMicrosoftConverters(OpTable &table);

} // namespace mlir::memfit::onnx_import

#endif // MEMFIT_LIB_IMPORT_OPTABLE_H
