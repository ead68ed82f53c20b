// A parameter that does not reach the loss is frozen with a warning; with
// nothing left to train the pass fails.
// RUN: memfit-opt %s -verify-diagnostics --memfit-autodiff -o /dev/null

memfit.parameter @w = dense<1.0> : tensor<4xf32>

func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = memfit.load_parameter @w : tensor<4xf32>
  %l = memfit.reduce_sum %x {axes = array<i64>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
// expected-warning @-7 {{parameter 'w' does not affect the loss; it is frozen}}
// expected-error @-6 {{no trainable parameter reaches the loss}}
