//===- ConstantFold.cpp - folding memfit ops over constant operands -------===//

#include "ConstantFold.h"

using namespace mlir;
using namespace mlir::memfit;

/// Builds the `resultType` constant whose element at each multi-index is
/// `src[index(multiIndex)]`. Fails (null) when the result is too large or
/// `src` is not of the result's element type.
Attribute constfold::remapElements(DenseElementsAttr src,
                              RankedTensorType resultType,
                              function_ref<int64_t(ArrayRef<int64_t>)> index) {
  if (src.getElementType() != resultType.getElementType())
    return {};
  if (src.isSplat())
    return DenseElementsAttr::get(resultType, src.getSplatValue<Attribute>());
  int64_t n = resultType.getNumElements();
  if (n > kMaxFoldElements)
    return {};
  SmallVector<Attribute> in(src.getValues<Attribute>());
  SmallVector<Attribute> out;
  out.reserve(n);
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    out.push_back(in[index(idx)]);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
  return DenseElementsAttr::get(resultType, out);
}

/// Index into `srcShape` (broadcast to `outShape`) for an output index.
int64_t constfold::broadcastIndex(ArrayRef<int64_t> srcShape,
                             ArrayRef<int64_t> srcStrides,
                             ArrayRef<int64_t> outIdx) {
  size_t offset = outIdx.size() - srcShape.size();
  int64_t linear = 0;
  for (size_t i = 0; i < srcShape.size(); ++i)
    if (srcShape[i] != 1)
      linear += outIdx[offset + i] * srcStrides[i];
  return linear;
}

/// Folds an element-wise op with broadcasting over constant operands by
/// applying `fn` to each tuple of operand elements; `fn` returns null to
/// give up (a division by zero, say).
Attribute
constfold::foldElementwise(ArrayRef<Attribute> operands, RankedTensorType resultType,
                      function_ref<Attribute(ArrayRef<Attribute>)> fn) {
  SmallVector<DenseElementsAttr> dense;
  for (Attribute a : operands) {
    DenseElementsAttr d = getDense(a);
    if (!d)
      return {};
    dense.push_back(d);
  }
  if (llvm::all_of(dense, [](DenseElementsAttr d) { return d.isSplat(); })) {
    SmallVector<Attribute> args;
    for (DenseElementsAttr d : dense)
      args.push_back(d.getSplatValue<Attribute>());
    Attribute r = fn(args);
    return r ? DenseElementsAttr::get(resultType, r) : Attribute();
  }
  int64_t n = resultType.getNumElements();
  if (n > kMaxFoldElements)
    return {};
  SmallVector<SmallVector<Attribute>> values;
  SmallVector<SmallVector<int64_t>> strides;
  for (DenseElementsAttr d : dense) {
    values.emplace_back(d.getValues<Attribute>());
    strides.push_back(stridesOf(d.getType().getShape()));
  }
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<int64_t> idx(shape.size(), 0);
  SmallVector<Attribute> out, args(dense.size());
  out.reserve(n);
  for (int64_t linear = 0; linear < n; ++linear) {
    for (auto [k, d] : llvm::enumerate(dense))
      args[k] = d.isSplat() ? values[k][0]
                            : values[k][broadcastIndex(d.getType().getShape(),
                                                       strides[k], idx)];
    Attribute r = fn(args);
    if (!r)
      return {};
    out.push_back(r);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
  return DenseElementsAttr::get(resultType, out);
}
