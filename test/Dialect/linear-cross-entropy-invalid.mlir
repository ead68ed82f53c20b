// Verifier and shape-inference diagnostics of memfit.linear_cross_entropy
// and its gradient op; each case is named after the rule it breaks.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

func.func @weight_not_d_by_v(%h: tensor<16x32xf32>, %w: tensor<96x32xf32>, %l: tensor<16xi64>) {
  // expected-error @+2 {{linear cross-entropy expects hidden [N, D], weight [D, V] and labels [N], got 16x32, 96x32 and 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = memfit.linear_cross_entropy mean %h, %w, %l : (tensor<16x32xf32>, tensor<96x32xf32>, tensor<16xi64>) -> tensor<f32>
  return
}

// -----

func.func @types_differ(%h: tensor<16x32xbf16>, %w: tensor<32x96xf32>, %l: tensor<16xi64>) {
  // expected-error @+2 {{linear cross-entropy hidden and weight element types differ: 'bf16' and 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = memfit.linear_cross_entropy mean %h, %w, %l : (tensor<16x32xbf16>, tensor<32x96xf32>, tensor<16xi64>) -> tensor<f32>
  return
}

// -----

func.func @reduction_none(%h: tensor<16x32xf32>, %w: tensor<32x96xf32>, %l: tensor<16xi64>) {
  // expected-error @+1 {{reduction must be sum or mean}}
  %0 = memfit.linear_cross_entropy none %h, %w, %l : (tensor<16x32xf32>, tensor<32x96xf32>, tensor<16xi64>) -> tensor<f32>
  return
}

// -----

func.func @dloss_not_the_loss_type(%h: tensor<16x32xbf16>, %w: tensor<32x96xbf16>, %l: tensor<16xi64>, %g: tensor<bf16>) {
  // expected-error @+1 {{dloss must be 'tensor<f32>', got 'tensor<bf16>'}}
  %0:2 = memfit.linear_cross_entropy_grad mean %h, %w, %l, %g : (tensor<16x32xbf16>, tensor<32x96xbf16>, tensor<16xi64>, tensor<bf16>) -> (tensor<16x32xbf16>, tensor<32x96xbf16>)
  return
}

// -----

func.func @bias_not_v(%h: tensor<16x32xf32>, %w: tensor<32x96xf32>, %l: tensor<16xi64>, %b: tensor<32xf32>) {
  // expected-error @+2 {{linear cross-entropy bias must be 'tensor<96xf32>', got 'tensor<32xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = memfit.linear_cross_entropy mean %h, %w, %l bias %b : (tensor<16x32xf32>, tensor<32x96xf32>, tensor<16xi64>, tensor<32xf32>) -> tensor<f32>
  return
}
