// RUN: memfit-opt %s --memfit-autodiff -split-input-file | FileCheck %s

// Training-mode dropout: the gradient is a dropout of the gradient with the
// same ratio, seed and stream, so it keeps the elements the forward kept.
// CHECK-LABEL: func.func @dropout
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[DX:.+]] = memfit.dropout %[[G]] {memfit.backward{{.*}}, ratio = 1.000000e-01 : f32, seed = 3 : i64, stream = 17 : i64} : tensor<2x3xf32>
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<2x3xf32>
func.func @dropout() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3xf32>
  %y = memfit.dropout %x {ratio = 0.1 : f32, seed = 3 : i64, stream = 17 : i64} : tensor<2x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// scatter_elements without reduction: the data's gradient is zero where an
// update landed (a scatter of zeros), the updates' is the gradient gathered
// at their indices.
// CHECK-LABEL: func.func @scatter_elements
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[Z:.+]] = memfit.constant {{.*}}dense<0.000000e+00> : tensor<2x2xf32>
// CHECK: %[[DX:.+]] = memfit.scatter_elements %[[G]], %arg0, %[[Z]] {axis = 1 : i64, memfit.backward, memfit.gradient_of = @x} : tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32> -> tensor<2x4xf32>
// CHECK: %[[DU:.+]] = memfit.gather_elements %[[G]], %arg0 {axis = 1 : i64, memfit.backward{{.*}}} : tensor<2x4xf32>, tensor<2x2xi64> -> tensor<2x2xf32>
// CHECK: return %{{.+}}, %[[DX]], %[[DU]]
memfit.parameter @x = dense<1.0> : tensor<2x4xf32>
memfit.parameter @u = dense<2.0> : tensor<2x2xf32>
func.func @scatter_elements(%i: tensor<2x2xi64>) -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x4xf32>
  %u = memfit.load_parameter @u : tensor<2x2xf32>
  %y = memfit.scatter_elements %x, %i, %u {axis = 1 : i64} : tensor<2x4xf32>, tensor<2x2xi64>, tensor<2x2xf32> -> tensor<2x4xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gather_nd: the gradient added into zeros at the index tuples.
// CHECK-LABEL: func.func @gather_nd
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[Z:.+]] = memfit.constant {{.*}}dense<0.000000e+00> : tensor<3x4xf32>
// CHECK: %[[DX:.+]] = memfit.scatter_nd %[[Z]], %arg0, %[[G]] {memfit.backward{{.*}}reduction = "add"} : tensor<3x4xf32>, tensor<2x2xi64>, tensor<2xf32> -> tensor<3x4xf32>
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<3x4xf32>
func.func @gather_nd(%i: tensor<2x2xi64>) -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<3x4xf32>
  %y = memfit.gather_nd %x, %i : tensor<3x4xf32>, tensor<2x2xi64> -> tensor<2xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Rotary embeddings are linear in x: its gradient is the inverse (the
// transposed) rotation of the gradient. The tables' gradients, where they
// are trained: d cos = g x, and d sin = g rotate_half(x), x rotated with
// cos 0 and sin g, each summed over the dimension it is broadcast along.
// CHECK-LABEL: func.func @rotary
// CHECK: %[[X:.+]] = memfit.load_parameter @x
// CHECK: %[[G:.+]] = memfit.expand
// CHECK-DAG: memfit.rotary %[[G]], %{{.+}}, %{{.+}} {inverse, memfit.backward{{.*}}} : tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
// CHECK-DAG: %[[GX:.+]] = memfit.mul %[[G]], %[[X]] {memfit.backward} : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
// CHECK-DAG: memfit.reduce_sum %[[GX]] {axes = array<i64: 0>{{.*}}memfit.gradient_of = @c{{.*}} : tensor<2x3x8xf32> -> tensor<3x8xf32>
// CHECK-DAG: %[[ZERO:.+]] = memfit.constant {memfit.backward} dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[XG:.+]] = memfit.rotary %[[X]], %[[ZERO]], %[[G]] {memfit.backward} : tensor<2x3x8xf32>, tensor<f32>, tensor<2x3x8xf32>
// CHECK-DAG: memfit.reduce_sum %[[XG]] {axes = array<i64: 0>{{.*}}memfit.gradient_of = @s{{.*}} : tensor<2x3x8xf32> -> tensor<3x8xf32>
memfit.parameter @x = dense<1.0> : tensor<2x3x8xf32>
memfit.parameter @c = dense<0.5> : tensor<3x8xf32>
memfit.parameter @s = dense<0.25> : tensor<3x8xf32>
func.func @rotary() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3x8xf32>
  %c = memfit.load_parameter @c : tensor<3x8xf32>
  %s = memfit.load_parameter @s : tensor<3x8xf32>
  %y = memfit.rotary %x, %c, %s : tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
