// Element types of quantize and dequantize: the values are floats, the
// codes of their scheme's storage type (i8 for linear, ui8 for the
// others, two 4-bit codes a byte for nf4 and fp4), the absmax f32. One
// case per rule.
// RUN: memfit-opt %s -split-input-file -verify-diagnostics

func.func @quantize_integers(%x: tensor<64xi32>) {
  // expected-error @+1 {{'memfit.quantize' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<64xi32>'}}
  %q, %a = memfit.quantize linear %x {block_size = 64 : i64} : tensor<64xi32> -> tensor<64xi8>, tensor<1xf32>
  return
}

// -----

func.func @quantize_linear_to_unsigned_codes(%x: tensor<64xf32>) {
  // expected-error @+1 {{'memfit.quantize' op codes of 64 values quantized linear must be 'tensor<64xi8>', got 'tensor<64xui8>'}}
  %q, %a = memfit.quantize linear %x {block_size = 64 : i64} : tensor<64xf32> -> tensor<64xui8>, tensor<1xf32>
  return
}

// -----

func.func @quantize_dynamic_to_signed_codes(%x: tensor<64xf32>) {
  // expected-error @+1 {{'memfit.quantize' op codes of 64 values quantized dynamic must be 'tensor<64xui8>', got 'tensor<64xi8>'}}
  %q, %a = memfit.quantize dynamic %x {block_size = 64 : i64} : tensor<64xf32> -> tensor<64xi8>, tensor<1xf32>
  return
}

// -----

func.func @quantize_to_wide_codes(%x: tensor<64xf32>) {
  // expected-error @+1 {{'memfit.quantize' op result #0 must be statically shaped tensor of 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<64xi32>'}}
  %q, %a = memfit.quantize dynamic %x {block_size = 64 : i64} : tensor<64xf32> -> tensor<64xi32>, tensor<1xf32>
  return
}

// -----

func.func @quantize_absmax_of_bf16(%x: tensor<64xbf16>) {
  // expected-error @+1 {{'memfit.quantize' op result #1 must be statically shaped tensor of 32-bit float values, but got 'tensor<1xbf16>'}}
  %q, %a = memfit.quantize nf4 %x {block_size = 64 : i64} : tensor<64xbf16> -> tensor<32xui8>, tensor<1xbf16>
  return
}

// -----

func.func @dequantize_to_integers(%q: tensor<32xui8>, %a: tensor<1xf32>) {
  // expected-error @+1 {{'memfit.dequantize' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<64xi32>'}}
  %0 = memfit.dequantize fp4 %q, %a {block_size = 64 : i64} : (tensor<32xui8>, tensor<1xf32>) -> tensor<64xi32>
  return
}

// -----

func.func @dequantize_nf4_of_signed_codes(%q: tensor<32xi8>, %a: tensor<1xf32>) {
  // expected-error @+1 {{'memfit.dequantize' op codes of 64 values quantized nf4 must be 'tensor<32xui8>', got 'tensor<32xi8>'}}
  %0 = memfit.dequantize nf4 %q, %a {block_size = 64 : i64} : (tensor<32xi8>, tensor<1xf32>) -> tensor<64xf32>
  return
}

// -----

func.func @dequantize_codes_of_small_floats(%q: tensor<64xf8E4M3FN>, %a: tensor<1xf32>) {
  // expected-error @+1 {{'memfit.dequantize' op operand #0 must be statically shaped tensor of 8-bit signless integer or 8-bit unsigned integer values, but got 'tensor<64xf8E4M3FN>'}}
  %0 = memfit.dequantize linear %q, %a {block_size = 64 : i64} : (tensor<64xf8E4M3FN>, tensor<1xf32>) -> tensor<64xf32>
  return
}
