//===- MemfitOps.td - memfit op definitions ----------------*- tablegen -*-===//

#ifndef MEMFIT_DIALECT_MEMFITOPS_TD
#define MEMFIT_DIALECT_MEMFITOPS_TD

include "memfit/Dialect/MemfitDialect.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Ops whose result types follow from operands and attributes implement
// inferReturnTypes in MemfitOps.cpp with the functions of ShapeInference.h.
class Memfit_InferredOp<string mnemonic, string opClass, list<Trait> traits = []>
    : Memfit_Op<mnemonic, opClass, !listconcat([Pure, InferTypeOpAdaptor], traits)>;

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

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
  let arguments = (ins SymbolNameAttr:$sym_name, ElementsAttr:$value);
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
  let results = (outs StaticShapeTensorOf<[Memfit_FloatElt, Memfit_IndexElt]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Element-wise unary ops
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

def Memfit_DropoutOp : Memfit_Op<"dropout", "ElementWise", [SameOperandsAndResultType]> {
  // Its random numbers.
  let flopsPerElement = 4;
  let summary = "training-mode dropout";
  let description = [{
    Zeroes each element with probability `ratio` and scales the rest by
    `1/(1-ratio)`. Only dropout in training mode is an op: the importer
    forwards the input of an inference-mode ONNX Dropout. Not pure: it draws
    random numbers. Which elements it keeps depends on `seed`, `stream` (the
    importer numbers a graph's dropouts) and the element's index alone, so
    `memfit.dropout_mask` of the same attributes gives its mask, and its
    gradient is a dropout of the same attributes.

    ```mlir
    %y = memfit.dropout %x {ratio = 1.000000e-01 : f32, stream = 2 : i64} : tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input, F32Attr:$ratio,
                       OptionalAttr<I64Attr>:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Memfit_DropoutMaskOp : Memfit_Op<"dropout_mask", "ElementWise", [SameOperandsAndResultShape]> {
  let flopsPerElement = 4;
  let summary = "the mask of a training-mode dropout (ONNX Dropout's second output)";
  let description = [{
    True where `memfit.dropout` of the same `ratio`, `seed` and `stream`
    keeps the element. Reads only its input's shape.

    ```mlir
    %m = memfit.dropout_mask %x {ratio = 1.000000e-01 : f32, stream = 2 : i64} : tensor<2x16x32xf32> -> tensor<2x16x32xi1>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input, F32Attr:$ratio,
                       OptionalAttr<I64Attr>:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Memfit_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
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
// Element-wise ops with broadcasting
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

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Memfit_MatMulOp : Memfit_InferredOp<"matmul", "Contraction",
    [DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
  let summary = "matrix product with numpy semantics (ONNX MatMul)";
  let description = [{
    Multiplies the last two dimensions and broadcasts the leading (batch)
    dimensions; a 1-D operand is promoted to a matrix and the added
    dimension removed from the result, as numpy.matmul. With `trans_a` or
    `trans_b` (set by memfit-fuse, after autodiff), an operand of rank 2 or
    more is read with its last two dimensions swapped: the library's
    transpose flag instead of a transposed copy. With `result_perm` (also
    memfit-fuse's) the result is the product transposed by that permutation,
    written in place by the library call (its leading dimension and batch
    strides): the permutation keeps the last dimension last and needs
    operands of rank 2 or more.

    ```mlir
    %y = memfit.matmul %x, %w : tensor<2x16x32xf32>, tensor<32x96xf32> -> tensor<2x16x96xf32>
    %s = memfit.matmul %q, %k {trans_b = true} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
    %c = memfit.matmul %p, %v {result_perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
    ```
  }];
  let arguments = (ins Memfit_NumericTensor:$lhs, Memfit_NumericTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b,
                       OptionalAttr<DenseI64ArrayAttr>:$result_perm);
  let results = (outs Memfit_NumericTensor:$result);
  let builders = [
    OpBuilder<(ins "Value":$lhs, "Value":$rhs,
                   CArg<"bool", "false">:$transA,
                   CArg<"bool", "false">:$transB), [{
      build($_builder, $_state, lhs, rhs, transA, transB,
            ::mlir::DenseI64ArrayAttr());
    }]>
  ];
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Memfit_GemmOp : Memfit_InferredOp<"gemm", "Contraction",
    [DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
  let summary = "general matrix multiply (ONNX Gemm)";
  let description = [{
    `alpha * op(a) * op(b) + beta * c` on 2-D operands, where `op` transposes
    when `trans_a` / `trans_b` is set and `c` is optional and
    unidirectionally broadcast to the result.

    ```mlir
    %y = memfit.gemm %x, %w, %b {trans_b = true} : (tensor<2x32xf32>, tensor<3x32xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$a, Memfit_FloatTensor:$b,
                       Optional<Memfit_FloatTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0f">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0f">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

class Memfit_SoftmaxBase<string mnemonic, string what>
    : Memfit_Op<mnemonic, "Normalization", [Pure, SameOperandsAndResultType]> {
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
    [Pure, AllTypesMatch<["input", "result"]>]> {
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
    [Pure, AllTypesMatch<["input", "result"]>]> {
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

class Memfit_ReduceOp<string mnemonic, string what>
    : Memfit_InferredOp<mnemonic, "Reduction"> {
  let summary = what # " over axes";
  let description = "Reduces `input` by " # what # [{ over `axes` (negative
    allowed; empty means all), keeping reduced dimensions as 1 when
    `keepdims` is set.

    ```mlir
    %s = memfit.}] # mnemonic # [{ %x {axes = array<i64: -1>, keepdims = true} : tensor<2x16x32xf32> -> tensor<2x16x1xf32>
    ```
  }];
  let arguments = (ins Memfit_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Memfit_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Memfit_ReduceSumOp : Memfit_ReduceOp<"reduce_sum", "the sum">;
def Memfit_ReduceMeanOp : Memfit_ReduceOp<"reduce_mean", "the mean">;
def Memfit_ReduceMaxOp : Memfit_ReduceOp<"reduce_max", "the maximum">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Memfit_TransposeOp : Memfit_InferredOp<"transpose", "DataMovement", [Memfit_IndexMapping]> {
  let summary = "permutes dimensions";
  let description = [{
    Output dimension `i` is input dimension `perm[i]`.

    ```mlir
    %y = memfit.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Memfit_ReshapeOp : Memfit_Op<"reshape", "DataMovement", [Pure, Memfit_BufferView]> {
  let summary = "reinterprets the elements with another static shape";
  let description = [{
    Same elements in row-major order; the result type gives the shape (the
    importer resolves ONNX's 0 and -1 entries).

    ```mlir
    %y = memfit.reshape %x : tensor<2x16x32xf32> to tensor<2x16x4x8xf32>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Memfit_FlattenOp : Memfit_InferredOp<"flatten", "DataMovement", [Memfit_BufferView]> {
  let summary = "flattens into a matrix at an axis (ONNX Flatten)";
  let description = [{
    Result is 2-D: the product of dimensions before `axis` by the product of
    the rest.

    ```mlir
    %y = memfit.flatten %x {axis = 1 : i64} : tensor<2x3x4xf32> -> tensor<2x12xf32>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Memfit_SqueezeOp : Memfit_InferredOp<"squeeze", "DataMovement", [Memfit_BufferView]> {
  let summary = "removes dimensions of size 1";
  let description = [{
    Removes the listed dimensions, each of which must be 1; with no axes,
    every dimension of size 1.

    ```mlir
    %y = memfit.squeeze %x {axes = array<i64: 1>} : tensor<2x1x16xf32> -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Memfit_UnsqueezeOp : Memfit_InferredOp<"unsqueeze", "DataMovement", [Memfit_BufferView]> {
  let summary = "inserts dimensions of size 1";
  let description = [{
    `axes` index the output (negative counts from the output's back).

    ```mlir
    %y = memfit.unsqueeze %x {axes = array<i64: 1, 2>} : tensor<2x16xi64> -> tensor<2x1x1x16xi64>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Memfit_StridedViewOp : Memfit_Op<"strided_view", "DataMovement", [Pure, Memfit_BufferView]> {
  let summary = "a contraction operand read in place from a larger tensor";
  let description = [{
    The result's element at index `i` is the input's element at flat
    (row-major) position `offset + sum(i[d] * strides[d])`: a slice, a
    permutation, or a slice of a permutation of the input's bytes, read in
    place. memfit-fuse makes these for the operands of matmuls that were
    copies (the attention heads split off a QKV projection); only matmuls
    read them, as their library call's offsets, leading dimensions and
    batch strides, and the memory plan gives them the input's buffer.

    ```mlir
    %k = memfit.strided_view %qkv {offset = 256 : i64, strides = array<i64: 98304, 64, 768, 1>} : tensor<4x128x768xf32> -> tensor<4x4x128x64xf32>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input, I64Attr:$offset,
                       DenseI64ArrayAttr:$strides);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Memfit_ConcatOp : Memfit_InferredOp<"concat", "DataMovement", [Memfit_IndexMapping]> {
  let summary = "joins tensors along an axis";
  let description = [{
    All inputs agree but on `axis`.

    ```mlir
    %y = memfit.concat %a, %b {axis = -1 : i64} : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Memfit_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Memfit_SplitOp : Memfit_InferredOp<"split", "DataMovement", [Memfit_KernelReadsBuffers]> {
  let summary = "cuts a tensor into pieces along an axis";
  let description = [{
    Result `i` holds `sizes[i]` consecutive slices along `axis`; the sizes add
    up to the input's dimension.

    ```mlir
    %q, %k, %v = memfit.split %x {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : tensor<2x16x96xf32> -> tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input, I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Memfit_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
}

def Memfit_SliceOp : Memfit_InferredOp<"slice", "DataMovement",
    [Memfit_IndexMapping, DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
  let summary = "strided slice (ONNX Slice)";
  let description = [{
    For each listed axis, takes `starts[i]` to `ends[i]` (exclusive) by
    `steps[i]`; negative starts and ends count from the back and both are
    clamped as ONNX specifies, so `ends = INT64_MAX` means "to the end".

    ```mlir
    %y = memfit.slice %x {starts = array<i64: 0>, ends = array<i64: 16>, axes = array<i64: 2>, steps = array<i64: 1>} : tensor<1x1x64x64xi1> -> tensor<1x1x16x64xi1>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Memfit_GatherOp : Memfit_InferredOp<"gather", "DataMovement",
    [Memfit_IndexMapping, DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
  let summary = "selects entries along an axis by index (ONNX Gather)";
  let description = [{
    Embedding lookups and index selection: the result shape is
    `data.shape[:axis] + indices.shape + data.shape[axis+1:]`; negative
    indices count from the back.

    ```mlir
    %e = memfit.gather %wte, %ids {axis = 0 : i64} : tensor<96x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$data, Memfit_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` type($data) `,` type($indices) `->` type($result)
  }];
  let hasFolder = 1;
}

def Memfit_CumSumOp : Memfit_Op<"cumsum", "DataMovement", [Pure, SameOperandsAndResultType, Memfit_IndexMapping]> {
  let flopsPerElement = 1;
  let summary = "cumulative sum along an axis (ONNX CumSum)";
  let description = [{
    Each element is the sum of the input's elements up to it along `axis`:
    including it, or before it with `exclusive`; from the end with
    `reverse`. Exports compute position ids from a mask with it.

    ```mlir
    %p = memfit.cumsum %m {axis = 1 : i64} : tensor<2x16xi64>
    ```
  }];
  let arguments = (ins Memfit_NumericTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Memfit_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Memfit_GatherElementsOp : Memfit_InferredOp<"gather_elements", "DataMovement", [Memfit_IndexMapping]> {
  let summary = "selects one entry per index along an axis (ONNX GatherElements)";
  let description = [{
    The result has the indices' shape; the entry at `i` is `data` at `i`
    with its `axis` coordinate replaced by `indices[i]` (negative indices
    count from the back). Along the other axes the indices may be shorter
    than the data, not longer. Position and token-type ids of BERT's
    exports come from it.

    ```mlir
    %p = memfit.gather_elements %ids, %pos {axis = 1 : i64} : tensor<1x64xi64>, tensor<1x16xi64> -> tensor<1x16xi64>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$data, Memfit_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` type($data) `,` type($indices) `->` type($result)
  }];
  let hasFolder = 1;
}

def Memfit_GatherNDOp : Memfit_InferredOp<"gather_nd", "DataMovement", [Memfit_IndexMapping]> {
  let summary = "selects slices by index tuples (ONNX GatherND)";
  let description = [{
    With `b = batch_dims` and `k` the indices' last dimension, each tuple
    `indices[i, :]` addresses `data`'s axes `b` to `b + k - 1` (the first
    `b` axes are the batch, shared with the indices); the result shape is
    `indices.shape[:-1] + data.shape[b + k:]`. Negative indices count from
    the back. The dynamo exporter spells 2-D attention masks' expansion
    with it.

    ```mlir
    %m = memfit.gather_nd %mask, %idx : tensor<2x16xi1>, tensor<2x1x1x16x2xi64> -> tensor<2x1x1x16xi1>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$data, Memfit_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` type($data) `,` type($indices) `->` type($result)
  }];
  let hasFolder = 1;
}

def Memfit_ScatterElementsOp : Memfit_InferredOp<"scatter_elements", "DataMovement", [Memfit_IndexMapping]> {
  let summary = "writes entries at indices along an axis (ONNX ScatterElements)";
  let description = [{
    The result is `data` with, for each `j` of `indices` (and `updates`, of
    the same shape and `data`'s rank), the entry at `j` with its `axis`
    coordinate replaced by `indices[j]` (negative indices count from the
    back) set to `updates[j]`, or combined with it by `reduction` (`add`,
    `mul`, `max`, `min`). With `none`, of updates to one entry the last in
    row-major order wins. Each result entry looks along `axis` of the
    updates for the indices that name it.

    ```mlir
    %r = memfit.scatter_elements %x, %i, %u {axis = 1 : i64} : tensor<2x8xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$data, Memfit_IndexTensor:$indices,
                       Memfit_Tensor:$updates,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates attr-dict `:` type($data) `,` type($indices) `,` type($updates) `->` type($result)
  }];
}

def Memfit_ScatterNDOp : Memfit_InferredOp<"scatter_nd", "DataMovement", [Memfit_IndexMapping]> {
  let summary = "writes slices at index tuples (ONNX ScatterND)";
  let description = [{
    With `k` the indices' last dimension, each tuple `indices[m, :]`
    addresses a slice of `data` over its first `k` axes, which `updates[m]`
    replaces or combines with by `reduction` (`add`, `mul`, `max`, `min`);
    `updates` has the shape `indices.shape[:-1] + data.shape[k:]`. Negative
    indices count from the back. With `none`, of tuples naming one slice the
    last wins. Each result entry looks through every tuple.

    ```mlir
    %r = memfit.scatter_nd %x, %i, %u : tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$data, Memfit_IndexTensor:$indices,
                       Memfit_Tensor:$updates,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates attr-dict `:` type($data) `,` type($indices) `,` type($updates) `->` type($result)
  }];
}

def Memfit_TopKIndicesOp : Memfit_InferredOp<"topk_indices", "DataMovement", [Memfit_IndexMapping]> {
  let flopsPerElement = 0;
  let summary = "the positions of the k largest or smallest entries along an axis (ONNX TopK)";
  let description = [{
    The result has the input's shape with `k` entries along `axis`: the
    positions of the input's `k` largest (`largest`, the default) or
    smallest entries along it, in order from the first; equal values keep
    their order (the lower position first) and NaN counts as larger than
    any number. TopK's values are `memfit.gather_elements` of the input at
    these positions. Each result entry ranks every entry of its row against
    every other, so the cost grows with the square of the axis's length.

    ```mlir
    %i = memfit.topk_indices %x {axis = 1 : i64, k = 2 : i64} : tensor<3x4xf32> -> tensor<3x2xi64>
    ```
  }];
  let arguments = (ins Memfit_NumericTensor:$input, I64Attr:$axis, I64Attr:$k,
                       DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs Memfit_IndexTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Memfit_ExpandOp : Memfit_Op<"expand", "DataMovement", [Pure, Memfit_IndexMapping]> {
  let summary = "broadcasts a tensor to a larger shape (ONNX Expand)";
  let description = [{
    The result shape is the broadcast of the input shape with the ONNX shape
    operand, which the importer resolves into the result type.

    ```mlir
    %y = memfit.expand %x : tensor<1x1x16x16xi1> to tensor<2x4x16x16xi1>
    ```
  }];
  let arguments = (ins Memfit_Tensor:$input);
  let results = (outs Memfit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Memfit_SoftmaxCrossEntropyLossOp
    : Memfit_InferredOp<"softmax_cross_entropy_loss", "Loss"> {
  let flopsPerElement = 5;
  let summary = "softmax cross-entropy against integer labels";
  let description = [{
    ONNX SoftmaxCrossEntropyLoss: `scores` is `[N, C, d1, ...]`, `labels` is
    `[N, d1, ...]`; optional per-class `weights` of shape `[C]`. Labels equal
    to `ignore_index` contribute nothing. `reduction` is `none` (result
    shaped like the labels), `sum` or `mean` (scalar; the mean divides by the
    total weight of the labels not ignored).

    ```mlir
    %l = memfit.softmax_cross_entropy_loss mean %logits, %labels {ignore_index = -100 : i64} : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Memfit_LossReduction:$reduction, Memfit_FloatTensor:$scores,
                       Memfit_IndexTensor:$labels,
                       Optional<Memfit_FloatTensor>:$weights,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $scores `,` $labels (`,` $weights^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Memfit_NegativeLogLikelihoodLossOp
    : Memfit_InferredOp<"negative_log_likelihood_loss", "Loss",
        [DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
  // Per target: it picks one input element per target (weight, sum).
  let flopsPerElement = 2;
  let summary = "negative log-likelihood against integer targets";
  let description = [{
    ONNX NegativeLogLikelihoodLoss: `input` holds log-probabilities
    `[N, C, d1, ...]`, `target` is `[N, d1, ...]`; weights, `ignore_index` and
    `reduction` as in `softmax_cross_entropy_loss`.

    ```mlir
    %l = memfit.negative_log_likelihood_loss mean %logp, %target : (tensor<32x96xf32>, tensor<32xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Memfit_LossReduction:$reduction, Memfit_FloatTensor:$input,
                       Memfit_IndexTensor:$target,
                       Optional<Memfit_FloatTensor>:$weights,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $input `,` $target (`,` $weights^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def Memfit_GatherGradOp : Memfit_Op<"gather_grad", "DataMovement",
    [Pure, DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
  let summary = "the adjoint of gather: scatter-adds rows into zeros or "
                "into another gradient";
  let description = [{
    The gradient of `memfit.gather` with respect to its data: a tensor of
    the result type, zero everywhere (or `init` where it is given) except
    that for every index position `j`, `grad[..., j, ...]` is added at
    `result[..., indices[j], ...]` along `axis`. Negative indices count
    from the end of the axis, as in gather; out-of-range indices contribute
    nothing. Repeated indices add up in index order, so the result is
    deterministic.

    With `into %init` the rows are added to `init`, in place: the memory
    plan gives the result `init`'s buffer, and the kernel reads and writes
    only the rows that the indices select. Nothing may read `init` after
    it, and `init` must be a step's result (not an argument, a parameter or
    a constant). memfit-fuse writes it for a tied embedding, whose
    gradient is the LM head's plus the embedding's scattered rows.

    ```mlir
    %dw = memfit.gather_grad %dy, %ids {axis = 0 : i64} : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<96x32xf32>
    %dt = memfit.gather_grad %dy, %ids into %dhead {axis = 0 : i64} : (tensor<2x16x32xf32>, tensor<2x16xi64>, tensor<96x32xf32>) -> tensor<96x32xf32>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$grad, Memfit_IndexTensor:$indices,
                       I64Attr:$axis, Optional<Memfit_FloatTensor>:$init);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices (`into` $init^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Memfit_SoftmaxCrossEntropyGradOp
    : Memfit_Op<"softmax_cross_entropy_grad", "Loss", [Pure]> {
  // The softmax again, the one-hot subtraction, the scaling by the loss
  // gradient.
  let flopsPerElement = 7;
  let summary = "the gradient of softmax cross-entropy with respect to the scores";
  let description = [{
    For 2-D `scores` `[N, C]` and `labels` `[N]`: row `n` of the result is
    `(softmax(scores[n]) - onehot(labels[n])) * g` where `g` is the loss
    gradient `dloss` (a scalar for `sum` and `mean`, `[N]` for `none`),
    divided by the number of labels not equal to `ignore_index` for `mean`.
    Rows whose label is `ignore_index` are zero.

    ```mlir
    %d = memfit.softmax_cross_entropy_grad mean %logits, %labels, %g {ignore_index = -100 : i64} : (tensor<32x96xf32>, tensor<32xi64>, tensor<f32>) -> tensor<32x96xf32>
    ```
  }];
  let arguments = (ins Memfit_LossReduction:$reduction, Memfit_FloatTensor:$scores,
                       Memfit_IndexTensor:$labels, Memfit_FloatTensor:$dloss,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $scores `,` $labels `,` $dloss attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

def Memfit_QuantizeOp : Memfit_Op<"quantize", "Quantization", [Pure]> {
  // |x| for the block maximum, the division, the code search.
  let flopsPerElement = 10;
  let precision = "Fp32";
  let summary = "block-wise quantization: codes and one absmax per block";
  let description = [{
    Splits the input, flattened in row-major order, into blocks of
    `block_size` elements (the last one may be shorter) and returns, per
    block, its largest absolute value (`absmax`, f32) and, per element, the
    code whose value is nearest to `x / absmax` (QuantScheme, see
    include/memfit/Support/Quantization.h):

    - `linear`: i8 codes, round(127 x / absmax), one code per byte;
    - `dynamic` / `dynamic_unsigned`: ui8 indices into the 256-entry
      dynamic map of Dettmers et al. (bitsandbytes' `create_dynamic_map`,
      signed or unsigned), one per byte;
    - `nf4` / `fp4`: 4-bit indices into a 16-entry table (QLoRA's
      NormalFloat, bitsandbytes' FP4), two per byte, the first element in
      the high nibble.

    A block whose absmax is 0 gets code values that dequantize to 0. Per
    tensor is a block of the whole tensor; per row, a block of one row.

    ```mlir
    %q, %absmax = memfit.quantize dynamic %m {block_size = 256 : i64} : tensor<64x80xf32> -> tensor<5120xui8>, tensor<20xf32>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input, Memfit_QuantScheme:$scheme,
                       I64Attr:$block_size);
  let results = (outs StaticShapeTensorOf<[I8, UI8]>:$codes,
                      StaticShapeTensorOf<[F32]>:$absmax);
  let assemblyFormat = [{
    $scheme $input attr-dict `:` type($input) `->` type($codes) `,`
    type($absmax)
  }];
  let hasVerifier = 1;
}

def Memfit_DequantizeOp : Memfit_Op<"dequantize", "Quantization", [Pure]> {
  let flopsPerElement = 1;
  let precision = "Fp32";
  let summary = "the values of block-wise quantized codes";
  let description = [{
    The inverse of `memfit.quantize`: element `i` of the result (row-major)
    is the value of its code times the absmax of its block,
    `absmax[i / block_size]`. The result's shape is the quantized tensor's;
    its element type may be any float type (the product is rounded once).

    ```mlir
    %m = memfit.dequantize dynamic %q, %absmax {block_size = 256 : i64} : (tensor<5120xui8>, tensor<20xf32>) -> tensor<64x80xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[I8, UI8]>:$codes,
                       StaticShapeTensorOf<[F32]>:$absmax,
                       Memfit_QuantScheme:$scheme, I64Attr:$block_size);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $scheme $codes `,` $absmax attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
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

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def Memfit_KernelOp : Op<Memfit_Dialect, "kernel",
    [IsolatedFromAbove, RecursiveMemoryEffects, SingleBlock,
     DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
  let summary = "a group of ops that runs as one generated GPU kernel";
  let description = [{
    The unit of code generation: `memfit-form-kernels` wraps every op that
    is not a contraction or a view in its own kernel, and fusion later puts
    chains of element-wise ops and row-wise reductions into one. The body
    sees only its block arguments (the kernel's inputs, in order); the
    values given to `memfit.yield` are the kernel's results. The CUDA
    emitter turns each kernel into one `__global__` function whose
    parameters are the input buffers followed by the result buffers.

    ```mlir
    %y = memfit.kernel(%x, %b) : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32> {
    ^bb0(%a: tensor<2x16x32xf32>, %c: tensor<32xf32>):
      %s = memfit.add %a, %c : tensor<2x16x32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
      memfit.yield %s : tensor<2x16x32xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Memfit_Tensor>:$inputs);
  let results = (outs Variadic<Memfit_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// The ops of the body, without the terminator.
    auto getBodyOps() { return getBodyBlock().without_terminator(); }
    /// The input whose buffer result `index` is written into in place (a
    /// `memfit.gather_grad ... into` of that input), else null.
    ::mlir::Value getTiedInput(unsigned index);
  }];
}

def Memfit_YieldOp : Op<Memfit_Dialect, "yield",
    [Pure, Terminator, ReturnLike, HasParent<"KernelOp">]> {
  let summary = "the results of a kernel";
  let description = [{
    Terminates a `memfit.kernel` body; its operands are the kernel's
    results, in order.
  }];
  let arguments = (ins Variadic<Memfit_Tensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // MEMFIT_DIALECT_MEMFITOPS_TD
