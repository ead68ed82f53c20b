//===- Passes.td - memfit passes ---------------------------*- tablegen -*-===//

#ifndef MEMFIT_PASSES_TD
#define MEMFIT_PASSES_TD

include "mlir/Pass/PassBase.td"

def MemfitModelSummaryPass : Pass<"memfit-model-summary", "::mlir::ModuleOp"> {
  let summary = "Prints a model's parameters, bytes by element type and op counts";
  let description = [{
    Prints a summary of the module to standard output (or `output`): the
    number of parameters and parameter tensors, the bytes that parameters
    and constants take by element type, the functions' inputs and outputs,
    and op counts by computation class (from the OpClassInterface) and by op
    name. The IR is left unchanged.

    ```
    memfit-opt gpt.onnx --input-shape=input_ids=2x16 --memfit-model-summary -o /dev/null
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' for standard output)">,
  ];
}

def MemfitMemoryPlanPass : Pass<"memfit-memory-plan", "::mlir::ModuleOp"> {
  let summary = "Prints the schedule and arena plan of each function";
  let description = [{
    Runs the memory planner on every function whose ops have been formed
    into kernels (run `memfit-form-kernels` first) and prints the plan: the
    weights region (parameters and constants), the arena's peak bytes, the
    bytes by category (inputs, outputs, activations) and, with `buffers`,
    one line per buffer with its region, offset, size and live range in
    steps. The schedule is the function's op order; buffers are placed by
    the greedy-by-size first-fit algorithm on their live ranges, aligned to
    256 bytes; views share their source's buffer. The IR is left unchanged;
    the CUDA emitter uses the same plan.

    ```
    memfit-opt model.onnx --memfit-form-kernels --memfit-memory-plan=buffers=true
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the plan ('-' for standard output)">,
    Option<"buffers", "buffers", "bool", /*default=*/"false",
           "List every buffer, not only the totals">,
    Option<"timeline", "timeline", "std::string", /*default=*/"\"\"",
           "Write the memory timeline of the largest function as an SVG "
           "chart to this file">,
    Option<"timelineData", "timeline-data", "std::string",
           /*default=*/"\"\"",
           "Write the memory timeline's data (bytes live per step by "
           "category) as CSV to this file">,
  ];
}

def MemfitOpCostPass : Pass<"memfit-op-cost", "::mlir::ModuleOp"> {
  let summary = "Prints the FLOPs and bytes of every op from the op cost interface";
  let description = [{
    Prints, for every function, one line per op that does work (kernels,
    contractions and the ops inside kernels are counted once, by their
    kernel) with its FLOPs and the bytes it reads and writes, as the
    CostOpInterface estimates them, followed by totals by computation
    class. memfit-remat prices recomputation with the same numbers. The IR
    is left unchanged.

    ```
    memfit-opt gpt.onnx --input-shape=input_ids=2x16 --memfit-op-cost -o /dev/null
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the table ('-' for standard output)">,
  ];
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def MemfitTieParametersPass
    : Pass<"memfit-tie-parameters", "::mlir::ModuleOp"> {
  let summary = "Re-ties weights that an exporter duplicated as a transposed copy";
  let description = [{
    Exporters write a tied weight (a language model's embedding reused as
    its output projection) twice: once as it is and once transposed. Trained
    separately, the two copies would drift apart. For every 2-D float
    parameter B whose elements equal the transpose of an earlier parameter A
    bit for bit (A not filled with one repeated value, which would make the
    match meaningless), the pass replaces every read of B by a transpose of
    A and erases B, so A's gradient sums both uses as in PyTorch. Each tie
    is reported as a remark on B.

    ```
    memfit-opt gpt.onnx --input-shape=input_ids=2x16 --memfit-tie-parameters
    ```
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
}

def MemfitMixedPrecisionPass
    : Pass<"memfit-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Runs contractions and element-wise ops in bf16 or fp16, the rest in fp32";
  let description = [{
    Rewrites every function of a forward model (before `memfit-autodiff`, so
    that the backward is built in the same types) to compute in `precision`
    (bf16 or fp16) where each op's precision requirement allows it
    (OpClassInterface::getPrecision): `low` ops (contractions, element-wise
    ops, softmax, layer and RMS norms, whose kernels keep statistics in
    fp32 registers) run in the low type; `fp32` ops (reductions, log-softmax,
    losses, exp, log, pow, sqrt, reciprocal) in fp32; `follow` ops (data
    movement, comparisons) in the type of their float operands, the widest
    when they differ; `low_wide_range` ops (x^2, x^3) in bf16 but in fp32
    under fp16, whose range they could overflow. An element-wise op whose
    float operands are all fp32 on purpose (results of fp32 ops, constants,
    integers made float, and such ops continuing them: a norm's statistic,
    rotary angles) stays fp32. Ops whose ONNX node name (or module scope,
    from the dynamo exporter) matches a `keep-fp32` glob run in fp32
    whatever their requirement.

    A `memfit.cast` with a `reason` is inserted where a value meets an op
    that runs in another type, once per value and type, just before its
    first such use: an fp32 master weight gets its low-precision working
    copy where it is used (`working-copy`), so parameters, and the
    optimizer states and gradients built from them, stay fp32. Function
    results keep their types (`result` casts), so a loss that
    `memfit-autodiff` attaches reads fp32 logits. Casts of constants fold
    into constants, and a cast of a cast folds when the middle type is
    exact. Values of other float types (f64) are left alone.

    ```
    memfit-opt gpt.onnx --input-shape=input_ids=2x16 \
      --memfit-mixed-precision='precision=bf16 keep-fp32=/h.0/*'
    ```
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
  let options = [
    Option<"precision", "precision", "::memfit::PrecisionKind",
           /*default=*/"::memfit::PrecisionKind::Bf16",
           "The low type: bf16 or fp16">,
    ListOption<"keepFp32", "keep-fp32", "std::string",
               "Glob patterns of ONNX node names to run in fp32">,
  ];
}

def MemfitLoraPass : Pass<"memfit-lora", "::mlir::ModuleOp"> {
  let summary = "Adds LoRA adapters to the targeted contractions and freezes every other parameter";
  let description = [{
    Runs on the forward model, before memfit-autodiff. Every targeted
    contraction `y = x @ W` (a matmul or gemm whose weight is a 2-D
    parameter, directly or through transposes and casts) becomes
    `y + scale * (x @ A^T) @ B^T`, as PEFT's LoRA layer computes it, with
    two new trainable parameters named after the module of the contraction
    (`<module>.lora_A.weight`, `rank` x in, and `<module>.lora_B.weight`,
    out x `rank`, PEFT's names and layouts) and `scale = alpha / rank`
    (`alpha / sqrt(rank)` with `rslora`). A starts Kaiming-uniform, as
    PEFT's default: uniform in [-1/sqrt(in), 1/sqrt(in)), drawn from
    memfit's reproducible generator (docs/training.md) with `seed`; B
    starts at zero, so the model's output is unchanged. Every other
    parameter is frozen (role `frozen`). The new ops carry
    `memfit.lora_target = "<module>"`; the adapters carry
    `memfit.lora_of = "<W>"` (the base weight's name) and `memfit.lora =
    "A"` or `"B"`.

    With `dropout` p > 0 the adapter reads `memfit.dropout(x)` of ratio p
    instead of x (PEFT's `lora_dropout`; the base contraction reads x),
    with `seed` and a stream of its own per adapter; memfit-dropout-step
    then gives it the training step, so every step draws a new mask.

    `targets` are roles or globs: `attention` (the contractions of modules
    whose path has `attn` or `attention`, in a transformer layer: q, k, v
    and o projections, or a fused QKV), `mlp` (the other contractions in a
    transformer layer), `all-linear` (both), or glob patterns over the
    module path (`h.*.attn.c_attn`), the ONNX node name and its module
    scope. Contractions outside the transformer layers (the LM head) are
    targeted only by a glob that names them; `exclude` globs remove
    targets.
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"8",
           "Rank r of the adapters">,
    Option<"alpha", "alpha", "double", /*default=*/"8",
           "LoRA alpha: the update is scaled by alpha / r">,
    ListOption<"targets", "targets", "std::string",
               "attention, mlp, all-linear, or globs over module paths and "
               "ONNX node names (default: attention)">,
    ListOption<"exclude", "exclude", "std::string",
               "Globs over module paths and node names not to adapt">,
    Option<"dropout", "dropout", "double", /*default=*/"0",
           "PEFT's lora_dropout: the probability of dropping an element of "
           "the adapter's input">,
    Option<"rslora", "rslora", "bool", /*default=*/"false",
           "Scale by alpha / sqrt(r) (rank-stabilized LoRA)">,
    Option<"seed", "seed", "int64_t", /*default=*/"0",
           "Seed of the adapters' initial values and of their dropout">,
  ];
}

def MemfitAutodiffPass : Pass<"memfit-autodiff", "::mlir::ModuleOp"> {
  let summary = "Builds the gradients of a loss with respect to the trainable parameters";
  let description = [{
    Turns the entry function into a function that returns the loss followed
    by the gradient of the loss with respect to every trainable parameter,
    in the order of the parameters in the module. Result attributes name
    them (`onnx.name = "loss"`, `"grad.<parameter>"`) and tie each gradient
    to its parameter (`memfit.gradient_of`).

    The loss is the function's float scalar output (`loss=output`), or is
    attached to its first output: `loss=cross-entropy` takes the last
    dimension as the classes, adds an int64 argument `labels` shaped like
    the output without that dimension and averages over the labels that are
    not `ignore-index`; `loss=mse` adds an argument `target` shaped like the
    output and averages the squared difference over all elements. With
    `linear-loss`, cross-entropy of an output that is an LM head's
    contraction (`hidden . weight`, MatMul or Gemm without bias, through a
    cast to f32) and that nothing else reads is one
    `memfit.linear_cross_entropy` of the hidden states and the weight,
    whose gradient is one `memfit.linear_cross_entropy_grad`.

    Trainable parameters are the float `memfit.parameter`s of rank at least
    1 whose names match a `trainable` pattern (every one when none is given)
    and no `frozen` pattern; patterns are globs with `*` and `?`. The pass
    marks each parameter with `memfit.role` ("parameter" or "frozen").

    Gradients are built in reverse op order from the ops'
    GradientOpInterface rules and summed where a value has several uses.
    Only ops on a path from a trainable parameter to the loss are
    differentiated, so frozen parameters get no gradient and forward values
    that only their gradients would need are not kept. Integer and boolean
    values carry no gradient. Ops the pass creates carry `memfit.backward`.

    Loss scaling (for fp16, whose gradients underflow): with `loss-scale`
    `dynamic` or a number, the backward starts from the gradient `scale`
    instead of 1, so every gradient it computes, and returns, is the
    gradient of `scale * loss`; the returned loss is not scaled. The scale
    is a training state `loss_scale` (f32, role "counter", attribute
    `memfit.loss_scale = "scale"`), initialized to `loss-scale-init` or the
    fixed factor; dynamic scaling adds `loss_scale_growth_tracker`
    (`"growth_tracker"`). memfit-optimizer unscales, checks and updates
    them.

    ```
    memfit-opt gpt.onnx --input-shape=input_ids=2x16 \
      --memfit-autodiff='loss=cross-entropy frozen=wpe.*'
    ```
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
  let options = [
    Option<"loss", "loss", "::memfit::LossKind",
           /*default=*/"::memfit::LossKind::Output",
           "The loss: output, cross-entropy or mse">,
    Option<"ignoreIndex", "ignore-index", "int64_t", /*default=*/"-100",
           "Cross-entropy: labels equal to this contribute nothing">,
    ListOption<"trainable", "trainable", "std::string",
               "Glob patterns of the parameters to train (default: all)">,
    ListOption<"frozen", "frozen", "std::string",
               "Glob patterns of parameters not to train">,
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The function to differentiate (default: the only one, or main)">,
    Option<"lossScale", "loss-scale", "std::string", /*default=*/"\"none\"",
           "Loss scaling: none, dynamic, or a fixed factor">,
    Option<"lossScaleInit", "loss-scale-init", "double", /*default=*/"65536.0",
           "Dynamic loss scaling: the initial scale">,
    Option<"linearLoss", "linear-loss", "bool", /*default=*/"false",
           "Cross-entropy of an LM head's contraction as "
           "memfit.linear_cross_entropy (memfit-chunk-loss computes it a chunk "
           "of rows at a time)">,
  ];
}

def MemfitDropoutStepPass : Pass<"memfit-dropout-step", "::mlir::ModuleOp"> {
  let summary = "Gives every training-mode dropout the step's counter, so "
                "that each step draws new masks";
  let description = [{
    Which elements a dropout keeps depends on its seed, its stream, the
    element's index and its step, the optional `dropout_step` operand of
    the ops of DropoutOpInterface (`memfit.dropout`, `memfit.dropout_mask`,
    `memfit.attention` and its gradient ops; absent: step 0, as a forward
    pass runs). For every function with such ops that drop elements and
    have no step, the pass adds the training state `dropout_step` (0-d
    i64, role "counter", starting at 0; one for the module), reads it at
    the function's start as the step of each of them, and writes it back
    incremented (`memfit.assign`) at the function's end.

    Run after memfit-autodiff, whose gradient rules give a dropout's
    gradient the forward's step, and before memfit-optimizer: every call of
    the training step (or of `accumulate`, once per micro-batch) draws new
    masks, skipped steps of dynamic loss scaling included; the forward,
    every recomputation of it and its gradient draw the same ones; and the
    checkpoint holds the counter, so a resumed run draws the masks the
    uninterrupted one drew.

    ```
    memfit-opt model.onnx --memfit-autodiff --memfit-dropout-step
    ```
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
}

def MemfitChunkLossPass
    : Pass<"memfit-chunk-loss", "::mlir::func::FuncOp"> {
  let summary = "Computes linear cross-entropy and its gradients a chunk of "
                "rows at a time";
  let description = [{
    Expands each `memfit.linear_cross_entropy_grad` of a training step,
    with the `memfit.linear_cross_entropy` of the same operands, into one
    pass over chunks of `rows` rows: for each chunk, the chunk's logits
    (`hidden[rows] . weight`, in the hidden states' type, then f32), its
    summed loss and its logits' gradient (`softmax_cross_entropy_loss` and
    `_grad` with reduction `sum`, the loss gradient divided by the number
    of labels not ignored for `mean`), its rows of `dhidden` and its share
    of `dweight`, added up (as the next contraction's C; in f32 for a
    16-bit weight). Only one chunk's logits and their gradient
    exist at a time: an LM head's `[N, V]` logits are never held (Liger
    Kernel's fused linear cross-entropy, as IR that the memory plan, remat
    and fusion see).

    `rows` = 0 chooses a chunk whose logits are the size of the hidden
    states (N * D / V rows, as Liger Kernel does), at most 16 chunks, and
    one chunk when N <= D: the running sum of the weight's gradient, a
    [D, V] buffer, would outweigh the [N, V] logits that chunks save. One
    chunk is the loss as it was before: the logits whole, the op's own
    reduction, no divisor. A
    `linear_cross_entropy` without a gradient (nothing to train behind
    it) is computed the same way, loss only.

    ```
    memfit-opt gpt.onnx --input-shape=input_ids=2x16 \
      --memfit-autodiff='loss=cross-entropy linear-loss=true' \
      --pass-pipeline='builtin.module(func.func(memfit-chunk-loss{rows=8}))'
    ```
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
  let options = [
    Option<"rows", "rows", "int64_t", /*default=*/"0",
           "Rows of logits per chunk (0: chosen from the shapes)">,
  ];
}

def MemfitEarlyUpdatesPass
    : Pass<"memfit-early-updates", "::mlir::ModuleOp"> {
  let summary = "Runs each optimizer update as soon as its gradient is "
                "complete";
  let description = [{
    memfit-optimizer writes the updates after the whole backward, so every
    gradient stays live to the end of the step. This pass moves each op
    whose results `memfit.assign` writes (an update, the step counter's
    kernel, an accumulation) to just after the last op it must follow:
    the producers of its operands and every reader of the old value of
    what it writes (the loads of those parameters and states, and their
    readers through views). The state loads only it reads move with it,
    its assigns right after it. An update then runs once its gradient is
    complete and its weight has been read for the last time (after the
    recomputation and gradients of its layer), and its gradient's buffer
    is free from there on. Updates that wait for every gradient (a global
    norm to clip by, dynamic loss scaling's overflow check) stay at the
    end. Nothing is computed differently; only independent ops run at
    other times. The train pipeline runs it last (`early-updates=false`
    turns it off).
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
  let statistics = [
    Statistic<"numMoved", "moved", "Updates moved earlier">,
  ];
}

def MemfitOptimizerPass : Pass<"memfit-optimizer", "::mlir::ModuleOp"> {
  let summary = "Adds the optimizer update (SGD or AdamW) and gradient accumulation";
  let description = [{
    Consumes the gradients that `memfit-autodiff` returns and updates the
    parameters in place with `memfit.assign`. Optimizer states become
    zero-initialized `memfit.parameter`s named after their parameter
    (`<p>.exp_avg`, `<p>.exp_avg_sq` for AdamW, `<p>.momentum_buffer` for
    SGD with momentum) with `memfit.role = "optimizer_state"`; a step
    counter `step` (f32, role "counter") counts applied updates. The
    learning rate is a runtime input `lr` (f32, shape []), so schedules need
    no recompilation.

    AdamW follows PyTorch: decoupled weight decay `p *= 1 - lr*wd`, then
    `p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)`. SGD adds the
    weight decay to the gradient, keeps `buf = momentum*buf + g` and steps
    by `lr*buf` (or `g + momentum*buf` with nesterov). With `clip-norm`, all
    gradients are scaled by `min(1, clip/(norm+1e-6))` of their global L2
    norm, which is also returned as `grad_norm`.

    Each parameter's update is one kernel that reads the parameter, its
    gradient and its states once and writes the new values over the old.

    Loss scaling (states that `memfit-autodiff loss-scale=...` created):
    gradients arrive multiplied by the scale, and each update kernel
    multiplies them by its reciprocal (with the clipping factor, whose norm
    is unscaled the same way). With dynamic scaling the gradients are first
    summed, one reduction per gradient, and the step is skipped when the
    total is not finite (an inf or NaN anywhere): parameters and optimizer
    states keep their values (AdamW's bias correction counts applied steps
    in its own counter `adamw_step`), the scale is multiplied by
    `loss-scale-backoff` and its growth tracker reset; after
    `loss-scale-interval` good steps in a row the scale is multiplied by
    `loss-scale-growth` (when finite), as PyTorch's GradScaler does. The
    updating function also returns `loss_scale` (the scale this step used)
    and `skipped` (1 when the step was skipped, else 0). The `step` counter
    counts every step, skipped or not, like the data and the learning-rate
    schedule.

    Under ZeRO stage 1 (the module's `memfit.zero` = 1, `memfit.world_size`
    = N and `memfit.rank` = r, from memfit-shard) each state holds the
    rank's rows [r c, (r + 1) c) of its parameter (c = ceil(rows / N), the
    parameter padded with zero rows), the update reads those rows of the
    parameter and of the gradient (ops marked `memfit.shard_slice`) and a
    `memfit.all_gather` writes the ranks' updated rows into the parameter.

    Under ZeRO stage 3 (`memfit.zero` = 3) each trained parameter also
    keeps only the rank's rows (`memfit.whole_rows` records the whole's),
    the update reads and writes them in place, and the parameter's reads
    become `memfit.all_gather`s of the ranks' rows, numbered
    (`memfit.regather`): one per layer pass that reads it (a run of one
    transformer layer's ops in the forward or in the backward), shared by
    that pass's readers, located at one of them and placed at the start of
    the layer pass. With `zero3-prefetch` (the default) they are placed at
    the start of the layer pass before it instead (one layer of prefetch),
    so that the exchange may overlap that layer's compute; the forward's
    and the backward's first layers are not prefetched. Outside the
    layers each weight is gathered right before its first reader.

    With `accumulate=k` > 1 the function becomes `accumulate` (adds each
    gradient times 1/k into a zero-initialized `<p>.grad` buffer, role
    "gradient_accumulator", and returns the micro-batch loss) and a new
    function `apply(lr)` updates the parameters from the accumulated
    gradients and zeroes them. With k = 1 the function becomes `train_step`
    (its inputs plus `lr`, returning the loss) and gradients live only
    until their update.
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
  let options = [
    Option<"optimizer", "optimizer", "::memfit::OptimizerKind",
           /*default=*/"::memfit::OptimizerKind::AdamW", "adamw or sgd">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.01",
           "Weight decay (decoupled for AdamW, L2 for SGD)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0", "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "SGD: Nesterov momentum">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "Clip gradients to this global L2 norm (0: off)">,
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step">,
    Option<"lossScaleGrowth", "loss-scale-growth", "double",
           /*default=*/"2.0", "Dynamic loss scaling: the growth factor">,
    Option<"lossScaleBackoff", "loss-scale-backoff", "double",
           /*default=*/"0.5", "Dynamic loss scaling: the backoff factor">,
    Option<"lossScaleInterval", "loss-scale-interval", "int64_t",
           /*default=*/"2000",
           "Dynamic loss scaling: good steps before the scale grows">,
    Option<"offloadStates", "offload-states", "bool", /*default=*/"false",
           "ZeRO-Offload: keep the fp32 masters and the optimizer states in "
           "host memory (memfit.memory_space = \"host\"), the device reading "
           "working copies, and run the updates on the host (memfit.on_host)">,
    Option<"zero3Prefetch", "zero3-prefetch", "bool", /*default=*/"true",
           "Under ZeRO stage 3, gather a transformer layer's parameters at "
           "the start of the layer before it, in the forward and in the "
           "backward (one layer of prefetch), rather than at the start of "
           "the layer itself">,
  ];
}

def MemfitHostTransfersPass
    : Pass<"memfit-host-transfers", "::mlir::func::FuncOp"> {
  let summary = "Copies what the host's kernels read into host memory";
  let description = [{
    Under `memfit-optimizer offload-states` the updates are kernels marked
    `memfit.on_host`: the runtime runs them on the host's cores while the
    device goes on with the step (and the next step's forward, until it
    reads a working copy they write). They read host memory only. For every
    input of such a kernel whose buffer is not in host memory (a gradient,
    the clipping factor, the step size the device computed), this pass puts
    a copy kernel marked `memfit.to_host` before the first on-host kernel
    that reads it, one per value. The memory plan places the copies, and
    what on-host kernels write that no assignment stores, in the host
    region, live until the end of the function: the host may run its
    kernels after the device has passed them.

    ```mlir
    %g = memfit.kernel ... // the gradient, on the device
    %h = memfit.kernel(%g) {memfit.to_host} ...
    %u:4 = memfit.kernel(%master, %h, %m, %v, ...) {memfit.on_host} ...
    ```

    The host cannot write device memory either: where an on-host kernel's
    result is read or stored outside host memory (the new working copy that
    the device reads), the kernel writes it in the host region and a copy
    kernel marked `memfit.to_device`, right after it, brings it to the
    device. The runtime runs that copy in the host kernels' queue, after
    them, so that the device waits for neither until it reads the copy.

    ```mlir
    %u:4 = memfit.kernel(...) {memfit.on_host} ...
    %w = memfit.kernel(%u#3) {memfit.to_device} ...
    memfit.assign @"wte.weight.working", %w
    ```

    The train pipeline runs it last, after memfit-early-updates.
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
  let statistics = [
    Statistic<"numCopies", "copies", "Values copied to host memory">,
    Statistic<"numDeviceCopies", "device-copies",
              "Host kernels' results copied to the device">,
  ];
}

def MemfitQuantizePass : Pass<"memfit-quantize", "::mlir::ModuleOp"> {
  let summary = "Stores frozen weights in 4 or 8 bits and optimizer states in 8 bits, block-wise";
  let description = [{
    With `weights=nf4|fp4|int8`, every frozen parameter (role `frozen`, or
    any parameter of a module without training roles) whose every read
    feeds a contraction, directly or through transposes and casts, and
    that has at least `min-weight-size` values, is quantized at compile
    time in blocks of `weight-block-size` values: `<p>.codes` (two 4-bit
    codes per byte for nf4 and fp4, i8 for int8) and `<p>.absmax` (f32 per
    block), with the rules of bitsandbytes' `quantize_4bit` (see
    include/memfit/Dialect/Quantization.h). With `double-quant` (nf4 and
    fp4), the absmax minus their mean is itself quantized with the signed
    dynamic map in blocks of 256: `<p>.absmax.codes`, `<p>.absmax.absmax`
    and `<p>.absmax.offset`, as QLoRA does. Each read of the weight becomes
    a `memfit.dequantize` (after the absmax's own dequantize) placed just
    before the op that uses it, so the full-precision weight lives only
    from there to that op: the memory plan holds one layer's dequantized
    weights at a time, and the backward dequantizes again where it reads
    the weight. Run it after `cse`, which would merge the reads.

    With `optimizer-states=8bit` (after `memfit-optimizer`), every
    optimizer state of at least `min-8bit-size` elements is stored as
    8-bit codes of the dynamic map of Dettmers et al. (bitsandbytes'
    `create_dynamic_map`; the unsigned map for states marked
    `memfit.nonnegative`, AdamW's `exp_avg_sq`) with one f32 absmax per
    block of `state-block-size` values, as bitsandbytes' 8-bit optimizers
    store them. The state `<s>` becomes two states, `<s>.codes`
    (`tensor<Nxui8>`) and `<s>.absmax` (`tensor<Bxf32>`), both
    zero-initialized with the state's role and `memfit.quantized`.

    The update stays one kernel per parameter: the kernel that read the
    state now reads its codes and absmax and dequantizes them at each
    element (`memfit.dequantize`), and the value it wrote is quantized at
    the kernel's end (`memfit.quantize`, a new absmax per block), so the
    emitter runs it one thread block per quantization block. Smaller
    states (bitsandbytes' `min_8bit_size`) and the states of parameters
    matching a `keep-fp32-states` glob (an embedding, say) stay fp32.

    With `saved-activations=int8`, memfit-remat (which runs later, on
    kernels) gets a third choice beside saving and recomputing a forward
    value that the backward reads: saving it compressed, as i8 codes of
    `linear` block-wise quantization with one f32 absmax per
    `activation-block-size` values, quantized after its last forward use
    and dequantized before each backward step that reads it. This pass
    only records the request on the module (`memfit.saved_activations`);
    memfit-remat's policy `auto` prices the choice and takes it where it
    beats both others (docs/remat.md).

    ```
    memfit-opt gpt.onnx --input-shape=input_ids=2x16 \
      --memfit-autodiff=loss=cross-entropy --memfit-optimizer \
      --memfit-quantize='optimizer-states=8bit keep-fp32-states=wte.*'
    ```
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
  let options = [
    Option<"optimizerStates", "optimizer-states", "::memfit::StateStorage",
           /*default=*/"::memfit::StateStorage::Fp32",
           "fp32 (unchanged) or 8bit">,
    Option<"stateBlockSize", "state-block-size", "int64_t",
           /*default=*/"256", "Values per absmax of an 8-bit state">,
    Option<"min8bitSize", "min-8bit-size", "int64_t", /*default=*/"4096",
           "States with fewer elements stay fp32">,
    ListOption<"keepFp32States", "keep-fp32-states", "std::string",
               "Glob patterns of parameter names whose states stay fp32">,
    Option<"weights", "weights", "::memfit::WeightStorage",
           /*default=*/"::memfit::WeightStorage::None",
           "none, nf4, fp4 or int8: how frozen contraction weights are "
           "stored">,
    Option<"weightBlockSize", "weight-block-size", "int64_t",
           /*default=*/"64", "Values per absmax of a quantized weight">,
    Option<"doubleQuant", "double-quant", "bool", /*default=*/"false",
           "nf4, fp4: quantize the absmax too (8-bit, blocks of 256)">,
    Option<"minWeightSize", "min-weight-size", "int64_t", /*default=*/"4096",
           "Weights with fewer values stay as they are">,
    Option<"savedActivations", "saved-activations",
           "::memfit::ActivationStorage",
           /*default=*/"::memfit::ActivationStorage::Fp32", "fp32 (unchanged) or int8: memfit-remat "
           "may keep a saved activation compressed">,
    Option<"activationBlockSize", "activation-block-size", "int64_t",
           /*default=*/"256", "Values per absmax of a compressed activation">,
  ];
}

//===----------------------------------------------------------------------===//
// Rematerialization
//===----------------------------------------------------------------------===//

def MemfitRematPass : Pass<"memfit-remat", "::mlir::ModuleOp"> {
  let summary = "Saves or recomputes each forward value of a training step to fit a memory budget";
  let description = [{
    Runs on a training step formed into kernels (after memfit-autodiff,
    memfit-optimizer and memfit-form-kernels). Each forward kernel or
    contraction whose results the backward reads is either saved (kept live
    from the forward pass to its last backward use) or recomputed: cloned
    into the backward, just before the first backward step that needs it,
    from saved values, parameters and inputs. When the module asks for it
    (memfit-quantize `saved-activations=int8`), policy auto may also save a
    value compressed: a kernel quantizes it after its last forward use and
    one dequantizes it before each backward step that needs it. See
    docs/remat.md.
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
  let options = [
    Option<"policy", "policy", "::memfit::RematPolicy",
           /*default=*/"::memfit::RematPolicy::Auto",
           "none, checkpoint-layers, auto or optimal">,
    Option<"budget", "budget", "::mlir::memfit::ByteSize",
           /*default=*/"::mlir::memfit::ByteSize{}",
           "Peak device memory of the step (weights region plus arena), in "
           "bytes or with a unit: 512MiB, 1.5GiB, 800MB (0: no budget)">,
    Option<"activationFraction", "activation-fraction", "double",
           /*default=*/"0", "Keep at most this fraction of the activation "
           "memory that saving everything takes (0: no limit)">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write the remat report ('-' for standard output)">,
    Option<"reportRows", "report-rows", "bool", /*default=*/"true",
           "List a row per value the backward needs in the report (false: "
           "the totals only)">,
    Option<"timeline", "timeline", "std::string", /*default=*/"\"\"",
           "Write the memory timeline of the planned step as SVG">,
    Option<"timelineData", "timeline-data", "std::string",
           /*default=*/"\"\"",
           "Write the memory timeline's data as CSV">,
    Option<"timeLimit", "time-limit", "double", /*default=*/"60",
           "optimal: seconds the ILP solver may take">,
    Option<"offloadActivations", "offload-activations", "bool",
           /*default=*/"false",
           "auto may also save a forward value in host memory: copied there "
           "after its last forward use and back before the backward needs "
           "it, priced by its bytes over the bus">,
    Option<"hostBandwidth", "host-bandwidth", "double", /*default=*/"25e9",
           "Bytes per second between host memory and the device (PCIe 4 "
           "x16: 25e9), which prices an offloaded value's copies">,
  ];
}

include "memfit/Passes/KernelPasses.td"
include "memfit/Passes/DistributedPasses.td"

#endif // MEMFIT_PASSES_TD
