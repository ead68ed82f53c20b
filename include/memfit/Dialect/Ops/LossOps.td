//===- LossOps.td - losses and the loss gradient -----------*- tablegen -*-===//
//
// Ops of class Loss: the ONNX losses and softmax_cross_entropy_grad, the
// gradient memfit-autodiff builds for softmax cross-entropy;
// linear_cross_entropy and its gradient, the loss of an LM head that
// memfit-chunk-loss computes without storing the logits.
//
// Part of MemfitOps.td, which includes it after the classes every family
// uses (Memfit_Op, Memfit_InferredOp). The C++ of these ops (inference,
// verifiers, folders) is in lib/Dialect/Ops/LossOps.cpp, their gradient
// rules in lib/Dialect/Gradients/LossGradients.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPS_LOSSOPS_TD
#define MEMFIT_DIALECT_OPS_LOSSOPS_TD

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

def Memfit_LinearCrossEntropyOp
    : Memfit_InferredOp<"linear_cross_entropy", "Loss",
        [DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
  let summary = "softmax cross-entropy of an LM head's logits, never stored";
  let description = [{
    The loss `softmax_cross_entropy_loss(hidden . weight + bias, labels)` of
    `hidden` `[N, D]` and `weight` `[D, V]` (the LM head as MatMul's right
    operand; a tied head reads the embedding transposed), an optional
    `bias` `[V]` (BERT's masked-LM head has one), `labels` `[N]`,
    `reduction` `sum` or `mean`, labels equal to `ignore_index` contributing
    nothing. memfit-autodiff builds it for `loss=cross-entropy` when the
    model's output is such a contraction, so that no `[N, V]` logits tensor
    is ever held: memfit-chunk-loss computes it, and with
    `linear_cross_entropy_grad` the gradients, a chunk of rows at a time.

    ```mlir
    %l = memfit.linear_cross_entropy mean %h, %w, %labels {ignore_index = -100 : i64} : (tensor<16x32xf32>, tensor<32x96xf32>, tensor<16xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Memfit_LossReduction:$reduction,
                       Memfit_FloatTensor:$hidden, Memfit_FloatTensor:$weight,
                       Memfit_IndexTensor:$labels,
                       Optional<Memfit_FloatTensor>:$bias,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $hidden `,` $weight `,` $labels (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Memfit_LinearCrossEntropyGradOp
    : Memfit_InferredOp<"linear_cross_entropy_grad", "Loss",
        [DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
  let summary = "the gradients of linear_cross_entropy";
  let description = [{
    The gradients of `memfit.linear_cross_entropy` with the same operands
    and `dloss`, the loss's gradient (a scalar): `dhidden` `[N, D]` =
    `dlogits . weight^T`, `dweight` `[D, V]` = `hidden^T . dlogits` and,
    with a `bias`, `dbias` `[V]`, the sum of `dlogits` over the rows,
    where `dlogits = (softmax(hidden . weight + bias) - onehot(labels)) * dloss`
    (divided by the number of labels not ignored for `mean`; zero rows for
    ignored labels). memfit-chunk-loss computes the logits, the loss and
    these a chunk of rows at a time.

    ```mlir
    %dh, %dw = memfit.linear_cross_entropy_grad mean %h, %w, %labels, %g {ignore_index = -100 : i64} : (tensor<16x32xf32>, tensor<32x96xf32>, tensor<16xi64>, tensor<f32>) -> (tensor<16x32xf32>, tensor<32x96xf32>)
    ```
  }];
  let arguments = (ins Memfit_LossReduction:$reduction,
                       Memfit_FloatTensor:$hidden, Memfit_FloatTensor:$weight,
                       Memfit_IndexTensor:$labels, Memfit_FloatTensor:$dloss,
                       Optional<Memfit_FloatTensor>:$bias,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Memfit_FloatTensor:$dhidden,
                      Memfit_FloatTensor:$dweight,
                      Optional<Memfit_FloatTensor>:$dbias);
  let assemblyFormat = [{
    $reduction $hidden `,` $weight `,` $labels `,` $dloss (`bias` $bias^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // MEMFIT_DIALECT_OPS_LOSSOPS_TD
