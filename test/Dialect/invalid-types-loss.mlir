// Element types of the losses and their gradients: scores, hidden states
// and weights of floats, labels and targets of i32 or i64, optional
// weights and bias of the scores' type, loss gradients of the type the
// loss has. One case per rule.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

func.func @cross_entropy_float_labels(%s: tensor<4x8xf32>, %l: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.softmax_cross_entropy_loss' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = memfit.softmax_cross_entropy_loss mean %s, %l : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_integer_scores(%s: tensor<4x8xi32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{'memfit.softmax_cross_entropy_loss' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4x8xi32>'}}
  %0 = memfit.softmax_cross_entropy_loss mean %s, %l : (tensor<4x8xi32>, tensor<4xi64>) -> tensor<i32>
  return
}

// -----

func.func @cross_entropy_weights_of_another_type(%s: tensor<4x8xf32>, %l: tensor<4xi64>, %w: tensor<8xbf16>) {
  // expected-error @+2 {{loss weights element type 'bf16' differs from the scores' 'f32'}}
  // expected-error @+1 {{'memfit.softmax_cross_entropy_loss' op failed to infer returned types}}
  %0 = memfit.softmax_cross_entropy_loss mean %s, %l, %w : (tensor<4x8xf32>, tensor<4xi64>, tensor<8xbf16>) -> tensor<f32>
  return
}

// -----

func.func @nll_16_bit_targets(%p: tensor<4x8xf32>, %t: tensor<4xi16>) {
  // expected-error @+1 {{'memfit.negative_log_likelihood_loss' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi16>'}}
  %0 = memfit.negative_log_likelihood_loss sum %p, %t : (tensor<4x8xf32>, tensor<4xi16>) -> tensor<f32>
  return
}

// -----

func.func @nll_loss_of_another_type(%p: tensor<4x8xf32>, %t: tensor<4xi64>) {
  // expected-error @+2 {{'memfit.negative_log_likelihood_loss' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<f16>'}}
  // expected-error @+1 {{'memfit.negative_log_likelihood_loss' op failed to infer returned types}}
  %0 = memfit.negative_log_likelihood_loss sum %p, %t : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f16>
  return
}

// -----

func.func @cross_entropy_grad_boolean_labels(%s: tensor<4x8xf32>, %l: tensor<4xi1>, %g: tensor<f32>) {
  // expected-error @+1 {{'memfit.softmax_cross_entropy_grad' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = memfit.softmax_cross_entropy_grad mean %s, %l, %g : (tensor<4x8xf32>, tensor<4xi1>, tensor<f32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @cross_entropy_grad_loss_gradient_of_another_type(%s: tensor<4x8xf32>, %l: tensor<4xi64>, %g: tensor<f16>) {
  // expected-error @+1 {{'memfit.softmax_cross_entropy_grad' op loss gradient element type 'f16' differs from the scores' 'f32'}}
  %0 = memfit.softmax_cross_entropy_grad mean %s, %l, %g : (tensor<4x8xf32>, tensor<4xi64>, tensor<f16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @cross_entropy_grad_result_of_another_type(%s: tensor<4x8xf32>, %l: tensor<4xi64>, %g: tensor<f32>) {
  // expected-error @+1 {{'memfit.softmax_cross_entropy_grad' op result type must equal the scores' type}}
  %0 = memfit.softmax_cross_entropy_grad mean %s, %l, %g : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xbf16>
  return
}

// -----

func.func @linear_cross_entropy_float_labels(%h: tensor<4x16xf32>, %w: tensor<16x8xf32>, %l: tensor<4xf32>) {
  // expected-error @+1 {{'memfit.linear_cross_entropy' op operand #2 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = memfit.linear_cross_entropy mean %h, %w, %l : (tensor<4x16xf32>, tensor<16x8xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_integer_weight(%h: tensor<4x16xi32>, %w: tensor<16x8xi32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{'memfit.linear_cross_entropy' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4x16xi32>'}}
  %0 = memfit.linear_cross_entropy mean %h, %w, %l : (tensor<4x16xi32>, tensor<16x8xi32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_bias_of_another_type(%h: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %l: tensor<4xi64>, %b: tensor<8xf32>) {
  // expected-error @+2 {{linear cross-entropy bias must be 'tensor<8xbf16>', got 'tensor<8xf32>'}}
  // expected-error @+1 {{'memfit.linear_cross_entropy' op failed to infer returned types}}
  %0 = memfit.linear_cross_entropy mean %h, %w, %l bias %b : (tensor<4x16xbf16>, tensor<16x8xbf16>, tensor<4xi64>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_grad_loss_gradient_of_another_type(%h: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %l: tensor<4xi64>, %g: tensor<bf16>) {
  // expected-error @+1 {{'memfit.linear_cross_entropy_grad' op dloss must be 'tensor<f32>', got 'tensor<bf16>'}}
  %0:2 = memfit.linear_cross_entropy_grad mean %h, %w, %l, %g : (tensor<4x16xbf16>, tensor<16x8xbf16>, tensor<4xi64>, tensor<bf16>) -> (tensor<4x16xbf16>, tensor<16x8xbf16>)
  return
}

// -----

func.func @linear_cross_entropy_grad_gradient_of_another_type(%h: tensor<4x16xf32>, %w: tensor<16x8xf32>, %l: tensor<4xi64>, %g: tensor<f32>) {
  // expected-error @+2 {{'memfit.linear_cross_entropy_grad' op inferred type(s) 'tensor<4x16xf32>', 'tensor<16x8xf32>' are incompatible with return type(s) of operation 'tensor<4x16xf16>', 'tensor<16x8xf32>'}}
  // expected-error @+1 {{'memfit.linear_cross_entropy_grad' op failed to infer returned types}}
  %0:2 = memfit.linear_cross_entropy_grad mean %h, %w, %l, %g : (tensor<4x16xf32>, tensor<16x8xf32>, tensor<4xi64>, tensor<f32>) -> (tensor<4x16xf16>, tensor<16x8xf32>)
  return
}
