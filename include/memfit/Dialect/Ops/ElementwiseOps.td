//===- ElementwiseOps.td - element-wise memfit ops ---------*- tablegen -*-===//
//
// Ops of class ElementWise: unary math and predicates, gelu, dropout,
// cast, trilu, and the binary ops and where with numpy-style broadcasting.
//
// Part of MemfitOps.td, which includes it after the classes every family
// uses (Memfit_Op, Memfit_InferredOp). The C++ of these ops (inference,
// verifiers, folders) is in lib/Dialect/Ops/ElementwiseOps.cpp, their gradient
// rules in lib/Dialect/Gradients/ElementwiseGradients.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPS_ELEMENTWISEOPS_TD
#define MEMFIT_DIALECT_OPS_ELEMENTWISEOPS_TD

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

class Memfit_UnaryOp<string mnemonic, string what, Type tensorType = Memfit_FloatTensor,
                     list<Trait> traits = []>
    : Memfit_Op<mnemonic, "ElementWise",
                !listconcat([Pure, SameOperandsAndResultType], traits)> {
  let summary = "element-wise " # what;
  let description = "Computes " # what # [{ of each element (ONNX semantics).

    ```mlir
    %y = memfit.}] # mnemonic # [{ %x : tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins tensorType:$input);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Memfit_NegOp : Memfit_UnaryOp<"neg", "negation", Memfit_NumericTensor> {
  let hasFolder = 1;
}
def Memfit_ExpOp : Memfit_UnaryOp<"exp", "the exponential"> {
  let precision = "Fp32";
  let flopsPerElement = 4;
}
def Memfit_LogOp : Memfit_UnaryOp<"log", "the natural logarithm"> {
  let precision = "Fp32";
  let flopsPerElement = 4;
}
def Memfit_SqrtOp : Memfit_UnaryOp<"sqrt", "the square root"> {
  let precision = "Fp32";
  let flopsPerElement = 4;
}
def Memfit_ReciprocalOp : Memfit_UnaryOp<"reciprocal", "the reciprocal 1/x"> {
  let precision = "Fp32";
}
def Memfit_ErfOp : Memfit_UnaryOp<"erf", "the Gauss error function"> {
  let flopsPerElement = 4;
}
def Memfit_TanhOp : Memfit_UnaryOp<"tanh", "the hyperbolic tangent"> {
  let flopsPerElement = 4;
}
def Memfit_SigmoidOp : Memfit_UnaryOp<"sigmoid", "the logistic sigmoid 1/(1+exp(-x))"> {
  let flopsPerElement = 4;
}
def Memfit_ReluOp : Memfit_UnaryOp<"relu", "max(x, 0)">;
def Memfit_SinOp : Memfit_UnaryOp<"sin", "the sine"> {
  let flopsPerElement = 4;
}
def Memfit_CosOp : Memfit_UnaryOp<"cos", "the cosine"> {
  let flopsPerElement = 4;
}
def Memfit_NotOp : Memfit_UnaryOp<"not", "the logical negation", Memfit_BoolTensor> {
  let hasFolder = 1;
}

def Memfit_IsNaNOp : Memfit_InferredOp<"is_nan", "ElementWise"> {
  let summary = "element-wise test for NaN (ONNX IsNaN)";
  let description = [{
    True where the element is NaN. The exporters' scaled-dot-product
    attention zeroes the probabilities of fully masked rows with it.

    ```mlir
    %n = memfit.is_nan %p : tensor<2x4x16x16xf32> -> tensor<2x4x16x16xi1>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input);
  let results = (outs Memfit_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let precision = "Follow";
}

