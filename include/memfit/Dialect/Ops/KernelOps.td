//===- KernelOps.td - memfit.kernel and memfit.yield -------*- tablegen -*-===//
//
// The unit of code generation: a kernel groups the ops one generated GPU
// kernel runs.
//
// Part of MemfitOps.td, which includes it after the classes every family
// uses (Memfit_Op, Memfit_InferredOp). The kernel's verifier is in
// lib/Dialect/Ops/KernelOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPS_KERNELOPS_TD
#define MEMFIT_DIALECT_OPS_KERNELOPS_TD

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

#endif // MEMFIT_DIALECT_OPS_KERNELOPS_TD
