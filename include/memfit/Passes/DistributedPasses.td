//===- DistributedPasses.td - more than one rank -----------*- tablegen -*-===//
//
// Part of Passes.td (included at its end): the passes that make a training
// step run on several ranks at once.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_PASSES_DISTRIBUTEDPASSES_TD
#define MEMFIT_PASSES_DISTRIBUTEDPASSES_TD

def MemfitShardPass : Pass<"memfit-shard", "::mlir::ModuleOp"> {
  let summary = "Makes the training step data parallel over `world-size` "
                "ranks (ZeRO stage `zero`)";
  let description = [{
    Each rank runs the same step on its own slice of the global batch. With
    `zero=0` (plain data parallelism, PyTorch's DDP) every gradient that
    memfit-autodiff returns is averaged over the ranks by a
    `memfit.all_reduce mean` placed right after the op that makes it final,
    so that the reduction of one gradient overlaps the rest of the backward
    and no gradient waits for the end of the step; the loss result is
    averaged too, so that every rank reports the global batch's loss. The
    reduced gradients are what memfit-optimizer, clipping (the global norm
    of the global gradients) and the accumulators see; every rank then
    applies the same update to the same weights, which stay equal.

    The mean of the ranks' mean losses is the global batch's mean when
    every rank's slice counts the same number of labels (no ignored labels,
    or as many on each rank): what DDP computes too.

    Run after memfit-autodiff and memfit-dropout-step, before
    memfit-optimizer. The module gets `memfit.world_size` and `memfit.zero`,
    which the executable records; the runtime checks that it was launched
    with that many ranks. `world-size=1` changes nothing but the attributes.

    ```
    %g = ... // the gradient of @w, final
    %r = memfit.all_reduce mean %g {group_size = 2, memfit.backward} : tensor<32x96xf32> -> tensor<32x96xf32>
    return %loss, %r ...
    ```

    With `zero=1` (ZeRO stage 1) the module also gets `memfit.rank`, and
    memfit-optimizer shards the optimizer states: rank r keeps, for each
    parameter of n rows, the states of rows [r c, (r + 1) c) of it padded
    with zero rows to N c (c = ceil(n / N)), updates
    that slice of the parameter from the same slice of the averaged
    gradient, and `memfit.all_gather`s the ranks' slices back into the
    parameter. Each rank then holds 1/N of the states; the executable is
    the rank's own. With `zero=2` the gradients are not all-reduced here:
    memfit-optimizer averages each one by a `memfit.reduce_scatter` of its
    rows, so a rank receives only the rows it updates. With `zero=3` each
    trained parameter also keeps only the rank's rows: every read of it is
    an all-gather just before the op that reads it (the forward's and the
    backward's each their own), and the update writes the rows in place.

    Under stages 0 and 1 the gradients are all-reduced in buckets, as
    PyTorch's DDP does: in the order they become final, gradients of one
    element type join a bucket until the next would take it past
    `bucket-bytes`; a bucket of several is flattened into one buffer
    (`memfit.concat`), all-reduced once right after its last gradient is
    final, and read back as slices. One gradient larger than the cap is a
    bucket of its own.

    ```mlir
    %b = memfit.concat %g1, %g0 {axis = 0} ...       // flattened
    %r = memfit.all_reduce mean %b group 2 ...
    %s1 = memfit.slice %r ...                         // each gradient
    ```
  }];
  let options = [
    Option<"worldSize", "world-size", "int64_t", /*default=*/"1",
           "Ranks that run the step, each on its slice of the batch">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage: 0 = every rank keeps everything and all-reduces "
           "the gradients; 1 = the optimizer states are sharded; 2 = the "
           "gradients too; 3 = the parameters too">,
    Option<"rank", "rank", "int64_t", /*default=*/"0",
           "The rank this step is compiled for (zero >= 1: its slices)">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "Stages 0 and 1: gradients that become final one after another "
           "are all-reduced together, in buckets of at most this many bytes "
           "(PyTorch DDP's 25 MiB; 0: one all-reduce per gradient)">,
  ];
}

#endif // MEMFIT_PASSES_DISTRIBUTEDPASSES_TD
