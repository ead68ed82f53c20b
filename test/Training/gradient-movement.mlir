// RUN: memfit-opt %s --memfit-autodiff -split-input-file | FileCheck %s

// transpose by the inverse permutation; reshape back to the input shape.
// CHECK-LABEL: func.func @transpose_reshape
// CHECK: %[[G:.+]] = memfit.mul
// CHECK: %[[R:.+]] = memfit.reshape %[[G]] {memfit.backward{{.*}}} : tensor<8x3xf32> to tensor<4x2x3xf32>
// CHECK: %[[DX:.+]] = memfit.transpose %[[R]] {memfit.backward{{.*}}perm = array<i64: 1, 2, 0>} : tensor<4x2x3xf32> -> tensor<2x3x4xf32>
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<2x3x4xf32>
func.func @transpose_reshape() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3x4xf32>
  %t = memfit.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %r = memfit.reshape %t : tensor<4x2x3xf32> to tensor<8x3xf32>
  %y = memfit.exp %r : tensor<8x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<8x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// concat: one split gives the pieces of the inputs that want one.
// CHECK-LABEL: func.func @concat
// CHECK: %[[G:.+]] = memfit.mul
// CHECK: %[[P:.+]]:3 = memfit.split %[[G]] {axis = 1 : i64, memfit.backward{{.*}}sizes = array<i64: 3, 1, 5>}
// CHECK: return %{{.+}}, %[[P]]#0, %[[P]]#2
memfit.parameter @a = dense<1.0> : tensor<2x3xf32>
memfit.parameter @b = dense<1.0> : tensor<2x5xf32>
func.func @concat(%c: tensor<2x1xf32>) -> tensor<f32> {
  %a = memfit.load_parameter @a : tensor<2x3xf32>
  %b = memfit.load_parameter @b : tensor<2x5xf32>
  %y = memfit.concat %a, %c, %b {axis = -1 : i64} : tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x5xf32> -> tensor<2x9xf32>
  %e = memfit.exp %y : tensor<2x9xf32>
  %l = memfit.reduce_sum %e {axes = array<i64>, keepdims = false} : tensor<2x9xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// concat with one trainable input: a slice.
// CHECK-LABEL: func.func @concat_one
// CHECK: %[[G:.+]] = memfit.mul
// CHECK: %[[DA:.+]] = memfit.slice %[[G]] {axes = array<i64: 1>, ends = array<i64: 4>, memfit.backward{{.*}}starts = array<i64: 1>, steps = array<i64: 1>} : tensor<2x4xf32> -> tensor<2x3xf32>
// CHECK: return %{{.+}}, %[[DA]]
memfit.parameter @a = dense<1.0> : tensor<2x3xf32>
func.func @concat_one(%c: tensor<2x1xf32>) -> tensor<f32> {
  %a = memfit.load_parameter @a : tensor<2x3xf32>
  %y = memfit.concat %c, %a {axis = 1 : i64} : tensor<2x1xf32>, tensor<2x3xf32> -> tensor<2x4xf32>
  %e = memfit.exp %y : tensor<2x4xf32>
  %l = memfit.reduce_sum %e {axes = array<i64>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// split: the result gradients concatenated, zeros for the unused results.
// CHECK-LABEL: func.func @split
// CHECK: %[[G:.+]] = memfit.mul
// CHECK-DAG: %[[Z0:.+]] = memfit.constant {memfit.backward{{.*}}} dense<0.000000e+00> : tensor<1x2xf32>
// CHECK-DAG: %[[Z2:.+]] = memfit.constant {memfit.backward{{.*}}} dense<0.000000e+00> : tensor<3x2xf32>
// CHECK: %[[DX:.+]] = memfit.concat %[[Z0]], %[[G]], %[[Z2]] {axis = 0 : i64, memfit.backward{{.*}}}
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<6x2xf32>
func.func @split() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<6x2xf32>
  %p:3 = memfit.split %x {axis = 0 : i64, sizes = array<i64: 1, 2, 3>} : tensor<6x2xf32> -> tensor<1x2xf32>, tensor<2x2xf32>, tensor<3x2xf32>
  %e = memfit.exp %p#1 : tensor<2x2xf32>
  %l = memfit.reduce_sum %e {axes = array<i64>, keepdims = false} : tensor<2x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// slice with steps of 1: zero padding by a concat per sliced axis.
// CHECK-LABEL: func.func @slice_step1
// CHECK: %[[G:.+]] = memfit.mul
// CHECK: %[[P0:.+]] = memfit.concat %{{.+}}, %[[G]], %{{.+}} {axis = 0 : i64, memfit.backward{{.*}}} : tensor<1x4xf32>, tensor<2x4xf32>, tensor<1x4xf32> -> tensor<4x4xf32>
// CHECK: %[[Z:.+]] = memfit.constant {memfit.backward{{.*}}} dense<0.000000e+00> : tensor<4x2xf32>
// CHECK: %[[DX:.+]] = memfit.concat %[[Z]], %[[P0]] {axis = 1 : i64, memfit.backward{{.*}}} : tensor<4x2xf32>, tensor<4x4xf32> -> tensor<4x6xf32>
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<4x6xf32>
func.func @slice_step1() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<4x6xf32>
  %s = memfit.slice %x {starts = array<i64: 1, 2>, ends = array<i64: 3, 6>, axes = array<i64: 0, 1>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<2x4xf32>
  %e = memfit.exp %s : tensor<2x4xf32>
  %l = memfit.reduce_sum %e {axes = array<i64>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// slice with another step (here -3 from the end): gather_grad by the
// positions taken.
// CHECK-LABEL: func.func @slice_strided
// CHECK: %[[G:.+]] = memfit.mul
// CHECK: %[[IDX:.+]] = memfit.constant {memfit.backward{{.*}}} dense<[6, 3]> : tensor<2xi64>
// CHECK: %[[DX:.+]] = memfit.gather_grad %[[G]], %[[IDX]] {axis = 1 : i64, memfit.backward{{.*}}} : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<3x7xf32>
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<3x7xf32>
func.func @slice_strided() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<3x7xf32>
  %s = memfit.slice %x {starts = array<i64: -1>, ends = array<i64: 0>, axes = array<i64: 1>, steps = array<i64: -3>} : tensor<3x7xf32> -> tensor<3x2xf32>
  %e = memfit.exp %s : tensor<3x2xf32>
  %l = memfit.reduce_sum %e {axes = array<i64>, keepdims = false} : tensor<3x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gather: gather_grad along the normalized axis; the indices get nothing.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[IDS:.+]]: tensor<2x3xi64>)
// CHECK: %[[G:.+]] = memfit.mul
// CHECK: %[[DW:.+]] = memfit.gather_grad %[[G]], %[[IDS]] {axis = 0 : i64, memfit.backward{{.*}}} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
// CHECK: return %{{.+}}, %[[DW]]
memfit.parameter @w = dense<1.0> : tensor<10x4xf32>
func.func @gather(%ids: tensor<2x3xi64>) -> tensor<f32> {
  %w = memfit.load_parameter @w : tensor<10x4xf32>
  %g = memfit.gather %w, %ids {axis = -2 : i64} : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %e = memfit.exp %g : tensor<2x3x4xf32>
  %l = memfit.reduce_sum %e {axes = array<i64>, keepdims = false} : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gather_grad is linear: its gradient gathers the rows back, and what it
// accumulates into gets the gradient as it is.
// CHECK-LABEL: func.func @gather_grad_into
// CHECK-SAME: (%[[IDS:.+]]: tensor<2x3xi64>)
// CHECK: %[[G:.+]] = memfit.mul
// CHECK-DAG: %[[DY:.+]] = memfit.gather %[[G]], %[[IDS]] {memfit.backward{{.*}}} : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
// CHECK-DAG: return %{{.+}}, %[[DY]], %[[G]]
memfit.parameter @dy = dense<1.0> : tensor<2x3x4xf32>
memfit.parameter @acc = dense<2.0> : tensor<10x4xf32>
func.func @gather_grad_into(%ids: tensor<2x3xi64>) -> tensor<f32> {
  %dy = memfit.load_parameter @dy : tensor<2x3x4xf32>
  %acc = memfit.load_parameter @acc : tensor<10x4xf32>
  %s = memfit.gather_grad %dy, %ids into %acc {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>, tensor<10x4xf32>) -> tensor<10x4xf32>
  %e = memfit.exp %s : tensor<10x4xf32>
  %l = memfit.reduce_sum %e {axes = array<i64>, keepdims = false} : tensor<10x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expand sums over the broadcast dimensions; squeeze and unsqueeze
// reshape back.
// CHECK-LABEL: func.func @expand_squeeze
// CHECK: %[[G:.+]] = memfit.mul
// CHECK: %[[S:.+]] = memfit.reduce_sum %[[G]] {axes = array<i64: 0, 1>, memfit.backward{{.*}}} : tensor<2x4x3xf32> -> tensor<1x1x3xf32>
// CHECK: memfit.reshape %[[S]] {memfit.backward{{.*}}} : tensor<1x1x3xf32> to tensor<1x3xf32>
// CHECK: memfit.reshape %{{.+}} {memfit.backward{{.*}}} : tensor<1x3xf32> to tensor<3xf32>
// CHECK: %[[DX:.+]] = memfit.reshape %{{.+}} {memfit.backward{{.*}}} : tensor<3xf32> to tensor<3x1xf32>
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<3x1xf32>
func.func @expand_squeeze() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<3x1xf32>
  %s = memfit.squeeze %x {axes = array<i64: 1>} : tensor<3x1xf32> -> tensor<3xf32>
  %u = memfit.unsqueeze %s {axes = array<i64: 0>} : tensor<3xf32> -> tensor<1x3xf32>
  %y = memfit.expand %u : tensor<1x3xf32> to tensor<2x4x3xf32>
  %e = memfit.exp %y : tensor<2x4x3xf32>
  %l = memfit.reduce_sum %e {axes = array<i64>, keepdims = false} : tensor<2x4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
