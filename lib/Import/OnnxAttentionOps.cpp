//===- OnnxAttentionOps.cpp - opset 23's Attention ------------------------===//
//
// ONNX Attention (opset 23), which exporters write for
// scaled_dot_product_attention at that opset, as memfit.attention: 4-D
// query, key and value [batch, heads, seq, head size], or 3-D [batch, seq,
// heads * head size] with q_num_heads and kv_num_heads; grouped-query heads;
// `is_causal` (the upper-left alignment, as memfit.attention's `causal`);
// `scale` (default 1 / sqrt(head size)); a boolean or additive mask that
// broadcasts to [batch, q heads, q seq, kv seq]. Refused, with the reason:
// a key-value cache (past_key, past_value and the present outputs; opset
// 24's nonpad_kv_seqlen), which a training step has no use for; `softcap`;
// opset 25's sliding windows; and the qk_matmul_output.
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// A 3-D [B, S, heads * size] input as [B, heads, S, size].
Value splitHeads(NodeContext &n, Value x, int64_t heads) {
  ArrayRef<int64_t> s = shapeOf(x);
  auto split = RankedTensorType::get({s[0], s[1], heads, s[2] / heads},
                                     eltOf(x));
  Value r = ReshapeOp::create(n.b, n.loc, split, x);
  return TransposeOp::create(n.b, n.loc, r, ArrayRef<int64_t>{0, 2, 1, 3});
}

/// The heads attribute of a 3-D input `i`, dividing its last dimension.
FailureOr<int64_t> headsOf(NodeContext &n, int64_t i, StringRef attr) {
  int64_t heads = n.intAttr(attr, 0);
  int64_t width = n.inputType(i).getShape()[2];
  if (heads <= 0 || width % heads != 0)
    return n.error() << "3-D input '" << n.node.input(i) << "' of shape "
                     << shapeToString(n.inputType(i).getShape()) << " needs "
                     << attr << " > 0 dividing its last dimension, got "
                     << heads,
           failure();
  return heads;
}

LogicalResult convertAttention(NodeContext &n) {
  if (n.hasInput(4) || n.hasInput(5))
    return n.error() << "past_key and past_value (a key-value cache) are not "
                        "supported: a training step attends over the whole "
                        "sequence";
  if (n.hasInput(6))
    return n.error() << "nonpad_kv_seqlen (an external key-value cache) is "
                        "not supported: a training step attends over the "
                        "whole sequence";
  for (StringRef window : {"left_window_size", "right_window_size"})
    if (int64_t size = n.intAttr(window, -1); size != -1)
      return n.error() << window << " " << size
                       << " (sliding-window attention) is not supported";
  if (n.hasOutput(1) || n.hasOutput(2))
    return n.error() << "the present_key and present_value outputs (a "
                        "key-value cache) are not supported";
  if (n.hasOutput(3))
    return n.error() << "the qk_matmul_output output is not supported: "
                        "memfit.attention never forms the score matrix";
  if (float softcap = n.floatAttr("softcap", 0.0f); softcap != 0.0f)
    return n.error() << "softcap " << softcap << " is not supported";
  int64_t rank = n.inputType(0).getRank();
  if ((rank != 3 && rank != 4) || n.inputType(1).getRank() != rank ||
      n.inputType(2).getRank() != rank)
    return n.error() << "expects query, key and value all of rank 4 or all "
                        "of rank 3, got "
                     << n.describeInputs();
  Value q = n.input(0), k = n.input(1), v = n.input(2);
  if (rank == 3) {
    FailureOr<int64_t> qHeads = headsOf(n, 0, "q_num_heads");
    if (failed(qHeads))
      return failure();
    FailureOr<int64_t> kvHeads = headsOf(n, 1, "kv_num_heads");
    if (failed(kvHeads))
      return failure();
    if (n.inputType(2).getShape()[2] % *kvHeads != 0)
      return n.error() << "value '" << n.node.input(2)
                       << "': kv_num_heads " << *kvHeads
                       << " does not divide its last dimension";
    q = splitHeads(n, q, *qHeads);
    k = splitHeads(n, k, *kvHeads);
    v = splitHeads(n, v, *kvHeads);
  }
  Value mask = n.hasInput(3) ? n.input(3) : Value();
  std::optional<ArrayRef<int64_t>> maskShape;
  if (mask)
    maskShape = shapeOf(mask);
  Shape result, rows;
  if (failed(n.rule([&](OptLoc loc) {
        return inferAttentionShapes(shapeOf(q), shapeOf(k), shapeOf(v),
                                    maskShape, result, rows, loc);
      })))
    return failure();
  float scale = n.floatAttr(
      "scale", 1.0f / std::sqrt(static_cast<float>(shapeOf(q)[3])));
  bool causal = n.intAttr("is_causal", 0) != 0;
  auto attention = AttentionOp::create(
      n.b, n.loc, q, k, v, AttentionOp::extrasOf(mask, Value()),
      n.b.getF32FloatAttr(scale),
      causal ? n.b.getUnitAttr() : UnitAttr(), UnitAttr(),
      /*dropout_ratio=*/FloatAttr(), /*dropout_seed=*/IntegerAttr(),
      /*dropout_stream=*/IntegerAttr());
  Value y = attention.getResult();
  if (rank == 3) {
    Value t = TransposeOp::create(n.b, n.loc, y, ArrayRef<int64_t>{0, 2, 1, 3});
    y = ReshapeOp::create(
        n.b, n.loc,
        RankedTensorType::get({result[0], result[2], result[1] * result[3]},
                              eltOf(y)),
        t);
  }
  return n.setResults(y);
}

} // namespace

void onnx_import::populateAttentionConverters(OpTable &table) {
  table.onOp("Attention", 23, 3, 6, convertAttention);
  // Opset 24 adds nonpad_kv_seqlen, opset 25 the window sizes.
  table.onOp("Attention", 24, 3, 7, convertAttention);
}
