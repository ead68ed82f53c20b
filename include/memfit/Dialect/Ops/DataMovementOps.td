//===- DataMovementOps.td - data-movement ops --------------*- tablegen -*-===//
//
// Ops of class DataMovement: views of a buffer (reshape, flatten,
// squeeze, unsqueeze, strided_view), index mappings (transpose, concat,
// slice, gathers, scatters, cumsum, topk_indices, expand), split, and
// gather_grad, the adjoint of gather.
//
// Part of MemfitOps.td, which includes it after the classes every family
// uses (Memfit_Op, Memfit_InferredOp). The C++ of these ops (inference,
// verifiers, folders) is in lib/Dialect/Ops/DataMovementOps.cpp, their gradient
// rules in lib/Dialect/Gradients/DataMovementGradients.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPS_DATAMOVEMENTOPS_TD
#define MEMFIT_DIALECT_OPS_DATAMOVEMENTOPS_TD

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

def Memfit_RotaryOp : Memfit_Op<"rotary", "DataMovement",
    [Pure, Memfit_IndexMapping, AllTypesMatch<["input", "result"]>,
     DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
  let summary = "rotary position embedding (rotate_half form)";
  let description = [{
    `x * cos + rotate_half(x) * sin` along the last dimension of 2h
    elements, `rotate_half(x) = concat(-x[..., h:], x[..., :h])`, with `cos`
    and `sin` broadcast to `x` (Hugging Face's apply_rotary_pos_emb, which
    memfit-raise finds spelled out): element i reads x at i and at its
    partner i + h or i - h. With `inverse`, the transposed map, the
    gradient: `g * cos` plus, for i < h, `g[i + h] * sin[i + h]` and, for
    i >= h, `-g[i - h] * sin[i - h]`.

    ```mlir
    %y = memfit.rotary %x, %cos, %sin : tensor<2x4x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>
    ```
  }];
  let arguments = (ins Memfit_FloatTensor:$input, Memfit_FloatTensor:$cos,
                       Memfit_FloatTensor:$sin, UnitAttr:$inverse);
  let results = (outs Memfit_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` type($input) `,` type($cos) `,`
    type($sin)
  }];
  let hasVerifier = 1;
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
  let summary = "an operand read in place from a larger tensor";
  let description = [{
    The result's element at index `i` is the input's element at flat
    (row-major) position `offset + sum(i[d] * strides[d])`: a slice, a
    permutation, or a slice of a permutation of the input's bytes, read in
    place. memfit-fuse makes these for the operands of matmuls and kernels
    that were copies (the attention heads split off a QKV projection); only
    matmuls (as their library call's offsets, leading dimensions and batch
    strides) and kernels (their code reads the input's buffer at the
    view's strides) read them, and the memory plan gives them the input's
    buffer.

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
    [Memfit_IndexMapping, Memfit_ChecksIndices, DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>]> {
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

def Memfit_GatherElementsOp : Memfit_InferredOp<"gather_elements", "DataMovement", [Memfit_IndexMapping, Memfit_ChecksIndices]> {
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

def Memfit_GatherNDOp : Memfit_InferredOp<"gather_nd", "DataMovement", [Memfit_IndexMapping, Memfit_ChecksIndices]> {
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

def Memfit_ScatterElementsOp : Memfit_InferredOp<"scatter_elements", "DataMovement", [Memfit_IndexMapping, Memfit_ChecksIndices]> {
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

def Memfit_ScatterNDOp : Memfit_InferredOp<"scatter_nd", "DataMovement", [Memfit_ChecksIndices]> {
  let summary = "writes slices at index tuples (ONNX ScatterND)";
  let description = [{
    With `k` the indices' last dimension, each tuple `indices[m, :]`
    addresses a slice of `data` over its first `k` axes, which `updates[m]`
    replaces or combines with by `reduction` (`add`, `mul`, `max`, `min`);
    `updates` has the shape `indices.shape[:-1] + data.shape[k:]`. Negative
    indices count from the back. With `none`, of tuples naming one slice the
    last wins. Its kernel copies the data and applies the updates in order,
    one thread per entry of a slice: the work is the data plus the updates.

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

def Memfit_TopKIndicesOp : Memfit_InferredOp<"topk_indices", "DataMovement"> {
  let flopsPerElement = 0;
  let summary = "the positions of the k largest or smallest entries along an axis (ONNX TopK)";
  let description = [{
    The result has the input's shape with `k` entries along `axis`: the
    positions of the input's `k` largest (`largest`, the default) or
    smallest entries along it, in order from the first; equal values keep
    their order (the lower position first) and NaN counts as larger than
    any number. TopK's values are `memfit.gather_elements` of the input at
    these positions. Its kernel selects the k entries of a row by a radix
    select and sorts them: O(n + k log k) for an axis of n entries.

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

#endif // MEMFIT_DIALECT_OPS_DATAMOVEMENTOPS_TD
