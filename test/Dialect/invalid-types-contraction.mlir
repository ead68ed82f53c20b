// Element types of the contractions: matmul of two operands of one
// numeric type (the emitter runs the floats; see Target/emit-errors.mlir),
// gemm of floats, its optional bias too. One case per rule.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

func.func @matmul_of_booleans(%x: tensor<2x3xi1>, %y: tensor<3x2xi1>) {
  // expected-error @+1 {{'memfit.matmul' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<2x3xi1>'}}
  %0 = memfit.matmul %x, %y : tensor<2x3xi1>, tensor<3x2xi1> -> tensor<2x2xi1>
  return
}

// -----

func.func @matmul_of_small_floats(%x: tensor<2x3xf8E4M3FN>, %y: tensor<3x2xf8E4M3FN>) {
  // expected-error @+1 {{'memfit.matmul' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 2-, 4-, 8-, 16-, 32- or 64-bit integer values, but got 'tensor<2x3xf8E4M3FN>'}}
  %0 = memfit.matmul %x, %y : tensor<2x3xf8E4M3FN>, tensor<3x2xf8E4M3FN> -> tensor<2x2xf8E4M3FN>
  return
}

// -----

func.func @matmul_of_two_types(%x: tensor<2x3xbf16>, %y: tensor<3x2xf32>) {
  // expected-error @+2 {{matmul operands have different element types 'bf16' and 'f32'}}
  // expected-error @+1 {{'memfit.matmul' op failed to infer returned types}}
  %0 = memfit.matmul %x, %y : tensor<2x3xbf16>, tensor<3x2xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @matmul_result_of_another_type(%x: tensor<2x3xf16>, %y: tensor<3x2xf16>) {
  // expected-error @+2 {{'memfit.matmul' op inferred type(s) 'tensor<2x2xf16>' are incompatible with return type(s) of operation 'tensor<2x2xf32>'}}
  // expected-error @+1 {{'memfit.matmul' op failed to infer returned types}}
  %0 = memfit.matmul %x, %y : tensor<2x3xf16>, tensor<3x2xf16> -> tensor<2x2xf32>
  return
}

// -----

func.func @gemm_of_integers(%a: tensor<2x3xi64>, %b: tensor<3x2xi64>) {
  // expected-error @+1 {{'memfit.gemm' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x3xi64>'}}
  %0 = memfit.gemm %a, %b : (tensor<2x3xi64>, tensor<3x2xi64>) -> tensor<2x2xi64>
  return
}

// -----

func.func @gemm_bias_of_integers(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %c: tensor<2xi32>) {
  // expected-error @+1 {{'memfit.gemm' op operand #2 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %0 = memfit.gemm %a, %b, %c : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xi32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @gemm_bias_of_another_float(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %c: tensor<2xf64>) {
  // expected-error @+2 {{gemm operands have different element types 'f32' and 'f64'}}
  // expected-error @+1 {{'memfit.gemm' op failed to infer returned types}}
  %0 = memfit.gemm %a, %b, %c : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf64>) -> tensor<2x2xf32>
  return
}
