// RUN: memfit-opt %s --memfit-autodiff -split-input-file | FileCheck %s

// softmax: y * (g - sum(g * y)) along the axis.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[Y:.+]] = memfit.softmax
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[GY:.+]] = memfit.mul %[[G]], %[[Y]]
// CHECK: %[[S:.+]] = memfit.reduce_sum %[[GY]] {axes = array<i64: 1>, memfit.backward{{.*}}} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
// CHECK: %[[D:.+]] = memfit.sub %[[G]], %[[S]]
// CHECK: %[[DX:.+]] = memfit.mul %[[Y]], %[[D]]
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<2x3x4xf32>
func.func @softmax() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3x4xf32>
  %y = memfit.softmax %x {axis = 1 : i64} : tensor<2x3x4xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// log_softmax: g - exp(y) * sum(g).
// CHECK-LABEL: func.func @log_softmax
// CHECK: %[[Y:.+]] = memfit.log_softmax
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[S:.+]] = memfit.reduce_sum %[[G]] {axes = array<i64: -1>, memfit.backward{{.*}}}
// CHECK: %[[E:.+]] = memfit.exp %[[Y]]
// CHECK: %[[P:.+]] = memfit.mul %[[E]], %[[S]]
// CHECK: %[[DX:.+]] = memfit.sub %[[G]], %[[P]]
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<2x3x4xf32>
func.func @log_softmax() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3x4xf32>
  %y = memfit.log_softmax %x {axis = -1 : i64} : tensor<2x3x4xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// layer_norm recomputes mean and rstd over the dimensions from the axis on;
// the input's gradient comes first, its two row reductions before the
// element-wise ops that use them (one row kernel after fusion); scale and
// bias (broadcast inside the normalized shape) are summed over the rest
// after it.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[MEAN:.+]] = memfit.reduce_mean %[[X:.+]] {axes = array<i64: 1, 2>, memfit.backward{{.*}}} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
// CHECK: %[[XC:.+]] = memfit.sub %[[X]], %[[MEAN]]
// CHECK: %[[VAR:.+]] = memfit.reduce_mean
// CHECK: %[[EPS:.+]] = memfit.constant {memfit.backward{{.*}}} dense<9.99999974E-6> : tensor<f32>
// CHECK: memfit.add %[[VAR]], %[[EPS]]
// CHECK: %[[RSTD:.+]] = memfit.reciprocal
// CHECK: %[[XHAT:.+]] = memfit.mul %[[XC]], %[[RSTD]]
// CHECK: %[[DXHAT:.+]] = memfit.mul %[[G]], %[[SCALE:.+]] {memfit.backward{{.*}}} : tensor<2x3x4xf32>, tensor<3x4xf32>
// CHECK: %[[P:.+]] = memfit.mul %[[DXHAT]], %[[XHAT]]
// CHECK: %[[PROJ:.+]] = memfit.reduce_mean %[[P]]
// CHECK: %[[M:.+]] = memfit.reduce_mean %[[DXHAT]]
// CHECK: %[[T:.+]] = memfit.mul %[[XHAT]], %[[PROJ]]
// CHECK: %[[D:.+]] = memfit.sub %[[DXHAT]], %[[T]]
// CHECK: %[[C:.+]] = memfit.sub %[[D]], %[[M]]
// CHECK: %[[DX:.+]] = memfit.mul %[[C]], %[[RSTD]]
// CHECK: %[[DB:.+]] = memfit.reduce_sum %[[G]] {axes = array<i64: 0, 1>, keepdims = false, memfit.backward{{.*}}} : tensor<2x3x4xf32> -> tensor<4xf32>
// CHECK: %[[GX:.+]] = memfit.mul %[[G]], %[[XHAT]]
// CHECK: %[[DG:.+]] = memfit.reduce_sum %[[GX]] {axes = array<i64: 0>, keepdims = false, memfit.backward{{.*}}} : tensor<2x3x4xf32> -> tensor<3x4xf32>
// CHECK: return %{{.+}}, %[[DX]], %[[DG]], %[[DB]]
memfit.parameter @x = dense<1.0> : tensor<2x3x4xf32>
memfit.parameter @g = dense<1.0> : tensor<3x4xf32>
memfit.parameter @b = dense<1.0> : tensor<4xf32>
func.func @layer_norm() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3x4xf32>
  %g = memfit.load_parameter @g : tensor<3x4xf32>
  %b = memfit.load_parameter @b : tensor<4xf32>
  %y = memfit.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// rms_norm: no centering and no mean(dxhat) term.
// CHECK-LABEL: func.func @rms_norm
// CHECK: %[[SQ:.+]] = memfit.mul %[[X:.+]], %[[X]] {memfit.backward{{.*}}}
// CHECK: memfit.reduce_mean %[[SQ]] {axes = array<i64: 2>, memfit.backward{{.*}}}
// CHECK-NOT: memfit.sub %[[X]]
// CHECK: %[[RSTD:.+]] = memfit.reciprocal
// CHECK: %[[XHAT:.+]] = memfit.mul %[[X]], %[[RSTD]]
// CHECK: %[[DXHAT:.+]] = memfit.mul %{{.+}}, %[[SCALE:.+]] {memfit.backward{{.*}}} : tensor<2x3x4xf32>, tensor<4xf32>
// CHECK: %[[M:.+]] = memfit.reduce_mean
// CHECK: %[[T:.+]] = memfit.mul %[[XHAT]], %[[M]]
// CHECK: %[[D:.+]] = memfit.sub %[[DXHAT]], %[[T]]
// CHECK: %[[DX:.+]] = memfit.mul %[[D]], %[[RSTD]]
// CHECK: return %{{.+}}, %[[DX]]
memfit.parameter @x = dense<1.0> : tensor<2x3x4xf32>
memfit.parameter @g = dense<1.0> : tensor<4xf32>
func.func @rms_norm() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3x4xf32>
  %g = memfit.load_parameter @g : tensor<4xf32>
  %y = memfit.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-6 : f32} : tensor<2x3x4xf32>, tensor<4xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
