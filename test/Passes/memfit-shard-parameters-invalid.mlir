// ZeRO stage 3 cuts each trained weight's value to the rank's rows: a
// weight whose values the module does not hold (elided) is an error that
// names it.
// RUN: not memfit-opt %s --memfit-train-pipeline='optimizer=sgd world-size=2 zero=3' 2>&1 | FileCheck %s

// CHECK: error: ZeRO stage 3: cannot cut the rows of 'e' (its value is neither stored bytes nor a splat)
memfit.parameter @e = dense_resource<__elided__> : tensor<3x2xf32>
func.func @main(%x: tensor<4x3xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %w = memfit.load_parameter @e : tensor<3x2xf32>
  %y = memfit.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %l = memfit.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
