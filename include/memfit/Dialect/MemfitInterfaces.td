//===- MemfitInterfaces.td - memfit op interfaces ---------*- tablegen -*-===//
//
// Per-op behaviour that passes query without switching on op names:
//  - OpClassInterface: the computation class, for reports and fusion;
//  - CostOpInterface: FLOPs and bytes moved, for memfit-op-cost and the
//    recomputation prices of memfit-remat;
//  - GradientOpInterface: the vector-Jacobian product, for memfit-autodiff;
//  - DropoutOpInterface: ops that draw a dropout's mask, for
//    memfit-dropout-step.
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
    I32EnumAttrCase<"Loss", 6, "loss">,
    I32EnumAttrCase<"Quantization", 7, "quantization">,
    I32EnumAttrCase<"Attention", 8, "attention">,
    I32EnumAttrCase<"Collective", 9, "collective">]> {
  let cppNamespace = "::mlir::memfit";
  let genSpecializedAttr = 0;
}

def Memfit_Precision : I32EnumAttr<"Precision",
    "the floating-point type an op runs in under mixed precision", [
    I32EnumAttrCase<"Low", 0, "low">,
    I32EnumAttrCase<"Fp32", 1, "fp32">,
    I32EnumAttrCase<"Follow", 2, "follow">,
    I32EnumAttrCase<"LowWideRange", 3, "low_wide_range">]> {
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
    constant, loss, quantization, attention (a kernel of its own that
    streams keys and values past each query row), or collective (an
    exchange between ranks: a call into the communicator).

    It also states the op's precision requirement, which
    memfit-mixed-precision follows: `low` (the op may run in bf16 or fp16,
    reading and writing the low type while its kernel computes in fp32
    registers), `fp32` (the op's operands and results stay fp32),
    `low_wide_range` (low in bf16, whose exponent range is fp32's, but fp32
    under fp16, whose largest value is 65504: for results that can outgrow
    their operands, as x^2 does), or `follow` (the op runs in the type of
    its float operands, the widest when they differ). By class: contractions, element-wise ops and
    normalizations (softmax, layer and RMS norm: their kernels keep the
    statistics, a row's maximum, sum and variance, in fp32 registers) are
    `low`; reductions and losses are `fp32`; data movement and constants
    `follow`; attention is `low` (its kernels accumulate in fp32);
    collectives `follow` (they move the type they are given). Ops override it with `precision` in ODS: log-softmax (its
    log-probabilities feed a loss) and the element-wise functions that lose
    accuracy in a 7- or 10-bit mantissa (exp, log, pow, sqrt, reciprocal)
    are `fp32`, as in PyTorch's autocast lists, but `pow` by a constant 2,
    3 or 4 (a product of a few factors) is `low_wide_range`; comparisons
    `follow`.
  }];
  let methods = [
    InterfaceMethod<"Returns the op's computation class.",
      "::mlir::memfit::OpClass", "getOpClass", (ins)>,
    InterfaceMethod<"Returns the op's precision requirement.",
      "::mlir::memfit::Precision", "getPrecision", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::memfit::defaultPrecision($_op.getOpClass());
      }]>,
    InterfaceMethod<[{
        Whether result `index` stays f32 whatever type the op runs in: a
        statistic that a later op reads back, such as attention's
        log-sum-exp, which a 16-bit type would round to a few digits.
      }],
      "bool", "isFp32Result", (ins "unsigned":$index), /*methodBody=*/"",
      /*defaultImplementation=*/"return false;">,
  ];
}

