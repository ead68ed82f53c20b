// Element types of the normalizations and reductions: softmax and the
// norms of floats, their scale and optional bias of the input's type, the
// reductions of numbers (reduce_max of booleans too, as ONNX ReduceMax),
// each result of its input's type. One case per rule.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

// Allowed (no diagnostic): the maximum of booleans (any of them).
func.func @reduce_max_of_booleans(%x: tensor<2x8xi1>) -> tensor<2x1xi1> {
  %0 = memfit.reduce_max %x {axes = array<i64: 1>} : tensor<2x8xi1> -> tensor<2x1xi1>
  return %0 : tensor<2x1xi1>
}

// -----

func.func @softmax_of_integers(%x: tensor<2x8xi32>) {
  // expected-error @+1 {{'memfit.softmax' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x8xi32>'}}
  %0 = memfit.softmax %x {axis = -1 : i64} : tensor<2x8xi32>
  return
}

// -----

func.func @log_softmax_of_small_floats(%x: tensor<2x8xf8E5M2>) {
  // expected-error @+1 {{'memfit.log_softmax' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x8xf8E5M2>'}}
  %0 = memfit.log_softmax %x {axis = -1 : i64} : tensor<2x8xf8E5M2>
  return
}

// -----

func.func @layer_norm_of_integers(%x: tensor<2x8xi32>, %g: tensor<8xi32>) {
  // expected-error @+1 {{'memfit.layer_norm' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x8xi32>'}}
  %0 = memfit.layer_norm %x, %g {axis = -1 : i64} : tensor<2x8xi32>, tensor<8xi32>
  return
}

// -----

func.func @layer_norm_bias_of_another_type(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{'memfit.layer_norm' op bias element type 'bf16' differs from the input's 'f32'}}
  %0 = memfit.layer_norm %x, %g, %b {axis = -1 : i64} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xbf16>
  return
}

// -----

func.func @layer_norm_result_of_another_type(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'memfit.layer_norm' op failed to verify that all of {input, result} have same type}}
  %0 = "memfit.layer_norm"(%x, %g) {axis = -1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf16>
  return
}

// -----

func.func @rms_norm_scale_of_integers(%x: tensor<2x8xf32>, %g: tensor<8xi32>) {
  // expected-error @+1 {{'memfit.rms_norm' op operand #1 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<8xi32>'}}
  %0 = memfit.rms_norm %x, %g {axis = -1 : i64} : tensor<2x8xf32>, tensor<8xi32>
  return
}

// -----

func.func @rms_norm_scale_of_another_float(%x: tensor<2x8xf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'memfit.rms_norm' op scale element type 'f32' differs from the input's 'f16'}}
  %0 = memfit.rms_norm %x, %g {axis = -1 : i64} : tensor<2x8xf16>, tensor<8xf32>
  return
}

// -----

func.func @reduce_sum_of_booleans(%x: tensor<2x8xi1>) {
  // expected-error @+1 {{'memfit.reduce_sum' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<2x8xi1>'}}
  %0 = memfit.reduce_sum %x {axes = array<i64: 1>} : tensor<2x8xi1> -> tensor<2x1xi1>
  return
}

// -----

func.func @reduce_mean_of_small_floats(%x: tensor<2x8xf8E4M3FNUZ>) {
  // expected-error @+1 {{'memfit.reduce_mean' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<2x8xf8E4M3FNUZ>'}}
  %0 = memfit.reduce_mean %x {axes = array<i64: 1>} : tensor<2x8xf8E4M3FNUZ> -> tensor<2x1xf8E4M3FNUZ>
  return
}

// -----

func.func @reduce_max_result_of_another_type(%x: tensor<2x8xi32>) {
  // expected-error @+2 {{'memfit.reduce_max' op inferred type(s) 'tensor<2x1xi32>' are incompatible with return type(s) of operation 'tensor<2x1xi64>'}}
  // expected-error @+1 {{'memfit.reduce_max' op failed to infer returned types}}
  %0 = memfit.reduce_max %x {axes = array<i64: 1>} : tensor<2x8xi32> -> tensor<2x1xi64>
  return
}
