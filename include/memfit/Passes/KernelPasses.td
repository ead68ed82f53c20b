//===- KernelPasses.td - kernels: forming, raising, fusing -*- tablegen -*-===//
//
// Part of Passes.td (included at its end): the passes that make and shape
// the step's kernels: memfit-form-kernels, memfit-fold-transposes,
// memfit-accumulate, memfit-raise, memfit-raise-attention and memfit-fuse.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_PASSES_KERNELPASSES_TD
#define MEMFIT_PASSES_KERNELPASSES_TD

def MemfitFormKernelsPass : Pass<"memfit-form-kernels", "::mlir::func::FuncOp"> {
  let summary = "Wraps every op that needs generated code in a memfit.kernel";
  let description = [{
    Lowers a function to its kernels: each element-wise, normalization,
    reduction, loss and data-movement op (and `memfit.range`) moves into a
    `memfit.kernel` of its own whose inputs are the op's distinct operands.
    Contractions (`memfit.matmul`, `memfit.gemm`) stay outside: they become
    library calls (cuBLASLt, or a BLAS on the host). Views that only change
    the shape of a contiguous buffer (`reshape`, `flatten`, `squeeze`,
    `unsqueeze`) stay outside too and cost no memory or time. Splat
    constants (one value repeated) used by element-wise and data-movement
    ops are cloned into their kernels, where they become literals, instead
    of taking a buffer; row, reduction and loss ops read them as buffers.

    One op per kernel is the starting point; fusion merges kernels.

    ```
    memfit-opt model.onnx --input-shape=batch=2,seq=16 --memfit-form-kernels
    ```
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
}

def MemfitFoldTransposesPass
    : Pass<"memfit-fold-transposes", "::mlir::func::FuncOp"> {
  let summary = "Folds transposes into the contractions that read or write "
                "them (memfit-fuse's first rewrite on its own)";
  let description = [{
    Runs after `memfit-form-kernels`; the training pipeline runs it before
    `memfit-remat` when fusion is on, so that remat plans (and checks its
    budget on) the step without the transposed copies, and memfit-fuse runs
    it again after remat. The rewrite is memfit-fuse's "transposes into
    contractions": a kernel that only transposes a matrix (or swaps the
    last two dimensions of a batch) that contractions read becomes their
    transpose flags, and a transpose of a contraction's result that nothing
    else reads becomes the contraction with its operands swapped. The tied
    LM head reads the embedding as it is, and its weight gradient is
    computed in the embedding's layout.

    ```
    memfit-opt model.onnx --input-shape=batch=2,seq=16 \
        '--memfit-train-pipeline=loss=cross-entropy' --memfit-fold-transposes
    ```
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
}

def MemfitAccumulatePass : Pass<"memfit-accumulate", "::mlir::func::FuncOp"> {
  let summary = "Adds scattered rows in place into the gradient they are "
                "summed with";
  let description = [{
    Runs after `memfit-form-kernels`; the training pipeline runs it before
    `memfit-remat` when fusion is on, so that remat plans the step that
    runs. A kernel that only adds a scatter of rows (a kernel holding one
    `memfit.gather_grad`) to another step's result, which nothing else
    reads, becomes `memfit.gather_grad ... into` that result, at the
    scatter's place. A tied embedding's gradient is the LM head's weight
    gradient plus the embedding's rows, which autodiff scatters into a
    zeroed full-size tensor before a second kernel adds the two; after the
    rewrite the memory plan gives the sum the LM head gradient's buffer
    and the kernel reads and writes only the rows its indices select.
    Not for a sum that `memfit.assign` stores (a parameter's update has a
    buffer of its own), nor into an argument, a parameter or a constant.

    ```
    memfit-opt model.onnx --input-shape=batch=2,seq=16 \
        '--memfit-train-pipeline=loss=cross-entropy' --memfit-accumulate
    ```
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
}

def MemfitRaisePass : Pass<"memfit-raise", "::mlir::ModuleOp"> {
  let summary = "Raises spelled-out GELU, RMSNorm, LayerNorm, softmax and "
                "rotary embeddings to the named ops";
  let description = [{
    Exporters write these as chains of element-wise ops and reductions
    (torch.onnx below opset 17 or 20, Hugging Face modules that spell them
    out: GPT-2's `gelu_new`, Llama's `LlamaRMSNorm`). As a chain, the
    backward saves several full-size intermediates and each op is a kernel;
    the named op saves its input and is one kernel with a gradient rule of
    its own. Products and sums match in any association and operand order,
    with their constants folded (a relative tolerance of 1e-4 on each):

    - GELU, erf: `0.5 * x * (1 + erf(x / sqrt(2)))` (or `x * 0.70710678`);
    - GELU, tanh: `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`,
      with `x^3` as `pow(x, 3)` or `x * x * x`, or the inner sum as
      `x * (1 + 0.044715 x^2)`;
    - RMSNorm: `x / sqrt(mean(x^2) + eps)`, or `x * reciprocal(sqrt(...))`
      or `x * (1 / sqrt(...))`, `x^2` as `pow(x, 2)` or `x * x`, the mean
      over trailing dimensions with keepdims, then `* scale` when the scale
      broadcasts to the normalized shape (ones otherwise);
    - LayerNorm: `(x - m) / sqrt(mean((x - m)^2) + eps)` with `m = mean(x)`
      (the same divisions), then `* scale` and `+ bias` when present;
    - softmax: `exp(x - max(x)) / sum(exp(x - max(x)))` along one axis, or
      without the max (the raised op subtracts it, as torch does);
    - rotary embedding: `x * cos + concat(-x[..., h:], x[..., :h]) * sin`
      (memfit.rotary; cos and sin broadcast to x).

    Intermediates that other ops also read stay; the rest are erased. Run it
    before autodiff and mixed precision (in both pipelines, with fusion on).

    ```
    memfit-opt model.onnx --input-shape=batch=2,seq=16 \
        --pass-pipeline='builtin.module(func.func(memfit-raise))' \
        --mlir-pass-statistics
    ```
  }];
  let options = [
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write how many of each op were raised ('-': standard output)">,
  ];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
}

def MemfitRaiseAttentionPass
    : Pass<"memfit-raise-attention", "::mlir::ModuleOp"> {
  let summary = "Raises spelled-out scaled dot-product attention to "
                "memfit.attention";
  let description = [{
    Exporters write attention as `matmul(softmax(matmul(q, k^T) * scale
    + mask), v)`: the scores and probabilities, `[batch, heads, seq, seq]`
    each, are stored for the backward. memfit.attention keeps one
    log-sum-exp per query row instead, and its backward recomputes the
    scores. Matched, from the softmax (last axis, rank 4) whose only reader
    is the matmul with the values (or a dropout that it alone reads):

    - the scale: constant factors of the scores' product and of the
      query's and key's (as `mul` or `div` by a constant; the exporters
      scale the scores, or q and k by the square root of the scale each);
    - the key: `k^T` as a transpose that swaps its last two dimensions with
      whatever it also permutes (the transpose of the source is then kept),
      any other value transposed back;
    - masks: `where(hidden, fill, scores)` or `where(keep, scores, fill)`
      with a fill of `-inf` (the
      hidden keys of a row drop out; a row with every key hidden gives
      zeros where the spelled-out graph gives NaN), `scores + where(keep,
      0, fill)` with a fill of `-inf` or at most -1e30 (finfo.min: a row
      whose every key is hidden then attends to every key alike,
      `uniform_hidden_rows`), and `scores + mask` with any other float
      mask that does not depend on the scores. A boolean mask
      that folds to a constant lower triangle becomes `causal`, one of all
      ones none at all; a run-time mask is kept as the op's operand at its
      own (broadcast) shape;
    - a training-mode `memfit.dropout` of the probabilities (after the
      `where(is_nan(p), 0, p)` zeroing, where there is one) before the
      values: its ratio, seed, stream and step become the op's
      `dropout_ratio`, `dropout_seed`, `dropout_stream` and
      `dropout_step`, and the op keeps the same elements; an unread `memfit.dropout_mask` of the probabilities goes.

    A softmax that does not match stays spelled out, with the reason in
    the report: its probabilities, the dropout's result or the dropout's
    mask read elsewhere, a `where` whose fill is finite (a row with every
    key hidden would average every value), a rank other than 4.

    ```
    memfit-opt model.onnx --input-shape=batch=2,seq=16 \
        --pass-pipeline='builtin.module(memfit-raise-attention{report=-})'
    ```
  }];
  let options = [
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write which softmaxes became attention and which did not, with "
           "the reason ('-': standard output)">,
  ];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
}

def MemfitFusePass : Pass<"memfit-fuse", "::mlir::ModuleOp"> {
  let summary = "Fuses kernels: element-wise chains, row kernels, "
                "multi-tensor updates; folds transposes into contractions";
  let description = [{
    Runs after `memfit-form-kernels` and `memfit-remat`, in this order.

    Transposes into contractions: a kernel that only transposes a 2-D float
    value and feeds a gemm, a matmul's 2-D rhs (the lhs rows flattened by
    views) or a 2-D matmul's lhs becomes the gemm's transpose flag, and a
    transpose of a 2-D contraction's result that nothing else reads becomes
    the contraction with its operands swapped (the tied LM head needs no
    transposed copy, nor its gradient). A swap of the last two dimensions
    of a value of rank 3 or more that feeds a matmul becomes the matmul's
    `trans_a`/`trans_b` (attention's K^T), a swap back is the source
    itself, and the swap of a batched matmul's result that nothing else
    reads is the matmul with its operands swapped (the gradient of K^T).
    Not across an in-place update of the source, and not when the copy
    stays and the source would live longer.

    Views (`views`): a matmul operand that kernels only transposed or split
    off another value (through reshapes; the attention heads split off a
    QKV projection, the heads of the output's gradient) becomes a
    `memfit.strided_view` of that value, which the library call reads in
    place (an offset, a leading dimension and batch strides), when every
    reader of those kernels' results takes a view (the copies go) and no
    in-place update writes the value in between. A kernel that only
    transposes a float matmul's result, which nothing else reads, keeping
    the last dimension last, becomes the matmul's `result_perm` (the heads
    merged back are written in place).

    Producer-consumer fusion: a kernel is merged into the kernel that first
    reads its results, which then computes both in one pass over memory and
    also yields the results that later ops read; the intermediates that
    only it read are never stored. The merged kernel runs where the
    consumer ran and keeps its attributes, and its body holds both kernels'
    ops (so the emitted kernel lists both kernels' ONNX nodes). The two
    merge as pointwise kernels (element-wise ops, or data movement reading
    kernel inputs, the producer's results of the consumer's shape and read
    only by its element-wise ops) or as a row kernel (`rows`): a row op
    (reduce_sum, reduce_mean, reduce_max, layer_norm, rms_norm, softmax,
    log_softmax of floats) with the element-wise kernels that compute its
    input or read its result, and row ops of the same frame (one input
    shape, the same axes) in sequence. A row kernel runs a block per row:
    each row op's input is computed in its loops, row values once per
    block, full results in a last loop; element-wise work joins one only
    where it has 64 rows or more, or 65,536 elements at most. A merge is
    made only when

    - no in-place update (`memfit.assign`) of a parameter the producer
      reads runs between the two (nor any other op with side effects);
    - a row kernel would not read a parameter that it updates in place;
    - every other reader of the producer's results comes after the
      consumer;
    - the bytes the merge keeps live longer (the arena inputs the producer
      read last, now read at the consumer) are at most the bytes it frees
      (the producer's results that only the consumer read), or the bytes
      live at every step between the two stay at or below the most any
      step of the function holds (the peak stays where it was).

    Siblings: a row kernel runs inside a later one of the same frame that
    reads one of its inputs, when nothing reads its results before it and
    no input lives longer. Layer norm's backward, as autodiff writes it
    (thirteen kernels), becomes two row kernels and one kernel of the
    scale's and bias's column sums.

    Epilogues (`epilogues`, docs/passes.md): a kernel that only adds a
    vector to a matmul's result becomes the matmul as a `memfit.gemm` with
    that `c` (cuBLASLt's bias epilogue), and its tanh GELU a kernel after
    it marked `memfit.epilogue` (GELU_AUX_BIAS); a kernel that only sums
    the rows of an operand of the next `memfit.gemm` (a bias gradient)
    moves right before it, marked too (BGRAD); the kernels are fallbacks.

    Multi-tensor kernels (`multi-tensor`): a run of pointwise kernels whose
    results are all stored in place by `memfit.assign` (the optimizer's
    update of each parameter), with only parameter loads, constants and
    in-place updates between them, none reading another's results or a
    parameter that another updates, becomes one kernel of several segments
    (`memfit.segments`, each segment's result count) at the last kernel's
    place: one launch whose blocks each update a chunk of one segment, at
    most 400 buffers (CUDA's 4 KB of kernel parameters). The plan cannot
    grow (the inputs were all live at the first update, the results go to
    the weights); that is checked.

    Fusion does not make the step's plan larger: the merges keep the bytes
    live at every step under the unfused plan's peak, and where the plan's
    placement still comes out more than 2% larger than the unfused one's,
    or over the `budget` that the unfused one meets, the step is fused
    again without the merges that keep any bytes live longer, or, if even
    that is over, left unfused (with a remark). With
    `early-updates` the plans compared are those of the step after
    memfit-early-updates (which the training pipeline runs next). Dropout and the losses are not fused. `report` writes the kernel count
    before and after and every step's bytes, FLOPs, ops and ONNX nodes
    against the step's lower bound. `remat-report` appends the fused
    step's planned bytes to memfit-remat's report of the same path.

    ```
    memfit-opt model.onnx --input-shape=batch=2,seq=16 \
        --memfit-forward-pipeline --memfit-fuse=report=-
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"0",
           "At most this many ops in a fused kernel (0: no limit)">,
    Option<"budget", "budget", "::mlir::memfit::ByteSize",
           /*default=*/"::mlir::memfit::ByteSize{}",
           "The step's memory budget (memfit-remat's): a fused plan over it "
           "is not kept where the unfused one meets it (0: none)">,
    Option<"earlyUpdates", "early-updates", "bool", /*default=*/"false",
           "Compare the fused and unfused plans as memfit-early-updates, "
           "which runs next, will leave them">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write the kernel count before and after, each step's bytes, "
           "FLOPs, ops and ONNX nodes, and the lower bound ('-': standard "
           "output)">,
    Option<"rematReport", "remat-report", "std::string",
           /*default=*/"\"\"",
           "Append the fused step's planned weights and arena to "
           "memfit-remat's report at this path ('-': standard output)">,
    Option<"rows", "rows", "bool", /*default=*/"true",
           "Fuse reductions with their element-wise prologues and "
           "epilogues (row kernels)">,
    Option<"multiTensor", "multi-tensor", "bool", /*default=*/"true",
           "Run consecutive independent pointwise kernels (the optimizer's "
           "updates) as one multi-tensor kernel">,
    Option<"views", "views", "bool", /*default=*/"true",
           "Read matmul operands that were transposed or split copies in "
           "place (strided views) and write transposed results in place "
           "(result_perm)">,
    Option<"epilogues", "epilogues", "bool", /*default=*/"true",
           "Let contractions compute a linear layer's bias (a matmul and "
           "the kernel adding the bias become a gemm) and its gradient (the "
           "kernel summing the weight gradient's operand is marked "
           "memfit.epilogue, right before that gemm)">,
  ];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
}

#endif // MEMFIT_PASSES_KERNELPASSES_TD