def Memfit_IsInfOp : Memfit_InferredOp<"is_inf", "ElementWise"> {
  let summary = "element-wise test for infinities (ONNX IsInf)";
  let description = [{
    True where the element is +inf (with `detect_positive`) or -inf (with
    `detect_negative`).

    ```mlir
    %i = memfit.is_inf %x {detect_negative = false} : tensor<8xf32> -> tensor<8xi1>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_negative,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_positive);
  let results = (outs Memfit_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let precision = "Follow";
}

def Memfit_GeluOp : Memfit_Op<"gelu", "ElementWise", [Pure, SameOperandsAndResultType]> {
  let flopsPerElement = 8;
  let summary = "element-wise Gaussian error linear unit";
  let description = [{
    `x * Phi(x)` with `Phi` the standard normal CDF (`none`, through erf) or
    its tanh approximation (`tanh`), as ONNX Gelu (opset 20) and
    torch.nn.GELU.

    ```mlir
    %y = memfit.gelu tanh %x : tensor<2x16x128xf32>
    ```
  }];
  let arguments = (ins Memfit_GeluApproximation:$approximate, Memfit_FloatTensor:$input);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = "$approximate $input attr-dict `:` type($input)";
}

// The step a dropout draws its mask for: a 0-d i64 tensor, printed without
// its type.
def Memfit_DropoutStep : 0DTensorOf<[I64]> {
  let builderCall =
      "::mlir::RankedTensorType::get({}, $_builder.getIntegerType(64))";
}

def Memfit_DropoutOp : Memfit_Op<"dropout", "ElementWise",
    [AllTypesMatch<["input", "result"]>, Memfit_DropoutOpInterface]> {
  // Its random numbers.
  let flopsPerElement = 4;
  let summary = "training-mode dropout";
  let description = [{
    Zeroes each element with probability `ratio` and scales the rest by
    `1/(1-ratio)`. Only dropout in training mode is an op: the importer
    forwards the input of an inference-mode ONNX Dropout. Not pure: it draws
    random numbers. Which elements it keeps depends on `seed`, `stream` (the
    importer numbers a graph's dropouts), the element's index and `step`,
    a 0-d i64 operand (absent: step 0) that memfit-dropout-step makes the
    training step's counter, so that every step draws a new mask. A
    `memfit.dropout_mask` of the same attributes and step gives its mask,
    and its gradient is a dropout of the same attributes and step.

    ```mlir
    %y = memfit.dropout %x {ratio = 1.000000e-01 : f32, stream = 2 : i64} : tensor<2x16x32xf32>
    %z = memfit.dropout %x step %s {ratio = 1.000000e-01 : f32, stream = 2 : i64} : tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input,
                       Optional<Memfit_DropoutStep>:$dropout_step,
                       F32Attr:$ratio, OptionalAttr<I64Attr>:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat =
      "$input (`step` $dropout_step^)? attr-dict `:` type($input)";
  let hasVerifier = 1;
  let extraDecls = [{
    bool dropsElements() { return getRatio().convertToDouble() > 0; }
  }];
}

def Memfit_DropoutMaskOp : Memfit_Op<"dropout_mask", "ElementWise",
    [AllShapesMatch<["input", "result"]>, Memfit_DropoutOpInterface]> {
  let flopsPerElement = 4;
  let summary = "the mask of a training-mode dropout (ONNX Dropout's second output)";
  let description = [{
    True where `memfit.dropout` of the same `ratio`, `seed`, `stream` and
    `step` keeps the element. Reads only its input's shape.

    ```mlir
    %m = memfit.dropout_mask %x {ratio = 1.000000e-01 : f32, stream = 2 : i64} : tensor<2x16x32xf32> -> tensor<2x16x32xi1>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input,
                       Optional<Memfit_DropoutStep>:$dropout_step,
                       F32Attr:$ratio, OptionalAttr<I64Attr>:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Memfit_BoolTensor:$result);
  let assemblyFormat = "$input (`step` $dropout_step^)? attr-dict `:` "
                       "type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraDecls = [{
    bool dropsElements() { return getRatio().convertToDouble() > 0; }
  }];
}

def Memfit_CastOp : Memfit_Op<"cast", "ElementWise", [Pure, SameOperandsAndResultShape]> {
  let summary = "element type conversion (ONNX Cast)";
  let description = [{
    Converts each element to the result's element type: floats round to
    nearest even, floats to integers truncate toward zero, any non-zero value
    becomes true.

    Casts that memfit inserts say why in `reason`: `working-copy` (the low
    precision copy of an fp32 master weight), `lower` (the input of an op
    that runs in bf16 or fp16), `fp32` (the input of an op whose precision
    requirement is fp32), `keep-fp32` (the input of an op that the user
    kept in fp32), `promote` (operands of mixed types, widened), `result`
    (a function result keeps its type) and `gradient` (a gradient returns
    to its value's type). Casts from the model have none.

    A cast of a cast folds to one cast, or to nothing, when the middle type
    holds every value of the source type exactly (bf16 or f16 to f32 to
    anything).

    The 8-bit floats (f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ) and f4E2M1FN
    are ONNX's FLOAT8 and FLOAT4E2M1 types: casts to them round to nearest
    even and, with `saturate` (ONNX's attribute; absent means true), make
    values beyond the largest finite one that value; without it they become
    infinity (f8E5M2) or NaN. f4E2M1FN always saturates. The 4- and 2-bit
    integers wrap.

    ```mlir
    %y = memfit.cast %x : tensor<2x16xi64> to tensor<2x16xf32>
    %w16 = memfit.cast %w {reason = "working-copy"} : tensor<32x96xf32> to tensor<32x96xbf16>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input, OptionalAttr<StrAttr>:$reason,
                       OptionalAttr<BoolAttr>:$saturate);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let builders = [
    // The casts memfit inserts: a reason, saturating.
    OpBuilder<(ins "Type":$type, "Value":$input, "StringAttr":$reason), [{
      build($_builder, $_state, type, input, reason, BoolAttr());
    }]>
  ];
  let hasFolder = 1;
}

def Memfit_TriluOp : Memfit_Op<"trilu", "ElementWise", [Pure, SameOperandsAndResultType]> {
  let summary = "keeps the upper or lower triangle of the last two dimensions";
  let description = [{
    ONNX Trilu: with `upper`, keeps elements with `j - i >= k`, otherwise
    those with `j - i <= k`; the rest become zero. Causal masks come from it.

    ```mlir
    %m = memfit.trilu %x {upper = false, k = 0 : i64} : tensor<16x16xf32>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$upper,
                       DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Ops with broadcasting
//===----------------------------------------------------------------------===//

class Memfit_BroadcastOp<string mnemonic, string what, Type lhsType,
                         Type rhsType, Type resultType, list<Trait> traits = []>
    : Memfit_InferredOp<mnemonic, "ElementWise", traits> {
  let summary = "element-wise " # what # " with broadcasting";
  let description = "Computes " # what # [{ with numpy-style multidirectional
    broadcasting, as the ONNX op.

    ```mlir
    %z = memfit.}] # mnemonic # [{ %x, %y : tensor<2x16x32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins lhsType:$lhs, rhsType:$rhs);
  let results = (outs resultType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasFolder = 1;
}

def Memfit_AddOp : Memfit_BroadcastOp<"add", "addition", Memfit_NumericTensor,
                                      Memfit_NumericTensor, Memfit_NumericTensor, [Commutative]>;
def Memfit_SubOp : Memfit_BroadcastOp<"sub", "subtraction", Memfit_NumericTensor,
                                      Memfit_NumericTensor, Memfit_NumericTensor>;
def Memfit_MulOp : Memfit_BroadcastOp<"mul", "multiplication", Memfit_NumericTensor,
                                      Memfit_NumericTensor, Memfit_NumericTensor, [Commutative]>;
def Memfit_DivOp : Memfit_BroadcastOp<"div", "division", Memfit_NumericTensor,
                                      Memfit_NumericTensor, Memfit_NumericTensor>;
def Memfit_PowOp : Memfit_BroadcastOp<"pow", "power", Memfit_NumericTensor,
                                      Memfit_NumericTensor, Memfit_NumericTensor> {
  // An integer base gives an integer power: exact by repeated squaring for
  // an integer exponent (wrapping on overflow; 0 for a negative one unless
  // the base is 1 or -1), pow() in double truncated for a float one, as
  // onnxruntime.
  let flopsPerElement = 4;
  // fp32, except a small positive integer power (a product of a few
  // factors, as x * x * x in a spelled-out GELU): low where the low type
  // has fp32's range (bf16), since x^2 overflows fp16 beyond |x| = 256.
  let precision = "Custom";
  let extraDecls = [{
    ::mlir::memfit::Precision getPrecision();
  }];
}
def Memfit_FmodOp : Memfit_BroadcastOp<"fmod", "floating-point remainder, with the dividend's sign (C's fmod, ONNX Mod with fmod = 1)",
                                       Memfit_FloatTensor, Memfit_FloatTensor,
                                       Memfit_FloatTensor>;
def Memfit_EqualOp : Memfit_BroadcastOp<"equal", "equality", Memfit_Tensor,
                                        Memfit_Tensor, Memfit_BoolTensor, [Commutative]> {
  let precision = "Follow";
}
def Memfit_LessOp : Memfit_BroadcastOp<"less", "less-than", Memfit_NumericTensor,
                                       Memfit_NumericTensor, Memfit_BoolTensor> {
  let precision = "Follow";
}
def Memfit_GreaterOp : Memfit_BroadcastOp<"greater", "greater-than", Memfit_NumericTensor,
                                          Memfit_NumericTensor, Memfit_BoolTensor> {
  let precision = "Follow";
}
def Memfit_MaxOp : Memfit_BroadcastOp<"max", "maximum", Memfit_NumericTensor,
                                      Memfit_NumericTensor, Memfit_NumericTensor, [Commutative]>;
def Memfit_MinOp : Memfit_BroadcastOp<"min", "minimum", Memfit_NumericTensor,
                                      Memfit_NumericTensor, Memfit_NumericTensor, [Commutative]>;
def Memfit_AndOp : Memfit_BroadcastOp<"and", "logical and", Memfit_BoolTensor,
                                      Memfit_BoolTensor, Memfit_BoolTensor, [Commutative]>;
def Memfit_OrOp : Memfit_BroadcastOp<"or", "logical or", Memfit_BoolTensor,
                                     Memfit_BoolTensor, Memfit_BoolTensor, [Commutative]>;
def Memfit_XorOp : Memfit_BroadcastOp<"xor", "logical exclusive or", Memfit_BoolTensor,
                                      Memfit_BoolTensor, Memfit_BoolTensor, [Commutative]>;

def Memfit_WhereOp : Memfit_InferredOp<"where", "ElementWise"> {
  let summary = "element-wise selection with broadcasting";
  let description = [{
    `cond ? lhs : rhs` with three-way broadcasting (ONNX Where).

    ```mlir
    %y = memfit.where %m, %x, %ninf : tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32> -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Memfit_BoolTensor:$condition, Memfit_Tensor:$lhs, Memfit_Tensor:$rhs);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,`
    type($rhs) `->` type($result)
  }];
  let hasFolder = 1;
}

#endif // MEMFIT_DIALECT_OPS_ELEMENTWISEOPS_TD
