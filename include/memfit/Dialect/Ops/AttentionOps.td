//===- AttentionOps.td - attention that keeps no score matrix -*- tablegen -*-===//
//
// Ops of class Attention: scaled dot-product attention as one op, and the
// two halves of its gradient. None of them holds a [batch, heads, seq, seq]
// tensor: the forward keeps one log-sum-exp per query row, the backward
// recomputes the scores from it tile by tile (FlashAttention-2).
//
// Part of MemfitOps.td, which includes it after the classes every family
// uses (Memfit_Op, Memfit_InferredOp). The C++ of these ops (inference,
// verifiers, cost) is in lib/Dialect/Ops/AttentionOps.cpp, their gradient
// rule in lib/Dialect/Gradients/AttentionGradients.cpp, their kernels in
// lib/Target/Cuda/AttentionEmitters.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPS_ATTENTIONOPS_TD
#define MEMFIT_DIALECT_OPS_ATTENTIONOPS_TD

def Memfit_AttentionMask
    : StaticShapeTensorOf<[I1, Memfit_FloatElt]>;

// The probability of dropping a probability; 0 (the default) is no dropout.
def Memfit_AttentionDropoutRatio : DefaultValuedAttr<F32Attr, "0.0f">;

// The optional operands, `extras`: a mask, then the dropout's step, each at
// most once (a mask is never a 0-d i64 tensor). One variadic group rather
// than two optional operands: operand segments need properties, which the
// dialect does not use.
def Memfit_AttentionExtra : AnyTypeOf<[Memfit_AttentionMask, Memfit_DropoutStep]>;

// What the three attention ops share: the operands' layout, the scale, the
// causal flag, the mask, the dropout on the probabilities, and a cost of
// their own. getMask() and getDropoutStep() pick the extras (null when
// absent); AttentionOps.cpp defines them.
class Memfit_AttentionBase<string mnemonic, list<Trait> traits = []>
    : Memfit_InferredOp<mnemonic, "Attention",
        !listconcat([DeclareOpInterfaceMethods<Memfit_CostOpInterface,
                                                ["getCost"]>,
                     Memfit_DropoutOpInterface], traits)> {
  let hasVerifier = 1;
  code attentionDecls = [{
    /// The extras of a mask and a step, either null.
    static ::llvm::SmallVector<::mlir::Value, 2>
    extrasOf(::mlir::Value mask, ::mlir::Value step) {
      ::llvm::SmallVector<::mlir::Value, 2> extras;
      for (::mlir::Value value : {mask, step})
        if (value)
          extras.push_back(value);
      return extras;
    }
    ::mlir::Value getMask();
    ::mlir::Value getDropoutStep();
    void setDropoutStep(::mlir::Value step);
    bool dropsElements() { return getDropoutRatio().convertToDouble() > 0; }
  }];
  let extraDecls = attentionDecls;
}

