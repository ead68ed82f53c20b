// memfit-dropout-step: every op of a training step that drops elements
// gets the step's counter @dropout_step (0-d i64, role counter), read once
// at the start, as its step; the counter is written back incremented at the
// end, after every read. The forward dropout and its gradient draw for the
// same step; with accumulation, the counter belongs to `accumulate` (one
// step per micro-batch), not to `apply`.
// RUN: memfit-opt %s -split-input-file --memfit-autodiff --memfit-dropout-step | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-autodiff --memfit-dropout-step --memfit-optimizer='optimizer=sgd accumulate=2' | FileCheck %s --check-prefix=ACC
// Through the whole training pipeline the memory plan accepts the counter's
// update in place after the last read.
// RUN: memfit-opt %s -split-input-file --memfit-train-pipeline='optimizer=sgd' --memfit-memory-plan -o /dev/null

memfit.parameter @w = dense<5.000000e-01> : tensor<4x8xf32>

// CHECK: memfit.parameter @w
// CHECK-NEXT: memfit.parameter @dropout_step = dense<0> : tensor<i64> {memfit.role = "counter"}
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[S:.+]] = memfit.load_parameter @dropout_step : tensor<i64>
// CHECK: %[[Y:.+]] = memfit.dropout %{{.+}} step %[[S]] {ratio = 1.000000e-01 : f32, seed = 3 : i64, stream = 7 : i64} : tensor<4x8xf32>
// CHECK: memfit.dropout %{{.+}} step %[[S]] {memfit.backward, ratio = 1.000000e-01 : f32, seed = 3 : i64, stream = 7 : i64} : tensor<4x8xf32>
// CHECK: %[[ONE:.+]] = memfit.constant dense<1> : tensor<i64>
// CHECK-NEXT: %[[NEXT:.+]] = memfit.add %[[S]], %[[ONE]] : tensor<i64>, tensor<i64> -> tensor<i64>
// CHECK-NEXT: memfit.assign @dropout_step, %[[NEXT]] : tensor<i64>
// CHECK-NEXT: return

// ACC-LABEL: func.func @accumulate
// ACC-NEXT: %[[S:.+]] = memfit.load_parameter @dropout_step
// ACC: memfit.dropout %{{.+}} step %[[S]]
// ACC: memfit.assign @dropout_step
// ACC-LABEL: func.func @apply
// ACC-NOT: dropout_step
// ACC: return
func.func @main(%x: tensor<4x8xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %w = memfit.load_parameter @w : tensor<4x8xf32>
  %h = memfit.mul %x, %w : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %y = memfit.dropout %h {ratio = 1.000000e-01 : f32, seed = 3 : i64, stream = 7 : i64} : tensor<4x8xf32>
  %l = memfit.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A dropout of ratio 0 keeps everything: no counter.
memfit.parameter @w = dense<5.000000e-01> : tensor<4x8xf32>

// CHECK-NOT: @dropout_step
// CHECK-LABEL: func.func @main
// CHECK: memfit.dropout %{{[^ ]+}} {ratio = 0.000000e+00 : f32} : tensor<4x8xf32>
// CHECK-NOT: dropout_step
// CHECK: return
func.func @main(%x: tensor<4x8xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %w = memfit.load_parameter @w : tensor<4x8xf32>
  %h = memfit.mul %x, %w : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %y = memfit.dropout %h {ratio = 0.000000e+00 : f32} : tensor<4x8xf32>
  %l = memfit.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Attention with a dropout on the probabilities and a mask: the forward
// and both gradient ops draw for the counter's step, after the mask.
memfit.parameter @q = dense<5.000000e-01> : tensor<1x2x4x8xf32>
memfit.parameter @k = dense<2.500000e-01> : tensor<1x2x4x8xf32>

// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[S:.+]] = memfit.load_parameter @dropout_step
// CHECK: memfit.attention causal %{{.+}}, %{{.+}}, %{{.+}} mask %[[M:[^ ]+]] dropout_step %[[S]] scale
// CHECK: memfit.attention_grad_query causal {{.+}} mask %[[M]] dropout_step %[[S]] scale
// CHECK: memfit.attention_grad_key_value causal {{.+}} mask %[[M]] dropout_step %[[S]] scale
// CHECK: memfit.assign @dropout_step
func.func @main(%v: tensor<1x2x4x8xf32> {onnx.name = "v"}, %m: tensor<1x1x1x4xi1> {onnx.name = "m"}) -> (tensor<f32> {onnx.name = "loss"}) {
  %q = memfit.load_parameter @q : tensor<1x2x4x8xf32>
  %k = memfit.load_parameter @k : tensor<1x2x4x8xf32>
  %o, %lse = memfit.attention causal %q, %k, %v mask %m scale 0.25 {dropout_ratio = 0.2 : f32, dropout_stream = 5 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x1x4xi1>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  %l = memfit.reduce_sum %o {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : tensor<1x2x4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
