//===- StorageOps.td - parameters, constants, assign -------*- tablegen -*-===//
//
// The ops of class Constant: model weights and training states at module
// level (parameter, load_parameter, assign) and constant tensors (constant,
// range). They run no kernel of their own.
//
// Part of MemfitOps.td, which includes it after the classes every family
// uses (Memfit_Op, Memfit_InferredOp). The C++ of these ops (inference,
// verifiers, folders) is in lib/Dialect/Ops/StorageOps.cpp, their gradient
// rules in lib/Dialect/Gradients/StorageGradients.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPS_STORAGEOPS_TD
#define MEMFIT_DIALECT_OPS_STORAGEOPS_TD

def Memfit_ParameterOp : Memfit_Op<"parameter", "Constant",
    [Symbol, HasParent<"::mlir::ModuleOp">, Memfit_RunsNothing]> {
  let summary = "a named model weight (an ONNX initializer)";
  let description = [{
    Declares a weight of the model at module level. Its value is an elements
    attribute, a `dense_resource` blob for anything but the smallest weights,
    so the IR never prints weights as literals. Functions read it with
    `memfit.load_parameter`. The symbol is the ONNX initializer's name.

    ```mlir
    memfit.parameter @"wte.weight" = dense_resource<wte> : tensor<96x32xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Memfit_ElementsAttr:$value);
  let assemblyFormat = "$sym_name `=` $value attr-dict";
  let hasVerifier = 1;
  let extraDecls = [{
    ::mlir::RankedTensorType getType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getValue().getType());
    }
  }];
}

def Memfit_LoadParameterOp : Memfit_Op<"load_parameter", "Constant",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>, Memfit_RunsNothing]> {
  let summary = "reads a model weight";
  let description = [{
    Yields the tensor of the `memfit.parameter` named by `name`; the result
    type equals the parameter's.

    ```mlir
    %w = memfit.load_parameter @"wte.weight" : tensor<96x32xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Memfit_ConstantOp : Memfit_Op<"constant", "Constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>, Memfit_RunsNothing]> {
  let summary = "a constant tensor";
  let description = [{
    A constant tensor, from an ONNX Constant or ConstantOfShape node, a small
    or non-float initializer, or a folded shape computation.

    ```mlir
    %c = memfit.constant dense<[2, 16, 4, 8]> : tensor<4xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Memfit_RangeOp : Memfit_Op<"range", "Constant", [Pure, Memfit_IndexMapping]> {
  let summary = "an arithmetic sequence (ONNX Range)";
  let description = [{
    `result[i] = start + i * delta` for `i` in `[0, n)`, where `n` is the
    static length of the 1-D result. `start` and `delta` are typed like the
    result's elements. Folds to a constant when the result is small.

    ```mlir
    %p = memfit.range {start = 0 : i64, delta = 1 : i64} : tensor<16xi64>
    ```
  }];
  let arguments = (ins TypedAttrInterface:$start, TypedAttrInterface:$delta);
  // ONNX Range's types.
  let results = (outs StaticShapeTensorOf<[Memfit_FloatElt, I16, I32, I64]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Memfit_AssignOp : Memfit_Op<"assign", "Constant",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemWrite]>, Memfit_RunsNothing]> {
  let summary = "overwrites a parameter or training state in place";
  let description = [{
    Stores `value` into the module-level `memfit.parameter` named by `name`:
    the optimizer's parameter and state updates, and gradient accumulation.
    The memory plan writes the producing kernel's result straight into the
    parameter's storage when every read of the parameter comes before that
    kernel. A function must not read a parameter after assigning it.

    ```mlir
    memfit.assign @"wte.weight", %w1 : tensor<96x32xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name, Memfit_Tensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
}

#endif // MEMFIT_DIALECT_OPS_STORAGEOPS_TD
