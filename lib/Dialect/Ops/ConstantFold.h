//===- ConstantFold.h - folding over constant operands ---------*- C++ -*-===//
//
// Helpers the op folders of lib/Dialect/Ops share: element-wise evaluation
// with broadcasting and re-indexing of constant tensors, both bounded so a
// fold never materializes a large tensor.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_DIALECT_CONSTANTFOLD_H
#define MEMFIT_LIB_DIALECT_CONSTANTFOLD_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "memfit/Dialect/ShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace mlir::memfit::constfold {

/// Constant folding materializes at most this many elements, so that a fold
/// never turns a large computed tensor (a 2048x2048 mask) into a literal.
/// Splat results are folded at any size.
constexpr int64_t kMaxFoldElements = 1 << 14;

// Folders read a constant operand only through the element type its
// attribute has (a fold may meet IR that a pattern changed and no verifier
// has seen yet): they give up, never read an integer as a float or the
// reverse, when the types are not those their op's definition promises.

inline DenseElementsAttr getDense(Attribute a) {
  return dyn_cast_if_present<DenseElementsAttr>(a);
}

/// `a` as dense elements of element type `elt`; null otherwise.
inline DenseElementsAttr getDense(Attribute a, Type elt) {
  DenseElementsAttr d = getDense(a);
  return d && d.getElementType() == elt ? d : DenseElementsAttr();
}

/// Builds the `resultType` constant whose element at each multi-index is
/// `src[index(multiIndex)]`. Fails (null) when the result is too large or
/// `src` is not of the result's element type.
Attribute remapElements(DenseElementsAttr src, RankedTensorType resultType,
                        function_ref<int64_t(ArrayRef<int64_t>)> index);

/// The linear index into a tensor of `srcShape` (with `srcStrides`),
/// broadcast to the output, of the output multi-index `outIdx`.
int64_t broadcastIndex(ArrayRef<int64_t> srcShape, ArrayRef<int64_t> srcStrides,
                       ArrayRef<int64_t> outIdx);

/// Folds an element-wise op with broadcasting over constant operands by
/// applying `fn` to each tuple of operand elements; `fn` returns null to
/// give up (a division by zero, say).
Attribute foldElementwise(ArrayRef<Attribute> operands,
                          RankedTensorType resultType,
                          function_ref<Attribute(ArrayRef<Attribute>)> fn);

inline bool isUnsigned(Type t) { return t.isUnsignedInteger(); }

/// Folds an arithmetic binary op given integer and float implementations.
template <typename IntFn, typename FloatFn>
Attribute foldArith(ArrayRef<Attribute> operands, Type resultType, IntFn intFn,
                    FloatFn floatFn) {
  auto tensorType = cast<RankedTensorType>(resultType);
  Type elt = tensorType.getElementType();
  return foldElementwise(
      operands, tensorType, [&](ArrayRef<Attribute> a) -> Attribute {
        // Both operands of the result's element type, as the op's
        // inference promises.
        if (auto x = dyn_cast<IntegerAttr>(a[0])) {
          auto y = dyn_cast<IntegerAttr>(a[1]);
          if (!y || x.getType() != elt || y.getType() != elt)
            return {};
          std::optional<APInt> r =
              intFn(x.getValue(), y.getValue(), isUnsigned(elt));
          return r ? IntegerAttr::get(elt, *r) : Attribute();
        }
        auto x = dyn_cast<FloatAttr>(a[0]);
        auto y = dyn_cast<FloatAttr>(a[1]);
        if (!x || !y || x.getType() != elt || y.getType() != elt)
          return {};
        return FloatAttr::get(elt, floatFn(x.getValue(), y.getValue()));
      });
}

/// Folds a comparison given integer and float predicates.
template <typename IntFn, typename FloatFn>
Attribute foldCompare(ArrayRef<Attribute> operands, Type resultType,
                      Type operandElt, IntFn intFn, FloatFn floatFn) {
  auto tensorType = cast<RankedTensorType>(resultType);
  Builder b(resultType.getContext());
  return foldElementwise(
      operands, tensorType, [&](ArrayRef<Attribute> a) -> Attribute {
        // Both operands of `operandElt` (APInt and APFloat compare values
        // of one width and semantics only).
        auto typed = [&](auto attr) {
          return attr && attr.getType() == operandElt;
        };
        if (auto x = dyn_cast<IntegerAttr>(a[0])) {
          auto y = dyn_cast<IntegerAttr>(a[1]);
          return typed(x) && typed(y)
                     ? b.getBoolAttr(intFn(x.getValue(), y.getValue(),
                                           isUnsigned(operandElt)))
                     : Attribute();
        }
        auto x = dyn_cast<FloatAttr>(a[0]);
        auto y = dyn_cast<FloatAttr>(a[1]);
        return typed(x) && typed(y)
                   ? b.getBoolAttr(floatFn(x.getValue(), y.getValue()))
                   : Attribute();
      });
}

} // namespace mlir::memfit::constfold

#endif // MEMFIT_LIB_DIALECT_CONSTANTFOLD_H
