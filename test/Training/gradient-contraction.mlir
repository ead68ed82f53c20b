// RUN: memfit-opt %s --memfit-autodiff -split-input-file | FileCheck %s

// A linear layer: both gradients are gemms over the flattened batch, with
// no transpose kernels.
// CHECK-LABEL: func.func @linear
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[GF:.+]] = memfit.reshape %[[G]] {memfit.backward{{.*}}} : tensor<2x3x4xf32> to tensor<6x4xf32>
// CHECK: %[[DXF:.+]] = memfit.gemm %[[GF]], %[[W:.+]] {memfit.backward{{.*}}trans_b = true} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
// CHECK: %[[DX:.+]] = memfit.reshape %[[DXF]] {memfit.backward{{.*}}} : tensor<6x5xf32> to tensor<2x3x5xf32>
// CHECK: %[[XF:.+]] = memfit.reshape %[[X:.+]] {memfit.backward{{.*}}} : tensor<2x3x5xf32> to tensor<6x5xf32>
// CHECK: %[[DW:.+]] = memfit.gemm %[[XF]], %[[GF]] {memfit.backward{{.*}}trans_a = true} : (tensor<6x5xf32>, tensor<6x4xf32>) -> tensor<5x4xf32>
// CHECK: return %{{.+}}, %[[DX]], %[[DW]]
memfit.parameter @x = dense<1.0> : tensor<2x3x5xf32>
memfit.parameter @w = dense<1.0> : tensor<5x4xf32>
func.func @linear() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3x5xf32>
  %w = memfit.load_parameter @w : tensor<5x4xf32>
  %y = memfit.matmul %x, %w : tensor<2x3x5xf32>, tensor<5x4xf32> -> tensor<2x3x4xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Batched operands, the lhs broadcast over the batch: transposes and
// batched matmuls, the lhs gradient summed over the batch.
// CHECK-LABEL: func.func @batched
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[BT:.+]] = memfit.transpose %[[B:.+]] {memfit.backward{{.*}}perm = array<i64: 0, 2, 1>} : tensor<2x4x5xf32> -> tensor<2x5x4xf32>
// CHECK: %[[DA:.+]] = memfit.matmul %[[G]], %[[BT]] {memfit.backward{{.*}}} : tensor<2x3x5xf32>, tensor<2x5x4xf32> -> tensor<2x3x4xf32>
// CHECK: %[[SA:.+]] = memfit.reduce_sum %[[DA]] {axes = array<i64: 0>, memfit.backward{{.*}}} : tensor<2x3x4xf32> -> tensor<1x3x4xf32>
// CHECK: %[[AT:.+]] = memfit.transpose %[[A:.+]] {memfit.backward{{.*}}perm = array<i64: 0, 2, 1>} : tensor<1x3x4xf32> -> tensor<1x4x3xf32>
// CHECK: %[[DB:.+]] = memfit.matmul %[[AT]], %[[G]] {memfit.backward{{.*}}} : tensor<1x4x3xf32>, tensor<2x3x5xf32> -> tensor<2x4x5xf32>
// CHECK: return %{{.+}}, %[[SA]], %[[DB]]
memfit.parameter @a = dense<1.0> : tensor<1x3x4xf32>
memfit.parameter @b = dense<1.0> : tensor<2x4x5xf32>
func.func @batched() -> tensor<f32> {
  %a = memfit.load_parameter @a : tensor<1x3x4xf32>
  %b = memfit.load_parameter @b : tensor<2x4x5xf32>
  %y = memfit.matmul %a, %b : tensor<1x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A vector times a matrix: the vector is a 1xK matrix for the rule.
// CHECK-LABEL: func.func @vec_mat
// CHECK: %[[G:.+]] = memfit.expand {{.+}} to tensor<5xf32>
// CHECK: %[[G2:.+]] = memfit.reshape %[[G]] {memfit.backward{{.*}}} : tensor<5xf32> to tensor<1x5xf32>
// CHECK: %[[DV:.+]] = memfit.gemm %[[G2]], %[[M:.+]] {memfit.backward{{.*}}trans_b = true} : (tensor<1x5xf32>, tensor<4x5xf32>) -> tensor<1x4xf32>
// CHECK: %[[DVR:.+]] = memfit.reshape %[[DV]] {memfit.backward{{.*}}} : tensor<1x4xf32> to tensor<4xf32>
// CHECK: %[[V2:.+]] = memfit.reshape %[[V:.+]] {memfit.backward{{.*}}} : tensor<4xf32> to tensor<1x4xf32>
// CHECK: %[[DM:.+]] = memfit.gemm %[[V2]], %[[G2]] {memfit.backward{{.*}}trans_a = true} : (tensor<1x4xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
// CHECK: return %{{.+}}, %[[DVR]], %[[DM]]
memfit.parameter @v = dense<1.0> : tensor<4xf32>
memfit.parameter @m = dense<1.0> : tensor<4x5xf32>
func.func @vec_mat() -> tensor<f32> {
  %v = memfit.load_parameter @v : tensor<4xf32>
  %m = memfit.load_parameter @m : tensor<4x5xf32>
  %y = memfit.matmul %v, %m : tensor<4xf32>, tensor<4x5xf32> -> tensor<5xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gemm with trans_a: the gradients are gemms with the flags swapped and
// alpha kept; the bias gradient is summed and scaled by beta.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[DA:.+]] = memfit.gemm %[[B:.+]], %[[G]] {alpha = 5.000000e-01 : f32, memfit.backward{{.*}}trans_b = true} : (tensor<4x5xf32>, tensor<3x5xf32>) -> tensor<4x3xf32>
// CHECK: %[[DB:.+]] = memfit.gemm %[[A:.+]], %[[G]] {alpha = 5.000000e-01 : f32, memfit.backward{{.*}}} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
// CHECK: %[[SC:.+]] = memfit.reduce_sum %[[G]] {axes = array<i64: 0>, keepdims = false, memfit.backward{{.*}}} : tensor<3x5xf32> -> tensor<5xf32>
// CHECK: %[[BETA:.+]] = memfit.constant {memfit.backward{{.*}}} dense<2.000000e+00> : tensor<f32>
// CHECK: %[[DC:.+]] = memfit.mul %[[SC]], %[[BETA]]
// CHECK: return %{{.+}}, %[[DA]], %[[DB]], %[[DC]]
memfit.parameter @a = dense<1.0> : tensor<4x3xf32>
memfit.parameter @b = dense<1.0> : tensor<4x5xf32>
memfit.parameter @c = dense<1.0> : tensor<5xf32>
func.func @gemm() -> tensor<f32> {
  %a = memfit.load_parameter @a : tensor<4x3xf32>
  %b = memfit.load_parameter @b : tensor<4x5xf32>
  %c = memfit.load_parameter @c : tensor<5xf32>
  %y = memfit.gemm %a, %b, %c {trans_a = true, alpha = 0.5 : f32, beta = 2.0 : f32} : (tensor<4x3xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<3x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}
