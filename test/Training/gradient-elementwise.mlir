// RUN: memfit-opt %s --memfit-autodiff -split-input-file | FileCheck %s

// exp reuses its result: g * y.
// CHECK-LABEL: func.func @exp
// CHECK: %[[Y:.+]] = memfit.exp %[[X:.+]] : tensor<2x3xf32>
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[D:.+]] = memfit.mul %[[G]], %[[Y]] {memfit.backward{{.*}}}
// CHECK: return %{{.+}}, %[[D]]
memfit.parameter @x = dense<1.0> : tensor<2x3xf32>
func.func @exp() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3xf32>
  %y = memfit.exp %x : tensor<2x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// relu passes the gradient where x > 0, zero elsewhere (and at NaN).
// CHECK-LABEL: func.func @relu
// CHECK: %[[G:.+]] = memfit.expand
// CHECK-DAG: %[[ZERO:.+]] = memfit.constant {memfit.backward{{.*}}} dense<0.000000e+00> : tensor<f32>
// CHECK: %[[POS:.+]] = memfit.greater %[[X:.+]], %[[ZERO]]
// CHECK: %[[D:.+]] = memfit.where %[[POS]], %[[G]], %[[ZERO]]
// CHECK: return %{{.+}}, %[[D]]
memfit.parameter @x = dense<1.0> : tensor<2x3xf32>
func.func @relu() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3xf32>
  %y = memfit.relu %x : tensor<2x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// sigmoid: g * y * (1 - y).
// CHECK-LABEL: func.func @sigmoid
// CHECK: %[[Y:.+]] = memfit.sigmoid
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[ONE:.+]] = memfit.constant {memfit.backward{{.*}}} dense<1.000000e+00> : tensor<f32>
// CHECK: %[[C:.+]] = memfit.sub %[[ONE]], %[[Y]]
// CHECK: %[[S:.+]] = memfit.mul %[[Y]], %[[C]]
// CHECK: memfit.mul %[[G]], %[[S]]
memfit.parameter @x = dense<1.0> : tensor<2x3xf32>
func.func @sigmoid() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3xf32>
  %y = memfit.sigmoid %x : tensor<2x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gelu with the tanh approximation recomputes tanh(u).
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: memfit.tanh {{.+}} {memfit.backward{{.*}}}
// CHECK-NOT: memfit.erf
// CHECK: return
memfit.parameter @x = dense<1.0> : tensor<2x3xf32>
func.func @gelu_tanh() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<2x3xf32>
  %y = memfit.gelu tanh %x : tensor<2x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A float-to-float cast casts the gradient back.
// CHECK-LABEL: func.func @cast
// CHECK: %[[G:.+]] = memfit.expand {{.+}} to tensor<2x3xf64>
// CHECK: %[[D:.+]] = memfit.cast %[[G]] {memfit.backward{{.*}}} : tensor<2x3xf64> to tensor<2x3xf32>
// CHECK: return %{{.+}}, %[[D]]
memfit.parameter @x = dense<1.0> : tensor<2x3xf32>
func.func @cast() -> tensor<f64> {
  %x = memfit.load_parameter @x : tensor<2x3xf32>
  %y = memfit.cast %x : tensor<2x3xf32> to tensor<2x3xf64>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3xf64> -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// trilu keeps the same triangle of the gradient; dropout without dropping
// is the identity.
// CHECK-LABEL: func.func @trilu_dropout
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[D:.+]] = memfit.trilu %[[G]] {k = -1 : i64, memfit.backward{{.*}}upper = false}
// CHECK: return %{{.+}}, %[[D]]
memfit.parameter @x = dense<1.0> : tensor<3x3xf32>
func.func @trilu_dropout() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<3x3xf32>
  %t = memfit.trilu %x {upper = false, k = -1 : i64} : tensor<3x3xf32>
  %y = memfit.dropout %t {ratio = 0.0 : f32} : tensor<3x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<3x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
