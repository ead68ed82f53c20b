//===- ContractionOps.td - matmul and gemm -----------------*- tablegen -*-===//
//
// Ops of class Contraction: they run as library calls (cuBLAS), never in a
// memfit.kernel.
//
// Part of MemfitOps.td, which includes it after the classes every family
// uses (Memfit_Op, Memfit_InferredOp). The C++ of these ops (inference,
// verifiers, folders) is in lib/Dialect/Ops/ContractionOps.cpp, their gradient
// rules in lib/Dialect/Gradients/ContractionGradients.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_DIALECT_OPS_CONTRACTIONOPS_TD
#define MEMFIT_DIALECT_OPS_CONTRACTIONOPS_TD

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

#endif // MEMFIT_DIALECT_OPS_CONTRACTIONOPS_TD
