// RUN: memfit-opt %s --memfit-autodiff -split-input-file | FileCheck %s

// reduce_sum without keepdims: the gradient gets its reduced dimension
// back (a view) and is expanded to the input.
// CHECK-LABEL: func.func @reduce_sum
// CHECK: %[[G:.+]] = memfit.mul
// CHECK: %[[K:.+]] = memfit.reshape %[[G]] {memfit.backward{{.*}}} : tensor<2x4xf32> to tensor<2x1x4xf32>
// CHECK: %[[DX:.+]] = memfit.expand %[[K]] {memfit.backward{{.*}}} : tensor<2x1x4xf32> to tensor<2x3x4xf32>
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<2x3x4xf32>
func.func @reduce_sum() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3x4xf32>
  %s = memfit.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %y = memfit.exp %s : tensor<2x4xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_mean with keepdims and negative axes: one multiplication by a
// splat of 1/n shaped like the input broadcasts and scales at once.
// CHECK-LABEL: func.func @reduce_mean
// CHECK: %[[G:.+]] = memfit.mul
// CHECK: %[[N:.+]] = memfit.constant {memfit.backward{{.*}}} dense<1.250000e-01> : tensor<2x3x4xf32>
// CHECK: %[[DX:.+]] = memfit.mul %[[G]], %[[N]] {memfit.backward{{.*}}} : tensor<1x3x1xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<2x3x4xf32>
func.func @reduce_mean() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3x4xf32>
  %s = memfit.reduce_mean %x {axes = array<i64: -1, 0>, keepdims = true} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  %y = memfit.exp %s : tensor<1x3x1xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<1x3x1xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_max shares the gradient between the elements equal to the max.
// CHECK-LABEL: func.func @reduce_max
// CHECK: %[[Y:.+]] = memfit.reduce_max %[[X:.+]] {axes
// CHECK: %[[G:.+]] = memfit.mul
// CHECK: %[[YK:.+]] = memfit.reshape %[[Y]] {memfit.backward{{.*}}} : tensor<2xf32> to tensor<2x1xf32>
// CHECK: %[[MASK:.+]] = memfit.equal %[[X]], %[[YK]]
// CHECK: %[[F:.+]] = memfit.cast %[[MASK]] {memfit.backward{{.*}}} : tensor<2x3xi1> to tensor<2x3xf32>
// CHECK: %[[COUNT:.+]] = memfit.reduce_sum %[[F]] {axes = array<i64: 1>, memfit.backward{{.*}}}
// CHECK: %[[GK:.+]] = memfit.reshape %[[G]]
// CHECK: %[[SHARE:.+]] = memfit.div %[[GK]], %[[COUNT]]
// CHECK: %[[ZERO:.+]] = memfit.constant {memfit.backward{{.*}}} dense<0.000000e+00> : tensor<f32>
// CHECK: %[[DX:.+]] = memfit.where %[[MASK]], %[[SHARE]], %[[ZERO]]
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<2x3xf32>
func.func @reduce_max() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3xf32>
  %s = memfit.reduce_max %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3xf32> -> tensor<2xf32>
  %y = memfit.exp %s : tensor<2xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