def Memfit_AttentionOp : Memfit_AttentionBase<"attention"> {
  let summary = "scaled dot-product attention with a saved log-sum-exp";
  let description = [{
    `softmax(query . key^T * scale + mask) . value` over the heads, with
    `query` `[B, Hq, S, D]`, `key` `[B, Hkv, T, D]` and `value`
    `[B, Hkv, T, Dv]`. Grouped-query heads: `Hq` is a multiple of `Hkv`,
    and query head `h` reads key and value head `h / (Hq / Hkv)`.

    `causal`: query `i` sees keys `j <= i` (the top-left alignment of
    PyTorch's `scaled_dot_product_attention(is_causal=True)`). `mask`, of
    rank 4 at most and broadcast to `[B, Hq, S, T]`: boolean (true where the
    query sees the key, as in PyTorch and ONNX) or of the query's float type
    (added to the scaled scores; `-inf` hides a key). A query that sees no
    key gets zeros and a log-sum-exp of `-inf`; with `uniform_hidden_rows`
    it attends to every key alike instead (mask and causal flag aside), as
    a finite fill such as `finfo.min` does in the spelled-out graph, where
    every score of such a row rounds to the fill; its log-sum-exp is then
    `+inf`, which tells the gradient ops.

    `dropout_ratio` (0 by default: none), `dropout_seed`, `dropout_stream`
    and the optional `dropout_step` operand: a training-mode dropout of the
    probabilities before they meet the values, exactly `memfit.dropout` of
    `ratio`, `seed`, `stream` and `step` applied to the `[B, Hq, S, T]`
    probability tensor (element `((b * Hq + h) * S + i) * T + j`), so the
    op keeps the elements that the spelled-out graph's dropout keeps.

    Results: the attention `[B, Hq, S, Dv]` in the query's type, and
    `logsumexp` `[B, Hq, S]` in f32, `max + log(sum(exp(score - max)))` of
    each query's row (before any dropout), which the backward reads
    instead of the scores. The kernel streams the keys in tiles with an
    online softmax: no score is stored.

    ```mlir
    %o, %lse = memfit.attention causal %q, %k, %v scale 0.125 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
    %od, %lsed = memfit.attention causal %q, %k, %v dropout_step %s scale 0.125 {dropout_ratio = 1.000000e-01 : f32, dropout_stream = 2 : i64} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<i64>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$query, Memfit_FloatTensor:$key,
                       Memfit_FloatTensor:$value,
                       Variadic<Memfit_AttentionExtra>:$extras,
                       F32Attr:$scale, UnitAttr:$causal,
                       UnitAttr:$uniform_hidden_rows,
                       Memfit_AttentionDropoutRatio:$dropout_ratio,
                       OptionalAttr<I64Attr>:$dropout_seed,
                       DefaultValuedAttr<I64Attr, "0">:$dropout_stream);
  let results = (outs Memfit_FloatTensor:$result,
                      Memfit_FloatTensor:$logsumexp);
  let assemblyFormat = [{
    (`causal` $causal^)? (`uniform_hidden_rows` $uniform_hidden_rows^)?
    $query `,` $key `,` $value `` custom<AttentionExtras>($extras)
    `scale` $scale attr-dict `:` functional-type(operands, results)
  }];
  let extraDecls = attentionDecls # [{
    /// The log-sum-exp stays f32 under mixed precision.
    bool isFp32Result(unsigned index) { return index == 1; }
  }];
}

// The gradient ops read what the forward kept: the operands, the
// log-sum-exp, and `delta`, each query row's sum of dresult * result.
class Memfit_AttentionGradOp<string mnemonic, string what, dag outs>
    : Memfit_AttentionBase<mnemonic> {
  let summary = "the gradient of attention with respect to " # what;
  let arguments = (ins Memfit_FloatTensor:$query, Memfit_FloatTensor:$key,
                       Memfit_FloatTensor:$value,
                       Memfit_FloatTensor:$logsumexp,
                       Memfit_FloatTensor:$delta,
                       Memfit_FloatTensor:$dresult,
                       Variadic<Memfit_AttentionExtra>:$extras,
                       F32Attr:$scale, UnitAttr:$causal,
                       UnitAttr:$uniform_hidden_rows,
                       Memfit_AttentionDropoutRatio:$dropout_ratio,
                       OptionalAttr<I64Attr>:$dropout_seed,
                       DefaultValuedAttr<I64Attr, "0">:$dropout_stream);
  let results = outs;
  let assemblyFormat = [{
    (`causal` $causal^)? (`uniform_hidden_rows` $uniform_hidden_rows^)?
    $query `,` $key `,` $value `,` $logsumexp `,`
    $delta `,` $dresult `` custom<AttentionExtras>($extras) `scale` $scale
    attr-dict `:` functional-type(operands, results)
  }];
}

def Memfit_AttentionGradQueryOp
    : Memfit_AttentionGradOp<"attention_grad_query", "the queries",
                             (outs Memfit_FloatTensor:$dquery)> {
  let description = [{
    The queries' gradient of `memfit.attention` with the same `query`,
    `key`, `value`, `mask`, `scale`, `causal`, dropout attributes and
    step:
    `dresult` is the gradient of its result, `logsumexp` its second result
    and `delta` `[B, Hq, S]` (f32) the sum over the last axis of
    `dresult * result`. Each query row recomputes its probabilities
    `p = exp(score - logsumexp)` key by key; `dquery = scale * sum_j
    p * (z_j * dresult . value_j - delta) * key_j`, with `z_j` the
    dropout's factor of the pair (`1 / (1 - ratio)` kept, 0 dropped; 1
    without dropout).

    ```mlir
    %dq = memfit.attention_grad_query causal %q, %k, %v, %lse, %delta, %do scale 0.125 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
    ```
  }];
}

def Memfit_AttentionGradKeyValueOp
    : Memfit_AttentionGradOp<"attention_grad_key_value", "the keys and values",
                             (outs Memfit_FloatTensor:$dkey,
                                   Memfit_FloatTensor:$dvalue)> {
  let description = [{
    The keys' and values' gradients of `memfit.attention`, operands as for
    `memfit.attention_grad_query`. Each key row goes over the queries that
    see it (of every query head of its group), recomputing
    `p = exp(score - logsumexp)`: `dvalue = sum_i z_i * p * dresult_i`,
    `dkey = scale * sum_i p * (z_i * dresult_i . value - delta_i) *
    query_i`, with `z_i` the dropout's factor of the pair.

    ```mlir
    %dk, %dv = memfit.attention_grad_key_value causal %q, %k, %v, %lse, %delta, %do scale 0.125 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>)
    ```
  }];
}

#endif // MEMFIT_DIALECT_OPS_ATTENTIONOPS_TD
