// memfit-tie-parameters: a 2-D parameter stored as the exact transpose of an
// earlier one is read as a transpose of that one and removed. Uniform data
// (every element equal) is never tied, nor is data that differs in one bit.
// RUN: memfit-opt %s -split-input-file --memfit-tie-parameters -verify-diagnostics | FileCheck %s

memfit.parameter @emb = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
// expected-remark @+1 {{'head' is the transpose of 'emb'; reading it as transpose('emb') so that both are one weight}}
memfit.parameter @head = dense<[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]> : tensor<3x2xf32>
memfit.parameter @almost = dense<[[1.0, 4.0], [2.0, 5.0], [3.0, 6.5]]> : tensor<3x2xf32>
memfit.parameter @ones = dense<[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]> : tensor<2x3xf32>
memfit.parameter @ones_t = dense<[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]> : tensor<3x2xf32>

// CHECK: memfit.parameter @emb
// CHECK-NOT: memfit.parameter @head
// CHECK: memfit.parameter @almost
// CHECK: memfit.parameter @ones
// CHECK: memfit.parameter @ones_t
// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  // CHECK: memfit.load_parameter @emb : tensor<2x3xf32>
  // CHECK: memfit.matmul
  // CHECK-NEXT: %[[E:.+]] = memfit.load_parameter @emb : tensor<2x3xf32>
  // CHECK-NEXT: %[[T:.+]] = memfit.transpose %[[E]] {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  // CHECK: memfit.load_parameter @almost
  // CHECK: memfit.load_parameter @ones_t
  // CHECK: return %{{.*}}, %[[T]]
  %e = memfit.load_parameter @emb : tensor<2x3xf32>
  %y = memfit.matmul %x, %e : tensor<4x2xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  %h = memfit.load_parameter @head : tensor<3x2xf32>
  %a = memfit.load_parameter @almost : tensor<3x2xf32>
  %o = memfit.load_parameter @ones_t : tensor<3x2xf32>
  %s = memfit.add %a, %o : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32>
  return %y, %h, %s : tensor<4x3xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}
