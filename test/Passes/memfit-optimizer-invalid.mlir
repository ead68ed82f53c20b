// memfit-optimizer refuses what it cannot update, with a diagnostic on the
// parameter (each case once crashed the pass: found by memfit-compile-fuzz).
// RUN: memfit-opt %s -split-input-file --memfit-optimizer -verify-diagnostics
// RUN: memfit-opt %s -split-input-file --memfit-optimizer='optimizer=sgd' -verify-diagnostics

// A parameter that is not f32: the update, its states and hyperparameters
// are f32, and an f16 (or bf16, f64) parameter made an ill-typed mul.
// expected-error @+1 {{parameter 'w' is 'tensor<4xf16>': the optimizer updates f32 parameters (freeze it with frozen=..., or export the model in fp32)}}
memfit.parameter @w = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf16> {memfit.role = "parameter"}

func.func @main(%x: tensor<4xf16> {onnx.name = "x"}) -> (tensor<f16> {onnx.name = "loss"}, tensor<4xf16> {memfit.gradient_of = @w, onnx.name = "grad.w"}) {
  %w = memfit.load_parameter @w : tensor<4xf16>
  %p = memfit.mul %w, %x : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  %l = memfit.reduce_sum %p {axes = array<i64>, keepdims = false} : tensor<4xf16> -> tensor<f16>
  return %l, %x : tensor<f16>, tensor<4xf16>
}

// -----

// expected-error @+1 {{parameter 'w' is 'tensor<2xf64>': the optimizer updates f32 parameters}}
memfit.parameter @w = dense<[1.0, 2.0]> : tensor<2xf64> {memfit.role = "parameter"}

func.func @main(%x: tensor<2xf64> {onnx.name = "x"}) -> (tensor<f64> {onnx.name = "loss"}, tensor<2xf64> {memfit.gradient_of = @w, onnx.name = "grad.w"}) {
  %w = memfit.load_parameter @w : tensor<2xf64>
  %p = memfit.mul %w, %x : tensor<2xf64>, tensor<2xf64> -> tensor<2xf64>
  %l = memfit.reduce_sum %p {axes = array<i64>, keepdims = false} : tensor<2xf64> -> tensor<f64>
  return %l, %x : tensor<f64>, tensor<2xf64>
}
