// RUN: memfit-opt %s --memfit-autodiff -split-input-file | FileCheck %s

// A row operand sums the gradient over the leading axis, without keepdims;
// the other operand takes it as it is.
// CHECK-LABEL: func.func @add_row
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[DB:.+]] = memfit.reduce_sum %[[G]] {axes = array<i64: 0>, keepdims = false, memfit.backward{{.*}}} : tensor<4x3xf32> -> tensor<3xf32>
// CHECK: return %{{.+}}, %[[G]], %[[DB]]
memfit.parameter @a = dense<1.0> : tensor<4x3xf32>
memfit.parameter @b = dense<1.0> : tensor<3xf32>
func.func @add_row() -> tensor<f32> {
  %a = memfit.load_parameter @a : tensor<4x3xf32>
  %b = memfit.load_parameter @b : tensor<3xf32>
  %y = memfit.add %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A column operand keeps the reduced dimension; sub negates after the sum.
// CHECK-LABEL: func.func @sub_column
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[S:.+]] = memfit.reduce_sum %[[G]] {axes = array<i64: 1>, memfit.backward{{.*}}} : tensor<4x3xf32> -> tensor<4x1xf32>
// CHECK: %[[DB:.+]] = memfit.neg %[[S]]
// CHECK: return %{{.+}}, %[[G]], %[[DB]]
memfit.parameter @a = dense<1.0> : tensor<4x3xf32>
memfit.parameter @b = dense<1.0> : tensor<4x1xf32>
func.func @sub_column() -> tensor<f32> {
  %a = memfit.load_parameter @a : tensor<4x3xf32>
  %b = memfit.load_parameter @b : tensor<4x1xf32>
  %y = memfit.sub %a, %b : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Both operands broadcast: each product is summed over its own broadcast
// axes, then reshaped where the kept dimensions do not match.
// CHECK-LABEL: func.func @mul_both_sided
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[GA:.+]] = memfit.mul %[[G]], %[[B:.+]] {memfit.backward{{.*}}} : tensor<2x3x4xf32>, tensor<3x1xf32>
// CHECK: %[[SA:.+]] = memfit.reduce_sum %[[GA]] {axes = array<i64: 1>, memfit.backward{{.*}}} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
// CHECK: %[[GB:.+]] = memfit.mul %[[G]], %[[A:.+]] {memfit.backward{{.*}}} : tensor<2x3x4xf32>, tensor<2x1x4xf32>
// CHECK: %[[SB:.+]] = memfit.reduce_sum %[[GB]] {axes = array<i64: 0, 2>, memfit.backward{{.*}}} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
// CHECK: %[[RB:.+]] = memfit.reshape %[[SB]] {memfit.backward{{.*}}} : tensor<1x3x1xf32> to tensor<3x1xf32>
// CHECK: return %{{.+}}, %[[SA]], %[[RB]]
memfit.parameter @a = dense<1.0> : tensor<2x1x4xf32>
memfit.parameter @b = dense<1.0> : tensor<3x1xf32>
func.func @mul_both_sided() -> tensor<f32> {
  %a = memfit.load_parameter @a : tensor<2x1x4xf32>
  %b = memfit.load_parameter @b : tensor<3x1xf32>
  %y = memfit.mul %a, %b : tensor<2x1x4xf32>, tensor<3x1xf32> -> tensor<2x3x4xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// div: g / b for the numerator, -(g / b) * y for the denominator.
// CHECK-LABEL: func.func @div
// CHECK: %[[Y:.+]] = memfit.div %[[A:.+]], %[[B:.+]] : tensor<4x3xf32>, tensor<3xf32>
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[Q:.+]] = memfit.div %[[G]], %[[B]] {memfit.backward{{.*}}}
// CHECK: %[[P:.+]] = memfit.mul %[[Q]], %[[Y]] {memfit.backward{{.*}}}
// CHECK: %[[S:.+]] = memfit.reduce_sum %[[P]] {axes = array<i64: 0>, keepdims = false, memfit.backward{{.*}}}
// CHECK: %[[DB:.+]] = memfit.neg %[[S]]
// CHECK: return %{{.+}}, %[[Q]], %[[DB]]
memfit.parameter @a = dense<1.0> : tensor<4x3xf32>
memfit.parameter @b = dense<1.0> : tensor<3xf32>
func.func @div() -> tensor<f32> {
  %a = memfit.load_parameter @a : tensor<4x3xf32>
  %b = memfit.load_parameter @b : tensor<3xf32>
  %y = memfit.div %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A constant exponent folds into the rule: d(x^2) = g * 2 * x.
// CHECK-LABEL: func.func @pow_square
// CHECK: %[[X:.+]] = memfit.load_parameter
// CHECK: %[[G:.+]] = memfit.expand
// CHECK: %[[TWO:.+]] = memfit.constant {memfit.backward{{.*}}} dense<2.000000e+00> : tensor<f32>
// CHECK: %[[S:.+]] = memfit.mul %[[G]], %[[TWO]]
// CHECK: %[[D:.+]] = memfit.mul %[[S]], %[[X]]
// CHECK-NOT: memfit.pow {{.+}}memfit.backward
// CHECK: return %{{.+}}, %[[D]]
memfit.parameter @x = dense<1.0> : tensor<4x3xf32>
func.func @pow_square() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<4x3xf32>
  %e = memfit.constant dense<2.0> : tensor<f32>
  %y = memfit.pow %x, %e : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A trainable exponent: e * x^(e-1), zero where e == 0, and y * log(x),
// zero where x == 0.
// CHECK-LABEL: func.func @pow_tensor
// CHECK: %[[Y:.+]] = memfit.pow %[[X:.+]], %[[E:.+]] :
// CHECK: %[[EM1:.+]] = memfit.sub %[[E]], %{{.+}} {memfit.backward{{.*}}}
// CHECK: %[[P:.+]] = memfit.pow %[[X]], %[[EM1]] {memfit.backward{{.*}}}
// CHECK: memfit.mul %[[E]], %[[P]]
// CHECK: memfit.equal %[[E]]
// CHECK: memfit.where
// CHECK: %[[LOG:.+]] = memfit.log %[[X]] {memfit.backward{{.*}}}
// CHECK: memfit.mul %[[Y]], %[[LOG]]
// CHECK: memfit.equal %[[X]]
// CHECK: %[[W:.+]] = memfit.where
// CHECK: memfit.reduce_sum %[[W]] {axes = array<i64: 0>, keepdims = false, memfit.backward{{.*}}} : tensor<4x3xf32> -> tensor<3xf32>
memfit.parameter @x = dense<1.0> : tensor<4x3xf32>
memfit.parameter @e = dense<1.0> : tensor<3xf32>
func.func @pow_tensor() -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<4x3xf32>
  %e = memfit.load_parameter @e : tensor<3xf32>
  %y = memfit.pow %x, %e : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// where: the condition gets nothing; each branch gets the gradient where
// it was chosen, summed to its shape.
// CHECK-LABEL: func.func @where
// CHECK: %[[G:.+]] = memfit.expand
// CHECK-DAG: %[[ZERO:.+]] = memfit.constant {memfit.backward{{.*}}} dense<0.000000e+00> : tensor<f32>
// CHECK: %[[WA:.+]] = memfit.where %[[C:.+]], %[[G]], %[[ZERO]]
// CHECK: %[[WB:.+]] = memfit.where %[[C]], %[[ZERO]], %[[G]]
// CHECK: %[[DB:.+]] = memfit.reduce_sum %[[WB]] {axes = array<i64: 0>, keepdims = false, memfit.backward{{.*}}} : tensor<4x3xf32> -> tensor<3xf32>
// CHECK: return %{{.+}}, %[[WA]], %[[DB]]
memfit.parameter @a = dense<1.0> : tensor<4x3xf32>
memfit.parameter @b = dense<1.0> : tensor<3xf32>
func.func @where(%c: tensor<4x3xi1>) -> tensor<f32> {
  %a = memfit.load_parameter @a : tensor<4x3xf32>
  %b = memfit.load_parameter @b : tensor<3xf32>
  %y = memfit.where %c, %a, %b : tensor<4x3xi1>, tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %l = memfit.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
