// memfit-form-kernels: every op that needs generated code moves into a
// memfit.kernel of its own; contractions and views stay outside.
// RUN: memfit-opt %s -split-input-file --memfit-form-kernels | FileCheck %s

// Each element-wise op gets its own kernel whose inputs are its distinct
// operands; the body refers only to the kernel's arguments.
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>, %[[B:.+]]: tensor<4xf32>)
// CHECK: %[[ADD:.+]] = memfit.kernel(%[[X]], %[[B]]) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT: ^bb0(%[[A0:.+]]: tensor<2x4xf32>, %[[A1:.+]]: tensor<4xf32>):
// CHECK-NEXT: %[[S:.+]] = memfit.add %[[A0]], %[[A1]]
// CHECK-NEXT: memfit.yield %[[S]] : tensor<2x4xf32>
// CHECK: %[[MUL:.+]] = memfit.kernel(%[[ADD]]) : (tensor<2x4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT: ^bb0(%[[M0:.+]]: tensor<2x4xf32>):
// CHECK-NEXT: memfit.mul %[[M0]], %[[M0]]
// CHECK: return %[[MUL]]
func.func @elementwise(%x: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = memfit.add %x, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %1 = memfit.mul %0, %0 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----

// Contractions stay outside kernels (library calls); views cost nothing and
// stay outside too.
// CHECK-LABEL: func.func @contraction_and_views
// CHECK: %[[MM:.+]] = memfit.matmul
// CHECK-NEXT: %[[R:.+]] = memfit.reshape %[[MM]]
// CHECK-NEXT: %[[SM:.+]] = memfit.kernel(%[[R]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.softmax
// CHECK: %[[U:.+]] = memfit.unsqueeze %[[SM]]
// CHECK: return %[[U]]
func.func @contraction_and_views(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) -> tensor<1x8xf32> {
  %0 = memfit.matmul %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %1 = memfit.reshape %0 : tensor<2x4xf32> to tensor<8xf32>
  %2 = memfit.softmax %1 : tensor<8xf32>
  %3 = memfit.unsqueeze %2 {axes = array<i64: 0>} : tensor<8xf32> -> tensor<1x8xf32>
  return %3 : tensor<1x8xf32>
}

// -----

// Splat constants are cloned into the kernel as literals; other constants
// stay buffers.
// CHECK-LABEL: func.func @constants
// CHECK: %[[TABLE:.+]] = memfit.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// CHECK-NEXT: %[[MUL:.+]] = memfit.kernel(%{{.+}}) : (tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<4xf32>):
// CHECK-NEXT: %[[HALF:.+]] = memfit.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: memfit.mul %[[A]], %[[HALF]]
// CHECK: memfit.kernel(%[[MUL]], %[[TABLE]])
// CHECK-NOT: memfit.constant
// CHECK: return
func.func @constants(%x: tensor<4xf32>) -> tensor<4xf32> {
  %half = memfit.constant dense<5.000000e-01> : tensor<f32>
  %table = memfit.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = memfit.mul %x, %half : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = memfit.add %0, %table : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Ops with several results (split) become one kernel with several results;
// range, which has no operands, becomes a kernel without inputs.
// CHECK-LABEL: func.func @split_and_range
// CHECK: %[[SP:.+]]:2 = memfit.kernel(%{{.+}}) : (tensor<6xf32>) -> (tensor<2xf32>, tensor<4xf32>)
// CHECK: memfit.kernel() : () -> tensor<4xi64> {
// CHECK-NEXT: memfit.range
func.func @split_and_range(%x: tensor<6xf32>) -> (tensor<2xf32>, tensor<4xf32>, tensor<4xi64>) {
  %0:2 = memfit.split %x {axis = 0 : i64, sizes = array<i64: 2, 4>} : tensor<6xf32> -> tensor<2xf32>, tensor<4xf32>
  %1 = memfit.range {start = 0 : i64, delta = 2 : i64} : tensor<4xi64>
  return %0#0, %0#1, %1 : tensor<2xf32>, tensor<4xf32>, tensor<4xi64>
}

// -----

// Row, reduction and loss kernels read every operand as a buffer, so a
// splat constant operand stays outside (regression: it was cloned in and
// the emitter expected a kernel argument).
// CHECK-LABEL: func.func @splat_scale_of_norm
// CHECK: %[[ONES:.+]] = memfit.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK: memfit.kernel(%{{.+}}, %[[ONES]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memfit.layer_norm
func.func @splat_scale_of_norm(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %ones = memfit.constant dense<1.0> : tensor<4xf32>
  %0 = memfit.layer_norm %x, %ones : tensor<2x4xf32>, tensor<4xf32>
  return %0 : tensor<2x4xf32>
}
