// RUN: memfit-opt %s --memfit-autodiff -split-input-file -verify-diagnostics

memfit.parameter @x = dense<1.0> : tensor<4x3xf32>
memfit.parameter @w = dense<1.0> : tensor<3xf32>
func.func @loss_class_weights(%labels: tensor<4xi64>) -> tensor<f32> {
  %x = memfit.load_parameter @x : tensor<4x3xf32>
  %w = memfit.load_parameter @w : tensor<3xf32>
  // expected-error @+1 {{has no gradient rule for its class weights (freeze them)}}
  %l = memfit.negative_log_likelihood_loss mean %x, %labels, %w : (tensor<4x3xf32>, tensor<4xi64>, tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
