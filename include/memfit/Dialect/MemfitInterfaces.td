//===- MemfitInterfaces.td - memfit op interfaces ---------*- tablegen -*-===//
//
// Per-op behaviour that passes query without switching on op names. The
// foundation carries the classification used by reports and (later) fusion;
// gradient, cost and quantizability interfaces join it as their passes land.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_MEMFITINTERFACES_TD
#define MEMFIT_DIALECT_MEMFITINTERFACES_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Memfit_OpClass : I32EnumAttr<"OpClass", "what kind of computation an op is", [
    I32EnumAttrCase<"ElementWise", 0, "elementwise">,
    I32EnumAttrCase<"Reduction", 1, "reduction">,
    I32EnumAttrCase<"Normalization", 2, "normalization">,
    I32EnumAttrCase<"Contraction", 3, "contraction">,
    I32EnumAttrCase<"DataMovement", 4, "data_movement">,
    I32EnumAttrCase<"Constant", 5, "constant">,
    I32EnumAttrCase<"Loss", 6, "loss">]> {
  let cppNamespace = "::mlir::memfit";
  let genSpecializedAttr = 0;
}

def Memfit_OpClassInterface : OpInterface<"OpClassInterface"> {
  let cppNamespace = "::mlir::memfit";
  let description = [{
    Classifies a memfit op for reports and fusion: element-wise (one output
    element from the same-index input elements, broadcasting allowed),
    reduction, normalization (a row-wise reduction followed by element-wise
    work), contraction (a library call), data movement (a pure re-indexing),
    constant, or loss.
  }];
  let methods = [
    InterfaceMethod<"Returns the op's computation class.",
      "::mlir::memfit::OpClass", "getOpClass", (ins)>,
  ];
}

def Memfit_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::memfit";
  let description = [{
    The op's vector-Jacobian product: given the gradients of the loss with
    respect to the op's results, builds ordinary memfit ops that compute the
    gradients with respect to its operands. `memfit-autodiff` calls it on
    every op between the trainable parameters and the loss, in reverse
    order. The rules live in lib/Dialect/Gradients.cpp, attached to the ops
    as external models.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the operand gradients at the builder's insertion point.
        `resultGrads` has one entry per result, null where no gradient flows
        into that result. `operandGrads` is resized to the number of
        operands; an entry stays null where the operand gets no gradient
        (integer and boolean operands) or where `needsGrad` is false for it.
        Fails with a diagnostic on the op for a case the rule does not
        cover.
      }],
      "::mlir::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::ArrayRef<bool>":$needsGrad,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // MEMFIT_DIALECT_MEMFITINTERFACES_TD
