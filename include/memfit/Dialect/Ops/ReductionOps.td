//===- ReductionOps.td - normalizations and reductions -----*- tablegen -*-===//
//
// Ops that reduce along axes, and so run as row kernels: softmax,
// log_softmax, layer_norm, rms_norm (class Normalization) and the
// reductions (class Reduction). Each says which dimensions it reduces
// through RowOpInterface (RowFrame.h).
//
// Part of MemfitOps.td, which includes it after the classes every family
// uses (Memfit_Op, Memfit_InferredOp). The C++ of these ops (inference,
// verifiers, folders) is in lib/Dialect/Ops/ReductionOps.cpp, their gradient
// rules in lib/Dialect/Gradients/ReductionGradients.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPS_REDUCTIONOPS_TD
#define MEMFIT_DIALECT_OPS_REDUCTIONOPS_TD

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

class Memfit_SoftmaxBase<string mnemonic, string what>
    : Memfit_Op<mnemonic, "Normalization",
                [Pure, SameOperandsAndResultType,
                 DeclareOpInterfaceMethods<Memfit_RowOpInterface>]> {
  let flopsPerElement = 5;
  let summary = what # " along one axis";
  let description = "Computes " # what # [{ along `axis` (ONNX opset 13
    semantics: one axis, negative counts from the back).

    ```mlir
    %p = memfit.}] # mnemonic # [{ %x {axis = -1 : i64} : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Memfit_SoftmaxOp : Memfit_SoftmaxBase<"softmax", "the softmax">;
// Log-probabilities feed a loss: in bf16 they would lose 2-3 digits.
def Memfit_LogSoftmaxOp : Memfit_SoftmaxBase<"log_softmax", "the logarithm of the softmax"> {
  let precision = "Fp32";
}

def Memfit_LayerNormOp : Memfit_Op<"layer_norm", "Normalization",
    [Pure, AllTypesMatch<["input", "result"]>,
     DeclareOpInterfaceMethods<Memfit_RowOpInterface>]> {
  let flopsPerElement = 5;
  let summary = "layer normalization (ONNX LayerNormalization)";
  let description = [{
    Normalizes over the dimensions from `axis` to the last to zero mean and
    unit variance (`epsilon` added to the variance), then multiplies by
    `scale` and adds `bias`; both broadcast to the normalized shape.

    ```mlir
    %y = memfit.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 9.99999974E-6 : f32} : tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input, Memfit_FloatTensor:$scale,
                       Optional<Memfit_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` type($input) `,` type($scale)
    (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

def Memfit_RMSNormOp : Memfit_Op<"rms_norm", "Normalization",
    [Pure, AllTypesMatch<["input", "result"]>,
     DeclareOpInterfaceMethods<Memfit_RowOpInterface>]> {
  let flopsPerElement = 5;
  let summary = "root-mean-square normalization";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * scale`, the mean taken over the
    dimensions from `axis` to the last (ONNX RMSNormalization, opset 23).

    ```mlir
    %y = memfit.rms_norm %x, %g {axis = -1 : i64, epsilon = 9.99999997E-7 : f32} : tensor<2x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input, Memfit_FloatTensor:$scale,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Memfit_ReduceOp<string mnemonic, string what,
                      Type tensorType = Memfit_NumericTensor>
    : Memfit_InferredOp<mnemonic, "Reduction",
                        [DeclareOpInterfaceMethods<Memfit_RowOpInterface>]> {
  let summary = what # " over axes";
  let description = "Reduces `input` by " # what # [{ over `axes` (negative
    allowed; empty means all), keeping reduced dimensions as 1 when
    `keepdims` is set.

    ```mlir
    %s = memfit.}] # mnemonic # [{ %x {axes = array<i64: -1>, keepdims = true} : tensor<2x16x32xf32> -> tensor<2x16x1xf32>
    ```
  }];
  let arguments = (ins tensorType:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Memfit_ReduceSumOp : Memfit_ReduceOp<"reduce_sum", "the sum">;
def Memfit_ReduceMeanOp : Memfit_ReduceOp<"reduce_mean", "the mean">;
// Booleans too, as ONNX ReduceMax from opset 20: the maximum of booleans
// is whether any is true.
def Memfit_ReduceMaxOp : Memfit_ReduceOp<"reduce_max", "the maximum",
    StaticShapeTensorOf<[Memfit_FloatElt, Memfit_IntElt, I1]>>;

#endif // MEMFIT_DIALECT_OPS_REDUCTIONOPS_TD
