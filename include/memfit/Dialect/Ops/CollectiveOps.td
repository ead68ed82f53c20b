//===- CollectiveOps.td - communication between ranks ------*- tablegen -*-===//
//
// Ops of class Collective: every rank of a group runs the same op on its own
// tensor and they exchange data (data parallelism and ZeRO, memfit-shard).
// They run as calls into a communicator (NCCL on cuda, MPI on host), never
// in a memfit.kernel; their cost is the bytes each rank sends.
//
// Part of MemfitOps.td, which includes it after the classes every family
// uses (Memfit_Op, Memfit_InferredOp). The C++ of these ops (inference,
// verifiers, cost) is in lib/Dialect/Ops/CollectiveOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPS_COLLECTIVEOPS_TD
#define MEMFIT_DIALECT_OPS_COLLECTIVEOPS_TD

// The group: `group_size` ranks, all of them (0 to group_size - 1) unless
// `ranks` lists which.
class Memfit_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Memfit_InferredOp<mnemonic, "Collective",
        !listconcat([DeclareOpInterfaceMethods<Memfit_CostOpInterface,
                                               ["getCost"]>], traits)> {
  let hasVerifier = 1;
}

def Memfit_AllReduceOp : Memfit_CollectiveOp<"all_reduce"> {
  let summary = "every rank's tensor combined element-wise, on every rank";
  let description = [{
    Each rank of the group passes a tensor of the same type and receives the
    element-wise sum, mean, maximum or minimum over the ranks (NCCL's and
    MPI's all-reduce; mean is the sum divided by the group's size). Data
    parallelism all-reduces each gradient with `mean` as soon as it is final.

    ```mlir
    %g = memfit.all_reduce mean %grad {group_size = 2} : tensor<32x96xf32> -> tensor<32x96xf32>
    ```
  }];
  let arguments = (ins Memfit_NumericTensor:$input,
                       Memfit_CollectiveReduction:$reduction,
                       I64Attr:$group_size,
                       OptionalAttr<DenseI64ArrayAttr>:$ranks);
  let results = (outs Memfit_NumericTensor:$result);
  let assemblyFormat = [{
    $reduction $input attr-dict `:` type($input) `->` type($result)
  }];
}

def Memfit_ReduceScatterOp : Memfit_CollectiveOp<"reduce_scatter"> {
  let summary = "an all-reduce of which each rank keeps one slice";
  let description = [{
    The element-wise reduction over the ranks, split along dimension 0 into
    `group_size` equal slices: rank r of the group receives slice r. The
    input's dimension 0 must divide evenly (memfit-shard pads flattened
    gradients to a multiple of the group's size). ZeRO-2 reduce-scatters
    gradients so that each rank keeps the slice it updates.

    ```mlir
    %s = memfit.reduce_scatter mean %flat {group_size = 2} : tensor<3072xf32> -> tensor<1536xf32>
    ```
  }];
  let arguments = (ins Memfit_NumericTensor:$input,
                       Memfit_CollectiveReduction:$reduction,
                       I64Attr:$group_size,
                       OptionalAttr<DenseI64ArrayAttr>:$ranks);
  let results = (outs Memfit_NumericTensor:$result);
  let assemblyFormat = [{
    $reduction $input attr-dict `:` type($input) `->` type($result)
  }];
}

def Memfit_AllGatherOp : Memfit_CollectiveOp<"all_gather"> {
  let summary = "every rank's slice, concatenated, on every rank";
  let description = [{
    Each rank passes a tensor of the same type; every rank receives them
    concatenated along dimension 0 in the group's rank order. ZeRO-1 and -2
    all-gather the parameter slices each rank updated; ZeRO-3 gathers a
    layer's parameters before it runs.

    ```mlir
    %w = memfit.all_gather %slice {group_size = 2} : tensor<1536xf32> -> tensor<3072xf32>
    ```
  }];
  let arguments = (ins Memfit_NumericTensor:$input, I64Attr:$group_size,
                       OptionalAttr<DenseI64ArrayAttr>:$ranks);
  let results = (outs Memfit_NumericTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
}

def Memfit_BroadcastOp : Memfit_CollectiveOp<"broadcast"> {
  let summary = "the root rank's tensor, on every rank";
  let description = [{
    Every rank receives the tensor that rank `root` of the group passed (the
    others' inputs are read for their type only). Used to start every rank
    from the same weights.

    ```mlir
    %w = memfit.broadcast %init {group_size = 2, root = 0} : tensor<32x96xf32> -> tensor<32x96xf32>
    ```
  }];
  let arguments = (ins Memfit_NumericTensor:$input, I64Attr:$group_size,
                       DefaultValuedAttr<I64Attr, "0">:$root,
                       OptionalAttr<DenseI64ArrayAttr>:$ranks);
  let results = (outs Memfit_NumericTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
}

#endif // MEMFIT_DIALECT_OPS_COLLECTIVEOPS_TD
