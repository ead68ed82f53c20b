// memfit-fold-transposes: memfit-fuse's first rewrite on its own, which the
// training pipeline runs before memfit-remat with fusion on (remat then
// plans the step without the transposed copies). The tied LM head's
// transpose becomes the gemm's trans_b; nothing else is fused (the add and
// the exp stay two kernels).
// RUN: memfit-opt %s --memfit-form-kernels --memfit-fold-transposes | FileCheck %s
// CHECK-LABEL: func.func @lm_head
// CHECK-SAME: (%[[X:.+]]: tensor<6x4xf32>, %[[W:.+]]: tensor<10x4xf32>
// CHECK-NEXT: %[[Y:.+]] = memfit.gemm %[[X]], %[[W]] {trans_b = true} : (tensor<6x4xf32>, tensor<10x4xf32>) -> tensor<6x10xf32>
// CHECK-NEXT: memfit.kernel(%[[Y]]
// CHECK: memfit.add
// CHECK: memfit.kernel
// CHECK: memfit.exp
// CHECK-NOT: memfit.transpose
func.func @lm_head(%x: tensor<6x4xf32>, %w: tensor<10x4xf32>, %b: tensor<6x10xf32>) -> tensor<6x10xf32> {
  %t = memfit.transpose %w {perm = array<i64: 1, 0>} : tensor<10x4xf32> -> tensor<4x10xf32>
  %y = memfit.gemm %x, %t : (tensor<6x4xf32>, tensor<4x10xf32>) -> tensor<6x10xf32>
  %s = memfit.add %y, %b : tensor<6x10xf32>, tensor<6x10xf32> -> tensor<6x10xf32>
  %e = memfit.exp %s : tensor<6x10xf32>
  return %e : tensor<6x10xf32>
}