def Memfit_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::memfit";
  let description = [{
    What running the op once costs: the floating-point operations it
    performs and the bytes it moves between memory and the processor. A
    rough, static model (no cache effects, no launch overhead) that ranks
    ops against one another; memfit-remat prices recomputation with it and
    memfit-op-cost prints it. The numbers live in lib/Dialect/CostModel.cpp.

    Bytes: every ranked-tensor operand read once plus every result written
    once, at the element type's width (i1 is one byte). A splat
    `memfit.constant` read inside a `memfit.kernel` counts nothing: the
    kernel holds it as a literal. Views (`reshape`, `flatten`, `squeeze`,
    `unsqueeze`), `parameter`, `load_parameter`, `constant` and `assign`
    move nothing (a view shares its source's buffer; weights and constants
    sit in the weights region; an assign is planned in place). `gather` and
    `slice` read only the elements they select (twice the result's bytes,
    plus the indices for gather); `negative_log_likelihood_loss` reads one
    input element per target.

    FLOPs, by op class (OpClassInterface), with the op's factor
    `getFlopsPerElement` (`flopsPerElement` in the op's ODS definition, 1
    unless it says otherwise):
    - element-wise: result elements times the factor: 1 for arithmetic,
      comparisons, selection, casts, masks and `reciprocal`; 4 for `exp`,
      `log`, `sqrt`, `erf`, `tanh`, `sigmoid`, `sin`, `cos`, `pow` and
      `dropout` (its random numbers); 8 for `gelu`;
    - reduction: the factor (1) per input element;
    - normalization (`softmax`, `log_softmax`, `layer_norm`, `rms_norm`):
      the factor (5) per input element;
    - loss: the factor per score: 5 for `softmax_cross_entropy_loss`, 7 for
      `softmax_cross_entropy_grad` (the softmax, the one-hot subtraction and
      the scaling by the loss gradient); `negative_log_likelihood_loss`
      counts its factor (2) per target, since it only picks one input per
      target;
    - data movement and constant: 0.

    Overrides: `matmul` is 2 * batch * M * N * K with the broadcast batch
    (2 * result elements * K); `gemm` is 2 * M * N * K, plus M * N for each
    of the alpha scale (alpha != 1), the bias add (with `c`) and the beta
    scale (with `c`, beta != 1); `gather_grad` is one addition per gradient
    element; a `memfit.kernel` does the FLOPs of its body ops and moves
    only its own inputs and results: the body's intermediate values stay in
    registers (an input that the body only gathers or slices from counts
    the elements selected, as for the ops themselves).
  }];
  let methods = [
    InterfaceMethod<[{
        FLOPs per element in the class-based model: per result element of
        an element-wise op, per input element of a reduction, normalization
        or loss. memfit ops set it with `flopsPerElement` in ODS.
      }],
      "int64_t", "getFlopsPerElement", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/"return 1;">,
    InterfaceMethod<"Returns the FLOPs and bytes of running the op once.",
      "::mlir::memfit::OpCost", "getCost", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::memfit::defaultOpCost($_op);
      }]>,
  ];
}

def Memfit_RowOpInterface : OpInterface<"RowOpInterface"> {
  let cppNamespace = "::mlir::memfit";
  let description = [{
    An op that computes over rows of its first operand: it reduces some of
    that operand's dimensions (the row) and keeps the others (one row per
    combination). The reductions, the normalizations and the softmaxes; a
    row kernel runs one thread block per row (RowFrame.h), memfit-fuse
    merges row kernels of one frame, the CUDA emitter writes a row
    template for the op.
  }];
  let methods = [
    InterfaceMethod<[{
        Returns the dimensions of the first operand that the op reduces, in
        increasing order, or failure when an axis is out of range.
      }],
      "::mlir::FailureOr<::llvm::SmallVector<int64_t>>", "getReducedDims",
      (ins)>,
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

def Memfit_DropoutOpInterface : OpInterface<"DropoutOpInterface"> {
  let cppNamespace = "::mlir::memfit";
  let description = [{
    An op that draws the mask of a training-mode dropout: memfit.dropout,
    memfit.dropout_mask, and memfit.attention and its gradient ops with a
    dropout on the probabilities. Which elements it keeps depends on its
    seed and stream (attributes), the element's index and its step: an
    optional 0-d i64 operand `dropout_step`, step 0 when absent.
    memfit-dropout-step gives every such op of a training step the step's
    counter, so that each call of the step draws new masks, and the
    forward, its recomputations and its gradient the same ones.
  }];
  let methods = [
    InterfaceMethod<"Whether the op drops anything (its ratio is above 0).",
      "bool", "dropsElements", (ins)>,
    InterfaceMethod<"The step operand; null when absent (step 0).",
      "::mlir::Value", "getDropoutStep", (ins)>,
    InterfaceMethod<"Makes `step` (a 0-d i64 tensor) the step operand.",
      "void", "setDropoutStep", (ins "::mlir::Value":$step), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        $_op.getDropoutStepMutable().assign(step);
      }]>,
  ];
}

#endif // MEMFIT_DIALECT_MEMFITINTERFACES_TD
